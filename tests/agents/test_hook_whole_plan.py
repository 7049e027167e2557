"""Round 9 of the agent hook, by class: a Stop claims the whole plan, DONEs included (A); a
session `agent run` refuses is sealed as refused and holds the next launch (B); an event
that is not a stop is never judged as one (C). Each through the command lines `agent setup`
writes and, where it matters, `agent run` with a stand-in claude."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.agents.gated import HookRun, ledger_steps, make_done_work, stop_event
from tests.agents.test_hook_session_bound import agent_run, gk, hook, set_up


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
    assert "(plan.org:2): nonzero_status: it is DONE, but its check no longer passes" in (reason)
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
        "not done — task `Write the notes` (plan.org:2): nonzero_status: it is DONE, but its"
        " check no longer"
        " passes" in told.stderr
    )
    launcher = [b for s, b in ledger_steps(work) if s == "run-start"][-1]
    assert launcher["kind"] == "launcher-check"
    assert launcher["tasks"] == [] and launcher["done_again"] == ["notes", "count"]
    # the honest twin: the session leaves the work as it was
    honest = agent_run(work, "work Stop")
    assert honest.returncode == 0, honest.stderr
    assert "groundskeeper:" not in honest.stderr


# -- B: the record of a refused session ----------------------------------------------------


def audit(work: Path) -> tuple[int, str]:
    done = gk(work, "audit", str(work / "plan.org"))
    return done.returncode, done.stdout + done.stderr


def test_a_session_with_its_record_rewritten_is_sealed_as_refused_and_holds_the_next_launch(
    work: Path,
) -> None:
    # the ledger and its anchor removed, the checks weakened and the plan set up afresh: the
    # new ledger's seal is the session's own
    set_up(work)
    told = agent_run(work, "Stop rewrite restart Stop")
    assert told.returncode == 1, told.stderr
    assert "ledger as it was when the session started was rewritten" in told.stderr
    assert "this refusal is sealed in the plan's ledger" in told.stderr
    assert "not done —" not in told.stderr  # nothing judged against the session's own seal
    refusals = [b for s, b in ledger_steps(work) if s == "run-start"
                and b.get("kind") == "launcher-refusal"]  # fmt: skip
    assert len(refusals) == 1
    assert any("was rewritten during it" in r for r in refusals[0]["reasons"])
    assert not [b for s, b in ledger_steps(work) if b.get("kind") == "launcher-check"]
    shown = gk(work, "ledger", "show", str(work / ".groundskeeper" / "plan.org")).stdout
    assert "agent run refused session" in shown, shown
    status, said = audit(work)
    assert status == 1 and "refused-session: `agent run` refused session" in said, said
    # the next launch is refused, and a stop on that seal is blocked
    again = agent_run(work, "mark-launched work Stop")
    assert again.returncode == 2, again.stderr
    assert "not launched: the last session launched on the plan's seal was refused" in (
        again.stderr
    )
    assert "LAUNCHED" not in [p.name for p in work.iterdir()]
    reason = hook(work, session="s-9").blocked or ""
    assert "the seal in force is marked: `agent run` refused a session" in reason, reason
    # the honest twin: the user puts the plan right and seals it; the next session is launched
    plan = work / "plan.org"
    plan.write_text(plan.read_text().replace("test -f plan.org", "grep -q shipped NOTES.md", 1)
                    .replace("test -f plan.org", "grep -qx 1 COUNT", 1))  # fmt: skip
    assert gk(work, "agent", "seal", "plan.org").returncode == 0
    honest = agent_run(work, "work Stop")
    assert honest.returncode == 0, honest.stderr
    assert audit(work)[0] == 0


def test_a_session_that_sealed_the_plan_again_is_refused_and_marks_that_seal(work: Path) -> None:
    set_up(work)
    told = agent_run(work, "Stop rewrite reseal work Stop")
    assert told.returncode == 1, told.stderr
    assert "sealed again while the session ran, by `agent seal`" in told.stderr
    again = agent_run(work, "Stop")
    assert again.returncode == 2, again.stderr
    assert "sealed again while the session ran" in again.stderr  # the reasons, as sealed


def test_an_honest_session_leaves_no_mark_on_the_seal(work: Path) -> None:
    set_up(work)
    first = agent_run(work, "work Stop")
    assert first.returncode == 0, first.stderr
    launcher = [b for s, b in ledger_steps(work) if b.get("kind") == "launcher-check"]
    assert launcher[-1]["session_id"] and launcher[-1]["tasks"] == ["notes", "count"]
    shown = gk(work, "ledger", "show", str(work / ".groundskeeper" / "plan.org")).stdout
    assert "agent run's judgment · session " in shown and "2 open task(s) (notes, count)" in shown
    assert "0 tasks · model None" not in shown
    second = agent_run(work, "Stop")
    assert second.returncode == 0, second.stderr
    assert audit(work)[0] == 0


# -- C: events that are not stops ----------------------------------------------------------

#: each agent's hook file as `agent setup` writes it, and how to reach an event's command
HOOK_FILES = {
    "codex": (".codex/hooks.json", lambda d, e: d["hooks"][e][0]["hooks"][0]["command"]),
    "gemini": (".gemini/settings.json", lambda d, e: d["hooks"][e][0]["hooks"][0]["command"]),
    "copilot": (".github/hooks/groundskeeper.json", lambda d, e: d["hooks"][e][0]["bash"]),
    "cursor": (".cursor/hooks.json", lambda d, e: d["hooks"][e][0]["command"]),
}


def agent_hook(work: Path, agent: str, event: str, body: dict[str, object]) -> tuple[int, str]:
    """`event`'s own command line from the hook file `agent setup AGENT` wrote, through a
    shell, with `body` on stdin: (exit status, stdout)."""
    name, reach = HOOK_FILES[agent]
    command = reach(json.loads((work / name).read_text()), event)
    proc = subprocess.run(["/bin/sh", "-c", command], cwd=work, input=json.dumps(body).encode(),
                          capture_output=True, timeout=120)  # fmt: skip
    return proc.returncode, proc.stdout.decode()


def test_copilot_session_starts_are_recorded_as_starts_and_never_trip_the_breaker(
    work: Path,
) -> None:
    done = gk(work, "agent", "setup", "copilot", "--plan", str(work / "plan.org"))
    assert done.returncode == 0, done.stderr
    start = {"timestamp": 1764252000000, "cwd": str(work), "source": "new",
             "initialPrompt": "do the plan"}  # fmt: skip
    for n in range(9):  # more than --max-blocks (8) resumes of one session, and no stop
        status, said = agent_hook(work, "copilot", "sessionStart", {**start, "sessionId": "cpB"})
        assert (status, said) == (0, ""), (n, said)
    assert agent_hook(work, "copilot", "sessionStart", start) == (0, "")  # no session named
    assert "* FAILED" not in (work / "plan.org").read_text()
    steps = ledger_steps(work)
    assert not [b for s, b in steps if s in ("check", "hook-decision", "claim")]
    starts = [b for s, b in steps if s == "run-start" and b.get("kind") == "hook-session"]
    assert [(b["event"], b["session_id"]) for b in starts] == [
        ("sessionStart", "cpB"),
        ("sessionStart", ""),
    ]
    # the honest twin: the session's stop is judged, as a stop
    status, said = agent_hook(work, "copilot", "agentStop", {**start, "sessionId": "cpB"})
    assert status == 0 and json.loads(said)["decision"] == "block", said
    assert "grep -q shipped NOTES.md" in json.loads(said)["reason"]


def test_every_dialect_names_each_configured_event_on_its_command_line(work: Path) -> None:
    from groundskeeper.agents.setup import EVENTS

    for agent in HOOK_FILES:
        done = gk(work, "agent", "setup", agent, "--plan", str(work / "plan.org"))
        assert done.returncode == 0, done.stderr
        name, reach = HOOK_FILES[agent]
        written = json.loads((work / name).read_text())
        for event in EVENTS[agent]:
            line = reach(written, event).split("}; ", 1)[-1]
            assert line.split(" || ")[0].endswith(f"--event {event}"), agent


def test_an_event_other_than_the_configured_one_is_blocked(work: Path) -> None:
    set_up(work)
    # Claude Code's SessionStart command line fed a Stop: neither judged nor taken as a start
    run = hook_as(work, "SessionStart", "Stop")
    assert "configured for 'SessionStart' was given an 'Stop' event" in (run.blocked or ""), run
    assert not [b for s, b in ledger_steps(work) if s == "check"]
    # the honest twin: each command line with its own event
    assert hook(work, "SessionStart").blocked is None
    assert "grep -q shipped NOTES.md" in (hook(work).blocked or "")


def hook_as(work: Path, configured: str, sent: str) -> HookRun:
    """Claude Code's command line for `configured`, given a `sent` event."""
    settings = json.loads((work / ".groundskeeper/plan.org/claude-code.settings.json").read_text())
    command = settings["hooks"][configured][0]["hooks"][0]["command"]
    body = json.dumps(stop_event(work, hook_event_name=sent)).encode()
    proc = subprocess.run(["/bin/sh", "-c", command], cwd=work, timeout=120, capture_output=True,
                          input=body)  # fmt: skip
    return HookRun(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


# -- M3: a FAILED headline whose task passes later ----------------------------------------


def test_a_breaker_failed_task_that_passes_later_is_said_stale_by_the_stop_and_audit(
    work: Path,
) -> None:
    set_up(work, "--max-blocks", "1")
    stopped = hook(work)
    assert stopped.json["continue"] is False, stopped
    assert "* FAILED Write the notes" in (work / "plan.org").read_text()
    (work / "NOTES.md").write_text("shipped\n")
    (work / "COUNT").write_text("1\n")
    run = hook(work, session="s-2")
    assert run.blocked is None, run
    assert (
        "FAILED in the plan but passing now: `notes`, `count` (after the session, the user's"
        " `groundskeeper check PLAN --write` judges it again" in run.stderr
    ), run.stderr
    status, said = audit(work)
    assert status == 1 and "failed-now-passes: `Write the notes` is FAILED in the plan" in said
    # the honest twin: the user's `check --write` writes the headlines; audit is clean
    wrote = gk(work, "check", "plan.org", "--write")
    assert wrote.returncode == 0, wrote.stdout + wrote.stderr
    assert "* DONE Write the notes" in (work / "plan.org").read_text()
    status, said = audit(work)
    assert status == 0, said
