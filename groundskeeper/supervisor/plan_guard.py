"""The plan file during a run: the runner's verdicts written back atomically in batches, and
any other change to the file kept aside as `<plan>.rejected-N` and undone (`Tamper`).
Which task is to blame for a tampering is the runner's call, not this module's.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from groundskeeper.diagnostics import Diagnostic
from groundskeeper.plan.edit import write_atomically

log = logging.getLogger(__name__)


@dataclass(eq=False)
class Tamper:
    """The plan file was found changed by someone other than the runner."""

    rejected_path: Path | None  # where the foreign version was kept; None if the file was gone
    sha256: str
    task_ids: list[str] = field(default_factory=list)  # tasks failed closed because of it

    def describe(self) -> str:
        if self.rejected_path is None:
            found = "the plan file was deleted during the run"
        else:
            found = (
                "the plan file was changed during the run by something other than the runner;"
                f" the foreign version is kept as {self.rejected_path.name}"
            )
        return f"{found}, and the runner's version was restored"

    def diagnostic(self) -> Diagnostic:
        blamed = f" (failed closed: {', '.join(self.task_ids)})" if self.task_ids else ""
        return Diagnostic("error", "plan", self.describe() + blamed, None, "R003")


class PlanGuard:
    """Writes the runner's plan text on a writer thread, coalescing verdicts (group commit).

    Before every write, and whenever asked (`verify`), the file is compared with what the
    runner may have on disk; anything else is kept aside as `<plan>.rejected-N` and undone.
    Callbacks given to `submit` run on the writer thread: `before` ones just before the text
    containing their verdict is written, the others once it is durable, and `settled` ones
    after those, once per write however many of its verdicts named the same one (a write
    coalescing many verdicts settles them together: one ledger commit, not one each).
    """

    def __init__(
        self,
        path: Path,
        text: str,
        rejected_dir: Path | None = None,
        hold: Callable[[], None] | None = None,
    ) -> None:
        self.path = path
        # called on the writer thread before every write: if it raises, nothing is written
        # from then on (the runner's seal, which reports its own failure)
        self._hold = hold
        self.held = False
        self.rejected_dir = rejected_dir if rejected_dir is not None else path.parent
        data = text.encode("utf-8")
        self._io = threading.Lock()
        self._last = data
        self._known: tuple[bytes, ...] = (data,)
        self._cond = threading.Condition()
        self._wanted: bytes | None = None
        self._wanted_text = ""
        self._callbacks: list[Callable[[], None]] = []
        self._befores: list[Callable[[], None]] = []
        self._settled: dict[Callable[[], None], None] = {}  # ordered, each once
        self._found: list[Tamper] = []
        self._closing = False
        self.failure: str | None = None  # the plan could not be written or restored: stop
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._writer, name="plan-writer", daemon=True)
        self._thread.start()

    def submit(
        self,
        text: str,
        written: Callable[[], None],
        before: Callable[[], None] | None = None,
        settled: Callable[[], None] | None = None,
    ) -> None:
        with self._cond:
            if self.failure is not None or self.held:
                return  # latched: the runner stops at its next scheduling point
            self._wanted = text.encode("utf-8")
            self._wanted_text = text
            self._callbacks.append(written)
            if before is not None:
                self._befores.append(before)
            if settled is not None:
                self._settled[settled] = None
            self._cond.notify()

    def verify(self) -> list[Tamper]:
        """Tampering found since the last call (by the writer, or now)."""
        current = _read_plain(self.path)
        if current is None or current not in self._known:
            with self._io:
                try:
                    tamper = self._restore_if_foreign()
                except OSError as exc:
                    self._fail(exc)
                    tamper = None
            if tamper is not None:
                with self._cond:
                    self._found.append(tamper)
        with self._cond:
            found, self._found = self._found, []
        return found

    def close(self) -> list[Tamper]:
        """Flush every submitted text, stop the writer, look at the file one last time."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()
        return self.verify()

    def _writer(self) -> None:
        while True:
            with self._cond:
                while self._wanted is None and not self._closing:
                    self._cond.wait()
                if self._wanted is None:
                    return
                data, callbacks, befores = self._wanted, self._callbacks, self._befores
                settled = list(self._settled)
                self._wanted, self._callbacks, self._befores = None, [], []
                self._settled = {}
                text = self._wanted_text
            if self._hold is not None:
                try:
                    self._hold()
                except Exception as exc:
                    log.error("not writing %s: %s", self.path, exc)
                    with self._cond:
                        self.held = True
                    return
            try:
                for callback in befores:
                    callback()
                with self._io:
                    tamper = self._restore_if_foreign()
                    self._known = (self._last, data)  # either may be on disk mid-replace
                    write_atomically(self.path, text)
                    self._last = data
                    self._known = (data,)
                if tamper is not None:
                    with self._cond:
                        self._found.append(tamper)
                for callback in [*callbacks, *settled]:
                    callback()
            except OSError as exc:  # a full disk, a read-only file: R006 names it, no trace
                log.debug("writing %s failed", self.path, exc_info=True)
                self._fail(exc)
                return
            except Exception as exc:  # latched; the scheduler stops at its next turn
                log.exception("writing %s failed", self.path)
                self._fail(exc)
                return

    def written(self) -> str:
        """The plan as this guard last wrote it (or found it): what the file holds of the
        run's verdicts, whatever was asked for after a write failed."""
        with self._io:
            return self._last.decode("utf-8")

    def _fail(self, exc: BaseException) -> None:
        with self._cond:
            if self.failure is None:
                why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                self.failure = f"cannot write the plan {self.path}: {why}"

    def _restore_if_foreign(self) -> Tamper | None:
        """With the I/O lock held: undo a foreign change, keeping the foreign bytes aside.

        Whatever stands at the plan's path that is not a regular file (a directory, a link,
        a FIFO) is moved aside whole, then the plan is written back: the supervisor's plan
        is restored before anything else is attempted."""
        try:
            info: os.stat_result | None = os.lstat(self.path)
        except FileNotFoundError:
            info = None
        current = (
            _read_plain(self.path) if info is not None and stat.S_ISREG(info.st_mode) else None
        )
        if current == self._last:
            return None
        rejected: Path | None = None
        if current is not None:
            rejected = self._keep_aside(lambda target: _write_new(target, current))
        elif info is not None and stat.S_ISLNK(info.st_mode):
            # a link, kept as a link to where it pointed (a relative one would dangle from
            # the rejected folder); the runner's plan then replaces it
            pointed = os.path.join(self.path.parent, os.readlink(self.path))
            rejected = self._keep_aside(lambda target: os.symlink(pointed, target))
        elif info is not None:  # not a file: moved aside as it is
            rejected = self._keep_aside(lambda target: os.rename(self.path, target))
        write_atomically(self.path, self._last.decode("utf-8"))
        return Tamper(rejected, hashlib.sha256(current or b"").hexdigest())

    def _keep_aside(self, put: Callable[[Path], None]) -> Path:
        """Put the foreign version at the next free rejected name (a name taken meanwhile is
        skipped, never overwritten)."""
        for _ in range(100):
            target = self._next_rejected()
            try:
                put(target)
                return target
            except FileExistsError:
                continue
        raise OSError(f"no free name for a rejected copy in {self.rejected_dir}")

    def _next_rejected(self) -> Path:
        prefix = f"{self.path.name}.rejected-"
        self.rejected_dir.mkdir(mode=0o700, exist_ok=True)
        numbers = [
            int(name[len(prefix) :])
            for name in os.listdir(self.rejected_dir)
            if name.startswith(prefix) and re.fullmatch(r"[0-9]{1,9}", name[len(prefix) :])
        ]  # ASCII digits only: `²` is a digit to str.isdigit() and not to int()
        return self.rejected_dir / f"{prefix}{max(numbers, default=0) + 1}"


def _read_plain(path: Path) -> bytes | None:
    """The bytes of a regular file at `path` (no link followed); None for anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def _write_new(target: Path, data: bytes) -> None:
    with target.open("xb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
