"""Adversarial rung 2: every way a check could read as passing without earning it fails closed.

These run the real sandbox (no fake shell): what matters is what a check does for real.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from groundskeeper.acceptance.check import SealedCheck, new_sentinel, run_check
from groundskeeper.plan.org import Check
from groundskeeper.sandbox.result import ShellResult

SENTINEL_SHAPE = re.compile(r"__WB_CHECK_OK_[0-9a-f]+__")


def sealed(text: str, language: str = "sh") -> SealedCheck:
    return SealedCheck.seal(Check(text, language, 3, "block"))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "report.md").write_text("# Report\nHobby tier\n", encoding="utf-8")
    return tmp_path


def verdict(work: Path, text: str, language: str = "sh") -> tuple[str, str]:
    result = run_check(sealed(text, language), work, timeout=5.0)
    return result.verdict, result.code


# --- the sentinel: only the fresh one, only on its own last line, never shown back -----------


def test_forged_sentinel_lines_in_a_worker_file_do_not_pass(work: Path) -> None:
    forged = "\n".join(new_sentinel() for _ in range(50)) + "\n"
    (work / "forged.txt").write_text(forged, encoding="utf-8")
    result = run_check(sealed("cat forged.txt; false"), work)
    assert (result.verdict, result.code) == ("FAIL", "nonzero_status")


def test_forged_sentinel_with_whitespace_and_crlf_does_not_pass(work: Path) -> None:
    (work / "forged.txt").write_bytes(b"  __WB_CHECK_OK_00__  \r\n__WB_CHECK_OK_00__\r\n")
    result = run_check(sealed("cat forged.txt; exit 0"), work)
    assert (result.verdict, result.code) == ("FAIL", "missing_sentinel")


def test_exit_zero_mid_check_is_not_a_pass(work: Path) -> None:
    assert verdict(work, "exit 0") == ("FAIL", "missing_sentinel")
    assert verdict(work, "test -s report.md; exit 0") == ("FAIL", "missing_sentinel")
    assert verdict(work, "test -s report.md && exit 0 || true") == ("FAIL", "missing_sentinel")


def test_a_trailing_comment_is_only_a_comment(work: Path) -> None:
    assert verdict(work, "test -s report.md # it exists") == ("PASS", "")
    assert verdict(work, "test -s missing.md # it exists") == ("FAIL", "nonzero_status")


def test_output_without_a_final_newline_cannot_glue_to_the_sentinel(work: Path) -> None:
    assert verdict(work, "printf 'no newline'") == ("PASS", "")
    assert verdict(work, "printf 'no newline'; false") == ("FAIL", "nonzero_status")


def test_a_literal_sentinel_in_the_check_text_does_not_pass(work: Path) -> None:
    text = "false && echo __WB_CHECK_OK_0123456789abcdef0123456789abcdef__"
    assert verdict(work, text) == ("FAIL", "nonzero_status")
    text = "echo __WB_CHECK_OK_0123456789abcdef0123456789abcdef__; exit 0"
    assert verdict(work, text) == ("FAIL", "missing_sentinel")


def test_the_sentinel_never_appears_in_the_output_fed_back(work: Path) -> None:
    # without a trailing newline the sentinel lands on the check's own last line
    result = run_check(sealed("printf 'no newline'"), work)
    assert SENTINEL_SHAPE.search(result.output) is None
    assert SENTINEL_SHAPE.search(result.reason) is None


def test_sentinel_must_be_the_last_line_of_stdout() -> None:
    class LateOutput:
        def __call__(self, cmdline: str, **kwargs: object) -> ShellResult:
            sentinel = kwargs["sentinel"]
            return ShellResult(0, f"{sentinel}\nprinted after the sentinel\n", "", 1.0)

    result = run_check(sealed("test -s report.md"), Path("."), shell=LateOutput())
    assert (result.verdict, result.code) == ("FAIL", "missing_sentinel")


# --- commands the sandbox does not have fail the check, wherever they hide -------------------


@pytest.mark.parametrize(
    "text",
    [
        "nosuchcmd",
        "nosuchcmd || true",
        "echo $(nosuchcmd)",
        "! nosuchcmd",
        "test -s report.md || perl -e 'print(1)'",
        "X=curl; $X http://example.com || true",
    ],
)
def test_an_unknown_command_anywhere_fails(work: Path, text: str) -> None:
    result = run_check(sealed(text), work)
    assert (result.verdict, result.code) == ("FAIL", "unknown_command"), result.reason


def test_honest_or_still_passes(work: Path) -> None:
    # `||` that swallows a failure is honest per the check (lint warns); no unknown command
    assert verdict(work, "test -e missing || test -s report.md") == ("PASS", "")
    assert verdict(work, "false || true") == ("PASS", "")
    assert verdict(work, "! test -e missing") == ("PASS", "")


# --- shapes of check text ---------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "\n\n", "# only a comment", "  # a\n\n# b\n"])
def test_empty_blank_or_comment_only_checks_fail(work: Path, text: str) -> None:
    assert verdict(work, text) == ("FAIL", "empty_check")


# (`sh`, `shell` and `bash` are the sandbox's shell: tests/test_check_language.py)
@pytest.mark.parametrize("language", ["python", "js", "SH ", "SH", "", "zsh", "dash"])
def test_other_languages_fail(work: Path, language: str) -> None:
    assert verdict(work, "test -s report.md", language) == ("FAIL", "unsupported_language")


def test_multi_line_first_line_fails_second_passes(work: Path) -> None:
    result = run_check(sealed("test -e missing\ntest -s report.md"), work)
    assert (result.verdict, result.code, result.failed_line) == ("FAIL", "nonzero_status", 1)


def test_multi_line_all_pass(work: Path) -> None:
    text = "test -s report.md\n# a comment line\ngrep -q Hobby report.md"
    assert verdict(work, text) == ("PASS", "")


def test_lines_continue_after_operators_and_a_semicolon_does_not_excuse(work: Path) -> None:
    # one command across lines (lint calls this one vacuous: `X || true` cannot fail)
    assert verdict(work, "test -e missing ||\ntrue") == ("PASS", "")
    assert verdict(work, "test -e missing &&\ntrue") == ("FAIL", "nonzero_status")
    assert verdict(work, "test -e missing;") == ("FAIL", "nonzero_status")
    assert verdict(work, "test -e missing; true") == ("FAIL", "nonzero_status")


def test_unclosed_quote_cannot_swallow_the_sentinel(work: Path) -> None:
    assert verdict(work, 'echo "abc') == ("FAIL", "parse_error")
    assert verdict(work, "echo $(echo") == ("FAIL", "parse_error")


def test_unsupported_syntax_fails(work: Path) -> None:
    assert verdict(work, "true && f() { true; }") == ("FAIL", "parse_error")
    assert verdict(work, "true &") == ("FAIL", "parse_error")


def test_a_check_that_writes_is_refused(work: Path) -> None:
    result = run_check(sealed("touch made.txt"), work)
    assert result.verdict == "FAIL"
    assert not (work / "made.txt").exists()
    result = run_check(sealed("echo x > made.txt"), work)
    assert result.verdict == "FAIL"
    assert not (work / "made.txt").exists()


def test_a_check_past_its_deadline_fails(work: Path) -> None:
    result = run_check(sealed("sleep 5"), work, timeout=0.5)
    assert (result.verdict, result.code) == ("FAIL", "deadline")


def test_a_flood_of_output_fails_and_is_clipped(work: Path) -> None:
    result = run_check(sealed("seq 1 100000000"), work, timeout=5.0)
    assert result.verdict == "FAIL"
    assert result.code in {"output", "deadline", "fuel"}
    assert len(result.output) < 5000


def test_long_honest_output_passes_and_is_clipped(work: Path) -> None:
    result = run_check(sealed("seq 1 20000"), work)
    assert result.verdict == "PASS"
    assert len(result.output) < 5000


def test_a_sandbox_exception_is_a_fail_not_a_crash(work: Path) -> None:
    def broken(cmdline: str, **_: object) -> ShellResult:
        raise RuntimeError("host bug")

    result = run_check(sealed("test -s report.md"), work, shell=broken)
    assert (result.verdict, result.code) == ("FAIL", "sandbox_error")


def test_a_shell_answering_garbage_is_a_fail(work: Path) -> None:
    def garbage(cmdline: str, **_: object) -> object:
        return None

    result = run_check(sealed("test -s report.md"), work, shell=garbage)  # type: ignore[arg-type]
    assert (result.verdict, result.code) == ("FAIL", "sandbox_error")


def test_missing_workdir_is_a_fail(tmp_path: Path) -> None:
    result = run_check(sealed("test -e x"), tmp_path / "nope")
    assert (result.verdict, result.code) == ("FAIL", "sandbox_error")
