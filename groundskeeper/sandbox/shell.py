"""The interpreter: runs a parsed command line on the host, each command a box.wasm stage.

It owns expansion (variables, `$?`, `$(…)`, field splitting, globs), redirections, the
builtins (`cd`, `:`, `exit`, `export`), pipelines and `&&`/`||`/`!`. Stages run one after
another; a stage's stdout is a buffer in memory that the next stage reads as its stdin.
File access the host does itself goes through `confine.Workdir`; the commands' is `preview1`'s.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from groundskeeper.sandbox import wasi
from groundskeeper.sandbox.confine import DEV_NULL, GUEST_ROOT, PathRefused, Workdir
from groundskeeper.sandbox.registry import BOX_COMMANDS, BUILTINS
from groundskeeper.sandbox.result import Fault, SandboxError, ShellResult
from groundskeeper.sandbox.syntax import (
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
}


def run_cmdline(
    cmdline: str,
    *,
    workdir: str | Path,
    read_only: bool,
    timeout: float,
    env: Mapping[str, str] | None,
    limits: wasi.Limits | None = None,
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
    run = _Run(workspace, read_only, limits, watch, root_fd, timeout)
    run.fuel_left = int(limits.fuel_per_second * max(timeout, 0.001))
    stdout = _Capture(limits.stream)
    stderr = _Capture(limits.stream)
    state = _State(cwd="", variables=dict(env or {}), exported=set(env or {}), status=0)
    fault: Fault | None = None
    try:
        status = run.script(script, state, b"", stdout, stderr)
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
    """Bytes kept in memory: the run's stdout/stderr, or a `$(…)`'s output."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()

    def room(self) -> int:
        return self.limit - len(self.data)

    def write(self, data: bytes) -> None:
        self.data += data

    def force(self, data: bytes) -> None:
        """The sandbox's own last word is kept even when the stream is full."""
        self.data += data


class _FileSink(_Sink):
    """An open file: a redirection target."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd = fd
        self.limit = limit
        self.written = 0

    def room(self) -> int:
        return self.limit - self.written

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            done = os.write(self.fd, view)
            view = view[done:]
        self.written += len(data)


class _Stop(Exception):
    def __init__(self, fault: Fault, message: str) -> None:
        super().__init__(message)
        self.fault = fault
        self.message = message


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

    def copy(self) -> _State:
        return replace(self, variables=dict(self.variables), exported=set(self.exported))


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
    fuel_left: int = 0
    last_sub_status: list[int] = field(default_factory=list)

    # -- lists and pipelines

    def script(self, script: Script, state: _State, stdin: _Stdin, out: _Sink, err: _Sink) -> int:
        try:
            for item in script.items:
                status = self.pipeline(item.first, state, stdin, out, err)
                state.status = status
                for operator, pipeline in item.rest:
                    if (operator == "&&") == (state.status == 0):
                        state.status = self.pipeline(pipeline, state, stdin, out, err)
        except _Exit as done:
            state.status = done.status
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
                try:
                    status = self.simple(command, state.copy(), source, target, err)
                except _Exit as done:
                    status = done.status
                if isinstance(target, _Capture):
                    source = bytes(target.data)
        return (0 if status else 1) if pipeline.negated else status

    # -- one simple command

    def simple(
        self, command: SimpleCommand, state: _State, stdin: _Stdin, out: _Sink, err: _Sink
    ) -> int:
        self.last_sub_status.append(-1)
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
                    state.variables[name] = value
                return max(sub_status, 0)
            return self.execute(words, assignments, state, streams)
        finally:
            self.last_sub_status.pop()
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
            streams[redirect.fd] = _FileSink(fd, self.limits.pipe)
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
        if name not in BOX_COMMANDS:
            err.write(f"{name}: command not found (not in the sandbox)\n".encode())
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
        )
        outcome = wasi.run_stage(spec, self.watch, self.fuel_left, self.limits)
        self.fuel_left -= outcome.fuel_used
        if outcome.fault is not None:
            raise self.stop(outcome.fault, name, outcome.message)
        return outcome.status & 0xFF

    def stop(self, fault: Fault, name: str, detail: str = "") -> _Stop:
        limits = self.limits
        messages: dict[Fault, str] = {
            "deadline": f"deadline of {self.timeout:g}s exceeded while running '{name}': "
            "the command line was stopped",
            "fuel": f"fuel limit exceeded while running '{name}' (too much computation)",
            "memory": f"memory limit of {limits.memory // (1024 * 1024)} MiB a command "
            f"exceeded by '{name}'",
            "output": f"output limit exceeded by '{name}' ({limits.stream // (1024 * 1024)} MiB "
            f"for stdout and stderr, {limits.pipe // (1024 * 1024)} MiB for a pipe or file)",
            "trap": f"'{name}' crashed (wasm trap{': ' + detail if detail else ''})",
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
                    state.variables[key] = value
                state.exported.add(key)
            return status
        raise SandboxError(f"builtin {name} has no implementation")

    # -- expansion

    def expand_one(self, word: Word, state: _State, err: _Sink) -> str:
        """An assignment's value: expansions, no field splitting, no globbing."""
        return "".join(text for text, _, _ in self.segments(word, state, err))

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
            for index, piece in enumerate(re.split(r"([ \t\n]+)", text)):
                if index % 2:
                    if started:
                        fields.append(current)
                    current, started = [], False
                elif piece:
                    current.append((piece, True))
                    started = True
        if started:
            fields.append(current)
        result: list[str] = []
        for parts in fields:
            chars = [(char, active) for text, active in parts for char in text]
            plain = "".join(char for char, _ in chars)
            if any(active and char in "*?[" for char, active in chars):
                try:
                    matches = self.workdir.glob(state.cwd, chars)
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
        capture = _Capture(self.limits.pipe)
        with self.nested():
            status = self.script(part.script, state.copy(), b"", capture, err)
        self.last_sub_status[-1] = status
        text = capture.data.decode("utf-8", "replace").replace("\0", "")
        return text.rstrip("\n")

    @contextmanager
    def nested(self) -> Iterator[None]:
        depth = len(self.last_sub_status)
        if depth > 32:
            raise _CommandFailed("$(…) nested too deeply")
        yield
