"""DONE stays earned until the run ends: a parent's roll-up re-runs its children's checks,
and every task made DONE in the run is checked once more at its end."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.test_cli_run import control, keywords, resume, setup, states, steps, task

CLOBBER = """workers:
  first: [{tool: write_file, input: {path: a.txt, content: a}}, {say: DONE}]
  second:
    - {tool: write_file, input: {path: b.txt, content: b}}
    - {tool: write_file, input: {path: a.txt, content: clobbered}}
    - say: DONE
"""


def test_an_accomplice_undoing_an_earlier_tasks_work_is_caught_by_the_final_sweep(
    tmp_path: Path,
) -> None:
    plan, script = setup(
        tmp_path,
        task("First", "first", "grep -qx a a.txt") + task("Second", "second", "grep -qx b b.txt"),
        CLOBBER,
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert result.exit_code == 1
    first = next(t for t in doc["tasks"] if t["id"] == "first")
    assert first["state"] == "FAILED"
    assert first["reason"].startswith("no longer passes: nonzero_status: check line 1")
    assert states(doc)["second"][0] == "DONE"
    assert keywords(plan) == {"first": "FAILED", "second": "DONE"}
    sweep = [
        (c["task_id"], c["verdict"]) for c in steps(plan, "check") if c.get("phase") == "sweep"
    ]
    # first is judged again (second's worker acted after its verdict) and no longer passes;
    # second is kept without a run: nothing acted on the workdir after its verdict
    assert sweep == [("first", "FAIL")]
    assert [[t["task_id"] for t in u["tasks"]] for u in steps(plan, "untouched")] == [["second"]]
    assert ("first", "DONE", "FAILED") in [
        (s["task_id"], s["from"], s["to"]) for s in steps(plan, "state")
    ]
    events = sqlite3.connect(control(plan) / "_telemetry.db").execute(
        "SELECT task_id, phase, verdict FROM check_events WHERE phase = 'sweep' ORDER BY task_id"
    )
    assert list(events) == [("first", "sweep", "FAIL"), ("second", "sweep", "PASS")]


def test_a_later_sibling_clobbering_an_earlier_one_fails_the_roll_up(tmp_path: Path) -> None:
    body = (
        "* TODO Both\n  :PROPERTIES:\n  :ID: both\n  :ORDERED: t\n  :END:\n"
        + task("First", "first", "grep -qx a a.txt", 2)
        + task("Second", "second", "grep -qx b b.txt", 2)
    )
    plan, script = setup(tmp_path, body, CLOBBER)
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    assert keywords(plan) == {"both": "PARTIAL", "first": "FAILED", "second": "DONE"}
    both = next(t for t in doc["tasks"] if t["id"] == "both")
    assert "First no longer passes" in both["reason"]
    rollup = [(c["task_id"], c["verdict"]) for c in steps(plan, "check")
              if c.get("phase") == "rollup"]  # fmt: skip
    assert rollup == [("first", "FAIL")]
    (kept,) = [u for u in steps(plan, "untouched") if u["phase"] == "rollup"]
    assert [t["task_id"] for t in kept["tasks"]] == ["second"]


def test_honest_work_survives_the_sweep_and_the_roll_up(tmp_path: Path) -> None:
    body = (
        "* TODO Both\n  :PROPERTIES:\n  :ID: both\n  :END:\n"
        + task("First", "first", "grep -qx a a.txt", 2)
        + task("Second", "second", "grep -qx b b.txt", 2)
    )
    honest = CLOBBER.replace(
        "    - {tool: write_file, input: {path: a.txt, content: clobbered}}\n", ""
    )
    plan, script = setup(tmp_path, body, honest)
    result, _ = resume(plan, script)
    assert result.exit_code == 0
    assert keywords(plan) == {"both": "DONE", "first": "DONE", "second": "DONE"}
