"""`agent run` follows its session across Claude Code's `/clear` (adversary-12 F8): the
conversation goes on under a new id, announced by a `SessionStart` with source `clear`,
and its Stops are the launched session's. An id announced by nothing, another session's
start, or another session's clear while the launched one still calls is never taken for
it. Through `agent run` with a stand-in claude that calls the hook's command lines."""

from __future__ import annotations

from pathlib import Path

from tests.agents.gated import ledger_steps
from tests.agents.test_hook_session_bound import agent_run, set_up


def test_a_stop_under_an_id_nothing_announced_is_not_the_sessions(work: Path) -> None:
    set_up(work)
    told = agent_run(work, "new-id work Stop")
    assert told.returncode == 1, told.stderr
    assert (
        "no stop of the session reached groundskeeper's hook; stops of another session"
        " (`made-up`) did, and no `/clear` start of the session (a SessionStart with source"
        " `clear`) links it to the one launched; nothing is confirmed" in told.stderr
    ), told.stderr
    # the honest twin: /clear announces the new id, and its Stop is the session's
    honest = agent_run(work, "clear work Stop")
    assert honest.returncode == 0, honest.stderr
    assert "groundskeeper:" not in honest.stderr
    starts = [b for s, b in ledger_steps(work) if b.get("kind") == "hook-session"]
    assert starts[-1]["source"] == "clear" and starts[-1]["session_id"].endswith("-cleared")


def test_another_sessions_start_is_not_followed(work: Path) -> None:
    set_up(work)
    # a start of another session (not a clear) and its allowed stop do not stand for ours
    told = agent_run(work, "work start-other-startup new-id Stop")
    assert told.returncode == 1, told.stderr
    assert "stops of another session (`made-up`) did" in told.stderr, told.stderr


def test_another_sessions_clear_while_the_launched_one_calls_is_not_followed(
    work: Path,
) -> None:
    set_up(work)
    told = agent_run(work, "start-other-clear work Stop")
    assert told.returncode == 1, told.stderr
    assert (
        "the session's id `" in told.stderr
        and "made a hook call after a `/clear` start (`other`) the launcher took for its own"
        in told.stderr
    ), told.stderr


def test_two_clears_are_followed_and_a_failing_stop_after_them_is_not_a_pass(
    work: Path,
) -> None:
    set_up(work)
    told = agent_run(work, "clear clear Stop")
    assert told.returncode == 1, told.stderr
    assert "the session's last stop was not allowed (block)" in told.stderr, told.stderr
    honest = agent_run(work, "Stop clear clear work Stop")
    assert honest.returncode == 0, honest.stderr
