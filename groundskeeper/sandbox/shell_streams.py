"""Where the sandbox shell's stages write and read, and the host memory the shell itself holds.

It owns the sinks (`Capture`, `FileSink`), what a command reads (`Stdin`, `Input`), `HostMemory`
and the `Stop` a limit ends the line with; it runs nothing and expands nothing.
"""

from __future__ import annotations

import os

from groundskeeper.sandbox.preview1_abi import Sink
from groundskeeper.sandbox.quota import DiskQuota
from groundskeeper.sandbox.result import Fault

__all__ = [
    "FIELD_COST",
    "PATTERN_CHAR_COST",
    "Capture",
    "FileSink",
    "HostMemory",
    "Input",
    "MiB",
    "Stdin",
    "Stop",
    "cut_by",
    "host_memory_message",
]

# What the interpreter holds beyond a word's characters, in bytes: a field (its str, the
# (text, active) pair it was cut into, list slots), a character of a glob pattern (a (char,
# active) pair and its slot).
FIELD_COST = 160
PATTERN_CHAR_COST = 72
MiB = 1024 * 1024


class Capture:
    """Bytes kept in memory (a `preview1_abi.Sink`): the run's stdout/stderr, or a `$(…)`'s output.

    A `$(…)`'s output counts against the line's host memory: its room is what is left of it
    when that is less, and `short` then says so (the stage was cut by host memory)."""

    def __init__(self, limit: int, memory: HostMemory | None = None) -> None:
        self.limit = limit
        self.data = bytearray()
        self.memory = memory
        self.short = False

    def room(self) -> int:
        room = self.limit - len(self.data)
        if self.memory is None:
            return room
        left = self.memory.left()
        self.short = left < room
        return min(room, left)

    def write(self, data: bytes) -> None:
        self.data += data
        if self.memory is not None:
            self.memory.held += len(data)  # given back by whoever made the capture

    def force(self, data: bytes) -> None:
        """The sandbox's own last word is kept even when the stream is full."""
        self.data += data


class FileSink:
    """An open file (a `preview1_abi.Sink`): a redirection target."""

    def __init__(self, fd: int, limit: int, quota: DiskQuota | None = None) -> None:
        self.fd = fd
        self.limit = limit
        self.written = 0
        self.quota = quota
        self.short = False  # the room was the disk quota's, not the file limit's

    def room(self) -> int:
        room = self.limit - self.written
        if self.quota is None:
            return room
        left = self.quota.left()
        self.short = left < room
        return min(room, left)

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            done = os.write(self.fd, view)
            view = view[done:]
        self.written += len(data)
        if self.quota is not None:
            self.quota.charge(len(data))


class Stop(Exception):
    """A limit ends the command line: `fault` names it, `message` is the shell's last word."""

    def __init__(self, fault: Fault, message: str) -> None:
        super().__init__(message)
        self.fault = fault
        self.message = message


def host_memory_message(limit: int, name: str = "") -> str:
    where = f" while running '{name}'" if name else ""
    return (
        f"host memory limit of {limit // MiB} MiB exceeded{where} (what the shell itself "
        "holds for one command line: variables, $(…) output, word lists, glob results)"
    )


class HostMemory:
    """Bytes the interpreter holds for one command line, against `Limits.host_memory`.

    `take` charges what a simple command builds (its words, its `$(…)` text, glob results),
    given back when that command ends (`frames`, one per command running); `hold` charges
    what outlives it (variables, a capture being filled) and is given back by its owner."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0
        self.frames: list[int] = []

    def left(self) -> int:
        return self.limit - self.held

    def take(self, size: int) -> None:
        self.hold(size)
        if self.frames:
            self.frames[-1] += size

    def hold(self, size: int) -> None:
        if size > 0 and self.held + size > self.limit:
            raise Stop("host-memory", host_memory_message(self.limit))
        self.held += size


class Input:
    """Bytes the commands of a compound command read from one stream: what `read` takes, the
    next command does not see, and a command run with it reads the rest."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def rest(self) -> bytes:
        data = self.data[self.pos :]
        self.pos = len(self.data)
        return data

    def line(self) -> bytes | None:
        if self.pos >= len(self.data):
            return None
        end = self.data.find(b"\n", self.pos)
        end = len(self.data) if end < 0 else end + 1
        line = self.data[self.pos : end]
        self.pos = end
        return line


# What a command reads as stdin: bytes in memory, an open host file (a `<` redirection), or a
# stream shared by a compound command's commands.
Stdin = bytes | int | Input


def cut_by(sink: Sink) -> Fault | None:
    """The limit that cut a full sink short, when it was not the sink's own."""
    if isinstance(sink, FileSink) and sink.room() <= 0 and sink.short:
        return "disk"
    if isinstance(sink, Capture) and sink.room() <= 0 and sink.short:
        return "host-memory"
    return None
