"""The agent hook's own time: `groundskeeper hook claude-code` from process start to its
answer, with the time its checks took taken out (target: median ≤ 150 ms over 20 calls).

Each call is a fresh process, as an agent starts it, answering a passing `Stop` on a plan
of two tasks (so every call verifies the ledger, compares the plan with its seal, runs both
checks in the sandbox, seals five steps and writes its answer). The checks' own time is the
sum of the `duration_ms` the sealed `check` steps carry (they run one after the other); what
is left is groundskeeper's overhead. The ledger grows by one run per call, as in a session.

    .venv/bin/python benchmarks/hook_overhead.py [--calls 20]
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

PLAN = """\
#+TODO: TODO | DONE FAILED
* TODO Write the notes
  :PROPERTIES:
  :ID: notes
  :done-when: grep -q shipped NOTES.md
  :END:
* TODO Count them
  :PROPERTIES:
  :ID: count
  :done-when: grep -qx 1 COUNT
  :END:
"""


def check_ms(ledger: Path, skip: int) -> tuple[int, int]:
    """(the checks' total ms in the lines after `skip`, the ledger's line count)."""
    lines = ledger.read_text(encoding="utf-8").splitlines()
    total = sum(
        int(obj["body"].get("duration_ms") or 0)
        for obj in (json.loads(line) for line in lines[skip:])
        if obj["step"] == "check"
    )
    return total, len(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        work = root / "work"
        work.mkdir()
        (work / "plan.org").write_text(PLAN, encoding="utf-8")
        (work / "NOTES.md").write_text("shipped\n", encoding="utf-8")
        (work / "COUNT").write_text("1\n", encoding="utf-8")
        env = {**os.environ, "GROUNDSKEEPER_HOME": str(root / "home")}
        base = [sys.executable, "-m", "groundskeeper"]
        subprocess.run([*base, "keygen"], env=env, check=True, capture_output=True)
        plan = str(work / "plan.org")
        subprocess.run([*base, "agent", "seal", plan], env=env, check=True, capture_output=True)
        event = json.dumps(
            {
                "session_id": "bench",
                "cwd": str(work),
                "hook_event_name": "Stop",
                "stop_hook_active": False,
                "last_assistant_message": "done",
            }
        )
        ledger = work / ".groundskeeper" / "plan.org" / "_steps.jsonl"
        _, seen = check_ms(ledger, 0)
        totals: list[float] = []
        overheads: list[float] = []
        checks: list[float] = []
        for _ in range(args.calls):
            started = time.perf_counter()
            proc = subprocess.run(
                [*base, "hook", "claude-code", "--plan", plan],
                input=event.encode(),
                env=env,
                capture_output=True,
            )
            wall = (time.perf_counter() - started) * 1000
            if proc.returncode != 0 or proc.stdout.strip():
                raise SystemExit(
                    f"the hook did not allow the stop: {proc.stdout!r} {proc.stderr!r}"
                )
            spent, seen_now = check_ms(ledger, seen)
            seen = seen_now
            totals.append(wall)
            checks.append(spent)
            overheads.append(wall - spent)
        median = statistics.median(overheads)
        print(
            json.dumps(
                {
                    "calls": args.calls,
                    "hook_total_ms_median": round(statistics.median(totals), 1),
                    "checks_ms_median": round(statistics.median(checks), 1),
                    "hook_overhead_ms_median": round(median, 1),
                    "hook_overhead_ms_min": round(min(overheads), 1),
                    "target_ms": 150,
                    "meets_target": median <= 150,
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
