"""What a sandbox run returns (`ShellResult`) and the errors it may raise.

Kept apart from the interpreter so that importing the parser or the result type never pulls
in wasmtime.
"""

from __future__ import annotations

from typing import Literal

from groundskeeper.errors import GroundskeeperError
from groundskeeper.fastclass import fastclass

Fault = Literal[
    "syntax",
    "deadline",
    "fuel",
    "memory",
    "output",
    "trap",
    "host-memory",
    "disk",
    "loop-steps",
    "fan-out",
    "interrupted",  # the process was asked to stop (SIGINT, SIGTERM): not the command's doing
]


@fastclass(frozen=True)
class ShellResult:
    """The outcome of one command line.

    `fault` is None when the commands ran to their own end (whatever their status), or names
    why the sandbox stopped them: "syntax" (status 2), "deadline", "fuel", "memory",
    "output", "trap", "host-memory" (what the interpreter itself holds for the line),
    "disk" (the run's disk quota), "loop-steps" (loop iterations of the line, in all) or
    "fan-out" (commands `xargs` and `find -exec` started for the line, in all).

    `missing` lists, from the interpreter's own record, every command it was asked to run and
    does not have (text a command prints can never add to it). Under errexit, `failed_line`
    is the 1-based line of the command whose failure stopped the script; so it is of a check's
    negated command whose status was an error (`negated_error` says why).
    """

    status: int
    stdout: str
    stderr: str
    duration_ms: float
    fault: Fault | None = None
    missing: tuple[str, ...] = ()
    failed_line: int | None = None
    # in a check, why a negated command's status was an error and not a "no" (the check
    # stopped there, at `failed_line`); None otherwise
    negated_error: str | None = None


class SandboxError(GroundskeeperError):
    """The sandbox itself cannot work: an unusable workdir, a missing box.wasm, a host bug."""
