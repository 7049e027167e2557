"""What has acted on the workdir during a run, as far as a DONE asserted again needs to know:
whether anything could have changed what a verdict was given on since it was given.

Two things act on the workdir while a run goes on: a worker's tool call, and a dock (the
supervisor copying a built component into place). Each is counted when it starts and again
once it has ended and its step is sealed. A verdict's pipeline takes a `mark` before its first
stage: the count, or None when an action is under way then (its effect could land during the
verdict). While the count still equals the mark, no worker and no dock has acted since the
verdict began, so judging the task again would judge the same files: the final sweep and a
parent's roll-up seal the task as untouched instead of running its check again.

Only this run's own actions are counted, in this process, where no worker reaches: a DONE
carried from an earlier run has no mark and is judged again as before.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext

__all__ = ["Activity"]


class Activity:
    """The run's count of actions on the workdir (started and ended), and those under way."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._open = 0

    @contextmanager
    def acting(self) -> Iterator[None]:
        """One action on the workdir: counted as it starts and once more when it ends."""
        with self._lock:
            self._count += 1
            self._open += 1
        try:
            yield
        finally:
            with self._lock:
                self._count += 1
                self._open -= 1

    def judging(self, docks: bool) -> AbstractContextManager[None]:
        """Around a verdict's pipeline: one that `docks` acts on the workdir (its dock)."""
        return self.acting() if docks else nullcontext()

    def mark(self) -> int | None:
        """Where a verdict begins: the count, or None while an action is under way."""
        with self._lock:
            return None if self._open else self._count

    def untouched_since(self, mark: int | None) -> bool:
        """Whether nothing has acted on the workdir since `mark` was taken."""
        if mark is None:
            return False
        with self._lock:
            return self._open == 0 and self._count == mark
