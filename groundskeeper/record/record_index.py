"""The record index, `_steps.index` beside the ledger: what `backing.read_record` made of
the ledger's first B bytes, so that a resume parses only the lines after them.

It is a cache, never a source. It is used only when it is signed by this plan's signing key
and the ledger's first B bytes still hash to the SHA-256 it was computed from; otherwise
(missing, torn, altered, another key's, another version's, or a ledger cut or rewritten under
it) the record is read from every line again, as it was before there was an index, and the
index is made anew when the run ends. Those bytes are the ones the run's first append checks
against the signed checkpoint, as it always does, so a DONE the index backs is backed exactly
as one read from the whole ledger is. It does not verify the ledger (`Ledger` does).
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from groundskeeper.errors import GroundskeeperError
from groundskeeper.record.backing import READING, Record, RecordReader
from groundskeeper.record.keys import SigningKey
from groundskeeper.record.ledger_format import history_steps, read_if_present
from groundskeeper.record.signed_file import read_signed, write_signed

__all__ = ["INDEX_FILE", "LoadedRecord", "load_record", "save_record"]

log = logging.getLogger(__name__)

INDEX_FILE = "_steps.index"
VERSION = 1
# The reader's fields as this code has them: an index written by code whose record had other
# fields (one added since, say) is not read, since it would lack what they hold.
SHAPE = hashlib.sha256(
    repr(
        (READING, [f.name for f in fields(Record)], [f.name for f in fields(RecordReader)])
    ).encode()
).hexdigest()
# what the signature covers starts with this: it can be taken for no other signed text
_CONTEXT = b"groundskeeper record index v1\n"


@dataclass
class LoadedRecord:
    """The record of a ledger as read at the start of a run, and how to continue it."""

    record: Record  # the caller's to use (and change: the runner does)
    state: dict[str, Any]  # the reader's, as `RecordReader.to_json` gave it at `offset`
    offset: int  # bytes of the ledger the reader has taken in (complete lines)
    digest: Any  # hashlib's SHA-256 of those bytes, to be continued
    source: Literal["index", "ledger"]  # whether the index was used


def index_path(ledger: Path) -> Path:
    return ledger.with_name(INDEX_FILE)


def load_record(ledger: Path, key: SigningKey) -> LoadedRecord:
    """The record of the ledger at `ledger`, from its index when the index may be used."""
    try:
        data = read_if_present(ledger, "ledger") or b""
    except GroundskeeperError:
        data = b""
    data = data[: data.rfind(b"\n") + 1]  # complete lines only
    found = _read_index(index_path(ledger), key)
    reader, start, digest = RecordReader(), 0, hashlib.sha256()
    kept: dict[str, Any] | None = None  # the index's state, while no line was fed after it
    if found is not None:
        size, sha, state = found
        prefix = hashlib.sha256(data[:size]) if size <= len(data) else None
        if prefix is not None and prefix.hexdigest() == sha:
            try:
                reader, start, digest = RecordReader.from_json(state), size, prefix
                kept = state
            except (KeyError, TypeError, ValueError) as error:
                log.warning("ignoring the record index %s: %r", index_path(ledger), error)
        else:
            log.info("the record index %s does not match the ledger: read again", ledger)
    for run, step, body in history_steps(data[start:]):
        reader.feed(run, step, body)
        kept = None
    digest.update(data[start:])
    source: Literal["index", "ledger"] = "index" if start else "ledger"
    # the index's own state is what `to_json` gives of the reader made from it: not made again
    state = kept if kept is not None else reader.to_json()
    return LoadedRecord(reader.record, state, len(data), digest, source)


def save_record(loaded: LoadedRecord, ledger: Path, key: SigningKey) -> tuple[int, str] | None:
    """Bring `loaded` up to the ledger's end (the lines appended since it was read) and write
    it as the index, signed with `key`. Best effort: an index that cannot be written is only
    a slower next resume. The bytes of the ledger it covers and their SHA-256 (None when the
    ledger could not be read)."""
    try:
        with open(ledger, "rb") as handle:
            handle.seek(loaded.offset)
            more = handle.read()
    except OSError as error:
        log.info("no record index for %s: %s", ledger, error)
        return None
    more = more[: more.rfind(b"\n") + 1]
    reader = RecordReader.from_json(loaded.state)
    for run, step, body in history_steps(more):
        reader.feed(run, step, body)
    digest = loaded.digest.copy()
    digest.update(more)
    payload = {
        "v": VERSION,
        "shape": SHAPE,
        "bytes": loaded.offset + len(more),
        "sha256": digest.hexdigest(),
        "key": key.public.key_id,
        "state": reader.to_json(),
    }
    write_signed(index_path(ledger), payload, key, _CONTEXT, "record index")
    return payload["bytes"], payload["sha256"]


def _read_index(path: Path, key: SigningKey) -> tuple[int, str, dict[str, Any]] | None:
    """(bytes, sha256, reader state) of an index this key signed, else None."""
    signed = read_signed(path, key, _CONTEXT, "record index", "this plan's key")
    if signed is None:
        return None
    size, sha, state = signed.get("bytes"), signed.get("sha256"), signed.get("state")
    if (
        signed.get("v") != VERSION
        or signed.get("shape") != SHAPE
        or type(size) is not int
        or size < 0
        or not isinstance(sha, str)
        or not isinstance(state, dict)
    ):
        log.info("ignoring the record index %s: another version's", path)
        return None
    return size, sha, state
