"""The signed step ledger: `_steps.jsonl` (canonical JSON lines, hash-chained, ed25519-signed)
and `_steps.checkpoint` (a signed Merkle head), as specified in ledger/SPEC.md.

Owns writing (`append_step`, `Ledger.record`, `advance_witness`) and re-exports the whole
ledger API: the bytes live in `groundskeeper.record.ledger_format`, verifying in
`record.ledger_verify`, key files in `record.keys`, the witness's files in
`groundskeeper.record.witness`, and what a run records is the runner's business.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import os
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from groundskeeper.errors import GroundskeeperError
from groundskeeper.fastclass import fastclass, field
from groundskeeper.logs import Logger
from groundskeeper.record.keys import PublicKey, SigningKey, trusted_keys
from groundskeeper.record.ledger_format import (
    CHECKPOINT_FILE,
    FORMAT_VERSION,
    GENESIS_PREV,
    LEDGER_FILE,
    MAX_LINE_BYTES,
    RUN_ID,
    STEP_TYPES,
    LedgerError,
    LedgerRolledBack,
    LedgerUnreadable,
    MerkleTree,
    canonical_json,
    check_json_subset,
    checkpoint_path,
    checkpoint_signer,
    decode_line,
    encode_canonical,
    excerpt,
    format_checkpoint,
    history_steps,
    ledger_origin,
    new_temporary,
    parse_checkpoint,
    read_if_present,
    resolve_ledger_path,
    signed_message,
)
from groundskeeper.record.ledger_verify import Finding, Head, Report, read_steps, verify_ledger
from groundskeeper.record.witness import Witness, WitnessEntry, WitnessError

if TYPE_CHECKING:  # a resume's: a hook call seals without reading the record
    from groundskeeper.record.backing import Record
    from groundskeeper.record.record_index import LoadedRecord

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
    "Witness",
    "advance_witness",
    "append_step",
    "canonical_json",
    "excerpt",
    "read_steps",
    "resolve_ledger_path",
    "verify_ledger",
]

log = Logger(__name__)

# The tail index (a cache, SPEC §1 and §9 step 1): the Merkle state of the ledger's first
# bytes as the writer last left them, so that opening it hashes those bytes once (SHA-256)
# rather than every line into the tree. The signature's text starts with the context.
TAIL_FILE = "_steps.tail"
_TAIL_CONTEXT = b"groundskeeper ledger tail index v1\n"

# Staged steps a run may hold before its next commit is forced (a long attempt's tool calls).
MAX_STAGED = 256


@fastclass(frozen=True)
class AppendedLine:
    """What one append wrote: the line's seq and hash, and the head its checkpoint signs
    (covering this line and any written in the same commit)."""

    seq: int
    sha256: str
    head: Head


@fastclass
class _Tail:
    size: int = 0
    last_seq: int = 0
    prev: str = GENESIS_PREV
    origin: str = ""
    tree: MerkleTree = field(default_factory=MerkleTree)
    stamp: tuple[int, int, int] | None = None  # (inode, size, mtime_ns) when last seen
    # The bytes after the last LF when the file was read (a torn line: an append that never
    # became durable, so nothing was acted on); the next commit drops them and seals a
    # `repair` step naming them (SPEC §9).
    torn: bytes = b""
    # Where each new checkpoint is recorded (None: not recorded, see _record_witness) and
    # the entry this writer last knew there, which every head it records extends.
    witness: Witness | None = None
    witnessed: WitnessEntry | None = None
    # The key ids its checkpoint was checked against when it was read ahead of any append
    # (`witness_refusal`); None when an append read it.
    checked_with: frozenset[str] | None = None
    # (inode, size, mtime_ns, ctime_ns) right after this writer's last commit, None until it
    # commits: what `save_tail_index` requires of the file still
    written: tuple[int, int, int, int] | None = None


def _grow(
    tree: MerkleTree, data: bytes, start: int, checkpoint_size: int, witness_size: int
) -> tuple[MerkleTree, bytes, bytes]:
    """`tree` (the state of `data[:start]`) grown by the complete lines after `start`, with
    its roots at `checkpoint_size` and `witness_size` lines (b"" for a size not passed)."""
    prefix_root = witness_root = b""
    if tree.size == checkpoint_size:
        prefix_root = tree.root()
    if tree.size == witness_size:
        witness_root = tree.root()
    for raw in data[start:].split(b"\n")[:-1]:
        tree.append(raw + b"\n")
        if tree.size == checkpoint_size:
            prefix_root = tree.root()
        if tree.size == witness_size:
            witness_root = tree.root()
    return tree, prefix_root, witness_root


def _read_tail_index(
    ledger: Path, data: bytes, keys: list[PublicKey]
) -> tuple[MerkleTree, int] | None:
    """(the Merkle state of `data`'s first B bytes, B) from the tail index, when a key of
    `keys` signed it and those bytes still hash to the SHA-256 it names; else None."""
    from groundskeeper.record.signed_file import read_signed_by

    path = ledger.with_name(TAIL_FILE)
    signed = read_signed_by(path, keys, _TAIL_CONTEXT, "ledger tail index")
    if signed is None:
        return None
    size, sha, lines, stack = (signed.get(k) for k in ("bytes", "sha256", "lines", "stack"))
    try:
        if (
            signed.get("v") != 1
            or type(size) is not int
            or not 0 < size <= len(data)
            or data[size - 1 : size] != b"\n"
            or not isinstance(sha, str)
            or type(lines) is not int
            or not isinstance(stack, list)
        ):
            raise ValueError("another version's, or another ledger's")
        if hashlib.sha256(data[:size]).hexdigest() != sha:
            raise ValueError("the ledger's first bytes are not the ones it was made from")
        if data.count(b"\n", 0, size) != lines:
            raise ValueError("its lines are not its bytes'")
        tree = MerkleTree.from_stack(lines, [base64.b64decode(n, validate=True) for n in stack])
    except (ValueError, TypeError) as error:
        log.info("ignoring the ledger tail index %s: %s", path, error)
        return None
    return tree, size


def save_tail_index(ledger: Path, size: int, sha256: str, key: SigningKey) -> None:
    """Write the tail index of the ledger at `ledger`: the Merkle state this process's writer
    holds, bound to the SHA-256 (`sha256`) of the ledger's first `size` bytes as the caller
    read them — only when the writer's last commit left exactly those bytes and the file is
    untouched since (its inode, size, mtime and ctime then and now). Best effort: an index
    not written is only a slower next open."""
    from groundskeeper.record.signed_file import write_signed

    writer = _writer_for(ledger)
    with writer._turn:
        tail = None if writer._leading else writer._tail
    try:
        st = os.stat(writer.path)
    except OSError:
        return
    if (
        tail is None
        or tail.written is None
        or tail.torn
        or tail.written != (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        or st.st_size != size
    ):
        return
    payload = {
        "v": 1,
        "key": key.public.key_id,
        "bytes": size,
        "sha256": sha256,
        "lines": tail.tree.size,
        "stack": [base64.b64encode(n).decode("ascii") for n in tail.tree.stack],
    }
    write_signed(writer.path.with_name(TAIL_FILE), payload, key, _TAIL_CONTEXT, "tail index")


def known_lines(ledger: Path, data: bytes, tree: MerkleTree) -> None:
    """Give this process's writer of the ledger at `ledger` the Merkle state `tree` of its
    complete lines `data`, which this process has just read and verified line by line (an
    agent's hook verifies the ledger before it appends): its next open takes the tree from
    there when the file still begins with those very bytes (compared, not hashed), instead of
    hashing every line into the tree again. The tests of SPEC §9 step 1 apply to the root it
    gives as to one computed line by line. ValueError if `tree` is not of `data`'s lines."""
    lines = data.count(b"\n")
    if (data and not data.endswith(b"\n")) or lines != tree.size:
        raise ValueError(f"a tree of {tree.size} lines is not that of bytes of {lines}")
    writer = _writer_for(ledger)
    with writer._turn:
        writer._known = (data, MerkleTree.from_stack(tree.size, list(tree.stack)))


def _write_whole(fd: int, data: bytes) -> None:
    # A short write (a full disk) would leave a torn line or a cut checkpoint behind a
    # success; make it the failure it is.
    written = os.write(fd, data)
    if written != len(data):
        raise OSError(f"only {written} of {len(data)} bytes were written")


def _utc_now() -> datetime:
    return datetime.now(UTC)


def _signed_line(request: _Append, seq: int, prev: str) -> bytes:
    """The bytes of one line (SPEC §3, §4), LF included."""
    now = (request.at or request.clock()).astimezone(UTC)
    entry: dict[str, Any] = {
        "v": FORMAT_VERSION,
        "run": request.run_id,
        "seq": seq,
        "step": request.step,
        "ts": now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z",
        "prev": prev,
        "key": request.key.public.key_id,
        "body": request.body,
    }
    signature = request.key.sign(signed_message(encode_canonical(entry).encode("utf-8")))
    entry["sig"] = base64.b64encode(signature).decode("ascii")
    return (encode_canonical(entry) + "\n").encode("utf-8")


@fastclass(eq=False)
class _Append:
    """One caller's step, queued until some thread's commit writes it."""

    key: SigningKey
    run_id: str
    step: str
    body: dict[str, Any]
    trusted: tuple[PublicKey, ...]
    clock: Callable[[], datetime]
    at: datetime | None = None  # when it was staged (its `ts`); None: when it is signed
    done: bool = False
    result: AppendedLine | None = None
    error: GroundskeeperError | None = None

    def same_signer(self, other: _Append) -> bool:
        return self.key.public == other.key.public and self.trusted == other.trusted


class _Writer:
    """The one appender of a ledger file within a process; see SPEC §9 for the protocol.

    Group commit: callers queue their step and one of them at a time leads a commit, which
    writes every step queued behind the same signer with one write, one fdatasync and one
    checkpoint rewrite. Steps that arrive while a commit is syncing join the next one, and
    each caller returns only once a commit covering its own line is durable.
    """

    def __init__(self, ledger_path: Path) -> None:
        self.path = ledger_path
        self.checkpoint_path = checkpoint_path(ledger_path)
        self.lock_path = ledger_path.with_suffix(".lock")
        self._turn = threading.Condition()
        self._queue: deque[_Append] = deque()
        self._leading = False
        self._tail: _Tail | None = None
        self._lock_fd: int | None = None
        # complete lines this process verified and the Merkle state of them (`known_lines`)
        self._known: tuple[bytes, MerkleTree] | None = None

    def request(
        self,
        key: SigningKey,
        run_id: str,
        step: str,
        body: Mapping[str, Any],
        trusted: Iterable[PublicKey],
        clock: Callable[[], datetime],
        *,
        staged: bool = False,
    ) -> _Append:
        """A step checked and queued for the next commit, which any caller may lead."""
        if not RUN_ID.fullmatch(run_id):
            raise LedgerError(f"run id {run_id!r} does not match {RUN_ID.pattern}")
        if step not in STEP_TYPES:
            raise LedgerError(f"unknown step type {step!r}; one of {', '.join(STEP_TYPES)}")
        body_dict = dict(body)
        check_json_subset(body_dict, "body")
        request = _Append(key, run_id, step, body_dict, tuple(trusted), clock)
        if staged:
            request.at = clock()
        with self._turn:
            self._queue.append(request)
        return request

    def wait(self, request: _Append) -> None:
        """Return once a commit covering `request` (and every step queued before it) ended,
        leading commits while none is under way; its result or error is then set."""
        while True:
            with self._turn:
                while self._leading and not request.done:
                    self._turn.wait()
                if request.done:
                    return
                self._leading = True
                batch = self._next_batch()
            try:
                self._commit(batch)
            finally:
                with self._turn:
                    for queued in batch:
                        if queued.result is None and queued.error is None:
                            queued.error = LedgerError(
                                f"the append to {self.path} was interrupted before it was durable"
                            )
                        queued.done = True
                    self._leading = False
                    self._turn.notify_all()

    def append(
        self,
        key: SigningKey,
        run_id: str,
        step: str,
        body: Mapping[str, Any],
        trusted: Iterable[PublicKey],
        clock: Callable[[], datetime],
    ) -> AppendedLine:
        request = self.request(key, run_id, step, body, trusted, clock)
        self.wait(request)
        return _outcome(request)

    def _next_batch(self) -> list[_Append]:
        # FIFO, and one signer per commit: the tail is checked against that signer's trusted
        # keys and the checkpoint is signed with its key.
        batch = [self._queue.popleft()]
        while self._queue and self._queue[0].same_signer(batch[0]):
            batch.append(self._queue.popleft())
        return batch

    def _commit(self, batch: list[_Append]) -> None:
        """Write `batch` under the process lock; every request ends with a result or an error."""
        try:
            if self._lock_fd is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._lock_fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o644)
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            try:
                tail = self._current_tail(batch[0].key, batch[0].trusted)
                self._write(tail, batch)
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
        except OSError as exc:
            # What reached the disk is unknown (a torn line, a stale checkpoint): the next
            # append reads the files again and refuses or repairs as SPEC §9 says.
            self._tail = None
            message = f"cannot write the ledger {self.path}: {exc.strerror or exc}"
            for request in batch:
                if request.error is None:
                    request.error = LedgerError(message)
        except GroundskeeperError as exc:  # a refusal to append, or an unreadable ledger
            for request in batch:
                request.error = type(exc)(*exc.args)

    def _current_tail(self, key: SigningKey, trusted: Iterable[PublicKey]) -> _Tail:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            st = None
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns) if st is not None else None
        keys = [key.public, *trusted]
        tail = self._tail
        if tail is not None and stamp is not None and tail.stamp == stamp:
            ids = {k.key_id for k in keys}
            if tail.checked_with is None or tail.checked_with <= ids:
                tail.checked_with = None
                return tail
        self._tail = self._load_tail(stamp, keys)
        return self._tail

    def read_ahead(self, keys: list[PublicKey]) -> None:
        """Read the files as the next append would (LedgerRolledBack, LedgerError as it
        would raise them) and keep what was read for that append, when the file is still
        the one read then (its inode, size and mtime, taken before reading) and its
        checkpoint was checked against keys the append trusts too."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        tail = self._load_tail(stamp, keys)
        tail.checked_with = frozenset(k.key_id for k in keys)
        with self._turn:
            if not self._leading:
                self._tail = tail

    def _load_tail(self, stamp: tuple[int, int, int] | None, keys: list[PublicKey]) -> _Tail:
        data = read_if_present(self.path, "ledger") or b""
        checkpoint_data = read_if_present(self.checkpoint_path, "checkpoint")
        cut = data.rfind(b"\n") + 1
        data, torn = data[:cut], data[cut:]
        if not data:
            if checkpoint_data is not None:
                self._refuse("the ledger is empty but a checkpoint exists (lines removed?)")
            return _Tail(stamp=stamp, witness=Witness(), torn=torn)
        if checkpoint_data is None:
            self._refuse("its checkpoint is missing")
        checkpoint = parse_checkpoint(checkpoint_data)
        if isinstance(checkpoint, str):
            self._refuse(f"its checkpoint is malformed: {checkpoint}")
        status, detail = checkpoint_signer(checkpoint, keys)
        if status != "ok":
            self._refuse(f"its checkpoint is not signed by a trusted key ({detail})")
        count = data.count(b"\n")  # the complete lines
        origin = ledger_origin(data[: data.find(b"\n") + 1])
        witness, witnessed = self._witness_entry(origin)
        witness_size = witnessed.size if witnessed is not None else -1
        grown = self._from_tail_index(data, keys, checkpoint.size, witness_size)
        if grown is not None and (
            checkpoint.size != count
            or checkpoint.root != grown[0].root()
            or (witnessed is not None and witnessed.size <= count and grown[2] != witnessed.root)
        ):
            # anything but the plain case is judged on every line, as without an index
            log.info("the ledger %s is read whole: its checkpoint or witness differs", self.path)
            grown = None
        if grown is None:
            grown = _grow(MerkleTree(), data, 0, checkpoint.size, witness_size)
        tree, prefix_root, witness_root = grown
        if checkpoint.size != count or checkpoint.root != tree.root():
            stale = checkpoint.size < count and checkpoint.root == prefix_root
            # A crash between an append and its checkpoint leaves a stale checkpoint; the
            # extra lines are accepted only if the whole ledger verifies apart from that.
            report = verify_ledger(self.path, keys) if stale else None
            codes = [] if report is None else [f.code for f in report.findings]
            if [c for c in codes if c != "torn-line" or not torn] != ["checkpoint-stale"]:
                if checkpoint.size == count:
                    bad = [f for f in (report or verify_ledger(self.path, keys)).findings]
                    line = next((f for f in bad if f.line is not None), None)
                    where = f"; line {line.line} fails: {line.code}" if line else ""
                    self._refuse(
                        f"its checkpoint does not match the lines (both {count} lines, the"
                        f" root differs: a line was altered{where})"
                    )
                self._refuse(
                    f"its checkpoint covers {checkpoint.size} lines but the file has {count}"
                )
        last_line = data[data.rfind(b"\n", 0, len(data) - 1) + 1 : -1]
        last, _, _ = decode_line(last_line)
        if last is None or type(last.get("seq")) is not int:
            self._refuse("its last line cannot be read")
        if witnessed is not None and (witnessed.size > count or witness_root != witnessed.root):
            # Rolled back or forked (SPEC §12): lines the witness saw are gone or differ, so
            # what this ledger records is not the last durable record. A run sealed on top of
            # it would certify what the lost lines may have undone (a FAILED put back to an
            # older DONE); refuse, and leave the entry as the evidence.
            entry = witness.entry_path(origin) if witness is not None else origin
            what = (
                f"the witness saw this ledger at {witnessed.size} lines and the file holds"
                f" {count} (rolled back: lines it saw are gone)"
                if witnessed.size > count
                else f"its first {witnessed.size} lines are not the ones the witness saw"
                " (forked: an older copy continued, or rewritten)"
            )
            raise LedgerRolledBack(
                f"refusing to append to {self.path}: {what}. A run on top of it would seal"
                f" over the lost record. Put back the ledger the witness saw (both"
                f" {self.path.name} and {self.checkpoint_path.name}), or, if this copy is the"
                f" one to keep, move the witness entry {entry} aside and run again; see"
                f" `groundskeeper ledger verify {self.path.parent}`"
            )
        return _Tail(
            size=count,
            last_seq=last["seq"],
            prev=hashlib.sha256(last_line + b"\n").hexdigest(),
            origin=origin,
            tree=tree,
            stamp=stamp,
            witness=witness,
            witnessed=witnessed,
            torn=torn,
        )

    def _from_tail_index(
        self, data: bytes, keys: list[PublicKey], checkpoint_size: int, witness_size: int
    ) -> tuple[MerkleTree, bytes, bytes] | None:
        """The Merkle state of `data` grown from the tail index (`TAIL_FILE`) when it may be
        used: signed by one of `keys`, and the first B bytes of `data` hash to the SHA-256
        it was made from (so they are the very lines its compact range covers), and neither
        the checkpoint nor the witness needs a root from before B. Else None: every line."""
        found = self._known_prefix(data)
        if found is None:
            found = _read_tail_index(self.path, data, keys)
        if found is None:
            return None
        tree, size = found
        if checkpoint_size < tree.size or 0 <= witness_size < tree.size:
            return None
        return _grow(tree, data, size, checkpoint_size, witness_size)

    def _known_prefix(self, data: bytes) -> tuple[MerkleTree, int] | None:
        """(the Merkle state of `data`'s first B bytes, B) from the lines this process
        verified (`known_lines`), when `data` still begins with those very bytes."""
        with self._turn:
            known = self._known
        if known is None:
            return None
        lines, tree = known
        if not data.startswith(lines):
            return None
        return MerkleTree.from_stack(tree.size, list(tree.stack)), len(lines)

    def _witness_entry(self, origin: str) -> tuple[Witness | None, WitnessEntry | None]:
        witness = Witness()
        try:
            return witness, witness.lookup(origin)
        except WitnessError as exc:
            # A damaged entry is never overwritten (it may hold a larger head); verify
            # reports it, and the append goes on without the witness.
            log.warning("%s; appending to %s without recording its checkpoints", exc, self.path)
            return None, None

    def _record_witness(self, tail: _Tail, entry: WitnessEntry) -> None:
        """Record a checkpoint just written (SPEC §12); a failure is logged, never raised:
        the lines and the checkpoint are durable already, the witness only lags them."""
        if tail.witness is None:
            return
        try:
            # Not flushed: a second flush per commit would slow every append by a third.
            # After a power loss the witness may lag the ledger (never lead it: the lines
            # were flushed first), which narrows what it detects but raises no false alarm.
            recorded = tail.witness.record(entry, expected=tail.witnessed, sync=False)
        except WitnessError as exc:
            log.warning("%s; the append to %s stands, the witness lags it", exc, self.path)
            tail.witness = None
            return
        if (recorded.size, recorded.root) == (entry.size, entry.root):
            tail.witnessed = recorded
        elif recorded.size > entry.size:
            log.warning(
                "the witness %s saw %d lines of %s, more than its %d: its checkpoints are not "
                "recorded there. See: groundskeeper ledger verify %s",
                tail.witness.directory,
                recorded.size,
                self.path,
                entry.size,
                self.path.parent,
            )
            tail.witness = None
        else:
            # Another process recorded a head this writer has not checked against its own
            # lines: read the files again next time, which checks it.
            self._tail = None

    def _refuse(self, why: str) -> NoReturn:
        raise LedgerError(
            f"refusing to append to {self.path}: {why}. Appending would re-sign the damage; "
            f"run `groundskeeper ledger verify {self.path.parent}`, then restore the ledger and"
            " its checkpoint from a copy, or move both aside and start the plan over"
            " with `groundskeeper resume --forget-record` (sealed: a FAILED or PARTIAL"
            " headline is refused without its record)"
        )

    def _write(self, tail: _Tail, batch: list[_Append]) -> None:
        seq, prev = tail.last_seq, tail.prev
        written: list[tuple[_Append, bytes]] = []
        for request in self._with_repair(tail, batch):
            line = _signed_line(request, seq + 1, prev)
            if len(line) > MAX_LINE_BYTES:
                request.error = LedgerError(
                    f"a {request.step} line of {len(line)} bytes exceeds {MAX_LINE_BYTES}; "
                    "record outputs as a hash plus an excerpt"
                )
                continue
            seq, prev = seq + 1, hashlib.sha256(line).hexdigest()
            written.append((request, line))
        if not any(request in batch for request, _ in written):
            return
        created = tail.size == 0
        data = b"".join(line for _, line in written)
        size_before = (tail.stamp[1] if tail.stamp is not None else 0) - len(tail.torn)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if tail.torn:
                os.ftruncate(fd, size_before)
            try:
                _write_whole(fd, data)
                os.fdatasync(fd)
            except OSError:
                self._undo(fd, size_before)
                raise
            st = os.fstat(fd)
            if st.st_size != size_before + len(data):
                # Bytes from outside groundskeeper (a worker's `>> _steps.jsonl`) landed
                # beside ours: adopting the file as it now is would sign over them.
                self._tail = None
                raise LedgerError(
                    f"the ledger {self.path} changed while a line was appended ({st.st_size} "
                    f"bytes, expected {size_before + len(data)}): another writer outside "
                    "groundskeeper"
                )
            hashes = []
            for _, line in written:
                tail.tree.append(line)
                hashes.append(hashlib.sha256(line).hexdigest())
            if created:
                tail.origin = ledger_origin(written[0][1])
            tail.size += len(written)
            tail.last_seq, tail.prev = seq, prev
            tail.stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
            tail.written = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
            tail.torn = b""
            root = tail.tree.root()
            checkpoint = format_checkpoint(tail.origin, tail.size, root, batch[0].key)
            try:
                self._replace_checkpoint(checkpoint)
            except OSError:
                # No checkpoint names these lines and no caller was told they are written:
                # take them back, so a full disk leaves the ledger as it was before.
                self._undo(fd, size_before)
                raise
        finally:
            os.close(fd)
        if created:
            self._sync_directory()
        self._record_witness(tail, WitnessEntry(tail.origin, tail.size, root, checkpoint))
        head = Head(tail.size, root.hex())
        first_seq = seq - len(written) + 1
        for offset, ((request, _), sha) in enumerate(zip(written, hashes, strict=True)):
            request.result = AppendedLine(first_seq + offset, sha, head)

    def _with_repair(self, tail: _Tail, batch: list[_Append]) -> list[_Append]:
        """`batch`, with a `repair` step naming a torn tail this commit drops (SPEC §9): just
        after a run-start that opens the batch (every line belongs to the latest run), else
        first, in the run of the step it precedes."""
        if not tail.torn:
            return batch
        first = batch[0]
        text = tail.torn.decode("utf-8", errors="replace")
        body = {
            "run_id": first.run_id,
            "offset": (tail.stamp[1] if tail.stamp is not None else 0) - len(tail.torn),
            "dropped_bytes": len(tail.torn),
            "dropped_sha256": hashlib.sha256(tail.torn).hexdigest(),
            "excerpt": excerpt(text),
        }
        repair = _Append(first.key, first.run_id, "repair", body, first.trusted, first.clock)
        at = 1 if first.step == "run-start" else 0
        return [*batch[:at], repair, *batch[at:]]

    def _undo(self, fd: int, size: int) -> None:
        """Cut the file back to `size` (its last complete, checkpointed line) after a failed
        append; if even that fails, the next open finds a torn tail and repairs it."""
        try:
            os.ftruncate(fd, size)
            os.fdatasync(fd)
        except OSError as exc:
            log.error("could not undo a failed append to %s: %s", self.path, exc)

    def _replace_checkpoint(self, data: bytes) -> None:
        # A fresh, unpredictable temp name: a fixed one could be squatted (a directory made
        # under that name by a worker) and stop every later append.
        fd, tmp = new_temporary(self.checkpoint_path)
        try:
            try:
                os.fchmod(fd, 0o644)
                _write_whole(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, self.checkpoint_path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _sync_directory(self) -> None:
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def _outcome(request: _Append) -> AppendedLine:
    if request.error is not None:
        raise request.error
    assert request.result is not None  # set whenever error is not
    return request.result


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


def witness_refusal(directory: Path) -> str | None:
    """Why the ledger in `directory` must not be appended to, when the witness says it was
    rolled back or forked (SPEC §12); None otherwise — other damage is the append's to report.
    For a command to refuse (exit 2) before it starts a run, as its first append would."""
    path = directory / LEDGER_FILE
    if not path.exists():
        return None
    try:
        # what is read here is kept for the run's first append (read once, not twice)
        _writer_for(path).read_ahead(list(trusted_keys()))
    except LedgerRolledBack as exc:
        return str(exc)
    except (GroundskeeperError, OSError):
        return None
    return None


def advance_witness(report: Report) -> WitnessEntry | None:
    """Record the checkpoint of a verified ledger in the witness `report` consulted, when it
    is larger than the entry there (SPEC §12); the entry recorded, or None if it stayed.

    Only a report with no finding (a stale checkpoint aside) vouches for its checkpoint.
    WitnessError if the witness cannot be written.
    """
    check, signed = report.witness, report.signed
    if check is None or signed is None:
        return None
    if check.entry is not None and signed.size <= check.entry.size:
        return None
    recorded = Witness(check.directory).record(signed, expected=check.entry, sync=True)
    return recorded if recorded is signed else None


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
        if not RUN_ID.fullmatch(run_id):
            raise LedgerError(f"run id {run_id!r} does not match {RUN_ID.pattern}")
        self.path = Path(run_dir) / LEDGER_FILE
        self.run_id = run_id
        self._key = key
        self._trusted = tuple(trusted_keys() if trusted is None else trusted)
        self._clock = clock
        self._started = False
        self._lock = threading.Lock()
        # What this run last saw of its own ledger: the file's identity and the last seq it
        # wrote. A worker with a read-write sandbox on the plan directory can delete or swap
        # the ledger mid-run; the writer would then begin a fresh chain, so the run checks.
        self._identity: tuple[int, int] | None = None
        self._seqs: set[int] = set()  # appends run concurrently: seqs return out of order
        self._first_seq = 0
        self._seen_lock = threading.Lock()  # record() may hold _lock around _append
        self._staged: list[_Append] = []  # staged steps not yet known to be durable
        self._staged_lock = threading.Lock()
        self._loaded: LoadedRecord | None = None  # the record as `sealed_record` read it

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
        appended = self._append(step, body)
        if step == "run-end" and self._loaded is not None:
            from groundskeeper.record.record_index import save_record

            covered = save_record(
                self._loaded, self.path, self._key
            )  # the next resume starts there
            if covered is not None:  # and the next open of the ledger from its tail index
                save_tail_index(self.path, *covered, self._key)
        return appended

    def sealed_record(self) -> Record:
        """What the ledger records of each task (`backing.read_record` of every line), read
        through the record index (`record_index`), which this run's `run-end` brings up to
        date (`backing.HasSealedRecord`)."""
        from groundskeeper.record.record_index import load_record

        self._loaded = load_record(self.path, self._key)
        return self._loaded.record

    def stage(self, step: str, body: Mapping[str, Any]) -> None:
        """Queue one step of this run for the next commit (group commit, SPEC §9): it is
        chained in the order staged, and durable only once `commit` (or a `record`, of any
        thread) returns. Nothing may be acted upon before that. LedgerError at once for a
        body outside SPEC §2; a write that fails is reported by the commit."""
        with self._lock:
            if not self._started:
                raise LedgerError(f"a run's first step must be a recorded run-start, not {step!r}")
        if step == "run-start":
            raise LedgerError(f"run {self.run_id} has already started")
        request = _writer_for(self.path).request(
            self._key, self.run_id, step, body, self._trusted, self._clock, staged=True
        )
        with self._staged_lock:
            self._staged.append(request)
            crowded = len(self._staged) >= MAX_STAGED
        if crowded:
            self.commit()

    def commit(self) -> None:
        """Make every step this run staged durable: one write, one fdatasync and one
        checkpoint for all of them (and for whatever other threads queued meanwhile).
        LedgerError if any of them could not be written."""
        with self._staged_lock:
            staged, self._staged = self._staged, []
        if not staged:
            return
        if self._identity is not None:
            self._check_still_ours()
        writer = _writer_for(self.path)
        for request in staged:
            writer.wait(request)
        for request in staged:
            self._seen(_outcome(request))

    def history(self) -> list[tuple[str, str, dict[str, Any]]]:
        """(run id, step, body) of every complete line that says what became of a task (not
        model calls or claims; tool calls only when they list paths they changed), in order
        (`record.HasHistory`).

        Taken as true once this run's `run-start` is appended: that append checked the file
        against its checkpoint, signed by a trusted key, whose Merkle root covers every line.
        So lines are only parsed here, not verified again; one that does not parse is skipped.
        """
        try:
            data = read_if_present(self.path, "ledger") or b""
        except GroundskeeperError:
            return []
        return history_steps(data)

    def _append(self, step: str, body: Mapping[str, Any]) -> AppendedLine:
        if self._identity is not None:
            self._check_still_ours()
        with self._staged_lock:
            staged, self._staged = self._staged, []
        appended = append_step(
            self.path,
            self._key,
            self.run_id,
            step,
            body,
            trusted=self._trusted,
            clock=self._clock,
        )
        for request in staged:  # queued before this one: the same commit or an earlier one
            self._seen(_outcome(request))
        return self._seen(appended)

    def _seen(self, appended: AppendedLine) -> AppendedLine:
        with self._seen_lock:
            if appended.seq in self._seqs or appended.seq < self._first_seq:
                raise LedgerError(
                    f"the ledger {self.path} restarted during run {self.run_id} (seq "
                    f"{appended.seq} again): it was deleted or replaced"
                )
            self._seqs.add(appended.seq)
            if self._identity is None:
                self._first_seq = appended.seq
                st = os.stat(self.path)
                self._identity = (st.st_dev, st.st_ino)
        return appended

    def _check_still_ours(self) -> None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise LedgerError(
                f"the ledger {self.path} vanished during run {self.run_id} (deleted or moved)"
            ) from None
        if (st.st_dev, st.st_ino) != self._identity:
            raise LedgerError(f"the ledger {self.path} was replaced during run {self.run_id}")
