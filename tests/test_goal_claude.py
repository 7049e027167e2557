"""`groundskeeper run "GOAL"` with Claude as author and worker: the real SDK against the local
Messages API stub (tests/messages_stub.py) through ANTHROPIC_BASE_URL.

Failure paths first: an outline that stays invalid, a refusal, a reply cut off, an author API
that stays down; then the retry that carries the validator's words, pause_turn, recovering
from 529s, and a run killed during execute that resumes without asking the author again. The
ledger verifies after every run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from groundskeeper.cli import main
from groundskeeper.record.ledger import read_steps
from tests.messages_stub import MessagesStub, usage_json

MODEL = "anthropic:claude-stub-1"
FAST = {"retry-after-ms": "1"}
GOOD = (
    "#+TITLE: greet\n* TODO Greet\n  :PROPERTIES:\n  :ID: greet\n"
    "  :done-when: grep -qx hi out.txt\n  :END:\n  Write out.txt holding hi.\n"
)
CANNOT_FAIL = "* TODO Greet\n  :PROPERTIES:\n  :ID: greet\n  :done-when: true\n  :END:\n"
RETRY_FOR_CANNOT_FAIL = (
    "Your previous outline was invalid:\n"
    "plan.org:4: error: Greet: check cannot fail: `true` [T005]\n"
    "Emit a corrected org outline only."
)


def _run(work: Path, *extra: str) -> Result:
    return CliRunner().invoke(
        main, ["run", "say hi", "--dir", str(work), "--model", MODEL, "--json", *extra]
    )


def _steps(work: Path) -> list[tuple[str, dict[str, Any]]]:
    ledger = work / ".groundskeeper" / "plan.org" / "_steps.jsonl"
    return [(obj["step"], obj["body"]) for _, obj in read_steps(ledger) if obj is not None]


def _verified(work: Path) -> None:
    result = CliRunner().invoke(main, ["ledger", "verify", str(work), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ok"] is True


def _plain(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages without the backend's `cache_control` marks (it caches the conversation)."""
    return [
        {**m, "content": [{k: v for k, v in b.items() if k != "cache_control"}
                          for b in m["content"]]}
        for m in messages
    ]  # fmt: skip


def _honest_worker(stub: MessagesStub) -> None:
    stub.worker.reply_tool_use("write_file", {"path": "out.txt", "content": "hi\n"})
    stub.worker.reply_text("DONE: wrote out.txt")


def test_two_invalid_outlines_end_the_run_before_any_worker_is_asked(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    messages_stub.author.reply_text(CANNOT_FAIL).reply_text("Sorry, no plan today.")
    work = tmp_path / "work"
    result = _run(work)
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["outcome"] == "invalid"
    assert [[d["code"] for d in o["diagnostics"]] for o in doc["outlines"]] == [["T005"], ["T001"]]
    assert [r.is_author for r in messages_stub.requests] == [True, True]  # no worker request
    assert not (work / "plan.org").exists()
    assert (work / "plan.outline-2.org").read_text() == ""
    _verified(work)


def test_an_invalid_outline_is_retried_with_the_exact_diagnostics(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    messages_stub.author.reply_text(CANNOT_FAIL).reply_text(GOOD)
    _honest_worker(messages_stub)
    work = tmp_path / "work"
    result = _run(work)
    assert result.exit_code == 0, result.output
    first, second = list(messages_stub.of("author"))
    assert _plain(first.body["messages"]) == _plain(second.body["messages"][:1])
    assert _plain(second.body["messages"][1:]) == [
        {"role": "assistant", "content": [{"type": "text", "text": CANNOT_FAIL}]},
        {"role": "user", "content": [{"type": "text", "text": RETRY_FOR_CANNOT_FAIL}]},
    ]
    assert (work / "plan.org").read_text() == GOOD.replace("* TODO", "* DONE")
    _verified(work)


@pytest.mark.parametrize(
    ("stop", "failure"),
    [
        ("refusal", "the author model refused the goal"),
        ("max_tokens", "the author's reply was cut off at its token limit (max_tokens)"),
    ],
)
def test_a_refused_or_cut_off_reply_is_not_an_outline_even_if_it_looks_like_one(
    tmp_path: Path, messages_stub: MessagesStub, stop: str, failure: str
) -> None:
    messages_stub.author.reply_text(GOOD, stop_reason=stop).reply_text(GOOD, stop_reason=stop)
    work = tmp_path / "work"
    result = _run(work)
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert [d["message"] for o in doc["outlines"] for d in o["diagnostics"]] == [failure] * 2
    assert [d["code"] for o in doc["outlines"] for d in o["diagnostics"]] == ["A002"] * 2
    assert not (work / "plan.org").exists()
    _verified(work)


def test_pause_turn_is_sent_back_as_is_and_the_outline_is_the_whole_reply(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    head, tail = GOOD[:40], GOOD[40:]
    messages_stub.author.reply_text(head, stop_reason="pause_turn").reply_text(tail)
    _honest_worker(messages_stub)
    work = tmp_path / "work"
    result = _run(work)
    assert result.exit_code == 0, result.output
    _, second = list(messages_stub.of("author"))
    assert _plain(second.body["messages"])[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": head}],
    }
    assert (work / "plan.org").read_text().startswith("#+TITLE: greet\n* DONE Greet")


def test_two_529s_then_an_outline_is_three_requests_and_success(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    messages_stub.author.reply_status(529, headers=FAST).reply_status(529, headers=FAST)
    messages_stub.author.reply_text(GOOD, usage=usage_json(700, 90))
    _honest_worker(messages_stub)
    work = tmp_path / "work"
    result = _run(work)
    assert result.exit_code == 0, result.output
    assert len(list(messages_stub.of("author"))) == 3
    author_call = dict(_steps(work))["author-call"]
    assert author_call["usage"]["input_tokens"] == 700
    assert author_call["usage"]["retries"] == 2


def test_an_author_api_that_stays_down_leaves_the_run_resumable(
    tmp_path: Path, messages_stub: MessagesStub, monkeypatch: pytest.MonkeyPatch
) -> None:
    for _ in range(3):  # the first call and the SDK's two retries
        messages_stub.author.reply_status(529, headers=FAST)
    work = tmp_path / "work"
    result = _run(work)
    assert result.exit_code == 1
    assert "the author's model unavailable" in result.stderr
    assert f"groundskeeper run --resume {work}" in result.stderr
    assert not (work / "plan.org").exists()
    failed = [b for s, b in _steps(work) if s == "author-call"]
    assert failed[0]["stop_reason"] is None and failed[0]["error"].startswith("model unavailable")
    messages_stub.author.reply_text(GOOD)
    _honest_worker(messages_stub)
    again = CliRunner().invoke(main, ["run", "--resume", str(work), "--json"])
    assert again.exit_code == 0, again.output
    assert json.loads(again.stdout)["tasks"][0]["state"] == "DONE"
    _verified(work)


def test_every_request_caches_its_system_prompt_and_workers_their_tools(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    messages_stub.author.reply_text(GOOD)
    _honest_worker(messages_stub)
    assert _run(tmp_path / "work").exit_code == 0
    for request in messages_stub.requests:
        assert request.body["system"][-1]["cache_control"] == {"type": "ephemeral"}
        if not request.is_author:
            assert request.body["tools"][-1]["cache_control"] == {"type": "ephemeral"}


def test_a_run_killed_during_execute_resumes_without_asking_the_author_again(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    messages_stub.author.reply_text(CANNOT_FAIL).reply_text(GOOD)
    messages_stub.worker.reply_text("thinking", stop_reason="end_turn", delay=60)
    work = tmp_path / "work"
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parent.parent),
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "groundskeeper", "run", "say hi", "--dir", str(work),
         "--model", MODEL],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not list(messages_stub.of("worker")):
            assert time.monotonic() < deadline, "the run never asked a worker"
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert len(list(messages_stub.of("author"))) == 2
    messages_stub.handler = None
    _honest_worker(messages_stub)
    result = CliRunner().invoke(main, ["run", "--resume", str(work), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tasks"][0]["state"] == "DONE"
    assert len(list(messages_stub.of("author"))) == 2  # exactly the first run's
    _verified(work)
