"""The agent hook's own time: `groundskeeper hook claude-code` from process start to its
answer, with the time its checks took taken out (target: median ≤ 150 ms over 20 calls).

Each call is a fresh process started with the command line `agent setup` writes (this
interpreter, `-I -m groundskeeper hook claude-code --plan … --require-seal`), answering a
`Stop` on a plan of two tasks, as an agent starts it. Two figures, since "checks excluded"
can be read two ways:

- `no_check`: a Stop on the same plan with both tasks DONE, so no check runs at all: the
  process starting, reading the event, verifying the ledger, comparing the plan with its
  seal, sealing the claim and the decision and answering. Nothing of the sandbox loads.
- `with_checks`: both checks run in the sandbox (every call verifies the ledger, compares
  the plan and its inputs with the seal, runs both checks, seals six steps and answers).
  `overhead` is the total minus the checks' own time as the sealed `check` steps carry it
  (`duration_ms`, the sandbox run of each check line); loading wasmtime and the compiled
  sandbox module stays in the overhead.

The baselines are measured in the same run, the same way: a bare `python -I -c pass` and
`python -I -c "import click"` (what any click command pays before it does anything).
The ledger grows by one run per call, as in a session. Each series starts with one call
not counted (byte-compiling the package once, as an install does).

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
from collections.abc import Callable
from pathlib import Path

TARGET_MS = 150

PLAN = """\
#+TODO: TODO | DONE FAILED
* {state} Write the notes
  :PROPERTIES:
  :ID: notes
  :done-when: grep -q shipped NOTES.md
  :END:
* {state} Count them
  :PROPERTIES:
  :ID: count
  :done-when: grep -qx 1 COUNT
  :END:
"""


def timed(command: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, bytes]:
    started = time.perf_counter()
    proc = subprocess.run(command, input=stdin, env=env, capture_output=True)
    wall = (time.perf_counter() - started) * 1000
    if proc.returncode != 0 or proc.stdout.strip():
        raise SystemExit(f"{command[-1]!r} did not allow: {proc.stdout!r} {proc.stderr!r}")
    return wall, proc.stderr


def check_ms(ledger: Path, skip: int) -> tuple[int, int]:
    """(the checks' total ms in the lines after `skip`, the ledger's line count)."""
    lines = ledger.read_text(encoding="utf-8").splitlines()
    total = sum(
        int(obj["body"].get("duration_ms") or 0)
        for obj in (json.loads(line) for line in lines[skip:])
        if obj["step"] == "check"
    )
    return total, len(lines)


def summary(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 1),
        "min": round(min(values), 1),
        "max": round(max(values), 1),
    }


def series(calls: int, one: Callable[[], float]) -> list[float]:
    one()  # not counted: the first call byte-compiles what it imports
    return [one() for _ in range(calls)]


def gated_plan(root: Path, name: str, state: str, env: dict[str, str]) -> tuple[list[str], Path]:
    """A workdir with the plan, its work done, set up for Claude Code; the hook's command."""
    work = root / name
    work.mkdir()
    plan = work / "plan.org"
    plan.write_text(PLAN.format(state=state), encoding="utf-8")
    (work / "NOTES.md").write_text("shipped\n", encoding="utf-8")
    (work / "COUNT").write_text("1\n", encoding="utf-8")
    cli = [sys.executable, "-m", "groundskeeper"]
    setup = [*cli, "agent", "setup", "claude-code", "--plan", str(plan)]
    subprocess.run(setup, env=env, check=True, capture_output=True)
    hook = [
        sys.executable,
        "-I",
        "-m",
        "groundskeeper",
        "hook",
        "claude-code",
        "--plan",
        str(plan),
        "--require-seal",
    ]
    return hook, work


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        env = {**os.environ, "GROUNDSKEEPER_HOME": str(root / "home")}
        python = [sys.executable, "-I", "-c"]
        bare = series(args.calls, lambda: timed([*python, "pass"], b"", env)[0])
        click = series(args.calls, lambda: timed([*python, "import click"], b"", env)[0])

        def event(work: Path) -> bytes:
            return json.dumps(
                {
                    "session_id": "bench",
                    "cwd": str(work),
                    "hook_event_name": "Stop",
                    "stop_hook_active": False,
                    "last_assistant_message": "done",
                }
            ).encode()

        done_hook, done_work = gated_plan(root, "done", "DONE", env)
        no_check = series(args.calls, lambda: timed(done_hook, event(done_work), env)[0])
        hook, work = gated_plan(root, "work", "TODO", env)
        ledger = work / ".groundskeeper" / "plan.org" / "_steps.jsonl"
        seen = check_ms(ledger, 0)[1]
        totals: list[float] = []
        checks: list[float] = []

        def with_checks() -> float:
            nonlocal seen
            wall, _ = timed(hook, event(work), env)
            spent, seen = check_ms(ledger, seen)
            totals.append(wall)
            checks.append(spent)
            return wall - spent

        overheads = series(args.calls, with_checks)
        totals, checks = totals[1:], checks[1:]
        base = statistics.median(bare)
        print(
            json.dumps(
                {
                    "calls": args.calls,
                    "target_ms": TARGET_MS,
                    "baseline_python_ms": summary(bare),
                    "baseline_import_click_ms": summary(click),
                    "no_check_ms": summary(no_check),
                    "with_checks": {
                        "total_ms": summary(totals),
                        "checks_ms": summary(checks),
                        "overhead_ms": summary(overheads),
                    },
                    "ratio_no_check_to_python": round(statistics.median(no_check) / base, 2),
                    "ratio_overhead_to_python": round(statistics.median(overheads) / base, 2),
                    "meets_target_no_check": statistics.median(no_check) <= TARGET_MS,
                    "meets_target_with_checks": statistics.median(overheads) <= TARGET_MS,
                    "load_average_1m": round(os.getloadavg()[0], 2),
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
