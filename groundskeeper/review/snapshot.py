"""The ledger as a reviewer reads it: its two files read once, verified by the same code as
`ledger verify` (`record.ledger.verify_ledger`), and split into lines — so what the report
says was verified is byte for byte what it shows, whatever changes on disk meanwhile.

It owns that snapshot; it does not judge what the steps mean (`review.document`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundskeeper.record.control import CONTROL_ROOT, find_ledger
from groundskeeper.record.keys import PublicKey
from groundskeeper.record.ledger import Report, verify_ledger
from groundskeeper.record.ledger_format import (
    LEDGER_FILE,
    Checkpoint,
    LedgerUnreadable,
    checkpoint_path,
    decode_line,
    parse_checkpoint,
    read_if_present,
)
from groundskeeper.record.witness import Witness


@dataclass(frozen=True, slots=True)
class Line:
    """One complete line: its number, its bytes without the LF, the object it decodes to
    (None when it does not: the verifier has a finding for it) and the SHA-256 of its bytes
    with the LF — the hash the next line's `prev` names."""

    number: int
    raw: bytes
    obj: dict[str, Any] | None
    sha256: str

    @property
    def body(self) -> dict[str, Any]:
        body = self.obj.get("body") if self.obj is not None else None
        return body if isinstance(body, dict) else {}

    @property
    def step(self) -> str | None:
        step = self.obj.get("step") if self.obj is not None else None
        return step if isinstance(step, str) else None

    @property
    def seq(self) -> int | None:
        seq = self.obj.get("seq") if self.obj is not None else None
        return seq if type(seq) is int else None

    def text(self, name: str) -> str | None:
        value = self.obj.get(name) if self.obj is not None else None
        return value if isinstance(value, str) else None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A ledger read once: `report` is the verifier's verdict on exactly `data` and
    `checkpoint`; `plan_path` the plan whose control directory holds it, when it has one."""

    ledger_path: Path
    data: bytes
    checkpoint: bytes | None
    report: Report
    lines: tuple[Line, ...]
    plan_path: Path | None

    @property
    def ledger_sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def checkpoint_sha256(self) -> str | None:
        return hashlib.sha256(self.checkpoint).hexdigest() if self.checkpoint is not None else None

    @property
    def parsed_checkpoint(self) -> Checkpoint | None:
        if self.checkpoint is None:
            return None
        parsed = parse_checkpoint(self.checkpoint)
        return parsed if isinstance(parsed, Checkpoint) else None


def read_snapshot(
    path: Path, trusted: Iterable[PublicKey], *, witness_dir: Path | None = None
) -> Snapshot:
    """Read and verify the ledger `path` means (a plan file, a plan directory, a control
    directory or a `_steps.jsonl`), consulting the witness in `witness_dir` (default: the one
    in $GROUNDSKEEPER_HOME) without advancing it. LedgerUnreadable when there is none."""
    ledger_path = find_ledger(path)
    data = read_if_present(ledger_path, "ledger")
    if data is None:
        raise LedgerUnreadable(
            f"no ledger at {ledger_path} (a plan that has not run yet has none); "
            "pass a plan file, its directory or a _steps.jsonl"
        )
    checkpoint = read_if_present(checkpoint_path(ledger_path), "checkpoint")
    with tempfile.TemporaryDirectory(prefix="gk-report-") as private:
        copy = Path(private) / LEDGER_FILE
        copy.write_bytes(data)
        if checkpoint is not None:
            checkpoint_path(copy).write_bytes(checkpoint)
        report = verify_ledger(copy, list(trusted), witness=Witness(witness_dir))
    report = dataclasses.replace(report, path=ledger_path)
    return Snapshot(ledger_path, data, checkpoint, report, split_lines(data), _plan_of(ledger_path))


def split_lines(data: bytes) -> tuple[Line, ...]:
    """Every complete line (a torn tail is not a line, SPEC §1), decoded for display only."""
    lines = []
    for number, raw in enumerate(data.split(b"\n")[:-1], start=1):
        obj, code, _ = decode_line(raw)
        digest = hashlib.sha256(raw + b"\n").hexdigest()
        lines.append(Line(number, raw, obj if code is None else None, digest))
    return tuple(lines)


def _plan_of(ledger_path: Path) -> Path | None:
    """`<dir>/.groundskeeper/<plan name>/_steps.jsonl` belongs to `<dir>/<plan name>`."""
    control = ledger_path.parent
    if control.parent.name != CONTROL_ROOT:
        return None
    plan = control.parent.parent / control.name
    return plan if plan.is_file() else None
