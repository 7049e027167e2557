"""The per-run disk quota: how many bytes a run's commands and tools may write, in total.

One `DiskQuota` is made per run and handed to every sandbox stage and to the worker's
`write_file`. It counts bytes written, not the size files end up with: a rewritten byte
counts again, and deleting a file gives nothing back, so no sequence of writes can exceed it.
"""

from __future__ import annotations

import threading

DEFAULT_DISK_QUOTA = 1024 * 1024 * 1024
_MiB = 1024 * 1024


class DiskQuota:
    """A byte budget shared by threads; `take` refuses (and counts nothing) past the limit."""

    def __init__(self, limit: int = DEFAULT_DISK_QUOTA) -> None:
        if limit <= 0:
            raise ValueError(f"a disk quota must be a positive number of bytes, not {limit}")
        self.limit = limit
        self.exceeded = False
        self._used = 0
        self._lock = threading.Lock()

    @property
    def used(self) -> int:
        return self._used

    def left(self) -> int:
        return max(self.limit - self._used, 0)

    def take(self, size: int) -> bool:
        """Count `size` more bytes if they fit; else count nothing and return False."""
        with self._lock:
            if self._used + size > self.limit:
                self.exceeded = True
                return False
            self._used += size
            return True

    def charge(self, size: int) -> None:
        """Count bytes already written: a writer that asked `left()` first and wrote no more
        (another thread may have taken some in between; the excess is that race's, no more)."""
        with self._lock:
            self._used += size
            if self._used >= self.limit:
                self.exceeded = True

    def message(self) -> str:
        shown = f"{self.limit // _MiB} MiB" if self.limit % _MiB == 0 else f"{self.limit} bytes"
        return f"disk quota of {shown} exceeded"
