"""CPython in the sandbox: a warm `python3 -c 'print(1)'` and a warm 20-test pytest check
(examples/pylib) through `groundskeeper.sandbox.run`, against the same suite run natively by
the host's CPython (`python -m pytest`, a subprocess) in the same run.

Prints one JSON object: the medians (of `--rounds`, default 20) in milliseconds, their targets
(print ≤ 100 ms, the pytest check ≤ 2000 ms) and whether each is met, the same suite run as
the `pytest` contract runs it (`acceptance.suite.run_suite`: our recorder plugin, the
assertion-pass hook), and the ratio of the sandbox's pytest check to the native one (pytest
with plugin autoloading off, as in the sandbox, so both load the same code). The machine is
shared: each figure comes with the CPU time this process (or, natively, the child) spent,
which other processes' load disturbs far less than wall time.

What fuel metering costs CPython (`one_test_*`): `python3 -m pytest -q tests` on a one-test
project, run in the fuel-free companion engine python3 uses, and the same with the old
fuel-metered engine (`cpython.METERED_FOR_BENCHMARK`, a switch for this script alone: it
compiles CPython with fuel into this run's own temporary home first, ~10-40 s, not timed),
one of each in turn, so load drifts over both alike; their ratio is `metering_cost`.
`--fuel-only` measures that alone.

    .venv/bin/python benchmarks/python_check.py [--rounds 20] [--fuel-only]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "examples" / "pylib"
PRINT = "python3 -c 'print(1)'"
SUITE = "python3 -m pytest -q tests"
ONE_TEST = {
    "calc.py": "def add(a, b):\n    return a + b\n",
    "tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n",
}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def in_sandbox(cmdline: str, workdir: Path, rounds: int) -> tuple[list[float], list[float]]:
    from groundskeeper import sandbox

    walls, cpus = [], []
    for _ in range(rounds):
        started, cpu = time.perf_counter(), _cpu()
        result = sandbox.run(cmdline, workdir=workdir, read_only=True, timeout=120)
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((_cpu() - cpu) * 1000)
        if result.status != 0:
            raise SystemExit(f"{cmdline!r} failed in the sandbox: {result.stderr[-2000:]}")
    return walls, cpus


def as_contract(workdir: Path, rounds: int) -> tuple[list[float], list[float]]:
    from groundskeeper.acceptance.suite import run_suite

    walls, cpus = [], []
    for _ in range(rounds):
        started, cpu = time.perf_counter(), _cpu()
        record = run_suite(workdir, "tests")
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((_cpu() - cpu) * 1000)
        if set(record.outcomes.values()) != {"passed"} or len(record.outcomes) != 20:
            raise SystemExit(f"the contract's run did not pass 20 tests: {record.output[-2000:]}")
    return walls, cpus


def natively(workdir: Path, rounds: int) -> tuple[list[float], list[float]]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    walls, cpus = [], []
    for _ in range(rounds):
        started, cpu = time.perf_counter(), _children_cpu()
        done = subprocess.run(command, cwd=workdir, env=env, capture_output=True, check=False)
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((_children_cpu() - cpu) * 1000)
        if done.returncode != 0:
            raise SystemExit(f"the native suite failed: {done.stdout[-2000:]!r}")
    return walls, cpus


def fuel_cost(rounds: int) -> dict[str, object]:
    """The one-test pytest check with CPython fuel-free (as it runs) and fuel-metered (as it
    ran before), alternating; medians and the metered/fuel-free ratio."""
    from groundskeeper.sandbox import cpython

    workdir = Path(tempfile.mkdtemp(prefix="gk-bench-one-"))
    for name, text in ONE_TEST.items():
        (workdir / name).parent.mkdir(parents=True, exist_ok=True)
        (workdir / name).write_text(text)
    figures: dict[bool, tuple[list[float], list[float]]] = {False: ([], []), True: ([], [])}
    try:
        for metered in (False, True):  # each engine's module loaded (compiled): not counted
            cpython.METERED_FOR_BENCHMARK = metered
            in_sandbox(SUITE, workdir, 1)
        for _ in range(rounds):
            for metered in (False, True):
                cpython.METERED_FOR_BENCHMARK = metered
                wall, cpu = in_sandbox(SUITE, workdir, 1)
                figures[metered][0].extend(wall)
                figures[metered][1].extend(cpu)
    finally:
        cpython.METERED_FOR_BENCHMARK = False
        shutil.rmtree(workdir, ignore_errors=True)
    median = statistics.median
    free_wall, free_cpu = (median(f) for f in figures[False])
    fuel_wall, fuel_cpu = (median(f) for f in figures[True])
    return {
        "one_test_cmdline": SUITE,
        "one_test_ms": round(free_wall, 1),
        "one_test_cpu_ms": round(free_cpu, 1),
        "one_test_metered_ms": round(fuel_wall, 1),
        "one_test_metered_cpu_ms": round(fuel_cpu, 1),
        "metering_cost": round(fuel_wall / free_wall, 3),
        "metering_cpu_cost": round(fuel_cpu / free_cpu, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--fuel-only", action="store_true", help="only the one-test figures")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="gk-bench-home-")
    os.environ["GROUNDSKEEPER_HOME"] = home
    if args.fuel_only:
        try:
            report = {"rounds": args.rounds, **fuel_cost(args.rounds)}
        finally:
            shutil.rmtree(home, ignore_errors=True)
        print(json.dumps({**report, "load_average": os.getloadavg()[0]}, indent=2))
        return
    workdir = Path(tempfile.mkdtemp(prefix="gk-bench-")) / "pylib"
    shutil.copytree(SAMPLE, workdir)
    try:
        in_sandbox(PRINT, workdir, 2)  # the module loaded into this process: not counted
        in_sandbox(SUITE, workdir, 1)
        print_wall, print_cpu = in_sandbox(PRINT, workdir, args.rounds)
        suite_wall, suite_cpu = in_sandbox(SUITE, workdir, args.rounds)
        contract_wall, contract_cpu = as_contract(workdir, args.rounds)
        natively(workdir, 1)
        native_wall, native_cpu = natively(workdir, args.rounds)
        metering = fuel_cost(args.rounds)
    finally:
        shutil.rmtree(workdir.parent, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    median = statistics.median
    report = {
        "rounds": args.rounds,
        "print_ms": round(median(print_wall), 1),
        "print_cpu_ms": round(median(print_cpu), 1),
        "print_target_ms": 100,
        "print_met": median(print_wall) <= 100,
        "pytest_20_ms": round(median(suite_wall), 1),
        "pytest_20_cpu_ms": round(median(suite_cpu), 1),
        "pytest_20_target_ms": 2000,
        "pytest_20_met": median(suite_wall) <= 2000,
        "contract_20_ms": round(median(contract_wall), 1),
        "contract_20_cpu_ms": round(median(contract_cpu), 1),
        "native_pytest_20_ms": round(median(native_wall), 1),
        "native_pytest_20_cpu_ms": round(median(native_cpu), 1),
        "pytest_ratio_to_native": round(median(suite_wall) / median(native_wall), 2),
        "pytest_cpu_ratio_to_native": round(median(suite_cpu) / median(native_cpu), 2),
        **metering,
        "load_average": os.getloadavg()[0],
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
