"""Many plans at once: each plan runs as a separate `groundskeeper` process (`resume PLAN`,
`run --resume DIR`) with its own lock, ledger and graph checkpoint, several at a time on this
machine or as Ray tasks on a cluster whose nodes see the plans' directories. Nothing is
retried by an engine (Ray tasks have no retries): groundskeeper's own resume decides what runs
again. It owns starting the processes and reading their `--json` reports, not their runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundskeeper.ray_extra import connect, require_ray

EXIT_USAGE = 2
EXIT_WAITING = 3


@dataclass(frozen=True, slots=True)
class PlanProcess:
    """One plan's command: `python -m groundskeeper ARGS` (ARGS end with `--json`)."""

    plan: str  # as the user named it
    args: tuple[str, ...]
    cwd: str


@dataclass(frozen=True, slots=True)
class PlanOutcome:
    plan: str
    exit_code: int
    report: dict[str, Any] | None  # the process's --json document, None if it printed none
    error: str | None  # the last line of its stderr when it did not report
    seconds: float
    node: str

    def to_json(self) -> dict[str, Any]:
        return {
            "plan": self.plan,
            "exit_code": self.exit_code,
            "ok": self.exit_code == 0,
            "report": self.report,
            "error": self.error,
            "seconds": round(self.seconds, 3),
            "node": self.node,
        }


def overall_exit(outcomes: Sequence[PlanOutcome]) -> int:
    """Usage errors first, then failures, then plans waiting at a gate, else 0."""
    codes = {o.exit_code for o in outcomes}
    if EXIT_USAGE in codes:
        return EXIT_USAGE
    if codes - {0, EXIT_WAITING}:
        return 1
    return EXIT_WAITING if EXIT_WAITING in codes else 0


def run_plan_process(process: PlanProcess) -> PlanOutcome:
    """Run one plan's process to its end (no time limit: a plan's own limits bound it)."""
    started = time.monotonic()
    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(
        [package_root, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
    )
    try:
        done = subprocess.run(
            [sys.executable, "-m", "groundskeeper", *process.args],
            cwd=process.cwd,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as exc:
        return PlanOutcome(process.plan, 1, None, f"could not start: {exc}", 0.0, _node())
    report: dict[str, Any] | None = None
    try:
        parsed = json.loads(done.stdout)
        report = parsed if isinstance(parsed, dict) else None
    except ValueError:
        report = None
    lines = done.stderr.strip().splitlines()
    error = None if report is not None else (lines[-1] if lines else "(no output)")
    return PlanOutcome(
        process.plan, done.returncode, report, error, time.monotonic() - started, _node()
    )


def _node() -> str:
    return os.uname().nodename


def run_plans(
    processes: Sequence[PlanProcess],
    jobs: int = 2,
    on_end: Callable[[PlanOutcome], None] | None = None,
) -> list[PlanOutcome]:
    """Every plan's process, `jobs` at a time on this machine; outcomes in the plans' order."""
    outcomes: dict[int, PlanOutcome] = {}
    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = {pool.submit(run_plan_process, p): i for i, p in enumerate(processes)}
        for future in as_completed(futures):
            outcome = future.result()
            outcomes[futures[future]] = outcome
            if on_end is not None:
                on_end(outcome)
    return [outcomes[i] for i in range(len(processes))]


def run_plans_on_ray(
    processes: Sequence[PlanProcess],
    address: str | None = None,
    on_end: Callable[[PlanOutcome], None] | None = None,
) -> list[PlanOutcome]:
    """Every plan's process as a Ray task (one CPU, no retries) on a local cluster or the one
    at `address`; every node must see the plans at the same paths. UsageError without the
    extra or a cluster."""
    ray = require_ray()
    owns = False
    if not ray.is_initialized():
        try:
            connect(ray, address=address, include_dashboard=False, log_to_driver=False)
        except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError…
            from groundskeeper.errors import UsageError

            raise UsageError(
                f"--backend ray: cannot start or reach {address or 'a local cluster'}: {exc}"
            ) from None
        owns = True
    try:
        task = ray.remote(run_plan_process).options(num_cpus=1, max_retries=0)
        refs = {task.remote(p): i for i, p in enumerate(processes)}
        outcomes: dict[int, PlanOutcome] = {}
        pending = list(refs)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for ref in ready:
                index = refs[ref]
                try:
                    outcome = ray.get(ref)
                except ray.exceptions.RayError as exc:
                    why = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                    outcome = PlanOutcome(
                        processes[index].plan, 1, None,
                        f"the Ray task failed ({type(exc).__name__}: {why}); the plan is"
                        " resumable", 0.0, "",
                    )  # fmt: skip
                outcomes[index] = outcome
                if on_end is not None:
                    on_end(outcome)
        return [outcomes[i] for i in range(len(processes))]
    finally:
        if owns:
            ray.shutdown()
