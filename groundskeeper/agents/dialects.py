"""Each agent's hook dialect: what its "done" event looks like on stdin, and the one answer
form that agent honours for "allow", "block" and "stop for good".

It owns reading an event into a `HookEvent` and rendering a `Decision` into an `Answer`
(exit status, stdout, stderr). It decides nothing: `agents.gate` does. The forms follow each
agent's own hook documentation; every agent lets a stop through on a hook that crashes,
exits 1 or times out, so a block is always given in the form that agent obeys.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from groundskeeper.errors import UsageError
from groundskeeper.fastclass import fastclass, field

__all__ = [
    "AGENTS",
    "Answer",
    "Decision",
    "Dialect",
    "EventError",
    "HookEvent",
    "dialect_for",
]

#: What a hook decides: let the agent stop, keep it working, or end its turn for good (the
#: block limit was reached: the agent would stop anyway, so the user is told instead).
Outcome = Literal["allow", "block", "stop"]

#: What an event asks: a stop-like claim, a session start, a settings change.
EventKind = Literal["stop", "session-start", "config-change", "tool"]


class EventError(UsageError):
    """The event on stdin cannot be read as this agent's hook input."""


@fastclass(frozen=True, slots=True)
class HookEvent:
    """One hook call as groundskeeper reads it, whichever agent sent it."""

    agent: str
    name: str  # the agent's own event name (`Stop`, `agentStop`, …)
    kind: EventKind
    session_id: str
    cwd: str | None
    claim: str  # the agent's last message: what it claims
    subject: str | None  # the task a TaskCompleted / SubagentStop names, if any
    raw: Mapping[str, Any] = field(repr=False, default_factory=dict)


@fastclass(frozen=True, slots=True)
class Decision:
    outcome: Outcome
    reason: str  # for the model on a block; for the user on a stop


@fastclass(frozen=True, slots=True)
class Answer:
    """What the hook process does: exit with `status`, printing `stdout` and `stderr`."""

    status: int
    stdout: str = ""
    stderr: str = ""


def _text(raw: Mapping[str, Any], *names: str) -> str | None:
    for name in names:
        value = raw.get(name)
        if isinstance(value, str) and value:
            return value
    return None


@fastclass(frozen=True, slots=True)
class Dialect:
    """One agent's hook protocol."""

    name: str
    stop_events: frozenset[str]
    session_events: frozenset[str]
    config_events: frozenset[str]
    #: how long the agent waits for a hook by default, in seconds (it fails open after)
    agent_timeout: float
    #: the JSON key of the message on an allowed stop, for the user (None: stderr only)
    block_form: Literal["exit2", "json-block", "json-deny", "followup"]

    def read(self, data: bytes, configured: str | None = None) -> HookEvent:
        """The event on stdin; `configured`: the event the hook's command line names
        (`--event`), which an input naming another contradicts (refused)."""
        try:
            raw = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise EventError(f"the {self.name} hook input is not JSON: {exc}") from None
        if not isinstance(raw, dict):
            raise EventError(f"the {self.name} hook input is not a JSON object")
        said = _text(raw, "hook_event_name", "hookEventName", "hook_event")
        if configured is not None and said is not None and said != configured:
            raise EventError(
                f"the {self.name} hook configured for {configured!r} was given an"
                f" {said!r} event: nothing of it is confirmed"
            )
        name = configured or said
        if name is None:
            # Copilot's and Cursor's inputs need not name the event: each event's own
            # command line names it (`--event`), never a guess (a session start read as a
            # stop is judged, sealed and counted as one)
            raise EventError(
                f"the {self.name} hook input names no event and the hook's command line none"
                " (`--event`): run `groundskeeper agent setup` again, which writes one"
                " command line per event"
            )
        if name in self.stop_events:
            kind: EventKind = "stop"
        elif name in self.session_events:
            kind = "session-start"
        elif name in self.config_events:
            kind = "config-change"
        elif name in ("PostToolUse", "postToolUse"):
            kind = "tool"
        else:
            raise EventError(
                f"groundskeeper does not gate the {self.name} event {name!r}; wire it only to"
                f" {', '.join(sorted(self.stop_events | self.session_events))}"
            )
        subject = None
        if name in ("TaskCompleted",):
            subject = _text(raw, "task_subject", "task_id")
        elif name in ("SubagentStop", "subagentStop"):
            subject = _text(raw, "agent_type", "agentType", "agent_name")
        claim = (
            _text(
                raw,
                "last_assistant_message",
                "prompt_response",
                "lastAssistantMessage",
                "task_subject",
                "text",
            )
            or ""
        )
        return HookEvent(
            agent=self.name,
            name=name,
            kind=kind,
            session_id=_text(raw, "session_id", "sessionId", "conversation_id") or "",
            cwd=_text(raw, "cwd"),
            claim=claim,
            subject=subject,
            raw=raw,
        )

    def form(self, event_name: str | None) -> str:
        """The block form for this event (Claude Code: exit 2 only where JSON is not read,
        and for an event not known, since exit 2 is the one form all its events obey)."""
        if self.name == "claude-code" and event_name is not None:
            return "exit2" if event_name in EXIT2_EVENTS else "json-block"
        return self.block_form

    def answer(self, decision: Decision, event_name: str | None = None) -> Answer:
        """`decision` in this agent's own form."""
        reason = decision.reason
        form = self.form(event_name)
        if decision.outcome == "allow":
            quiet = "{}\n" if self.block_form in ("json-deny", "followup") else ""
            return Answer(0, quiet, reason + "\n" if reason else "")
        if decision.outcome == "stop":
            if event_name in EXIT2_EVENTS and form == "exit2":
                # an event that reads only exit 2 (TaskCompleted): the breaker's answer must
                # refuse the claim in that form, or the completion goes through
                return Answer(2, "", _not_an_error(reason) + "\n")
            if self.block_form == "followup":  # Cursor: nothing to say but an empty answer
                return Answer(0, "{}\n", reason + "\n")
            document = {"continue": False, "stopReason": reason, "systemMessage": reason}
            return Answer(0, json.dumps(document) + "\n", reason + "\n")
        if form == "exit2":
            return Answer(2, "", _not_an_error(reason) + "\n")
        if form == "followup":
            return Answer(0, json.dumps({"followup_message": reason}) + "\n", "")
        word = "deny" if form == "json-deny" else "block"
        return Answer(0, json.dumps({"decision": word, "reason": reason}) + "\n", "")


#: Claude Code events that take no JSON decision: a block there is exit 2 with stderr.
EXIT2_EVENTS = frozenset({"TaskCompleted", "TeammateIdle", "ConfigChange"})

#: Claude Code 2.1.332 reads an exit-2 hook whose stderr says "No such file" as a hook that
#: failed to run, and lets the stop through (seen here; tests/agents/test_claude_code.py):
#: a check's own output says so whenever the work is missing.
_FAILS_OPEN = re.compile(r"no such file(?: or directory)?", re.IGNORECASE)


def _not_an_error(reason: str) -> str:
    return _FAILS_OPEN.sub("not found (ENOENT)", reason)


AGENTS: dict[str, Dialect] = {
    # Claude Code: Stop and SubagentStop take a JSON block (exit 0); TaskCompleted,
    # TeammateIdle and ConfigChange take exit 2 with the reason on stderr
    "claude-code": Dialect(
        "claude-code",
        frozenset({"Stop", "SubagentStop", "TaskCompleted", "TeammateIdle"}),
        frozenset({"SessionStart"}),
        frozenset({"ConfigChange"}),
        600.0,
        "exit2",
    ),
    # Codex: a JSON block with a non-empty reason on stdout
    "codex": Dialect(
        "codex",
        frozenset({"Stop", "SubagentStop"}),
        frozenset({"SessionStart"}),
        frozenset(),
        600.0,
        "json-block",
    ),
    # Gemini CLI: AfterAgent takes decision "deny"; stdout must be JSON only
    "gemini": Dialect(
        "gemini",
        frozenset({"AfterAgent"}),
        frozenset({"SessionStart"}),
        frozenset(),
        60.0,
        "json-deny",
    ),
    # Copilot CLI: agentStop needs a JSON block with exit 0 (exit 2 is only a warning there);
    # hooks time out after 30 s and fail open
    "copilot": Dialect(
        "copilot",
        frozenset({"agentStop", "subagentStop"}),
        frozenset({"sessionStart"}),
        frozenset(),
        30.0,
        "json-block",
    ),
    # Cursor: stop answers with a follow-up message submitted as the next user message
    "cursor": Dialect(
        "cursor",
        frozenset({"stop", "subagentStop"}),
        frozenset({"sessionStart"}),
        frozenset(),
        30.0,
        "followup",
    ),
}


def dialect_for(agent: str) -> Dialect:
    try:
        return AGENTS[agent]
    except KeyError:
        raise UsageError(
            f"unknown agent {agent!r}; groundskeeper gates {', '.join(sorted(AGENTS))}"
        ) from None
