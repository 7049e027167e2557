"""A DONE whose check is its `pytest` contract is judged again wherever a verdict is asserted
again (adversary-17 F15): the final sweep, a roll-up, a later run's sweep of a carried DONE,
and `groundskeeper check`. A later sibling that undoes the fix demotes it, as it would a
`:done-when:` check; an untouched fix stays DONE."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main

BROKEN = "def mul(a, b):\n    return a + b\n"
FIXED = "def mul(a, b):\n    return a * b\n"
TEST = "from calc import mul\n\n\ndef test_mul():\n    assert mul(6, 7) == 42\n"

PLAN = """#+TODO: TODO | DONE FAILED PARTIAL
* TODO Calc
  :PROPERTIES:
  :ORDERED: t
  :END:
** TODO Fix mul
   :PROPERTIES:
   :ID: fix
   :contract: pytest tests
   :timeout: 60
   :END:
   Fix mul in calc.py so the tests pass.
** TODO Write the notes
   :PROPERTIES:
   :ID: notes
   :done-when: grep -qx done notes.txt
   :END:
   Write notes.txt holding the word done.
"""


def _work(tmp_path: Path, notes_cmd: str) -> Path:
    work = tmp_path / "work"
    (work / "tests").mkdir(parents=True)
    (work / "calc.py").write_text(BROKEN)
    (work / "tests" / "test_calc.py").write_text(TEST)
    (work / "plan.org").write_text(PLAN)
    fix = {"tool": "write_file", "input": {"path": "calc.py", "content": FIXED}}
    notes = {"tool": "sh", "input": {"cmd": notes_cmd}}
    (work / "workers.yaml").write_text(
        f"workers:\n  fix:\n    - {json.dumps(fix)}\n    - say: DONE\n"
        f"  notes:\n    - {json.dumps(notes)}\n    - say: DONE\n"
    )
    return work


def _resume(work: Path, *more: str) -> dict[str, dict[str, object]]:
    args = ["resume", str(work / "plan.org"), "--model",
            f"scripted:{work / 'workers.yaml'}", "--json", *more]  # fmt: skip
    result = CliRunner().invoke(main, args)
    doc = json.loads(result.stdout)
    return {row["id"] or row["title"]: row for row in doc["tasks"]}


REVERTS = "echo done > notes.txt; printf 'def mul(a, b):\\n    return a + b\\n' > calc.py"


def test_a_sibling_that_undoes_a_suite_checked_fix_demotes_it(tmp_path: Path) -> None:
    work = _work(tmp_path, REVERTS)

    rows = _resume(work)

    assert rows["fix"]["state"] == "FAILED", rows["fix"]
    assert "C020" in str(rows["fix"]["reason"])
    assert rows["Calc"]["state"] == "PARTIAL"
    assert (work / "calc.py").read_text() == BROKEN  # what the verdict must answer to


def test_an_untouched_suite_checked_fix_stays_done(tmp_path: Path) -> None:
    work = _work(tmp_path, "echo done > notes.txt")

    rows = _resume(work)

    assert {k: r["state"] for k, r in rows.items()} == {
        "Calc": "DONE", "fix": "DONE", "notes": "DONE",
    }  # fmt: skip
    assert rows["fix"]["verified"] is True


def _one_more(work: Path) -> None:
    """A task added to a finished plan, so that the next run has work and a final sweep."""
    text = (work / "plan.org").read_text()
    (work / "plan.org").write_text(text + "* TODO One more\n  :PROPERTIES:\n  :ID: more\n"
                                   "  :done-when: test -f more.txt\n  :END:\n")  # fmt: skip
    (work / "workers.yaml").write_text(
        'workers:\n  more:\n    - {"tool": "sh", "input": {"cmd": "touch more.txt"}}\n'
        "    - say: DONE\n"
    )


@pytest.mark.parametrize(("between", "state"), [(BROKEN, "FAILED"), (FIXED, "DONE")])
def test_a_carried_suite_checked_done_is_judged_again_on_the_files_as_they_are(
    tmp_path: Path, between: str, state: str
) -> None:
    work = _work(tmp_path, "echo done > notes.txt")
    assert _resume(work)["fix"]["state"] == "DONE"
    (work / "calc.py").write_text(between)  # undone between runs, or left as the fix made it
    _one_more(work)

    rows = _resume(work, "--accept-changes")

    assert rows["fix"]["state"] == state, rows["fix"]
    assert rows["more"]["state"] == "DONE"


@pytest.mark.parametrize(("source", "verdict", "status"), [(BROKEN, "FAIL", 1), (FIXED, "PASS", 0)])
def test_check_runs_the_suite_of_a_task_it_is_the_check_of(
    tmp_path: Path, source: str, verdict: str, status: int
) -> None:
    work = _work(tmp_path, "echo done > notes.txt")
    assert _resume(work)["fix"]["state"] == "DONE"
    (work / "calc.py").write_text(source)

    result = CliRunner().invoke(main, ["check", str(work / "plan.org"), "--json"])

    doc = json.loads(result.stdout)
    row = next(t for t in doc["tasks"] if t.get("id") == "fix")
    assert row["verdict"] == verdict, row
    assert result.exit_code == status


ADDED = TEST + "\n\ndef test_mul_zero():\n    assert mul(0, 7) == 0\n"


def test_a_test_a_person_added_after_the_done_is_new_until_the_changes_are_accepted(
    tmp_path: Path,
) -> None:
    """Adversary-20 F6: a passing test added by hand after the contract's DONE is no test the
    red-first run collected (C022), and `check` says how to take it; `resume
    --accept-changes` records the suite again as it is now, and the DONE stands."""
    work = _work(tmp_path, "echo done > notes.txt")
    assert _resume(work)["fix"]["state"] == "DONE"
    (work / "tests" / "test_calc.py").write_text(ADDED)

    result = CliRunner().invoke(main, ["check", str(work / "plan.org"), "--json"])
    row = next(t for t in json.loads(result.stdout)["tasks"] if t.get("id") == "fix")
    assert (row["verdict"], result.exit_code) == ("FAIL", 1)
    assert "tests not collected before any work: tests/test_calc.py::test_mul_zero" in str(
        row["reason"]
    )
    assert "`resume --accept-changes` records the suite again" in str(row["reason"])

    _one_more(work)
    fix = {"tool": "write_file", "input": {"path": "calc.py", "content": FIXED}}
    with (work / "workers.yaml").open("a") as workers:  # the fix's worker, should it run again
        workers.write(f"  fix:\n    - {json.dumps(fix)}\n    - say: DONE\n")
    row = _resume(work)["fix"]  # the sweep holds the carried DONE to the red-first record
    assert (row["state"], str(row["reason"])[:60]) == (
        "FAILED",
        "no longer holds: C022: pytest tests: tests not collected bef",
    )
    rows = _resume(work, "--accept-changes")  # the worker is run again, on the suite as it is
    assert rows["fix"]["state"] == "DONE", rows["fix"]["reason"]
