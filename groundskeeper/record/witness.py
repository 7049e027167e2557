"""The witness: for each ledger (its checkpoint origin) the largest signed checkpoint this
home has seen, one file per origin in $GROUNDSKEEPER_HOME/witness/ (ledger/SPEC.md §12).

Owns those files: replacement under a lock, never a smaller head over a larger one.
It does not read ledgers or check signatures; whether a head extends the one on record is
the caller's to prove (the writer and `verify_ledger` compute the Merkle roots).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path

from groundskeeper.errors import GroundskeeperError
from groundskeeper.fastclass import fastclass
from groundskeeper.record.keys import groundskeeper_home
from groundskeeper.record.ledger_format import (
    ORIGIN_PREFIX,
    Checkpoint,
    new_temporary,
    parse_checkpoint,
)

__all__ = ["WITNESS_DIR", "Witness", "WitnessEntry", "WitnessError"]

WITNESS_DIR = "witness"
_LOCK_FILE = ".lock"
_SUFFIX = ".checkpoint"
_MAX_ENTRY_BYTES = 4096  # a checkpoint with one signature line is about 250 bytes


class WitnessError(GroundskeeperError):
    """A witness entry that cannot be read or written (unreadable, corrupt, disk full)."""


@fastclass(frozen=True)
class WitnessEntry:
    """The checkpoint on record for one origin: its size and raw root, and the signed note
    itself (SPEC §6 bytes) so that anyone can check who signed it."""

    origin: str
    size: int
    root: bytes
    note: bytes

    @classmethod
    def from_checkpoint(cls, checkpoint: Checkpoint, note: bytes) -> WitnessEntry:
        return cls(checkpoint.origin, checkpoint.size, checkpoint.root, note)


def _same_head(a: WitnessEntry | None, b: WitnessEntry | None) -> bool:
    if a is None or b is None:
        return a is b
    return (a.size, a.root) == (b.size, b.root)


class Witness:
    """A witness directory: $GROUNDSKEEPER_HOME/witness unless told otherwise.

    The writer records a checkpoint on every commit, so `record` is kept to a handful of
    system calls: no rename, no flush, no parse when the entry is the one it expected.
    """

    def __init__(self, directory: Path | None = None) -> None:
        self.directory = directory if directory is not None else groundskeeper_home() / WITNESS_DIR
        self._lock_path = os.path.join(self.directory, _LOCK_FILE)

    def entry_path(self, origin: str) -> Path:
        return self.directory / (origin.removeprefix(ORIGIN_PREFIX) + _SUFFIX)

    def lookup(self, origin: str) -> WitnessEntry | None:
        """The entry on record for `origin`, None if there is none; WitnessError if it is
        unreadable or not a checkpoint of that origin."""
        if not self.directory.exists():
            return None
        with self._locked(fcntl.LOCK_SH):
            return self._parse(origin, self._read(origin))

    def record(
        self, new: WitnessEntry, *, expected: WitnessEntry | None, sync: bool
    ) -> WitnessEntry:
        """Put `new` on record if the entry there now is still `expected` (the head the
        caller proved `new` extends) and is smaller; return the entry on record afterwards.

        Never shrinks: an entry at least as large as `new` stays, whatever its root. `sync`
        flushes the entry to stable storage (a new entry always is).
        """
        with self._locked(fcntl.LOCK_EX):
            data = self._read(new.origin)
            if expected is not None and data == expected.note:
                current: WitnessEntry | None = expected  # parsed when it was recorded
            else:
                current = self._parse(new.origin, data)
            if current is not None and current.size >= new.size:
                return current
            if current is not None and not _same_head(current, expected):
                return current  # someone else moved it: `new` was not proved against that
            if current is not None and len(new.note) >= len(current.note):
                self._overwrite(new, sync=sync)
            else:
                self._replace(new)
            return new

    def _read(self, origin: str) -> bytes | None:
        path = self.entry_path(origin)
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise WitnessError(
                f"cannot read the witness entry {path}: {exc.strerror or exc}"
            ) from exc
        try:
            return os.read(fd, _MAX_ENTRY_BYTES + 1)
        except OSError as exc:
            raise WitnessError(
                f"cannot read the witness entry {path}: {exc.strerror or exc}"
            ) from exc
        finally:
            os.close(fd)

    def _parse(self, origin: str, data: bytes | None) -> WitnessEntry | None:
        if data is None:
            return None
        path = self.entry_path(origin)
        if len(data) > _MAX_ENTRY_BYTES:
            raise WitnessError(f"the witness entry {path} is over {_MAX_ENTRY_BYTES} bytes")
        parsed = parse_checkpoint(data)
        if isinstance(parsed, str):
            raise WitnessError(f"the witness entry {path} is not a checkpoint: {parsed}")
        if parsed.origin != origin:
            raise WitnessError(f"the witness entry {path} names another ledger ({parsed.origin})")
        return WitnessEntry.from_checkpoint(parsed, data)

    @contextlib.contextmanager
    def _locked(self, operation: int) -> Iterator[None]:
        # One lock for the directory: an entry may be replaced by rename, so a lock on the
        # entry file would be a lock on an inode that is about to be unlinked. Readers lock
        # too, since an entry is mostly overwritten in place.
        try:
            try:
                fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
            except FileNotFoundError:
                self.directory.mkdir(parents=True, exist_ok=True, mode=0o700)
                fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise WitnessError(
                f"cannot open the witness {self.directory}: {exc.strerror or exc}"
            ) from exc
        try:
            fcntl.flock(fd, operation)
            yield
        finally:
            os.close(fd)  # closing releases the flock

    def _overwrite(self, entry: WitnessEntry, *, sync: bool) -> None:
        # In place, over a note no longer than this one (a larger size never has fewer
        # digits): on ext4 a rename over the entry starts writeback of the new file and costs
        # a millisecond per append; an in-place write of one block costs microseconds and,
        # unflushed, leaves the old entry or the new one (a block is written whole).
        path = self.entry_path(entry.origin)
        try:
            fd = os.open(path, os.O_WRONLY)
            try:
                written = os.pwrite(fd, entry.note, 0)
                if written != len(entry.note):
                    raise OSError(f"only {written} of {len(entry.note)} bytes were written")
                if sync:
                    os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise WitnessError(
                f"cannot write the witness entry {path}: {exc.strerror or exc}"
            ) from exc

    def _replace(self, entry: WitnessEntry) -> None:
        # A new entry, or a shorter note (a checkpoint with fewer signature lines): written
        # aside, flushed and renamed in; rare, so always durable.
        path = self.entry_path(entry.origin)
        try:
            fd, tmp = new_temporary(path)
            try:
                try:
                    written = os.write(fd, entry.note)
                    if written != len(entry.note):
                        raise OSError(f"only {written} of {len(entry.note)} bytes were written")
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(tmp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
            dir_fd = os.open(self.directory, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
        except OSError as exc:
            raise WitnessError(
                f"cannot write the witness entry {path}: {exc.strerror or exc}"
            ) from exc
