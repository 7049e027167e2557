"""The plan as sealed at session start, the block bound, and the tasks a TaskCompleted or
SubagentStop claims: attacks an agent can make with its own tools, each refused."""

from __future__ import annotations

import json
from pathlib import Path

from groundskeeper.record.keys import create_signing_key
from tests.agents.gated import call_hook, do_the_work, ledger_steps, stop_event


def start(work: Path) -> None:
    create_signing_key()
    run = call_hook(
        "claude-code", stop_event(work, hook_event_name="SessionStart", source="startup")
    )
    assert run.status == 0, run.stderr


def test_a_check_rewritten_to_true_is_a_plan_change(work: Path) -> None:
    start(work)
    plan = work / "plan.org"
    plan.write_text(plan.read_text().replace("grep -q shipped NOTES.md", "true"))
    (work / "COUNT").write_text("1\n")
    run = call_hook("claude-code", stop_event(work))
    assert run.blocked
    assert "the plan changed since the session started" in (run.blocked or "")
    assert "the check of task `notes` was changed" in (run.blocked or "")


def test_a_headline_set_to_done_is_a_plan_change(work: Path) -> None:
    start(work)
    plan = work / "plan.org"
    plan.write_text(plan.read_text().replace("* TODO Write", "* DONE Write"))
    (work / "COUNT").write_text("1\n")
    run = call_hook("claude-code", stop_event(work))
    assert run.blocked
    assert "the plan changed since the session started" in (run.blocked or "")


def test_a_protected_input_changed_is_a_plan_change(work: Path) -> None:
    plan = work / "plan.org"
    plan.write_text("#+PROTECT: tests/*\n" + plan.read_text())
    (work / "tests").mkdir()
    (work / "tests" / "expected.txt").write_text("1\n")
    start(work)
    do_the_work(work)
    (work / "tests" / "expected.txt").write_text("anything\n")
    run = call_hook("claude-code", stop_event(work))
    assert "the protected input `tests/expected.txt` was changed" in (run.blocked or "")


def test_the_user_reseals_with_a_command_of_its_own(work: Path) -> None:
    from click.testing import CliRunner

    from groundskeeper.cli import main

    start(work)
    plan = work / "plan.org"
    plan.write_text(plan.read_text().replace("grep -qx 1 COUNT", "grep -qx 2 COUNT"))
    result = CliRunner().invoke(main, ["agent", "seal", str(plan)])
    assert result.exit_code == 0, result.output
    do_the_work(work)
    (work / "COUNT").write_text("2\n")
    # a seal made while a session runs does not apply to it: the next session is held to it
    assert "sealed again while this session ran" in (
        call_hook("claude-code", stop_event(work)).blocked or ""
    )
    assert call_hook("claude-code", stop_event(work, session_id="s-2")).blocked is None


def test_the_block_bound_seals_failed_and_tells_the_user(work: Path) -> None:
    start(work)
    (work / "COUNT").write_text("1\n")
    runs = [call_hook("claude-code", stop_event(work), "--max-blocks", "3") for _ in range(3)]
    assert [bool(r.blocked) for r in runs] == [True, True, False]
    told = json.loads(runs[2].stdout)
    assert told["continue"] is False
    assert "NOT a pass" in told["stopReason"] and "FAILED: `notes`" in told["stopReason"]
    states = [b for s, b in ledger_steps(work) if s == "state"]
    assert states == [
        {
            "run_id": states[0]["run_id"],
            "task_id": "notes",
            "from": "TODO",
            "to": "FAILED",
            "stop": "breaker",
        }
    ]
    assert "* FAILED Write the notes" in (work / "plan.org").read_text()
    # the breaker's own edit re-sealed the plan: the next stop is judged, not "changed", and
    # a FAILED task is not done
    after = call_hook("claude-code", stop_event(work))
    assert "1 of 2 open task(s) fail:\n- task `Write the notes`" in (after.blocked or "")


def test_another_session_counts_its_own_blocks(work: Path) -> None:
    start(work)
    for _ in range(2):
        assert call_hook("claude-code", stop_event(work), "--max-blocks", "3").blocked
    other = call_hook("claude-code", stop_event(work, session_id="s-2"), "--max-blocks", "3")
    assert other.blocked and "not done" in other.blocked


def test_task_completed_checks_only_the_task_it_names(work: Path) -> None:
    start(work)
    (work / "COUNT").write_text("1\n")
    completed = {
        **stop_event(work),
        "hook_event_name": "TaskCompleted",
        "task_id": "7",
        "task_subject": "count",
        "task_description": "count the notes",
    }
    passed = call_hook("claude-code", completed)  # `count` passes
    assert passed.status == 0 and passed.blocked is None
    wrong = {**completed, "task_subject": "notes"}
    run = call_hook("claude-code", wrong)
    assert run.status == 2 and "Write the notes" in run.stderr and "Count them" not in run.stderr


def test_a_subagent_stop_is_checked_against_its_agent_type(work: Path) -> None:
    start(work)
    sub = stop_event(work, hook_event_name="SubagentStop", agent_id="a1", agent_type="notes")
    run = call_hook("claude-code", sub)
    assert "grep -q shipped NOTES.md" in (run.blocked or "")
    # a subagent that is no task of the plan claims nothing of it; the final Stop checks all
    explore = stop_event(work, hook_event_name="SubagentStop", agent_id="a2", agent_type="Explore")
    assert call_hook("claude-code", explore).blocked is None
    assert call_hook("claude-code", stop_event(work)).blocked


def test_a_ledger_and_anchor_removed_after_setup_cannot_reseal_a_changed_plan(
    work: Path, groundskeeper_home: Path
) -> None:
    import shutil

    from click.testing import CliRunner

    from groundskeeper.cli import main

    plan = work / "plan.org"
    result = CliRunner().invoke(main, ["agent", "setup", "claude-code", "--plan", str(plan)])
    assert result.exit_code == 0, result.output
    control = work / ".groundskeeper" / "plan.org"
    for name in ("_steps.jsonl", "_steps.checkpoint"):
        (control / name).unlink()
    shutil.rmtree(groundskeeper_home / "agents")
    plan.write_text(plan.read_text().replace("grep -q shipped NOTES.md", "true"))
    (work / "COUNT").write_text("1\n")
    run = call_hook("claude-code", stop_event(work), "--plan", str(plan), "--require-seal")
    assert "holds no seal, but `agent setup` sealed the plan" in (run.blocked or "")
    # without the set-up's word the first call seals what it finds: why set-up passes it
    assert call_hook("claude-code", stop_event(work), "--plan", str(plan)).blocked is None
