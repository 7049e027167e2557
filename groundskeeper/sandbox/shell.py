"""The interpreter: runs a parsed command line on the host, each command a box.wasm stage.

It owns `run_cmdline` (parse, run, the result and its fault) and the interpreter's top layer:
lists, `&&`/`||`/`!`, pipelines (a stage's stdout a buffer the next reads as stdin). The layers
below are `shell_compound`, `shell_simple`, `shell_expand` and `shell_stages`, on the streams of
`shell_streams`; file access the host does itself goes through `confine.Workdir`, the commands'
through `preview1`.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Mapping
from pathlib import Path

import groundskeeper.sandbox.wasi as wasi
from groundskeeper.sandbox.confine import Workdir
from groundskeeper.sandbox.preview1_abi import Sink
from groundskeeper.sandbox.quota import DiskQuota
from groundskeeper.sandbox.registry import negation_error
from groundskeeper.sandbox.result import Fault, SandboxError, ShellResult
from groundskeeper.sandbox.shell_compound import CompoundCommands
from groundskeeper.sandbox.shell_stages import (
    NOT_STARTED,
    Errexit,
    Exit,
    LoopJump,
    NegatedError,
    State,
)
from groundskeeper.sandbox.shell_streams import Capture, Stdin, Stop
from groundskeeper.sandbox.syntax import parse
from groundskeeper.sandbox.syntax_scanner import ShellSyntaxError
from groundskeeper.sandbox.tree import Command, Pipeline, Script, SimpleCommand

__all__ = ["run_cmdline"]

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
    "interrupted": 130,
}


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
    workspace = Workdir(str(workdir))
    try:
        # O_DIRECTORY: a workdir that is not a directory fails here (no stat of its own first)
        root_fd = os.open(workspace.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        if not os.path.isdir(workdir):
            raise SandboxError(f"workdir {workdir} is not a directory") from None
        raise SandboxError(f"workdir {workdir} cannot be opened: {error.strerror}") from error
    try:
        script = _parsed(cmdline)
    except ShellSyntaxError as error:
        os.close(root_fd)
        message = f"sh: syntax error at line {error.line}, column {error.column}: {error.message}\n"
        return ShellResult(2, "", message, _ms(started), "syntax")
    limits = limits or wasi.Limits()
    runtime = wasi.lease_runtime()
    watch = wasi.start_watch(runtime, timeout)
    run = _Interpreter(workspace, read_only, limits, watch, root_fd, timeout, quota)
    run.fuel_left = int(limits.fuel_per_second * max(timeout, 0.001))
    # a check (its success confirmed by the sentinel) reads a negated error as a failure
    run.strict_negation = sentinel is not None
    stdout = Capture(limits.stream)
    stderr = Capture(limits.stream)
    state = State(cwd="", variables=dict(env or {}), exported=set(env or {}), status=0)
    fault: Fault | None = None
    failed_line: int | None = None
    negated: str | None = None
    ended = False  # not after a fault, an error of the sandbox's own or an interrupt
    try:
        status = run.script(script, state, b"", stdout, stderr, errexit=errexit, top=True)
        if status == 0 and sentinel is not None and not run.exited:
            # the script's final node, run by the interpreter and by nothing else: on a line
            # of its own, whatever the script printed (or left without a final newline); an
            # `exit` ends the script before it, as it would end any node after it
            if stdout.data and not stdout.data.endswith(b"\n"):
                stdout.force(b"\n")
            stdout.force(sentinel.encode() + b"\n")
    except Errexit as stopped:
        status = stopped.status
        failed_line = cmdline.count("\n", 0, stopped.offset) + 1
        ended = True
    except NegatedError as stopped:
        status, negated = stopped.status, stopped.reason
        failed_line = cmdline.count("\n", 0, stopped.offset) + 1
        ended = True
    except Stop as stop:
        fault, status = stop.fault, _FAULT_STATUS[stop.fault]
        stderr.force(f"sh: {stop.message}\n".encode())
    else:
        if errexit and run.exit_offset is not None:  # `exit N` (N ≠ 0) stopped the script
            failed_line = cmdline.count("\n", 0, run.exit_offset) + 1
        ended = True
    finally:
        # the runtime keeps its store for the next run only after a run that ended well
        wasi.end_watch(watch, keep_store=ended)
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
        negated,
    )


# A tree is never changed once parsed (tree.py), so a line run again (a check at red-first,
# its attempt, the roll-up and the sweep; a stop hook on every stop) is parsed once. A
# syntax error is raised again each time: lru_cache keeps only what returned.
_parsed = functools.lru_cache(maxsize=256)(parse)


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


class _Interpreter(CompoundCommands):
    """The interpreter's top layer, and the whole interpreter: lists and pipelines, on the
    compound commands, simple commands, expansion and stages below it."""

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
        try:
            self.body(script, state, stdin, out, err, errexit, root=True)
        except Exit as done:
            state.status = done.status
            self.exited = self.exited or top
            if top and done.status != 0:
                self.exit_offset = done.offset
        except LoopJump:
            state.status = 0
        return state.status

    def body(
        self,
        script: Script,
        state: State,
        stdin: Stdin,
        out: Sink,
        err: Sink,
        errexit: bool,
        *,
        root: bool = False,
    ) -> int:
        for item in script.items:
            final = item.rest[-1][1] if item.rest else item.first
            # `set -e` holds only inside the list's final pipeline, when it is not negated; a
            # script's own `set -e` turns it on for its later lists (and what they run)
            on = errexit or (root and "errexit" in state.options)
            check = on and not final.negated
            last = item.first
            try:
                state.status = self.pipeline(
                    item.first, state, stdin, out, err, check and final is item.first
                )
                for operator, pipeline in item.rest:
                    if (operator == "&&") == (state.status == 0):
                        last = pipeline
                        state.status = self.pipeline(
                            pipeline, state, stdin, out, err, check and final is pipeline
                        )
            except Exit as done:
                if done.offset is None:  # an `exit` of this list's: where it stood
                    done.offset = last.commands[-1].offset
                raise
            if check and state.status != 0 and last is final:
                raise Errexit(state.status, final.commands[-1].offset)
        return state.status

    def pipeline(
        self,
        pipeline: Pipeline,
        state: State,
        stdin: Stdin,
        out: Sink,
        err: Sink,
        errexit: bool = False,
    ) -> int:
        commands = pipeline.commands
        self.decider = ("", 0, 0)  # set by the command that gives the pipeline its status
        if len(commands) == 1:
            status = self.command(commands[0], state, stdin, out, err, errexit)
        else:
            source = stdin
            failed = 0  # under `set -o pipefail`: the last stage's status that was not 0
            failed_by = self.decider
            for index, command in enumerate(commands):
                self.decider = ("", 0, 0)
                last = index == len(commands) - 1
                target = out if last else Capture(self.limits.pipe)
                stage_state = state.copy()
                try:
                    status = self.command(command, stage_state, source, target, err, False)
                except Exit as done:
                    status = done.status
                except LoopJump:
                    status = 0
                finally:
                    self.give_back(stage_state)
                if status:
                    failed, failed_by = status, self.decider
                if isinstance(target, Capture):
                    source = bytes(target.data)
            if "pipefail" in state.options:
                status = failed
                self.decider = failed_by if failed else self.decider
        if not pipeline.negated:
            return status
        if status and self.strict_negation:
            self.refuse_negated_error(pipeline, status)
        return 0 if status else 1

    def refuse_negated_error(self, pipeline: Pipeline, status: int) -> None:
        """A check's negated pipeline ended with `status`: when the command that gave it says
        it could not answer (an error, not a "no"), the check fails here."""
        name, own, given = self.decider
        if own == NOT_STARTED and given == status:
            reason: str | None = (
                "the negated command could not start (a redirection or an expansion failed),"
                ' not a "no": in a check `!` passes only on a "no"'
            )
        else:
            reason = negation_error(name, own) if given == status else None
            reason = reason or negation_error("", status)
        if reason is not None:
            raise NegatedError(status, pipeline.commands[0].offset, reason)

    def command(
        self,
        command: Command,
        state: State,
        stdin: Stdin,
        out: Sink,
        err: Sink,
        errexit: bool,
    ) -> int:
        if type(command) is SimpleCommand:
            return self.simple(command, state, stdin, out, err)
        return self.compound(command, state, stdin, out, err, errexit)  # type: ignore[arg-type]
