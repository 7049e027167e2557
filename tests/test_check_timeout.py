"""`:timeout: SECONDS`: the deadline a task gives its check, wherever the check runs (a run's
red-first and post-claim checks, `check`); a value that is not seconds > 0 and ≤ 3600 is an
error (T011, R002) rather than the default in silence; the deadline is part of the check's
hash, so a DONE judged under another deadline is judged again."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.acceptance.check import SealedCheck, run_check
from groundskeeper.cli import main
from groundskeeper.plan.org import Check
from tests.test_cli_run import keywords, resume, setup, task
from tests.test_lint_checks import codes

SLOW = "sleep 3 && test -s out.txt"
WORKS = "workers:\n  t: [{tool: sh, input: {cmd: 'echo 1 > out.txt'}}, {say: DONE}]\n"


@pytest.mark.parametrize("raw", ["0", "-5", "ten", "3601", "nan", ""])
def test_a_timeout_that_is_not_seconds_is_an_error(raw: str) -> None:
    assert codes("grep -q ok out.txt", timeout=raw) == ["T011"]


@pytest.mark.parametrize("raw", ["1", "2.5", "3600", " 60 "])
def test_seconds_up_to_an_hour_are_a_timeout(raw: str) -> None:
    assert codes("grep -q ok out.txt", timeout=raw) == []


def test_a_run_refuses_a_plan_whose_timeout_it_cannot_read(tmp_path) -> None:  # type: ignore[no-untyped-def]
    plan, script = setup(tmp_path, task("T", "t", "test -s out.txt", timeout="soon"), WORKS)
    result = CliRunner().invoke(main, ["resume", str(plan), "--model", f"scripted:{script}"])
    assert result.exit_code == 1, result.output  # refused before anything runs, as R002 is
    assert "R002" in result.output and ":timeout: must be the seconds" in result.output
    assert keywords(plan) == {"t": "TODO"}


def test_a_check_past_its_own_deadline_fails_as_deadline(tmp_path) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "out.txt").write_text("1\n")
    short = SealedCheck.seal(Check(SLOW, "sh", 1, "done-when", 1.0))
    result = run_check(short, tmp_path, timeout=60)  # the task's own deadline wins
    assert (result.verdict, result.code) == ("FAIL", "deadline"), result
    long = SealedCheck.seal(Check(SLOW, "sh", 1, "done-when", 20.0))
    assert run_check(long, tmp_path, timeout=1).verdict == "PASS"


def test_a_run_gives_the_check_the_task_s_deadline(tmp_path) -> None:  # type: ignore[no-untyped-def]
    plan, script = setup(
        tmp_path,
        task("Slow", "t", SLOW, timeout="1", max_attempts="1")
        + task("Slow too", "u", SLOW.replace("out", "u"), timeout="30"),
        WORKS + "  u: [{tool: sh, input: {cmd: 'echo 1 > u.txt'}}, {say: DONE}]\n",
    )
    result, doc = resume(plan, script)
    rows = {row["id"]: row for row in doc["tasks"]}
    assert rows["u"]["state"] == "DONE", result.output
    assert rows["t"]["state"] == "FAILED", result.output
    assert str(rows["t"]["reason"]).startswith("deadline"), rows["t"]["reason"]


def test_the_deadline_is_part_of_the_check_s_hash() -> None:
    plain = SealedCheck.seal(Check("true", "sh", 1, "done-when"))
    timed = SealedCheck.seal(Check("true", "sh", 1, "done-when", 60.0))
    assert plain.sha256 == SealedCheck("true", "sh", 1, "done-when").sha256  # unchanged
    assert timed.sha256 != plain.sha256
    assert timed.sha256 != SealedCheck.seal(Check("true", "sh", 1, "done-when", 61.0)).sha256


# adversary-18 F11: CPython runs about six times slower in the sandbox; a check that runs a
# test runner (pytest, unittest) gets `TEST_RUNNER_TIMEOUT` by default, a task's own
# `:timeout:` still decides, and any other check keeps the 10 s default.
@pytest.mark.parametrize(
    ("text", "timeout", "deadline"),
    [
        ("python3 -m pytest -q tests", None, 60.0),
        ("cd src && python3 -m pytest", None, 60.0),
        ("python3 -m unittest discover -s tests", None, 60.0),
        ("test -s out.txt\npython3 -m pytest -q tests/test_calc.py", None, 60.0),
        ("python3 -m pytest -q tests", 5.0, 5.0),
        ("python3 -m pytest -q tests", 600.0, 600.0),
        ("grep -qx 42 out.txt", None, 10.0),
        ("python3 check.py", None, 10.0),
    ],
)
def test_a_test_runner_check_gets_a_longer_default_deadline(
    text: str, timeout: float | None, deadline: float
) -> None:
    from groundskeeper.sandbox.result import ShellResult

    given: list[float] = []

    def shell(cmdline: str, **kw: object) -> ShellResult:
        given.append(float(kw["timeout"]))  # type: ignore[arg-type]
        return ShellResult(0, "", "", 1.0)

    sealed = SealedCheck.seal(Check(text, "sh", 1, "done-when", timeout))
    run_check(sealed, Path("."), shell=shell)  # type: ignore[arg-type]
    assert given == [deadline]
