"""The Messages API stub itself (tests/messages_stub.py), through the real SDK: the lead's
author and graph tests lean on it, so what it promises is tested here."""

from __future__ import annotations

import anthropic
import pytest

from groundskeeper.models.claude import ClaudeModel
from groundskeeper.models.model import ModelCallError, ModelRequest
from groundskeeper.supervisor.worker import TOOL_SPECS
from tests.messages_stub import MessagesStub, Reply


def ask(model: ClaudeModel, *, author: bool = False) -> str:
    request = ModelRequest(
        "system",
        [{"role": "user", "content": [{"type": "text", "text": "go"}]}],
        () if author else TOOL_SPECS,
        "t",
        "T",
        purpose="author" if author else "worker",
    )
    return model.respond(request).text


def claude(stub: MessagesStub) -> ClaudeModel:
    client = anthropic.Anthropic(api_key="k", base_url=stub.base_url, max_retries=1)
    return ClaudeModel("claude-stub-1", client)


def test_an_unscripted_request_is_a_400_that_is_not_retried() -> None:
    with MessagesStub() as stub:
        with pytest.raises(ModelCallError, match="messages stub: no reply scripted"):
            ask(claude(stub))
        assert len(stub.requests) == 1


def test_routes_answer_their_kind_and_fall_through_when_empty() -> None:
    with MessagesStub() as stub:
        stub.author.reply_text("an outline")
        stub.reply_text("the default script")
        model = claude(stub)
        assert ask(model) == "the default script"  # a worker request: the worker route is empty
        assert ask(model, author=True) == "an outline"
        assert [r.is_author for r in stub.requests] == [False, True]
        assert [r.path for r in stub.requests] == ["/v1/messages", "/v1/messages"]


def test_a_handler_answers_first_and_headers_are_sent() -> None:
    with MessagesStub() as stub:
        stub.reply_text("queued")
        stub.handler = lambda r: (
            Reply(200, stub.message([{"type": "text", "text": "computed"}], "end_turn"),
                  {"request-id": "req_fixed"})
            if r.is_author
            else None
        )  # fmt: skip
        model = claude(stub)
        turn = model.respond(
            ModelRequest("s", [{"role": "user", "content": "x"}], (), "t", "T", purpose="author")
        )
        assert (turn.text, turn.usage and turn.usage.request_id) == ("computed", "req_fixed")
        assert ask(model) == "queued"  # the handler passed (None): the script answered


def test_close_cuts_a_pending_delay_short() -> None:
    import time

    stub = MessagesStub().start()
    stub.reply_text("late", delay=30)
    client = anthropic.Anthropic(api_key="k", base_url=stub.base_url, max_retries=0, timeout=0.2)
    with pytest.raises(ModelCallError, match="APITimeoutError"):
        ask(ClaudeModel("m", client))
    started = time.perf_counter()
    stub.close()
    assert time.perf_counter() - started < 2
