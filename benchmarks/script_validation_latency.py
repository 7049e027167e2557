"""Script validation latency: a typical workflow script judged in the zero-tool sandbox.

Prints one JSON object: the median (and min, max) of `--rounds` warm calls of
`validate_script` in one process (QuickJS compiled and its engine pooled: each call is a
fresh instance, `_initialize`, the harness and the script); the cold first call in a fresh
process with the compiled module in the on-disk cache (`cold_cached_ms`, what a user sees
after the first run) and with an empty cache (`cold_uncached_ms`: compiling QuickJS).
Each cold figure is the median of `--cold-runs` processes and includes Python's import of
groundskeeper and wasmtime. Wall time and CPU time both, as the machine is shared.

    .venv/bin/python benchmarks/script_validation_latency.py [--rounds 20] [--cold-runs 3]
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
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent  # the code measured is this checkout's

TYPICAL = """\
const workflow = {
  topics: { "email.received": {}, "row.created": {} },
  producers: {
    pollEmail: {
      schedule: { interval: "5m" },
      handler: async (state) => {
        const emails = await Gmail.api({ method: "users.messages.list", q: state?.q });
        for (const email of emails.messages || []) {
          await Topics.publish("email.received", { messageId: email.id, payload: email });
        }
        return { lastCheck: Date.now() };
      },
    },
  },
  consumers: {
    toSheet: {
      subscribe: ["email.received"],
      prepare: async (state) => ({ rows: state.events.map((e) => [e.payload.subject]) }),
      mutate: async (prepared) => Sheets.append("Inbox!A1", prepared.rows),
      next: async (prepared, result) => Topics.publish("row.created", { count: result.n }),
    },
  },
};
"""

COLD = """
import sys, time
wall, cpu = time.perf_counter(), time.process_time()
from groundskeeper.sandbox.script_validation import validate_script
verdict = validate_script(sys.stdin.read())
print((time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000, verdict.ok)
"""


def _cold(home: Path) -> tuple[float, float]:
    env = {**os.environ, "GROUNDSKEEPER_HOME": str(home), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", COLD], input=TYPICAL, env=env, capture_output=True,
        text=True, check=True,
    )  # fmt: skip
    wall, cpu, ok = done.stdout.split()
    if ok != "True":
        raise SystemExit(f"the typical script did not validate: {done.stdout}{done.stderr}")
    return float(wall), float(cpu)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--cold-runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["GROUNDSKEEPER_HOME"] = str(Path(tmp) / "home")
        sys.path.insert(0, str(REPO))
        from groundskeeper.sandbox.script_validation import validate_script

        if not validate_script(TYPICAL).ok:  # compiles, caches, warms the pool
            raise SystemExit("the typical script did not validate")
        wall: list[float] = []
        cpu: list[float] = []
        for _ in range(args.rounds):
            started, used = time.perf_counter(), time.process_time()
            validate_script(TYPICAL)
            wall.append((time.perf_counter() - started) * 1000)
            cpu.append((time.process_time() - used) * 1000)
        cached = [_cold(Path(tmp) / "home") for _ in range(args.cold_runs)]
        uncached = []
        for index in range(args.cold_runs):
            fresh = Path(tmp) / f"fresh-{index}"
            uncached.append(_cold(fresh))
    print(
        json.dumps(
            {
                "rounds": args.rounds,
                "warm_median_ms": round(statistics.median(wall), 2),
                "warm_min_ms": round(min(wall), 2),
                "warm_max_ms": round(max(wall), 2),
                "warm_cpu_median_ms": round(statistics.median(cpu), 2),
                "cold_cached_ms": round(statistics.median(w for w, _ in cached), 1),
                "cold_cached_cpu_ms": round(statistics.median(c for _, c in cached), 1),
                "cold_uncached_ms": round(statistics.median(w for w, _ in uncached), 1),
                "cold_uncached_cpu_ms": round(statistics.median(c for _, c in uncached), 1),
                "script_bytes": len(TYPICAL.encode()),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
