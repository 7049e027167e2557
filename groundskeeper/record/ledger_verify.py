"""Verifying a ledger (ledger/SPEC.md §4–§8, §12): every line, the checkpoint and, when one
is given, the witness's entry are checked and every finding is reported, never just the
first. Reading only; nothing here writes (advancing the witness is `ledger.advance_witness`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from groundskeeper.fastclass import fastclass, field
from groundskeeper.record.control import find_ledger
from groundskeeper.record.keys import PublicKey
from groundskeeper.record.ledger_format import (
    GENESIS_PREV,
    Checkpoint,
    LedgerUnreadable,
    MerkleTree,
    checkpoint_path,
    checkpoint_signer,
    decode_canonical_base64,
    decode_line,
    field_problem,
    ledger_origin,
    parse_checkpoint,
    read_if_present,
    signed_message,
)
from groundskeeper.record.witness import Witness, WitnessEntry, WitnessError


@fastclass(frozen=True)
class Finding:
    """One thing wrong with a ledger; `line`/`seq` are None for file-level findings."""

    line: int | None
    seq: int | None
    code: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "seq": self.seq, "code": self.code, "reason": self.reason}


@fastclass(frozen=True)
class Head:
    """The number of lines and their hex Merkle root: what a checkpoint signs."""

    size: int
    root: str

    def to_json(self) -> dict[str, Any]:
        return {"size": self.size, "root": self.root}


@fastclass(frozen=True)
class WitnessCheck:
    """What the witness at `directory` held for the ledger: `entry` is None when it had no
    entry (nothing was consulted) or its entry could not be read (a finding says so)."""

    directory: Path
    entry: WitnessEntry | None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.directory),
            "consulted": self.entry is not None,
            "size": self.entry.size if self.entry is not None else None,
            "root": self.entry.root.hex() if self.entry is not None else None,
        }


@fastclass(frozen=True)
class Report:
    """The result of `verify_ledger`: clean only when there is no finding at all.

    `witness` is None when no witness was given; `signed` is the checkpoint as a witness
    entry when a trusted key signed it and it covers the lines or a prefix of them.
    """

    path: Path
    lines: int
    runs: int
    head: Head
    findings: tuple[Finding, ...]
    witness: WitnessCheck | None = None
    signed: WitnessEntry | None = None

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        witness = (
            self.witness.to_json()
            if self.witness is not None
            else {"path": None, "consulted": False, "size": None, "root": None}
        )
        return {
            "ok": self.ok,
            "lines": self.lines,
            "runs": self.runs,
            "head": self.head.to_json(),
            "findings": [f.to_json() for f in self.findings],
            "witness": witness,
        }


def verify_ledger(
    path: Path,
    trusted: Iterable[PublicKey],
    *,
    expect_size: int | None = None,
    expect_root: str | None = None,
    witness: Witness | None = None,
) -> Report:
    """Check every line and the checkpoint of a ledger; report every finding (SPEC §8).
    With a `witness`, also compare the ledger with the head it has on record (SPEC §12).

    `path` is a plan directory or a ledger file; LedgerUnreadable if it cannot be read.
    """
    ledger_path = find_ledger(path)
    data = read_if_present(ledger_path, "ledger")
    if data is None:
        raise LedgerUnreadable(
            f"no ledger at {ledger_path} (a plan that has not run yet has none); "
            "pass a plan file, its directory or a _steps.jsonl"
        )
    checkpoint_data = read_if_present(checkpoint_path(ledger_path), "checkpoint")
    return _verify(
        ledger_path,
        data,
        checkpoint_data,
        trusted,
        LineState(),
        expect_size=expect_size,
        expect_root=expect_root,
        witness=witness,
    )[0]


@fastclass
class LineState:
    """What verifying a ledger's lines in order carries from one line to the next: after the
    first `tree.size` lines, all of which verified, the next line is checked exactly as it
    would be with every line before it checked again (`verify_after`)."""

    tree: MerkleTree = field(default_factory=MerkleTree)
    prev: str = GENESIS_PREV
    runs: int = 0
    current_run: str | None = None
    seen_runs: set[str] = field(default_factory=set)

    def to_json(self) -> dict[str, Any]:
        return {
            "size": self.tree.size,
            "stack": [node.hex() for node in self.tree.stack],
            "prev": self.prev,
            "runs": self.runs,
            "current_run": self.current_run,
            "seen_runs": sorted(self.seen_runs),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LineState:
        """The state `to_json` gave; ValueError/TypeError/KeyError if it is not one."""
        tree = MerkleTree.from_stack(int(data["size"]), [bytes.fromhex(n) for n in data["stack"]])
        prev, runs, current = data["prev"], data["runs"], data["current_run"]
        seen = data["seen_runs"]
        if (
            not isinstance(prev, str)
            or len(prev) != 64
            or type(runs) is not int
            or not (current is None or isinstance(current, str))
            or not isinstance(seen, list)
            or not all(isinstance(r, str) for r in seen)
            or (tree.size > 0) != (current is not None)
        ):
            raise ValueError("not a verifier state")
        return cls(tree, prev, runs, current, set(seen))


def verify_after(
    ledger_path: Path,
    data: bytes,
    trusted: Iterable[PublicKey],
    state: LineState,
) -> tuple[Report, LineState]:
    """`verify_ledger` of the ledger whose bytes are `data`, its first `state.tree.size`
    lines taken as verified in `state` (the caller binds them to `data`'s first bytes), and
    the state after its last complete line. No witness is consulted. A checkpoint behind
    those lines cannot be told stale from wrong without them: LedgerUnreadable, for the
    caller to verify every line instead."""
    checkpoint_data = read_if_present(checkpoint_path(ledger_path), "checkpoint")
    checkpoint = parse_checkpoint(checkpoint_data) if checkpoint_data is not None else None
    if isinstance(checkpoint, Checkpoint) and 0 < checkpoint.size < state.tree.size:
        raise LedgerUnreadable("the checkpoint is behind the verified lines")
    return _verify(ledger_path, data, checkpoint_data, trusted, state)


def _verify(
    ledger_path: Path,
    data: bytes,
    checkpoint_data: bytes | None,
    trusted: Iterable[PublicKey],
    state: LineState,
    *,
    expect_size: int | None = None,
    expect_root: str | None = None,
    witness: Witness | None = None,
) -> tuple[Report, LineState]:
    keys = {key.key_id: key for key in trusted}
    findings: list[Finding | None] = []
    pending: list[tuple[int, int, int, _SignatureJob]] = []

    checkpoint = parse_checkpoint(checkpoint_data) if checkpoint_data is not None else None
    prefix_size = checkpoint.size if isinstance(checkpoint, Checkpoint) else -1

    pieces = data.split(b"\n")
    torn, complete = pieces[-1], pieces[:-1]
    origin = ledger_origin(complete[0] + b"\n") if complete else ""
    witnessed, witness_problem = _witness_entry(witness, origin)
    witness_size = witnessed.size if witnessed is not None else -1
    witness_root = b""
    tree = MerkleTree.from_stack(state.tree.size, list(state.tree.stack))
    start = tree.size
    prefix_root = tree.root() if start and start == prefix_size else b""
    prev = state.prev
    expected = start + 1
    runs = state.runs
    current_run = state.current_run
    seen_runs = set(state.seen_runs)

    for number, raw in enumerate(complete[start:], start=start + 1):
        line_bytes = raw + b"\n"
        tree.append(line_bytes)
        if tree.size == prefix_size:
            prefix_root = tree.root()
        if tree.size == witness_size:
            witness_root = tree.root()
        obj, code, reason = decode_line(raw)
        this_prev, prev = prev, hashlib.sha256(line_bytes).hexdigest()
        seq = obj.get("seq") if obj is not None and type(obj.get("seq")) is int else None
        if code is None and obj is not None:
            problem = field_problem(obj)
            if problem is not None:
                code, reason = "bad-field", problem
        if code is not None or obj is None:
            findings.append(Finding(number, seq, code or "bad-json", reason))
            expected += 1
            continue
        assert seq is not None  # _field_problem checked it
        if seq != expected:
            findings.append(
                Finding(number, seq, "seq-mismatch", f"seq {seq} where {expected} was expected")
            )
        expected = max(expected, seq + 1)
        if obj["prev"] != this_prev:
            what = "64 zeros (first line)" if number == 1 else "the hash of line " + str(number - 1)
            findings.append(Finding(number, seq, "prev-mismatch", f"prev is not {what}"))
        job = _signature_job(number, seq, raw, obj, keys)
        if isinstance(job, Finding):
            findings.append(job)
        else:
            # Verified after the loop, in one tight run: interleaved with JSON work the
            # Ed25519 tables fall out of the CPU cache and each check costs a third more.
            pending.append((len(findings), number, seq, job))
            findings.append(None)
        run = obj["run"]
        if obj["step"] == "run-start":
            if run in seen_runs:
                findings.append(
                    Finding(number, seq, "run-reused", f"run {run} was already started above")
                )
            seen_runs.add(run)
            current_run = run
            runs += 1
        else:
            if number == 1:
                findings.append(
                    Finding(number, seq, "no-run-start", f"first line is {obj['step']!r}")
                )
                current_run = run
            elif run != current_run:
                findings.append(
                    Finding(
                        number,
                        seq,
                        "run-mismatch",
                        f"line of run {run} inside run {current_run}",
                    )
                )

    for index, number, seq, (key, signature, message) in pending:
        if not key.verify(signature, message):
            findings[index] = Finding(number, seq, "bad-signature", "signature does not verify")
    size = len(complete)
    if torn:
        findings.append(
            Finding(size + 1, None, "torn-line", f"the file ends with {len(torn)} bytes and no LF")
        )
    if not complete:
        findings.append(Finding(None, None, "empty", "the ledger has no complete line"))
    root = tree.root()
    checkpoint_findings = _check_checkpoint(
        checkpoint, size, root, origin, prefix_root, keys.values()
    )
    findings.extend(checkpoint_findings)
    head = Head(size, root.hex())
    findings.extend(_check_expected(head, expect_size, expect_root))
    check = None
    if witness is not None:
        check = WitnessCheck(witness.directory, witnessed)
        if witness_problem is not None:
            findings.append(Finding(None, None, "witness-unreadable", witness_problem))
        elif witnessed is not None:
            restored = not checkpoint_findings and checkpoint is not None
            findings.extend(
                _check_witness(witnessed, witness.directory, size, witness_root, restored)
            )
    kept = tuple(f for f in findings if f is not None)
    signed = None
    # Only a ledger that verifies (a stale checkpoint aside) vouches for its checkpoint:
    # then a trusted key signed it, it names these lines, and it agrees with the witness.
    vouched = all(f.code == "checkpoint-stale" for f in kept)
    if vouched and isinstance(checkpoint, Checkpoint) and checkpoint_data is not None:
        signed = WitnessEntry.from_checkpoint(checkpoint, checkpoint_data)
    after = LineState(tree, prev, runs, current_run, seen_runs)
    return Report(ledger_path, size, runs, head, kept, check, signed), after


def _witness_entry(witness: Witness | None, origin: str) -> tuple[WitnessEntry | None, str | None]:
    """The witness's entry for `origin` and, if it cannot be read, why (a finding)."""
    if witness is None or not origin:
        return None, None
    try:
        return witness.lookup(origin), None
    except WitnessError as exc:
        return None, (
            f"{exc}; a rollback of this ledger cannot be checked. Move the file aside to let "
            "the next `groundskeeper ledger verify` record the ledger's current head"
        )


def _check_witness(
    entry: WitnessEntry, directory: Path, size: int, prefix_root: bytes, restored: bool
) -> list[Finding]:
    """SPEC §12: the ledger must hold at least the witnessed lines, and the same ones."""
    seen = f"the witness in {directory} saw this ledger at {entry.size} lines (root "
    seen += f"{entry.root.hex()[:16]}…)"
    if entry.size > size:
        how = "lines were removed"
        if restored:
            how += " and an older checkpoint put back"
        return [Finding(None, None, "rollback", f"{seen}; the file holds {size}: {how}")]
    if prefix_root != entry.root:
        return [
            Finding(
                None,
                None,
                "fork",
                f"{seen}; the first {entry.size} lines here have root {prefix_root.hex()[:16]}…:"
                " the ledger was rewritten, or continued differently from an older copy",
            )
        ]
    return []


_SignatureJob = tuple[PublicKey, bytes, bytes]  # key, signature, signed message


def _signature_job(
    number: int, seq: int, raw: bytes, obj: dict[str, Any], keys: Mapping[str, PublicKey]
) -> Finding | _SignatureJob:
    """A finding if the signature cannot even be checked, else what to verify."""
    sig_text: str = obj["sig"]
    signature = decode_canonical_base64(sig_text, 64)
    if signature is None:
        return Finding(
            number, seq, "malformed-signature", "sig is not canonical base64 of 64 bytes"
        )
    key = keys.get(obj["key"])
    if key is None:
        return Finding(
            number, seq, "untrusted-key", f"signed by key {obj['key'][:16]}…, not trusted"
        )
    # The line is canonical and sorted, so the payload is the line minus its top-level
    # `"sig":"…",` member; only `step`, `ts` and `v` follow it, and their string values
    # cannot hold an unescaped quote, so the last occurrence is the right one.
    needle = b'"sig":"' + sig_text.encode("ascii") + b'",'
    cut = raw.rfind(needle)
    return key, signature, signed_message(raw[:cut] + raw[cut + len(needle) :])


def _check_checkpoint(
    checkpoint: Checkpoint | str | None,
    size: int,
    root: bytes,
    origin: str,
    prefix_root: bytes,
    keys: Iterable[PublicKey],
) -> list[Finding]:
    def finding(code: str, reason: str) -> list[Finding]:
        return [Finding(None, None, code, reason)]

    if checkpoint is None:
        if size == 0:
            return []
        return finding("checkpoint-missing", "no _steps.checkpoint: a cut-off tail is undetectable")
    if isinstance(checkpoint, str):
        return finding("checkpoint-malformed", checkpoint)
    status, detail = checkpoint_signer(checkpoint, keys)
    if status == "bad-signature":
        return finding("checkpoint-bad-signature", f"signature by {detail} does not verify")
    if status == "untrusted":
        return finding("checkpoint-untrusted", f"signed by {detail}, not a trusted key")
    if checkpoint.origin != origin:
        return finding("checkpoint-origin", "checkpoint names another ledger's first line")
    if checkpoint.size == size and checkpoint.root == root:
        return []
    if checkpoint.size < size and checkpoint.root == prefix_root:
        return finding(
            "checkpoint-stale",
            f"checkpoint covers the first {checkpoint.size} of {size} lines",
        )
    return finding(
        "checkpoint-mismatch",
        f"checkpoint says {checkpoint.size} lines, root {checkpoint.root.hex()[:16]}…; "
        f"the ledger has {size} lines, root {root.hex()[:16]}…",
    )


def _check_expected(head: Head, size: int | None, root: str | None) -> list[Finding]:
    findings = []
    if size is not None and size != head.size:
        findings.append(
            Finding(None, None, "expect-mismatch", f"expected {size} lines, found {head.size}")
        )
    if root is not None and root.lower() != head.root:
        findings.append(
            Finding(None, None, "expect-mismatch", f"expected root {root}, found {head.root}")
        )
    return findings


def read_steps(path: Path) -> list[tuple[int, dict[str, Any] | None]]:
    """Every complete line as (line number, object or None), for display, not for trust."""
    ledger_path = find_ledger(path)
    data = read_if_present(ledger_path, "ledger")
    if data is None:
        raise LedgerUnreadable(f"no ledger at {ledger_path}")
    steps: list[tuple[int, dict[str, Any] | None]] = []
    for number, raw in enumerate(data.split(b"\n")[:-1], start=1):
        obj, code, _ = decode_line(raw)
        steps.append((number, obj if code is None else None))
    return steps
