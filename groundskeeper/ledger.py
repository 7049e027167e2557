"""The signed step ledger: `_steps.jsonl` (canonical JSON lines, hash-chained, ed25519-signed)
and `_steps.checkpoint` (a signed Merkle head), as specified in ledger/SPEC.md.

Owns writing (`append_step`, `Ledger.record`) and verifying (`verify_ledger`); key files
live in `groundskeeper.keys`, and what a run records is the runner's business.
"""

from __future__ import annotations

import base64
import binascii
import fcntl
import hashlib
import json
import os
import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

from groundskeeper.errors import GroundskeeperError, UsageError
from groundskeeper.keys import PublicKey, SigningKey, trusted_keys

__all__ = [
    "CHECKPOINT_FILE",
    "LEDGER_FILE",
    "STEP_TYPES",
    "AppendedLine",
    "Finding",
    "Head",
    "Ledger",
    "LedgerError",
    "LedgerUnreadable",
    "MerkleTree",
    "Report",
    "append_step",
    "canonical_json",
    "excerpt",
    "read_steps",
    "resolve_ledger_path",
    "verify_ledger",
]

FORMAT_VERSION = 1
PAYLOAD_TYPE = b"application/vnd.groundskeeper.step+json"
GENESIS_PREV = "0" * 64
MAX_LINE_BYTES = 65536
MAX_SAFE_INT = 2**53 - 1
EXCERPT_CHARS = 200
LEDGER_FILE = "_steps.jsonl"
CHECKPOINT_FILE = "_steps.checkpoint"
ORIGIN_PREFIX = "groundskeeper-ledger/"
STEP_TYPES = (
    "run-start",
    "task-start",
    "tool-call",
    "claim",
    "check",
    "state",
    "tamper",
    "dock",
    "run-end",
)
FIELDS = frozenset({"v", "run", "seq", "step", "ts", "prev", "key", "body", "sig"})

_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_TS = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_HEX_DIGITS = "0123456789abcdef"
_SURROGATE = re.compile("[\ud800-\udfff]")
_PAE_PREFIX = b"DSSEv1 %d %s " % (len(PAYLOAD_TYPE), PAYLOAD_TYPE)


class LedgerError(GroundskeeperError):
    """A step that cannot be written: a caller's bug (a float in a body, an unknown step
    type) or a ledger whose damage an append would hide (the message says which)."""


class LedgerUnreadable(UsageError):
    """The ledger or its checkpoint cannot be read at all (missing, a directory, no access)."""


# --- canonical JSON (SPEC §2) -------------------------------------------------------------


def _check_value(value: Any, where: str) -> None:
    kind = type(value)
    if value is None or kind is bool or kind is str:
        if kind is str and _SURROGATE.search(value):
            raise LedgerError(f"{where}: a lone surrogate cannot be encoded as UTF-8")
    elif kind is int:
        if not -MAX_SAFE_INT <= value <= MAX_SAFE_INT:
            raise LedgerError(f"{where}: integer {value} is outside ±(2^53−1)")
    elif kind is list:
        for index, item in enumerate(value):
            _check_value(item, f"{where}[{index}]")
    elif kind is dict:
        for name, item in value.items():
            if type(name) is not str or not (name.isascii() and name.isprintable()):
                raise LedgerError(f"{where}: member name {name!r} is not printable ASCII")
            _check_value(item, f"{where}.{name}")
    else:
        raise LedgerError(
            f"{where}: {kind.__name__} is not allowed in the ledger "
            "(only null, bool, int, str, list and dict; no floats)"
        )


def canonical_json(value: Any) -> str:
    """The canonical encoding of SPEC §2; LedgerError for a value outside the subset."""
    _check_value(value, "value")
    return _encode(value)


# Built once: json.dumps/loads with options build a new encoder/decoder on every call.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def _encode(value: Any) -> str:
    return _ENCODER.encode(value)


def _pae(payload: bytes) -> bytes:
    return b"%s%d %s" % (_PAE_PREFIX, len(payload), payload)


def _b64decode_canonical(text: str, size: int) -> bytes | None:
    """The bytes of canonical base64 `text` if they are `size` long, else None."""
    if not text.isascii():
        return None
    try:
        raw = binascii.a2b_base64(text, strict_mode=True)
    except binascii.Error:
        return None
    # Re-encoding catches spellings a decoder accepts but that are not canonical (non-zero
    # unused bits in the last character).
    if len(raw) != size or binascii.b2a_base64(raw, newline=False) != text.encode("ascii"):
        return None
    return raw


def excerpt(text: str, limit: int = EXCERPT_CHARS) -> str:
    """At most `limit` characters of `text`, marked with … when cut (SPEC §7)."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- Merkle tree (SPEC §6, RFC 6962 §2.1) ------------------------------------------------


class MerkleTree:
    """RFC 6962 tree hash kept as a compact range: the roots of the perfect subtrees, so
    an append costs O(log n) and the root is available at any time."""

    def __init__(self) -> None:
        self.size = 0
        self._stack: list[bytes] = []

    def append(self, leaf: bytes) -> None:
        node = hashlib.sha256(b"\x00" + leaf).digest()
        n = self.size
        while n & 1:
            node = hashlib.sha256(b"\x01" + self._stack.pop() + node).digest()
            n >>= 1
        self._stack.append(node)
        self.size += 1

    def root(self) -> bytes:
        if not self._stack:
            return hashlib.sha256(b"").digest()
        node = self._stack[-1]
        for left in reversed(self._stack[:-1]):
            node = hashlib.sha256(b"\x01" + left + node).digest()
        return node

    def copy(self) -> MerkleTree:
        twin = MerkleTree()
        twin.size, twin._stack = self.size, list(self._stack)
        return twin


# --- checkpoint (SPEC §6, C2SP tlog-checkpoint + signed-note) ----------------------------


def _note_key_name(key: PublicKey) -> str:
    return f"groundskeeper-{key.key_id[:16]}"


def _note_key_hash(name: str, key: PublicKey) -> bytes:
    return hashlib.sha256(name.encode("utf-8") + b"\n\x01" + key.raw).digest()[:4]


def _origin(first_line: bytes) -> str:
    return ORIGIN_PREFIX + hashlib.sha256(first_line).hexdigest()


def _format_checkpoint(origin: str, size: int, root: bytes, key: SigningKey) -> bytes:
    text = f"{origin}\n{size}\n{base64.b64encode(root).decode('ascii')}\n".encode()
    name = _note_key_name(key.public)
    blob = _note_key_hash(name, key.public) + key.sign(text)
    return text + f"\n— {name} {base64.b64encode(blob).decode('ascii')}\n".encode()


@dataclass(frozen=True)
class _Checkpoint:
    origin: str
    size: int
    root: bytes
    text: bytes
    signatures: tuple[tuple[str, bytes], ...]  # (key name, key hash ‖ signature)


_SIG_LINE = re.compile(r"— ([^\s+]+) ([A-Za-z0-9+/=]+)")


def _parse_checkpoint(data: bytes) -> _Checkpoint | str:
    """The parsed checkpoint, or the reason it is malformed."""
    try:
        decoded = data.decode("utf-8")
    except UnicodeDecodeError:
        return "not UTF-8"
    text, sep, sigs = decoded.partition("\n\n")
    if not sep or not sigs.endswith("\n") or "\n\n" in sigs:
        return "not a signed note (text, a blank line, signature lines, final newline)"
    lines = text.split("\n")
    if len(lines) != 3:
        return f"expected 3 lines (origin, size, root) before the blank line, found {len(lines)}"
    origin, size_text, root_text = lines
    if not origin.startswith(ORIGIN_PREFIX) or not _HEX64.fullmatch(origin[len(ORIGIN_PREFIX) :]):
        return f"origin {origin[:80]!r} is not groundskeeper-ledger/<64 hex digits>"
    if not re.fullmatch(r"[1-9][0-9]{0,17}", size_text):
        return f"size {size_text[:40]!r} is not a positive decimal number"
    root = _b64decode_canonical(root_text, 32)
    if root is None:
        return "root is not canonical base64 of 32 bytes"
    signatures: list[tuple[str, bytes]] = []
    for line in sigs[:-1].split("\n"):
        match = _SIG_LINE.fullmatch(line)
        blob = _b64decode_canonical(match.group(2), 68) if match else None
        if match is None or blob is None:
            return f"signature line {line[:80]!r} is not `— NAME BASE64(keyhash‖sig)`"
        signatures.append((match.group(1), blob))
    return _Checkpoint(origin, int(size_text), root, (text + "\n").encode(), tuple(signatures))


def _checkpoint_signer(cp: _Checkpoint, keys: Iterable[PublicKey]) -> tuple[str, str]:
    """('ok', key id) | ('bad-signature', name) | ('untrusted', names seen)."""
    candidates = 0
    for name, blob in cp.signatures:
        for key in keys:
            if name == _note_key_name(key) and blob[:4] == _note_key_hash(name, key):
                candidates += 1
                if key.verify(blob[4:], cp.text):
                    return "ok", key.key_id
    if candidates:
        return "bad-signature", ", ".join(name for name, _ in cp.signatures)
    return "untrusted", ", ".join(name for name, _ in cp.signatures)


# --- verification (SPEC §4, §5, §8) -------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """One thing wrong with a ledger; `line`/`seq` are None for file-level findings."""

    line: int | None
    seq: int | None
    code: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"line": self.line, "seq": self.seq, "code": self.code, "reason": self.reason}


@dataclass(frozen=True)
class Head:
    """The number of lines and their hex Merkle root: what a checkpoint signs."""

    size: int
    root: str

    def to_json(self) -> dict[str, Any]:
        return {"size": self.size, "root": self.root}


@dataclass(frozen=True)
class Report:
    """The result of `verify_ledger`: clean only when there is no finding at all."""

    path: Path
    lines: int
    runs: int
    head: Head
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "lines": self.lines,
            "runs": self.runs,
            "head": self.head.to_json(),
            "findings": [f.to_json() for f in self.findings],
        }


def resolve_ledger_path(path: Path) -> Path:
    """A plan directory means its `_steps.jsonl`; a file is taken as the ledger itself."""
    return path / LEDGER_FILE if path.is_dir() else path


def _checkpoint_path(ledger: Path) -> Path:
    return ledger.with_suffix(".checkpoint")


def _read(path: Path, what: str) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise LedgerUnreadable(f"{what} {path} is a directory, not a file") from exc
    except OSError as exc:
        raise LedgerUnreadable(f"cannot read {what} {path}: {exc.strerror}") from exc


class _Rejected(ValueError):
    pass


def _reject_constant(text: str) -> NoReturn:
    raise _Rejected(f"{text} is not allowed (no floats)")


def _reject_float(text: str) -> NoReturn:
    raise _Rejected(f"number {text} is not an integer (no floats)")


def _parse_int(text: str) -> int:
    value = int(text)
    if not -MAX_SAFE_INT <= value <= MAX_SAFE_INT:
        raise _Rejected(f"integer {text[:30]} is outside ±(2^53−1)")
    return value


_DECODER = json.JSONDecoder(
    parse_float=_reject_float, parse_constant=_reject_constant, parse_int=_parse_int
)


def _decode_line(raw: bytes) -> tuple[dict[str, Any] | None, str | None, str]:
    """(object, code, reason): the object when the line is canonical JSON, else a code."""
    if len(raw) + 1 > MAX_LINE_BYTES:
        return None, "bad-json", f"line is {len(raw) + 1} bytes, over {MAX_LINE_BYTES}"
    try:
        text = raw.decode("utf-8")
        obj = _DECODER.decode(text)
    except UnicodeDecodeError:
        return None, "bad-json", "line is not UTF-8"
    except _Rejected as exc:
        return None, "bad-json", str(exc)
    except ValueError as exc:
        return None, "bad-json", f"line is not JSON ({exc})"
    if type(obj) is not dict:
        return None, "bad-json", "line is not a JSON object"
    if not text.isascii():
        try:
            _check_value(obj, "line")
        except LedgerError as exc:
            return None, "bad-json", str(exc)
    if _encode(obj) != text:
        return obj, "not-canonical", "line is not in canonical form (SPEC §2): re-encoded"
    return obj, None, ""


def _field_problem(obj: dict[str, Any]) -> str | None:
    if obj.keys() != FIELDS:
        missing = sorted(FIELDS - obj.keys())
        extra = sorted(obj.keys() - FIELDS)
        return f"members missing {missing}, unexpected {extra}"
    v, run, seq, step, ts = obj["v"], obj["run"], obj["seq"], obj["step"], obj["ts"]
    prev, key, body, sig = obj["prev"], obj["key"], obj["body"], obj["sig"]
    # One pass of cheap checks; the loop below only runs to name what is wrong.
    if (
        type(v) is int
        and v == FORMAT_VERSION
        and type(run) is str
        and _RUN_ID.fullmatch(run)
        and type(seq) is int
        and seq >= 1
        and type(step) is str
        and step in STEP_TYPES
        and type(ts) is str
        and _TS.fullmatch(ts)
        and type(prev) is str
        and len(prev) == 64
        and not prev.strip(_HEX_DIGITS)
        and type(key) is str
        and len(key) == 64
        and not key.strip(_HEX_DIGITS)
        and type(body) is dict
        and type(sig) is str
    ):
        return None
    checks: tuple[tuple[str, bool], ...] = (
        ("v", type(v) is int and v == FORMAT_VERSION),
        ("run", type(run) is str and bool(_RUN_ID.fullmatch(run))),
        ("seq", type(seq) is int and seq >= 1),
        ("step", type(step) is str and step in STEP_TYPES),
        ("ts", type(ts) is str and bool(_TS.fullmatch(ts))),
        ("prev", type(prev) is str and bool(_HEX64.fullmatch(prev))),
        ("key", type(key) is str and bool(_HEX64.fullmatch(key))),
        ("body", type(body) is dict),
        ("sig", type(sig) is str),
    )
    bad = next(name for name, ok in checks if not ok)
    return f"member {bad} has a wrong type or value: {str(obj[bad])[:60]!r}"


def verify_ledger(
    path: Path,
    trusted: Iterable[PublicKey],
    *,
    expect_size: int | None = None,
    expect_root: str | None = None,
) -> Report:
    """Check every line and the checkpoint of a ledger; report every finding (SPEC §8).

    `path` is a plan directory or a ledger file; LedgerUnreadable if it cannot be read.
    """
    ledger_path = resolve_ledger_path(path)
    data = _read(ledger_path, "ledger")
    if data is None:
        raise LedgerUnreadable(
            f"no ledger at {ledger_path} (a plan that has not run yet has none); "
            "pass a plan directory or a _steps.jsonl"
        )
    checkpoint_data = _read(_checkpoint_path(ledger_path), "checkpoint")
    keys = {key.key_id: key for key in trusted}
    findings: list[Finding | None] = []
    pending: list[tuple[int, int, int, _SignatureJob]] = []

    checkpoint = _parse_checkpoint(checkpoint_data) if checkpoint_data is not None else None
    prefix_size = checkpoint.size if isinstance(checkpoint, _Checkpoint) else -1
    prefix_root = b""

    pieces = data.split(b"\n")
    torn, complete = pieces[-1], pieces[:-1]
    tree = MerkleTree()
    prev = GENESIS_PREV
    expected = 1
    runs = 0
    current_run: str | None = None
    seen_runs: set[str] = set()

    for number, raw in enumerate(complete, start=1):
        line_bytes = raw + b"\n"
        tree.append(line_bytes)
        if tree.size == prefix_size:
            prefix_root = tree.root()
        obj, code, reason = _decode_line(raw)
        this_prev, prev = prev, hashlib.sha256(line_bytes).hexdigest()
        seq = obj.get("seq") if obj is not None and type(obj.get("seq")) is int else None
        if code is None and obj is not None:
            problem = _field_problem(obj)
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
    origin = _origin(complete[0] + b"\n") if complete else ""
    findings.extend(_check_checkpoint(checkpoint, size, root, origin, prefix_root, keys.values()))
    head = Head(size, root.hex())
    findings.extend(_check_expected(head, expect_size, expect_root))
    return Report(ledger_path, size, runs, head, tuple(f for f in findings if f is not None))


_SignatureJob = tuple[PublicKey, bytes, bytes]  # key, signature, signed message


def _signature_job(
    number: int, seq: int, raw: bytes, obj: dict[str, Any], keys: Mapping[str, PublicKey]
) -> Finding | _SignatureJob:
    """A finding if the signature cannot even be checked, else what to verify."""
    sig_text: str = obj["sig"]
    signature = _b64decode_canonical(sig_text, 64)
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
    return key, signature, _pae(raw[:cut] + raw[cut + len(needle) :])


def _check_checkpoint(
    checkpoint: _Checkpoint | str | None,
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
    status, detail = _checkpoint_signer(checkpoint, keys)
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
    ledger_path = resolve_ledger_path(path)
    data = _read(ledger_path, "ledger")
    if data is None:
        raise LedgerUnreadable(f"no ledger at {ledger_path}")
    steps: list[tuple[int, dict[str, Any] | None]] = []
    for number, raw in enumerate(data.split(b"\n")[:-1], start=1):
        obj, code, _ = _decode_line(raw)
        steps.append((number, obj if code is None else None))
    return steps


# --- writing (SPEC §9) --------------------------------------------------------------------


@dataclass(frozen=True)
class AppendedLine:
    """What one append wrote: the line's seq and hash, and the new head."""

    seq: int
    sha256: str
    head: Head


@dataclass
class _Tail:
    size: int = 0
    last_seq: int = 0
    prev: str = GENESIS_PREV
    origin: str = ""
    tree: MerkleTree = field(default_factory=MerkleTree)
    stamp: tuple[int, int, int] | None = None  # (inode, size, mtime_ns) when last seen


def _utc_now() -> datetime:
    return datetime.now(UTC)


class _Writer:
    """The one appender of a ledger file within a process; see SPEC §9 for the protocol."""

    def __init__(self, ledger_path: Path) -> None:
        self.path = ledger_path
        self.checkpoint_path = _checkpoint_path(ledger_path)
        self.lock_path = ledger_path.with_suffix(".lock")
        self._lock = threading.Lock()
        self._tail: _Tail | None = None
        self._lock_fd: int | None = None

    def append(
        self,
        key: SigningKey,
        run_id: str,
        step: str,
        body: Mapping[str, Any],
        trusted: Iterable[PublicKey],
        clock: Callable[[], datetime],
    ) -> AppendedLine:
        if not _RUN_ID.fullmatch(run_id):
            raise LedgerError(f"run id {run_id!r} does not match {_RUN_ID.pattern}")
        if step not in STEP_TYPES:
            raise LedgerError(f"unknown step type {step!r}; one of {', '.join(STEP_TYPES)}")
        body_dict = dict(body)
        _check_value(body_dict, "body")
        with self._lock:
            if self._lock_fd is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._lock_fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            try:
                tail = self._current_tail(key, trusted)
                return self._write(tail, key, run_id, step, body_dict, clock)
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def _current_tail(self, key: SigningKey, trusted: Iterable[PublicKey]) -> _Tail:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns) if st is not None else None
        if self._tail is not None and stamp is not None and self._tail.stamp == stamp:
            return self._tail
        self._tail = self._load_tail(stamp, [key.public, *trusted])
        return self._tail

    def _load_tail(self, stamp: tuple[int, int, int] | None, keys: list[PublicKey]) -> _Tail:
        data = _read(self.path, "ledger") or b""
        checkpoint_data = _read(self.checkpoint_path, "checkpoint")
        if not data:
            if checkpoint_data is not None:
                self._refuse("the ledger is empty but a checkpoint exists (lines removed?)")
            return _Tail(stamp=stamp)
        if not data.endswith(b"\n"):
            self._refuse("it ends in a torn line (an append that did not complete)")
        if checkpoint_data is None:
            self._refuse("its checkpoint is missing")
        checkpoint = _parse_checkpoint(checkpoint_data)
        if isinstance(checkpoint, str):
            self._refuse(f"its checkpoint is malformed: {checkpoint}")
        status, detail = _checkpoint_signer(checkpoint, keys)
        if status != "ok":
            self._refuse(f"its checkpoint is not signed by a trusted key ({detail})")
        lines = data.split(b"\n")[:-1]
        tree = MerkleTree()
        prefix_root = b""
        for raw in lines:
            tree.append(raw + b"\n")
            if tree.size == checkpoint.size:
                prefix_root = tree.root()
        if checkpoint.size != len(lines) or checkpoint.root != tree.root():
            stale = checkpoint.size < len(lines) and checkpoint.root == prefix_root
            # A crash between an append and its checkpoint leaves a stale checkpoint; the
            # extra lines are accepted only if the whole ledger verifies apart from that.
            report = verify_ledger(self.path, keys) if stale else None
            if report is None or [f.code for f in report.findings] != ["checkpoint-stale"]:
                self._refuse(
                    f"its checkpoint covers {checkpoint.size} lines but the file has {len(lines)}"
                )
        last, _, _ = _decode_line(lines[-1])
        if last is None or type(last.get("seq")) is not int:
            self._refuse("its last line cannot be read")
        return _Tail(
            size=len(lines),
            last_seq=last["seq"],
            prev=hashlib.sha256(lines[-1] + b"\n").hexdigest(),
            origin=_origin(lines[0] + b"\n"),
            tree=tree,
            stamp=stamp,
        )

    def _refuse(self, why: str) -> NoReturn:
        raise LedgerError(
            f"refusing to append to {self.path}: {why}. Appending would re-sign the damage; "
            f"run `groundskeeper ledger verify {self.path.parent}` and move the ledger aside"
        )

    def _write(
        self,
        tail: _Tail,
        key: SigningKey,
        run_id: str,
        step: str,
        body: dict[str, Any],
        clock: Callable[[], datetime],
    ) -> AppendedLine:
        now = clock().astimezone(UTC)
        entry: dict[str, Any] = {
            "v": FORMAT_VERSION,
            "run": run_id,
            "seq": tail.last_seq + 1,
            "step": step,
            "ts": now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z",
            "prev": tail.prev,
            "key": key.public.key_id,
            "body": body,
        }
        signature = key.sign(_pae(_encode(entry).encode("utf-8")))
        entry["sig"] = base64.b64encode(signature).decode("ascii")
        line = (_encode(entry) + "\n").encode("utf-8")
        if len(line) > MAX_LINE_BYTES:
            raise LedgerError(
                f"a {step} line of {len(line)} bytes exceeds {MAX_LINE_BYTES}; "
                "record outputs as a hash plus an excerpt"
            )
        created = tail.size == 0
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
            os.fdatasync(fd)
            st = os.fstat(fd)
        finally:
            os.close(fd)
        tail.tree.append(line)
        tail.size += 1
        tail.last_seq += 1
        tail.prev = hashlib.sha256(line).hexdigest()
        if created:
            tail.origin = _origin(line)
        tail.stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        root = tail.tree.root()
        self._write_checkpoint(_format_checkpoint(tail.origin, tail.size, root, key), created)
        return AppendedLine(tail.last_seq, tail.prev, Head(tail.size, root.hex()))

    def _write_checkpoint(self, data: bytes, sync_dir: bool) -> None:
        tmp = self.checkpoint_path.with_name(self.checkpoint_path.name + ".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self.checkpoint_path)
        if sync_dir:
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)


_writers: dict[Path, _Writer] = {}
_writers_lock = threading.Lock()


def _writer_for(path: Path) -> _Writer:
    ledger_path = resolve_ledger_path(path).absolute()
    with _writers_lock:
        writer = _writers.get(ledger_path)
        if writer is None:
            writer = _writers[ledger_path] = _Writer(ledger_path)
        return writer


def _forget_writers() -> None:
    # A forked child must not share its parent's lock file description (flock would not
    # exclude the two) nor trust its cached tail.
    global _writers_lock
    _writers.clear()
    _writers_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_writers)


def append_step(
    path: Path,
    key: SigningKey,
    run_id: str,
    step: str,
    body: Mapping[str, Any],
    *,
    trusted: Iterable[PublicKey] = (),
    clock: Callable[[], datetime] = _utc_now,
) -> AppendedLine:
    """Append one signed step to the ledger at `path` (a run directory or the file) and
    rewrite its checkpoint, under one exclusive thread and process lock (SPEC §9).

    `trusted` are keys besides `key` whose checkpoints may be continued. LedgerError for a
    body outside SPEC §2 or a damaged ledger.
    """
    return _writer_for(path).append(key, run_id, step, body, trusted, clock)


class Ledger:
    """The ledger of one run: the runner holds one and calls `record` from any thread.

    The first step recorded must be `run-start`; a later run of the same plan makes a new
    `Ledger` with a new run id and continues the same chain.
    """

    def __init__(
        self,
        run_dir: Path,
        key: SigningKey,
        run_id: str,
        *,
        trusted: Iterable[PublicKey] | None = None,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        if not _RUN_ID.fullmatch(run_id):
            raise LedgerError(f"run id {run_id!r} does not match {_RUN_ID.pattern}")
        self.path = Path(run_dir) / LEDGER_FILE
        self.run_id = run_id
        self._key = key
        self._trusted = tuple(trusted_keys() if trusted is None else trusted)
        self._clock = clock
        self._started = False
        self._lock = threading.Lock()

    def record(self, step: str, body: Mapping[str, Any]) -> AppendedLine:
        """Append one step of this run; thread-safe and durable when it returns."""
        with self._lock:
            if not self._started:
                if step != "run-start":
                    raise LedgerError(f"a run's first step must be run-start, not {step!r}")
                appended = self._append(step, body)
                self._started = True
                return appended
        if step == "run-start":
            raise LedgerError(f"run {self.run_id} has already started")
        return self._append(step, body)

    def _append(self, step: str, body: Mapping[str, Any]) -> AppendedLine:
        return append_step(
            self.path,
            self._key,
            self.run_id,
            step,
            body,
            trusted=self._trusted,
            clock=self._clock,
        )
