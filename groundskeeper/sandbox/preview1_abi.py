"""WASI preview1's numbers and byte layouts, and moving bytes in and out of guest memory.

It owns the errno values, file types, flags and rights, the structs calls read and write, `Sink`
and `WasiError`; it decides nothing about what any call does (`preview1` and its layers do).
"""

from __future__ import annotations

import errno
import os
import stat
import struct
from typing import Protocol

from groundskeeper.errors import GroundskeeperError

Memory = memoryview

# WASI errno values (wasi/api.h).
SUCCESS, ACCES, BADF, EXIST, FAULT, INVAL, IO, ISDIR, LOOP = 0, 2, 8, 20, 21, 28, 29, 31, 32
NOENT, NOSYS, NOTDIR, NOTSUP, PERM, ROFS, SPIPE, NOTCAPABLE = 44, 52, 54, 58, 63, 69, 70, 76
_ERRNO: dict[int, int] = {
    errno.E2BIG: 1, errno.EACCES: ACCES, errno.EAGAIN: 6, errno.EBADF: BADF, errno.EBUSY: 10,
    errno.EEXIST: EXIST, errno.EFAULT: FAULT, errno.EFBIG: 22, errno.EINTR: 27, errno.EINVAL: INVAL,
    errno.EIO: IO, errno.EISDIR: ISDIR, errno.ELOOP: LOOP, errno.EMFILE: 33, errno.EMLINK: 34,
    errno.ENAMETOOLONG: 37, errno.ENFILE: 41, errno.ENODEV: 43, errno.ENOENT: NOENT,
    errno.ENOMEM: 48, errno.ENOSPC: 51, errno.ENOSYS: NOSYS, errno.ENOTDIR: NOTDIR,
    errno.ENOTEMPTY: 55, errno.ENOTSUP: NOTSUP, errno.ENXIO: 60, errno.EOVERFLOW: 61,
    errno.EPERM: PERM, errno.EPIPE: 64, errno.ERANGE: 68, errno.EROFS: ROFS, errno.ESPIPE: SPIPE,
    errno.ETXTBSY: 74, errno.EXDEV: 75, errno.EDQUOT: 19,
}  # fmt: skip

# File types, flags and rights (wasi/api.h).
UNKNOWN, CHARACTER_DEVICE, DIRECTORY, REGULAR_FILE, SYMBOLIC_LINK = 0, 2, 3, 4, 7
O_CREAT, O_DIRECTORY, O_EXCL, O_TRUNC = 1, 2, 4, 8
FD_APPEND = 1
SYMLINK_FOLLOW = 1
ATIM, ATIM_NOW, MTIM, MTIM_NOW = 1, 2, 4, 8
R_FD_READ, R_FD_SEEK, R_FD_TELL, R_FD_WRITE, R_FD_READDIR = 1 << 1, 1 << 2, 1 << 5, 1 << 6, 1 << 14
R_WRITING = 1 << 0 | R_FD_WRITE | 1 << 8 | 1 << 22  # datasync, write, allocate, set_size
R_ALL = (1 << 30) - 1
R_STREAM = R_ALL & ~(R_FD_SEEK | R_FD_TELL)

IOV_MAX = 1024  # buffers one fd_read or fd_write may name, as on Linux
MAX_SYMLINKS = 40  # as Linux: more links than this on one path is ELOOP
NO_FILES = -1  # a Process's root_fd when the guest is to have no files at all
SLEEP_SLICE = 0.05  # seconds: a sleeping guest looks at its deadline this often

U32 = struct.Struct("<I")
U64 = struct.Struct("<Q")
_IOVEC = struct.Struct("<II")
PRESTAT = struct.Struct("<BxxxI")
FDSTAT = struct.Struct("<BxHxxxxQQ")
FILESTAT = struct.Struct("<QQB7xQQQQQ")
DIRENT = struct.Struct("<QQIB3x")
# userdata, tag, clock id, timeout, precision, flags
SUBSCRIPTION = struct.Struct("<QB7xIxxxxQQH6x")
EVENT = struct.Struct("<QHB5xQH6x")  # userdata, error, type, nbytes, flags


class Sink(Protocol):
    """Where a stage's stdout or stderr goes (the shell's buffers and redirection files)."""

    def room(self) -> int: ...

    def write(self, data: bytes) -> None: ...


class WasiError(GroundskeeperError):
    """A call fails with this WASI errno (the guest sees it; nothing is raised to wasmtime)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def wasi_errno(error: OSError) -> int:
    """The WASI errno for a host error (EIO when WASI has no number for it)."""
    return _ERRNO.get(error.errno or 0, IO)


def iovecs(memory: Memory, pointer: int, count: int) -> list[tuple[int, int]]:
    """The (pointer, length) buffers of the guest's iovec array at `pointer`."""
    if count > IOV_MAX:
        raise WasiError(INVAL)
    return [_IOVEC.unpack_from(memory, pointer + 8 * index) for index in range(count)]


def store(memory: Memory, pointer: int, data: bytes) -> None:
    """`data` into guest memory at `pointer` (EFAULT past its end)."""
    if pointer + len(data) > len(memory):
        raise WasiError(FAULT)
    memory[pointer : pointer + len(data)] = data


def load(memory: Memory, pointer: int, length: int) -> bytes:
    """`length` bytes of guest memory at `pointer` (EFAULT past its end)."""
    if pointer + length > len(memory):
        raise WasiError(FAULT)
    return bytes(memory[pointer : pointer + length])


def filetype(mode: int) -> int:
    """The WASI file type of a host `st_mode`."""
    if stat.S_ISREG(mode):
        return REGULAR_FILE
    if stat.S_ISDIR(mode):
        return DIRECTORY
    if stat.S_ISLNK(mode):
        return SYMBOLIC_LINK
    if stat.S_ISCHR(mode):
        return CHARACTER_DEVICE
    if stat.S_ISBLK(mode):
        return 1
    return UNKNOWN


def pack_stat(memory: Memory, out: int, info: os.stat_result, *, no_atime: bool = False) -> None:
    """A host stat as WASI's filestat, at `out` in guest memory. `no_atime`: the access time
    shown is the modification time (a check whose inputs are recorded: reading a file must
    not change what a later look at it sees)."""
    FILESTAT.pack_into(
        memory,
        out,
        info.st_dev,
        info.st_ino,
        filetype(info.st_mode),
        info.st_nlink,
        info.st_size,
        info.st_mtime_ns if no_atime else info.st_atime_ns,
        info.st_mtime_ns,
        info.st_ctime_ns,
    )
