"""A `groundskeeper resume` really killed (SIGKILL, SIGTERM to its process group) while its
worker's `sh` call has rewritten the check's input and sleeps: the write is never sealed, yet
the next resume holds it against the task in flight (adversary-13 F3) — FAILED, naming the
unrecorded call — and `audit` reports it before then; resuming with `--accept-changes` takes
the workdir as it is."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _sh

CHECK = "test -s out.txt && grep -qx \"$(awk '{print $1*2}' data/in.txt)\" out.txt"


def _killed(tmp_path: Path, how: signal.Signals) -> Path:
    """Run 1: the worker rewrites data/in.txt (42 → 1) and out.txt, then sleeps; the whole
    process group is killed once the rewrite is on disk."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "in.txt").write_text("42\n")
    plan, script = setup(
        tmp_path,
        task("Double the number", "t", CHECK, max_attempts="1")
        + "Read the number in data/in.txt and write twice it to out.txt.\n",
        "workers:\n  t:\n" + _sh("echo 1 > data/in.txt; echo 2 > out.txt; sleep 60")
        + "    - say: DONE\n",
    )  # fmt: skip
    command = [sys.executable, "-c", "from groundskeeper.cli import main; main()", "resume",
               str(plan), "--model", f"scripted:{script}"]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 60
    while (tmp_path / "data" / "in.txt").read_text() != "1\n":
        assert process.poll() is None and time.monotonic() < deadline, "the call never wrote"
        time.sleep(0.05)
    time.sleep(0.2)  # out.txt too
    os.killpg(process.pid, how)
    _, stderr = process.communicate(timeout=60)
    assert b"Traceback" not in stderr, stderr.decode()
    return plan


def _audit(plan: Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["audit", str(plan)])
    return result.exit_code, result.stdout


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_call_s_write_fails_the_resumed_task(tmp_path: Path, how: signal.Signals) -> None:
    plan = _killed(tmp_path, how)
    code, said = _audit(plan)
    if how == signal.SIGKILL:  # a SIGTERM seals the call it cuts short: its writes are listed
        assert code == 1, said
        assert ": unrecorded-change: run " in said, said
        assert "no sealed call explains: `data/in.txt`, `out.txt`;" in said, said
    done = tmp_path / "done.yaml"
    done.write_text("workers:\n  t:\n    - say: DONE\n")
    result, doc = resume(plan, done)
    row = _row(doc, "t")
    assert row["state"] == "FAILED", row
    reason = str(row["reason"])
    assert "the check read `data/in.txt`" in reason, reason
    if how == signal.SIGKILL:
        assert (
            "changed by an unrecorded call of task t's worker (the run stopped mid-call)" in reason
        )
    assert result.exit_code == 1


def test_accepting_the_changes_lets_it_pass(tmp_path: Path) -> None:
    plan = _killed(tmp_path, signal.SIGKILL)
    done = tmp_path / "done.yaml"
    done.write_text("workers:\n  t:\n    - say: DONE\n")
    result, doc = resume(plan, done, "--accept-changes")
    assert _row(doc, "t")["state"] == "DONE", _row(doc, "t")
    assert result.exit_code == 0
    assert _audit(plan)[0] == 0
