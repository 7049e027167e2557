"""Eight processes appending to one ledger at once leave one valid chain (SPEC §9): the
file lock is held across read-tail, append, fsync and checkpoint rewrite."""

from __future__ import annotations

import json
import multiprocessing
import threading
from pathlib import Path
from typing import Any, Literal

import pytest

from groundskeeper.ledger import append_step, verify_ledger
from tests.test_ledger import KEY, fixed_clock

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
