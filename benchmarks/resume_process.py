"""`groundskeeper resume` of a 1,000-task plan with one task left, as a process: this tree
beside a baseline tree in the same run (issue 27's resume row).

Each tree runs the whole plan once with its own code (`resume` as a process, scripted
workers, `test -e marker` checks, the signed ledger), so the state it resumes is its own
(ledger, record index, read sets). Then, `--repeat` times and alternately (the order flips
every round), its plan and control directory are put back as that full run left them, the
last task is reopened, and `python -m groundskeeper resume … --json` is timed: wall and CPU
(user + system of the child). The workdir is the same directory each time, so every file a
check read keeps its inode and times (a copy would change what a read set saw).

Prints one JSON document: per tree the runs, medians, the CPU, the tasks the resume ran, the
modules it imported that a resume of plain checks must not need; the ratios this/baseline;
python's own start; the load average before and after. The rollback witness warns on stderr
at each put-back ledger (a benchmark's doing, not a finding).

    .venv/bin/python benchmarks/resume_process.py --baseline DIR [--tasks 1000] [--repeat 5]

DIR is a tree holding `groundskeeper/` (and `prompts/`), e.g. main exported with
`git archive main groundskeeper prompts | tar -x -C DIR`, or /work/wt-speed-base.
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
from typing import Any

HERE = Path(__file__).resolve().parent.parent
SCRIPT = "workers:\n  '*': [{say: DONE}]\n"
# never imported by a resume of plain checks (tests/test_resume_speed.py holds the full list)
NEVER = ("langgraph", "langchain_core", "anthropic", "groundskeeper.acceptance.judge",
         "groundskeeper.acceptance.contracts", "groundskeeper.acceptance.evidence",
         "groundskeeper.acceptance.gates", "groundskeeper.supervisor.gating")  # fmt: skip
# the CLI as installed, and which of NEVER it imported (atexit: after sys.exit)
ENTRY = (
    "import atexit, sys\n"
    f"atexit.register(lambda: sys.stderr.write('\\nNEVER=' + ','.join(m for m in {NEVER!r}"
    " if m in sys.modules) + '\\n'))\n"
    "from groundskeeper.cli import main\n"
    "main()\n"
)


def make_plan(directory: Path, tasks: int) -> Path:
    lines = ["#+TITLE: resume benchmark", "#+TODO: TODO NEXT | DONE FAILED PARTIAL"]
    for n in range(tasks):
        lines += [f"* TODO Task {n}", "  :PROPERTIES:", f"  :ID: t{n}",
                  "  :done-when: test -e marker", "  :END:"]  # fmt: skip
    plan = directory / "plan.org"
    plan.write_text("\n".join(lines) + "\n")
    (directory / "marker").write_text("x\n")
    (directory / "w.yaml").write_text(SCRIPT)
    return plan


def reopen_last_task(plan: Path) -> None:
    head, _, tail = plan.read_text().rpartition("* DONE ")
    plan.write_text(head + "* TODO " + tail)


def env_for(tree: Path, home: Path) -> dict[str, str]:
    # As installed, Python finds its bytecode cached; this environment may forbid writing it
    # (PYTHONDONTWRITEBYTECODE), which would add compiling to every start.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tree)
    env["GROUNDSKEEPER_HOME"] = str(home)
    return env


def resume_command(plan: Path) -> list[str]:
    """The command, run in the plan's directory: `-c` puts the working directory first on
    sys.path, and a tree's own directory there would shadow the PYTHONPATH chosen."""
    return [sys.executable, "-c", ENTRY, "resume", str(plan),
            "--model", f"scripted:{plan.parent / 'w.yaml'}", "--json"]  # fmt: skip


class Side:
    """One tree: its workdir, the state its full run left, and its timed resumes."""

    def __init__(self, name: str, tree: Path, root: Path, home: Path, tasks: int) -> None:
        self.name, self.tree = name, tree
        self.env = env_for(tree, home)
        self.home = home
        self.work = root / name / "work"
        self.saved = root / name / "saved"
        self.work.mkdir(parents=True)
        self.plan = make_plan(self.work, tasks)
        self.walls: list[float] = []
        self.cpus: list[float] = []
        self.ran: list[int] = []
        self.never: set[str] = set()

    def full_run(self) -> float:
        started = time.perf_counter()
        done = subprocess.run(resume_command(self.plan), capture_output=True, text=True,
                              env=self.env, check=False, cwd=self.work)  # fmt: skip
        wall = time.perf_counter() - started
        report = json.loads(done.stdout)
        states = {t["state"] for t in report["tasks"]}
        assert done.returncode == 0 and states == {"DONE"}, (self.name, done.stderr[-2000:])
        control = self.work / ".groundskeeper"
        shutil.copytree(control, self.saved / "control")
        shutil.copy2(self.plan, self.saved / "plan.org")
        # the rollback witness saw the ledger as the full run left it: put back with it, or
        # the ledger put back is one the witness says was rolled back (and is refused)
        if (self.home / "witness").is_dir():
            shutil.copytree(self.home / "witness", self.saved / "witness")
        return wall

    def put_back(self) -> None:
        control = self.work / ".groundskeeper"
        shutil.rmtree(control)
        shutil.copytree(self.saved / "control", control)
        shutil.copy2(self.saved / "plan.org", self.plan)
        if (self.saved / "witness").is_dir():
            shutil.rmtree(self.home / "witness", ignore_errors=True)
            shutil.copytree(self.saved / "witness", self.home / "witness")
        reopen_last_task(self.plan)

    def resume(self, timed: bool = True) -> None:
        self.put_back()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(resume_command(self.plan), capture_output=True, text=True,
                              env=self.env, check=False, cwd=self.work)  # fmt: skip
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        report = json.loads(done.stdout)
        states = {t["state"] for t in report["tasks"]}
        assert done.returncode == 0 and states == {"DONE"}, (self.name, done.stderr[-2000:])
        if not timed:
            return
        self.walls.append(wall)
        self.cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        self.ran.append(sum(t["attempts"] > 0 for t in report["tasks"]))
        found = done.stderr.rsplit("NEVER=", 1)[-1].strip()
        self.never.update(m for m in found.split(",") if m)

    def summary(self) -> dict[str, Any]:
        return {
            "tree": str(self.tree),
            "wall_s": _stats(self.walls),
            "cpu_s": _stats(self.cpus),
            "tasks_run_per_resume": sorted(set(self.ran)),
            "never_modules_imported": sorted(self.never),
        }


def _stats(values: list[float]) -> dict[str, Any]:
    return {"runs": [round(v, 3) for v in values], "median": round(statistics.median(values), 3),
            "min": round(min(values), 3)}  # fmt: skip


def python_start(env: dict[str, str], cwd: Path, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, check=True, cwd=cwd)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--baseline", type=Path, required=True)
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="gk-resume-bench-") as tmp:
        root, home = Path(tmp), Path(tmp) / "home"
        home.mkdir()
        sides = [Side("baseline", args.baseline.resolve(), root, home, args.tasks),
                 Side("this", HERE, root, home, args.tasks)]  # fmt: skip
        # the sandbox's compiled module, cached in the home both share: made before any clock
        warm = [sys.executable, "-m", "groundskeeper", "sh", "--", "true"]
        subprocess.run(warm, env=sides[1].env, cwd=sides[1].work, check=True, capture_output=True)
        full = {side.name: round(side.full_run(), 2) for side in sides}
        for side in sides:  # each tree's bytecode written, its caches warm
            side.resume(timed=False)
        for n in range(args.repeat):
            for side in sides if n % 2 == 0 else reversed(sides):
                side.resume()
        start = python_start(sides[1].env, sides[1].work, args.repeat)
    base, this = sides[0].summary(), sides[1].summary()
    figures = {
        "tasks": args.tasks,
        "repeat": args.repeat,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "python_start_s": round(start, 3),
        "full_run_s": full,
        "baseline": base,
        "this": this,
        "ratio_wall": round(this["wall_s"]["median"] / base["wall_s"]["median"], 3),
        "ratio_cpu": round(this["cpu_s"]["median"] / base["cpu_s"]["median"], 3),
        "target_s": 0.3,
        "meets_target": this["wall_s"]["median"] <= 0.3,
    }
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
