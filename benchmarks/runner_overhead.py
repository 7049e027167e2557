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
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from groundskeeper.acceptance.check import SandboxShell
from groundskeeper.models.scripted import ScriptedModel
from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import load_plan
from groundskeeper.record.control import ControlDir
from groundskeeper.record.keys import ensure_signing_key
from groundskeeper.record.ledger import Ledger, read_steps
from groundskeeper.record.telemetry import Telemetry
from groundskeeper.sandbox import ShellResult
from groundskeeper.supervisor.phases import RunPhases
from groundskeeper.supervisor.pipeline import Pipeline
from groundskeeper.supervisor.runner import (
    MemoryRecorder,
    Runner,
    RunOptions,
    StepRecorder,
    new_run_id,
)

SCRIPT = "workers:\n  '*': [{say: DONE}]\n"
# modules the resume path must never import (NOTES.md: ~1 s and ~2 s to import)
HEAVY = ("langgraph", "langchain_core", "anthropic")


class TimedShell(SandboxShell):
    """The real sandbox, with the wall time of every call added up (a `SandboxShell`: its
    checks' read sets are recorded, as the CLI's are)."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds = 0.0
        self.calls = 0
        self.durations: list[float] = []  # each call's, in the order they ended
        self._lock = threading.Lock()

    def __call__(
        self,
        cmdline: str,
        *,
        workdir: str | Path,
        read_only: bool = False,
        timeout: float = 10,
        errexit: bool = False,
        sentinel: str | None = None,
    ) -> ShellResult:
        started = time.perf_counter()
        result = super().__call__(
            cmdline,
            workdir=workdir,
            read_only=read_only,
            timeout=timeout,
            errexit=errexit,
            sentinel=sentinel,
        )
        spent = time.perf_counter() - started
        with self._lock:
            self.seconds += spent
            self.calls += 1
            self.durations.append(spent)
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


class PhaseClock:
    """Wall time spent in the runner's own check phases (red first, the final sweep), and in
    the attempts' checks (the pipeline's check stage with its sealing: sandbox, sealing,
    telemetry): the benchmark times the methods from outside; nothing in the runner changes."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.own_checks = 0.0
        self._saved: list[tuple[type, str, Any]] = []

    def __enter__(self) -> PhaseClock:
        original_stage = Pipeline._stage
        self._saved.append((Pipeline, "_stage", original_stage))

        def timed_stage(pipeline: Pipeline, stage: Any, context: Any) -> Any:
            started = time.perf_counter()
            try:
                return original_stage(pipeline, stage, context)
            finally:
                if stage.name == "check":  # an attempt's own check
                    self.own_checks += time.perf_counter() - started

        setattr(Pipeline, "_stage", timed_stage)  # noqa: B010  (a method swapped for timing)
        for name in ("red_first", "final_sweep"):
            original = getattr(RunPhases, name)
            self._saved.append((RunPhases, name, original))

            def timed(phases: RunPhases, *args: Any, _original: Any = original) -> Any:
                started = time.perf_counter()
                try:
                    return _original(phases, *args)
                finally:
                    self.seconds += time.perf_counter() - started

            setattr(RunPhases, name, timed)
        return self

    def __exit__(self, *_: object) -> None:
        for owner, name, original in self._saved:
            setattr(owner, name, original)


def one_run(
    tasks: int, check: str, parallel: int, sealed: str, keep: Path | None = None
) -> dict[str, Any]:
    """One full run; `sealed` is "memory" (MemoryRecorder) or "ledger" (the signed ledger).
    With `keep`, the run happens in that directory and its state stays there."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = keep or Path(tmp)
        plan_path = make_plan(directory, tasks, check)
        shell = TimedShell()
        model = ScriptedModel.from_yaml(SCRIPT)
        run_id = new_run_id()
        recorder: StepRecorder = MemoryRecorder()
        control = ControlDir.for_plan(plan_path).ensure()
        if sealed == "ledger":
            recorder = Ledger(control.path, ensure_signing_key().key, run_id)
        started = time.perf_counter()
        plan = load_plan(plan_path)
        with Telemetry.for_plan(plan_path) as telemetry, PhaseClock() as phases:
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
            checks = recorder.of("check")
        else:
            steps = [obj for _, obj in read_steps(control.ledger) if obj is not None]
            lines = len(steps)
            checks = [o["body"] for o in steps if o.get("step") == "check"]
        # what red first and the final sweep add to the run's wall time, against what each
        # task's own check costs the run (sandbox, sealing, telemetry: serial here)
        own = phases.own_checks * 1000 if len(checks) == 3 * tasks else 0.0
        extra = phases.seconds * 1000
        # with several pool threads the sandbox calls overlap: subtract only when serial (the
        # run's own checks run wider: their phases' wall time is subtracted whole)
        serial_sandbox = sum(shell.durations[tasks : 2 * tasks])
        overhead = (total - serial_sandbox - phases.seconds) / tasks if parallel == 1 else None
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
            "own_check_ms_per_task": round(own / tasks, 3),
            "red_first_and_sweep_ms_per_task": round(extra / tasks, 3),
            "red_first_and_sweep_ratio_to_own_check": round(extra / own, 3) if own else None,
        }


def reopen_last_task(plan_path: Path) -> None:
    """All but one DONE: the last task's headline goes back to TODO (as a person might)."""
    text = plan_path.read_text()
    head, _, tail = text.rpartition("* DONE ")
    plan_path.write_text(head + "* TODO " + tail)


# Runs `groundskeeper resume` and says which heavy modules it imported (atexit: after sys.exit).
ENTRY = (
    "import atexit, sys\n"
    f"atexit.register(lambda: sys.stderr.write('\\nHEAVY=' + ','.join(m for m in {HEAVY!r}"
    " if m in sys.modules) + '\\n'))\n"
    "from groundskeeper.cli import main\n"
    "main()\n"
)


# everything a resume imports (the sandbox's wasmtime side included)
IMPORTS = "import " + ", ".join(
    f"groundskeeper.{name}"
    for name in ("cli", "cli.run_cmd", "supervisor.runner", "plan.lint", "record.ledger",
                 "record.telemetry", "models", "sandbox.shell")
)  # fmt: skip


def resume_time(ran: Path) -> dict[str, Any]:
    """Resume the plan a full sealed run left in `ran` (ledger, telemetry and all), with
    its last task reopened: as a subprocess, then in this process in the same directory, its
    plan and control directory put back first as the full run left them (a copy of the
    workdir would change every stat a check was shown: its read set would not hold)."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = ran
        saved = Path(tmp) / "saved"
        control = ControlDir.for_plan(ran / "plan.org").path
        shutil.copytree(control, saved / "control")
        shutil.copy2(ran / "plan.org", saved / "plan.org")
        # the rollback witness saw the ledger as the full run left it: put back with it
        witness = Path(os.environ["GROUNDSKEEPER_HOME"]) / "witness"
        if witness.is_dir():
            shutil.copytree(witness, saved / "witness")
        reopen_last_task(ran / "plan.org")
        script = Path(tmp) / "w.yaml"
        script.write_text(SCRIPT)
        ledger_lines = len(read_steps(ControlDir.for_plan(ran / "plan.org").ledger))
        command = [sys.executable, "-c", ENTRY, "resume", str(ran / "plan.org"),
                   "--model", f"scripted:{script}", "--json"]  # fmt: skip
        # As installed, Python finds its bytecode cached; this environment may forbid writing
        # it (PYTHONDONTWRITEBYTECODE), which would add ~0.1 s of compiling to every start.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        subprocess.run([sys.executable, "-c", IMPORTS], check=True, env=env)
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
        wall = time.perf_counter() - started
        heavy = done.stderr.rsplit("HEAVY=", 1)[-1].strip()
        report = json.loads(done.stdout)

        # the same resume in this process (imports already paid), split into its phases
        plan_path = directory / "plan.org"
        shutil.rmtree(control)
        shutil.copytree(saved / "control", control)
        shutil.copy2(saved / "plan.org", plan_path)
        if (saved / "witness").is_dir():
            shutil.rmtree(witness, ignore_errors=True)
            shutil.copytree(saved / "witness", witness)
        reopen_last_task(plan_path)
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
        ledger = Ledger(ControlDir.for_plan(plan_path).path, ensure_signing_key().key, run_id)
        with Telemetry.for_plan(plan_path) as telemetry:
            phase("open_model_ledger_telemetry_s")
            in_process_report = Runner(
                plan, model=model, recorder=ledger, telemetry=telemetry, run_id=run_id
            ).run(lint=lambda _: lint)
        phase("run_s")
        assert in_process_report.ok, in_process_report.diagnostics
        in_process = sum(phases.values())

        baseline_started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True, env=env)
        python_start = time.perf_counter() - baseline_started
        imports_started = time.perf_counter()
        subprocess.run([sys.executable, "-c", IMPORTS], check=True, env=env)
        imports = time.perf_counter() - imports_started - python_start
        return {
            "exit_code": done.returncode,
            "states": sorted({t["state"] for t in report["tasks"]}),
            "tasks_run": sum(t["attempts"] > 0 for t in report["tasks"]),
            "ledger_lines_before": ledger_lines,
            "resume_subprocess_s": round(wall, 3),
            "resume_in_process_s": round(in_process, 3),
            "in_process_phases": phases,
            "bytecode_cached": True,
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
    with tempfile.TemporaryDirectory() as kept:
        ledger = one_run(args.tasks, args.check, 1, "ledger", keep=Path(kept))
        resumed = resume_time(Path(kept))
    parallel = one_run(args.tasks, args.check, 4, "ledger")
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
        "targets": {
            "overhead_ms_per_task": 5.0,
            "resume_s": 1.0,
            "red_first_and_sweep_ratio_to_own_check": 2.0,
        },
        "meets_targets": {
            "overhead_runner_alone": own <= 5.0,
            "overhead_with_signed_ledger": sealed <= 5.0,
            "resume_subprocess": resumed["resume_subprocess_s"] <= 1.0,
            "resume_in_process": resumed["resume_in_process_s"] <= 1.0,
            # the CLI's runs seal into the signed ledger: that is the configuration that counts
            "red_first_and_sweep": (ledger["red_first_and_sweep_ratio_to_own_check"] or 0) <= 2.0,
        },
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
