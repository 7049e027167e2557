"""Round 9 of the agent hook, by class: a Stop claims the whole plan, DONEs included (A); a
session `agent run` refuses is sealed as refused and holds the next launch (B); an event
that is not a stop is never judged as one (C). Each through the command lines `agent setup`
writes and, where it matters, `agent run` with a stand-in claude."""

from __future__ import annotations

from pathlib import Path

from tests.agents.gated import ledger_steps, make_done_work
from tests.agents.test_hook_session_bound import agent_run, hook, set_up


def done_work(tmp_path: Path) -> Path:
    """Both tasks DONE as a run made them (ledger-backed, read sets sealed), set up for
    Claude Code."""
    import os

    work = make_done_work(tmp_path / "work", dict(os.environ))
    set_up(work)
    return work


# -- A: a Stop claims the whole plan, DONEs included -----------------------------------


def test_a_stop_after_the_session_undid_a_backed_done_is_blocked_naming_it(
    tmp_path: Path,
) -> None:
    work = done_work(tmp_path)
    assert hook(work, "SessionStart").blocked is None
    (work / "NOTES.md").write_text("nothing\n")
    reason = hook(work).blocked or ""
    assert "1 DONE task(s) no longer pass" in reason, reason
    assert "task `Write the notes` (plan.org:2): it is DONE, but its check no longer passes" in (
        reason
    )
    assert "Count them" not in reason  # its read set still holds: kept, not run
    checks = [b for s, b in ledger_steps(work) if s == "check" and b.get("phase") == "hook"]
    assert [(c["task_id"], c["verdict"]) for c in checks] == [("notes", "FAIL")]
    kept = [b for s, b in ledger_steps(work) if s == "inputs-unchanged"]
    assert [[r["task_id"] for r in k["tasks"]] for k in kept] == [["count"]]


def test_a_stop_with_every_done_still_done_is_allowed_without_running_a_check(
    tmp_path: Path,
) -> None:
    work = done_work(tmp_path)
    run = hook(work)
    assert run.blocked is None, run
    assert "checks pass: no open task; DONE, judged again: `notes`, `count`" in run.stderr
    assert not [b for s, b in ledger_steps(work) if s == "check" and b.get("phase") == "hook"]


def test_the_breaker_fails_a_done_the_session_undid(tmp_path: Path) -> None:
    work = done_work(tmp_path)
    set_up(work, "--max-blocks", "1")
    (work / "COUNT").write_text("2\n")
    stopped = hook(work)
    assert stopped.json["continue"] is False, stopped
    assert "FAILED: `count`" in stopped.json["stopReason"]
    assert "* FAILED Count them" in (work / "plan.org").read_text()


def test_agent_run_judges_every_done_again_after_the_session(tmp_path: Path) -> None:
    work = done_work(tmp_path)
    told = agent_run(work, "unwork Stop")
    assert told.returncode == 1, told.stderr
    assert (
        "not done — task `Write the notes` (plan.org:2): it is DONE, but its check no longer"
        " passes" in told.stderr
    )
    launcher = [b for s, b in ledger_steps(work) if s == "run-start"][-1]
    assert launcher["kind"] == "launcher-check"
    assert launcher["tasks"] == [] and launcher["done_again"] == ["notes", "count"]
    # the honest twin: the session leaves the work as it was
    honest = agent_run(work, "work Stop")
    assert honest.returncode == 0, honest.stderr
    assert "groundskeeper:" not in honest.stderr
