"""A failed append never bricks a ledger (issue 27): a short or failed write is undone at once,
and a torn tail left by a crash is dropped at the next append and sealed as a `repair` step.
The faults are injected into the writer's own calls (a disk that fills mid-line, a flush that
fails, a checkpoint that cannot be written); tests/test_disk_full.py does it on a real disk."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from groundskeeper.record import ledger as ledger_module
from groundskeeper.record.ledger import Ledger, LedgerError
from tests.test_ledger import KEY, build_ledger, lines_of, verify


def _files(path: Path) -> tuple[bytes, bytes]:
    return path.read_bytes(), path.with_suffix(".checkpoint").read_bytes()


def _steps(path: Path) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (obj["run"], obj["step"], obj["body"])
        for obj in (json.loads(raw) for raw in path.read_bytes().splitlines())
    ]


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    return build_ledger(tmp_path / "plan")


def _half_write(real: Callable[[int, bytes], int]) -> Callable[[int, bytes], int]:
    def write(fd: int, data: bytes) -> int:  # a disk that fills up mid-line
        return real(fd, data[: len(data) // 2])

    return write


def test_a_short_write_is_undone_at_once_and_the_next_append_goes_on(
    ledger: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = Ledger(ledger.parent, KEY, "run-c", trusted=[])
    run.record("run-start", {})
    before = _files(ledger)
    with monkeypatch.context() as patch:
        patch.setattr(ledger_module.os, "write", _half_write(ledger_module.os.write))
        with pytest.raises(LedgerError, match=r"only \d+ of \d+ bytes were written"):
            run.record("task-start", {"task_id": "t"})
    assert _files(ledger) == before  # cut back to its last line, checkpoint untouched
    assert verify(ledger).ok
    run.record("task-start", {"task_id": "t"})
    assert [step for _, step, _ in _steps(ledger)[-2:]] == ["run-start", "task-start"]
    assert verify(ledger).ok


def test_a_failed_flush_is_undone(ledger: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = Ledger(ledger.parent, KEY, "run-c", trusted=[])
    run.record("run-start", {})
    before = _files(ledger)
    real = ledger_module.os.fdatasync
    calls: list[int] = []

    def failing_sync(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 1:  # the append's flush; the undo's own flush goes through
            raise OSError(5, "Input/output error")
        real(fd)

    with monkeypatch.context() as patch:
        patch.setattr(ledger_module.os, "fdatasync", failing_sync)
        with pytest.raises(LedgerError, match="Input/output error"):
            run.record("task-start", {"task_id": "t"})
    assert len(calls) == 2
    assert _files(ledger) == before
    run.record("task-start", {"task_id": "t"})
    assert verify(ledger).ok


def test_a_checkpoint_that_cannot_be_written_takes_its_lines_back(
    ledger: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = Ledger(ledger.parent, KEY, "run-c", trusted=[])
    run.record("run-start", {})
    before = _files(ledger)

    def no_space(*args: object, **kwargs: object) -> tuple[int, str]:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(ledger_module, "new_temporary", no_space)
        with pytest.raises(LedgerError, match="No space left on device"):
            run.record("task-start", {"task_id": "t"})
    assert _files(ledger) == before
    run.record("task-start", {"task_id": "t"})
    report = verify(ledger)
    assert (report.ok, report.lines) == (True, 14)


def test_the_checkpoints_temporary_file_is_new_private_and_never_a_link(ledger: Path) -> None:
    checkpoint = ledger.with_name("_steps.checkpoint")
    fd, name = ledger_module.new_temporary(checkpoint)
    os.close(fd)
    assert Path(name).parent == ledger.parent
    assert Path(name).name.startswith("_steps.checkpoint.")
    assert stat.S_IMODE(os.lstat(name).st_mode) == 0o600
    second = ledger_module.new_temporary(checkpoint)
    os.close(second[0])
    assert second[1] != name
    assert os.path.getsize(name) == 0


def test_a_torn_tail_left_by_a_crash_is_dropped_and_sealed_as_a_repair(ledger: Path) -> None:
    torn = b'{"body":{"run_id":"run-c","task_id":"gat'
    with ledger.open("ab") as f:  # as if the process died in the middle of its write
        f.write(torn)
    size = ledger.stat().st_size - len(torn)
    assert {f.code for f in verify(ledger).findings} == {"torn-line"}
    Ledger(ledger.parent, KEY, "run-c", trusted=[]).record("run-start", {"plan": "p"})
    steps = _steps(ledger)
    assert [(run, step) for run, step, _ in steps[-2:]] == [
        ("run-c", "run-start"),
        ("run-c", "repair"),
    ]
    assert steps[-1][2] == {
        "run_id": "run-c",
        "offset": size,
        "dropped_bytes": len(torn),
        "dropped_sha256": hashlib.sha256(torn).hexdigest(),
        "excerpt": torn.decode(),
    }
    report = verify(ledger)
    assert (report.ok, report.lines) == (True, 14)


def test_a_torn_tail_inside_a_run_is_repaired_before_the_runs_next_step(ledger: Path) -> None:
    run = Ledger(ledger.parent, KEY, "run-c", trusted=[])
    run.record("run-start", {})
    with ledger.open("ab") as f:
        f.write(b"\xff\xfe half a line")  # not even UTF-8
    ledger_module._forget_writers()
    run.record("task-start", {"task_id": "t"})
    steps = _steps(ledger)
    assert [step for _, step, _ in steps[-3:]] == ["run-start", "repair", "task-start"]
    assert steps[-2][2]["excerpt"] == "\ufffd\ufffd half a line"
    assert verify(ledger).ok


def test_a_torn_tail_over_a_stale_checkpoint_is_repaired(ledger: Path) -> None:
    checkpoint = ledger.with_suffix(".checkpoint")
    old = checkpoint.read_bytes()
    Ledger(ledger.parent, KEY, "run-c", trusted=[]).record("run-start", {})
    checkpoint.write_bytes(old)  # died before the rename ...
    with ledger.open("ab") as f:
        f.write(b'{"v":1,"run":"run-c"')  # ... of the append after
    ledger_module._forget_writers()
    Ledger(ledger.parent, KEY, "run-d", trusted=[]).record("run-start", {})
    assert [step for _, step, _ in _steps(ledger)[-3:]] == ["run-start", "run-start", "repair"]
    assert verify(ledger).ok


def test_a_cut_line_that_a_checkpoint_names_is_refused_not_repaired(ledger: Path) -> None:
    lines = lines_of(ledger)
    ledger.write_bytes(b"".join(lines[:-1]) + lines[-1][:-1])  # only the LF removed
    before = _files(ledger)
    with pytest.raises(LedgerError, match="covers 12 lines but the file has 11"):
        Ledger(ledger.parent, KEY, "run-c", trusted=[]).record("run-start", {})
    assert _files(ledger) == before


def test_a_torn_tail_after_a_forged_line_is_refused(ledger: Path) -> None:
    lines = lines_of(ledger)
    forged = json.loads(lines[-1])
    forged["seq"] = 13
    ledger.write_bytes(b"".join(lines) + json.dumps(forged).encode() + b"\n" + b'{"v"')
    before = _files(ledger)
    with pytest.raises(LedgerError, match="covers 12 lines but the file has 13"):
        Ledger(ledger.parent, KEY, "run-c", trusted=[]).record("run-start", {})
    assert _files(ledger) == before


def test_a_torn_first_line_is_dropped_and_the_ledger_begins_again(tmp_path: Path) -> None:
    ledger = tmp_path / "_steps.jsonl"
    ledger.write_bytes(b'{"body":{')
    Ledger(tmp_path, KEY, "run-a", trusted=[]).record("run-start", {})
    assert [step for _, step, _ in _steps(ledger)] == ["run-start", "repair"]
    assert verify(ledger).ok
