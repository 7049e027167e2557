"""What importing a module costs a fresh process, this tree against another (`--before DIR`).

Each call is `python -I -c "import sys; sys.path.insert(0, TREE); import MODULE"`, this
tree's call followed by DIR's, `--calls` pairs; one pair first, not counted (byte-compiling
both trees once, as an install does). Figures are wall time and CPU time (user + system of the
child, steadier on a shared machine), medians and minima, with `ratio_*` this tree's median
over DIR's. Baseline in the same run: `python -I -c pass`.

    .venv/bin/python benchmarks/import_cost.py --before /tmp/fastclass-base \\
        [--module groundskeeper.agents.gate] [--calls 30]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def one(code: str) -> tuple[float, float]:
    """(wall ms, CPU ms) of one `python -I -c code`."""
    start = time.perf_counter()
    pid = os.spawnv(os.P_NOWAIT, sys.executable, [sys.executable, "-I", "-c", code])
    _, status, usage = os.wait4(pid, 0)
    wall = (time.perf_counter() - start) * 1000
    if status != 0:
        raise SystemExit(f"python -I -c {code!r} failed with status {status}")
    return wall, (usage.ru_utime + usage.ru_stime) * 1000


def summary(rows: list[tuple[float, float]]) -> dict[str, float]:
    walls, cpus = [r[0] for r in rows], [r[1] for r in rows]
    return {
        "wall_ms_median": round(statistics.median(walls), 2),
        "wall_ms_min": round(min(walls), 2),
        "cpu_ms_median": round(statistics.median(cpus), 2),
        "cpu_ms_min": round(min(cpus), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--before", type=Path, required=True)
    parser.add_argument("--module", default="groundskeeper.agents.gate")
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    codes = {
        "this": f"import sys; sys.path.insert(0, {str(HERE)!r}); import {args.module}",
        "before": f"import sys; sys.path.insert(0, {str(args.before.resolve())!r}); "
        f"import {args.module}",
        "bare": "pass",
    }
    rows: dict[str, list[tuple[float, float]]] = {name: [] for name in codes}
    for call in range(args.calls + 1):
        for name, code in codes.items():
            result = one(code)
            if call:
                rows[name].append(result)
    out = {name: summary(series) for name, series in rows.items()}
    this, before = out["this"], out["before"]
    out["module"] = args.module  # type: ignore[assignment]
    out["ratio_wall"] = round(this["wall_ms_median"] / before["wall_ms_median"], 3)  # type: ignore[assignment]
    out["ratio_cpu"] = round(this["cpu_ms_median"] / before["cpu_ms_median"], 3)  # type: ignore[assignment]
    out["load_average"] = os.getloadavg()  # type: ignore[assignment]
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
