"""Checks that cannot fail, by structure (adversary-13 F9): an `||` whose right side always
succeeds makes its left irrelevant, whatever spelling that right side takes; a pipeline
ending in a filter of its input; a test and its complement. Lint (T005) and the runtime read
them alike: each passes on an empty workdir, which a do-nothing worker leaves. Checks asking
for nothing read from a file that may be missing are T029's (a warning)."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper.acceptance.check import SealedCheck, run_check
from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import Check, parse_plan
from tests.test_cli_run import keywords, resume, setup, task


def codes(check: str) -> list[str]:
    text = f"* TODO t\n:PROPERTIES:\n:done-when: {check}\n:END:\n"
    return [d.code for d in validate(parse_plan(text))]


def verdict(check: str, workdir: Path) -> str:
    return run_check(SealedCheck.seal(Check(check, "sh", 1, "x")), workdir).verdict


X = "grep -qx 3 out.txt"

VACUOUS = [
    f"{X} || true 2>/dev/null",
    f"{X} || true >/dev/null 2>&1",
    f"({X}) || true",
    f"{{ {X}; }} || true",
    f"{X} || test 1",
    f"{X} || [ 1 -eq 1 ]",
    f"{X} || test ! -z x",
    f'{X} || [ "a" = "a" ]',
    f"{X} || printf ''",
    f"{X} || printf '%s' done",
    f"{X} || python3 -c pass",
    f"{X} || python3 -c 'import sys; sys.exit(0)'",
    f"{X} || cd .",
    f"{X} || expr 1",
    f"{X} || ls >/dev/null",
    f"{X} || seq 1",
    f"{X} || sort /dev/null",
    f"{X} || pwd",
    f"{X} | tr -d x",
    f"{X} | cut -d , -f 1",
    '[ "$(cat out.txt)" = 3 ] || [ 1 -eq 1 ]',
    f'V=$({X} || true); test -z "$V" || test -n "$V"',
    'V=$(cat out.txt || true); [ "$V" = 3 ] || [ "$V" != 3 ]',
]

# the honest twins: each right side can fail, or there is none
STRONG = [
    X,
    f"{X} || test 1 -eq 2",
    f"{X} || [ -s out.txt ]",
    f"{X} || expr 0",
    f"{X} || python3 -c 'import sys; sys.exit(1)'",
    f"{X} || python3 check.py",
    f"{X} || ls out",
    f"{X} || sort out.txt",
    f"{X} || ! {X}",  # grep's error (no out.txt) fails the check both ways
    'V=$(cat out.txt || echo x); test -z "$V" || test -n "$W"',
    'test "$V" -eq 1 || test "$V" -ne 1',  # not a number: an error both ways
    f"({X}) || exit 1",
    f"{X} || true > out.log",  # a write: fails in a read-only check (T024 says so)
    'V=$(cat out.txt); test "$V" = 3',
    'V=$(cat out.txt || true); test -n "$V"',
    f"{X} || grep -qx 4 out.txt",
]


@pytest.mark.parametrize("check", VACUOUS)
def test_a_check_whose_every_path_succeeds_is_t005_and_passes_on_nothing(
    check: str, tmp_path: Path
) -> None:
    assert "T005" in codes(check)
    assert verdict(check, tmp_path) == "PASS"  # the do-nothing worker's workdir


@pytest.mark.parametrize("check", STRONG)
def test_a_check_with_a_path_that_fails_is_not_t005(check: str, tmp_path: Path) -> None:
    assert "T005" not in codes(check)
    assert verdict(check, tmp_path) == "FAIL"


MISSING = [
    "uniq -d out.csv | wc -l | grep -qx 0",
    "uniq -d out.csv | wc -l | grep -q '^0$'",
    'test -z "$(uniq -d out.csv)"',
    '[ -z "$(sort out.csv | uniq -d)" ]',
    '[ "$(uniq -d out.csv | wc -l)" -eq 0 ]',
    'test "$(grep ERROR out.csv)" = ""',
]

GUARDED = [
    "test -s out.csv && uniq -d out.csv | wc -l | grep -qx 0",
    "set -o pipefail; uniq -d out.csv | wc -l | grep -qx 0",
    'test -f out.csv; test -z "$(uniq -d out.csv)"',
    '[ -f out.csv ] && [ "$(uniq -d out.csv | wc -l)" -eq 0 ]',
    'test "$(grep -c ERROR out.csv)" = 0',  # missing: "" is not 0
]


@pytest.mark.parametrize("check", MISSING)
def test_asking_for_nothing_from_a_file_that_may_be_missing_is_t029(
    check: str, tmp_path: Path
) -> None:
    assert codes(check) == ["T029"]
    assert verdict(check, tmp_path) == "PASS"  # no out.csv at all


@pytest.mark.parametrize("check", GUARDED)
def test_saying_the_file_must_be_there_first_clears_t029(check: str, tmp_path: Path) -> None:
    assert "T029" not in codes(check)
    assert verdict(check, tmp_path) == "FAIL"


def test_t029_on_a_missing_file_is_quiet_when_the_file_is_protected() -> None:
    text = (
        '* TODO t\n:PROPERTIES:\n:done-when: test -z "$(uniq -d data.csv)"\n'
        ":protect: data.csv\n:END:\n"
    )
    assert [d.code for d in validate(parse_plan(text))] == []


DO_NOTHING = 'workers:\n  "*":\n    - say: "DONE"\n'


def test_a_vacuous_check_stops_the_run_before_any_worker(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, task("Count", "t", f"{X} || test 1"), DO_NOTHING)
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    assert [(d["code"], d["level"]) for d in doc["diagnostics"]] == [("T005", "error")]
    assert keywords(plan) == {"t": "TODO"}
    assert doc["usage"]["calls"] == 0


def test_its_honest_twin_runs_and_a_do_nothing_worker_fails(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, task("Count", "t", X), DO_NOTHING)
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    assert doc["diagnostics"] == []
    assert keywords(plan) == {"t": "FAILED"}


def test_a_check_passing_before_any_work_says_so_in_its_done(tmp_path: Path) -> None:
    """The runtime's backstop without --require-red: the DONE carries the R007 warning."""
    plan, script = setup(tmp_path, task("Count", "t", X), DO_NOTHING)
    (tmp_path / "out.txt").write_text("3\n")
    result, doc = resume(plan, script)
    assert result.exit_code == 0
    (t,) = doc["tasks"]
    assert (t["state"], t["verified"]) == ("DONE", True)
    assert t["reason"] == (
        "warning: red-first: passes before any work, so it cannot tell the work from no work [R007]"
    )


def test_a_check_red_before_the_work_has_a_plain_done(tmp_path: Path) -> None:
    work = (
        'workers:\n  t:\n    - {tool: write_file, input: {path: out.txt, content: "3\\n"}}\n'
        "    - say: DONE\n"
    )
    plan, script = setup(tmp_path, task("Count", "t", X), work)
    result, doc = resume(plan, script)
    assert result.exit_code == 0
    (t,) = doc["tasks"]
    assert (t["state"], t["reason"]) == ("DONE", None)
