"""What a worker's `sh` call costs beyond the sandbox itself: hashing its command and output,
the content of the watched paths before and after (only for a task with a `changed` contract:
its paths, two here), and keeping the outputs by hash in the control directory (the runner does
that before sealing, for a task with evidence or contracts).

The sandbox is timed around each call and subtracted, so what remains is the tool's own cost.
Run it against an older checkout (PYTHONPATH) to compare: the script uses only
`Toolbox.call`, which every version has. Prints one JSON document.

    .venv/bin/python benchmarks/worker_sh_overhead.py [--calls 200] [--files 10,100,1000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from groundskeeper.acceptance.toolbox import Toolbox
from groundskeeper.sandbox import ShellResult, run


class TimedShell:
    def __init__(self) -> None:
        self.spent: list[float] = []

    def __call__(self, cmdline: str, **kwargs: Any) -> ShellResult:
        started = time.perf_counter()
        result = run(cmdline, **kwargs)
        self.spent.append(time.perf_counter() - started)
        return result


def measure(files: int, calls: int, watching: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for n in range(files):
            folder = root / f"d{n % 10}"
            folder.mkdir(exist_ok=True)
            (folder / f"f{n}.txt").write_text(f"{n}\n")
        plan = root / "plan.org"
        plan.write_text("* TODO t\n")
        shell = TimedShell()
        try:
            watch = ("out.txt", "d0/f0.txt") if watching else ()
            toolbox = Toolbox(root, plan, shell, watch=watch)  # type: ignore[call-arg,unused-ignore]
        except TypeError:  # an older checkout: no watching at all
            toolbox = Toolbox(root, plan, shell)
        toolbox.call("sh", {"cmd": "true"})  # warm: compile cache, first instance
        shell.spent.clear()
        overheads: list[float] = []
        store_ms: list[float] = []
        try:
            from groundskeeper.acceptance.attempt_record import OutputStore

            store: Any = OutputStore(root / ".groundskeeper" / "outputs")
        except ImportError:  # an older checkout has no output store
            store = None
        for n in range(calls):
            started = time.perf_counter()
            outcome = toolbox.call("sh", {"cmd": f"echo {n} > out.txt"})
            total = time.perf_counter() - started
            overheads.append(total - shell.spent[-1])
            if store is not None:
                started = time.perf_counter()
                for text in getattr(outcome, "texts", ()):
                    store.put(text)
                store_ms.append((time.perf_counter() - started) * 1000)
        return {
            "watching": watching,
            "files": files,
            "calls": calls,
            "sandbox_ms_median": round(statistics.median(shell.spent) * 1000, 3),
            "tool_overhead_ms_median": round(statistics.median(overheads) * 1000, 3),
            "output_store_ms_median": round(statistics.median(store_ms), 3) if store_ms else None,
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--files", default="10,100,1000")
    args = parser.parse_args()
    sizes = [int(s) for s in args.files.split(",")]
    runs = [measure(n, args.calls, flag) for flag in (False, True) for n in sizes]
    print(json.dumps({"runs": runs}, indent=2))


if __name__ == "__main__":
    main()
