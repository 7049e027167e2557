"""Supervisor overhead per task, and resume time, on a 1,000-leaf plan.

Instant scripted workers (`say: DONE`) and one-line checks; the sandbox time is measured
around every shell call in the same run and subtracted from the total, so what remains is
the runner's own cost (scheduling, plan writes, telemetry). Prints one JSON document.

    .venv/bin/python benchmarks/runner_overhead.py [--tasks 1000] [--check 'test -e marker']
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from groundskeeper.lint import validate
from groundskeeper.models import ScriptedModel
from groundskeeper.plan import load_plan
from groundskeeper.runner import Runner, RunOptions
from groundskeeper.sandbox import ShellResult, run
from groundskeeper.telemetry import Telemetry


class TimedShell:
    """The real sandbox, with the wall time of every call added up."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(
        self, cmdline: str, *, workdir: str | Path, read_only: bool = False, timeout: float = 10
    ) -> ShellResult:
        started = time.perf_counter()
        result = run(cmdline, workdir=workdir, read_only=read_only, timeout=timeout)
        spent = time.perf_counter() - started
        with self._lock:
            self.seconds += spent
            self.calls += 1
        return result


def make_plan(directory: Path, tasks: int, check: str, done: int = 0) -> Path:
    lines = ["#+TITLE: overhead benchmark", "#+TODO: TODO NEXT | DONE FAILED PARTIAL"]
    for n in range(tasks):
        keyword = "DONE" if n < done else "TODO"
        lines += [f"* {keyword} Task {n}", "  :PROPERTIES:", f"  :ID: t{n}",
                  f"  :done-when: {check}", "  :END:"]  # fmt: skip
    plan = directory / "plan.org"
    plan.write_text("\n".join(lines) + "\n")
    (directory / "marker").write_text("x\n")
    return plan


def one_run(tasks: int, check: str, parallel: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        plan_path = make_plan(Path(tmp), tasks, check)
        shell = TimedShell()
        model = ScriptedModel.from_yaml("workers:\n  '*': [{say: DONE}]\n")
        started = time.perf_counter()
        plan = load_plan(plan_path)
        with Telemetry.for_plan(plan_path) as telemetry:
            report = Runner(
                plan,
                model=model,
                options=RunOptions(max_parallel=parallel),
                telemetry=telemetry,
                shell=shell,
            ).run(lint=validate)
        total = time.perf_counter() - started
        done = sum(t.state == "DONE" for t in report.tasks)
        # with several pool threads the sandbox calls overlap: subtract only when serial
        overhead = (total - shell.seconds) / tasks if parallel == 1 else None
        return {
            "max_parallel": parallel,
            "tasks_done": done,
            "total_s": round(total, 3),
            "sandbox_calls": shell.calls,
            "sandbox_ms_per_task": round(shell.seconds * 1000 / tasks, 3),
            "total_ms_per_task": round(total * 1000 / tasks, 3),
            "overhead_ms_per_task": None if overhead is None else round(overhead * 1000, 3),
        }


def resume_time(tasks: int, check: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        plan_path = make_plan(Path(tmp), tasks, check, done=tasks - 1)
        script = Path(tmp) / "w.yaml"
        script.write_text("workers:\n  '*': [{say: DONE}]\n")
        entry = "from groundskeeper.cli import main; main()"
        command = [sys.executable, "-c", entry, "resume", str(plan_path),
                   "--model", f"scripted:{script}", "--json", "--no-ledger"]  # fmt: skip
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        # the same resume in this process: no interpreter start-up, imports already paid
        make_plan(Path(tmp), tasks, check, done=tasks - 1)
        (Path(tmp) / "_telemetry.db").unlink()
        in_process_started = time.perf_counter()
        plan = load_plan(plan_path)
        model = ScriptedModel.from_file(script)
        with Telemetry.for_plan(plan_path) as telemetry:
            Runner(plan, model=model, telemetry=telemetry).run(lint=validate)
        in_process = time.perf_counter() - in_process_started
        baseline_started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import groundskeeper.cli"], check=True)
        baseline = time.perf_counter() - baseline_started
        states = {t["state"] for t in json.loads(done.stdout)["tasks"]}
        return {
            "exit_code": done.returncode,
            "states": sorted(states),
            "resume_s": round(wall, 3),
            "resume_in_process_s": round(in_process, 3),
            "python_start_and_import_s": round(baseline, 3),
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--check", default="test -e marker")
    args = parser.parse_args()
    serial = one_run(args.tasks, args.check, 1)
    parallel = one_run(args.tasks, args.check, 4)
    resumed = resume_time(args.tasks, args.check)
    print(
        json.dumps(
            {
                "tasks": args.tasks,
                "check": args.check,
                "serial": serial,
                "parallel": parallel,
                "resume_all_but_one_done": resumed,
                "targets": {"overhead_ms_per_task": 5.0, "resume_s": 1.0},
                "overhead_ratio_to_sandbox": round(
                    serial["overhead_ms_per_task"] / serial["sandbox_ms_per_task"], 3
                ),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
