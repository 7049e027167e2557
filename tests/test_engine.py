"""The engine: refusal before instantiation, limits, the Dock host functions, vfs-query."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from groundskeeper.conformance.engine import (
    EngineLimits,
    QueryError,
    Session,
    SessionHost,
    Term,
    parse_query,
    query_tasks,
    run_component,
)
from groundskeeper.conformance.rules import ComponentUnreadable
from tests.components import wasm

PLAN = """\
#+TITLE: E2B pricing research
* TODO Research E2B pricing
** DONE Gather E2B Pricing Information
   :PROPERTIES:
   :ID: gather-pricing
   :END:
** TODO Summarize the tiers
* DONE Write the e2b pricing page
"""


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "plan.org").write_text(PLAN, encoding="utf-8")
    (tmp_path / "notes.txt").write_text("hello notes\n", encoding="utf-8")
    return tmp_path


def host_for(workdir: Path, plan: bool = True) -> SessionHost:
    session = Session("run-1", workdir, workdir / "plan.org" if plan else None)
    return SessionHost(session)


# --- refusals first ---------------------------------------------------------------------------


def test_non_conforming_component_is_refused_before_instantiation(workdir: Path) -> None:
    # its start function would call session-info while being instantiated
    host = host_for(workdir)
    result = run_component(wasm("start_calls_host"), "x", host)
    assert result.ok is False
    assert result.instantiated is False
    assert result.output is None
    assert [d.code for d in result.diagnostics] == ["C003"]
    assert host.calls == []


def test_junk_is_refused(workdir: Path) -> None:
    result = run_component(b"\x00\x01junk", "x", host_for(workdir))
    assert (result.ok, result.instantiated) == (False, False)
    assert [d.code for d in result.diagnostics] == ["C001"]


def test_unreadable_component_raises_usage_error(workdir: Path) -> None:
    with pytest.raises(ComponentUnreadable):
        run_component(workdir / "missing.wasm", "x", host_for(workdir))


def test_deadline_stops_a_spinning_component(workdir: Path) -> None:
    started = time.monotonic()
    result = run_component(wasm("limits"), "spin", host_for(workdir), EngineLimits(deadline=0.2))
    assert time.monotonic() - started < 5
    assert result.ok is False
    [diagnostic] = result.diagnostics
    assert diagnostic.code == "E003"
    assert diagnostic.message == "deadline: `run` did not finish within 0.2 s"


def test_fuel_stops_a_spinning_component(workdir: Path) -> None:
    result = run_component(wasm("limits"), "spin", host_for(workdir), EngineLimits(fuel=100_000))
    [diagnostic] = result.diagnostics
    assert diagnostic.code == "E002"
    assert "100000 units of fuel" in diagnostic.message
    assert result.fuel_consumed == 100_000


def test_memory_limit_caps_a_growing_component(workdir: Path) -> None:
    limits = EngineLimits(memory=4 * 1024 * 1024)
    result = run_component(wasm("limits"), "grow", host_for(workdir), limits)
    [diagnostic] = result.diagnostics
    # memory.grow is refused at the cap; the guest then traps on its own (`unreachable`)
    assert diagnostic.code == "E001"
    assert "unreachable" in diagnostic.message
    assert "4194304 bytes" in diagnostic.message


def test_a_trap_is_a_diagnostic(workdir: Path) -> None:
    result = run_component(wasm("limits"), "trap", host_for(workdir))
    assert result.ok is False
    assert result.instantiated is True
    [diagnostic] = result.diagnostics
    assert diagnostic.code == "E001"
    assert "unreachable" in diagnostic.message


def test_output_over_the_limit_is_refused(workdir: Path) -> None:
    result = run_component(wasm("echo"), "x" * 100, host_for(workdir), EngineLimits(output=64))
    assert result.output is None
    [diagnostic] = result.diagnostics
    assert diagnostic.code == "E004"
    assert diagnostic.message == "output too large: 100 bytes, the limit is 64"


def test_one_runs_deadline_does_not_stop_the_others(workdir: Path) -> None:
    outputs: list[str | None] = []

    def echo(i: int) -> None:
        for _ in range(3):
            outputs.append(run_component(wasm("echo"), f"echo-{i}", host_for(workdir)).output)

    spinner = threading.Thread(
        target=run_component,
        args=(wasm("limits"), "spin", host_for(workdir), EngineLimits(deadline=0.5)),
    )
    spinner.start()
    threads = [threading.Thread(target=echo, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in [*threads, spinner]:
        thread.join()
    assert sorted(o or "" for o in outputs) == sorted(f"echo-{i}" for i in range(3) for _ in "abc")


# --- the real component, end to end -----------------------------------------------------------


def test_dock_all_component_runs_end_to_end(workdir: Path) -> None:
    host = host_for(workdir)
    result = run_component(wasm("dock_all"), "hello", host)
    assert result.diagnostics == []
    assert result.ok is True
    assert result.fuel_consumed is not None and result.fuel_consumed > 0
    session = {
        "world": "groundskeeper:engine@0.1.0",
        "run_id": "run-1",
        "plan": str(workdir / "plan.org"),
        "workdir": str(workdir),
    }
    tasks = {
        "ok": True,
        "query": "state=DONE",
        "count": 2,
        "tasks": [
            {
                "id": "gather-pricing",
                "title": "Gather E2B Pricing Information",
                "state": "DONE",
                "line": 3,
            },
            {
                "id": "Write the e2b pricing page",
                "title": "Write the e2b pricing page",
                "state": "DONE",
                "line": 8,
            },
        ],
    }
    assert result.output == (
        f"input=hello\nsession={json.dumps(session)}\ntasks={json.dumps(tasks)}\n"
        "command=hello notes\n"
    )
    assert host.calls == [
        ("session-info", ""),
        ("vfs-query", "state=DONE"),
        ("run-command", "cat notes.txt"),
    ]


def test_failed_command_reaches_the_component_as_an_error(tmp_path: Path) -> None:
    result = run_component(wasm("dock_all"), "", host_for(tmp_path, plan=False))
    assert result.ok is True
    assert result.output is not None
    lines = result.output.splitlines()
    assert json.loads(lines[2].removeprefix("tasks=")) == {
        "ok": False,
        "query": "state=DONE",
        "error": "no plan in this session (run the engine with --plan PLAN)",
    }
    assert lines[3] == (
        "command=error: run-command: `cat notes.txt` exited with status 1: "
        "cat: notes.txt: No such file or directory"
    )


def test_run_command_sees_the_workdir_read_only(workdir: Path) -> None:
    answer = host_for(workdir).run_command("echo owned > notes.txt")
    assert answer.startswith("error: run-command: `echo owned > notes.txt` exited with status 1")
    assert "read-only" in answer.lower()
    assert (workdir / "notes.txt").read_text() == "hello notes\n"


def test_run_command_reports_a_syntax_error(workdir: Path) -> None:
    answer = host_for(workdir).run_command("f() { echo x; }")
    assert answer.startswith("error: run-command: `f() { echo x; }` exited with status 2")
    assert "(syntax)" in answer


def test_wasi_importing_component_runs(workdir: Path) -> None:
    result = run_component(wasm("wasi_env"), "", host_for(workdir))
    assert (result.ok, result.output) == (True, "wasi")


# --- vfs-query --------------------------------------------------------------------------------


def test_parse_query_terms() -> None:
    assert parse_query("state=DONE") == [Term("state", "=", "DONE")]
    assert parse_query('state!=DONE & title~"e2b pricing"  id=x') == [
        Term("state", "!=", "DONE"),
        Term("title", "~", "e2b pricing"),
        Term("id", "=", "x"),
    ]
    assert parse_query(r'title="say \"hi\""') == [Term("title", "=", 'say "hi"')]
    assert parse_query(" * ") is None


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ("", "empty query"),
        ("   ", "empty query"),
        ("colour=red", "unknown field `colour`"),
        ("state", "expected FIELD=VALUE"),
        ("state=", "`state` has no value"),
        ('title~"open', "unterminated quoted value"),
        ("line=four", "`line` takes a number"),
        ("state=DONE | title~x", "expected FIELD=VALUE"),
    ],
)
def test_bad_queries_are_errors(query: str, error: str) -> None:
    with pytest.raises(QueryError, match=error):
        parse_query(query)


def ids(answer: dict[str, object]) -> list[object]:
    tasks = answer["tasks"]
    assert isinstance(tasks, list)
    return [t["id"] for t in tasks]


def test_query_tasks_answers_over_the_plan(workdir: Path) -> None:
    plan = workdir / "plan.org"
    assert ids(query_tasks(plan, "state=done")) == ["gather-pricing", "Write the e2b pricing page"]
    assert ids(query_tasks(plan, "title~PRICING")) == [
        "Research E2B pricing",
        "gather-pricing",
        "Write the e2b pricing page",
    ]
    assert ids(query_tasks(plan, "title~pricing & state!=DONE")) == ["Research E2B pricing"]
    assert ids(query_tasks(plan, "title~pricing state=TODO")) == ["Research E2B pricing"]
    assert ids(query_tasks(plan, "id=gather-pricing")) == ["gather-pricing"]
    assert ids(query_tasks(plan, "line=7")) == ["Research E2B pricing/Summarize the tiers"]
    assert query_tasks(plan, "*")["count"] == 4
    assert query_tasks(plan, "title~nothing-like-this") == {
        "ok": True,
        "query": "title~nothing-like-this",
        "count": 0,
        "tasks": [],
    }


def test_query_errors_are_answers_not_exceptions(workdir: Path) -> None:
    bad = query_tasks(workdir / "plan.org", "colour=red")
    assert bad["ok"] is False
    assert "unknown field `colour`" in str(bad["error"])
    missing = query_tasks(workdir / "gone.org", "state=DONE")
    assert missing["ok"] is False
    assert "cannot read the plan" in str(missing["error"])
    assert json.loads(host_for(workdir).vfs_query(""))["ok"] is False
