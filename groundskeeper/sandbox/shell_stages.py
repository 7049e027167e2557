"""One command line's run in the sandbox shell: its state, its signals and the stages it starts.

It owns `Run` (limits, deadline, fuel, host memory), the `State` a subshell copies, the signals
that unwind the interpreter and the stages (box.wasm, python3, xargs, find -exec); it expands
no word and walks no tree (the layers built on `Run` do).
"""

from __future__ import annotations

import os
import sys
import time

import groundskeeper.sandbox.fanout as fanout
import groundskeeper.sandbox.wasi as wasi
from groundskeeper.fastclass import fastclass, field, replace
from groundskeeper.sandbox.confine import GUEST_ROOT, Workdir
from groundskeeper.sandbox.preview1_abi import Sink
from groundskeeper.sandbox.quota import DiskQuota
from groundskeeper.sandbox.registry import (
    COMMANDS,
    CPYTHON_COMMANDS,
    PYTHON_COMMANDS,
    launch_refusal,
    negation_error,
)
from groundskeeper.sandbox.result import Fault
from groundskeeper.sandbox.shell_streams import (
    FIELD_COST,
    Capture,
    HostMemory,
    Input,
    Stdin,
    Stop,
    cut_by,
    host_memory_message,
)
from groundskeeper.sandbox.tree import Script

__all__ = [
    "NOT_STARTED",
    "CommandFailed",
    "Errexit",
    "Exit",
    "LoopJump",
    "NegatedError",
    "Run",
    "State",
]


class Errexit(Exception):
    """errexit: the command at `offset` failed with `status`, and the script stops."""

    def __init__(self, status: int, offset: int) -> None:
        super().__init__(status)
        self.status = status
        self.offset = offset


#: a `decider`'s own status when its command could not start (a redirection or an expansion
#: refused): the status the shell was given is then the shell's, never a "no"
NOT_STARTED = -1


class NegatedError(Exception):
    """In a check, a negated pipeline at `offset` whose status (`status`) is an error, not a
    "no" (`registry.negation_error`, which says why in `reason`): the check fails there, as
    at an `exit N`, wherever the negation stands (an `if`, a loop's condition, an `&&`/`||`
    list, a pipeline's stage, a `$(…)`)."""

    def __init__(self, status: int, offset: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.offset = offset
        self.reason = reason


class Exit(Exception):
    """`exit N`, or an expansion that cannot be done: the (sub)shell ends with `status`;
    `offset` is the command's, set by the innermost list that ran it."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status
        self.offset: int | None = None


class LoopJump(Exception):
    """`break N` / `continue N`: `levels` loops still to leave."""

    def __init__(self, breaks: bool, levels: int) -> None:
        super().__init__(levels)
        self.breaks = breaks
        self.levels = levels


class CommandFailed(Exception):
    """A command cannot start (an expansion or a redirection refused): `message` goes to
    its stderr and `status` is its status; the line goes on."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@fastclass
class State:
    """What a subshell (`$(…)`, a pipeline stage) copies and a plain command changes."""

    cwd: str
    variables: dict[str, str]
    exported: set[str]
    status: int
    charged: dict[str, int] = field(default_factory=dict)  # host memory its own values hold
    options: frozenset[str] = frozenset()  # `set -e/-u/-o pipefail`: errexit, nounset, pipefail

    def copy(self) -> State:
        return replace(
            self, variables=dict(self.variables), exported=set(self.exported), charged={}
        )


@fastclass
class Run:
    """One command line's run as every layer of the interpreter sees it: its workdir and
    limits, what it has spent, and the stages it starts.

    The interpreter is built on this in layers, each a subclass of the one before: expansion
    (`shell_expand.Expansion`), simple commands (`shell_simple.SimpleCommands`), compound
    commands (`shell_compound.CompoundCommands`), lists and pipelines (`shell._Interpreter`).
    A layer reaches the ones above it through the methods declared at the end of this class.
    """

    workdir: Workdir
    read_only: bool
    limits: wasi.Limits
    watch: wasi.Watch
    root_fd: int
    timeout: float
    quota: DiskQuota | None = None
    fuel_left: int = 0
    last_sub_status: list[int] = field(default_factory=list)
    memory: HostMemory = field(init=False)
    missing: list[str] = field(default_factory=list)  # commands asked for and not had
    exited: bool = False  # the top-level script ended by `exit`
    exit_offset: int | None = None  # where, when its status was not 0
    loops: int = 0  # loops open around the command running
    steps: int = 0  # loop iterations of the line
    fanned: int = 0  # commands started by xargs and find -exec
    # a check's run: a negation whose status is an error fails the check (`NegatedError`)
    strict_negation: bool = False
    # the command whose status the shell holds now: (its name, its own status, the status
    # the shell was given), "" when none gave it; xargs and find -exec name what they started
    decider: tuple[str, int, int] = ("", 0, 0)

    def __post_init__(self) -> None:
        self.memory = HostMemory(self.limits.host_memory)

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

    def assign(self, state: State, name: str, value: str) -> None:
        size = sys.getsizeof(value)
        self.memory.hold(size - state.charged.get(name, 0))
        state.charged[name] = size
        state.variables[name] = value

    def give_back(self, state: State) -> None:
        """A subshell's state is dropped: what its own assignments held is free again."""
        if state.charged:
            self.memory.hold(-sum(state.charged.values()))

    # -- one stage

    def stage(
        self,
        name: str,
        args: list[str],
        assignments: list[tuple[str, str]],
        state: State,
        stdin: Stdin,
        out: Sink,
        err: Sink,
    ) -> int:
        if self.watch.fault is None and time.monotonic() >= self.watch.deadline:
            self.watch.stop("deadline")
        if self.watch.fault is not None:
            raise self.stop(self.watch.fault, name)
        shared = stdin if isinstance(stdin, Input) else None
        given = shared.data[shared.pos :] if shared is not None else stdin
        assert not isinstance(given, Input)
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
            dev_null=True,  # `/dev/null` as an operand (`diff /dev/null FILE`), as in bash
        )
        if name in CPYTHON_COMMANDS:
            # imported here: a line without python3 should not pay for its import
            from groundskeeper.sandbox.cpython import run_cpython
            from groundskeeper.sandbox.cpython_setup import ensure

            outcome = run_cpython(spec, self.watch, self.fuel_left, self.limits, ensure=ensure)
        elif name in PYTHON_COMMANDS:
            from groundskeeper.sandbox.micropython import run_python

            outcome = run_python(spec, self.watch, self.fuel_left, self.limits)
        else:
            outcome = wasi.run_stage(spec, self.watch, self.fuel_left, self.limits)
        if shared is not None:  # what it read, the next command does not see
            shared.pos += outcome.stdin_read
        self.fuel_left -= outcome.fuel_used
        if outcome.fault is not None:
            fault = outcome.fault
            if fault == "output":  # a sink whose room was the run's quota or host memory
                fault = cut_by(out) or cut_by(err) or fault
            raise self.stop(fault, name, outcome.message)
        return outcome.status & 0xFF

    def stop(self, fault: Fault, name: str, detail: str = "") -> Stop:
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
            "host-memory": host_memory_message(limits.host_memory, name),
            "disk": f"{self.quota.message() if self.quota else 'disk quota exceeded'} by "
            f"'{name}' (all this run's commands and tools write counts)",
            "interrupted": f"interrupted {where}: the process was asked to stop "
            "(SIGINT or SIGTERM)",
        }
        return Stop(fault, messages[fault])

    def read_all(self, stdin: Stdin) -> bytes:
        """All of stdin, for a command the host carries out itself."""
        if isinstance(stdin, Input):
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

    # -- xargs and find -exec: more stages, run by the host

    def fanned_out(self, who: str, argv: list[str], err: Sink) -> int | None:
        """None when `argv` may run as a fanned-out stage, else the status to give back."""
        name = argv[0]
        refused = launch_refusal(who, name)
        if refused is None:
            return None
        status, message = refused
        if name not in COMMANDS:  # python3 the sandbox has, though xargs cannot start it
            self.missing.append(name)
        err.write(f"{who}: {message}\n".encode())
        return status

    def count_fanned(self) -> None:
        self.fanned += 1
        if self.fanned > self.limits.fan_out:
            raise Stop(
                "fan-out",
                f"fan-out limit ({self.limits.fan_out} commands started by xargs and find "
                "-exec) reached: the command line was stopped",
            )

    def xargs(
        self,
        args: list[str],
        assignments: list[tuple[str, str]],
        state: State,
        stdin: Stdin,
        out: Sink,
        err: Sink,
    ) -> int:
        data = self.read_all(stdin)
        try:
            options = fanout.xargs_options(args)
        except fanout.FanoutError as refused:
            err.write(f"{refused.message}\n".encode())
            return refused.status
        self.memory.take(len(data) * (1 if data.isascii() else 4) + FIELD_COST)
        status = 0
        self.decider = ("xargs", 0, 0)
        try:
            for argv in fanout.xargs_runs(options, data.decode("utf-8", "replace")):
                refused_status = self.fanned_out("xargs", argv, err)
                if refused_status is not None:
                    self.decider = ("xargs", refused_status, refused_status)
                    return refused_status
                ran = self.fanned_stage(argv, assignments, state, out, err)
                self.passed_on(argv[0], ran)
                if ran == 255:
                    err.write(f"xargs: {argv[0]}: exited with status 255; aborting\n".encode())
                    return self.given(124)
                if ran in (126, 127):
                    return self.given(ran)
                if ran:
                    status = 123
        except fanout.FanoutError as refused:
            err.write(f"{refused.message}\n".encode())
            self.decider = ("xargs", refused.status, refused.status)
            return refused.status
        return self.given(status)

    def passed_on(self, name: str, status: int) -> None:
        """xargs or find -exec: the first command it started whose status was an error (and
        not a "no") is the one its own status stands for."""
        if self.decider[0] in ("xargs", "find") and negation_error(name, status) is not None:
            self.decider = (name, status, 0)

    def given(self, status: int) -> int:
        """What xargs or find -exec gives back: the status the `decider` was given."""
        name, own, _ = self.decider
        launcher = name in ("xargs", "find")
        self.decider = (name, status, status) if launcher else (name, own, status)
        return status

    def fanned_stage(
        self,
        argv: list[str],
        assignments: list[tuple[str, str]],
        state: State,
        out: Sink,
        err: Sink,
    ) -> int:
        """One command xargs or find -exec starts: counted, its words held while it runs."""
        self.count_fanned()
        size = sum(len(a) + FIELD_COST for a in argv)
        self.memory.hold(size)
        try:
            return self.stage(argv[0], argv[1:], assignments, state, b"", out, err)
        finally:
            self.memory.hold(-size)

    def find_exec(
        self,
        args: list[str],
        assignments: list[tuple[str, str]],
        state: State,
        stdin: Stdin,
        out: Sink,
        err: Sink,
    ) -> int:
        try:
            split = fanout.split_find(args)
        except fanout.FanoutError as refused:
            err.write(f"{refused.message}\n".encode())
            return refused.status
        assert split is not None
        refused_status = self.fanned_out("find -exec", split.template, err)
        if refused_status is not None:
            self.decider = ("find", refused_status, refused_status)
            return refused_status
        found = Capture(self.limits.pipe, self.memory)
        try:
            status = self.stage("find", split.find_args, assignments, state, stdin, found, err)
            self.decider = ("find", status, status)
            names = fanout.found_names(found.data)  # held and charged by the capture
            failed = False
            if split.batched:
                for batch in fanout.batches(names):
                    argv = [*split.template, *batch]
                    ran = self.fanned_stage(argv, assignments, state, out, err)
                    self.passed_on(argv[0], ran)
                    failed |= ran != 0
            else:
                for name in names:
                    argv = [a.replace("{}", name) for a in split.template]
                    self.fanned_stage(argv, assignments, state, out, err)
        finally:
            self.memory.hold(-len(found.data))
        return self.given(status or int(failed))

    # -- what the layers above define (in `shell._Interpreter`)

    def script(
        self,
        script: Script,
        state: State,
        stdin: Stdin,
        out: Sink,
        err: Sink,
        *,
        errexit: bool = False,
        top: bool = False,
    ) -> int:
        """A script at a subshell's edge (the line, `$(…)`, `( … )`, a pipeline's stage):
        `exit` ends it here, and so do `break`/`continue` that found no loop inside it."""
        raise NotImplementedError

    def body(
        self,
        script: Script,
        state: State,
        stdin: Stdin,
        out: Sink,
        err: Sink,
        errexit: bool,
    ) -> int:
        """The and-or lists of `script` in `state`, one after another; its last status."""
        raise NotImplementedError
