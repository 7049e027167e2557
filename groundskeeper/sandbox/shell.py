"""The interpreter: runs a parsed command line on the host, each command a box.wasm stage.

It owns expansion (variables and the `${…}` forms, `$?`, `$(…)`, `$((…))`, field splitting,
globs), redirections and here-documents, the builtins (`cd`, `:`, `exit`, `export`, `read`,
`break`, `continue`), pipelines, `&&`/`||`/`!`, compound commands (if, loops under the line's
step limit, case, groups, `[[ … ]]`), and the stages `xargs` and `find -exec` start (under the
fan-out limit). Stages run one after another; a stage's stdout is a buffer in memory that the
next stage reads as its stdin. File access the host does itself goes through
`confine.Workdir`; the commands' is `preview1`'s. The expression language of `$((…))` is
`arith`'s, glob matching `patterns`', xargs' and find's planning `fanout`'s.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from groundskeeper.sandbox import arith, fanout, wasi
from groundskeeper.sandbox.confine import DEV_NULL, GUEST_ROOT, PathRefused, Workdir
from groundskeeper.sandbox.patterns import Glob
from groundskeeper.sandbox.quota import DiskQuota
from groundskeeper.sandbox.registry import BOX_COMMANDS, BUILTINS, PYTHON_COMMANDS, did_you_mean
from groundskeeper.sandbox.result import Fault, SandboxError, ShellResult
from groundskeeper.sandbox.syntax import (
    MAX_NESTING,
    Arith,
    Case,
    Command,
    CommandSub,
    Compound,
    CondBinary,
    CondExpr,
    Conditional,
    CondLogic,
    CondNot,
    CondWord,
    For,
    Group,
    If,
    Lit,
    Loop,
    Param,
    ParamOp,
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
    "loop-steps": 124,
    "fan-out": 124,
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


class _LoopJump(Exception):
    """`break N` / `continue N`: `levels` loops still to leave."""

    def __init__(self, breaks: bool, levels: int) -> None:
        super().__init__(levels)
        self.breaks = breaks
        self.levels = levels


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


class _Input:
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
_Stdin = bytes | int | _Input


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
    loops: int = 0  # loops open around the command running
    steps: int = 0  # loop iterations of the line
    fanned: int = 0  # commands started by xargs and find -exec

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
        """A script at a subshell's edge (the line, `$(…)`, `( … )`, a pipeline's stage):
        `exit` ends it here, and so do `break`/`continue` that found no loop inside it."""
        try:
            self.body(script, state, stdin, out, err, errexit)
        except _Exit as done:
            state.status = done.status
            self.exited = self.exited or top
        except _LoopJump:
            state.status = 0
        return state.status

    def body(
        self,
        script: Script,
        state: _State,
        stdin: _Stdin,
        out: _Sink,
        err: _Sink,
        errexit: bool,
    ) -> int:
        for item in script.items:
            final = item.rest[-1][1] if item.rest else item.first
            # `set -e` holds only inside the list's final pipeline, when it is not negated
            check = errexit and not final.negated
            last = item.first
            state.status = self.pipeline(
                item.first, state, stdin, out, err, check and final is item.first
            )
            for operator, pipeline in item.rest:
                if (operator == "&&") == (state.status == 0):
                    state.status = self.pipeline(
                        pipeline, state, stdin, out, err, check and final is pipeline
                    )
                    last = pipeline
            if check and state.status != 0 and last is final:
                raise _Errexit(state.status, final.commands[-1].offset)
        return state.status

    def pipeline(
        self,
        pipeline: Pipeline,
        state: _State,
        stdin: _Stdin,
        out: _Sink,
        err: _Sink,
        errexit: bool = False,
    ) -> int:
        commands = pipeline.commands
        if len(commands) == 1:
            status = self.command(commands[0], state, stdin, out, err, errexit)
        else:
            source = stdin
            for index, command in enumerate(commands):
                last = index == len(commands) - 1
                target = out if last else _Capture(self.limits.pipe)
                stage_state = state.copy()
                try:
                    status = self.command(command, stage_state, source, target, err, False)
                except _Exit as done:
                    status = done.status
                except _LoopJump:
                    status = 0
                finally:
                    self.give_back(stage_state)
                if isinstance(target, _Capture):
                    source = bytes(target.data)
        return (0 if status else 1) if pipeline.negated else status

    def command(
        self,
        command: Command,
        state: _State,
        stdin: _Stdin,
        out: _Sink,
        err: _Sink,
        errexit: bool,
    ) -> int:
        if type(command) is SimpleCommand:
            return self.simple(command, state, stdin, out, err)
        return self.compound(command, state, stdin, out, err, errexit)  # type: ignore[arg-type]

    # -- compound commands

    def compound(
        self,
        command: Compound,
        state: _State,
        stdin: _Stdin,
        out: _Sink,
        err: _Sink,
        errexit: bool,
    ) -> int:
        self.tick()
        self.last_sub_status.append(-1)
        self.memory.frames.append(0)
        opened: list[int] = []
        try:
            if command.redirects:
                try:
                    stdin, out, err = self.redirect(
                        command.redirects, state, stdin, out, err, opened
                    )
                except _CommandFailed as failed:
                    err.write(f"sh: {failed.message}\n".encode())
                    return failed.status
            if isinstance(stdin, bytes) and stdin:
                stdin = _Input(stdin)  # the commands inside read one stream between them
            return self.run_compound(command, state, stdin, out, err, errexit)
        finally:
            self.last_sub_status.pop()
            self.memory.held -= self.memory.frames.pop()
            for fd in opened:
                os.close(fd)

    def run_compound(
        self,
        command: Compound,
        state: _State,
        stdin: _Stdin,
        out: _Sink,
        err: _Sink,
        errexit: bool,
    ) -> int:
        if isinstance(command, If):
            for condition, body in command.clauses:
                if self.body(condition, state, stdin, out, err, False) == 0:
                    return self.body(body, state, stdin, out, err, errexit)
            if command.otherwise is not None:
                return self.body(command.otherwise, state, stdin, out, err, errexit)
            state.status = 0
            return 0
        if isinstance(command, For):
            values: list[str] = []
            try:
                for word in command.words:
                    values.extend(self.expand_fields(word, state, err))
            except _CommandFailed as failed:
                err.write(f"sh: {failed.message}\n".encode())
                return failed.status
            status = 0
            self.loops += 1
            try:
                for value in values:
                    self.loop_step()
                    self.assign(state, command.name, value)
                    try:
                        status = self.body(command.body, state, stdin, out, err, errexit)
                    except _LoopJump as jump:
                        if jump.levels > 1:
                            jump.levels -= 1
                            raise
                        status = 0
                        if jump.breaks:
                            break
            finally:
                self.loops -= 1
            state.status = status
            return status
        if isinstance(command, Loop):
            status = 0
            self.loops += 1
            try:
                while True:
                    self.loop_step()
                    try:
                        tested = self.body(command.condition, state, stdin, out, err, False)
                        if (tested == 0) == command.until:
                            break
                        status = self.body(command.body, state, stdin, out, err, errexit)
                    except _LoopJump as jump:
                        if jump.levels > 1:
                            jump.levels -= 1
                            raise
                        status = 0
                        if jump.breaks:
                            break
            finally:
                self.loops -= 1
            state.status = status
            return status
        if isinstance(command, Case):
            try:
                subject = self.expand_one(command.word, state, err)
                for arm in command.arms:
                    for pattern in arm.patterns:
                        if self.pattern(pattern, state, err).matches(subject, self.tick):
                            if not arm.body.items:
                                state.status = 0
                                return 0
                            return self.body(arm.body, state, stdin, out, err, errexit)
            except _CommandFailed as failed:
                err.write(f"sh: {failed.message}\n".encode())
                return failed.status
            state.status = 0
            return 0
        if isinstance(command, Group):
            if not command.subshell:
                return self.body(command.body, state, stdin, out, err, errexit)
            inner = state.copy()
            try:
                return self.script(command.body, inner, stdin, out, err, errexit=errexit)
            finally:
                self.give_back(inner)
        if isinstance(command, Conditional):
            try:
                return 0 if self.condition(command.expr, state, err) else 1
            except _CommandFailed as failed:
                err.write(f"sh: {failed.message}\n".encode())
                return failed.status
        try:
            number = self.arithmetic(command.expr, state, err)
        except arith.ArithError as error:
            err.write(f"sh: ((: {error.message}\n".encode())
            return 1
        return 0 if number else 1

    def loop_step(self) -> None:
        self.tick()
        self.steps += 1
        if self.steps > self.limits.loop_steps:
            raise _Stop(
                "loop-steps",
                f"loop step limit ({self.limits.loop_steps} iterations) reached: the command "
                "line was stopped (loops of one line run at most that many times in all)",
            )

    # -- [[ … ]]

    def condition(self, expr: CondExpr, state: _State, err: _Sink) -> bool:
        if isinstance(expr, CondLogic):
            left = self.condition(expr.left, state, err)
            if expr.op == "&&":
                return left and self.condition(expr.right, state, err)
            return left or self.condition(expr.right, state, err)
        if isinstance(expr, CondNot):
            return not self.condition(expr.inner, state, err)
        if isinstance(expr, CondWord):
            value = self.expand_one(expr.word, state, err)
            if expr.op == "-n":
                return value != ""
            if expr.op == "-z":
                return value == ""
            return self.file_test(expr.op, value, state)
        return self.compare(expr, state, err)

    def compare(self, expr: CondBinary, state: _State, err: _Sink) -> bool:
        left = self.expand_one(expr.left, state, err)
        op = expr.op
        if op in ("==", "!="):
            matched = self.pattern(expr.right, state, err).matches(left, self.tick)
            return matched == (op == "==")
        if op == "=~":
            return self.regex_match(left, expr.right, state, err)
        right = self.expand_one(expr.right, state, err)
        if op in ("<", ">"):
            return left < right if op == "<" else left > right
        try:
            a = self.evaluate(left, state)
            b = self.evaluate(right, state)
        except arith.ArithError as error:
            raise _CommandFailed(error.message) from error
        return {
            "-eq": a == b,
            "-ne": a != b,
            "-lt": a < b,
            "-le": a <= b,
            "-gt": a > b,
            "-ge": a >= b,
        }[op]

    def regex_match(self, text: str, word: Word, state: _State, err: _Sink) -> bool:
        """`[[ text =~ word ]]`, matched by box.wasm's "[[=~" (POSIX ERE, as bash's), so a
        pattern that takes long meets the run's fuel and deadline; quoted parts of the word
        match themselves."""
        ere = "".join(
            _ere_escape(value) if quoted else value
            for value, quoted, _ in self.segments(word, state, err)
        )
        found = _Capture(self.limits.pipe, self.memory)
        complaint = _Capture(self.limits.stream)
        subject = text.encode()
        try:
            status = self.stage("[[=~", [ere], [], state, subject, found, complaint)
            offsets = found.data.decode("ascii", "replace").split()
        finally:
            self.memory.hold(-len(found.data))
        if status not in (0, 1):
            why = complaint.data.decode("utf-8", "replace").strip() or f"status {status}"
            raise _CommandFailed(why, 2)
        for key in [k for k in state.variables if k.startswith("BASH_REMATCH")]:
            del state.variables[key]
            self.memory.hold(-state.charged.pop(key, 0))
        if status == 1:
            return False
        spans = [(int(a), int(b)) for a, b in zip(offsets[::2], offsets[1::2], strict=True)]
        for index, (begin, end) in enumerate(spans):
            group = subject[begin:end].decode("utf-8", "replace") if begin >= 0 else ""
            self.assign(state, "BASH_REMATCH" if index == 0 else f"BASH_REMATCH[{index}]", group)
        return True

    def file_test(self, op: str, path: str, state: _State) -> bool:
        if not path:
            return False
        try:
            if op in ("-L", "-h"):
                parent, _, name = path.rstrip("/").rpartition("/")
                where = self.workdir.resolve(state.cwd, parent or ".")
                if name in ("", ".", "..") or self.workdir.fence.hides_name(name):
                    return False
                info = os.lstat(self.workdir.host(posixpath.join(where, name)))
                return stat.S_ISLNK(info.st_mode)
            relative = self.workdir.resolve(state.cwd, path)
            real = self.workdir.host(relative)
            info = os.stat(real)
            if op == "-w" and self.unwritable(relative, info):
                return False
        except (PathRefused, OSError):
            return False
        if op in ("-e", "-a"):
            return True
        if op == "-f":
            return stat.S_ISREG(info.st_mode)
        if op == "-d":
            return stat.S_ISDIR(info.st_mode)
        if op == "-s":
            return info.st_size > 0
        mode = {"-r": os.R_OK, "-w": os.W_OK, "-x": os.X_OK}[op]
        return os.access(real, mode)

    def unwritable(self, relative: str, info: os.stat_result) -> bool:
        """A file the sandbox would refuse to write: a read-only run, the running plan, a
        protected input (by any name)."""
        fence = self.workdir.fence
        if self.read_only or fence.is_read_only_file(info):
            return True
        parent, _, name = relative.rpartition(os.sep)
        return bool(name) and fence.refusal(os.stat(self.workdir.host(parent)), name) is not None

    def pattern(self, word: Word, state: _State, err: _Sink) -> Glob:
        """A glob pattern (case, `[[ == ]]`, `${X#p}`): quoted text matches itself."""
        chars = [
            (char, not quoted)
            for text, quoted, _ in self.segments(word, state, err)
            for char in text
        ]
        self.memory.take(len(chars) * _PATTERN_CHAR_COST)
        return Glob(chars)

    # -- arithmetic

    def arithmetic(self, expr: Word, state: _State, err: _Sink) -> int:
        return self.evaluate(self.expand_one(expr, state, err), state)

    def evaluate(self, text: str, state: _State) -> int:
        def put(name: str, value: str) -> None:
            self.assign(state, name, value)

        return arith.evaluate(text, lambda name: state.variables.get(name, ""), put, self.tick)

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
            if redirect.op in ("<<", "<<<"):
                text = self.expand_one(redirect.target, state, err)
                stdin = text.encode() + (b"\n" if redirect.op == "<<<" else b"")
                continue
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
        if name == "xargs":
            return self.xargs(args, assignments, state, stdin, out, err)
        if name == "read":  # the one builtin a prefix assignment (IFS=,) reaches
            ifs = dict(assignments).get("IFS", state.variables.get("IFS", " \t\n"))
            return self.read(args, state, stdin, err, ifs)
        if name in BUILTINS:
            return self.builtin(name, args, state, stdin, out, err)
        if name not in BOX_COMMANDS and name not in PYTHON_COMMANDS:
            self.missing.append(name)
            err.write(
                f"{name}: command not found (not in the sandbox){did_you_mean(name)}\n".encode()
            )
            return 127
        if name == "find" and not fanout.EXEC_ACTIONS.isdisjoint(args):
            return self.find_exec(args, assignments, state, stdin, out, err)
        return self.stage(name, args, assignments, state, stdin, out, err)

    # -- xargs and find -exec: more stages, run by the host

    def fanned_out(self, who: str, argv: list[str], err: _Sink) -> int | None:
        """None when `argv` may run as a fanned-out stage, else the status to give back."""
        name = argv[0]
        if name in BUILTINS:
            err.write(
                f"{who}: {name}: a shell builtin cannot run under {who}; only the sandbox's "
                "commands can\n".encode()
            )
            return 126
        if name not in BOX_COMMANDS:
            self.missing.append(name)
            err.write(f"{who}: {name}: command not found (not in the sandbox)\n".encode())
            return 127
        return None

    def count_fanned(self) -> None:
        self.fanned += 1
        if self.fanned > self.limits.fan_out:
            raise _Stop(
                "fan-out",
                f"fan-out limit ({self.limits.fan_out} commands started by xargs and find "
                "-exec) reached: the command line was stopped",
            )

    def xargs(
        self,
        args: list[str],
        assignments: list[tuple[str, str]],
        state: _State,
        stdin: _Stdin,
        out: _Sink,
        err: _Sink,
    ) -> int:
        data = self.read_all(stdin)
        try:
            options = fanout.xargs_options(args)
        except fanout.FanoutError as refused:
            err.write(f"{refused.message}\n".encode())
            return refused.status
        self.memory.take(len(data) * (1 if data.isascii() else 4) + _FIELD_COST)
        status = 0
        try:
            for argv in fanout.xargs_runs(options, data.decode("utf-8", "replace")):
                refused_status = self.fanned_out("xargs", argv, err)
                if refused_status is not None:
                    return refused_status
                ran = self.fanned_stage(argv, assignments, state, out, err)
                if ran == 255:
                    err.write(f"xargs: {argv[0]}: exited with status 255; aborting\n".encode())
                    return 124
                if ran in (126, 127):
                    return ran
                if ran:
                    status = 123
        except fanout.FanoutError as refused:
            err.write(f"{refused.message}\n".encode())
            return refused.status
        return status

    def fanned_stage(
        self,
        argv: list[str],
        assignments: list[tuple[str, str]],
        state: _State,
        out: _Sink,
        err: _Sink,
    ) -> int:
        """One command xargs or find -exec starts: counted, its words held while it runs."""
        self.count_fanned()
        size = sum(len(a) + _FIELD_COST for a in argv)
        self.memory.hold(size)
        try:
            return self.stage(argv[0], argv[1:], assignments, state, b"", out, err)
        finally:
            self.memory.hold(-size)

    def find_exec(
        self,
        args: list[str],
        assignments: list[tuple[str, str]],
        state: _State,
        stdin: _Stdin,
        out: _Sink,
        err: _Sink,
    ) -> int:
        try:
            split = fanout.split_find(args)
        except fanout.FanoutError as refused:
            err.write(f"{refused.message}\n".encode())
            return refused.status
        assert split is not None
        refused_status = self.fanned_out("find -exec", split.template, err)
        if refused_status is not None:
            return refused_status
        found = _Capture(self.limits.pipe, self.memory)
        try:
            status = self.stage("find", split.find_args, assignments, state, stdin, found, err)
            names = fanout.found_names(found.data)  # held and charged by the capture
            failed = False
            if split.batched:
                for batch in fanout.batches(names):
                    argv = [*split.template, *batch]
                    failed |= self.fanned_stage(argv, assignments, state, out, err) != 0
            else:
                for name in names:
                    argv = [a.replace("{}", name) for a in split.template]
                    self.fanned_stage(argv, assignments, state, out, err)
        finally:
            self.memory.hold(-len(found.data))
        return status or int(failed)

    def read_all(self, stdin: _Stdin) -> bytes:
        """All of stdin, for a command the host carries out itself."""
        if isinstance(stdin, _Input):
            data = stdin.rest()
        elif isinstance(stdin, bytes):
            data = stdin
        else:
            chunks: list[bytes] = []
            while True:  # bounded by the line's host memory, which each chunk is charged to
                self.tick()
                chunk = os.read(stdin, 1 << 16)
                if not chunk:
                    break
                self.memory.take(2 * len(chunk))  # the chunk, and its copy once joined
                chunks.append(chunk)
            data = b"".join(chunks)
        return data

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
        shared = stdin if isinstance(stdin, _Input) else None
        given = shared.data[shared.pos :] if shared is not None else stdin
        assert not isinstance(given, _Input)
        env = {k: v for k, v in state.variables.items() if k in state.exported}
        env.update(assignments)
        env["GK_CWD"] = GUEST_ROOT + ("/" + state.cwd if state.cwd else "")
        spec = wasi.StageSpec(
            argv=[name, *args],
            env=sorted(env.items()),
            stdin=given,
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
        if shared is not None:  # what it read, the next command does not see
            shared.pos += outcome.stdin_read
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

    def builtin(
        self, name: str, args: list[str], state: _State, stdin: _Stdin, out: _Sink, err: _Sink
    ) -> int:
        if name == ":":
            return 0
        if name in ("break", "continue"):
            if len(args) > 1 or (args and not (args[0].isdigit() and int(args[0]) >= 1)):
                err.write(f"{name}: {' '.join(args)}: loop count out of range\n".encode())
                return 1
            if not self.loops:
                err.write(
                    f"{name}: only meaningful in a `for', `while', or `until' loop\n".encode()
                )
                return 0
            raise _LoopJump(name == "break", min(int(args[0]) if args else 1, self.loops))

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

    def read(self, args: list[str], state: _State, stdin: _Stdin, err: _Sink, ifs: str) -> int:
        """`read [-r] [NAME…]`: one line of stdin into the names (REPLY when none), cut at
        the characters of `ifs` as bash cuts it."""
        raw = bool(args) and args[0] == "-r"
        names = args[1:] if raw else args
        for name in names:
            if not _NAME.fullmatch(name):
                message = (
                    "unsupported option (the sandbox has -r)"
                    if name.startswith("-")
                    else ("not a valid identifier")
                )
                err.write(f"read: `{name}': {message}\n".encode())
                return 2 if name.startswith("-") else 1
        line = self.read_line(stdin)
        if line is None:
            for name in names or ["REPLY"]:
                self.assign(state, name, "")
            return 1
        text = line.decode("utf-8", "replace")
        complete = text.endswith("\n")
        text = text[:-1] if complete else text
        if not raw:
            text = re.sub(r"\\(.)", r"\1", text.replace("\\\n", ""), flags=re.DOTALL)
        if not names:
            self.assign(state, "REPLY", text)
            return 0 if complete else 1
        blanks = "".join(c for c in ifs if c in " \t\n")
        others = "".join(c for c in ifs if c not in " \t\n")
        text = text.strip(blanks) if blanks else text
        if not ifs or len(names) == 1:  # (re.split's maxsplit=0 would mean no bound)
            fields = [text]
        elif others:
            white = f"[{re.escape(blanks)}]*" if blanks else ""
            cut = f"{white}[{re.escape(others)}]{white}" + (
                f"|[{re.escape(blanks)}]+" if blanks else ""
            )
            fields = re.split(cut, text, maxsplit=len(names) - 1)
        else:
            fields = re.split(f"[{re.escape(blanks)}]+", text, maxsplit=len(names) - 1)
        fields = [] if fields == [""] else fields
        for index, name in enumerate(names):
            self.assign(state, name, fields[index] if index < len(fields) else "")
        return 0 if complete else 1

    def read_line(self, stdin: _Stdin) -> bytes | None:
        if isinstance(stdin, _Input):
            return stdin.line()
        if isinstance(stdin, bytes):
            end = stdin.find(b"\n")
            return (stdin if end < 0 else stdin[: end + 1]) or None
        # A `<` file is a regular one (confine refuses others): read a block, and seek back
        # to just past the line, so the next command reads on from there.
        line = bytearray()
        while True:
            self.tick()
            block = os.read(stdin, 1 << 16)
            if not block:
                break
            end = block.find(b"\n")
            if end >= 0:
                line += block[: end + 1]
                os.lseek(stdin, end + 1 - len(block), os.SEEK_CUR)
                break
            self.memory.take(len(block))
            line += block
        return bytes(line) or None

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
            elif isinstance(part, ParamOp):
                yield from self.parameter(part, state, err)
            elif isinstance(part, Arith):
                try:
                    number = self.arithmetic(part.expr, state, err)
                except arith.ArithError as error:
                    # as in bash: an expansion that cannot be done ends the (sub)shell
                    err.write(f"sh: {error.message}\n".encode())
                    raise _Exit(1) from error
                yield str(number), part.quoted, not part.quoted

    def parameter(
        self, part: ParamOp, state: _State, err: _Sink
    ) -> Iterator[tuple[str, bool, bool]]:
        """`${NAME op arg}` and `${#NAME}`."""
        name, op = part.name, part.op
        value = state.variables.get(name)
        splits = not part.quoted
        if op == "len":
            yield str(len(value or "")), part.quoted, splits
            return
        assert part.arg is not None
        unset = value is None or (op[0] == ":" and value == "")
        if op in (":-", "-", ":+", "+"):
            use_arg = unset if op in (":-", "-") else not unset
            if not use_arg:
                yield ("" if op in (":+", "+") else value or ""), part.quoted, splits
                return
            for text, quoted, arg_splits in self.segments(part.arg, state, err):
                # unquoted text of the word is split and globbed, as bash does
                yield text, quoted, arg_splits or not quoted
            return
        if op in (":=", "="):
            if unset:
                value = self.expand_one(part.arg, state, err)
                self.assign(state, name, value)
            yield value or "", part.quoted, splits
            return
        text = value or ""
        glob = self.pattern(part.arg, state, err)
        lengths = range(len(text) + 1)
        if op in ("##", "%%"):
            lengths = range(len(text), -1, -1)
        for size in lengths:
            self.tick()
            if op[0] == "#" and glob.matches(text[:size], self.tick):
                text = text[size:]
                break
            if op[0] == "%" and glob.matches(text[len(text) - size :], self.tick):
                text = text[: len(text) - size]
                break
        yield text, part.quoted, splits

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
        # one entry per simple or compound command open: the parser bounds their nesting
        if depth > 2 * MAX_NESTING + 1:  # the parser refuses deeper text: a backstop
            raise _CommandFailed("$(…) nested too deeply")
        yield


def _ere_escape(text: str) -> str:
    """Text an ERE matches literally (a quoted part of `=~`'s right side)."""
    return "".join("\\" + char if char in _ERE_SPECIAL else char for char in text)


_ERE_SPECIAL = frozenset(".[]()*+?{}|^$\\")


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
