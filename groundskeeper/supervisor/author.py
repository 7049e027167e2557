"""The author loop's parts: the author prompt, one author call, the outline reduced from its
reply, `validate_outline`, and the one retry message built from the validator's own words.

The order of things (author, validate, retry once, approve, seal) is `graph.py`'s business;
this module holds no state and writes no files.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from groundskeeper.acceptance.check import sha256_text
from groundskeeper.diagnostics import Diagnostic
from groundskeeper.models.model import AssistantTurn, Message, Model, ModelRequest
from groundskeeper.models.prompts import load_prompt

__all__ = [
    "AuthorReply",
    "ask_author",
    "command_list",
    "extract_outline",
    "render_author_prompt",
    "retry_message",
    "validate_outline",
]

AUTHOR_MAX_TOKENS = 8192
#: `pause_turn` replies sent back before the author call gives up (the API pauses long turns).
MAX_PAUSES = 4
#: The task id an author request carries; the scripted model routes on `purpose`, not this.
AUTHOR_TASK_ID = "author"

_FENCE = re.compile(r"^(```|~~~)")
_HEADLINE = re.compile(r"^\*+[ \t]")
_OUTLINE_START = re.compile(r"^(\*+[ \t]|#\+[A-Za-z_]+:)")


@dataclass(frozen=True, slots=True)
class AuthorReply:
    """One author call: the reply as the model gave it, and the outline reduced from it.

    `failure` is set when the reply cannot be an outline whatever its text (the model
    refused, or the reply was cut off); the graph treats it like an invalid outline."""

    text: str
    outline: str
    stop_reason: str
    failure: str | None
    usage: dict[str, Any] | None

    @property
    def outline_sha256(self) -> str:
        return sha256_text(self.outline)

    @property
    def reply_sha256(self) -> str:
        return sha256_text(self.text)


def command_list() -> str:
    """The sandbox's commands with their synopses and options, from the registry itself."""
    from groundskeeper.sandbox.registry import command_reference

    return command_reference()


def render_author_prompt() -> str:
    """The author's system prompt: the same for every goal, so the API can cache it."""
    return load_prompt("author.md").replace("{{commands}}", command_list())


def goal_message(goal: str) -> str:
    return f"The goal:\n\n{goal.strip()}\n\nWrite the plan for it."


def retry_message(diagnostics: Sequence[Diagnostic]) -> str:
    """`prompts/retry.md` with the validator's diagnostics, one per line, verbatim."""
    lines = "\n".join(d.format("plan.org") for d in diagnostics)
    return load_prompt("retry.md").replace("{{diagnostics}}", lines).rstrip("\n")


def extract_outline(reply: str) -> str:
    """The org outline in an author's reply, by one fixed rule.

    If the reply has a fenced code block (``` or ~~~) holding an org headline, the outline is
    the first such block's content. Otherwise it runs from the first line that starts a
    headline (`* `) or a file keyword (`#+TITLE:`) to the end of the reply. Prose before the
    outline is dropped either way; a reply with neither gives an empty outline, which the
    validator rejects. Line ends become LF; trailing blank lines become one final newline.
    """
    lines = reply.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    fenced = _first_fenced_outline(lines)
    if fenced is not None:
        picked = fenced
    else:
        start = next((i for i, line in enumerate(lines) if _OUTLINE_START.match(line)), None)
        picked = [] if start is None else lines[start:]
    text = "\n".join(picked).strip("\n")
    return text + "\n" if text else ""


def _first_fenced_outline(lines: list[str]) -> list[str] | None:
    i = 0
    while i < len(lines):
        opened = _FENCE.match(lines[i])
        if opened is None:
            i += 1
            continue
        marker = opened.group(1)
        end = next((j for j in range(i + 1, len(lines)) if lines[j].startswith(marker)), None)
        if end is None:
            end = len(lines)  # an unclosed fence runs to the end of the reply
        body = lines[i + 1 : end]
        if any(_HEADLINE.match(line) for line in body):
            return body
        i = end + 1
    return None


def validate_outline(text: str, *, require_checks: bool = False) -> list[Diagnostic]:
    """The author loop's gate: rung 1's errors, at least one task in an active state (T001),
    and under `require_checks` a check on every leaf task (A001). Warnings do not block an
    outline and are not returned; an empty list means the outline may be sealed."""
    from groundskeeper.plan.lint import validate_outline as lint_outline
    from groundskeeper.plan.org import parse_plan

    plan = parse_plan(text)
    found = [d for d in lint_outline(plan) if d.level == "error"]
    if require_checks:
        from groundskeeper.plan.spec import compile_plan

        spec = compile_plan(plan)
        for task in plan.tasks():
            leaf = not any(child.is_task for child in task.children)
            if leaf and not spec.of(task).checked:  # a check, or a contract that runs the work
                found.append(
                    Diagnostic(
                        "error",
                        task.title,
                        "task has no acceptance check (the run requires one): add"
                        " `:done-when: COMMAND` or a `#+begin_src sh :check` block",
                        task.line,
                        "A001",
                    )
                )
    return sorted(found, key=lambda d: d.line or 0)


def ask_author(model: Model, goal: str, history: Sequence[tuple[str, str]] = ()) -> AuthorReply:
    """One author call. `history` holds the earlier (reply, retry message) pairs: the model
    sees its own previous reply and the validator's verdict on it.

    May raise the model backend's error for an API that stays unavailable; the graph leaves
    the run resumable then."""
    messages: list[Message] = [_user(goal_message(goal))]
    for previous, retry in history:
        messages.append({"role": "assistant", "content": [{"type": "text", "text": previous}]})
        messages.append(_user(retry))
    system = render_author_prompt()
    text = ""
    reply: AssistantTurn | None = None
    for _ in range(MAX_PAUSES + 1):
        reply = model.respond(
            ModelRequest(
                system=system,
                messages=list(messages),
                tools=(),
                task_id=AUTHOR_TASK_ID,
                task_title=goal,
                max_tokens=AUTHOR_MAX_TOKENS,
                purpose="author",
            )
        )
        text += reply.text
        if reply.stop_reason != "pause_turn":
            break
        messages.append(reply.to_message())  # sent back as is: the server continues the turn
    assert reply is not None
    return AuthorReply(
        text=text,
        outline=extract_outline(text),
        stop_reason=reply.stop_reason,
        failure=_failure(reply.stop_reason),
        usage=_usage(reply),
    )


def _failure(stop_reason: str) -> str | None:
    """Why a reply that stopped this way cannot be taken as an outline (None: it can)."""
    if stop_reason in ("end_turn", "stop_sequence"):
        return None
    return {
        "refusal": "the author model refused the goal",
        "max_tokens": "the author's reply was cut off at its token limit (max_tokens)",
        "pause_turn": f"the author's reply was still paused after {MAX_PAUSES} continuations",
        "model_context_window_exceeded": "the author's reply ran out of context window",
    }.get(stop_reason, f"the author's reply stopped for an unknown reason: {stop_reason}")


def _usage(reply: AssistantTurn) -> dict[str, Any] | None:
    return reply.usage.to_json() if reply.usage is not None else None


def _user(text: str) -> Message:
    return {"role": "user", "content": [{"type": "text", "text": text}]}
