"""Reading a file that must be a regular file, without ever blocking on something else.

Plans, ledgers, model scripts and components are all read through `read_regular_file`: a
FIFO would block a plain read forever and a device such as /dev/zero never ends, so the file
is opened non-blocking and its type is checked on the open descriptor (no check-then-open race).
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path


class NotARegularFileError(OSError):
    """The path names a FIFO, socket or device: something that is not a file's contents."""


def read_regular_file(path: Path) -> bytes:
    """The bytes of `path`. Raises FileNotFoundError, IsADirectoryError, NotARegularFileError
    or another OSError; callers turn those into their own message naming the fix."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
        if not stat.S_ISREG(mode):
            raise NotARegularFileError(
                errno.EINVAL, "not a regular file (a FIFO, socket or device)", str(path)
            )
        return handle.read()
