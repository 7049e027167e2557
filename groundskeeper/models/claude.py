"""Claude as a `Model`: the Anthropic Messages API through the official `anthropic` SDK.

It owns the request a `ModelRequest` becomes (prompt-caching breakpoints on the tools, the
system prompt and the conversation so far), the SDK's retries and timeout, and turning the
reply into an `AssistantTurn` with its `Usage` — or a failure that persisted into a
`ModelCallError`. It does not own the tool loop nor what a stop reason means for a task
(`worker.py` and the runner do). Imported only for an `anthropic:` model: the SDK is slow
to import.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anthropic

from groundskeeper.models.model import (
    AssistantTurn,
    ContentBlock,
    Message,
    ModelCallError,
    ModelRequest,
    ModelUnavailableError,
    Usage,
)

if TYPE_CHECKING:
    from anthropic.types import Message as ApiMessage

__all__ = [
    "DEFAULT_RETRIES",
    "DEFAULT_TIMEOUT",
    "ENV_RETRIES",
    "ENV_TIMEOUT",
    "ClaudeModel",
    "build_params",
    "describe_api_error",
]

#: The SDK's own default: 408, 409, 429, 5xx and 529 are retried with exponential backoff
#: (0.5 s doubling, at most 8 s), or after what a `retry-after(-ms)` header asks.
DEFAULT_RETRIES = 2
#: Seconds one HTTP request may take (each retry gets its own); a worker turn that writes a
#: long file needs minutes, not the SDK's ten.
DEFAULT_TIMEOUT = 300.0
ENV_RETRIES = "GROUNDSKEEPER_MODEL_RETRIES"
ENV_TIMEOUT = "GROUNDSKEEPER_MODEL_TIMEOUT"

_EPHEMERAL: dict[str, str] = {"type": "ephemeral"}


def build_params(model: str, request: ModelRequest) -> dict[str, Any]:
    """The keyword arguments of `messages.create` for `request`, as sent.

    Three cache breakpoints (of the API's four): the last tool definition (the tools are
    the same for every worker), the system prompt (the same for every turn of a task) and the
    last block of the conversation (so the next turn reads everything before it from the
    cache). The caller's messages are copied, never changed. An author request has no tools
    and sends none. A request's `tool_choice` (the judge forces its `verdict` tool) is sent as
    given; it does not move a breakpoint, and the tools and system prompt stay cached.
    """
    params: dict[str, Any] = {
        "model": model,
        "max_tokens": request.max_tokens,
        "messages": _with_breakpoint(request.messages),
    }
    if request.system:
        params["system"] = [
            {"type": "text", "text": request.system, "cache_control": dict(_EPHEMERAL)}
        ]
    if request.tools:
        tools = [tool.to_json() for tool in request.tools]
        tools[-1]["cache_control"] = dict(_EPHEMERAL)
        params["tools"] = tools
    if request.tool_choice is not None:
        params["tool_choice"] = dict(request.tool_choice)
    return params


def _with_breakpoint(messages: Sequence[Message]) -> list[Message]:
    """The conversation as sent: copied, with a cache breakpoint on its last block.

    An assistant turn that came back empty (the API may end a turn with no content) cannot be
    sent back before another message: it is left out, and the user turns on either side of
    it become one, which is the same conversation in the only shape the API takes."""
    copied: list[Message] = []
    for at, message in enumerate(messages):
        content = message.get("content")
        blocks = [dict(b) for b in content] if isinstance(content, list) else content
        if message.get("role") == "assistant" and blocks == [] and at < len(messages) - 1:
            continue
        if copied and copied[-1]["role"] == message.get("role") == "user":
            previous = copied[-1]["content"]
            if isinstance(previous, list) and isinstance(blocks, list):
                previous.extend(blocks)
                continue
        copied.append({**message, "content": blocks})
    last = copied[-1].get("content") if copied else None
    if isinstance(last, list) and last and _cacheable(last[-1]):
        last[-1]["cache_control"] = dict(_EPHEMERAL)
    return copied


def _cacheable(block: ContentBlock) -> bool:
    """The API refuses a breakpoint on an empty text block and on thinking blocks; a turn
    ending in one is simply not cached."""
    if block.get("type") == "text":
        return bool(block.get("text"))
    return block.get("type") not in ("thinking", "redacted_thinking")


def _block(raw: Any) -> ContentBlock:
    """A response content block as the plain dict the conversation keeps and sends back.

    Text and tool use keep only what the API takes back; any other block (thinking,
    server tools) goes back whole, as the API asks, without members the SDK left unset."""
    kind = getattr(raw, "type", None)
    if kind == "text":
        return {"type": "text", "text": raw.text}
    if kind == "tool_use":
        return {"type": "tool_use", "id": raw.id, "name": raw.name, "input": raw.input}
    dumped = raw.model_dump(mode="json", exclude_none=True)
    return dumped if isinstance(dumped, dict) else {"type": str(kind)}


def _usage(message: ApiMessage, ms: int, request_id: str | None, retries: int) -> Usage:
    usage = message.usage
    return Usage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        # absent when the prompt was too short to cache, or from an older API version
        cache_read_tokens=usage.cache_read_input_tokens or 0,
        cache_write_tokens=usage.cache_creation_input_tokens or 0,
        latency_ms=ms,
        request_id=request_id,
        model=message.model,
        retries=retries,
    )


def describe_api_error(exc: anthropic.AnthropicError, timeout: float | None) -> str:
    """The status (or error class) and the API's own message, in one line."""
    if isinstance(exc, anthropic.APIStatusError):
        kind = f" {exc.type}" if exc.type else ""
        said = exc.api_message or _first_line(str(exc))
        where = f" (request {exc.request_id})" if exc.request_id else ""
        return f"{exc.status_code}{kind}: {said}{where}"
    if isinstance(exc, anthropic.APITimeoutError):
        limit = f" within {timeout:g} s" if timeout is not None else ""
        return f"APITimeoutError: no answer{limit}"
    return f"{type(exc).__name__}: {_first_line(str(exc))}"


def _first_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[0] if lines else "(no message)"


class ClaudeModel:
    """A `Model` backed by `client.messages.create`; safe to call from several threads (the
    SDK's client is).

    `client` is an `anthropic.Anthropic` configured by the caller (tests hand it an
    `httpx2.MockTransport`); `from_environment` builds the one a user runs.
    """

    def __init__(self, model: str, client: anthropic.Anthropic) -> None:
        self.model = model
        self.client = client

    @property
    def name(self) -> str:
        return f"anthropic:{self.model}"

    @classmethod
    def from_environment(
        cls, model: str, *, retries: int | None = None, timeout: float | None = None
    ) -> ClaudeModel:
        """The client a user runs: key and endpoint from `ANTHROPIC_API_KEY` and
        `ANTHROPIC_BASE_URL` (read by the SDK itself; nothing here overrides them); retries
        and timeout from the arguments, else `GROUNDSKEEPER_MODEL_RETRIES` /
        `GROUNDSKEEPER_MODEL_TIMEOUT`, else the defaults above."""
        try:
            max_retries = retries if retries is not None else _env_int(ENV_RETRIES, DEFAULT_RETRIES)
            seconds = timeout if timeout is not None else _env_float(ENV_TIMEOUT, DEFAULT_TIMEOUT)
        except ValueError as exc:
            raise ModelUnavailableError(str(exc)) from None
        client = anthropic.Anthropic(max_retries=max_retries, timeout=seconds)
        return cls(model, client)

    def respond(self, request: ModelRequest) -> AssistantTurn:
        params = build_params(self.model, request)
        started = time.perf_counter()
        try:
            raw = self.client.messages.with_raw_response.create(**params)
            message = raw.parse()
        except anthropic.AnthropicError as exc:
            ms = int((time.perf_counter() - started) * 1000)
            request_id = exc.request_id if isinstance(exc, anthropic.APIStatusError) else None
            usage = Usage(latency_ms=ms, request_id=request_id, model=self.model)
            timeout = self.client.timeout if isinstance(self.client.timeout, float) else None
            raise ModelCallError(describe_api_error(exc, timeout), usage=usage) from exc
        ms = int((time.perf_counter() - started) * 1000)
        content = tuple(_block(b) for b in message.content)
        # a stop reason this SDK does not know still arrives as text: kept, so it is named
        stop = str(message.stop_reason) if message.stop_reason is not None else "none"
        return AssistantTurn(content, stop, _usage(message, ms, raw.request_id, raw.retries_taken))


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    if not raw.strip().isdigit():
        raise ValueError(f"{name}={raw!r}: expected a whole number of retries (0 or more)")
    return int(raw)


def _env_float(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{name}={raw!r}: expected a number of seconds greater than 0")
    return value
