"""Rung 2: the sentinel, multi-line checks, and a named reason for every way a check fails."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

from groundskeeper.acceptance.check import (
    CheckResult,
    SealedCheck,
    check_plan,
    run_check,
    write_check_verdicts,
)
from groundskeeper.plan.org import Check, load_plan
from groundskeeper.sandbox.result import ShellResult


class FakeShell:
    """Answers by the whole check text; prints the given sentinel when the answer succeeds,
    as the interpreter does."""

    def __init__(self, answers: dict[str, ShellResult]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, bool, bool, str | None]] = []

    def __call__(
        self,
        cmdline: str,
        *,
        workdir: str | Path,
        read_only: bool = False,
        timeout: float = 10,
        errexit: bool = False,
        sentinel: str | None = None,
    ) -> ShellResult:
        self.calls.append((cmdline, read_only, errexit, sentinel))
        answer = self.answers.get(cmdline, ShellResult(0, "", "", 1.0))
        if answer.status == 0 and answer.fault is None and sentinel is not None:
            return replace(answer, stdout=answer.stdout + sentinel + "\n")
        return answer


def sealed(text: str, language: str = "sh") -> SealedCheck:
    return SealedCheck.seal(Check(text, language, 5, "block"))


def test_each_failure_has_a_named_reason(tmp_path: Path) -> None:
    shell = FakeShell(
        {
            "grep -q x f": ShellResult(1, "", "", 1.0, failed_line=1),
            "nosuch": ShellResult(127, "", "", 0.2, missing=("nosuch",), failed_line=1),
            "$CMD x": ShellResult(0, "", "", 0.2, missing=("frob",)),  # hidden by `||` etc.
            "if true": ShellResult(2, "", "sh: syntax error at line 1", 0.1, "syntax"),
            "loop": ShellResult(124, "", "deadline", 1.0, "deadline", failed_line=1),
            "crash": ShellResult(134, "", "trap", 1.0, "trap", failed_line=1),
        }
    )
    expected = {
        "grep -q x f": "nonzero_status",
        "nosuch": "unknown_command",
        "$CMD x": "unknown_command",
        "if true": "parse_error",
        "loop": "deadline",
        "crash": "trap",
    }
    for command, code in expected.items():
        result = run_check(sealed(command), tmp_path, shell=shell)
        assert (result.verdict, result.code) == ("FAIL", code), command
    grep = run_check(sealed("grep -q x f"), tmp_path, shell=shell)
    assert grep.reason == "check line 1: `grep -q x f` exited with status 1"
    result = run_check(sealed("print('hi')", "python"), tmp_path, shell=shell)
    assert (result.verdict, result.code) == ("FAIL", "unsupported_language")
    assert "`python`" in result.reason
    assert run_check(sealed("# only a comment\n\n"), tmp_path, shell=shell).code == "empty_check"


def test_text_on_stderr_never_makes_an_unknown_command(tmp_path: Path) -> None:
    """Unknown commands come from the interpreter's record, not from what a check printed."""
    said = "grep: command not found (not in the sandbox)\n"
    shell = FakeShell({"cat notes.txt >&2": ShellResult(0, "", said, 1.0)})
    assert run_check(sealed("cat notes.txt >&2"), tmp_path, shell=shell).verdict == "PASS"


def test_pass_needs_the_exact_sentinel_line(tmp_path: Path) -> None:
    def forger(cmdline: str, **kwargs: object) -> ShellResult:
        # exits 0 but prints sentinel-looking text, not the sentinel line itself
        sentinel = kwargs["sentinel"]
        fake = "__WB_CHECK_OK_" + "0" * 32 + "__"
        return ShellResult(0, f"{fake}\nxx{sentinel}\n{sentinel} \n", "", 1.0)

    result = run_check(sealed("true"), tmp_path, shell=forger)
    assert (result.verdict, result.code) == ("FAIL", "missing_sentinel")


def test_a_check_is_one_script_with_a_fresh_sentinel_read_only_under_errexit(
    tmp_path: Path,
) -> None:
    shell = FakeShell({})
    run_check(sealed("true\nfalse"), tmp_path, shell=shell)
    run_check(sealed("true"), tmp_path, shell=shell)
    assert [c[0] for c in shell.calls] == ["true\nfalse", "true"]  # one call per check
    assert all(read_only and errexit for _, read_only, errexit, _ in shell.calls)
    sentinels = [c[3] for c in shell.calls]
    assert len(set(sentinels)) == 2
    assert all(s is not None and SENTINEL.fullmatch(s) for s in sentinels)


SENTINEL = re.compile(r"__WB_CHECK_OK_[0-9a-f]{32}__")


def test_pass_and_no_check(tmp_path: Path) -> None:
    shell = FakeShell({"cat f": ShellResult(0, "hello\n", "", 1.0)})
    result = run_check(sealed("cat f"), tmp_path, shell=shell)
    assert (result.verdict, result.code, result.output) == ("PASS", "", "hello")
    assert result.check_sha256 == sealed("cat f").sha256
    none = run_check(None, tmp_path, shell=shell)
    assert (none.verdict, none.check_sha256) == ("NO_CHECK", None)


def test_a_sandbox_crash_is_a_failure_not_an_exception(tmp_path: Path) -> None:
    def broken(cmdline: str, **_: object) -> ShellResult:
        raise RuntimeError("wasm exploded\nmore")

    result = run_check(sealed("true"), tmp_path, shell=broken)
    assert (result.verdict, result.code) == ("FAIL", "sandbox_error")
    assert "RuntimeError: wasm exploded" in result.reason


def test_seal_hash_covers_language_and_text() -> None:
    assert sealed("a").sha256 != sealed("a ").sha256
    assert sealed("a").sha256 != sealed("a", "shell").sha256
    assert sealed("a").sha256 == sealed("a").sha256


# --- the real sandbox -------------------------------------------------------------------------


def real(text: str, workdir: Path) -> CheckResult:
    return run_check(sealed(text), workdir)


def test_real_sandbox_verdicts(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("Hobby tier\nPro tier\n")
    forged = "__WB_CHECK_OK_" + "ab" * 16 + "__"
    (tmp_path / "forged.txt").write_text(forged + "\n")
    assert real("grep -q Hobby notes.md\ngrep -q Pro notes.md", tmp_path).verdict == "PASS"
    assert real("grep -q Team notes.md", tmp_path).code == "nonzero_status"
    assert real("frobnicate notes.md", tmp_path).code == "unknown_command"
    assert real("if true", tmp_path).code == "parse_error"
    # the check prints a sentinel-looking line, then fails: FAILED
    failing = real("cat forged.txt && grep -q Team notes.md", tmp_path)
    assert (failing.verdict, failing.code) == ("FAIL", "nonzero_status")
    assert forged in failing.output
    # a trailing comment is only a comment: the sentinel is the interpreter's, not text
    commented = real("cat notes.md # show it", tmp_path)
    assert (commented.verdict, commented.output) == ("PASS", "Hobby tier\nPro tier")
    # a forged sentinel-looking line printed by a passing check is shown, never trusted
    printed = real("cat forged.txt", tmp_path)
    assert (printed.verdict, printed.output) == ("PASS", forged)


def test_real_checks_are_read_only(tmp_path: Path) -> None:
    result = real("echo x > made.txt", tmp_path)
    assert result.verdict == "FAIL"
    assert not (tmp_path / "made.txt").exists()


PLAN = """#+TODO: TODO NEXT | DONE FAILED PARTIAL
* DONE Kept
  :PROPERTIES:
  :done-when: grep -q ok kept.txt
  :END:
* DONE Lost
  :PROPERTIES:
  :done-when: grep -q ok lost.txt
  :END:
* TODO Unstarted
  :PROPERTIES:
  :done-when: grep -q ok nothing.txt
  :END:
* FAILED Fixed
  :PROPERTIES:
  :done-when: grep -q ok kept.txt
  :END:
* DONE Unchecked
"""


def test_check_plan_and_write_demotes_lost_evidence(tmp_path: Path) -> None:
    plan_path = tmp_path / "plan.org"
    plan_path.write_text(PLAN)
    (tmp_path / "kept.txt").write_text("ok\n")
    plan = load_plan(plan_path)
    results = check_plan(plan, tmp_path)
    assert [(r.id, r.result.verdict) for r in results] == [
        ("Kept", "PASS"),
        ("Lost", "FAIL"),
        ("Unstarted", "FAIL"),
        ("Fixed", "PASS"),
        ("Unchecked", "NO_CHECK"),
    ]
    updated = write_check_verdicts(plan, results, promotable=lambda _: True)
    assert [r.state for r in updated] == ["DONE", "FAILED", "TODO", "DONE", "DONE"]
    text = plan_path.read_text()
    assert "* FAILED Lost\n" in text and "* DONE Fixed\n" in text and "* TODO Unstarted\n" in text
    assert (
        text.replace("* FAILED Lost", "* DONE Lost").replace("* DONE Fixed", "* FAILED Fixed")
        == PLAN
    )


def test_write_refuses_when_the_file_changed(tmp_path: Path) -> None:
    from groundskeeper.plan.org import PlanEditError

    plan_path = tmp_path / "plan.org"
    plan_path.write_text(PLAN)
    plan = load_plan(plan_path)
    results = check_plan(plan, tmp_path)
    plan_path.write_text(PLAN + "* TODO Added meanwhile\n")
    with pytest.raises(PlanEditError, match="changed while its checks ran"):
        write_check_verdicts(plan, results)
    assert plan_path.read_text() == PLAN + "* TODO Added meanwhile\n"
