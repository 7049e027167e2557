"""The supervisor graph's own cost, and how well a goal-driven run uses parallel workers.

Both parts talk to Claude's real SDK against the local Messages API stub
(tests/messages_stub.py) on 127.0.0.1.

1. Overhead, the stub at zero latency: the same plan (tasks without checks, one worker call
   each) runs through the graph (`supervisor.graph`: author → validate → seal → execute →
   report, checkpointed in SQLite, steps sealed in the signed ledger) and through the runner
   alone (`groundskeeper resume`'s path), at 1 and at N tasks. The graph's overhead is the
   difference minus the author's own call (measured by itself); per run at 1 task, and per
   task as the slope between 1 and N.
2. Parallel efficiency: 64 tasks, every worker call answered after 1 s, `--max-parallel 16`.
   The ideal is 64 / 16 × 1 s = 4 s; efficiency = ideal ÷ the execute step's wall time.
   Target ≥ 0.9.

    .venv/bin/python benchmarks/graph_overhead.py [--tasks 50] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from groundskeeper.models import load_model
from groundskeeper.models.model import Model
from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import load_plan
from groundskeeper.record.control import ControlDir, RunLock
from groundskeeper.record.keys import ensure_signing_key
from groundskeeper.record.ledger import Ledger
from groundskeeper.supervisor.graph import (
    Mission,
    MissionEvent,
    build_graph,
    checkpointer,
    config_for,
)
from groundskeeper.supervisor.runner import Runner, RunOptions, new_run_id
from tests.messages_stub import MessagesStub, RecordedRequest, Reply

MODEL = "anthropic:claude-stub-1"


def outline(tasks: int) -> str:
    lines = ["#+TITLE: bench", "#+TODO: TODO NEXT | DONE FAILED PARTIAL"]
    for i in range(tasks):
        lines += [f"* TODO Task {i}", "  :PROPERTIES:", f"  :ID: t{i}", "  :END:"]
    return "\n".join(lines) + "\n"


def answering(stub: MessagesStub, tasks: int, delay: float) -> None:
    """Author requests get the outline, worker requests `DONE` after `delay` seconds."""
    text = outline(tasks)

    def handler(request: RecordedRequest) -> Reply:
        reply = text if request.is_author else "DONE"
        body = stub.message([{"type": "text", "text": reply}], "end_turn")
        return Reply(200, body, {}, 0.0 if request.is_author else delay)

    stub.handler = handler


def through_graph(base: Path, model: Model, max_parallel: int) -> dict[str, float]:
    work = base / "graph"
    work.mkdir()
    plan = work / "plan.org"
    control = ControlDir.for_plan(plan).ensure()
    key = ensure_signing_key().key
    marks: dict[str, float] = {}

    def mark(event: MissionEvent) -> None:
        marks.setdefault(event.kind, time.perf_counter())

    started = time.perf_counter()
    with RunLock(control) as lock, checkpointer(control) as saver:
        mission = Mission(
            plan_path=plan,
            control=control,
            author_model=model,
            worker_model=model,
            options=RunOptions(max_parallel=max_parallel),
            approve=False,
            open_recorder=lambda run_id: Ledger(control.path, key, run_id),
            run_lock=lock,
            on_event=mark,
        )
        graph = build_graph(mission, saver)
        state = graph.invoke(
            {"goal": "bench", "attempts": []}, config_for(new_run_id()), durability="sync"
        )
    ended = time.perf_counter()
    assert state["report"]["ok"], state["report"]
    return {"total": ended - started, "execute": ended - marks["execute"]}


def through_runner(base: Path, model: Model, tasks: int, max_parallel: int) -> float:
    work = base / "runner"
    work.mkdir()
    plan = work / "plan.org"
    plan.write_text(outline(tasks))
    control = ControlDir.for_plan(plan).ensure()
    key = ensure_signing_key().key
    run_id = new_run_id()
    started = time.perf_counter()
    report = Runner(
        load_plan(plan),
        model=model,
        options=RunOptions(max_parallel=max_parallel),
        recorder=Ledger(control.path, key, run_id),
        run_id=run_id,
    ).run(lint=validate)
    assert report.ok
    return time.perf_counter() - started


def author_call(model: Model) -> float:
    from groundskeeper.supervisor.author import ask_author

    started = time.perf_counter()
    ask_author(model, "bench")
    return time.perf_counter() - started


def overhead(stub: MessagesStub, model: Model, tasks: int, repeat: int) -> dict[str, Any]:
    answering(stub, 1, 0.0)
    with tempfile.TemporaryDirectory() as tmp:  # imports and first-call costs, not measured
        through_graph(Path(tmp), model, 4)
        through_runner(Path(tmp), model, 1, 4)
    rows: dict[int, dict[str, float]] = {}
    for n in (1, tasks):
        answering(stub, n, 0.0)
        graph_s, runner_s, author_s = [], [], []
        for _ in range(repeat):
            with tempfile.TemporaryDirectory() as tmp:
                graph_s.append(through_graph(Path(tmp), model, 4)["total"])
                runner_s.append(through_runner(Path(tmp), model, n, 4))
                author_s.append(author_call(model))
        rows[n] = {
            "graph_s": statistics.median(graph_s),
            "runner_s": statistics.median(runner_s),
            "author_call_s": statistics.median(author_s),
        }
        rows[n]["overhead_s"] = rows[n]["graph_s"] - rows[n]["runner_s"] - rows[n]["author_call_s"]
    per_task = (rows[tasks]["overhead_s"] - rows[1]["overhead_s"]) / (tasks - 1)
    return {
        "tasks": tasks,
        "at_1_task": {k: round(v, 4) for k, v in rows[1].items()},
        f"at_{tasks}_tasks": {k: round(v, 4) for k, v in rows[tasks].items()},
        "overhead_per_run_ms": round(rows[1]["overhead_s"] * 1000, 1),
        "overhead_per_task_ms": round(per_task * 1000, 2),
    }


def parallel(stub: MessagesStub, model: Model) -> dict[str, Any]:
    tasks, width, latency = 64, 16, 1.0
    answering(stub, tasks, latency)
    with tempfile.TemporaryDirectory() as tmp:
        timing = through_graph(Path(tmp), model, width)
    ideal = tasks / width * latency
    return {
        "tasks": tasks,
        "max_parallel": width,
        "model_latency_s": latency,
        "ideal_s": ideal,
        "execute_s": round(timing["execute"], 3),
        "efficiency": round(ideal / timing["execute"], 3),
        "target": 0.9,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home, MessagesStub() as stub:
        os.environ["GROUNDSKEEPER_HOME"] = home
        os.environ["ANTHROPIC_BASE_URL"] = stub.base_url
        os.environ["ANTHROPIC_API_KEY"] = "bench-key"
        model = load_model(MODEL)
        result = {
            "overhead": overhead(stub, model, args.tasks, args.repeat),
            "parallel": parallel(stub, model),
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
