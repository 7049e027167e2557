"""Check latency: the WASM shell against a native `sh -c` subprocess, measured in one run.

Prints one JSON object: the median warm latency of an acceptance-style check and of a
three-stage pipeline through `groundskeeper.sandbox.run` (in-process) and through
`subprocess.run(["sh", "-c", …])`, their ratios (targets: ≤ 0.5), and the cold first call
in a fresh process (target: ≤ 300 ms) with the compiled-module cache on disk and without.
A command missing from box.wasm is reported as such, never timed as if it had run.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from groundskeeper import sandbox

CHECK = "test -s f && grep -q x f && echo ok"
PIPELINE = "cat f | grep x | wc -l"
ROUNDS = 40
COLD_RUNS = 5
REPO = Path(__file__).resolve().parent.parent  # the code measured is this checkout's

COLD_SCRIPT = """
import time
started = time.perf_counter()
from groundskeeper import sandbox
result = sandbox.run({cmd!r}, workdir={workdir!r})
print((time.perf_counter() - started) * 1000, result.status)
"""


def median_ms(fn: Any, rounds: int = ROUNDS) -> float:
    fn()  # warm-up, not counted
    samples = []
    for _ in range(rounds):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(samples), 3)


def measure(cmdline: str, workdir: Path) -> dict[str, Any]:
    native = subprocess.run(["sh", "-c", cmdline], cwd=workdir, capture_output=True, text=True)
    ours = sandbox.run(cmdline, workdir=workdir)
    entry: dict[str, Any] = {
        "cmdline": cmdline,
        "available": ours.stdout == native.stdout and ours.status == native.returncode,
        "problem": None,
        "wasm_ms": None,
        "native_ms": None,
        "ratio": None,
    }
    if not entry["available"]:
        missing = [
            line.split(":")[0]
            for line in ours.stderr.splitlines()
            if line.endswith("command not found (not in the sandbox)")
        ]
        entry["problem"] = (
            f"not in box.wasm yet: {', '.join(missing)}"
            if missing
            else f"differs from sh: status {ours.status} vs {native.returncode}, "
            f"stdout {ours.stdout!r} vs {native.stdout!r}, stderr {ours.stderr!r}"
        )
        return entry
    entry["wasm_ms"] = median_ms(lambda: sandbox.run(cmdline, workdir=workdir))
    entry["native_ms"] = median_ms(
        lambda: subprocess.run(["sh", "-c", cmdline], cwd=workdir, capture_output=True)
    )
    entry["ratio"] = round(entry["wasm_ms"] / entry["native_ms"], 3)
    return entry


def cold_ms(workdir: Path, home: str) -> float:
    samples = []
    for _ in range(COLD_RUNS):
        done = subprocess.run(
            [sys.executable, "-c", COLD_SCRIPT.format(cmd="true", workdir=str(workdir))],
            capture_output=True,
            text=True,
            env={"GROUNDSKEEPER_HOME": home, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
            check=True,
        )
        samples.append(float(done.stdout.split()[0]))
    return round(statistics.median(samples), 1)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp) / "work"
        workdir.mkdir()
        (workdir / "f").write_text("a\nx marks\nb\nx again\n")
        check = measure(CHECK, workdir)
        pipeline = measure(PIPELINE, workdir)
        home = str(Path(tmp) / "home")
        cold_cached = cold_ms(workdir, home)  # the first run compiles; the median is cached
        uncached = []
        for index in range(3):
            fresh = str(Path(tmp) / f"fresh-home-{index}")
            uncached.append(cold_ms_once(workdir, fresh))
    report = {
        "check": check,
        "pipeline": pipeline,
        "warm_target_ratio": 0.5,
        "cold_first_call_ms": cold_cached,
        "cold_first_call_uncached_ms": round(statistics.median(uncached), 1),
        "cold_target_ms": 300,
        "meets_targets": {
            "check": check["ratio"] is not None and check["ratio"] <= 0.5,
            "pipeline": pipeline["ratio"] is not None and pipeline["ratio"] <= 0.5,
            "cold": cold_cached <= 300,
        },
    }
    print(json.dumps(report, indent=2))


def cold_ms_once(workdir: Path, home: str) -> float:
    done = subprocess.run(
        [sys.executable, "-c", COLD_SCRIPT.format(cmd="true", workdir=str(workdir))],
        capture_output=True,
        text=True,
        env={"GROUNDSKEEPER_HOME": home, "PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},
        check=True,
    )
    return float(done.stdout.split()[0])


if __name__ == "__main__":
    main()
