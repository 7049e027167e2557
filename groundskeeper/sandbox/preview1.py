"""WASI preview1 for box.wasm and MicroPython, served on the host: fd table, confined paths.

Each call runs on the thread that runs the guest. (wasmtime's own WASI hands every file
operation to a tokio worker thread; on these machines each hand-off cost ~0.3 ms, more than
the commands themselves.) Confinement: the workdir is the only preopened directory, and
every path is walked one component at a time from an open directory fd with O_NOFOLLOW;
symlinks are read and spliced in by this code, so `..` or a link can never leave the root.
"""

from __future__ import annotations

import errno
import os
import stat
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from groundskeeper.errors import GroundskeeperError
from groundskeeper.sandbox import fence as fences
from groundskeeper.sandbox.hostcall import GuestTrap, HostFunction
from groundskeeper.sandbox.quota import DiskQuota
from groundskeeper.sandbox.result import Fault

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
SLEEP_SLICE = 0.05  # seconds: a sleeping guest looks at its deadline this often

_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_IOVEC = struct.Struct("<II")
_PRESTAT = struct.Struct("<BxxxI")
_FDSTAT = struct.Struct("<BxHxxxxQQ")
_FILESTAT = struct.Struct("<QQB7xQQQQQ")
_DIRENT = struct.Struct("<QQIB3x")
# userdata, tag, clock id, timeout, precision, flags
_SUBSCRIPTION = struct.Struct("<QB7xIxxxxQQH6x")
_EVENT = struct.Struct("<QHB5xQH6x")  # userdata, error, type, nbytes, flags


class Sink(Protocol):
    """Where a stage's stdout or stderr goes (the shell's buffers and redirection files)."""

    def room(self) -> int: ...

    def write(self, data: bytes) -> None: ...


class WasiError(GroundskeeperError):
    """A call fails with this WASI errno (the guest sees it; nothing is raised to wasmtime)."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


def _wasi_errno(error: OSError) -> int:
    return _ERRNO.get(error.errno or 0, IO)


# ---- the fd table ---------------------------------------------------------------------------


@dataclass
class _Handle:
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

    def rights(self) -> int:
        if self.kind == DIRECTORY:
            return R_ALL
        base = R_ALL if self.host_fd >= 0 and self.sink is None else R_STREAM
        if not self.readable:
            base &= ~R_FD_READ
        if not self.writable:
            base &= ~R_WRITING
        return base


@dataclass
class Process:
    """One run of box.wasm: what its WASI calls see and what they did."""

    argv: list[str]
    env: list[tuple[str, str]]
    stdin: bytes | int  # bytes, or a host fd the caller owns
    stdout: Sink
    stderr: Sink
    root_fd: int  # the workdir, opened by the caller
    guest_root: str  # the name the guest knows it by
    read_only: bool
    deadline: float  # time.monotonic() past which a sleeping guest stops
    stopped: Callable[[], bool] = lambda: False  # the run was stopped from outside
    quota: DiskQuota | None = None  # the run's disk quota, for files the guest writes
    exit_code: int | None = None
    fault: Fault | None = None  # "output", "deadline" or "disk", found by a host call
    host_error: BaseException | None = None
    fds: dict[int, _Handle] = field(default_factory=dict)
    fence: fences.Fence = field(default_factory=fences.active)

    def __post_init__(self) -> None:
        if isinstance(self.stdin, int):
            kind = _filetype(os.fstat(self.stdin).st_mode)
            stdin = _Handle(kind, host_fd=self.stdin, readable=True)
        else:
            stdin = _Handle(UNKNOWN, readable=True, data=self.stdin)
        root = _Handle(
            DIRECTORY, host_fd=self.root_fd, readable=True, guest_name=self.guest_root.encode()
        )
        self.fds = {
            0: stdin,
            1: _Handle(UNKNOWN, writable=True, sink=self.stdout),
            2: _Handle(UNKNOWN, writable=True, sink=self.stderr),
            3: root,
        }

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

    # -- helpers

    def _handle(self, fd: int) -> _Handle:
        handle = self.fds.get(fd)
        if handle is None:
            raise WasiError(BADF)
        return handle

    def _directory(self, fd: int) -> _Handle:
        handle = self._handle(fd)
        if handle.kind != DIRECTORY:
            raise WasiError(NOTDIR)
        return handle

    def _new_fd(self, handle: _Handle) -> int:
        fd = 4
        while fd in self.fds:
            fd += 1
        self.fds[fd] = handle
        return fd

    def _check_running(self) -> None:
        if self.stopped():
            raise GuestTrap("stopped")

    def _refuse_writes(self) -> None:
        if self.read_only:
            raise WasiError(ROFS)

    def _walk(self, fd: int, path: bytes, follow: bool) -> tuple[int, bytes, int]:
        """Resolve `path` under directory `fd`: (an open directory the caller closes, the last
        component in it, that directory's depth below the workdir). The component is `.` for
        the directory itself, never `..`.

        Every step opens one name with O_NOFOLLOW relative to the step before. A symlink met
        on the way (or at the end, when following) is read and its target walked in its
        place; an absolute target or a `..` above the root is refused (ENOTCAPABLE).
        """
        handle = self._directory(fd)
        # The depth of stack[-1] is handle.depth + len(stack) - 1; the returns below compute
        # it after their pop(), as handle.depth + len(stack).
        base, depth = handle.host_fd, handle.depth
        if not path:
            raise WasiError(NOENT)
        if b"\0" in path:
            raise WasiError(INVAL)
        if path.startswith(b"/"):
            raise WasiError(NOTCAPABLE)
        parts = path.split(b"/")
        if parts[-1] == b"":  # "dir/": the directory itself, links followed
            parts[-1] = b"."
        parts.reverse()  # a stack: the next component is last
        stack = [os.dup(base)]
        links = 0
        try:
            while True:
                part = parts.pop()
                last = not parts
                if part in (b"", b"."):
                    if last:
                        return stack.pop(), b".", depth + len(stack)
                    continue
                if part == b"..":
                    if len(stack) == 1:
                        raise WasiError(NOTCAPABLE)
                    os.close(stack.pop())
                    if last:
                        return stack.pop(), b".", depth + len(stack)
                    continue
                if self.fence.hides_name(part):
                    raise WasiError(NOENT)  # the control plane is absent, by any spelling
                if last and not follow:
                    return stack.pop(), part, depth + len(stack)
                target = _link_target(part, stack[-1], last)
                if target is not None:
                    links += 1
                    if links > MAX_SYMLINKS:
                        raise WasiError(LOOP)
                    if target.startswith(b"/") or not target:
                        raise WasiError(NOTCAPABLE)
                    pieces = target.split(b"/")
                    if pieces[-1] == b"":
                        pieces[-1] = b"."
                    parts.extend(reversed(pieces))
                    continue
                if last:
                    return stack.pop(), part, depth + len(stack)
                try:
                    inner = os.open(
                        part,
                        os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                        dir_fd=stack[-1],
                    )
                except OSError as error:
                    raise WasiError(_wasi_errno(error)) from error
                stack.append(inner)
                if self.fence.hidden and self.fence.hides(os.fstat(inner)):
                    raise WasiError(NOENT)
        finally:
            for leftover in stack:
                os.close(leftover)

    def _open_plain(
        self, fd: int, path: bytes, flags: int, follow: bool
    ) -> tuple[int, bytes, int] | None:
        """The common case of path_open without a walk: one name in directory `fd`, opened
        with O_NOFOLLOW (in `flags`). (host fd, name, the directory's depth), or None when
        `_walk` must decide: the path has several names, or is a link to follow."""
        if not _plain(path):
            return None
        if self.fence.hides_name(path):
            raise WasiError(NOENT)
        directory = self._directory(fd)
        try:
            return os.open(path, flags, 0o666, dir_fd=directory.host_fd), path, directory.depth
        except OSError as error:
            if error.errno == errno.ELOOP and follow:
                return None
            raise WasiError(_wasi_errno(error)) from error

    def _named(self, fd: int, path: bytes, dot: int) -> tuple[int, bytes, int]:
        """`_walk` for calls that act on the name itself (unlink, mkdir, rename, …); a path
        that ends at a directory itself (`.`, `dir/..`) fails with errno `dot`. A trailing
        slash is dropped here: each call decides what it means (see `_trailing`)."""
        parent, name, depth = self._walk(fd, path.rstrip(b"/") or path, follow=False)
        if name == b".":
            os.close(parent)
            raise WasiError(dot)
        return parent, name, depth

    def _fenced(self, parent: int, name: bytes, *, changing: bool) -> None:
        """Refuse acting on `name` in `parent` when the fence says so: a hidden directory is
        absent; a pinned directory or a read-only file cannot be changed (EACCES)."""
        try:
            info: os.stat_result | None = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is not None and self.fence.hides(info):
            raise WasiError(NOENT)
        if changing and (
            (info is not None and self.fence.pins(info))
            or self.fence.guards(os.fstat(parent), name)
        ):
            raise WasiError(ACCES)

    @staticmethod
    def _require_directory(parent: int, name: bytes) -> None:
        """A name written with a trailing slash must be a directory (as in POSIX)."""
        if not stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
            raise WasiError(NOTDIR)

    # -- arguments, environment, clocks, exit

    def args_sizes_get(self, memory: Memory, count: int, size: int) -> int:
        return self._sizes(memory, self._argv_bytes(), count, size)

    def args_get(self, memory: Memory, pointers: int, buffer: int) -> int:
        return self._strings(memory, self._argv_bytes(), pointers, buffer)

    def environ_sizes_get(self, memory: Memory, count: int, size: int) -> int:
        return self._sizes(memory, self._env_bytes(), count, size)

    def environ_get(self, memory: Memory, pointers: int, buffer: int) -> int:
        return self._strings(memory, self._env_bytes(), pointers, buffer)

    def _argv_bytes(self) -> list[bytes]:
        return [os.fsencode(arg) for arg in self.argv]

    def _env_bytes(self) -> list[bytes]:
        return [os.fsencode(f"{key}={value}") for key, value in self.env]

    @staticmethod
    def _sizes(memory: Memory, strings: list[bytes], count: int, size: int) -> int:
        _U32.pack_into(memory, count, len(strings))
        _U32.pack_into(memory, size, sum(len(s) + 1 for s in strings))
        return SUCCESS

    @staticmethod
    def _strings(memory: Memory, strings: list[bytes], pointers: int, buffer: int) -> int:
        for index, string in enumerate(strings):
            _U32.pack_into(memory, pointers + 4 * index, buffer)
            _put(memory, buffer, string + b"\0")
            buffer += len(string) + 1
        return SUCCESS

    def clock_time_get(self, memory: Memory, clock: int, _precision: int, out: int) -> int:
        now = _clock_ns(clock)
        if now is None:
            return INVAL
        _U64.pack_into(memory, out, now)
        return SUCCESS

    def proc_exit(self, _memory: Memory, code: int) -> None:
        self.exit_code = code
        raise GuestTrap(f"exit {code}")

    def poll_oneoff(self, memory: Memory, subs: int, events: int, count: int, out: int) -> int:
        """Clock subscriptions sleep (in slices, so a deadline still ends the run); fd
        subscriptions are ready at once: every stream here is a file or a buffer."""
        if count == 0:
            return INVAL
        entries = [_SUBSCRIPTION.unpack_from(memory, subs + 48 * i) for i in range(count)]
        waits = [(data, _clock_target(c, t, f)) for data, tag, c, t, _, f in entries if tag == 0]
        ready = [(data, tag) for data, tag, *_ in entries if tag != 0]
        if not ready and waits:
            until = min(target for _, target in waits)
            while (left := until - time.monotonic()) > 0:
                self._check_running()
                if time.monotonic() >= self.deadline:
                    self.fault = "deadline"
                    raise GuestTrap("deadline")
                time.sleep(min(left, SLEEP_SLICE, max(self.deadline - time.monotonic(), 0)))
            now = time.monotonic()
            ready = [(data, 0) for data, target in waits if target <= now]
        for index, (data, tag) in enumerate(ready):
            _EVENT.pack_into(memory, events + 32 * index, data, SUCCESS, tag, 0, 0)
        _U32.pack_into(memory, out, len(ready))
        return SUCCESS

    # -- descriptors

    def fd_prestat_get(self, memory: Memory, fd: int, out: int) -> int:
        handle = self.fds.get(fd)
        if handle is None or not handle.guest_name:
            return BADF
        _PRESTAT.pack_into(memory, out, 0, len(handle.guest_name))
        return SUCCESS

    def fd_prestat_dir_name(self, memory: Memory, fd: int, out: int, length: int) -> int:
        handle = self.fds.get(fd)
        if handle is None or not handle.guest_name:
            return BADF
        _put(memory, out, handle.guest_name[:length])
        return SUCCESS

    def fd_fdstat_get(self, memory: Memory, fd: int, out: int) -> int:
        handle = self._handle(fd)
        inheriting = R_ALL if handle.kind == DIRECTORY else 0
        flags = FD_APPEND if handle.append else 0
        _FDSTAT.pack_into(memory, out, handle.kind, flags, handle.rights(), inheriting)
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
            _FILESTAT.pack_into(memory, out, 0, 0, handle.kind, 1, size, 0, 0, 0)
            return SUCCESS
        _pack_stat(memory, out, os.fstat(handle.host_fd))
        return SUCCESS

    def fd_sync(self, _memory: Memory, fd: int) -> int:
        """Success for any open descriptor: the sandbox promises nothing about durability,
        and a guest calling it in a loop must not make the host wait on the disk."""
        self._handle(fd)
        return SUCCESS

    def sched_yield(self, _memory: Memory) -> int:
        self._check_running()
        return SUCCESS

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
        _U64.pack_into(memory, out, os.lseek(handle.host_fd, signed, whence))
        return SUCCESS

    def fd_read(self, memory: Memory, fd: int, iovs: int, count: int, out: int) -> int:
        handle = self._handle(fd)
        if not handle.readable:
            return BADF
        self._check_running()
        vectors = _iovecs(memory, iovs, count)
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
            _U32.pack_into(
                memory, out, os.readv(handle.host_fd, [memory[pointer : pointer + length]])
            )
            return SUCCESS
        else:
            data = os.read(handle.host_fd, wanted)
        done = 0
        for pointer, length in vectors:
            piece = data[done : done + length]
            _put(memory, pointer, piece)
            done += len(piece)
            if done >= len(data):
                break
        _U32.pack_into(memory, out, len(data))
        return SUCCESS

    def fd_write(self, memory: Memory, fd: int, iovs: int, count: int, out: int) -> int:
        handle = self._handle(fd)
        if not handle.writable:
            return BADF
        self._check_running()
        vectors = _iovecs(memory, iovs, count)
        data = b"".join(_get(memory, pointer, length) for pointer, length in vectors)
        if handle.sink is not None:
            room = handle.sink.room()
            if len(data) > room:
                handle.sink.write(data[: max(room, 0)])
                self.fault = "output"
                raise GuestTrap("output limit")
            handle.sink.write(data)
        else:
            if self.quota is not None and not self.quota.take(len(data)):
                self.fault = "disk"
                raise GuestTrap("disk quota")
            view = memoryview(data)
            while view:
                view = view[os.write(handle.host_fd, view) :]
        _U32.pack_into(memory, out, len(data))
        return SUCCESS

    def fd_readdir(
        self, memory: Memory, fd: int, buffer: int, length: int, cookie: int, out: int
    ) -> int:
        handle = self._directory(fd)
        if handle.listing is None or cookie == 0:
            handle.listing = _list_directory(handle.host_fd, self.fence)
        chunk = bytearray()
        for index in range(min(cookie, len(handle.listing)), len(handle.listing)):
            name, inode, kind = handle.listing[index]
            chunk += _DIRENT.pack(index + 1, inode, len(name), kind) + name
            if len(chunk) >= length:
                break
        used = min(len(chunk), length)
        _put(memory, buffer, bytes(chunk[:used]))
        _U32.pack_into(memory, out, used)
        return SUCCESS

    # -- paths

    def path_open(
        self,
        memory: Memory,
        fd: int,
        lookup: int,
        path: int,
        path_length: int,
        oflags: int,
        rights: int,
        _inheriting: int,
        fdflags: int,
        out: int,
    ) -> int:
        name_bytes = _get(memory, path, path_length)
        read = bool(rights & (R_FD_READ | R_FD_READDIR))
        write = bool(rights & R_WRITING) or bool(oflags & O_TRUNC)
        if self.read_only and (write or oflags & O_CREAT or fdflags & FD_APPEND):
            return ROFS
        flags = os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        flags |= os.O_RDWR if read and write else os.O_WRONLY if write else os.O_RDONLY
        for wasi_flag, host_flag in (
            (O_CREAT, os.O_CREAT),
            (O_DIRECTORY, os.O_DIRECTORY),
            (O_EXCL, os.O_EXCL),
            (O_TRUNC, os.O_TRUNC),
        ):
            if oflags & wasi_flag:
                flags |= host_flag
        if fdflags & FD_APPEND:
            flags |= os.O_APPEND
        follow = bool(lookup & SYMLINK_FOLLOW)
        changing = write or bool(oflags & O_CREAT) or bool(fdflags & FD_APPEND)
        # Truncate only once the file is known not to be a read-only one under another name.
        truncate = bool(flags & os.O_TRUNC) and self.fence.keeps_files
        if truncate:
            flags &= ~os.O_TRUNC
        opened = (
            None
            if changing and self.fence.keeps_files
            else self._open_plain(fd, name_bytes, flags, follow)
        )
        if opened is not None:
            host_fd, name, depth = opened
        else:
            parent, name, depth = self._walk(fd, name_bytes, follow)
            try:
                fence = self.fence
                if changing and fence.keeps_files and fence.guards(os.fstat(parent), name):
                    return ACCES  # the running plan's file, a protected input: read-only
                host_fd = os.open(name, flags, 0o666, dir_fd=parent)
            except OSError as error:
                return _wasi_errno(error)
            finally:
                os.close(parent)
        info = os.fstat(host_fd)
        if self.fence.hidden and self.fence.hides(info):
            os.close(host_fd)
            return NOENT
        if write and self.fence.is_read_only_file(info):
            os.close(host_fd)
            return ACCES
        if truncate and stat.S_ISREG(info.st_mode):
            os.ftruncate(host_fd, 0)
        kind = _filetype(info.st_mode)
        if kind not in (REGULAR_FILE, DIRECTORY):
            # A FIFO or device would block this thread, where no deadline can reach it.
            os.close(host_fd)
            return ACCES
        handle = _Handle(
            kind,
            host_fd=host_fd,
            readable=read or kind == DIRECTORY,
            writable=write,
            append=bool(fdflags & FD_APPEND),
            owned=True,
            depth=depth + (name != b"."),
        )
        _U32.pack_into(memory, out, self._new_fd(handle))
        return SUCCESS

    def path_filestat_get(
        self, memory: Memory, fd: int, lookup: int, path: int, length: int, out: int
    ) -> int:
        raw, follow = _get(memory, path, length), bool(lookup & SYMLINK_FOLLOW)
        if _plain(raw) and not self.fence.hides_name(raw):
            # one name in this directory: no walk, unless it is a link to follow
            info = os.stat(raw, dir_fd=self._directory(fd).host_fd, follow_symlinks=False)
            if not (follow and stat.S_ISLNK(info.st_mode)):
                if self.fence.hides(info):
                    return NOENT
                _pack_stat(memory, out, info)
                return SUCCESS
        parent, name, _ = self._walk(fd, raw, follow)
        try:
            info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        finally:
            os.close(parent)
        if self.fence.hides(info):
            return NOENT
        _pack_stat(memory, out, info)
        return SUCCESS

    def path_filestat_set_times(
        self,
        memory: Memory,
        fd: int,
        lookup: int,
        path: int,
        length: int,
        atime: int,
        mtime: int,
        which: int,
    ) -> int:
        self._refuse_writes()
        parent, name, _ = self._walk(fd, _get(memory, path, length), bool(lookup & SYMLINK_FOLLOW))
        try:
            self._fenced(parent, name, changing=True)
            now = time.time_ns()
            current = os.stat(name, dir_fd=parent, follow_symlinks=False)
            access = now if which & ATIM_NOW else atime if which & ATIM else current.st_atime_ns
            modify = now if which & MTIM_NOW else mtime if which & MTIM else current.st_mtime_ns
            os.utime(name, ns=(access, modify), dir_fd=parent, follow_symlinks=False)
        finally:
            os.close(parent)
        return SUCCESS

    def path_create_directory(self, memory: Memory, fd: int, path: int, length: int) -> int:
        parent, name, _ = self._named(fd, _get(memory, path, length), dot=EXIST)
        try:
            if self.read_only:  # as on a read-only mount: an existing name says so first
                return EXIST if _exists(parent, name) else ROFS
            os.mkdir(name, 0o777, dir_fd=parent)
        finally:
            os.close(parent)
        return SUCCESS

    def path_remove_directory(self, memory: Memory, fd: int, path: int, length: int) -> int:
        self._refuse_writes()
        parent, name, _ = self._named(fd, _get(memory, path, length), dot=INVAL)
        try:
            self._fenced(parent, name, changing=True)
            os.rmdir(name, dir_fd=parent)
        finally:
            os.close(parent)
        return SUCCESS

    def path_unlink_file(self, memory: Memory, fd: int, path: int, length: int) -> int:
        self._refuse_writes()
        raw = _get(memory, path, length)
        parent, name, _ = self._named(fd, raw, dot=ISDIR)
        try:
            self._fenced(parent, name, changing=True)
            if raw.endswith(b"/"):
                self._require_directory(parent, name)  # and unlink then says EISDIR
            os.unlink(name, dir_fd=parent)
        finally:
            os.close(parent)
        return SUCCESS

    def path_rename(
        self,
        memory: Memory,
        fd: int,
        old: int,
        old_length: int,
        new_fd: int,
        new: int,
        new_length: int,
    ) -> int:
        self._refuse_writes()
        old_path, new_path = _get(memory, old, old_length), _get(memory, new, new_length)
        source, source_name, _ = self._named(fd, old_path, dot=INVAL)
        try:
            target, target_name, depth = self._named(new_fd, new_path, dot=INVAL)
            try:
                self._fenced(source, source_name, changing=True)
                self._fenced(target, target_name, changing=True)
                info = os.stat(source_name, dir_fd=source, follow_symlinks=False)
                if (old_path.endswith(b"/") or new_path.endswith(b"/")) and not stat.S_ISDIR(
                    info.st_mode
                ):
                    return NOTDIR
                if stat.S_ISLNK(info.st_mode) and not _stays_inside(
                    os.fsencode(os.readlink(source_name, dir_fd=source)), depth
                ):
                    return NOTCAPABLE  # moved there, the link would point outside
                os.rename(source_name, target_name, src_dir_fd=source, dst_dir_fd=target)
            finally:
                os.close(target)
        finally:
            os.close(source)
        return SUCCESS

    def path_symlink(
        self, memory: Memory, old: int, old_length: int, fd: int, new: int, new_length: int
    ) -> int:
        self._refuse_writes()
        target = _get(memory, old, old_length)
        link = _get(memory, new, new_length)
        if link.endswith(b"/"):
            return NOENT
        parent, name, depth = self._named(fd, link, dot=EXIST)
        try:
            # A link made here never points outside, even for readers that are not confined,
            # nor into the control plane (which every reader here would find absent anyway).
            if not _stays_inside(target, depth) or any(
                self.fence.hides_name(part) for part in target.split(b"/")
            ):
                return NOTCAPABLE
            self._fenced(parent, name, changing=True)
            os.symlink(target, name, dir_fd=parent)
        finally:
            os.close(parent)
        return SUCCESS

    def path_readlink(
        self, memory: Memory, fd: int, path: int, length: int, buffer: int, size: int, out: int
    ) -> int:
        raw = _get(memory, path, length)
        if raw.endswith(b"/"):
            return INVAL  # "link/" names what the link points to, which is not a link
        parent, name, _ = self._named(fd, raw, dot=INVAL)
        try:
            target = os.readlink(name, dir_fd=parent)
        finally:
            os.close(parent)
        piece = os.fsencode(target)[:size]
        _put(memory, buffer, piece)
        _U32.pack_into(memory, out, len(piece))
        return SUCCESS


# The calls box.wasm may import, each served by the `Process` method of the same name.
CALLS = (
    "args_get", "args_sizes_get", "environ_get", "environ_sizes_get", "clock_time_get",
    "proc_exit", "poll_oneoff", "fd_prestat_get", "fd_prestat_dir_name", "fd_fdstat_get",
    "fd_fdstat_set_flags", "fd_filestat_get", "fd_close", "fd_seek", "fd_read", "fd_write",
    "fd_readdir", "path_open", "path_filestat_get", "path_filestat_set_times",
    "path_create_directory", "path_remove_directory", "path_unlink_file", "path_rename",
    "path_symlink", "path_readlink",
    "fd_sync", "sched_yield",  # MicroPython's (python3)
)  # fmt: skip


def serve(process: Callable[[], Process | None], name: str) -> HostFunction:
    """The host function for WASI call `name`, acting on whichever process is current.

    A failure the guest should see becomes its errno; a `GuestTrap` (exit, a limit) or an
    unexpected error stops the guest (see `hostcall`)."""

    def call(memory: Memory, *arguments: int) -> int | None:
        current = process()
        if current is None:
            raise GuestTrap("no process is running")
        try:
            result: int | None = getattr(current, name)(memory, *arguments)
        except WasiError as error:
            return error.code
        except OSError as error:
            return _wasi_errno(error)
        except struct.error:  # a guest pointer past the end of its memory
            return FAULT
        return result

    return call


def _plain(path: bytes) -> bool:
    """One ordinary name: what a path usually is, and what needs no walk."""
    return b"/" not in path and path not in (b"", b".", b"..") and b"\0" not in path


def _stays_inside(target: bytes, depth: int) -> bool:
    """Whether a link `target`, read from a directory `depth` levels below the workdir,
    stays inside it when its names are taken as written (no link in it followed)."""
    if not target or target.startswith(b"/") or b"\0" in target:
        return False
    for part in target.split(b"/"):
        if part == b"..":
            depth -= 1
            if depth < 0:
                return False
        elif part not in (b"", b"."):
            depth += 1
    return True


def _exists(parent: int, name: bytes) -> bool:
    try:
        os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _iovecs(memory: Memory, pointer: int, count: int) -> list[tuple[int, int]]:
    if count > IOV_MAX:
        raise WasiError(INVAL)
    return [_IOVEC.unpack_from(memory, pointer + 8 * index) for index in range(count)]


def _put(memory: Memory, pointer: int, data: bytes) -> None:
    if pointer + len(data) > len(memory):
        raise WasiError(FAULT)
    memory[pointer : pointer + len(data)] = data


def _get(memory: Memory, pointer: int, length: int) -> bytes:
    if pointer + length > len(memory):
        raise WasiError(FAULT)
    return bytes(memory[pointer : pointer + length])


def _link_target(name: bytes, directory: int, last: bool) -> bytes | None:
    """The target of `name` when it is a symlink, else None (a missing name included)."""
    try:
        return os.fsencode(os.readlink(name, dir_fd=directory))
    except OSError as error:
        if error.errno in (errno.EINVAL, errno.ENOENT) or (last and error.errno == errno.ENOTDIR):
            return None
        raise WasiError(_wasi_errno(error)) from error


def _filetype(mode: int) -> int:
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


def _pack_stat(memory: Memory, out: int, info: os.stat_result) -> None:
    _FILESTAT.pack_into(
        memory,
        out,
        info.st_dev,
        info.st_ino,
        _filetype(info.st_mode),
        info.st_nlink,
        info.st_size,
        info.st_atime_ns,
        info.st_mtime_ns,
        info.st_ctime_ns,
    )


def _list_directory(fd: int, fence: fences.Fence) -> list[tuple[bytes, int, int]]:
    """`.`, `..` and the entries of an open directory, as (name, inode, file type); what the
    fence hides is left out."""
    here = os.fstat(fd)
    entries = [(b".", here.st_ino, DIRECTORY), (b"..", 0, DIRECTORY)]
    with os.scandir(fd) as scan:
        for entry in scan:
            if fence.hides_entry(entry):
                continue
            if entry.is_symlink():
                kind = SYMBOLIC_LINK
            elif entry.is_dir(follow_symlinks=False):
                kind = DIRECTORY
            elif entry.is_file(follow_symlinks=False):
                kind = REGULAR_FILE
            else:
                kind = UNKNOWN
            entries.append((os.fsencode(entry.name), entry.inode(), kind))
    return entries


def _clock_ns(clock: int) -> int | None:
    readers: dict[int, Callable[[], int]] = {
        0: time.time_ns,
        1: time.monotonic_ns,
        2: time.process_time_ns,
        3: time.thread_time_ns,
    }
    reader = readers.get(clock)
    return reader() if reader else None


def _clock_target(clock: int, timeout: int, flags: int) -> float:
    """A clock subscription's moment on time.monotonic()'s scale."""
    if not flags & 1:  # relative
        return time.monotonic() + timeout / 1e9
    now = _clock_ns(clock)
    return time.monotonic() + (timeout - (now if now is not None else 0)) / 1e9
