"""A local stand-in for the Anthropic Messages API, for end-to-end tests through the real SDK.

`MessagesStub` serves `POST /v1/messages` on 127.0.0.1 (a port of its own, stdlib
`http.server` in a thread), answering with the documented JSON shapes: a `message` object, or
an `error` object with a status code. Replies are scripted in order (`reply_text`,
`reply_tool_use`, `reply_status`, `reply`), optionally per kind of request (`stub.author`,
`stub.judge`, `stub.worker`, or any `route(predicate)`), or computed by a handler; every request is
recorded (`stub.requests`: headers and JSON body). Point a client at it with
`ANTHROPIC_BASE_URL=stub.base_url` (the `messages_stub` fixture in `conftest.py` does, with a
dummy `ANTHROPIC_API_KEY`), in this process or in a subprocess.

    stub.reply_tool_use("write_file", {"path": "a.txt", "content": "hi\\n"})
    stub.reply_status(529, headers={"retry-after-ms": "1"})   # retried by the SDK
    stub.reply_text("DONE: wrote a.txt")
    stub.author.reply_text("* TODO Write a.txt ...")          # only requests without tools

A request no script answers gets a 400 `invalid_request_error` saying so (not retried), so a
test with too few replies fails by name instead of hanging.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "timeout_error",
    409: "conflict_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    502: "api_error",
    503: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the stub received it."""

    method: str
    path: str
    headers: Mapping[str, str]  # names in lower case
    body: dict[str, Any]

    @property
    def is_author(self) -> bool:
        """An author request carries no tools (the worker's always does)."""
        return not self.body.get("tools")

    @property
    def is_judge(self) -> bool:
        """A judge request forces its one tool, `verdict`."""
        choice = self.body.get("tool_choice")
        return isinstance(choice, dict) and choice.get("name") == "verdict"

    @property
    def last_user_content(self) -> list[dict[str, Any]]:
        """The content blocks of the last user message (tool results, feedback)."""
        for message in reversed(self.body.get("messages", [])):
            if message.get("role") == "user" and isinstance(message.get("content"), list):
                return list(message["content"])
        return []


@dataclass(frozen=True)
class Reply:
    """What the stub answers: a status, a JSON body, headers, after `delay` seconds."""

    status: int
    body: dict[str, Any]
    headers: Mapping[str, str] = field(default_factory=dict)
    delay: float = 0.0


Handler = Callable[[RecordedRequest], "Reply | None"]


def usage_json(
    input_tokens: int = 10,
    output_tokens: int = 5,
    cache_read: int | None = 0,
    cache_write: int | None = 0,
) -> dict[str, Any]:
    """A `usage` object; None leaves a cache field out, as older API versions do."""
    usage: dict[str, Any] = {"input_tokens": input_tokens, "output_tokens": output_tokens}
    if cache_read is not None:
        usage["cache_read_input_tokens"] = cache_read
    if cache_write is not None:
        usage["cache_creation_input_tokens"] = cache_write
    return usage


class Script:
    """A queue of replies, taken in order."""

    def __init__(self, stub: MessagesStub) -> None:
        self._stub = stub
        self._replies: deque[Reply] = deque()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._replies)

    def take(self) -> Reply | None:
        with self._lock:
            return self._replies.popleft() if self._replies else None

    def reply(
        self,
        body: dict[str, Any],
        status: int = 200,
        headers: Mapping[str, str] | None = None,
        delay: float = 0.0,
    ) -> Script:
        with self._lock:
            self._replies.append(Reply(status, body, dict(headers or {}), delay))
        return self

    def reply_message(
        self,
        content: list[dict[str, Any]],
        stop_reason: str | None,
        *,
        usage: dict[str, Any] | None = None,
        model: str | None = None,
        headers: Mapping[str, str] | None = None,
        delay: float = 0.0,
    ) -> Script:
        """A `message` object with these content blocks and stop reason."""
        body = self._stub.message(content, stop_reason, usage=usage, model=model)
        return self.reply(body, 200, headers, delay)

    def reply_text(
        self,
        text: str,
        *,
        stop_reason: str = "end_turn",
        usage: dict[str, Any] | None = None,
        headers: Mapping[str, str] | None = None,
        delay: float = 0.0,
    ) -> Script:
        return self.reply_message(
            [{"type": "text", "text": text}],
            stop_reason,
            usage=usage,
            headers=headers,
            delay=delay,
        )

    def reply_tool_use(
        self,
        name: str,
        tool_input: dict[str, Any],
        *,
        text: str | None = None,
        tool_id: str | None = None,
        usage: dict[str, Any] | None = None,
        delay: float = 0.0,
    ) -> Script:
        """A `tool_use` turn calling one tool (after `text`, if given)."""
        block = {
            "type": "tool_use",
            "id": tool_id or self._stub.next_id("toolu"),
            "name": name,
            "input": tool_input,
        }
        content = ([{"type": "text", "text": text}] if text else []) + [block]
        return self.reply_message(content, "tool_use", usage=usage, delay=delay)

    def reply_status(
        self,
        status: int,
        *,
        message: str | None = None,
        error_type: str | None = None,
        headers: Mapping[str, str] | None = None,
        delay: float = 0.0,
    ) -> Script:
        """An error response: `{"type": "error", "error": {type, message}}`."""
        kind = error_type or ERROR_TYPES.get(status, "api_error")
        body = {
            "type": "error",
            "error": {"type": kind, "message": message or kind.replace("_", " ")},
        }
        return self.reply(body, status, headers, delay)


def message_events(message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """A `message` object as the stream of events the Messages API sends for it."""
    usage = dict(message.get("usage") or {})
    start = {
        **message,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**usage, "output_tokens": 1},
    }
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(message.get("content") or []):
        if block.get("type") == "text":
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            delta = {"type": "text_delta", "text": block.get("text", "")}
        elif block.get("type") == "tool_use":
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {**block, "input": {}},
                },
            )
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.get("input"))}
        else:
            continue
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message.get("stop_reason"), "stop_sequence": None},
            "usage": {"output_tokens": usage.get("output_tokens", 1)},
        },
    )
    yield "message_stop", {"type": "message_stop"}


class _Server(ThreadingHTTPServer):
    # The stdlib's listen backlog is 5: a client opening more connections at once (16
    # parallel workers) had some SYNs dropped and retried a second later, which looked like
    # the supervisor's latency.
    request_queue_size = 256


class MessagesStub(Script):
    """The server; itself the default script, used when no route matches a request."""

    def __init__(self, *, model: str = "claude-stub-1") -> None:
        super().__init__(self)
        self.model = model
        self.requests: list[RecordedRequest] = []
        self.handler: Handler | None = None  # asked first; None from it falls through
        self._routes: list[tuple[Callable[[RecordedRequest], bool], Script]] = []
        self._ids = itertools.count(1)
        self._ids_lock = threading.Lock()
        self._closing = threading.Event()
        self._server = _Server(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self.author = self.route(lambda r: r.is_author)
        self.judge = self.route(lambda r: r.is_judge)
        self.worker = self.route(lambda r: not r.is_author and not r.is_judge)

    # -- lifecycle -----------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> MessagesStub:
        self._thread.start()
        return self

    def close(self) -> None:
        self._closing.set()  # cuts every pending delay short
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> MessagesStub:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- scripting -----------------------------------------------------------------------------

    def route(self, predicate: Callable[[RecordedRequest], bool]) -> Script:
        """A script of its own for the requests `predicate` accepts (first route wins; an
        empty route falls through to the next, then to the stub's own script)."""
        script = Script(self)
        self._routes.append((predicate, script))
        return script

    def next_id(self, prefix: str) -> str:
        with self._ids_lock:
            return f"{prefix}_stub{next(self._ids):06d}"

    def message(
        self,
        content: list[dict[str, Any]],
        stop_reason: str | None,
        *,
        usage: dict[str, Any] | None = None,
        model: str | None = None,
    ) -> dict[str, Any]:
        return {
            "id": self.next_id("msg"),
            "type": "message",
            "role": "assistant",
            "model": model or self.model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage if usage is not None else usage_json(),
        }

    def of(self, kind: str) -> Iterator[RecordedRequest]:
        """The recorded requests of one kind: `author`, `judge` or `worker`."""
        if kind == "judge":
            return (r for r in list(self.requests) if r.is_judge)
        if kind == "worker":
            return (r for r in list(self.requests) if not r.is_author and not r.is_judge)
        return (r for r in list(self.requests) if r.is_author)

    # -- serving -------------------------------------------------------------------------------

    def _answer(self, request: RecordedRequest) -> Reply:
        if self.handler is not None:
            computed = self.handler(request)
            if computed is not None:
                return computed
        for predicate, script in self._routes:
            if predicate(request):
                taken = script.take()
                if taken is not None:
                    return taken
        taken = self.take()
        if taken is not None:
            return taken
        return Reply(
            400,
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": f"messages stub: no reply scripted for request {len(self.requests)}",
                },
            },
        )

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        stub = self

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's client expects

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = {"_unparsed": raw.decode("utf-8", "replace")}
                recorded = RecordedRequest(
                    "POST",
                    self.path,
                    {k.lower(): v for k, v in self.headers.items()},
                    body if isinstance(body, dict) else {"_not_an_object": body},
                )
                stub.requests.append(recorded)
                route = self.path.split("?")[0]
                if route == "/v1/messages/count_tokens":
                    # Claude Code counts before it sends; a rough count is all it needs
                    reply = Reply(200, {"input_tokens": max(1, len(raw) // 4)})
                elif route != "/v1/messages":
                    reply = Reply(
                        404,
                        {
                            "type": "error",
                            "error": {
                                "type": "not_found_error",
                                "message": f"no route {self.path}",
                            },
                        },
                    )
                else:
                    reply = stub._answer(recorded)
                if reply.delay and stub._closing.wait(reply.delay):
                    return
                if body.get("stream") is True and reply.status == 200:
                    self._stream(reply)
                    return
                data = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    if "request-id" not in {k.lower() for k in reply.headers}:
                        self.send_header("request-id", stub.next_id("req"))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (a timeout test): nothing to answer

            def _stream(self, reply: Reply) -> None:
                """The message as server-sent events, as the API streams it."""
                try:
                    self.send_response(200)
                    self.send_header("content-type", "text/event-stream")
                    self.send_header("cache-control", "no-cache")
                    self.send_header("request-id", stub.next_id("req"))
                    self.send_header("connection", "close")
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    for event, data in message_events(reply.body):
                        self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()
                    self.close_connection = True
                except OSError:
                    pass

            def log_message(self, format: str, *args: Any) -> None:
                return None  # quiet: the tests read `stub.requests`

        return _Handler
