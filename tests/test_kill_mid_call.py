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
from tests.test_paths_cli import _row, _sh, _write

# the checker program reads data/in.txt (its own reads are not read as comparisons): not
# protected from the start, so the worker's call rewrites it and the run's read-set backstop
# must catch it
CHECK = "test -s out.txt && python3 double.py"
DOUBLE = (
    'n = int(open("data/in.txt").read())\nassert open("out.txt").read().split() == [str(2 * n)]\n'
)


def _killed(tmp_path: Path, how: signal.Signals, also: str = "", check_reads: str = "") -> Path:
    """Run 1: the worker rewrites data/in.txt (42 → 1) and out.txt (and runs `also`), then
    sleeps; the whole process group is killed once the rewrite is on disk. `check_reads`: a
    file the check reads as well."""
    (tmp_path / "data").mkdir(exist_ok=True)
    (tmp_path / "data" / "in.txt").write_text("42\n")
    (tmp_path / "double.py").write_text(DOUBLE)
    check = CHECK + (f" && cat {check_reads} | wc -c" if check_reads else "")
    plan, script = setup(
        tmp_path,
        task("Double the number", "t", check, max_attempts="1")
        + "Read the number in data/in.txt and write twice it to out.txt.\n",
        "workers:\n  t:\n" + _sh(f"echo 1 > data/in.txt; echo 2 > out.txt{also}; sleep 60")
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


# -- what the refusal says to do works (issue 28): a restore frees what it provably restores --

FIXED = "workers:\n  t:\n" + _sh("echo 84 > out.txt") + "    - say: DONE\n"


def _resume_fixed(plan: Path, *extra: str, script: str = FIXED) -> dict[str, object]:
    fixed = plan.parent / "fixed.yaml"
    fixed.write_text(script)
    _result, doc = resume(plan, fixed, *extra)
    return _row(doc, "t")


#: the worker claims DONE on the killed call's work: the check passes on the changed input
SAYS_DONE = "workers:\n  t:\n    - say: DONE\n"


def test_writing_other_bytes_back_does_not_free_it(tmp_path: Path) -> None:
    plan = _killed(tmp_path, signal.SIGKILL)
    (tmp_path / "data" / "in.txt").write_text("42\n\n")  # not what it held
    row = _resume_fixed(plan)
    assert row["state"] == "FAILED", row
    assert "the check read `data/in.txt`" in str(row["reason"]), row
    # and no later resume frees it either
    assert _resume_fixed(plan)["state"] == "FAILED"


def test_restoring_the_input_before_the_resume_frees_it(tmp_path: Path) -> None:
    plan = _killed(tmp_path, signal.SIGKILL)
    (tmp_path / "data" / "in.txt").write_text("42\n")
    code, said = _audit(plan)
    assert (code, "`data/in.txt`" in said) == (1, False), said  # only out.txt is unexplained
    row = _resume_fixed(plan)
    assert row["state"] == "DONE", row


def test_restoring_the_input_after_the_refusal_frees_it(tmp_path: Path) -> None:
    plan = _killed(tmp_path, signal.SIGKILL)
    row = _resume_fixed(plan, script=SAYS_DONE)
    assert row["state"] == "FAILED", row
    reason = str(row["reason"])
    assert "changed by an unrecorded call of task t's worker (the run stopped mid-call):" in reason
    assert "restore it" in reason, reason
    (tmp_path / "data" / "in.txt").write_text("42\n")  # what the refusal asks for
    row = _resume_fixed(plan)
    assert row["state"] == "DONE", row


def test_an_input_too_large_to_hash_is_not_promised_a_restore(tmp_path: Path) -> None:
    """A file the run-start snapshot holds by size and time alone: the refusal names only
    `--accept-changes`, which works."""
    from groundskeeper.supervisor import run_paths

    big = tmp_path / "data" / "pad.bin"
    big.parent.mkdir()
    big.write_bytes(b"\0" * (run_paths.MAX_HASHED_BYTES + 1))
    plan = _killed(tmp_path, signal.SIGKILL, also="; : > data/pad.bin", check_reads="data/pad.bin")
    code, said = _audit(plan)
    assert code == 1 and "putting back `data/pad.bin` does not free it" in said, said
    assert "`data/in.txt` does not free" not in said, said
    row = _resume_fixed(plan, script=SAYS_DONE)
    assert row["state"] == "FAILED", row
    reason = str(row["reason"])
    pad = reason.split("input changed: the check read `data/pad.bin`", 1)[1]
    assert pad.endswith(
        "changed by an unrecorded call of task t's worker (the run stopped mid-call; what it"
        " held before is not sealed, only its size and time, which no restore brings back):"
        " once it holds what it should, resume with `--accept-changes`"
    ), reason
    assert "restore it" not in pad, reason
    assert _resume_fixed(plan, "--accept-changes", script=SAYS_DONE)["state"] == "DONE"


# -- a suspicion resolved: the killed run's write, rewritten whole by a sealed call ----------
#
# Two workers in flight when the run is killed; task b's call made out_b.txt and no sealed line
# says so. The next resume holds that file against both (either could have written it). A
# later `write_file` of the whole file is sealed: what the file holds then is its caller's, so
# the other in-flight task is no longer suspected of it (the SIGKILL resume test's flake: an
# honest sibling named the writer of a file its own task rewrote).

PAIR = "grep -qx ok out_b.txt"


def _killed_pair(tmp_path: Path, b_script: str, check: str = PAIR) -> Path:
    """Run 1: tasks a and b in flight; b's call writes out_b.txt (and whatever `b_script`
    does), both sleep; the process group is killed once `marker` is there."""
    plan, script = setup(
        tmp_path,
        task("Wait", "a", "test -e never.txt", max_attempts="1")
        + task("Write b", "b", check, max_attempts="1"),
        "workers:\n  a:\n" + _sh("sleep 60") + "    - say: DONE\n  b:\n" + _sh(b_script)
        + "    - say: DONE\n",
    )  # fmt: skip
    _kill_when(plan, script, tmp_path / "marker")
    return plan


def _kill_when(plan: Path, script: Path, marker: Path) -> None:
    command = [sys.executable, "-c", "from groundskeeper.cli import main; main()", "resume",
               str(plan), "--model", f"scripted:{script}"]  # fmt: skip
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert process.poll() is None and time.monotonic() < deadline, "never got there"
        time.sleep(0.05)
    time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    _, stderr = process.communicate(timeout=60)
    assert b"Traceback" not in stderr, stderr.decode()
    marker.unlink()


def _pair_resumed(plan: Path, b: str, a: str = "    - say: not yet\n") -> dict[str, object]:
    """Resumed one task at a time: a's worker (`a`), then b's (`b`)."""
    again = plan.parent / "again.yaml"
    again.write_text(f"workers:\n  a:\n{a}  b:\n{b}")
    _result, doc = resume(plan, again, "--max-parallel", "1")
    return _row(doc, "b")


WRITTEN_BACK = "echo no > out_b.txt; touch marker; sleep 60"


def test_the_other_in_flight_task_is_suspected_until_the_file_is_rewritten(tmp_path: Path) -> None:
    plan = _killed_pair(tmp_path, WRITTEN_BACK)
    (tmp_path / "out_b.txt").write_text("ok\n")  # as if b's call had written it well
    row = _pair_resumed(plan, "    - say: DONE\n")
    assert row["state"] == "FAILED", row
    assert "changed by an unrecorded call of task a, b's worker" in str(row["reason"])


def test_its_own_whole_rewrite_in_the_resume_frees_it(tmp_path: Path) -> None:
    plan = _killed_pair(tmp_path, WRITTEN_BACK)
    row = _pair_resumed(plan, _write("out_b.txt", "ok") + "    - say: DONE\n")
    assert row["state"] == "DONE", row


def test_a_sibling_s_whole_rewrite_is_held_against_the_task(tmp_path: Path) -> None:
    """The killed call changed data.txt, there before the work and the check's to read; a's
    sealed rewrite of it (its old bytes even) makes a its writer, which no task is entitled
    to be."""
    (tmp_path / "data.txt").write_text("42\n")
    plan = _killed_pair(
        tmp_path, "echo 1 > data.txt; echo ok > out_b.txt; touch marker; sleep 60",
        check=f"{PAIR} && grep -qx 42 data.txt",
    )  # fmt: skip
    a = _write("data.txt", "42") + "    - say: not yet\n"
    row = _pair_resumed(plan, "    - say: DONE\n", a=a)
    assert row["state"] == "FAILED", row
    assert "the check read `data.txt`" in str(row["reason"]), row
    assert "which the worker of task `a` changed" in str(row["reason"]), row


def test_an_edit_that_keeps_part_of_the_file_does_not_free_it(tmp_path: Path) -> None:
    plan = _killed_pair(tmp_path, "echo ok > out_b.txt; touch marker; sleep 60")
    row = _pair_resumed(plan, _sh("echo >> out_b.txt; sed -i '/^$/d' out_b.txt")
                        + "    - say: DONE\n")  # fmt: skip
    assert row["state"] == "FAILED", row


def test_its_own_rewrite_sealed_before_a_second_kill_frees_it_later(tmp_path: Path) -> None:
    """The rewrite is sealed in a run that is itself killed: the record read by the run after
    knows the file as b's own."""
    plan = _killed_pair(tmp_path, WRITTEN_BACK)
    script = tmp_path / "second.yaml"
    script.write_text(
        "workers:\n  a:\n" + _sh("sleep 60") + "    - say: DONE\n  b:\n"
        + _write("out_b.txt", "ok") + _sh("touch marker; sleep 60") + "    - say: DONE\n"
    )  # fmt: skip
    _kill_when(plan, script, tmp_path / "marker")
    assert (tmp_path / "out_b.txt").read_text() == "ok\n"
    row = _pair_resumed(plan, "    - say: DONE\n")
    assert row["state"] == "DONE", row


def test_a_file_made_by_a_stopped_call_is_no_in_flight_task_s_own(tmp_path: Path) -> None:
    """Two tasks in flight, one made a file in a call no line seals: which one is not known,
    so neither check passes on it, whichever task started first (the order a parallel run's
    tasks start in was the maker: CI saw b first and passed b on its own unsealed file)."""
    plan, script = setup(
        tmp_path,
        task("Write a", "a", PAIR, max_attempts="1") + task("Write b", "b", PAIR, max_attempts="1"),
        "workers:\n  a:\n" + _sh("sleep 60") + "    - say: DONE\n  b:\n" + _sh(WRITTEN_BACK)
        + "    - say: DONE\n",
    )  # fmt: skip
    _kill_when(plan, script, tmp_path / "marker")
    (tmp_path / "out_b.txt").write_text("ok\n")
    again = tmp_path / "again.yaml"
    again.write_text("workers:\n  a:\n    - say: DONE\n  b:\n    - say: DONE\n")
    _result, doc = resume(plan, again, "--max-parallel", "1")
    for task_id in ("a", "b"):
        row = _row(doc, task_id)
        assert row["state"] == "FAILED", row
        assert "changed by an unrecorded call of task" in str(row["reason"]), row
    # and the run after, which reads who made it from the record, holds it against a still
    _result, doc = resume(plan, again, "--max-parallel", "1")
    assert _row(doc, "a")["state"] == "FAILED", _row(doc, "a")
