"""The agent hook's own time: `groundskeeper hook claude-code` from process start to its
answer, with the time its checks took taken out (target: median ≤ 150 ms over 20 calls).

Each call is a fresh process started with the command line `agent setup` writes (this
interpreter, `-I -m groundskeeper hook claude-code --plan … --require-seal`), answering a
`Stop` on a plan of two tasks, as an agent starts it. Two figures, since "checks excluded"
can be read two ways:

- `no_check`: a Stop on the same plan with both tasks DONE as a run made them, so no check
  runs at all: a Stop judges every DONE again, and each is kept by its sealed read set, which
  still holds on disk (as a run's final sweep keeps a carried DONE). The process starting,
  reading the event, verifying the ledger, comparing the plan with its seal, reading the two
  read sets back, sealing the claim and the decision and answering. The sandbox's runtime
  does not load.
- `with_checks`: both checks run in the sandbox (every call verifies the ledger, compares
  the plan and its inputs with the seal, runs both checks, seals six steps and answers).
  `overhead` is the total minus the checks' own time as the sealed `check` steps carry it
  (`duration_ms`, the sandbox run of each check line); loading wasmtime and the compiled
  sandbox module stays in the overhead.

- `long_ledger`: the no-check Stop again, on a ledger that already holds `--ledger-runs`
  PostToolUse runs (a session that made that many tool calls; `agent work` seals each one):
  what verifying the ledger on every call grows to.

The baselines are measured in the same run, the same way: a bare `python -I -c pass` and
`python -I -c "import click"` (what any click command pays before it does anything).
The ledger grows by one run per call, as in a session. Each series starts with one call
not counted (byte-compiling the package once, as an install does). Each figure is given as
wall time and as CPU time (user + system of the call's process, steadier than wall time on a
shared machine). The command line is read from the settings file `agent setup` writes, and
the plan and event are the hook tests' (`tests/agents/gated.py`).

- `before` (with `--before DIR`: a checkout of the code to compare with, e.g. main's): the
  no-check and with-checks Stops again, each call of this code followed by one of DIR's on a
  plan of its own, both started by the launcher `agent setup` writes (its interpreter check
  included) with the tree put first on sys.path: the same interpreter, the same load, the
  same start-up for both; `ratio` is this code's median over DIR's.

    .venv/bin/python benchmarks/hook_overhead.py [--calls 20] [--ledger-runs 500] [--before DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.agents.gated import (
    do_the_work,
    make_done_work,
    make_work,
    set_up_stop_hook,
    stop_event,
)

TARGET_MS = 150


def timed(command: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, float]:
    """(wall ms, CPU ms) of one allowed call."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(command, input=stdin, env=env, capture_output=True)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    if proc.returncode != 0 or proc.stdout.strip():
        raise SystemExit(f"{command[-1]!r} did not allow: {proc.stdout!r} {proc.stderr!r}")
    return wall, cpu


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


def series(calls: int, one: Callable[[], tuple[float, float]]) -> dict[str, dict[str, float]]:
    one()  # not counted: the first call byte-compiles what it imports
    runs = [one() for _ in range(calls)]
    return {"wall_ms": summary([w for w, _ in runs]), "cpu_ms": summary([c for _, c in runs])}


def gated_plan(root: Path, name: str, state: str, env: dict[str, str]) -> tuple[list[str], Path]:
    """A workdir with the plan, its work done, set up for Claude Code; the Stop hook's
    command line as `agent setup` wrote it."""
    if state == "DONE":  # DONEs the ledger backs: a DONE headline alone is judged again
        work = make_done_work(root / name, env)
    else:
        work = make_work(root / name, state)
        do_the_work(work)
    hook, assigned = set_up_stop_hook(work, env)
    assert assigned == {"GROUNDSKEEPER_HOME": env["GROUNDSKEEPER_HOME"]}, assigned
    return hook, work


def tool_runs(work: Path, runs: int) -> None:
    """`runs` PostToolUse runs sealed in the work's ledger, as `agent work` seals them."""
    from groundskeeper.record.keys import load_signing_key
    from groundskeeper.record.ledger import Ledger

    key = load_signing_key().key
    for n in range(runs):
        ledger = Ledger(work / ".groundskeeper" / "plan.org", key, f"hook-bench-{n:06d}")
        ledger.record("run-start", {"kind": "hook-tool", "agent": "claude-code"})
        ledger.stage("tool-call", {"tool": "Bash", "attempt": 0, "status": "ok"})
        ledger.stage("run-end", {"ok": True, "states": [], "tampers": 0})
        ledger.commit()


def from_tree(hook: list[str], tree: Path) -> list[str]:
    """The hook's command line, run from the code in `tree` instead of the installed one.

    The launcher (`python -I -S -B -c BOOTSTRAP MANIFEST DIGEST FORM hook …`) is kept whole,
    its check of the interpreter included; only `tree` goes first on `sys.path`, so its
    `groundskeeper` is the one `runpy` runs."""
    python, *flags, dash_c, bootstrap = hook[: hook.index("-c") + 2]
    assert (flags, dash_c) == (["-I", "-S", "-B"], "-c"), hook
    first = f"import sys; sys.path.insert(0, {str(tree)!r})\n"
    return [python, *flags, dash_c, first + bootstrap, *hook[hook.index("-c") + 2 :]]


class Checked:
    """A with-checks Stop's calls on one plan: each call's (overhead wall, CPU) with the
    checks' own time taken out, the totals and the checks' times kept."""

    def __init__(self, hook: list[str], work: Path, env: dict[str, str]) -> None:
        self.hook, self.work, self.env = hook, work, env
        self.ledger = work / ".groundskeeper" / "plan.org" / "_steps.jsonl"
        self.seen = check_ms(self.ledger, 0)[1]
        self.totals: list[tuple[float, float]] = []
        self.checks: list[float] = []

    def __call__(self) -> tuple[float, float]:
        wall, cpu = timed(self.hook, event(self.work), self.env)
        spent, self.seen = check_ms(self.ledger, self.seen)
        self.totals.append((wall, cpu))
        self.checks.append(spent)
        return wall - spent, cpu


def paired(
    calls: int, ours: Callable[[], tuple[float, float]], theirs: Callable[[], tuple[float, float]]
) -> dict[str, object]:
    """Both series, call by call in turn (the machine's load falls on both alike)."""
    ours(), theirs()  # not counted: byte-compiling
    mine: list[tuple[float, float]] = []
    other: list[tuple[float, float]] = []
    for _ in range(calls):
        mine.append(ours())
        other.append(theirs())
    result: dict[str, object] = {}
    for label, runs in (("this", mine), ("before", other)):
        result[label] = {
            "wall_ms": summary([w for w, _ in runs]),
            "cpu_ms": summary([c for _, c in runs]),
        }
    for kind, index in (("wall", 0), ("cpu", 1)):
        a = statistics.median(r[index] for r in mine)
        b = statistics.median(r[index] for r in other)
        result[f"ratio_{kind}"] = round(a / b, 3)
    return result


def compare(root: Path, before: Path, calls: int, env: dict[str, str]) -> dict[str, object]:
    """This code against `before`, the same way, in turn (see the module's `before`)."""
    ours_tree = Path(__file__).resolve().parent.parent
    found: dict[str, object] = {"dir": str(before)}
    hook_a, work_a = gated_plan(root, "cmp-done-this", "DONE", env)
    hook_b, work_b = gated_plan(root, "cmp-done-before", "DONE", env)
    found["no_check"] = paired(
        calls,
        lambda: timed(from_tree(hook_a, ours_tree), event(work_a), env),
        lambda: timed(from_tree(hook_b, before), event(work_b), env),
    )
    hook_a, work_a = gated_plan(root, "cmp-work-this", "TODO", env)
    hook_b, work_b = gated_plan(root, "cmp-work-before", "TODO", env)
    ours = Checked(from_tree(hook_a, ours_tree), work_a, env)
    theirs = Checked(from_tree(hook_b, before), work_b, env)
    found["with_checks_overhead"] = paired(calls, ours, theirs)
    found["with_checks_checks_ms"] = {
        "this": summary(ours.checks[1:]),
        "before": summary(theirs.checks[1:]),
    }
    return found


def event(work: Path) -> bytes:
    return json.dumps(stop_event(work, session_id="bench", last_assistant_message="done")).encode()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--ledger-runs", type=int, default=500)
    parser.add_argument("--before", type=Path, help="a checkout to compare with (main's)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        env = {**os.environ, "GROUNDSKEEPER_HOME": str(root / "home")}
        os.environ["GROUNDSKEEPER_HOME"] = env["GROUNDSKEEPER_HOME"]
        python = [sys.executable, "-I", "-c"]
        bare = series(args.calls, lambda: timed([*python, "pass"], b"", env))
        click = series(args.calls, lambda: timed([*python, "import click"], b"", env))

        done_hook, done_work = gated_plan(root, "done", "DONE", env)
        no_check = series(args.calls, lambda: timed(done_hook, event(done_work), env))
        long_hook, long_work = gated_plan(root, "long", "DONE", env)
        tool_runs(long_work, args.ledger_runs)
        long_ledger = series(args.calls, lambda: timed(long_hook, event(long_work), env))
        hook, work = gated_plan(root, "work", "TODO", env)
        with_checks = Checked(hook, work, env)
        overheads = series(args.calls, with_checks)
        totals, checks = with_checks.totals[1:], with_checks.checks[1:]
        before = compare(root, args.before, args.calls, env) if args.before else None
        base = bare["wall_ms"]["median"]
        no_check_ms = no_check["wall_ms"]["median"]
        overhead_ms = overheads["wall_ms"]["median"]
        print(
            json.dumps(
                {
                    "calls": args.calls,
                    "target_ms": TARGET_MS,
                    "baseline_python": bare,
                    "baseline_import_click": click,
                    "no_check": no_check,
                    "long_ledger": {"runs_before": args.ledger_runs, **long_ledger},
                    "with_checks": {
                        "total_wall_ms": summary([w for w, _ in totals]),
                        "checks_ms": summary(checks),
                        "overhead_wall_ms": overheads["wall_ms"],
                        "cpu_ms": overheads["cpu_ms"],
                    },
                    "ratio_no_check_to_python": round(no_check_ms / base, 2),
                    "ratio_overhead_to_python": round(overhead_ms / base, 2),
                    "meets_target_no_check": no_check_ms <= TARGET_MS,
                    "meets_target_with_checks": overhead_ms <= TARGET_MS,
                    "load_average_1m": round(os.getloadavg()[0], 2),
                    **({"before": before} if before else {}),
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
