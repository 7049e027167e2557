"""Issue 27's figures for two checkouts in one run: the code as it was (`--before DIR`, a git
worktree of an older commit) beside this one, each benchmark run alternately in both trees,
`--repeat` times, on the same machine at the same load. Prints one JSON document: for every
figure, each tree's runs, their median and spread (min, max), the target and whether the
median meets it.

Each tree runs its own copy of the benchmark scripts with its own package first on
PYTHONPATH (the interpreter is this one), so each is measured as its code was.

    .venv/bin/python benchmarks/before_after.py --before ../wt-base [--repeat 3]
        [--only runner,check,eval] [--tasks 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent

Extract = Callable[[dict[str, Any]], float | None]


@dataclass(frozen=True)
class Figure:
    name: str
    unit: str
    target: float
    extract: Extract
    higher_is_better: bool = False


@dataclass(frozen=True)
class Bench:
    key: str
    script: str  # under benchmarks/
    args: tuple[str, ...]
    figures: tuple[Figure, ...]


def _get(*path: str) -> Extract:
    def extract(document: dict[str, Any]) -> float | None:
        value: Any = document
        for part in path:
            if not isinstance(value, dict):
                return None
            value = value.get(part)
        return float(value) if isinstance(value, int | float) else None

    return extract


def benches(tasks: int) -> list[Bench]:
    runner = (
        Figure("overhead_ms_per_task_signed_ledger", "ms", 1.5,
               _get("serial_signed_ledger", "overhead_ms_per_task")),
        Figure("overhead_ms_per_task_runner_alone", "ms", 1.5,
               _get("serial_memory_recorder", "overhead_ms_per_task")),
        Figure("resume_1000_one_left_subprocess_s", "s", 0.3,
               _get("resume_all_but_one_done", "resume_subprocess_s")),
    )  # fmt: skip
    return [
        Bench("runner", "runner_overhead.py", ("--tasks", str(tasks)), runner),
        Bench(
            "check",
            "check_latency.py",
            ("--rounds", "20", "--cold-runs", "7"),
            (
                Figure("warm_check_ratio_to_sh", "ratio", 0.3, _get("check", "ratio")),
                Figure("warm_check_ms", "ms", float("inf"), _get("check", "wasm_ms")),
                Figure("warm_check_sh_ms", "ms", float("inf"), _get("check", "native_ms")),
                Figure("cold_first_check_ms", "ms", 100, _get("cold_first_call_ms")),
            ),
        ),
    ]


def eval_suite_seconds(tree: Path, env: dict[str, str]) -> dict[str, Any]:
    """The shipped eval suite, `--jobs 2`, as a user runs it: its wall time."""
    with tempfile.TemporaryDirectory() as home:
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "groundskeeper", "eval", str(tree / "evals" / "fake-done"),
             "--jobs", "2", "--json"],
            capture_output=True, text=True, check=False, cwd=tree,
            env={**env, "GROUNDSKEEPER_HOME": home},
        )  # fmt: skip
        wall = time.perf_counter() - started
    try:
        report = json.loads(done.stdout)
        tally = {"cases": len(report["cases"]), "passed": report["passed"]}
    except (ValueError, KeyError, TypeError):
        tally = {"cases": None, "passed": None}
    return {"eval_suite_s": round(wall, 2), "exit_code": done.returncode, **tally}


def run_in(tree: Path, bench: Bench) -> dict[str, Any]:
    env = _env(tree)
    with tempfile.TemporaryDirectory() as home:
        done = subprocess.run(
            [sys.executable, str(tree / "benchmarks" / bench.script), *bench.args],
            capture_output=True, text=True, check=False, cwd=tree,
            env={**env, "GROUNDSKEEPER_HOME": home},
        )  # fmt: skip
    if done.returncode != 0:
        return {"error": done.stderr[-2000:]}
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def _env(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tree)
    return env


def summary(values: list[float]) -> dict[str, Any]:
    if not values:
        return {"runs": [], "median": None, "min": None, "max": None}
    return {
        "runs": [round(v, 3) for v in values],
        "median": round(statistics.median(values), 3),
        "min": round(min(values), 3),
        "max": round(max(values), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--only", default="runner,check,eval")
    args = parser.parse_args()
    trees = {"before": args.before.resolve(), "after": HERE}
    wanted = set(args.only.split(","))
    for tree in trees.values():  # bytecode in place, so neither pays for compiling
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "groundskeeper")],
                       check=False, env=_env(tree))  # fmt: skip
    figures: dict[str, Any] = {}
    errors: list[str] = []
    for bench in benches(args.tasks):
        if bench.key not in wanted:
            continue
        values: dict[str, dict[str, list[float]]] = {f.name: {"before": [], "after": []}
                                                     for f in bench.figures}  # fmt: skip
        for _ in range(args.repeat):
            for side, tree in trees.items():
                document = run_in(tree, bench)
                if "error" in document:
                    errors.append(f"{bench.script} in {side}: {document['error']}")
                    continue
                for figure in bench.figures:
                    value = figure.extract(document)
                    if value is not None:
                        values[figure.name][side].append(value)
        for figure in bench.figures:
            figures[figure.name] = _row(figure, values[figure.name])
    if "eval" in wanted:
        runs: dict[str, list[float]] = {"before": [], "after": []}
        outcomes: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
        for _ in range(max(1, args.repeat // 3)):
            for side, tree in trees.items():
                suite = eval_suite_seconds(tree, _env(tree))
                runs[side].append(suite["eval_suite_s"])
                outcomes[side].append({k: v for k, v in suite.items() if k != "eval_suite_s"})
        figures["eval_suite_jobs_2_s"] = {
            **_row(Figure("eval_suite_jobs_2_s", "s", 30, _get()), runs),
            "outcomes": outcomes,  # each run's exit code, cases and cases passed
        }
    print(json.dumps({"before": str(trees["before"]), "after": str(trees["after"]),
                      "repeat": args.repeat, "figures": figures, "errors": errors},
                     indent=2))  # fmt: skip


def _row(figure: Figure, values: dict[str, list[float]]) -> dict[str, Any]:
    before, after = summary(values["before"]), summary(values["after"])
    target = None if figure.target == float("inf") else figure.target
    ratio = (
        round(after["median"] / before["median"], 3)
        if before["median"] and after["median"] is not None
        else None
    )
    return {
        "unit": figure.unit,
        "before": before,
        "after": after,
        "after_over_before": ratio,
        "target": target,
        "meets_target": None if target is None or after["median"] is None
        else after["median"] <= target,
    }  # fmt: skip


if __name__ == "__main__":
    main()
