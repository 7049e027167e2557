"""Check latency: the WASM shell against a native `sh -c` subprocess, measured in one run.

Prints one JSON object: the median warm latency of an acceptance-style check and of a
three-stage pipeline through `groundskeeper.sandbox.run` (in-process) and through
`subprocess.run(["sh", "-c", …])`, their ratios (targets: ≤ 0.5), and the cold first call
in a fresh process (target: ≤ 300 ms) with the compiled-module cache on disk and without.
A command missing from box.wasm is reported as such, never timed as if it had run.
`python3 -c 'print(1)'` (MicroPython in the sandbox against the system's CPython) is
reported beside them, warm and cold (`python`, `cold_python_first_call_ms`), with no target.

The machine these run on is shared, so each round runs a block of WASM calls and then a
block of native ones (`--block`, default 5): load drifts over both alike, and every figure
in wall time (what a caller waits) comes with the CPU time spent (`*_cpu_ms`: this process's
for the sandbox, the children's plus ours for `sh`), which other processes' load disturbs
far less. The targets are judged on these blocks: warm, in-process calls in a row.

Alternating one call each (`*_alternating`) is reported too, and is slower for the sandbox:
while `sh` runs, this process sleeps in wait(), and on these virtual machines a process that
has slept finds its caches cold (a memory-bound loop runs ~3x slower right after a 4 ms
sleep; a compute-bound one ~1.1x), so every sandbox call then starts cold.

    .venv/bin/python benchmarks/check_latency.py [--rounds 40] [--block 5] [--cold-runs 9]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from groundskeeper import sandbox

CHECK = "test -s f && grep -q x f && echo ok"
PIPELINE = "cat f | grep x | wc -l"
PYTHON = "python3 -c 'print(1)'"
JQ_CHECK = "jq -e '.summary.failed == 0 and (.tests | length) > 1' r.json"
AWK_CHECK = "awk -F, 'NR > 1 && $2 > 30 {n++} END {exit n != 2}' t.csv"
REPO = Path(__file__).resolve().parent.parent  # the code measured is this checkout's

COLD_SCRIPT = """
import time
wall, cpu = time.perf_counter(), time.process_time()
from groundskeeper import sandbox
result = sandbox.run({cmd!r}, workdir={workdir!r})
print((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000, result.status)
"""


def _cpu_with_children() -> float:
    # getrusage, not os.times: the latter counts in 10 ms clock ticks
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    """(wall ms, CPU ms) of one call, children's CPU included."""
    wall, cpu = time.perf_counter(), _cpu_with_children()
    fn()
    return (time.perf_counter() - wall) * 1000, (_cpu_with_children() - cpu) * 1000


def measure(cmdline: str, workdir: Path, rounds: int, block: int) -> dict[str, Any]:
    native = subprocess.run(["sh", "-c", cmdline], cwd=workdir, capture_output=True, text=True)
    ours = sandbox.run(cmdline, workdir=workdir)
    entry: dict[str, Any] = {
        "cmdline": cmdline,
        "available": ours.stdout == native.stdout and ours.status == native.returncode,
        "problem": None,
        "wasm_ms": None,
        "native_ms": None,
        "ratio": None,
        "wasm_cpu_ms": None,
        "native_cpu_ms": None,
        "cpu_ratio": None,
        "wasm_ms_alternating": None,
        "native_ms_alternating": None,
        "ratio_alternating": None,
    }
    if not entry["available"]:
        missing = [
            line.split(":")[0]
            for line in ours.stderr.splitlines()
            if "command not found (not in the sandbox)" in line  # "; did you mean …?" may follow
        ]
        entry["problem"] = (
            f"not in box.wasm yet: {', '.join(missing)}"
            if missing
            else f"differs from sh: status {ours.status} vs {native.returncode}, "
            f"stdout {ours.stdout!r} vs {native.stdout!r}, stderr {ours.stderr!r}"
        )
        return entry
    jobs: dict[str, Callable[[], object]] = {
        "wasm": lambda: sandbox.run(cmdline, workdir=workdir),
        "native": lambda: subprocess.run(["sh", "-c", cmdline], cwd=workdir, capture_output=True),
    }
    for job in jobs.values():
        job()  # warm-up, not counted
    blocks: dict[str, list[tuple[float, float]]] = {name: [] for name in jobs}
    alternating: dict[str, list[tuple[float, float]]] = {name: [] for name in jobs}
    for _ in range(rounds):
        for name, job in jobs.items():
            blocks[name].extend(_timed(job) for _ in range(block))
        for name, job in jobs.items():
            alternating[name].append(_timed(job))
    for name, taken in blocks.items():
        entry[f"{name}_ms"] = round(statistics.median(wall for wall, _ in taken), 3)
        entry[f"{name}_cpu_ms"] = round(statistics.median(cpu for _, cpu in taken), 3)
    for name, taken in alternating.items():
        entry[f"{name}_ms_alternating"] = round(statistics.median(wall for wall, _ in taken), 3)
    entry["ratio"] = round(entry["wasm_ms"] / entry["native_ms"], 3)
    entry["cpu_ratio"] = round(entry["wasm_cpu_ms"] / entry["native_cpu_ms"], 3)
    entry["ratio_alternating"] = round(
        entry["wasm_ms_alternating"] / entry["native_ms_alternating"], 3
    )
    return entry


def cold_once(workdir: Path, home: str, cmd: str = "true") -> tuple[float, float]:
    """(wall ms, CPU ms) from before `from groundskeeper import sandbox` to a run's end."""
    done = subprocess.run(
        [sys.executable, "-c", COLD_SCRIPT.format(cmd=cmd, workdir=str(workdir))],
        capture_output=True,
        text=True,
        env={"GROUNDSKEEPER_HOME": home, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
        check=True,
    )
    wall, cpu, status = done.stdout.split()
    if status != "0":
        raise SystemExit(f"cold run failed with status {status}: {done.stderr}")
    return float(wall), float(cpu)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--block", type=int, default=5, help="calls in a row per side a round")
    parser.add_argument("--cold-runs", type=int, default=9)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp) / "work"
        workdir.mkdir()
        (workdir / "f").write_text("a\nx marks\nb\nx again\n")
        (workdir / "t.csv").write_text("name,age\nann,31\nbob,25\ncid,40\n")
        (workdir / "r.json").write_text(
            '{"tests": [{"name": "a", "ok": true}, {"name": "b", "ok": true}],'
            ' "summary": {"passed": 2, "failed": 0}}\n'
        )
        check = measure(CHECK, workdir, args.rounds, args.block)
        pipeline = measure(PIPELINE, workdir, args.rounds, args.block)
        python = measure(PYTHON, workdir, max(args.rounds // 4, 1), args.block)
        jq_check = measure(JQ_CHECK, workdir, args.rounds, args.block)
        awk_check = measure(AWK_CHECK, workdir, args.rounds, args.block)
        home = str(Path(tmp) / "home")
        cold_once(workdir, home)  # compiles box.wasm into this home's cache; not counted
        cached = [cold_once(workdir, home) for _ in range(args.cold_runs)]
        uncached = [cold_once(workdir, str(Path(tmp) / f"fresh-home-{i}")) for i in range(3)]
        cold_once(workdir, home, PYTHON)  # compiles MicroPython into the cache; not counted
        python_cold = [cold_once(workdir, home, PYTHON) for _ in range(args.cold_runs)]
    cold_ms = round(statistics.median(wall for wall, _ in cached), 1)
    report = {
        "check": check,
        "pipeline": pipeline,
        "jq_check": jq_check,
        "awk_check": awk_check,
        "warm_target_ratio": 0.5,
        "cold_first_call_ms": cold_ms,
        "cold_first_call_cpu_ms": round(statistics.median(cpu for _, cpu in cached), 1),
        "cold_first_call_samples_ms": sorted(round(wall, 1) for wall, _ in cached),
        "cold_first_call_uncached_ms": round(statistics.median(wall for wall, _ in uncached), 1),
        "cold_target_ms": 300,
        "python": python,
        "cold_python_first_call_ms": round(statistics.median(wall for wall, _ in python_cold), 1),
        "meets_targets": {
            "check": check["ratio"] is not None and check["ratio"] <= 0.5,
            "pipeline": pipeline["ratio"] is not None and pipeline["ratio"] <= 0.5,
            "jq_check": jq_check["ratio"] is not None and jq_check["ratio"] <= 0.5,
            "awk_check": awk_check["ratio"] is not None and awk_check["ratio"] <= 0.5,
            "cold": cold_ms <= 300,
        },
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
