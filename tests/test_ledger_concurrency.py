"""Eight processes appending to one ledger at once leave one valid chain (SPEC §9): the
file lock is held across read-tail, append, fsync and checkpoint rewrite. Threads of one
process share commits (group commit), and each still returns only once its line is durable."""

from __future__ import annotations

import json
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Literal

import pytest

from groundskeeper.record.ledger import AppendedLine, LedgerError, append_step, verify_ledger
from tests.test_ledger import KEY, OTHER, fixed_clock

WORKERS = 8
PER_WORKER = 15


def _append_many(run_dir: str, worker: int, start: multiprocessing.synchronize.Event) -> None:
    start.wait()
    for n in range(PER_WORKER):
        append_step(Path(run_dir), KEY, "run-a", "tool-call", {"worker": worker, "n": n})


def _assert_one_chain(run_dir: Path, expected_lines: int) -> None:
    report = verify_ledger(run_dir, [KEY.public])
    assert report.findings == ()
    assert report.lines == expected_lines
    lines = [json.loads(line) for line in (run_dir / "_steps.jsonl").read_bytes().splitlines()]
    assert [line["seq"] for line in lines] == list(range(1, expected_lines + 1))
    seen = sorted((line["body"]["worker"], line["body"]["n"]) for line in lines[1:])
    assert seen == [(w, n) for w in range(WORKERS) for n in range(PER_WORKER)]


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_eight_processes_append_one_valid_chain(
    tmp_path: Path, method: Literal["spawn", "fork"]
) -> None:
    # The parent writes first, so under fork the children inherit a cached writer and its
    # lock file: they must drop both, or flock would not exclude them from each other.
    append_step(tmp_path, KEY, "run-a", "run-start", {}, clock=fixed_clock())
    context: Any = multiprocessing.get_context(method)  # typeshed's BaseContext lacks Process
    start = context.Event()
    workers = [
        context.Process(target=_append_many, args=(str(tmp_path), w, start)) for w in range(WORKERS)
    ]
    for process in workers:
        process.start()
    start.set()
    for process in workers:
        process.join(timeout=120)
    assert [p.exitcode for p in workers] == [0] * WORKERS
    _assert_one_chain(tmp_path, 1 + WORKERS * PER_WORKER)


def test_eight_threads_append_one_valid_chain(tmp_path: Path) -> None:
    append_step(tmp_path, KEY, "run-a", "run-start", {})
    start = threading.Event()
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            _append_many(str(tmp_path), worker, start)  # type: ignore[arg-type]
        except BaseException as exc:  # surfaced by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(WORKERS)]
    for thread in threads:
        thread.start()
    start.set()
    for thread in threads:
        thread.join()
    assert errors == []
    _assert_one_chain(tmp_path, 1 + WORKERS * PER_WORKER)


class SlowDisk:
    """fdatasync that takes 50 ms and remembers how many bytes of the ledger each call made
    durable: while one commit syncs, the other threads' appends queue up behind it."""

    def __init__(self, ledger: Path) -> None:
        self.ledger = ledger
        self.durable_sizes: list[int] = []
        self._real = os.fdatasync

    def __call__(self, fd: Any) -> None:
        time.sleep(0.05)
        self._real(fd)
        self.durable_sizes.append(self.ledger.stat().st_size)


def _race(jobs: list[Callable[[], AppendedLine]]) -> list[AppendedLine | BaseException]:
    """Run every job in its own thread, released at once; each one's result or exception."""
    start = threading.Event()
    results: list[AppendedLine | BaseException] = [RuntimeError("did not run")] * len(jobs)

    def work(index: int) -> None:
        start.wait()
        try:
            results[index] = jobs[index]()
        except BaseException as exc:  # returned to the test, which asserts on it
            results[index] = exc

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(jobs))]
    for thread in threads:
        thread.start()
    start.set()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "an append never returned"
    return results


def _checkpoint_size(run_dir: Path) -> int:
    return int((run_dir / "_steps.checkpoint").read_text(encoding="utf-8").split("\n")[1])


def test_threads_appending_at_once_share_fsyncs_and_each_line_is_durable_on_return(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    append_step(tmp_path, KEY, "run-a", "run-start", {})
    disk = SlowDisk(tmp_path / "_steps.jsonl")
    monkeypatch.setattr(os, "fdatasync", disk)
    seen_on_return: dict[int, tuple[int, int]] = {}

    def job(worker: int) -> Callable[[], AppendedLine]:
        def append() -> AppendedLine:
            appended = append_step(tmp_path, KEY, "run-a", "tool-call", {"worker": worker})
            # What is on disk the moment the append returns: the synced size and checkpoint.
            seen_on_return[worker] = (max(disk.durable_sizes), _checkpoint_size(tmp_path))
            return appended

        return append

    results = _race([job(w) for w in range(WORKERS)])
    monkeypatch.undo()
    appended = [r for r in results if isinstance(r, AppendedLine)]
    assert len(appended) == WORKERS
    assert sorted(a.seq for a in appended) == list(range(2, 2 + WORKERS))
    # Eight appends, far fewer syncs: the first commit syncs alone, the rest join the next.
    assert 2 <= len(disk.durable_sizes) <= 5
    lines = (tmp_path / "_steps.jsonl").read_bytes().splitlines(keepends=True)
    offsets = [sum(len(line) for line in lines[:n]) for n in range(len(lines) + 1)]
    for worker, result in enumerate(results):
        assert isinstance(result, AppendedLine)
        line = json.loads(lines[result.seq - 1])
        assert (line["seq"], line["body"]) == (result.seq, {"worker": worker})
        synced, checkpointed = seen_on_return[worker]
        assert synced >= offsets[result.seq]
        assert checkpointed >= result.seq
        assert result.head.size >= result.seq
    _assert_chain_of(tmp_path, 1 + WORKERS, [KEY])


def test_a_commit_has_one_signer_and_each_line_keeps_its_own_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    append_step(tmp_path, KEY, "run-a", "run-start", {})
    monkeypatch.setattr(os, "fdatasync", SlowDisk(tmp_path / "_steps.jsonl"))
    signers = [KEY, OTHER] * 4
    results = _race(
        [
            partial(
                append_step,
                tmp_path,
                key,
                "run-a",
                "tool-call",
                {"n": n},
                trusted=[KEY.public, OTHER.public],
            )
            for n, key in enumerate(signers)
        ]
    )
    monkeypatch.undo()
    assert all(isinstance(r, AppendedLine) for r in results)
    for line in (tmp_path / "_steps.jsonl").read_bytes().splitlines()[1:]:
        obj = json.loads(line)
        assert obj["key"] == signers[obj["body"]["n"]].public.key_id
    _assert_chain_of(tmp_path, 1 + len(signers), [KEY, OTHER])


def test_a_line_too_long_fails_alone_and_the_rest_of_its_commit_lands(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    append_step(tmp_path, KEY, "run-a", "run-start", {})
    monkeypatch.setattr(os, "fdatasync", SlowDisk(tmp_path / "_steps.jsonl"))
    bodies = [{"n": n, "text": "x" * (70_000 if n == 3 else 10)} for n in range(6)]
    results = _race(
        [partial(append_step, tmp_path, KEY, "run-a", "claim", body) for body in bodies]
    )
    monkeypatch.undo()
    assert isinstance(results[3], LedgerError)
    assert "exceeds 65536" in str(results[3])
    assert sum(isinstance(r, AppendedLine) for r in results) == 5
    _assert_chain_of(tmp_path, 6, [KEY])


def test_a_failed_sync_fails_every_append_of_its_commit_and_none_hangs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    append_step(tmp_path, KEY, "run-a", "run-start", {})

    def broken_disk(fd: Any) -> None:
        time.sleep(0.05)
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", broken_disk)
    results = _race(
        [partial(append_step, tmp_path, KEY, "run-a", "claim", {"n": n}) for n in range(6)]
    )
    monkeypatch.undo()
    assert all(isinstance(r, LedgerError) for r in results), results
    assert all("Input/output error" in str(r) for r in results)


def _assert_chain_of(run_dir: Path, lines: int, keys: list[Any]) -> None:
    report = verify_ledger(run_dir, [key.public for key in keys])
    assert (report.findings, report.lines) == ((), lines)
