"""A run whose disk fills stops fail-closed, and once space is freed `resume` finishes the plan
and the ledger verifies; the same after a SIGKILL in the middle of a ledger append (issue 27).

The full disk is real where this process may mount a tmpfs (root, as on the project's
machines); the kill mid-append is injected into the writer's own `os.write` of a child
process, which writes half a line and kills itself."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from tests.test_cli_run import HEAD, control, keywords, steps, task

TASKS = 3


def _script(big: int) -> str:
    lines = ["workers:"]
    for n in range(TASKS):
        lines.append(f"  t{n}:")
        if n == 1 and big:
            # a worker that fills the disk: the file is cut short, and so is the next append
            fill = "{tool: write_file, input: {path: big.bin, content: " + "x" * big + "}}"
            lines.append(f"    - {fill}")
        lines.append(f"    - {{tool: write_file, input: {{path: out{n}.txt, content: ok}}}}")
        lines.append("    - say: DONE")
    return "\n".join(lines) + "\n"


def _plan(where: Path) -> Path:
    plan = where / "plan.org"
    # each title names its output: a SIGKILL can lose the line that sealed a write, and a
    # resumed worker writing its output again is then the work only when the text asks
    plan.write_text(HEAD + "".join(task(f"Write out{n}.txt", f"t{n}", f"grep -qx ok out{n}.txt")
                                   for n in range(TASKS)))  # fmt: skip
    return plan


def _verify(plan: Path) -> dict[str, object]:
    result = CliRunner().invoke(main, ["ledger", "verify", str(plan), "--json"])
    document: dict[str, object] = json.loads(result.stdout)
    assert result.exit_code == 0, result.output
    return document


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 600 KB tmpfs, or a skip naming why none could be mounted here."""
    where = tmp_path / "disk"
    where.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    ) if os.geteuid() == 0 and shutil.which("mount") else None  # fmt: skip
    if mounted is None or mounted.returncode != 0:
        why = "not root" if mounted is None else mounted.stderr.strip()
        pytest.skip(f"no tmpfs can be mounted here ({why}); tests/test_ledger_durability.py "
                    "injects the same faults into the writer")  # fmt: skip
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_run_whose_disk_fills_stops_and_resume_finishes_after_space_is_freed(
    small_disk: Path,
) -> None:
    plan = _plan(small_disk)
    full = small_disk.parent / "full.yaml"  # the scripts live outside the small disk
    full.write_text(_script(big=700_000))
    script = small_disk.parent / "workers.yaml"
    script.write_text(_script(big=0))
    first = CliRunner().invoke(main, ["resume", str(plan), "--model", f"scripted:{full}",
                                      "--max-parallel", "1", "--json"])  # fmt: skip
    assert first.exit_code == 1, first.output
    codes = {d["code"] for d in json.loads(first.stdout)["diagnostics"]}
    assert codes & {"R004", "R005", "R006"}, codes  # stopped fail-closed, named
    assert keywords(plan)["t1"] != "DONE"
    # the failed append was undone at once: whole lines only, verifying before any repair
    assert (control(plan) / "_steps.jsonl").read_bytes().endswith(b"\n")
    assert _verify(plan)["findings"] == []
    (small_disk / "big.bin").unlink(missing_ok=True)  # space freed
    final = CliRunner().invoke(main, ["resume", str(plan), "--model", f"scripted:{script}",
                                      "--json"])  # fmt: skip
    assert final.exit_code == 0, final.output
    assert set(keywords(plan).values()) == {"DONE"}
    assert _verify(plan)["findings"] == []


KILL_MID_APPEND = """
import os, signal, sys
from groundskeeper.record import ledger
count = int(sys.argv[1])
real = os.write
def write(fd, data):
    global count
    if data.startswith(b'{"body":'):  # a ledger line, not a checkpoint
        count -= 1
        if count == 0:
            real(fd, data[: len(data) // 2])
            os.kill(os.getpid(), signal.SIGKILL)
    return real(fd, data)
ledger.os = type(os)("os_with_a_kill")
ledger.os.__dict__.update(os.__dict__)
ledger.os.write = write
from groundskeeper.cli import main
sys.argv = ["groundskeeper", *sys.argv[2:]]
main()
"""


@pytest.mark.parametrize("nth", [2, 5, 9])
def test_a_sigkill_in_the_middle_of_an_append_then_resume(tmp_path: Path, nth: int) -> None:
    plan = _plan(tmp_path)
    script = tmp_path / "workers.yaml"
    script.write_text(_script(big=0))
    args = ["resume", str(plan), "--model", f"scripted:{script}", "--max-parallel", "1"]
    killed = subprocess.run([sys.executable, "-c", KILL_MID_APPEND, str(nth), *args],
                            capture_output=True, check=False)  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()
    assert not (control(plan) / "_steps.jsonl").read_bytes().endswith(b"\n")  # torn
    final = CliRunner().invoke(main, [*args, "--json"])
    assert final.exit_code == 0, final.output
    assert set(keywords(plan).values()) == {"DONE"}
    [repair] = steps(plan, "repair")
    assert repair["dropped_bytes"] > 0
    assert _verify(plan)["findings"] == []
