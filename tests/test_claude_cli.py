"""`groundskeeper resume --model anthropic:…` end to end: the real SDK against the local
Messages API stub (tests/messages_stub.py) through ANTHROPIC_BASE_URL.

Failure paths first: no key, an API that stays down (resumable, never DONE), a timeout, a
refusal, a reply cut off; then retries that recover, caching, tool results and usage rows.
The ledger verifies after every run."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from groundskeeper.cli import main
from groundskeeper.plan.org import load_plan
from groundskeeper.record.ledger import read_steps
from tests.messages_stub import MessagesStub, usage_json

MODEL = "anthropic:claude-stub-1"
HEAD = "#+TODO: TODO NEXT | DONE FAILED PARTIAL\n"
FAST = {"retry-after-ms": "1"}


def plan_of(tmp_path: Path, *tasks: tuple[str, str | None]) -> Path:
    text = HEAD
    for task_id, check in tasks:
        text += f"* TODO Task {task_id}\n  :PROPERTIES:\n  :ID: {task_id}\n"
        if check is not None:
            text += f"  :done-when: {check}\n"
        text += "  :END:\n"
    path = tmp_path / "plan.org"
    path.write_text(text)
    return path


def resume(plan: Path, *extra: str) -> tuple[Result, dict[str, Any]]:
    result = CliRunner().invoke(main, ["resume", str(plan), "--model", MODEL, "--json", *extra])
    assert result.exit_code in (0, 1), (result.exit_code, result.output, result.stderr)
    return result, json.loads(result.stdout)


def control(plan: Path) -> Path:
    return plan.parent / ".groundskeeper" / plan.name


def steps(plan: Path, step: str) -> list[dict[str, Any]]:
    return [
        obj["body"]
        for _, obj in read_steps(control(plan) / "_steps.jsonl")
        if obj is not None and obj.get("step") == step
    ]


def model_rows(plan: Path) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(control(plan) / "_telemetry.db")
    try:
        return conn.execute(
            "SELECT task_id, purpose, attempt, stop_reason, input_tokens, output_tokens,"
            " cache_read_tokens, cache_write_tokens, request_id, retries, error IS NOT NULL"
            " FROM model_calls ORDER BY rowid"
        ).fetchall()
    finally:
        conn.close()


def keywords(plan: Path) -> dict[str, str | None]:
    return {t.task_id: t.keyword for t in load_plan(plan).tasks()}


def ledger_verifies(plan: Path) -> None:
    verified = CliRunner().invoke(main, ["ledger", "verify", str(plan.parent), "--json"])
    assert verified.exit_code == 0, verified.output
    assert json.loads(verified.stdout)["ok"] is True


def write_a(stub: MessagesStub) -> None:
    stub.reply_tool_use("write_file", {"path": "a.txt", "content": "hello\n"})
    stub.reply_text("DONE: wrote a.txt")


# --- failure paths -------------------------------------------------------------------------------


def test_no_api_key_exits_2_naming_the_variable_before_anything_runs(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, ("a", "test -s a.txt"))
    result = CliRunner().invoke(main, ["resume", str(plan), "--model", MODEL])
    assert result.exit_code == 2
    assert "ANTHROPIC_API_KEY is not set" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / ".groundskeeper").exists()  # nothing ran, nothing was sealed


def test_a_persistent_529_leaves_the_plan_resumable_and_names_the_command(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    plan = plan_of(tmp_path, ("a", "test -s a.txt"), ("b", "test -s b.txt"))
    for _ in range(3):
        messages_stub.reply_status(529, headers=FAST)
    result, doc = resume(plan, "--model-retries", "2", "--max-parallel", "1")
    assert result.exit_code == 1
    # one task's call and its two retries; the other task was never sent to the model
    assert len(messages_stub.requests) == 3
    assert [(t["id"], t["state"], t["attempts"]) for t in doc["tasks"]] == [
        ("a", "TODO", 0),
        ("b", "TODO", 0),
    ]
    assert doc["tasks"][0]["reason"].startswith("model unavailable: 529 overloaded_error:")
    assert doc["tasks"][1]["reason"].startswith("not started: the model is unavailable (529")
    assert [s["task_id"] for s in steps(plan, "task-start")] == ["a"]
    assert doc["model_unavailable"].startswith("model unavailable: 529 overloaded_error")
    assert doc["continue_with"] == f"groundskeeper resume {plan} --model {MODEL}"
    assert f"continue with: groundskeeper resume {plan} --model {MODEL}" in result.stderr
    assert [d["code"] for d in doc["diagnostics"] if d["level"] == "error"] == ["R008"]
    assert keywords(plan) == {"a": "TODO", "b": "TODO"}  # never DONE, never FAILED
    (call,) = steps(plan, "model-call")
    assert (call["stop_reason"], call["retries"], call["task_id"]) == (None, 0, "a")
    assert call["error"].startswith("529 overloaded_error")
    assert doc["usage"]["calls"] == 1
    ledger_verifies(plan)
    # the API is back: the same command finishes the work
    write_a(messages_stub)
    messages_stub.reply_tool_use("write_file", {"path": "b.txt", "content": "b\n"})
    messages_stub.reply_text("DONE")
    again, doc = resume(plan, "--max-parallel", "1")
    assert again.exit_code == 0, again.stderr
    assert keywords(plan) == {"a": "DONE", "b": "DONE"}
    assert doc["model_unavailable"] is None and doc["continue_with"] is None
    ledger_verifies(plan)


def test_a_model_that_goes_down_mid_run_stops_new_calls(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    plan = plan_of(tmp_path, ("a", "test -s a.txt"), ("b", "test -s b.txt"), ("c", None))
    write_a(messages_stub)
    messages_stub.reply_status(500, message="internal boom")
    messages_stub.reply_text("DONE")  # would answer c: never asked
    result, doc = resume(plan, "--model-retries", "0", "--max-parallel", "1")
    assert result.exit_code == 1
    assert len(messages_stub.requests) == 3
    assert [(t["id"], t["state"]) for t in doc["tasks"]] == [
        ("a", "DONE"),
        ("b", "TODO"),
        ("c", "TODO"),
    ]
    assert "500 api_error: internal boom" in doc["model_unavailable"]
    ledger_verifies(plan)


def test_a_parent_is_not_rolled_up_when_the_model_goes_away(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    plan = tmp_path / "plan.org"
    plan.write_text(
        HEAD + "* TODO Parent\n  :PROPERTIES:\n  :ID: parent\n  :ORDERED: t\n  :END:\n"
        "** TODO One\n   :PROPERTIES:\n   :ID: one\n   :done-when: test -s one.txt\n   :END:\n"
        "** TODO Two\n   :PROPERTIES:\n   :ID: two\n   :done-when: test -s two.txt\n   :END:\n"
    )
    messages_stub.reply_status(503)
    result, doc = resume(plan, "--model-retries", "0")
    assert result.exit_code == 1
    # neither PARTIAL nor FAILED: nothing was judged, everything is left for the next resume
    assert keywords(plan) == {"parent": "TODO", "one": "TODO", "two": "TODO"}
    assert [t["state"] for t in doc["tasks"]] == ["TODO", "TODO", "TODO"]
    assert [s["task_id"] for s in steps(plan, "task-start")] == ["one"]
    ledger_verifies(plan)


def test_a_timeout_is_model_unavailable(tmp_path: Path, messages_stub: MessagesStub) -> None:
    plan = plan_of(tmp_path, ("a", "test -s a.txt"))
    messages_stub.reply_text("DONE", delay=5)
    work = tmp_path / "work dir"
    work.mkdir()
    result, doc = resume(plan, "--model-timeout", "0.3", "--model-retries", "0",
                         "--workdir", str(work), "--require-checks")  # fmt: skip
    assert result.exit_code == 1
    # the command that continues it keeps what decides where the work is and what counts
    assert doc["continue_with"] == (
        f"groundskeeper resume {plan} --model {MODEL} --workdir '{work}' --require-checks"
    )
    assert doc["tasks"][0]["state"] == "TODO"
    assert doc["model_unavailable"] == "model unavailable: APITimeoutError: no answer within 0.3 s"
    ledger_verifies(plan)


def test_the_environment_sets_the_model_retries_and_timeout(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    plan = plan_of(tmp_path, ("a", "test -s a.txt"))
    messages_stub.reply_text("DONE", delay=5)
    env = {
        "GROUNDSKEEPER_MODEL": MODEL,
        "GROUNDSKEEPER_MODEL_TIMEOUT": "0.2",
        "GROUNDSKEEPER_MODEL_RETRIES": "0",
    }
    result = CliRunner().invoke(main, ["resume", str(plan), "--json"], env=env)
    assert result.exit_code == 1
    assert "no answer within 0.2 s" in json.loads(result.stdout)["model_unavailable"]
    assert len(messages_stub.requests) == 1


def test_a_refusal_fails_the_task_by_name_without_another_attempt(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    plan = plan_of(tmp_path, ("a", "test -s a.txt"))
    messages_stub.reply_text("I can't help with that.", stop_reason="refusal")
    result, doc = resume(plan)
    assert result.exit_code == 1
    (task,) = doc["tasks"]
    assert (task["state"], task["attempts"]) == ("FAILED", 1)
    assert task["reason"].startswith("model refused")
    assert len(messages_stub.requests) == 1  # :max-attempts: 2, but a refusal ends the task
    assert [c["phase"] for c in steps(plan, "check")] == ["red-first"]  # its check never ran
    (claim,) = steps(plan, "claim")
    assert (claim["stop"], claim["claims_done"]) == ("refusal", False)
    ledger_verifies(plan)


def test_context_window_exceeded_fails_the_task_by_name(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    plan = plan_of(tmp_path, ("a", None))
    messages_stub.reply_text("DONE", stop_reason="model_context_window_exceeded")
    _, doc = resume(plan)
    assert doc["tasks"][0]["state"] == "FAILED"
    assert doc["tasks"][0]["reason"].startswith("model_context_window_exceeded:")


def test_max_tokens_is_no_claim(tmp_path: Path, messages_stub: MessagesStub) -> None:
    plan = plan_of(tmp_path, ("a", "test -s a.txt"), ("b", None))
    messages_stub.worker.reply_text("DONE: I wrote a.t", stop_reason="max_tokens")
    messages_stub.worker.reply_text("DONE: again cut", stop_reason="max_tokens")
    messages_stub.reply_text("DONE, I wa", stop_reason="max_tokens")
    result, doc = resume(plan, "--max-parallel", "1")
    assert result.exit_code == 1
    a, b = doc["tasks"]
    assert (a["state"], a["attempts"]) == ("FAILED", 2)
    assert "the worker made no claim: max_tokens:" in a["reason"]
    assert (b["state"], b["reason"]) == (
        "FAILED",
        "max_tokens: the model's reply was cut off at its output limit; no claim",
    )
    assert all(c["claims_done"] is False for c in steps(plan, "claim"))


def test_pause_turn_is_sent_back_as_is(tmp_path: Path, messages_stub: MessagesStub) -> None:
    plan = plan_of(tmp_path, ("a", "test -s a.txt"))
    messages_stub.reply_text("Still searching", stop_reason="pause_turn")
    write_a(messages_stub)
    result, _ = resume(plan)
    assert result.exit_code == 0, result.stderr
    second = messages_stub.requests[1].body["messages"]
    assert second[-1]["role"] == "assistant"
    assert second[-1]["content"][0]["text"] == "Still searching"
    assert [c["stop_reason"] for c in steps(plan, "model-call")] == [
        "pause_turn",
        "tool_use",
        "end_turn",
    ]


# --- success paths -------------------------------------------------------------------------------


def test_two_529s_then_200_is_three_requests_and_done(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    plan = plan_of(tmp_path, ("a", "test -s a.txt"))
    messages_stub.reply_status(529, headers=FAST)
    messages_stub.reply_status(529, headers=FAST)
    write_a(messages_stub)
    result, _ = resume(plan)
    assert result.exit_code == 0, result.stderr
    assert len(messages_stub.requests) == 4  # 3 for the first turn, 1 for the second
    assert [r.headers["x-stainless-retry-count"] for r in messages_stub.requests] == [
        "0",
        "1",
        "2",
        "0",
    ]
    assert [c["retries"] for c in steps(plan, "model-call")] == [2, 0]
    assert keywords(plan) == {"a": "DONE"}
    ledger_verifies(plan)


def test_a_run_records_usage_caches_and_answers_tools(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    plan = plan_of(tmp_path, ("a", "grep -q hello a.txt"))
    big = usage_json(1500, 40, cache_read=0, cache_write=1400)
    messages_stub.reply_tool_use("read_file", {"path": "nope.txt"}, usage=big)
    messages_stub.reply_tool_use(
        "write_file",
        {"path": "a.txt", "content": "hello\n"},
        usage=usage_json(1600, 30, cache_read=1400, cache_write=150),
    )
    messages_stub.reply_text(
        "DONE: wrote a.txt", usage=usage_json(1700, 9, cache_read=None, cache_write=None)
    )
    result, doc = resume(plan)
    assert result.exit_code == 0, result.stderr
    requests = messages_stub.requests
    assert len(requests) == 3
    for request in requests:  # prompt caching in every request
        credential = request.headers.get("x-api-key") or request.headers["authorization"]
        assert credential.endswith("sk-ant-test-stub")
        assert request.body["model"] == "claude-stub-1"
        assert request.body["system"][0]["cache_control"] == {"type": "ephemeral"}
        assert request.body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    # tool results, one per tool_use, with is_error for the failed read
    (missing,) = requests[1].last_user_content
    (wrote,) = requests[2].last_user_content
    assert (missing["type"], missing["is_error"]) == ("tool_result", True)
    assert missing["tool_use_id"] == requests[1].body["messages"][-2]["content"][0]["id"]
    assert (wrote["is_error"], wrote["content"][0]["text"]) == (False, "wrote 6 bytes to a.txt")
    # the usage rows are the stub's numbers (absent cache fields: 0)
    rows = model_rows(plan)
    assert [r[:8] for r in rows] == [
        ("a", "worker", 1, "tool_use", 1500, 40, 0, 1400),
        ("a", "worker", 1, "tool_use", 1600, 30, 1400, 150),
        ("a", "worker", 1, "end_turn", 1700, 9, 0, 0),
    ]
    assert all(r[8].startswith("req_stub") and r[9] == 0 and r[10] == 0 for r in rows)
    assert doc["usage"] == {
        "calls": 3,
        "input_tokens": 4800,
        "output_tokens": 79,
        "cache_read_tokens": 1400,
        "cache_write_tokens": 1550,
        "latency_ms": doc["usage"]["latency_ms"],
    }
    sealed = steps(plan, "model-call")
    assert [(s["input_tokens"], s["cache_read_tokens"], s["request_id"]) for s in sealed] == [
        (r[4], r[6], r[8]) for r in rows
    ]
    ledger_verifies(plan)
    shown = CliRunner().invoke(main, ["ledger", "show", str(tmp_path)])
    assert "worker → tool_use · 1600 in, 1400 cached, 30 out ·" in shown.stdout


def test_human_output_ends_with_the_usage_totals(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    plan = plan_of(tmp_path, ("a", "test -s a.txt"))
    messages_stub.reply_tool_use(
        "write_file",
        {"path": "a.txt", "content": "x"},
        usage=usage_json(100, 20, cache_read=30, cache_write=40),
    )
    messages_stub.reply_text("DONE", usage=usage_json(200, 5, cache_read=50, cache_write=0))
    result = CliRunner().invoke(main, ["resume", str(plan), "--model", MODEL])
    assert result.exit_code == 0, result.stderr
    assert (
        "model: 2 calls, 300 input tokens (80 read from the cache, 40 written to it),"
        " 25 output tokens"
    ) in result.stderr


def test_scripted_runs_fill_the_same_table_with_zeros(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, ("a", None))
    script = tmp_path / "w.yaml"
    script.write_text("workers:\n  a: [{tool: list_files}, {say: DONE}]\n")
    result = CliRunner().invoke(main, ["resume", str(plan), "--model", f"scripted:{script}"])
    assert result.exit_code == 0, result.stderr
    rows = model_rows(plan)
    assert [r[:8] for r in rows] == [
        ("a", "worker", 1, "tool_use", 0, 0, 0, 0),
        ("a", "worker", 1, "end_turn", 0, 0, 0, 0),
    ]
    assert [s["model"] for s in steps(plan, "model-call")] == [f"scripted:{script}"] * 2


def test_a_subprocess_reaches_the_stub_through_the_environment(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    """As a user runs it: a fresh process, the model and the endpoint from the environment."""
    plan = plan_of(tmp_path, ("a", "test -s a.txt"))
    write_a(messages_stub)
    env = {**os.environ, "GROUNDSKEEPER_MODEL": MODEL, "PYTHONPATH": str(Path.cwd())}
    done = subprocess.run(
        [sys.executable, "-m", "groundskeeper", "resume", str(plan), "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["usage"]["calls"] == 2
    assert len(messages_stub.requests) == 2 and keywords(plan) == {"a": "DONE"}
    ledger_verifies(plan)


GOOD_OUTLINE = (
    "#+TITLE: greet\n* TODO Greet\n  :PROPERTIES:\n  :ID: greet\n"
    "  :done-when: grep -qx hi out.txt\n  :END:\n  Write out.txt holding hi.\n"
)


def test_a_goal_run_with_claude_as_author_and_worker(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    """`groundskeeper run "GOAL"` on Claude: the author request has no tools, every request
    caches its system prompt, and the usage totals count the author's call and the workers'."""
    messages_stub.author.reply_text(
        "Here is the plan:\n```org\n" + GOOD_OUTLINE + "```\n",
        usage=usage_json(900, 120, cache_read=0, cache_write=0),
    )
    messages_stub.worker.reply_tool_use(
        "write_file", {"path": "out.txt", "content": "hi\n"}, usage=usage_json(1000, 20)
    )
    messages_stub.worker.reply_text("DONE", usage=usage_json(1100, 3, cache_read=1000))
    work = tmp_path / "work"
    result = CliRunner().invoke(main, ["run", "say hi", "--dir", str(work), "--model", MODEL,
                                       "--json"])  # fmt: skip
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [t["state"] for t in doc["tasks"]] == ["DONE"]
    assert [r.is_author for r in messages_stub.requests] == [True, False, False]
    author = messages_stub.requests[0].body
    assert "tools" not in author
    assert author["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert doc["usage"].pop("latency_ms") >= 0
    assert doc["usage"] == {"calls": 3, "input_tokens": 3000, "output_tokens": 143,
                            "cache_read_tokens": 1000, "cache_write_tokens": 0}  # fmt: skip
    ledger_verifies(work / "plan.org")


def test_a_goal_run_whose_workers_model_stays_down_names_the_command_that_continues_it(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    messages_stub.author.reply_text(GOOD_OUTLINE)
    messages_stub.worker.reply_status(529)
    work = tmp_path / "work"
    result = CliRunner().invoke(
        main, ["run", "say hi", "--dir", str(work), "--model", MODEL],
        env={"GROUNDSKEEPER_MODEL_RETRIES": "0"},
    )  # fmt: skip
    assert result.exit_code == 1
    assert f"continue with: groundskeeper run --resume {work}" in result.stderr
    assert keywords(work / "plan.org") == {"greet": "TODO"}
    messages_stub.worker.reply_tool_use("write_file", {"path": "out.txt", "content": "hi\n"})
    messages_stub.worker.reply_text("DONE")
    resumed = CliRunner().invoke(main, ["run", "--resume", str(work)])
    assert resumed.exit_code == 0, resumed.stderr
    assert keywords(work / "plan.org") == {"greet": "DONE"}
    assert [r.is_author for r in messages_stub.requests] == [True, False, False, False]
    ledger_verifies(work / "plan.org")
