"""Red first: before any worker runs, each pending check runs once on the untouched workdir;
one that already passes is reported, and FAILED under --require-red or `#+REQUIRE_RED: t`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.test_cli_run import control, keywords, resume, setup, steps, task

WORK = (
    "workers:\n  a:\n    - {tool: write_file, input: {path: ran.txt, content: x}}\n"
    "    - {tool: write_file, input: {path: a.txt, content: a}}\n    - say: DONE\n"
    "  b: [{tool: write_file, input: {path: b.txt, content: b}}, {say: DONE}]\n"
)
PLAN = task("A", "a", "test -e a.txt") + task("B", "b", "grep -qx b b.txt")


def test_a_check_passing_before_any_work_is_reported(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, PLAN, WORK)
    (tmp_path / "a.txt").write_text("already here")
    result, doc = resume(plan, script)
    assert result.exit_code == 0
    (warning,) = [d for d in doc["diagnostics"] if d["code"] == "R007"]
    assert (warning["level"], warning["code"], warning["line"]) == ("warning", "R007", 2)
    assert "red-first: passes before any work" in warning["message"]
    assert keywords(plan) == {"a": "DONE", "b": "DONE"}
    red = [(c["task_id"], c["verdict"]) for c in steps(plan, "check")
           if c.get("phase") == "red-first"]  # fmt: skip
    assert sorted(red) == [("a", "PASS"), ("b", "FAIL")]  # run in parallel
    events = sqlite3.connect(control(plan) / "_telemetry.db").execute(
        "SELECT task_id, verdict FROM check_events WHERE phase = 'red-first' ORDER BY task_id"
    )
    assert list(events) == [("a", "PASS"), ("b", "FAIL")]


def test_require_red_fails_it_before_any_work(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, PLAN, WORK)
    (tmp_path / "a.txt").write_text("already here")
    result, doc = resume(plan, script, "--require-red")
    assert result.exit_code == 1
    a = next(t for t in doc["tasks"] if t["id"] == "a")
    assert (a["state"], a["reason"], a["attempts"]) == (
        "FAILED",
        "red-first: passes before any work",
        0,
    )
    assert not (tmp_path / "ran.txt").exists()  # its worker never ran
    assert keywords(plan) == {"a": "FAILED", "b": "DONE"}


def test_the_plan_can_require_red_itself(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, PLAN, WORK)
    plan.write_text("#+REQUIRE_RED: t\n" + plan.read_text())
    (tmp_path / "a.txt").write_text("already here")
    result, _ = resume(plan, script)
    assert result.exit_code == 1
    assert keywords(plan) == {"a": "FAILED", "b": "DONE"}
    (start,) = steps(plan, "run-start")
    assert start["require_red"] is True


def test_a_resumed_plan_asks_it_only_of_tasks_never_started(tmp_path: Path) -> None:
    lazy = WORK.replace("    - {tool: write_file, input: {path: a.txt, content: a}}\n", "")
    plan, script = setup(tmp_path, PLAN, lazy)
    first, _ = resume(plan, script)
    assert first.exit_code == 1 and keywords(plan)["a"] == "FAILED"
    (tmp_path / "a.txt").write_text("fixed by hand")  # now a's check passes before work
    second, doc = resume(plan, script, "--require-red")
    assert second.exit_code == 0, doc
    runs = [s["run_id"] for s in steps(plan, "run-start")]
    red = [c["task_id"] for c in steps(plan, "check")
           if c.get("phase") == "red-first" and c["run_id"] == runs[1]]  # fmt: skip
    assert red == []  # a started in run 1; b was DONE
    assert keywords(plan) == {"a": "DONE", "b": "DONE"}


def test_the_warning_names_the_task_once_and_its_line_after_the_todo_line_went_in(
    tmp_path: Path,
) -> None:
    # no #+TODO: line: the run inserts one above every headline when it writes FAILED, so
    # the task's headline moves from line 1 to line 2, and the warning says 2
    plan, script = setup(tmp_path, PLAN, WORK.replace("b.txt, content: b", "b.txt, content: x"))
    plan.write_text(PLAN)
    (tmp_path / "a.txt").write_text("already here")
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    assert plan.read_text().splitlines()[:2] == [
        "#+TODO: TODO NEXT | DONE FAILED PARTIAL",
        "* DONE A",
    ]
    (warning,) = [d for d in doc["diagnostics"] if d["code"] == "R007"]
    assert (warning["scope"], warning["line"]) == ("A", 2)
    assert warning["message"].startswith("red-first: passes before any work — ")
