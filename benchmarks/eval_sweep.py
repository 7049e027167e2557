"""An eval sweep on this machine, both backends in one run: the shipped suite × 2 scripted
models (each case's own stand-in, and a worker that only claims DONE) × 3 repeats, first on
the thread pool (`--jobs` = the machine's cores), then as Ray tasks on a local cluster of the
same width (its start and stop included). Each sweep seals its verdicts in a suite ledger of
its own, which is verified. Target: Ray's wall time ≤ 1.3 × the thread pool's.

The two sweeps must give every case key the same verdict; the per-model figures are printed
with the timings, as one JSON document.

    .venv/bin/python benchmarks/eval_sweep.py [--repeat 3] [--case GLOB] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from groundskeeper.evals import SuiteLedger, ThreadBackend, load_suite, run_sweep, shipped_suite
from groundskeeper.evals.figures import EvalReport
from groundskeeper.evals.ray_backend import RayBackend
from groundskeeper.record.keys import trusted_keys
from groundskeeper.record.ledger import verify_ledger

TARGET = 1.3
CLAIMER = 'workers:\n  "*":\n    - say: DONE\n'


def sweep(backend: Any, cases: list[Any], models: tuple[str | None, ...], repeat: int,
          ledger_dir: Path) -> tuple[EvalReport, float, bool]:  # fmt: skip
    ledger = SuiteLedger.create(ledger_dir)
    started = time.monotonic()
    report = run_sweep(cases, models, repeat, backend=backend, ledger=ledger)
    seconds = time.monotonic() - started
    verified = verify_ledger(ledger_dir / "_steps.jsonl", trusted_keys()).ok
    return report, seconds, verified


def verdicts(report: EvalReport) -> dict[tuple[str, str, int], tuple[Any, ...]]:
    return {
        (r.case.name, r.model, r.repeat): (r.actual, r.passed, r.caught_by) for r in report.results
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--case", default=None, help="only the cases matching this glob")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    with tempfile.TemporaryDirectory(prefix="gk-bench-sweep-") as tmp:
        root = Path(tmp)
        os.environ["GROUNDSKEEPER_HOME"] = str(root / "home")
        claimer = root / "claimer.yaml"
        claimer.write_text(CLAIMER, encoding="utf-8")
        cases = load_suite([shipped_suite()], args.case)
        models: tuple[str | None, ...] = (None, f"scripted:{claimer}")
        threads, threads_s, threads_ok = sweep(
            ThreadBackend(args.jobs), cases, models, args.repeat, root / "threads"
        )
        import ray

        ray_started = time.monotonic()
        ray.init(num_cpus=args.jobs, include_dashboard=False, log_to_driver=False)
        init_s = time.monotonic() - ray_started
        try:
            on_ray, sweep_s, ray_ok = sweep(RayBackend(), cases, models, args.repeat, root / "ray")
        finally:
            stop = time.monotonic()
            ray.shutdown()
            stop_s = time.monotonic() - stop
        ray_s = init_s + sweep_s + stop_s
        same = verdicts(threads) == verdicts(on_ray)
        document = {
            "cases": len(cases),
            "models": 2,
            "repeat": args.repeat,
            "runs": len(threads.results),
            "jobs": args.jobs,
            "threads_seconds": round(threads_s, 2),
            "ray_seconds": round(ray_s, 2),
            "ray_cluster_start_stop_seconds": round(init_s + stop_s, 2),
            "ray_over_threads": round(ray_s / threads_s, 3),
            "target": TARGET,
            "meets_target": ray_s / threads_s <= TARGET,
            "same_verdict_per_key": same,
            "ledgers_verify": threads_ok and ray_ok,
            "duplicates": {
                "threads": threads.sweep["duplicates"],
                "ray": on_ray.sweep["duplicates"],
            },
            "per_model": {
                name.replace(str(claimer), "claimer.yaml"): {
                    "runs": figures["runs"],
                    "recall": figures["overall"]["recall"],
                    "recall_wilson95": figures["overall"]["recall_wilson95"],
                    "false_positive_rate": figures["overall"]["false_positive_rate"],
                    "false_positive_upper95": figures["overall"]["false_positive_upper95"],
                    "unscored": len(figures["overall"]["unscored"]),
                }
                for name, figures in on_ray.to_json()["models"].items()
            },
            "load_average": list(os.getloadavg()),
        }
    print(json.dumps(document, indent=2))


if __name__ == "__main__":
    main()
