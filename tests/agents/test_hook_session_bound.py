"""A session is held to the plan sealed when it started, and `agent run` reads back only its
own session's Stops: attacks an agent with a shell made on that (re-sealing the plan itself,
feeding the hook events of its own, leaving FAILED tasks behind), each through the command
line `agent setup` writes and, where it matters, `agent run` with a stand-in claude."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.agents.gated import HookRun, do_the_work, ledger_steps, stop_event

SETTINGS = Path(".groundskeeper") / "plan.org" / "claude-code.settings.json"


def gk(work: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -m groundskeeper ARGS…` in `work`, as the user (or the agent's shell) runs it."""
    return subprocess.run(
        [sys.executable, "-m", "groundskeeper", *args],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=120,
    )


def set_up(work: Path, *extra: str) -> None:
    done = gk(work, "agent", "setup", "claude-code", "--plan", str(work / "plan.org"), *extra)
    assert done.returncode == 0, done.stderr


def hook(work: Path, event: str = "Stop", session: str = "s-1", **extra: Any) -> HookRun:
    """The hook as Claude Code runs it: the settings file's command line for `event`,
    through a shell, in the session's directory."""
    hooks = json.loads((work / SETTINGS).read_text())["hooks"][event]
    body = stop_event(work, hook_event_name=event, session_id=session, **extra)
    proc = subprocess.run(
        ["/bin/sh", "-c", hooks[0]["hooks"][0]["command"]],
        cwd=work,
        input=json.dumps(body).encode(),
        capture_output=True,
        timeout=120,
    )
    return HookRun(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def rewrite_checks(work: Path) -> None:
    plan = work / "plan.org"
    text = plan.read_text().replace("grep -q shipped NOTES.md", "test -f plan.org")
    plan.write_text(text.replace("grep -qx 1 COUNT", "test -f plan.org"))


# -- F1: what re-seals the plan mid-session ---------------------------------------------------


def test_a_plan_the_agent_seals_again_during_its_session_does_not_apply_to_it(
    work: Path,
) -> None:
    set_up(work)
    assert hook(work, "SessionStart").blocked is None
    assert hook(work).blocked is not None
    rewrite_checks(work)
    # the agent's shell has the user's rights and the home in its environment
    assert gk(work, "agent", "seal", "plan.org").returncode == 0
    run = hook(work)
    reason = run.blocked or ""
    assert "the plan was sealed again while this session ran, by `agent seal`" in reason, run
    # and a SessionStart it feeds the hook itself does not start its session over
    assert hook(work, "SessionStart", source="startup").blocked is None
    assert "sealed again while this session ran" in (hook(work).blocked or "")
    # the honest twin: the user re-seals between sessions, and the next session is held to it
    assert hook(work, "SessionStart", session="s-2").blocked is None
    assert hook(work, session="s-2").blocked is None


def test_agent_setup_run_during_the_session_does_not_apply_to_it(work: Path) -> None:
    set_up(work)
    assert hook(work, "SessionStart").blocked is None
    rewrite_checks(work)
    set_up(work, "--max-blocks", "50")
    reason = hook(work).blocked or ""
    assert "sealed again while this session ran, by `agent setup claude-code`" in reason


FAKE_CLAUDE = """\
import json, os, pathlib, subprocess, sys
args = sys.argv[1:]
settings = json.loads(pathlib.Path(args[args.index("--settings") + 1]).read_text())
session = args[args.index("--session-id") + 1] if "--session-id" in args else "unknown"
current = [session]  # the id the conversation goes by now (`/clear` gives it a new one)

def hook(event, session=None, **extra):
    session = session or current[0]
    command = settings["hooks"][event][0]["hooks"][0]["command"]
    body = {"session_id": session, "cwd": os.getcwd(), "hook_event_name": event,
            "last_assistant_message": "DONE", **extra}
    subprocess.run(["/bin/sh", "-c", command], input=json.dumps(body).encode(),
                   capture_output=True)

def gk(*words):
    subprocess.run([sys.executable, "-m", "groundskeeper", *words], capture_output=True)

hook("SessionStart")
for step in os.environ["SCENARIO"].split():
    if step == "rewrite":
        plan = pathlib.Path("plan.org")
        plan.write_text(plan.read_text().replace("grep -q shipped NOTES.md", "test -f plan.org")
                        .replace("grep -qx 1 COUNT", "test -f plan.org"))
    elif step == "reseal":
        gk("agent", "seal", "plan.org")
    elif step == "restart":  # the ledger and its anchor gone, the plan set up afresh
        for name in ("_steps.jsonl", "_steps.checkpoint"):
            pathlib.Path(".groundskeeper/plan.org", name).unlink()
        for anchor in pathlib.Path(os.environ["GROUNDSKEEPER_HOME"], "agents").glob("*.json"):
            anchor.unlink()
        gk("agent", "setup", "claude-code", "--plan", str(pathlib.Path("plan.org").absolute()))
    elif step == "forge-breaker":  # groundskeeper's own function, with the user's key
        subprocess.run([sys.executable, "-c", "from pathlib import Path;"
                        " from groundskeeper.agents.gate import seal_plan;"
                        " seal_plan(Path('plan.org').absolute(), None, 'breaker')"])
    elif step == "headlines-done":
        plan = pathlib.Path("plan.org")
        plan.write_text(plan.read_text().replace("* TODO", "* DONE"))
    elif step == "work":
        pathlib.Path("NOTES.md").write_text("shipped\\n")
        pathlib.Path("COUNT").write_text("1\\n")
    elif step == "unwork":  # the work undone after an allowed Stop
        pathlib.Path("NOTES.md").write_text("nothing\\n")
    elif step == "write-files":  # each file of the JSON map $WRITES, written
        for name, text in json.loads(pathlib.Path(os.environ["WRITES"]).read_text()).items():
            pathlib.Path(name).write_text(text)
    elif step == "mark-launched":
        pathlib.Path("LAUNCHED").write_text("")
    elif step == "foreign-stop":  # an event of its own, another session's id
        hook("Stop", session="made-up")
    elif step == "clear":  # Claude Code's /clear: a new id, announced by a clear start
        current[0] += "-cleared"
        hook("SessionStart", source="clear")
    elif step == "new-id":  # an id of its own, announced by nothing
        current[0] = "made-up"
    elif step.startswith("start-other-"):  # another session's start, its source named
        hook("SessionStart", session="other", source=step.removeprefix("start-other-"))
    elif step.startswith("subagent"):
        hook("SubagentStop", agent_type="general-purpose")
    else:
        hook(step)
"""


def agent_run(work: Path, scenario: str, *args: str) -> subprocess.CompletedProcess[str]:
    fake = work.parent / "fake-claude"
    fake.write_text(f"#!{sys.executable}\n{FAKE_CLAUDE}")
    fake.chmod(0o755)
    command = [sys.executable, "-m", "groundskeeper", "agent", "run", "claude-code"]
    return subprocess.run(
        [*command, "--plan", str(work / "plan.org"), "--", "-p", "work", *args],
        cwd=work,
        env={**os.environ, "GROUNDSKEEPER_CLAUDE": str(fake), "SCENARIO": scenario},
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_agent_run_tells_of_a_seal_made_during_its_session(work: Path) -> None:
    set_up(work)
    told = agent_run(work, "Stop rewrite reseal Stop")
    assert told.returncode == 1, told.stderr
    assert "the plan was sealed again while the session ran, by `agent seal`" in told.stderr
    # the honest twin, once the user has put the plan back and sealed it (the refused
    # session's seal holds every launch until then: tests/agents/test_hook_whole_plan.py)
    plan = work / "plan.org"
    plan.write_text(plan.read_text().replace("test -f plan.org", "grep -q shipped NOTES.md", 1)
                    .replace("test -f plan.org", "grep -qx 1 COUNT", 1))  # fmt: skip
    assert gk(work, "agent", "seal", "plan.org").returncode == 0
    honest = agent_run(work, "Stop work Stop")
    assert honest.returncode == 0, honest.stderr
    assert "groundskeeper:" not in honest.stderr


def test_agent_run_tells_of_a_record_rewritten_during_its_session(work: Path) -> None:
    # the ledger and the home's anchor removed and the plan set up again: the hook sees a new
    # ledger whose seal is the agent's, but the launcher holds the record from before
    set_up(work)
    told = agent_run(work, "Stop rewrite restart Stop")
    assert told.returncode == 1, told.stderr
    assert "ledger as it was when the session started was rewritten" in told.stderr


def test_a_seal_that_calls_itself_the_breakers_but_changes_a_check_is_late(
    work: Path,
) -> None:
    set_up(work)
    told = agent_run(work, "Stop rewrite forge-breaker Stop")
    assert told.returncode == 1, told.stderr
    assert "sealed again while the session ran, by `breaker`" in told.stderr
    steps = ledger_steps(work)
    last = [b for s, b in steps if s == "hook-decision"][-1]
    assert last["decision"] == "block"
    assert "sealed again while this session ran, by `breaker`" in last["reason"]


def test_agent_run_holds_the_plan_file_to_its_text_at_launch(work: Path) -> None:
    # headlines set DONE and sealed by a forged breaker seal (the checks unchanged): the
    # ledger is the agent's to sign with your key, the plan file as launched is not
    set_up(work)
    told = agent_run(work, "Stop headlines-done forge-breaker Stop")
    assert told.returncode == 1, told.stderr
    assert "was changed during the session (other than groundskeeper's FAILED" in told.stderr


# -- F3: FAILED is not done ----------------------------------------------------------------


def test_a_task_the_breaker_failed_is_not_done_in_this_session_or_a_later_one(
    work: Path,
) -> None:
    set_up(work, "--max-blocks", "2")
    assert hook(work, "SessionStart").blocked is None
    assert hook(work).blocked is not None
    stopped = hook(work)
    assert stopped.json["continue"] is False, stopped
    assert "* FAILED Write the notes" in (work / "plan.org").read_text()
    again = hook(work)
    assert "task `Write the notes`" in (again.blocked or ""), again
    later = hook(work, session="s-2")
    assert "task `Write the notes`" in (later.blocked or ""), later
    # the honest twin: the work done, the check passes, the stop is allowed
    do_the_work(work)
    assert hook(work, session="s-2").blocked is None


def test_agent_run_after_the_breaker_and_a_later_stop_exits_1(work: Path) -> None:
    set_up(work, "--max-blocks", "2")
    told = agent_run(work, "Stop Stop Stop subagent")
    assert told.returncode == 1, told.stderr
    assert "the session's last stop was not allowed (block)" in told.stderr


# -- F2 and F5: only the launched session's Stops ------------------------------------------


def test_agent_run_does_not_count_a_subagent_stop_as_the_sessions_last_stop(
    work: Path,
) -> None:
    set_up(work)
    told = agent_run(work, "Stop subagent")
    assert told.returncode == 1, told.stderr
    assert "the session's last stop was not allowed (block)" in told.stderr


def test_agent_run_does_not_count_another_sessions_stop(work: Path) -> None:
    set_up(work)
    told = agent_run(work, "work foreign-stop")
    assert told.returncode == 1, told.stderr
    assert "no stop of the session reached groundskeeper's hook" in told.stderr


def test_a_subagent_stop_between_refusals_does_not_reset_the_breaker(work: Path) -> None:
    set_up(work, "--max-blocks", "2")
    assert hook(work).blocked is not None
    sub = hook(work, "SubagentStop", agent_type="general-purpose")
    assert sub.blocked is None
    stopped = hook(work)
    assert stopped.json["continue"] is False, stopped
    decisions = [b for s, b in ledger_steps(work) if s == "hook-decision"]
    assert [(d["scope"], d["task_id"], d["subject"]) for d in decisions][1] == (
        "none",
        None,
        "general-purpose",
    )
    claims = [b for s, b in ledger_steps(work) if s == "claim"]
    assert claims[1]["task_id"] is None


def test_agent_run_on_a_continued_session_reads_back_its_one_session(work: Path) -> None:
    # `--continue` names no session: the launcher takes the one session whose calls reached
    # the hook, and refuses to guess between two
    set_up(work)
    first = agent_run(work, "work Stop", "--continue")
    assert first.returncode == 0, first.stderr
    again = agent_run(work, "Stop", "--continue")  # resumed: no new start is marked
    assert again.returncode == 0, again.stderr
    two = agent_run(work, "Stop foreign-stop", "--continue")
    assert two.returncode == 1, two.stderr
    assert "stops of 2 sessions reached the hook" in two.stderr


# -- F4: every agent's configuration stays sealed ------------------------------------------


def test_every_agent_set_up_on_the_plan_stays_sealed(work: Path) -> None:
    set_up(work)
    codex = gk(work, "agent", "setup", "codex", "--plan", str(work / "plan.org"))
    assert codex.returncode == 0, codex.stderr
    do_the_work(work)
    assert hook(work).blocked is None
    settings = json.loads((work / SETTINGS).read_text())
    settings["permissions"]["deny"] = []
    (work / SETTINGS).write_text(json.dumps(settings))
    reason = hook(work).blocked or ""
    assert f"the agent's hook configuration {work / SETTINGS} was changed" in reason


# -- the record: what `ledger show` tells of a session ----------------------------------


def test_ledger_show_tells_each_hook_decision_and_who_sealed(work: Path) -> None:
    set_up(work)
    assert hook(work, "SessionStart").blocked is None
    assert hook(work).blocked is not None
    assert hook(work, "SubagentStop", agent_type="general-purpose").blocked is None
    assert gk(work, "agent", "seal", "plan.org").returncode == 0
    shown = gk(work, "ledger", "show", str(work / ".groundskeeper" / "plan.org"))
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert any("seal by agent setup claude-code · no session" in line for line in lines)
    assert any("session start · SessionStart · session s-1" in line for line in lines)
    assert any("block · Stop · session s-1 · claims the plan" in line for line in lines)
    assert any(
        "allow · SubagentStop · session s-1 · claims no task (general-purpose)" in line
        for line in lines
    )
    assert any("seal by agent seal · no session" in line for line in lines)
