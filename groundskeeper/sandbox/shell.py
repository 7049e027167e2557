"""The interpreter: runs a parsed command line on the host, each command a box.wasm stage.

It owns expansion (variables, `$?`, `$(…)`, field splitting, globs), redirections, the
builtins (`cd`, `:`, `exit`, `export`), pipelines and `&&`/`||`/`!`. Stages run one after
another; a stage's stdout is a buffer in memory that the next stage reads as its stdin.
File access the host does itself goes through `confine.Workdir`; the commands' is `preview1`'s.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from groundskeeper.sandbox import wasi
from groundskeeper.sandbox.confine import DEV_NULL, GUEST_ROOT, PathRefused, Workdir
from groundskeeper.sandbox.quota import DiskQuota
from groundskeeper.sandbox.registry import BOX_COMMANDS, BUILTINS, PYTHON_COMMANDS, did_you_mean
from groundskeeper.sandbox.result import Fault, SandboxError, ShellResult
from groundskeeper.sandbox.syntax import (
    MAX_NESTING,
    CommandSub,
    Lit,
    Param,
    Pipeline,
    Redirect,
    Script,
    ShellSyntaxError,
    SimpleCommand,
    Word,
    parse,
)

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_GLOB_CHARS = re.compile(r"[*?\[]")
_FAULT_STATUS: dict[Fault, int] = {
    "deadline": 124,
    "fuel": 124,
    "memory": 125,
    "output": 125,
    "trap": 134,
    "host-memory": 125,
    "disk": 125,
}
_FIELD_SPLIT = re.compile(r"[ \t\n]+")
_ASTRAL_LEAD = re.compile(rb"[\xf0-\xff]")  # a UTF-8 lead byte of a 4-byte character
# What the interpreter holds beyond a word's characters, in bytes: a field (its str, the
# (text, active) pair it was cut into, list slots), a glob candidate (two strs and a pair),
# a character of a glob pattern (a (char, active) pair and its slot).
_FIELD_COST = 160
_CANDIDATE_COST = 200
_PATTERN_CHAR_COST = 72
_MiB = 1024 * 1024


def run_cmdline(
    cmdline: str,
    *,
    workdir: str | Path,
    read_only: bool,
    timeout: float,
    env: Mapping[str, str] | None,
    limits: wasi.Limits | None = None,
    quota: DiskQuota | None = None,
    errexit: bool = False,
    sentinel: str | None = None,
) -> ShellResult:
    """See `groundskeeper.sandbox.run`; `limits` lets tests shrink the defaults."""
    started = time.perf_counter()
    if not os.path.isdir(workdir):
        raise SandboxError(f"workdir {workdir} is not a directory")
    try:
        script = parse(cmdline)
    except ShellSyntaxError as error:
        message = f"sh: syntax error at line {error.line}, column {error.column}: {error.message}\n"
        return ShellResult(2, "", message, _ms(started), "syntax")
    limits = limits or wasi.Limits()
    workspace = Workdir(str(workdir))
    try:
        root_fd = os.open(workspace.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise SandboxError(f"workdir {workdir} cannot be opened: {error.strerror}") from error
    runtime = wasi.lease_runtime()
    watch = wasi.start_watch(runtime, timeout)
    run = _Run(workspace, read_only, limits, watch, root_fd, timeout, quota)
    run.fuel_left = int(limits.fuel_per_second * max(timeout, 0.001))
    stdout = _Capture(limits.stream)
    stderr = _Capture(limits.stream)
    state = _State(cwd="", variables=dict(env or {}), exported=set(env or {}), status=0)
    fault: Fault | None = None
    failed_line: int | None = None
    try:
        status = run.script(script, state, b"", stdout, stderr, errexit=errexit, top=True)
        if status == 0 and sentinel is not None and not run.exited:
            # the script's final node, run by the interpreter and by nothing else: on a line
            # of its own, whatever the script printed (or left without a final newline); an
            # `exit` ends the script before it, as it would end any node after it
            if stdout.data and not stdout.data.endswith(b"\n"):
                stdout.force(b"\n")
            stdout.force(sentinel.encode() + b"\n")
    except _Errexit as stopped:
        status = stopped.status
        failed_line = cmdline.count("\n", 0, stopped.offset) + 1
    except _Stop as stop:
        fault, status = stop.fault, _FAULT_STATUS[stop.fault]
        stderr.force(f"sh: {stop.message}\n".encode())
    finally:
        wasi.end_watch(watch)
        wasi.release_runtime(runtime)
        os.close(root_fd)
    return ShellResult(
        status,
        stdout.data.decode("utf-8", "replace"),
        stderr.data.decode("utf-8", "replace"),
        _ms(started),
        fault,
        tuple(dict.fromkeys(run.missing)),
        failed_line,
    )


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


# ---- where bytes go ------------------------------------------------------------------------


class _Sink:
    """A destination for a stage's stdout or stderr."""

    def room(self) -> int:
        raise NotImplementedError

    def write(self, data: bytes) -> None:
        raise NotImplementedError


class _Capture(_Sink):
    """Bytes kept in memory: the run's stdout/stderr, or a `$(…)`'s output.

    A `$(…)`'s output counts against the line's host memory: its room is what is left of it
    when that is less, and `short` then says so (the stage was cut by host memory)."""

    def __init__(self, limit: int, memory: _HostMemory | None = None) -> None:
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


class _FileSink(_Sink):
    """An open file: a redirection target."""

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


class _Stop(Exception):
    def __init__(self, fault: Fault, message: str) -> None:
        super().__init__(message)
        self.fault = fault
        self.message = message


def _host_memory_message(limit: int, name: str = "") -> str:
    where = f" while running '{name}'" if name else ""
    return (
        f"host memory limit of {limit // _MiB} MiB exceeded{where} (what the shell itself "
        "holds for one command line: variables, $(…) output, word lists, glob results)"
    )


class _HostMemory:
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
            raise _Stop("host-memory", _host_memory_message(self.limit))
        self.held += size


class _Errexit(Exception):
    """errexit: the command at `offset` failed with `status`, and the script stops."""

    def __init__(self, status: int, offset: int) -> None:
        super().__init__(status)
        self.status = status
        self.offset = offset


class _Exit(Exception):
    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


class _CommandFailed(Exception):
    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@dataclass
class _State:
    """What a subshell (`$(…)`, a pipeline stage) copies and a plain command changes."""

    cwd: str
    variables: dict[str, str]
    exported: set[str]
    status: int
    charged: dict[str, int] = field(default_factory=dict)  # host memory its own values hold

    def copy(self) -> _State:
        return replace(
            self, variables=dict(self.variables), exported=set(self.exported), charged={}
        )


# What a command reads as stdin: bytes in memory, or an open host file (a `<` redirection).
_Stdin = bytes | int


@dataclass
class _Run:
    workdir: Workdir
    read_only: bool
    limits: wasi.Limits
    watch: wasi.Watch
    root_fd: int
    timeout: float
    quota: DiskQuota | None = None
    fuel_left: int = 0
    last_sub_status: list[int] = field(default_factory=list)
    memory: _HostMemory = field(init=False)
    missing: list[str] = field(default_factory=list)  # commands asked for and not had
    exited: bool = False  # the top-level script ended by `exit`

    def __post_init__(self) -> None:
        self.memory = _HostMemory(self.limits.host_memory)

    def tick(self, name: str = "") -> None:
        """Stop the line once its deadline has passed, wherever the host is in its work
        (`name`: the command about to run, when there is one to blame)."""
        if self.watch.fault is None and time.monotonic() < self.watch.deadline:
            return
        if self.watch.fault is None:
            self.watch.stop("deadline")
        raise self.stop(self.watch.fault or "deadline", name)

    def spend(self, size: int) -> None:
        """A glob's step: the deadline, and what its candidates hold."""
        self.tick()
        self.memory.take(size)

    def assign(self, state: _State, name: str, value: str) -> None:
        size = sys.getsizeof(value)
        self.memory.hold(size - state.charged.get(name, 0))
        state.charged[name] = size
        state.variables[name] = value

    def give_back(self, state: _State) -> None:
        """A subshell's state is dropped: what its own assignments held is free again."""
        if state.charged:
            self.memory.hold(-sum(state.charged.values()))

    # -- lists and pipelines

    def script(
        self,
        script: Script,
        state: _State,
        stdin: _Stdin,
        out: _Sink,
        err: _Sink,
        *,
        errexit: bool = False,
        top: bool = False,
    ) -> int:
        try:
            for item in script.items:
                last = item.first
                state.status = self.pipeline(item.first, state, stdin, out, err)
                for operator, pipeline in item.rest:
                    if (operator == "&&") == (state.status == 0):
                        state.status = self.pipeline(pipeline, state, stdin, out, err)
                        last = pipeline
                final = item.rest[-1][1] if item.rest else item.first
                # `set -e`: only the list's final pipeline, run and not negated, stops it
                if errexit and state.status != 0 and last is final and not final.negated:
                    raise _Errexit(state.status, final.commands[-1].offset)
        except _Exit as done:
            state.status = done.status
            self.exited = self.exited or top
        return state.status

    def pipeline(
        self, pipeline: Pipeline, state: _State, stdin: _Stdin, out: _Sink, err: _Sink
    ) -> int:
        commands = pipeline.commands
        if len(commands) == 1:
            status = self.simple(commands[0], state, stdin, out, err)
        else:
            source = stdin
            for index, command in enumerate(commands):
                last = index == len(commands) - 1
                target = out if last else _Capture(self.limits.pipe)
                stage_state = state.copy()
                try:
                    status = self.simple(command, stage_state, source, target, err)
                except _Exit as done:
                    status = done.status
                finally:
                    self.give_back(stage_state)
                if isinstance(target, _Capture):
                    source = bytes(target.data)
        return (0 if status else 1) if pipeline.negated else status

    # -- one simple command

    def simple(
        self, command: SimpleCommand, state: _State, stdin: _Stdin, out: _Sink, err: _Sink
    ) -> int:
        first = command.words[0].parts if command.words else ()
        self.tick(first[0].text if len(first) == 1 and isinstance(first[0], Lit) else "")
        self.last_sub_status.append(-1)
        self.memory.frames.append(0)
        opened: list[int] = []
        try:
            try:
                assignments = [
                    (a.name, self.expand_one(a.value, state, err)) for a in command.assignments
                ]
                words: list[str] = []
                for word in command.words:
                    words.extend(self.expand_fields(word, state, err))
                streams = self.redirect(command.redirects, state, stdin, out, err, opened)
            except _CommandFailed as failed:
                err.write(f"sh: {failed.message}\n".encode())
                return failed.status
            sub_status = self.last_sub_status[-1]
            if not words:
                for name, value in assignments:
                    self.assign(state, name, value)
                return max(sub_status, 0)
            return self.execute(words, assignments, state, streams)
        finally:
            self.last_sub_status.pop()
            self.memory.held -= self.memory.frames.pop()
            for fd in opened:
                os.close(fd)

    def redirect(
        self,
        redirects: tuple[Redirect, ...],
        state: _State,
        stdin: _Stdin,
        out: _Sink,
        err: _Sink,
        opened: list[int],
    ) -> tuple[_Stdin, _Sink, _Sink]:
        """Apply redirections left to right, as bash does; returns (stdin, out, err)."""
        streams: dict[int, _Sink] = {1: out, 2: err}
        for redirect in redirects:
            if redirect.op == ">&":
                assert redirect.dup_fd is not None
                if redirect.fd == 0:
                    raise _CommandFailed(f"{redirect.fd}>&{redirect.dup_fd}: not supported")
                streams[redirect.fd] = streams[redirect.dup_fd]
                continue
            assert redirect.target is not None
            fields = self.expand_fields(redirect.target, state, err)
            if len(fields) != 1:
                shown = "".join(p.text for p in redirect.target.parts if isinstance(p, Lit))
                raise _CommandFailed(f"{shown or '$…'}: ambiguous redirect")
            target = fields[0]
            if redirect.op == "<":
                fd = self.open(state, target, os.O_RDONLY)
                opened.append(fd)
                stdin = fd
                continue
            if self.read_only and target != DEV_NULL:
                raise _CommandFailed(f"{target}: Read-only file system (read-only sandbox)")
            flags = os.O_WRONLY | os.O_CREAT | (os.O_APPEND if redirect.op == ">>" else os.O_TRUNC)
            fd = self.open(state, target, flags)
            opened.append(fd)
            streams[redirect.fd] = _FileSink(fd, self.limits.pipe, self.quota)
        return stdin, streams[1], streams[2]

    def open(self, state: _State, path: str, flags: int) -> int:
        try:
            return self.workdir.open(state.cwd, path, flags)
        except PathRefused as refused:
            raise _CommandFailed(str(refused)) from refused

    def execute(
        self,
        words: list[str],
        assignments: list[tuple[str, str]],
        state: _State,
        streams: tuple[_Stdin, _Sink, _Sink],
    ) -> int:
        name, args = words[0], words[1:]
        stdin, out, err = streams
        if name in BUILTINS:
            return self.builtin(name, args, state, out, err)
        if name not in BOX_COMMANDS and name not in PYTHON_COMMANDS:
            self.missing.append(name)
            err.write(
                f"{name}: command not found (not in the sandbox){did_you_mean(name)}\n".encode()
            )
            return 127
        return self.stage(name, args, assignments, state, stdin, out, err)

    def stage(
        self,
        name: str,
        args: list[str],
        assignments: list[tuple[str, str]],
        state: _State,
        stdin: _Stdin,
        out: _Sink,
        err: _Sink,
    ) -> int:
        if self.watch.fault is None and time.monotonic() >= self.watch.deadline:
            self.watch.stop("deadline")
        if self.watch.fault is not None:
            raise self.stop(self.watch.fault, name)
        env = {k: v for k, v in state.variables.items() if k in state.exported}
        env.update(assignments)
        env["GK_CWD"] = GUEST_ROOT + ("/" + state.cwd if state.cwd else "")
        spec = wasi.StageSpec(
            argv=[name, *args],
            env=sorted(env.items()),
            stdin=stdin,
            stdout=out,
            stderr=err,
            root_fd=self.root_fd,
            read_only=self.read_only,
            quota=self.quota,
        )
        if name in PYTHON_COMMANDS:
            # imported here: a line without python3 should not pay for its import
            from groundskeeper.sandbox import python

            outcome = python.run_python(spec, self.watch, self.fuel_left, self.limits)
        else:
            outcome = wasi.run_stage(spec, self.watch, self.fuel_left, self.limits)
        self.fuel_left -= outcome.fuel_used
        if outcome.fault is not None:
            fault = outcome.fault
            if fault == "output":  # a sink whose room was the run's quota or host memory
                fault = _cut_by(out) or _cut_by(err) or fault
            raise self.stop(fault, name, outcome.message)
        return outcome.status & 0xFF

    def stop(self, fault: Fault, name: str, detail: str = "") -> _Stop:
        limits = self.limits
        where = f"while running '{name}'" if name else "in the shell itself (expansion, globs)"
        messages: dict[Fault, str] = {
            "deadline": f"deadline of {self.timeout:g}s exceeded {where}: "
            "the command line was stopped",
            "fuel": f"fuel limit exceeded while running '{name}' (too much computation)",
            "memory": f"memory limit of {limits.memory // (1024 * 1024)} MiB a command "
            f"exceeded by '{name}'",
            "output": f"output limit exceeded by '{name}' ({limits.stream // (1024 * 1024)} MiB "
            f"for stdout and stderr, {limits.pipe // (1024 * 1024)} MiB for a pipe or file)",
            "trap": f"'{name}' crashed (wasm trap{': ' + detail if detail else ''})",
            "host-memory": _host_memory_message(limits.host_memory, name),
            "disk": f"{self.quota.message() if self.quota else 'disk quota exceeded'} by "
            f"'{name}' (all this run's commands and tools write counts)",
        }
        return _Stop(fault, messages[fault])

    # -- builtins

    def builtin(self, name: str, args: list[str], state: _State, out: _Sink, err: _Sink) -> int:
        if name == ":":
            return 0
        if name == "exit":
            if not args:
                raise _Exit(state.status)
            if len(args) > 1:
                err.write(b"exit: too many arguments\n")
                return 1
            if not re.fullmatch(r"[+-]?[0-9]+", args[0]):
                err.write(f"exit: {args[0]}: numeric argument required\n".encode())
                raise _Exit(2)
            raise _Exit(int(args[0]) & 0xFF)
        if name == "cd":
            if len(args) > 1:
                err.write(b"cd: too many arguments\n")
                return 1
            target = args[0] if args else ""
            if target == "-":
                err.write(b"cd: '-' is not supported in the sandbox\n")
                return 1
            try:
                state.cwd = self.workdir.directory(state.cwd, target) if target else ""
            except PathRefused as refused:
                err.write(f"cd: {refused}\n".encode())
                return 1
            return 0
        if name == "export":
            status = 0
            if not args:
                for key in sorted(state.exported):
                    value = state.variables.get(key, "")
                    out.write(f'declare -x {key}="{value}"\n'.encode())
            for arg in args:
                key, has_value, value = arg.partition("=")
                if not _NAME.fullmatch(key):
                    err.write(f"export: `{arg}': not a valid identifier\n".encode())
                    status = 1
                    continue
                if has_value:
                    self.assign(state, key, value)
                state.exported.add(key)
            return status
        raise SandboxError(f"builtin {name} has no implementation")

    # -- expansion

    def expand_one(self, word: Word, state: _State, err: _Sink) -> str:
        """An assignment's value: expansions, no field splitting, no globbing."""
        texts = [text for text, _, _ in self.segments(word, state, err)]
        if len(texts) == 1:
            return texts[0]  # held already: a literal, a variable or a `$(…)`'s text
        self.memory.take(sum(map(len, texts)) * _width(texts) + _FIELD_COST)
        return "".join(texts)

    def expand_fields(self, word: Word, state: _State, err: _Sink) -> list[str]:
        """A command word: expansions, then field splitting and globbing of unquoted parts."""
        if len(word.parts) == 1 and isinstance(word.parts[0], Lit):
            # Most words: one literal, nothing to expand (the general path below, done
            # character by character, was a fifth of the shell's own time per command).
            literal = word.parts[0]
            if literal.quoted:
                return [literal.text]
            if not _GLOB_CHARS.search(literal.text):
                return [literal.text] if literal.text else []
        fields: list[list[tuple[str, bool]]] = []
        current: list[tuple[str, bool]] = []
        started = False
        for text, quoted, splits in self.segments(word, state, err):
            if not splits:
                current.append((text, not quoted))
                started = started or quoted or bool(text)
                continue
            # Cut at runs of blanks, one field at a time: each is charged before the next
            # is made, so a huge value stops at the line's host memory, not after.
            start = 0
            for blanks in _FIELD_SPLIT.finditer(text):
                if blanks.start() > start:
                    self.tick()
                    self.memory.take(blanks.start() - start + _FIELD_COST)
                    current.append((text[start : blanks.start()], True))
                    started = True
                if started:
                    fields.append(current)
                current, started = [], False
                start = blanks.end()
            if start < len(text):
                if start:  # a new string; the whole text is held already
                    self.memory.take(len(text) - start + _FIELD_COST)
                current.append((text[start:] if start else text, True))
                started = True
        if started:
            fields.append(current)
        result: list[str] = []
        for parts in fields:
            plain = parts[0][0] if len(parts) == 1 else "".join(text for text, _ in parts)
            if len(parts) > 1:
                self.memory.take(len(plain) * _width([plain]) + _FIELD_COST)
            if any(active and _GLOB_CHARS.search(text) for text, active in parts):
                self.memory.take(len(plain) * _PATTERN_CHAR_COST)
                chars = [(char, active) for text, active in parts for char in text]
                try:
                    matches = self.workdir.glob(state.cwd, chars, spend=self.spend)
                except PathRefused as refused:
                    raise _CommandFailed(str(refused)) from refused
                result.extend(matches or [plain])
            else:
                result.append(plain)
        return result

    def segments(self, word: Word, state: _State, err: _Sink) -> Iterator[tuple[str, bool, bool]]:
        """(text, quoted, subject to field splitting) for each part of a word."""
        for part in word.parts:
            if isinstance(part, Lit):
                yield part.text, part.quoted, False
            elif isinstance(part, Param):
                value = (
                    str(state.status) if part.name == "?" else state.variables.get(part.name, "")
                )
                yield value, part.quoted, not part.quoted
            elif isinstance(part, CommandSub):
                yield self.substitute(part, state, err), part.quoted, not part.quoted

    def substitute(self, part: CommandSub, state: _State, err: _Sink) -> str:
        capture = _Capture(self.limits.pipe, self.memory)
        inner = state.copy()
        try:
            with self.nested():
                status = self.script(part.script, inner, b"", capture, err)
            self.last_sub_status[-1] = status
            data = capture.data
            if b"\0" in data:
                old = len(data)
                self.memory.hold(old)  # the copy, while both exist
                capture.data = data = data.replace(b"\0", b"")
                self.memory.hold(len(data) - 2 * old)  # the capture holds the copy alone
            end = len(data)
            while end and data[end - 1] == 10:  # trailing newlines go, as in bash
                end -= 1
            # Decoded, a character takes 1, 2 or 4 bytes, all as wide as the widest one.
            width = 1 if data.isascii() else 4 if _ASTRAL_LEAD.search(data) else 2
            self.memory.take(end * width + _FIELD_COST)
            with memoryview(data) as view, view[:end] as text:
                return str(text, "utf-8", "replace")
        finally:
            self.memory.hold(-len(capture.data))
            self.give_back(inner)

    @contextmanager
    def nested(self) -> Iterator[None]:
        depth = len(self.last_sub_status)
        if depth > MAX_NESTING:  # the parser refuses deeper text: a backstop
            raise _CommandFailed("$(…) nested too deeply")
        yield


def _width(texts: list[str]) -> int:
    """Bytes a character of these strings takes once joined (CPython keeps 1, 2 or 4)."""
    return 1 if all(text.isascii() for text in texts) else 4


def _cut_by(sink: _Sink) -> Fault | None:
    """The limit that cut a full sink short, when it was not the sink's own."""
    if isinstance(sink, _FileSink) and sink.room() <= 0 and sink.short:
        return "disk"
    if isinstance(sink, _Capture) and sink.room() <= 0 and sink.short:
        return "host-memory"
    return None
