"""Supervisor overhead per task, and resume time, on a 1,000-leaf plan.

Instant scripted workers (`say: DONE`) and `test -e marker` checks. The sandbox time is
measured around every shell call and subtracted from the total, so what remains is the
supervisor's own cost per task. The same plan runs twice serially in one process: with an
in-memory step recorder (the runner alone: scheduling, plan writes, telemetry) and with the
real signed ledger (fdatasync + checkpoint rewrite per line), so the ledger's share shows.
Resume: the same plan with all but one task DONE, as a `groundskeeper resume` subprocess
and in process, with where the time goes. Prints one JSON document.

    .venv/bin/python benchmarks/runner_overhead.py [--tasks 1000] [--check 'test -e marker']
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from groundskeeper.keys import ensure_signing_key
from groundskeeper.ledger import Ledger, read_steps
from groundskeeper.lint import validate
from groundskeeper.models import ScriptedModel
from groundskeeper.plan import load_plan
from groundskeeper.runner import MemoryRecorder, Runner, RunOptions, StepRecorder, new_run_id
from groundskeeper.sandbox import ShellResult, run
from groundskeeper.telemetry import Telemetry

SCRIPT = "workers:\n  '*': [{say: DONE}]\n"
# modules the resume path must never import (NOTES.md: ~1 s and ~2 s to import)
HEAVY = ("langgraph", "langchain_core", "anthropic")


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


def one_run(tasks: int, check: str, parallel: int, sealed: str) -> dict[str, Any]:
    """One full run; `sealed` is "memory" (MemoryRecorder) or "ledger" (the signed ledger)."""
    with tempfile.TemporaryDirectory() as tmp:
        plan_path = make_plan(Path(tmp), tasks, check)
        shell = TimedShell()
        model = ScriptedModel.from_yaml(SCRIPT)
        run_id = new_run_id()
        recorder: StepRecorder = MemoryRecorder()
        if sealed == "ledger":
            recorder = Ledger(Path(tmp), ensure_signing_key().key, run_id)
        started = time.perf_counter()
        plan = load_plan(plan_path)
        with Telemetry.for_plan(plan_path) as telemetry:
            report = Runner(
                plan,
                model=model,
                options=RunOptions(max_parallel=parallel),
                recorder=recorder,
                telemetry=telemetry,
                shell=shell,
                run_id=run_id,
            ).run(lint=validate)
        total = time.perf_counter() - started
        if isinstance(recorder, MemoryRecorder):
            lines = len(recorder.steps)
        else:
            lines = len(read_steps(Path(tmp) / "_steps.jsonl"))
        # with several pool threads the sandbox calls overlap: subtract only when serial
        overhead = (total - shell.seconds) / tasks if parallel == 1 else None
        return {
            "steps_sealed_in": sealed,
            "max_parallel": parallel,
            "tasks_done": sum(t.state == "DONE" for t in report.tasks),
            "total_s": round(total, 3),
            "sandbox_calls": shell.calls,
            "step_lines_per_task": round(lines / tasks, 2),
            "sandbox_ms_per_task": round(shell.seconds * 1000 / tasks, 3),
            "total_ms_per_task": round(total * 1000 / tasks, 3),
            "overhead_ms_per_task": None if overhead is None else round(overhead * 1000, 3),
        }


# Runs `groundskeeper resume` and says which heavy modules it imported (atexit: after sys.exit).
ENTRY = (
    "import atexit, sys\n"
    f"atexit.register(lambda: sys.stderr.write('\\nHEAVY=' + ','.join(m for m in {HEAVY!r}"
    " if m in sys.modules) + '\\n'))\n"
    "from groundskeeper.cli import main\n"
    "main()\n"
)


def resume_time(tasks: int, check: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        plan_path = make_plan(directory, tasks, check, done=tasks - 1)
        script = directory / "w.yaml"
        script.write_text(SCRIPT)
        command = [sys.executable, "-c", ENTRY, "resume", str(plan_path),
                   "--model", f"scripted:{script}", "--json"]  # fmt: skip
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        heavy = done.stderr.rsplit("HEAVY=", 1)[-1].strip()
        states = sorted({t["state"] for t in json.loads(done.stdout)["tasks"]})

        # the same resume in this process (imports already paid), split into its phases
        for name in ("plan.org", "_telemetry.db", "_steps.jsonl", "_steps.checkpoint"):
            (directory / name).unlink(missing_ok=True)
        make_plan(directory, tasks, check, done=tasks - 1)
        phases: dict[str, float] = {}
        clock = time.perf_counter()

        def phase(name: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            phases[name] = round(now - clock, 3)
            clock = now

        plan = load_plan(plan_path)
        phase("load_plan_s")
        lint = validate(plan)
        phase("lint_s")
        model = ScriptedModel.from_file(script)
        run_id = new_run_id()
        ledger = Ledger(directory, ensure_signing_key().key, run_id)
        with Telemetry.for_plan(plan_path) as telemetry:
            phase("open_model_ledger_telemetry_s")
            Runner(plan, model=model, recorder=ledger, telemetry=telemetry, run_id=run_id).run(
                lint=lambda _: lint
            )
        phase("run_s")
        in_process = sum(phases.values())

        baseline_started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        python_start = time.perf_counter() - baseline_started
        imports_started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", "import groundskeeper.cli.run_cmd, groundskeeper.runner,"
             " groundskeeper.lint, groundskeeper.ledger, groundskeeper.telemetry,"
             " groundskeeper.models"],
            check=True,
        )  # fmt: skip
        imports = time.perf_counter() - imports_started - python_start
        return {
            "exit_code": done.returncode,
            "states": states,
            "resume_subprocess_s": round(wall, 3),
            "resume_in_process_s": round(in_process, 3),
            "in_process_phases": phases,
            "python_start_s": round(python_start, 3),
            "resume_imports_s": round(imports, 3),
            "heavy_modules_imported": heavy.split(",") if heavy else [],
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--check", default="test -e marker")
    args = parser.parse_args()
    # one key for every run, made before any clock starts
    os.environ.setdefault("GROUNDSKEEPER_HOME", tempfile.mkdtemp(prefix="gk-bench-home-"))
    ensure_signing_key()
    memory = one_run(args.tasks, args.check, 1, "memory")
    ledger = one_run(args.tasks, args.check, 1, "ledger")
    parallel = one_run(args.tasks, args.check, 4, "ledger")
    resumed = resume_time(args.tasks, args.check)
    own, sealed = memory["overhead_ms_per_task"], ledger["overhead_ms_per_task"]
    figures = {
        "tasks": args.tasks,
        "check": args.check,
        "serial_memory_recorder": memory,
        "serial_signed_ledger": ledger,
        "parallel_4_signed_ledger": parallel,
        "ledger_share_ms_per_task": round(sealed - own, 3),
        "runner_overhead_ratio_to_sandbox": round(own / memory["sandbox_ms_per_task"], 3),
        "resume_all_but_one_done": resumed,
        "targets": {"overhead_ms_per_task": 5.0, "resume_s": 1.0},
        "meets_targets": {
            "overhead_runner_alone": own <= 5.0,
            "overhead_with_signed_ledger": sealed <= 5.0,
            "resume_subprocess": resumed["resume_subprocess_s"] <= 1.0,
            "resume_in_process": resumed["resume_in_process_s"] <= 1.0,
        },
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
