"""Model backends behind one interface shaped after the Anthropic Messages API.

A `Model` takes a system prompt, messages of content blocks and tool definitions, and answers
with one assistant turn (text and/or `tool_use` blocks plus a `stop_reason`). This module owns
that interface (with `Usage`, what a call cost, and `ModelCallError`, a call that could not be
made); it does not own the backends (`scripted.py`, `claude.py`) nor the tool loop
(`supervisor.worker`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from groundskeeper.errors import GroundskeeperError, UsageError

if TYPE_CHECKING:
    pass

# Content blocks and messages are plain dicts shaped exactly like Anthropic's, so the real
# backend can pass them through unchanged:
#   {"type": "text", "text": ...}
#   {"type": "tool_use", "id": ..., "name": ..., "input": {...}}
#   {"type": "tool_result", "tool_use_id": ..., "content": ..., "is_error": bool}
ContentBlock = dict[str, Any]
Purpose = Literal["worker", "author", "judge"]
Message = dict[str, Any]  # {"role": "user" | "assistant", "content": [ContentBlock, ...]}

#: The tools a worker may call; a script naming any other tool is refused when loaded.
WORKER_TOOLS: frozenset[str] = frozenset(
    {"sh", "read_file", "write_file", "list_files", "claim_done"}
)


class ScriptError(UsageError):
    """A scripted-model file that cannot be replayed; the message names the file and entry."""


class ModelUnavailableError(UsageError):
    """A `--model` spec that cannot be used: an unknown backend, or one missing its setup
    (`ANTHROPIC_API_KEY`); raised before anything runs."""


class ModelCallError(GroundskeeperError):
    """A call that failed after the backend's own retries (an API error that persisted, a
    timeout, a connection that could not be made). Not the model's answer: the attempt it
    was part of is unfinished, never judged, and the task stays resumable."""

    def __init__(self, message: str, *, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage  # the latency and request id of the failed call, when known


class ModelCallRefused(ModelCallError):
    """A call not made at all: the run already knows the model is unavailable (fail fast)."""


@dataclass(frozen=True, slots=True)
class Usage:
    """What one call cost, as the API reported it (tokens) and as measured (latency).

    A backend that does not count tokens (the scripted one) reports zeros, so telemetry and
    the ledger hold the same rows whichever backend ran."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    latency_ms: int = 0  # the whole call, retries and their waits included
    request_id: str | None = None
    model: str = ""
    retries: int = 0  # how many times the backend retried before this answer

    def to_json(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "latency_ms": self.latency_ms,
            "request_id": self.request_id,
            "model": self.model,
            "retries": self.retries,
        }


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One call as a run records it: who asked, how it ended, what it cost."""

    purpose: Purpose
    stop_reason: str | None  # None when the call failed (`error` says why)
    usage: Usage
    error: str | None = None


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """The sum of a run's calls (failed calls count as calls, with their measured latency)."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    latency_ms: int = 0

    def add(self, usage: Usage) -> UsageTotals:
        return UsageTotals(
            self.calls + 1,
            self.input_tokens + usage.input_tokens,
            self.output_tokens + usage.output_tokens,
            self.cache_read_tokens + usage.cache_read_tokens,
            self.cache_write_tokens + usage.cache_write_tokens,
            self.latency_ms + usage.latency_ms,
        )

    def to_json(self) -> dict[str, int]:
        return {
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "latency_ms": self.latency_ms,
        }


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool definition as the Messages API takes it."""

    name: str
    description: str
    input_schema: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": dict(self.input_schema),
        }


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One call: what the Messages API takes, plus which task is asking.

    `task_id`, `task_title` and `purpose` are not sent to a real API; the scripted model uses
    them to find the script to replay, the way a person reading the conversation would know
    who is asking: a worker on a task, or the author writing the plan.
    """

    system: str
    messages: Sequence[Message]
    tools: Sequence[ToolSpec]
    task_id: str
    task_title: str
    max_tokens: int = 4096
    purpose: Purpose = "worker"
    # the Messages API's `tool_choice` as sent (None: not sent, the API's `auto`); the judge
    # forces its one tool with `{"type": "tool", "name": "verdict"}`
    tool_choice: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class AssistantTurn:
    """One assistant message: content blocks and why generation stopped."""

    content: tuple[ContentBlock, ...]
    # end_turn | tool_use | max_tokens | stop_sequence | pause_turn | refusal
    # | model_context_window_exceeded (or a reason this version does not know)
    stop_reason: str
    usage: Usage | None = None

    @property
    def text(self) -> str:
        return "\n".join(b["text"] for b in self.content if b.get("type") == "text")

    @property
    def tool_uses(self) -> list[ContentBlock]:
        return [b for b in self.content if b.get("type") == "tool_use"]

    def to_message(self) -> Message:
        return {"role": "assistant", "content": [dict(b) for b in self.content]}


class Model(Protocol):
    """A model backend. Implementations must be safe to call from several threads."""

    @property
    def name(self) -> str: ...

    def respond(self, request: ModelRequest) -> AssistantTurn: ...
