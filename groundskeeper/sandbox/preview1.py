"""WASI preview1 for box.wasm, MicroPython and CPython, served on the host: one `Process` per run.

Each call runs on the thread that runs the guest. (wasmtime's own WASI hands every file
operation to a tokio worker thread; on these machines each hand-off cost ~0.3 ms, more than
the commands themselves.) This module owns `Process` (arguments, environment, clocks, poll,
exit), `CALLS` and `serve`; the fd table and fd_* calls are `preview1_fds`', the confined path
calls `preview1_paths`', the numbers and byte layouts `preview1_abi`'s (re-exported here).
"""

from __future__ import annotations

import itertools
import os
import struct
import time
from collections.abc import Callable

from groundskeeper.sandbox.hostcall import GuestTrap, HostFunction
from groundskeeper.sandbox.preview1_abi import (
    ACCES,
    BADF,
    DIRECTORY,
    EVENT,
    FAULT,
    FD_APPEND,
    INVAL,
    ISDIR,
    LOOP,
    MTIM_NOW,
    NO_FILES,
    NOENT,
    NOTCAPABLE,
    NOTDIR,
    NOTSUP,
    O_CREAT,
    O_DIRECTORY,
    O_TRUNC,
    PERM,
    R_FD_READ,
    R_FD_WRITE,
    REGULAR_FILE,
    ROFS,
    SLEEP_SLICE,
    SPIPE,
    SUBSCRIPTION,
    SUCCESS,
    U32,
    U64,
    Memory,
    Sink,
    WasiError,
    store,
    wasi_errno,
)
from groundskeeper.sandbox.preview1_paths import PathCalls

# The names callers and tests use as `preview1.X`; the numbers are `preview1_abi`'s.
__all__ = [
    "ACCES",
    "BADF",
    "CALLS",
    "DIRECTORY",
    "FAULT",
    "FD_APPEND",
    "INVAL",
    "ISDIR",
    "LOOP",
    "MTIM_NOW",
    "NOENT",
    "NOTCAPABLE",
    "NOTDIR",
    "NOTSUP",
    "NO_FILES",
    "O_CREAT",
    "O_DIRECTORY",
    "O_TRUNC",
    "PERM",
    "REGULAR_FILE",
    "ROFS",
    "R_FD_READ",
    "R_FD_WRITE",
    "SPIPE",
    "SUCCESS",
    "Process",
    "Sink",
    "WasiError",
    "serve",
]


class Process(PathCalls):
    """One run of box.wasm: what its WASI calls see and what they did (the fields are
    `preview1_fds.FdCalls`'; the calls are this class's and its bases', one method each)."""

    # -- arguments, environment, clocks, exit, scheduling

    def args_sizes_get(self, memory: Memory, count: int, size: int) -> int:
        return self._sizes(memory, self._argv_bytes, count, size)

    def args_get(self, memory: Memory, pointers: int, buffer: int) -> int:
        return self._strings(memory, self._argv_bytes, pointers, buffer)

    def environ_sizes_get(self, memory: Memory, count: int, size: int) -> int:
        return self._sizes(memory, self._env_bytes, count, size)

    def environ_get(self, memory: Memory, pointers: int, buffer: int) -> int:
        return self._strings(memory, self._env_bytes, pointers, buffer)

    # encoded once per stage (libc asks for each twice: sizes, then strings); a stage's
    # arguments and environment never change while it runs. Kept in the instance's dict by
    # hand: functools.cached_property takes a lock on every read before Python 3.12.
    @property
    def _argv_bytes(self) -> list[bytes]:
        encoded: list[bytes] | None = self.__dict__.get("_argv_encoded")
        if encoded is None:
            encoded = self.__dict__["_argv_encoded"] = [os.fsencode(arg) for arg in self.argv]
        return encoded

    @property
    def _env_bytes(self) -> list[bytes]:
        encoded: list[bytes] | None = self.__dict__.get("_env_encoded")
        if encoded is None:
            encoded = [os.fsencode(f"{key}={value}") for key, value in self.env]
            self.__dict__["_env_encoded"] = encoded
        return encoded

    @staticmethod
    def _sizes(memory: Memory, strings: list[bytes], count: int, size: int) -> int:
        U32.pack_into(memory, count, len(strings))
        U32.pack_into(memory, size, sum(map(len, strings)) + len(strings))
        return SUCCESS

    @staticmethod
    def _strings(memory: Memory, strings: list[bytes], pointers: int, buffer: int) -> int:
        # every pointer in one pack, every string (each NUL-ended) in one store
        if not strings:
            return SUCCESS
        ends = itertools.accumulate((len(s) + 1 for s in strings), initial=buffer)
        struct.pack_into(
            f"<{len(strings)}I", memory, pointers, *itertools.islice(ends, len(strings))
        )
        store(memory, buffer, b"\0".join(strings) + b"\0")
        return SUCCESS

    def clock_time_get(self, memory: Memory, clock: int, _precision: int, out: int) -> int:
        if self.reads is not None:
            self.reads.taint("the clock")
        now = _clock_ns(clock)
        if now is None:
            return INVAL
        U64.pack_into(memory, out, now)
        return SUCCESS

    def clock_res_get(self, memory: Memory, clock: int, out: int) -> int:
        if _clock_ns(clock) is None:
            return INVAL
        U64.pack_into(memory, out, 1000)  # a microsecond: what time.*_ns() resolve here
        return SUCCESS

    def random_get(self, memory: Memory, buffer: int, length: int) -> int:
        """Real randomness from the host's CSPRNG (hash seeds, `secrets`, temp names)."""
        if self.reads is not None:
            self.reads.taint("randomness")
        if buffer + length > len(memory):
            return FAULT
        memory[buffer : buffer + length] = os.urandom(length)
        return SUCCESS

    def sock_accept(self, _memory: Memory, _fd: int, _flags: int, _out: int) -> int:
        return NOTSUP  # no sockets in the sandbox: none is ever open

    def sock_recv(self, _memory: Memory, _fd: int, *_arguments: int) -> int:
        return NOTSUP

    def sock_send(self, _memory: Memory, _fd: int, *_arguments: int) -> int:
        return NOTSUP

    def sock_shutdown(self, _memory: Memory, _fd: int, _how: int) -> int:
        return NOTSUP

    def proc_exit(self, _memory: Memory, code: int) -> None:
        self.exit_code = code
        raise GuestTrap(f"exit {code}")

    def poll_oneoff(self, memory: Memory, subs: int, events: int, count: int, out: int) -> int:
        """Clock subscriptions sleep (in slices, so a deadline still ends the run); fd
        subscriptions are ready at once: every stream here is a file or a buffer."""
        if self.reads is not None:
            self.reads.taint("a wait")
        if count == 0:
            return INVAL
        entries = [SUBSCRIPTION.unpack_from(memory, subs + 48 * i) for i in range(count)]
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
            EVENT.pack_into(memory, events + 32 * index, data, SUCCESS, tag, 0, 0)
        U32.pack_into(memory, out, len(ready))
        return SUCCESS

    def sched_yield(self, _memory: Memory) -> int:
        self._check_running()
        if self.on_yield is not None:
            self.on_yield()
        return SUCCESS


# The calls box.wasm may import, each served by the `Process` method of the same name.
CALLS = (
    "args_get", "args_sizes_get", "environ_get", "environ_sizes_get", "clock_time_get",
    "proc_exit", "poll_oneoff", "fd_prestat_get", "fd_prestat_dir_name", "fd_fdstat_get",
    "fd_fdstat_set_flags", "fd_filestat_get", "fd_close", "fd_seek", "fd_read", "fd_write",
    "fd_readdir", "path_open", "path_filestat_get", "path_filestat_set_times",
    "path_create_directory", "path_remove_directory", "path_unlink_file", "path_rename",
    "path_symlink", "path_readlink",
    "fd_sync", "sched_yield",  # MicroPython's
    # CPython's (python3)
    "clock_res_get", "random_get", "fd_advise", "fd_allocate", "fd_datasync", "fd_tell",
    "fd_filestat_set_size", "fd_filestat_set_times", "fd_pread", "fd_pwrite", "path_link",
    "sock_accept", "sock_recv", "sock_send", "sock_shutdown",
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
            return wasi_errno(error)
        except struct.error:  # a guest pointer past the end of its memory
            return FAULT
        return result

    return call


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
