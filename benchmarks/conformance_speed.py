"""Warm conformance time of a small component (target ≤ 50 ms), against a same-run baseline.

The baseline is what any check must pay: wasmtime compiling the component and walking its
import/export types. The ratio shows what `check_engine` adds on top (reading the world,
rendering types, the rules). Prints one JSON document.

    .venv/bin/python benchmarks/conformance_speed.py [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import wasmtime
from wasmtime import component as wc

from groundskeeper.conformance.rules import check_engine, component_engine

COMPONENT = Path(__file__).resolve().parent.parent / "tests" / "components" / "dock_all.wat"
TARGET_MS = 50.0


def timed(action: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def p95(samples: list[float]) -> float:
    return sorted(samples)[max(0, int(len(samples) * 0.95) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    binary = bytes(wasmtime.wat2wasm(COMPONENT.read_text("utf-8")))

    started = time.perf_counter()
    assert check_engine(binary) == [], "the reference component must conform"
    cold_ms = (time.perf_counter() - started) * 1000  # engine creation + first compile

    engine = component_engine()

    def baseline() -> None:
        ty = wc.Component(engine, binary).type
        for item in (*ty.imports(engine).values(), *ty.exports(engine).values()):
            _ = item.ty

    # interleave so both see the same machine load (the machine is shared)
    warm: list[float] = []
    base: list[float] = []
    for _ in range(args.repeat):
        warm += timed(lambda: check_engine(binary), 1)
        base += timed(baseline, 1)

    warm_median = statistics.median(warm)
    base_median = statistics.median(base)
    print(
        json.dumps(
            {
                "benchmark": "conformance_speed",
                "component": COMPONENT.name,
                "component_bytes": len(binary),
                "repeat": args.repeat,
                "cold_first_check_ms": round(cold_ms, 3),
                "warm_check_ms_median": round(warm_median, 3),
                "warm_check_ms_p95": round(p95(warm), 3),
                "baseline_compile_and_types_ms_median": round(base_median, 3),
                "ratio_check_vs_baseline": round(warm_median / base_median, 3),
                "target_ms": TARGET_MS,
                "meets_target": warm_median <= TARGET_MS,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
