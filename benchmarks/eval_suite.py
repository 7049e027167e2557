"""The shipped eval suite's wall time, `groundskeeper eval evals/fake-done --jobs 2` as a user
runs it, read from its own output (`time: Ns for N cases`), beside a baseline measured in the
same run: the same suite from the code at `--before REF` (a git ref of this repository,
exported into a temporary directory; default `main`), the two run alternately `--repeat`
times so both see the same load. Each run gets an empty home. Prints one JSON document: each
side's runs, median, min and max, the CPU its processes used, the load average around every
run, after/before, and whether the median meets the targets (≤ 30 s on an idle 2-core
machine, issue 27; ≤ 60 s, issues 23 and 28). `--before-python` runs the baseline with an
interpreter of its own: a virtualenv holding that tree's installation and its own CPython
set-up for the sandbox (one installation's set-up serves whichever tree runs it, and a tree
that sets it up differently would redo it before each of its runs).

    .venv/bin/python benchmarks/eval_suite.py [--before main] [--repeat 3] [--jobs 2]
        [--before-python /tmp/venv-before/bin/python]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
TARGET_S = 30.0  # issue 27
TARGET_23_28_S = 60.0  # issues 23 and 28
TIMING = re.compile(r"time: ([0-9.]+)s for (\d+) cases")
TALLY = re.compile(r"eval: (\d+) passed, (\d+) failed")


def export(ref: str, into: Path) -> Path:
    """The tree of `ref` (git archive), as the code was; its own evals/ and benchmarks/."""
    archive = into / "tree.tar"
    subprocess.run(["git", "-C", str(HERE), "archive", "-o", str(archive), ref], check=True)
    tree = into / "tree"
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    return tree


def one_run(tree: Path, jobs: int, python: str = sys.executable) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE",)}
    env["PYTHONPATH"] = str(tree)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="gk-bench-eval-") as home:
        started = time.perf_counter()
        done = subprocess.run(
            [python, "-m", "groundskeeper", "eval", str(tree / "evals" / "fake-done"),
             "--jobs", str(jobs), "--ledger", str(Path(home) / "suite")],
            capture_output=True, text=True, check=False, cwd=home,
            env={**env, "GROUNDSKEEPER_HOME": home},
        )  # fmt: skip
        wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    timing = TIMING.search(done.stdout)
    tally = TALLY.search(done.stdout.strip().splitlines()[-1] if done.stdout.strip() else "")
    return {
        "eval_s": float(timing[1]) if timing else None,
        "process_s": round(wall, 2),
        "cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 1),
        "cases": int(timing[2]) if timing else None,
        "passed": int(tally[1]) if tally else None,
        "failed": int(tally[2]) if tally else None,
        "exit_code": done.returncode,
        "load_1min": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }


def side(runs: list[dict[str, Any]]) -> dict[str, Any]:
    values = [r["eval_s"] for r in runs if r["eval_s"] is not None]
    return {
        "median_s": round(statistics.median(values), 2) if values else None,
        "min_s": min(values, default=None),
        "max_s": max(values, default=None),
        "median_cpu_s": round(statistics.median(r["cpu_s"] for r in runs), 1) if runs else None,
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--before", default="main", help="the baseline: a git ref")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument(
        "--before-python",
        default=sys.executable,
        help="the interpreter that runs the baseline: a virtualenv of its own when the two"
        " set CPython up for the sandbox differently (one installation's set-up is shared by"
        " every tree it runs, and each tree would redo it for itself)",
    )
    args = parser.parse_args()
    pythons = {"before": args.before_python, "after": sys.executable}
    with tempfile.TemporaryDirectory(prefix="gk-bench-before-") as tmp:
        trees = {"before": export(args.before, Path(tmp)), "after": HERE}
        for tree in trees.values():  # bytecode in place, so neither pays for compiling
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "groundskeeper")],
                           check=False, capture_output=True)  # fmt: skip
        runs: dict[str, list[dict[str, Any]]] = {"before": [], "after": []}
        for _ in range(args.repeat):
            for name, tree in trees.items():
                runs[name].append(one_run(tree, args.jobs, pythons[name]))
    before, after = side(runs["before"]), side(runs["after"])
    ratio = (
        round(after["median_s"] / before["median_s"], 3)
        if before["median_s"] and after["median_s"] is not None
        else None
    )
    print(json.dumps({
        "figure": f"shipped eval suite, --jobs {args.jobs}, wall time from its own output",
        "before": {"ref": args.before, "python": args.before_python, **before},
        "after": {"tree": str(HERE), **after},
        "after_over_before": ratio,
        "target_s": TARGET_S,
        "meets_target": None if after["median_s"] is None else after["median_s"] <= TARGET_S,
        "target_23_28_s": TARGET_23_28_S,
        "meets_target_23_28": (
            None if after["median_s"] is None else after["median_s"] <= TARGET_23_28_S
        ),
        "cpus": os.cpu_count(),
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
