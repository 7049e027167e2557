"""The ledger writer's tail index (`_steps.tail`, SPEC §1 and §9 step 1): an open of the ledger
takes the Merkle state of its first bytes from the index instead of hashing every line into
the tree — and only when the index is this ledger's: signed by a trusted key, bound to the
SHA-256 of those very bytes, and giving the root the checkpoint (and the witness) sign. A
stale, tampered or foreign index is never trusted: every line is read, as without one, so
each refusal of a damaged ledger stands."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from groundskeeper.record import ledger as ledger_module
from groundskeeper.record.keys import SigningKey
from groundskeeper.record.ledger import (
    TAIL_FILE,
    LedgerError,
    append_step,
    save_tail_index,
    verify_ledger,
)
from groundskeeper.record.signed_file import write_signed

KEY = SigningKey.from_seed(hashlib.sha256(b"groundskeeper test key A").digest())
OTHER = SigningKey.from_seed(hashlib.sha256(b"groundskeeper test key B").digest())
RUN = "20250102T030405Z-aaaaaaaaaaaa"


def _clock() -> Any:
    moments: Iterator[int] = iter(range(10**6))
    base = datetime(2025, 1, 2, 3, 4, 5, tzinfo=UTC)
    return lambda: base + timedelta(milliseconds=250 * next(moments))


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    """A ledger of 12 lines whose writer left a tail index at its end, and no writer cached."""
    clock = _clock()
    run_start = {"plan": "plan.org", "plan_sha256": "ab" * 32, "checks": [], "model": "m",
                 "versions": {"groundskeeper": "0.1.0"}}  # fmt: skip
    append_step(tmp_path, KEY, RUN, "run-start", run_start, trusted=[KEY.public], clock=clock)
    for n in range(11):
        body = {"task_id": f"t{n}", "attempt": 1}
        append_step(tmp_path, KEY, RUN, "task-start", body, trusted=[KEY.public], clock=clock)
    path = tmp_path / "_steps.jsonl"
    data = path.read_bytes()
    save_tail_index(path, len(data), hashlib.sha256(data).hexdigest(), KEY)
    assert (tmp_path / TAIL_FILE).is_file()
    ledger_module._forget_writers()  # as a new process finds it
    return path


@pytest.fixture
def grown_from(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The line counts each Merkle tree of an open was grown from (0: every line read)."""
    starts: list[int] = []
    grow = ledger_module._grow

    def spy(tree: Any, data: bytes, start: int, *sizes: int) -> Any:
        starts.append(tree.size)
        return grow(tree, data, start, *sizes)

    monkeypatch.setattr(ledger_module, "_grow", spy)
    return starts


def _append(path: Path) -> None:
    body = {"task_id": "next", "attempt": 1}
    append_step(path, KEY, RUN, "task-start", body, trusted=[KEY.public], clock=_clock())


def _index(path: Path) -> dict[str, Any]:
    signed: dict[str, Any] = json.loads(path.with_name(TAIL_FILE).read_bytes())
    return signed


def test_an_open_takes_the_tree_from_the_index_and_the_ledger_still_verifies(
    ledger: Path, grown_from: list[int]
) -> None:
    _append(ledger)
    assert grown_from == [12]  # not one of the 12 indexed lines hashed into the tree again
    report = verify_ledger(ledger, [KEY.public])
    assert report.ok and report.lines == 13


def test_the_index_is_bound_to_the_bytes_of_the_ledger(ledger: Path) -> None:
    data = ledger.read_bytes()
    signed = _index(ledger)
    assert signed["bytes"] == len(data)
    assert signed["sha256"] == hashlib.sha256(data).hexdigest()
    assert signed["lines"] == 12 and signed["key"] == KEY.public.key_id
    assert len(signed["stack"]) == bin(12).count("1")


def test_a_line_altered_under_the_index_is_refused_as_without_one(
    ledger: Path, grown_from: list[int]
) -> None:
    data = ledger.read_bytes()
    altered = data.replace(b'"task_id":"t5"', b'"task_id":"t6"', 1)
    assert altered != data and len(altered) == len(data)
    ledger.write_bytes(altered)  # the checkpoint and the index are left as they were
    with pytest.raises(LedgerError, match="a line was altered"):
        _append(ledger)
    assert grown_from == [0]  # the index did not match the bytes: every line was read
    assert ledger.read_bytes() == altered


def test_an_index_whose_root_is_not_the_checkpoint_is_re_derived_not_trusted(
    ledger: Path, grown_from: list[int]
) -> None:
    # signed with the plan's key and bound to the right bytes, but holding another state
    # (an index of a checkpoint that is not the one on disk): the open reads every line
    signed = _index(ledger)
    del signed["sig"]
    signed["stack"] = [base64.b64encode(bytes(32)).decode()] * len(signed["stack"])
    write_signed(ledger.with_name(TAIL_FILE), signed, KEY, ledger_module._TAIL_CONTEXT, "t")
    _append(ledger)  # not refused: the lines match their checkpoint
    assert grown_from == [12, 0]
    assert verify_ledger(ledger, [KEY.public]).ok


@pytest.mark.parametrize("how", ["flipped", "other-key", "torn"])
def test_a_tampered_index_is_ignored(ledger: Path, grown_from: list[int], how: str) -> None:
    index = ledger.with_name(TAIL_FILE)
    signed = _index(ledger)
    if how == "flipped":
        signed["lines"] = 11
        index.write_text(json.dumps(signed))  # its signature no longer holds
    elif how == "other-key":
        del signed["sig"]
        signed["key"] = OTHER.public.key_id
        write_signed(index, signed, OTHER, ledger_module._TAIL_CONTEXT, "t")
    else:
        index.write_bytes(index.read_bytes()[:40])
    _append(ledger)
    assert grown_from == [0]
    assert verify_ledger(ledger, [KEY.public]).ok


def test_a_ledger_cut_under_the_index_is_refused(ledger: Path, grown_from: list[int]) -> None:
    data = ledger.read_bytes()
    ledger.write_bytes(data[: data.rfind(b"\n", 0, len(data) - 1) + 1])  # the last line gone
    with pytest.raises(LedgerError, match="covers 12 lines but the file has 11"):
        _append(ledger)
    assert grown_from == [0]


def test_no_index_is_written_for_bytes_the_writer_did_not_leave(tmp_path: Path) -> None:
    clock = _clock()
    run_start = {"plan": "p", "plan_sha256": "ab" * 32, "checks": [], "model": "m",
                 "versions": {"groundskeeper": "0.1.0"}}  # fmt: skip
    append_step(tmp_path, KEY, RUN, "run-start", run_start, trusted=[KEY.public], clock=clock)
    path = tmp_path / "_steps.jsonl"
    data = path.read_bytes()
    path.write_bytes(data)  # rewritten since the writer's commit (same bytes, a new ctime)
    save_tail_index(path, len(data), hashlib.sha256(data).hexdigest(), KEY)
    assert not (tmp_path / TAIL_FILE).exists()
