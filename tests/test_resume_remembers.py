"""A resume remembers: under --require-red (or `#+REQUIRE_RED: t`) DONE needs a red
observation sealed in the task's history, so a second run cannot skip what the first refused;
and a run-level rule an earlier run of the plan was given holds for the runs after it."""

from __future__ import annotations

from pathlib import Path

from tests.test_cli_run import keywords, resume, setup, steps, task

CLAIM = "workers:\n  t: [{say: DONE}]\n"
WORK = "workers:\n  t:\n    - {tool: write_file, input: {path: out.txt, content: \"42\\n\"}}\n" \
       "    - say: DONE\n"  # fmt: skip
PLAN = task("T", "t", "grep -qx 42 out.txt")


def _red_first(plan: Path, run_id: str) -> list[tuple[str, str]]:
    return [(c["task_id"], c["verdict"]) for c in steps(plan, "check")
            if c.get("phase") == "red-first" and c["run_id"] == run_id]  # fmt: skip


def test_a_second_run_cannot_skip_what_red_first_refused(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, PLAN, CLAIM)
    (tmp_path / "out.txt").write_text("42\n")  # green before any work
    _, first = resume(plan, script, "--require-red")
    assert first["tasks"][0]["reason"] == "red-first: passes before any work"
    result, second = resume(plan, script, "--require-red")
    assert result.exit_code == 1
    (t,) = second["tasks"]
    assert (t["state"], t["attempts"]) == ("FAILED", 0)
    assert t["reason"].startswith("red-first: passes before any work")
    runs = [s["run_id"] for s in steps(plan, "run-start")]
    assert _red_first(plan, runs[1]) == [("t", "PASS")]  # asked again: no red was ever seen


def test_a_task_seen_red_before_is_not_asked_again(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, PLAN, CLAIM)
    resume(plan, script, "--require-red")  # red seen; the claim fails its check
    assert keywords(plan) == {"t": "FAILED"}
    script.write_text(WORK)
    result, second = resume(plan, script, "--require-red")
    assert result.exit_code == 0, second
    assert keywords(plan) == {"t": "DONE"}
    runs = [s["run_id"] for s in steps(plan, "run-start")]
    assert _red_first(plan, runs[0]) == [("t", "FAIL")]
    assert _red_first(plan, runs[1]) == []


def test_require_red_given_once_holds_for_the_later_runs(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, PLAN, CLAIM)
    (tmp_path / "out.txt").write_text("42\n")
    resume(plan, script, "--require-red")
    result, second = resume(plan, script)  # the flag left out
    assert result.exit_code == 1
    assert second["tasks"][0]["state"] == "FAILED"
    assert second["tasks"][0]["reason"].startswith("red-first: passes before any work")
    starts = steps(plan, "run-start")
    assert [s["require_red"] for s in starts] == [True, True]


def test_a_plan_never_run_under_require_red_is_not_held_to_it(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, PLAN, CLAIM)
    (tmp_path / "out.txt").write_text("42\n")
    result, doc = resume(plan, script)
    assert result.exit_code == 0, doc  # a warning (R007), not a failure
    # T031 too: the check reads only out.txt, which was there before and no task asks for
    assert [d["code"] for d in doc["diagnostics"]] == ["T031", "R007"]
    assert {d["level"] for d in doc["diagnostics"]} == {"warning"}


def test_require_checks_given_once_holds_for_the_later_runs(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, task("Loose", "t"), CLAIM)
    first, _ = resume(plan, script, "--require-checks")
    assert first.exit_code == 1
    result, second = resume(plan, script)
    assert result.exit_code == 1
    assert second["tasks"][0]["reason"] == "no acceptance check (--require-checks)"
