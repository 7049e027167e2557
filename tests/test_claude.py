"""Claude as a backend, offline, through the real SDK: `httpx2.MockTransport` answers.

Failure paths first: errors that persist past the SDK's retries, timeouts, stop reasons that
carry no claim; then what a good call sends (cache breakpoints) and records (usage)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from groundskeeper.acceptance.toolbox import Toolbox
from groundskeeper.errors import GroundskeeperError
from groundskeeper.models import load_model
from groundskeeper.models.claude import ClaudeModel, build_params
from groundskeeper.models.model import (
    ModelCall,
    ModelCallError,
    ModelRequest,
    ModelUnavailableError,
)
from groundskeeper.supervisor.worker import TOOL_SPECS, WorkerSession, WorkerTask

Responder = Callable[[dict[str, Any]], httpx2.Response]


def message(
    content: list[dict[str, Any]], stop: str | None, usage: dict[str, Any] | None = None
) -> httpx2.Response:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test-1",
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage or {"input_tokens": 11, "output_tokens": 7},
    }
    return httpx2.Response(200, json=body, headers={"request-id": "req_ok"})


def text(words: str, stop: str = "end_turn") -> httpx2.Response:
    return message([{"type": "text", "text": words}], stop)


def tool_use(name: str, tool_input: dict[str, Any], block_id: str = "toolu_1") -> httpx2.Response:
    block = {"type": "tool_use", "id": block_id, "name": name, "input": tool_input}
    return message([block], "tool_use")


def error(status: int, kind: str, words: str, **headers: str) -> httpx2.Response:
    body = {"type": "error", "error": {"type": kind, "message": words}}
    return httpx2.Response(status, json=body, headers={"request-id": f"req_{status}", **headers})


class Api:
    """A MockTransport handler answering from a list, recording every request body."""

    def __init__(self, *answers: httpx2.Response | Exception) -> None:
        self.answers = list(answers)
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(json.loads(request.content))
        self.headers.append(dict(request.headers))
        answer = self.answers.pop(0) if self.answers else text("DONE")
        if isinstance(answer, Exception):
            raise answer
        return answer

    def model(self, retries: int = 2, timeout: float = 30.0) -> ClaudeModel:
        client = anthropic.Anthropic(
            api_key="sk-ant-test",
            http_client=httpx2.Client(transport=httpx2.MockTransport(self)),
            max_retries=retries,
            timeout=timeout,
        )
        return ClaudeModel("claude-test-1", client)


FAST = {"retry-after-ms": "1"}  # honoured by the SDK, so retries cost a millisecond


def ask(model: ClaudeModel, purpose: str = "worker") -> Any:
    tools = TOOL_SPECS if purpose == "worker" else ()
    messages = [{"role": "user", "content": [{"type": "text", "text": "Do the task."}]}]
    return model.respond(
        ModelRequest("You are a worker.", messages, tools, "t", "T", purpose=purpose)
    )  # type: ignore[arg-type]


# --- errors that persist: ModelCallError, never an answer ---------------------------------------


def test_a_529_that_persists_past_the_retries_is_a_model_call_error() -> None:
    api = Api(*[error(529, "overloaded_error", "Overloaded", **FAST) for _ in range(5)])
    with pytest.raises(ModelCallError) as caught:
        ask(api.model(retries=2))
    assert len(api.bodies) == 3  # the first try and the SDK's two retries
    assert str(caught.value) == "529 overloaded_error: Overloaded (request req_529)"
    assert caught.value.usage is not None and caught.value.usage.request_id == "req_529"
    assert isinstance(caught.value, GroundskeeperError)


def test_the_retry_count_is_the_callers() -> None:
    api = Api(*[error(503, "api_error", "down", **FAST) for _ in range(9)])
    with pytest.raises(ModelCallError, match="503 api_error: down"):
        ask(api.model(retries=4))
    assert len(api.bodies) == 5
    assert [h.get("x-stainless-retry-count") for h in api.headers] == ["0", "1", "2", "3", "4"]


def test_a_client_error_is_not_retried() -> None:
    api = Api(error(400, "invalid_request_error", "messages: bad"), text("never"))
    with pytest.raises(ModelCallError, match="400 invalid_request_error: messages: bad"):
        ask(api.model(retries=3))
    assert len(api.bodies) == 1


def test_a_timeout_is_a_model_call_error_naming_it() -> None:
    api = Api(httpx2.ReadTimeout("slow"), httpx2.ReadTimeout("slow"))
    with pytest.raises(ModelCallError, match=r"^APITimeoutError: no answer within 0.5 s$"):
        ask(api.model(retries=1, timeout=0.5))
    assert len(api.bodies) == 2  # timeouts are retried too


def test_a_connection_failure_is_a_model_call_error() -> None:
    api = Api(httpx2.ConnectError("refused"))
    with pytest.raises(ModelCallError, match=r"^APIConnectionError: Connection error"):
        ask(api.model(retries=0))


def test_two_529s_then_an_answer_is_three_requests_and_a_success() -> None:
    api = Api(
        error(529, "overloaded_error", "Overloaded", **FAST),
        error(529, "overloaded_error", "Overloaded", **FAST),
        text("DONE: all written"),
    )
    turn = ask(api.model(retries=2))
    assert len(api.bodies) == 3
    assert (turn.text, turn.stop_reason) == ("DONE: all written", "end_turn")
    assert turn.usage is not None and turn.usage.retries == 2
    assert turn.usage.request_id == "req_ok"


def test_retry_after_is_honoured() -> None:
    api = Api(error(429, "rate_limit_error", "slow down", **{"retry-after-ms": "400"}), text("ok"))
    started = time.perf_counter()
    turn = ask(api.model(retries=1))
    assert time.perf_counter() - started >= 0.4
    assert turn.usage is not None and turn.usage.latency_ms >= 400  # the wait is in the call


# --- setup: the key, the endpoint, retries and timeout -------------------------------------------


def test_no_api_key_is_a_usage_error_naming_the_variable() -> None:
    with pytest.raises(ModelUnavailableError, match="ANTHROPIC_API_KEY is not set"):
        load_model("anthropic:claude-test-1")


def test_the_environment_sets_key_endpoint_retries_and_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9/elsewhere")
    monkeypatch.setenv("GROUNDSKEEPER_MODEL_RETRIES", "5")
    monkeypatch.setenv("GROUNDSKEEPER_MODEL_TIMEOUT", "12.5")
    model = load_model("anthropic:claude-test-1")
    assert isinstance(model, ClaudeModel) and model.name == "anthropic:claude-test-1"
    client = model.client
    assert (client.api_key, str(client.base_url)) == ("sk-ant-env", "http://127.0.0.1:9/elsewhere/")
    assert (client.max_retries, client.timeout) == (5, 12.5)
    # options given on the command line win over the environment
    given = load_model("anthropic:claude-test-1", retries=0, timeout=3.0)
    assert isinstance(given, ClaudeModel)
    assert (given.client.max_retries, given.client.timeout) == (0, 3.0)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("GROUNDSKEEPER_MODEL_RETRIES", "-1"),
        ("GROUNDSKEEPER_MODEL_RETRIES", "two"),
        ("GROUNDSKEEPER_MODEL_TIMEOUT", "0"),
        ("GROUNDSKEEPER_MODEL_TIMEOUT", "nan"),
        ("GROUNDSKEEPER_MODEL_TIMEOUT", "inf"),
    ],
)
def test_bad_retry_or_timeout_settings_are_usage_errors(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env")
    monkeypatch.setenv(name, value)
    with pytest.raises(ModelUnavailableError, match=name):
        load_model("anthropic:claude-test-1")


# --- stop reasons through the worker loop --------------------------------------------------------


@pytest.fixture
def box(tmp_path: Path) -> Toolbox:
    work = tmp_path / "work"
    work.mkdir()
    (work / "plan.org").write_text("* TODO x\n")
    return Toolbox(work, work / "plan.org")


TASK = WorkerTask("t", "T", "Write a.txt.", None)


def session(api: Api, box: Toolbox, calls: list[ModelCall] | None = None) -> WorkerSession:
    found = calls if calls is not None else []
    return WorkerSession(api.model(retries=0), TASK, box, on_model_call=found.append)


def test_refusal_ends_the_attempt_without_a_claim_and_ends_the_task(box: Toolbox) -> None:
    api = Api(message([{"type": "text", "text": "DONE"}], "refusal"))
    outcome = session(api, box).attempt()
    assert (outcome.stop, outcome.claims_done, outcome.ends_task) == ("refusal", False, True)
    assert outcome.no_claim is not None and outcome.no_claim.startswith("model refused")


def test_context_window_exceeded_ends_the_task_by_name(box: Toolbox) -> None:
    api = Api(text("DONE", "model_context_window_exceeded"))
    outcome = session(api, box).attempt()
    assert outcome.ends_task and outcome.no_claim is not None
    assert outcome.no_claim.startswith("model_context_window_exceeded:")


def test_max_tokens_is_no_claim_and_its_tool_calls_never_run(box: Toolbox) -> None:
    cut = message(
        [
            {
                "type": "tool_use",
                "id": "toolu_9",
                "name": "write_file",
                "input": {"path": "a.txt", "content": "trunc"},
            }
        ],
        "max_tokens",
    )
    outcome = session(Api(cut), box).attempt()
    assert (outcome.stop, outcome.claims_done, outcome.ends_task) == ("max_tokens", False, False)
    assert outcome.no_claim is not None and outcome.no_claim.startswith("max_tokens:")
    assert not (box.workdir / "a.txt").exists() and outcome.tool_calls == ()


def test_an_unknown_stop_reason_is_no_claim_by_name(box: Toolbox) -> None:
    outcome = session(Api(text("DONE", "compaction")), box).attempt()
    assert outcome.claims_done is False
    assert outcome.no_claim == "unknown stop_reason `compaction`: not a finished turn; no claim"


def test_pause_turn_is_sent_back_as_is(box: Toolbox) -> None:
    paused = [{"type": "text", "text": "Working on it"}]
    api = Api(message(paused, "pause_turn"), text("DONE: finished"))
    outcome = session(api, box).attempt()
    assert (outcome.claim, outcome.claims_done, outcome.turns) == ("DONE: finished", True, 2)
    sent_back = api.bodies[1]["messages"][-1]
    assert sent_back["role"] == "assistant"
    assert [b["text"] for b in sent_back["content"]] == ["Working on it"]


def test_tool_results_go_back_with_is_error(box: Toolbox) -> None:
    api = Api(
        tool_use("read_file", {"path": "missing.txt"}, "toolu_a"),
        tool_use("write_file", {"path": "a.txt", "content": "hi\n"}, "toolu_b"),
        text("DONE: wrote a.txt"),
    )
    calls: list[ModelCall] = []
    outcome = session(api, box, calls).attempt()
    assert outcome.claims_done and (box.workdir / "a.txt").read_text() == "hi\n"
    first = api.bodies[1]["messages"][-1]["content"][0]
    second = api.bodies[2]["messages"][-1]["content"][0]
    assert (first["type"], first["tool_use_id"], first["is_error"]) == (
        "tool_result",
        "toolu_a",
        True,
    )
    assert (second["tool_use_id"], second["is_error"]) == ("toolu_b", False)
    assert [c.stop_reason for c in calls] == ["tool_use", "tool_use", "end_turn"]
    assert all(c.usage.input_tokens == 11 and c.usage.output_tokens == 7 for c in calls)


def test_a_failed_call_is_reported_then_raised(box: Toolbox) -> None:
    api = Api(error(500, "api_error", "boom"))
    calls: list[ModelCall] = []
    with pytest.raises(ModelCallError):
        session(api, box, calls).attempt()
    (call,) = calls
    assert (call.stop_reason, call.error) == (None, "500 api_error: boom (request req_500)")


# --- what a call sends and records ---------------------------------------------------------------


def test_every_request_caches_system_tools_and_the_conversation(box: Toolbox) -> None:
    api = Api(tool_use("list_files", {}), tool_use("list_files", {}, "toolu_2"), text("DONE"))
    session(api, box).attempt()
    assert len(api.bodies) == 3
    for body in api.bodies:
        assert body["system"] == [
            {
                "type": "text",
                "text": body["system"][0]["text"],
                "cache_control": {"type": "ephemeral"},
            }
        ]
        assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
        assert all("cache_control" not in t for t in body["tools"][:-1])
        assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
        marked = [b for m in body["messages"] for b in m["content"] if "cache_control" in b]
        assert len(marked) == 1  # with system and tools: three of the API's four breakpoints
    assert [t["name"] for t in api.bodies[0]["tools"]] == [
        "sh",
        "read_file",
        "write_file",
        "list_files",
        "claim_done",
    ]


def test_the_callers_messages_are_never_changed() -> None:
    messages = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    params = build_params("m", ModelRequest("s", messages, TOOL_SPECS, "t", "T"))
    assert params["messages"][0]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert messages == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert "cache_control" not in TOOL_SPECS[-1].to_json()


def test_an_author_request_sends_no_tools() -> None:
    api = Api(text("* TODO Write a.txt"))
    turn = ask(api.model(), purpose="author")
    assert "tools" not in api.bodies[0] and turn.text == "* TODO Write a.txt"
    assert api.bodies[0]["system"][0]["cache_control"] == {"type": "ephemeral"}


def test_usage_takes_the_apis_numbers_and_zero_for_missing_cache_fields() -> None:
    full = {
        "input_tokens": 120,
        "output_tokens": 30,
        "cache_read_input_tokens": 2048,
        "cache_creation_input_tokens": 512,
    }
    api = Api(
        message([{"type": "text", "text": "a"}], "end_turn", full),
        message(
            [{"type": "text", "text": "b"}],
            "end_turn",
            {"input_tokens": 5, "output_tokens": 1, "cache_read_input_tokens": None},
        ),
    )
    model = api.model()
    first, second = ask(model).usage, ask(model).usage
    assert (
        first.input_tokens,
        first.output_tokens,
        first.cache_read_tokens,
        first.cache_write_tokens,
    ) == (120, 30, 2048, 512)
    assert (first.request_id, first.model, first.retries) == ("req_ok", "claude-test-1", 0)
    assert (second.cache_read_tokens, second.cache_write_tokens) == (0, 0)


def test_other_blocks_go_back_whole(box: Toolbox) -> None:
    thinking = {"type": "thinking", "thinking": "let me see", "signature": "sig=="}
    api = Api(
        message(
            [thinking, {"type": "tool_use", "id": "toolu_t", "name": "list_files", "input": {}}],
            "tool_use",
        ),
        text("DONE"),
    )
    session(api, box).attempt()
    assert api.bodies[1]["messages"][-2]["content"][0] == thinking


def test_an_empty_assistant_turn_is_left_out_and_the_user_turns_joined() -> None:
    """The API can end a turn with no content, but refuses an empty assistant message before
    another one: sending the conversation back must not turn into a 400 (model unavailable)."""
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Do the task."}]},
        {"role": "assistant", "content": []},
        {"role": "user", "content": [{"type": "text", "text": "your work did not pass"}]},
    ]
    sent = build_params("m", ModelRequest("s", messages, TOOL_SPECS, "t", "T"))["messages"]
    assert sent == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Do the task."},
                {"type": "text", "text": "your work did not pass",
                 "cache_control": {"type": "ephemeral"}},
            ],
        }
    ]  # fmt: skip
    assert messages[1] == {"role": "assistant", "content": []}  # the caller's, unchanged
    assert len(messages[0]["content"]) == 1


def test_an_empty_reply_then_feedback_reaches_the_api_as_one_user_turn(box: Toolbox) -> None:
    api = Api(message([], "end_turn"), text("DONE"))
    session_ = session(api, box)
    first = session_.attempt()
    assert (first.claim, first.claims_done) == ("", False)
    session_.attempt("your work did not pass its acceptance check")
    assert [m["role"] for m in api.bodies[1]["messages"]] == ["user"]


@pytest.mark.parametrize(
    "block",
    [
        {"type": "text", "text": ""},
        {"type": "thinking", "thinking": "hm", "signature": "s"},
        {"type": "redacted_thinking", "data": "x"},
    ],
)
def test_no_breakpoint_where_the_api_refuses_one(block: dict[str, Any]) -> None:
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {"role": "assistant", "content": [block]},
    ]
    sent = build_params("m", ModelRequest("s", messages, TOOL_SPECS, "t", "T"))["messages"]
    assert sent[-1]["content"] == [block]  # sent back as it came, unmarked
