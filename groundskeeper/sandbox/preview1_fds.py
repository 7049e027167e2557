"""A WASI preview1 process's fd table and its fd_* calls, served on the host.

It owns `Handle`, the state every call of a process sees (`FdCalls`: arguments, streams, root,
limits, open descriptors) and the calls on descriptors; resolving paths is `preview1_paths`'.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import groundskeeper.sandbox.fence as fences
import groundskeeper.sandbox.read_set as read_set
import groundskeeper.sandbox.writes as writes
from groundskeeper.fastclass import fastclass, field
from groundskeeper.sandbox.hostcall import GuestTrap
from groundskeeper.sandbox.preview1_abi import (
    ACCES,
    ATIM,
    ATIM_NOW,
    BADF,
    DIRECTORY,
    DIRENT,
    FAULT,
    FD_APPEND,
    FDSTAT,
    FILESTAT,
    INVAL,
    ISDIR,
    MTIM,
    MTIM_NOW,
    NOTDIR,
    NOTSUP,
    PRESTAT,
    R_ALL,
    R_FD_READ,
    R_STREAM,
    R_WRITING,
    REGULAR_FILE,
    ROFS,
    SPIPE,
    SUCCESS,
    U32,
    U64,
    UNKNOWN,
    Memory,
    Sink,
    WasiError,
    filetype,
    iovecs,
    load,
    pack_stat,
    store,
)
from groundskeeper.sandbox.quota import DiskQuota
from groundskeeper.sandbox.read_set import list_directory
from groundskeeper.sandbox.result import Fault

__all__ = ["DEV_NULL", "FdCalls", "Handle", "list_directory"]


class _Discard:
    """`/dev/null` as a sink: room for anything, keeps nothing."""

    def room(self) -> int:
        return 1 << 62

    def write(self, data: bytes) -> None:
        pass


DEV_NULL = _Discard()


@fastclass
class Handle:
    """One open descriptor: a host file or directory, an in-memory stdin or a sink."""

    kind: int
    host_fd: int = -1  # -1: not a host file
    readable: bool = False
    writable: bool = False
    append: bool = False
    owned: bool = False  # this table closes host_fd
    data: bytes = b""  # an in-memory stdin
    offset: int = 0
    sink: Sink | None = None
    guest_name: bytes = b""  # a preopened directory's name
    depth: int = 0  # a directory's levels below the workdir
    listing: list[tuple[bytes, int, int]] | None = None
    frozen: bool = False  # in a read-only shelf (`FdCalls.shelves`): nothing changes there
    devices: bool = False  # the `/dev` preopen: holds `null` and nothing else
    loose: bool = False  # in a writable shelf: changes allowed even in a read-only run

    def rights(self) -> int:
        if self.kind == DIRECTORY:
            return R_ALL
        base = R_ALL if self.host_fd >= 0 and self.sink is None else R_STREAM
        if not self.readable:
            base &= ~R_FD_READ
        if not self.writable:
            base &= ~R_WRITING
        return base


@fastclass
class FdCalls:
    """What every WASI call of one process sees — its arguments, streams, root directory,
    limits and fd table — and the fd_* calls. `preview1.Process`, built on this through
    `preview1_paths.PathCalls`, is the class the calls are served from."""

    argv: list[str]
    env: list[tuple[str, str]]
    stdin: bytes | int  # bytes, or a host fd the caller owns
    stdout: Sink
    stderr: Sink
    root_fd: int  # the workdir, opened by the caller; NO_FILES for none
    guest_root: str  # the name the guest knows it by
    read_only: bool
    deadline: float  # time.monotonic() past which a sleeping guest stops
    stopped: Callable[[], bool] = lambda: False  # the run was stopped from outside
    quota: DiskQuota | None = None  # the run's disk quota, for files the guest writes
    # More preopened directories after the workdir (fd 4, 5, …), each (open host fd the caller
    # closes, guest name, writable): CPython's site directory, read-only whatever `read_only`
    # says, and its private scratch /tmp, writable even in a read-only run.
    shelves: tuple[tuple[int, str, bool], ...] = ()
    dev_null: bool = False  # a preopened `/dev` holding `null` (reads nothing, drops writes)
    # Names ending so (`.mpy`) are absent to path_open and path_filestat_get: a file the
    # interpreter would load as code no one can read (see micropython.py).
    absent_suffixes: tuple[bytes, ...] = ()
    # what the guest's `sched_yield` also does: a memory image's part (`hostcall.Rewind`)
    on_yield: Callable[[], None] | None = None
    exit_code: int | None = None
    fault: Fault | None = None  # "output", "deadline" or "disk", found by a host call
    host_error: BaseException | None = None
    fds: dict[int, Handle] = field(default_factory=dict)
    fence: fences.Fence = field(default_factory=fences.active)
    # what the run changes in the workdir, when this thread's work is recording it
    journal: writes.WriteJournal | None = field(default_factory=writes.current)
    # what the run reads from the workdir, when this thread's work is recording it (a check)
    reads: read_set.ReadSet | None = field(default_factory=read_set.current)

    def __post_init__(self) -> None:
        if self.reads is not None and read_set.hides_inputs(self.fence):
            self.reads.taint("the fence hides inputs")
        if isinstance(self.stdin, int):
            kind = filetype(os.fstat(self.stdin).st_mode)
            stdin = Handle(kind, host_fd=self.stdin, readable=True)
        else:
            stdin = Handle(UNKNOWN, readable=True, data=self.stdin)
        self.fds = {
            0: stdin,
            1: Handle(UNKNOWN, writable=True, sink=self.stdout),
            2: Handle(UNKNOWN, writable=True, sink=self.stderr),
        }
        if self.root_fd >= 0:  # NO_FILES (-1): no directory at all, so no path resolves
            self.fds[3] = Handle(
                DIRECTORY, host_fd=self.root_fd, readable=True, guest_name=self.guest_root.encode()
            )
        for shelf_fd, name, writable in self.shelves:
            self.fds[len(self.fds)] = Handle(
                DIRECTORY,
                host_fd=shelf_fd,
                readable=True,
                guest_name=name.encode(),
                frozen=not writable,
                loose=writable,
            )
        if self.dev_null:
            self.fds[len(self.fds)] = Handle(
                DIRECTORY, readable=True, guest_name=b"/dev", frozen=True, devices=True
            )

    def close(self) -> None:
        for handle in self.fds.values():
            if handle.owned:
                os.close(handle.host_fd)
        self.fds.clear()

    def on_error(self, error: BaseException) -> bytes:
        """What a failed host call becomes: a trap; unexpected errors are kept for the host."""
        if not isinstance(error, GuestTrap):
            self.host_error = error
        return (error.message if isinstance(error, GuestTrap) else "host error").encode()

    # -- the fd table

    def _handle(self, fd: int) -> Handle:
        handle = self.fds.get(fd)
        if handle is None:
            raise WasiError(BADF)
        return handle

    def _directory(self, fd: int) -> Handle:
        handle = self._handle(fd)
        if handle.kind != DIRECTORY:
            raise WasiError(NOTDIR)
        return handle

    def _new_fd(self, handle: Handle) -> int:
        fd = 4
        while fd in self.fds:
            fd += 1
        self.fds[fd] = handle
        return fd

    def _check_running(self) -> None:
        if self.stopped():
            raise GuestTrap("stopped")

    def _refuse_writes(self, *fds: int) -> None:
        """EROFS for a change in `fds` (the directories or files it acts in) under a read-only
        shelf, or in a read-only run outside a writable shelf."""
        if any(self._frozen(self._handle(fd)) for fd in fds) or (self.read_only and not fds):
            raise WasiError(ROFS)

    def _frozen(self, handle: Handle) -> bool:
        return handle.frozen or (self.read_only and not handle.loose)

    # -- descriptors: fd_* calls

    def fd_prestat_get(self, memory: Memory, fd: int, out: int) -> int:
        handle = self.fds.get(fd)
        if handle is None or not handle.guest_name:
            return BADF
        PRESTAT.pack_into(memory, out, 0, len(handle.guest_name))
        return SUCCESS

    def fd_prestat_dir_name(self, memory: Memory, fd: int, out: int, length: int) -> int:
        handle = self.fds.get(fd)
        if handle is None or not handle.guest_name:
            return BADF
        store(memory, out, handle.guest_name[:length])
        return SUCCESS

    def fd_fdstat_get(self, memory: Memory, fd: int, out: int) -> int:
        handle = self._handle(fd)
        inheriting = R_ALL if handle.kind == DIRECTORY else 0
        flags = FD_APPEND if handle.append else 0
        FDSTAT.pack_into(memory, out, handle.kind, flags, handle.rights(), inheriting)
        return SUCCESS

    def fd_fdstat_set_flags(self, _memory: Memory, fd: int, flags: int) -> int:
        handle = self._handle(fd)
        if flags & ~FD_APPEND or handle.host_fd < 0 or not handle.owned:
            return NOTSUP
        import fcntl  # only here: no box command changes its flags today

        current = fcntl.fcntl(handle.host_fd, fcntl.F_GETFL)
        wanted = current | os.O_APPEND if flags & FD_APPEND else current & ~os.O_APPEND
        fcntl.fcntl(handle.host_fd, fcntl.F_SETFL, wanted)
        handle.append = bool(flags & FD_APPEND)
        return SUCCESS

    def fd_filestat_get(self, memory: Memory, fd: int, out: int) -> int:
        handle = self._handle(fd)
        if handle.host_fd < 0:
            size = len(handle.data) if handle.readable else 0
            FILESTAT.pack_into(memory, out, 0, 0, handle.kind, 1, size, 0, 0, 0)
            return SUCCESS
        info = os.fstat(handle.host_fd)
        if self.reads is not None:
            self.reads.shown(fences.directory_path(handle.host_fd), info)
        pack_stat(memory, out, info, no_atime=self.reads is not None)
        return SUCCESS

    def fd_sync(self, _memory: Memory, fd: int) -> int:
        """Success for any open descriptor: the sandbox promises nothing about durability,
        and a guest calling it in a loop must not make the host wait on the disk."""
        self._handle(fd)
        return SUCCESS

    def fd_datasync(self, memory: Memory, fd: int) -> int:
        return self.fd_sync(memory, fd)

    def fd_advise(self, _memory: Memory, fd: int, _offset: int, _length: int, _advice: int) -> int:
        """Advice only: nothing to do, for any open descriptor."""
        self._handle(fd)
        return SUCCESS

    def fd_allocate(self, _memory: Memory, fd: int, _offset: int, _length: int) -> int:
        """Refused: space reserved ahead is disk the quota never saw written."""
        self._handle(fd)
        return NOTSUP

    def fd_tell(self, memory: Memory, fd: int, out: int) -> int:
        handle = self._handle(fd)
        if handle.host_fd < 0 or handle.kind not in (REGULAR_FILE, UNKNOWN):
            return SPIPE if handle.kind != DIRECTORY else BADF
        U64.pack_into(memory, out, os.lseek(handle.host_fd, 0, os.SEEK_CUR))
        return SUCCESS

    def fd_filestat_set_size(self, _memory: Memory, fd: int, size: int) -> int:
        """Truncate or extend an open file; the bytes an extension adds count against the
        quota, as if written (a file cannot grow past the quota by ftruncate)."""
        handle = self._file(fd, writing=True)
        current = os.fstat(handle.host_fd).st_size
        if size > current and not self._take_quota(size - current):
            self.fault = "disk"
            raise GuestTrap("disk quota")
        os.ftruncate(handle.host_fd, size)
        return SUCCESS

    def fd_filestat_set_times(
        self, _memory: Memory, fd: int, atime: int, mtime: int, which: int
    ) -> int:
        handle = self._file(fd, writing=False)
        if self.reads is not None:
            self.reads.taint("a write (times)")
        self._refuse_writes(fd)
        info = os.fstat(handle.host_fd)
        if self.fence.is_read_only_file(info):
            self.fence.note(fences.PROTECTED, handle.host_fd)
            return ACCES  # a protected input keeps even its times
        now = time.time_ns()
        access = now if which & ATIM_NOW else atime if which & ATIM else info.st_atime_ns
        modify = now if which & MTIM_NOW else mtime if which & MTIM else info.st_mtime_ns
        os.utime(handle.host_fd, ns=(access, modify))
        return SUCCESS

    def fd_pread(
        self, memory: Memory, fd: int, iovs: int, count: int, offset: int, out: int
    ) -> int:
        handle = self._file(fd, writing=False)
        if not handle.readable:
            return BADF
        self._check_running()
        vectors = iovecs(memory, iovs, count)
        wanted = min(sum(length for _, length in vectors), len(memory))
        data = os.pread(handle.host_fd, wanted, offset)
        done = 0
        for pointer, length in vectors:
            piece = data[done : done + length]
            store(memory, pointer, piece)
            done += len(piece)
            if done >= len(data):
                break
        U32.pack_into(memory, out, len(data))
        return SUCCESS

    def fd_pwrite(
        self, memory: Memory, fd: int, iovs: int, count: int, offset: int, out: int
    ) -> int:
        handle = self._file(fd, writing=True)
        self._check_running()
        vectors = iovecs(memory, iovs, count)
        data = b"".join(load(memory, pointer, length) for pointer, length in vectors)
        if not self._take_quota(len(data)):
            self.fault = "disk"
            raise GuestTrap("disk quota")
        view, at = memoryview(data), offset
        while view:
            written = os.pwrite(handle.host_fd, view, at)
            view, at = view[written:], at + written
        U32.pack_into(memory, out, len(data))
        return SUCCESS

    def _file(self, fd: int, *, writing: bool) -> Handle:
        """An open host file (not a stream or a directory), writable if `writing`."""
        handle = self._handle(fd)
        if writing and self.reads is not None:
            self.reads.taint("a write")
        if handle.kind == DIRECTORY:
            raise WasiError(ISDIR if writing else BADF)
        if handle.host_fd < 0 or handle.sink is not None:
            raise WasiError(SPIPE)
        if writing and not handle.writable:
            raise WasiError(BADF)
        return handle

    def _take_quota(self, size: int) -> bool:
        return self.quota is None or self.quota.take(size)

    def fd_close(self, _memory: Memory, fd: int) -> int:
        handle = self.fds.pop(fd, None)
        if handle is None:
            return BADF
        if handle.owned:
            os.close(handle.host_fd)
        return SUCCESS

    def fd_seek(self, memory: Memory, fd: int, offset: int, whence: int, out: int) -> int:
        handle = self._handle(fd)
        if handle.host_fd < 0 or handle.kind not in (REGULAR_FILE, UNKNOWN):
            return SPIPE if handle.kind != DIRECTORY else BADF
        if whence > 2:
            return INVAL
        signed = offset - (1 << 64) if offset >= 1 << 63 else offset
        U64.pack_into(memory, out, os.lseek(handle.host_fd, signed, whence))
        return SUCCESS

    def fd_read(self, memory: Memory, fd: int, iovs: int, count: int, out: int) -> int:
        handle = self._handle(fd)
        if not handle.readable:
            return BADF
        self._check_running()
        vectors = iovecs(memory, iovs, count)
        wanted = min(sum(length for _, length in vectors), len(memory))
        if handle.host_fd < 0:
            data = handle.data[handle.offset : handle.offset + wanted]
            handle.offset += len(data)
        elif handle.kind == DIRECTORY:
            return ISDIR
        elif len(vectors) == 1 and wanted == vectors[0][1]:
            # One buffer (how wasi-libc reads): the host reads straight into guest memory.
            pointer, length = vectors[0]
            if pointer + length > len(memory):
                return FAULT
            U32.pack_into(
                memory, out, os.readv(handle.host_fd, [memory[pointer : pointer + length]])
            )
            return SUCCESS
        else:
            data = os.read(handle.host_fd, wanted)
        done = 0
        for pointer, length in vectors:
            piece = data[done : done + length]
            store(memory, pointer, piece)
            done += len(piece)
            if done >= len(data):
                break
        U32.pack_into(memory, out, len(data))
        return SUCCESS

    def fd_write(self, memory: Memory, fd: int, iovs: int, count: int, out: int) -> int:
        handle = self._handle(fd)
        if not handle.writable:
            return BADF
        self._check_running()
        vectors = iovecs(memory, iovs, count)
        data = b"".join(load(memory, pointer, length) for pointer, length in vectors)
        if handle.sink is not None:
            room = handle.sink.room()
            if len(data) > room:
                handle.sink.write(data[: max(room, 0)])
                self.fault = "output"
                raise GuestTrap("output limit")
            handle.sink.write(data)
        else:
            if self.reads is not None:
                self.reads.taint("a write")
            if self.quota is not None and not self.quota.take(len(data)):
                self.fault = "disk"
                raise GuestTrap("disk quota")
            view = memoryview(data)
            while view:
                view = view[os.write(handle.host_fd, view) :]
        U32.pack_into(memory, out, len(data))
        return SUCCESS

    def fd_readdir(
        self, memory: Memory, fd: int, buffer: int, length: int, cookie: int, out: int
    ) -> int:
        handle = self._directory(fd)
        if handle.listing is None or cookie == 0:
            handle.listing = list_directory(handle.host_fd, self.fence)
            if self.reads is not None:
                self.reads.listed(fences.directory_path(handle.host_fd), handle.listing)
        chunk = bytearray()
        for index in range(min(cookie, len(handle.listing)), len(handle.listing)):
            name, inode, kind = handle.listing[index]
            chunk += DIRENT.pack(index + 1, inode, len(name), kind) + name
            if len(chunk) >= length:
                break
        used = min(len(chunk), length)
        store(memory, buffer, bytes(chunk[:used]))
        U32.pack_into(memory, out, used)
        return SUCCESS
