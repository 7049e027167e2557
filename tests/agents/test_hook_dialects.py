"""The same hook, each agent's documented blocking form: a failing check blocks and a passing
one allows, through the real command, in each dialect."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groundskeeper.agents.dialects import AGENTS, Decision, EventError, dialect_for
from groundskeeper.record.keys import create_signing_key
from tests.agents.gated import call_hook, do_the_work

# each agent's own stop event, as its documentation gives the input
EVENTS: dict[str, dict[str, Any]] = {
    "claude-code": {
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": "done",
    },
    "codex": {
        "hook_event_name": "Stop",
        "turn_id": "t1",
        "stop_hook_active": False,
        "last_assistant_message": "done",
        "model": "gpt-5",
    },
    "gemini": {
        "hook_event_name": "AfterAgent",
        "prompt": "write notes",
        "prompt_response": "done",
        "stop_hook_active": False,
    },
    "copilot": {"timestamp": 1764252000000, "sessionId": "s-1"},
    "cursor": {
        "hook_event_name": "stop",
        "status": "completed",
        "loop_count": 0,
        "conversation_id": "s-1",
    },
}


#: the event each agent's stop command line names (`agent setup` writes `--event`): Copilot's
#: input names none
CONFIGURED = {"copilot": ("--event", "agentStop")}


def event(agent: str, work: Path) -> dict[str, Any]:
    return {"session_id": "s-1", "cwd": str(work), **EVENTS[agent]}


def blocked(agent: str, status: int, stdout: str, stderr: str) -> str:
    """The reason, if the answer is that agent's block; fails the test otherwise."""
    assert status == 0, (status, stderr)
    answer = json.loads(stdout)
    if agent == "cursor":
        return str(answer["followup_message"])
    word = "deny" if agent == "gemini" else "block"  # Claude Code: JSON on a Stop
    assert answer["decision"] == word
    assert answer["reason"].strip()
    return str(answer["reason"])


@pytest.mark.parametrize("agent", sorted(EVENTS))
def test_each_agent_is_blocked_then_allowed_in_its_own_form(agent: str, work: Path) -> None:
    create_signing_key()
    run = call_hook(agent, event(agent, work), *CONFIGURED.get(agent, ()))
    reason = blocked(agent, run.status, run.stdout, run.stderr)
    assert "grep -q shipped NOTES.md" in reason
    do_the_work(work)
    run = call_hook(agent, event(agent, work), *CONFIGURED.get(agent, ()))
    assert run.status == 0, run.stderr
    if agent in ("gemini", "cursor"):
        assert json.loads(run.stdout) == {}  # stdout must be JSON only
    else:
        assert run.stdout == ""


@pytest.mark.parametrize("agent", sorted(EVENTS))
def test_each_agent_is_blocked_on_a_failure_of_groundskeepers_own(agent: str, work: Path) -> None:
    # no signing key: nothing can be sealed, so nothing is allowed
    do_the_work(work)
    run = call_hook(agent, event(agent, work), *CONFIGURED.get(agent, ()))
    reason = blocked(agent, run.status, run.stdout, run.stderr)
    assert "cannot sign" in reason


def test_the_forms_themselves() -> None:
    block = Decision("block", "why")
    assert AGENTS["claude-code"].answer(block, "TaskCompleted").status == 2
    assert AGENTS["claude-code"].answer(block, "TaskCompleted").stderr == "why\n"
    assert json.loads(AGENTS["claude-code"].answer(block, "Stop").stdout)["decision"] == "block"
    assert json.loads(AGENTS["codex"].answer(block).stdout) == {
        "decision": "block",
        "reason": "why",
    }
    assert json.loads(AGENTS["copilot"].answer(block).stdout) == {
        "decision": "block",
        "reason": "why",
    }
    assert json.loads(AGENTS["gemini"].answer(block).stdout) == {
        "decision": "deny",
        "reason": "why",
    }
    assert json.loads(AGENTS["cursor"].answer(block).stdout) == {"followup_message": "why"}
    stop = AGENTS["claude-code"].answer(Decision("stop", "told"))
    assert stop.status == 0 and json.loads(stop.stdout)["continue"] is False


def test_task_and_subagent_events_name_their_task() -> None:
    claude = dialect_for("claude-code")
    completed = claude.read(
        json.dumps(
            {
                "hook_event_name": "TaskCompleted",
                "session_id": "s",
                "task_id": "notes",
                "task_subject": "Write the notes",
            }
        ).encode()
    )
    assert (completed.kind, completed.subject) == ("stop", "Write the notes")
    subagent = claude.read(
        json.dumps(
            {
                "hook_event_name": "SubagentStop",
                "session_id": "s",
                "agent_type": "count",
                "last_assistant_message": "ok",
            }
        ).encode()
    )
    assert (subagent.kind, subagent.subject, subagent.claim) == ("stop", "count", "ok")
    with pytest.raises(EventError, match="not a JSON object"):
        claude.read(b"[1]")
