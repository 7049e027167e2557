"""The final sweep of a resume with and without read sets, in one process, alternately.

A 1,000-leaf plan (`test -e marker` checks, or `--check`) runs once with the signed ledger;
then its last task is reopened and the plan resumed (its ledger put back each time; the
rollback witness says so on stderr), alternately as it is
(carried DONEs judged by their unchanged read sets) and with read sets refused (every
carried DONE's check run in the sandbox, as before them). Prints one JSON document with each
side's runs (the whole in-process resume, and the final sweep alone), their medians and the
ratio, and the load average before and after.

    .venv/bin/python benchmarks/resume_read_sets.py [--tasks 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import runner_overhead as bench

from groundskeeper.models.scripted import ScriptedModel
from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import load_plan
from groundskeeper.record.control import ControlDir
from groundskeeper.record.keys import ensure_signing_key
from groundskeeper.record.ledger import Ledger
from groundskeeper.record.telemetry import Telemetry
from groundskeeper.supervisor import phases as run_phases
from groundskeeper.supervisor.run_checks import RunChecks
from groundskeeper.supervisor.runner import Runner, new_run_id


def resume_once(ran: Path, saved: Path, reads: bool) -> dict[str, float]:
    """Resume the plan in `ran` itself, its plan and control directory first put back as the
    full run left them (from `saved`): the workdir's files keep their inodes and times, as in
    a real resume (a copy of the workdir would change every stat a check was shown)."""
    with tempfile.TemporaryDirectory() as tmp:
        plan_path = ran / "plan.org"
        control = ran / ".groundskeeper"
        shutil.rmtree(control)
        shutil.copytree(saved / ".groundskeeper", control)
        shutil.copy2(saved / "plan.org", plan_path)
        bench.reopen_last_task(plan_path)
        script = Path(tmp) / "w.yaml"
        script.write_text(bench.SCRIPT)
        original = RunChecks.reused
        sweep = run_phases.RunPhases.final_sweep
        swept: list[float] = []

        def timed_sweep(self: Any, nodes: Any) -> None:
            started = time.perf_counter()
            try:
                sweep(self, nodes)
            finally:
                swept.append(time.perf_counter() - started)

        run_phases.RunPhases.final_sweep = timed_sweep  # type: ignore[method-assign]
        if not reads:
            RunChecks.reused = lambda *_a, **_k: None  # type: ignore[method-assign]
        try:
            started = time.perf_counter()
            plan = load_plan(plan_path)
            lint = validate(plan)
            run_id = new_run_id()
            ledger = Ledger(ControlDir.for_plan(plan_path).path, ensure_signing_key().key, run_id)
            with Telemetry.for_plan(plan_path) as telemetry:
                report = Runner(
                    plan,
                    model=ScriptedModel.from_file(script),
                    recorder=ledger,
                    telemetry=telemetry,
                    run_id=run_id,
                ).run(lint=lambda _: lint)
            total = time.perf_counter() - started
        finally:
            RunChecks.reused = original  # type: ignore[method-assign]
            run_phases.RunPhases.final_sweep = sweep  # type: ignore[method-assign]
        assert report.ok, report.diagnostics
        return {"resume_s": round(total, 3), "sweep_s": round(sum(swept), 3)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--check", default="test -e marker")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as kept, tempfile.TemporaryDirectory() as saved:
        bench.one_run(args.tasks, args.check, 1, "ledger", keep=Path(kept))
        shutil.copytree(Path(kept) / ".groundskeeper", Path(saved) / ".groundskeeper")
        shutil.copy2(Path(kept) / "plan.org", Path(saved) / "plan.org")
        runs: dict[str, list[dict[str, float]]] = {"read_sets": [], "every_check_run": []}
        for _ in range(args.repeat):
            runs["read_sets"].append(resume_once(Path(kept), Path(saved), True))
            runs["every_check_run"].append(resume_once(Path(kept), Path(saved), False))
    medians = {
        side: {key: statistics.median(r[key] for r in rows) for key in ("resume_s", "sweep_s")}
        for side, rows in runs.items()
    }
    after, before = medians["read_sets"], medians["every_check_run"]
    print(json.dumps({
        "tasks": args.tasks,
        "check": args.check,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "runs": runs,
        "medians": medians,
        "ratio_resume": round(after["resume_s"] / before["resume_s"], 3),
        "ratio_sweep": round(after["sweep_s"] / before["sweep_s"], 3),
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
