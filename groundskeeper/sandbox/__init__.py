"""The WASM shell: the only shell groundskeeper has.

`parse`/`command_names`/`COMMANDS`/`command_reference` need no wasmtime (lint and the author
prompt use them); `run` interprets a command line on the host and runs every command as a
WASI program in its own instance. The package also validates workflow scripts in QuickJS. It
must not read plans, call models or seal the record, and its modules never import this
`__init__` (they import each other by name).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groundskeeper.sandbox.quota import DiskQuota
    from groundskeeper.sandbox.registry import (
        BUILTINS,
        COMMANDS,
        closest_command,
        command_reference,
    )
    from groundskeeper.sandbox.result import Fault, SandboxError, ShellResult
    from groundskeeper.sandbox.syntax import Script, ShellSyntaxError, command_names, parse

# The names this package re-exports, each loaded from its module on first use: importing one
# module of the package (`groundskeeper.sandbox.fence`, say) runs this `__init__`, and must not
# load the shell's parser and registry with it (the agent hook's start-up, docs/agents.md).
_LAZY = {
    "DiskQuota": "quota",
    "BUILTINS": "registry",
    "COMMANDS": "registry",
    "closest_command": "registry",
    "command_reference": "registry",
    "Fault": "result",
    "SandboxError": "result",
    "ShellResult": "result",
    "Script": "syntax",
    "ShellSyntaxError": "syntax",
    "command_names": "syntax",
    "parse": "syntax",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "BUILTINS",
    "COMMANDS",
    "DiskQuota",
    "Fault",
    "SandboxError",
    "Script",
    "ShellResult",
    "ShellSyntaxError",
    "allow_runs",
    "closest_command",
    "command_names",
    "command_reference",
    "interrupt_runs",
    "parse",
    "run",
]


def run(
    cmdline: str,
    *,
    workdir: str | Path,
    read_only: bool = False,
    timeout: float = 10.0,
    env: Mapping[str, str] | None = None,
    quota: DiskQuota | None = None,
    errexit: bool = False,
    sentinel: str | None = None,
) -> ShellResult:
    """Run `cmdline` in the sandbox with only `workdir` visible (read-only if asked).

    `errexit`: the script stops at the first command that fails, as under `set -e` (the
    usual exemptions: all but the last pipeline of an `&&`/`||` list, `!` pipelines).
    `sentinel`: when the script ends with status 0, the interpreter itself prints this text
    on a line of its own after everything else (how a check's success is confirmed). A run
    with a sentinel is a check's, and reads `!` as a check must: a negated pipeline whose
    status is an error, not a "no" (`registry.negation_error`), stops the script there with
    that status, `failed_line` and `negated_error` set; a worker's run keeps bash's `!`.

    Never raises for bad command text: a syntax error is status 2 with fault "syntax". A
    limit (deadline `timeout` seconds for the whole line, fuel, memory, output size) ends
    the run with a nonzero status, a message naming it and `fault` set; so do the shell's own
    host memory (`wasi.Limits.host_memory`) and `quota`, the bytes every run sharing it may
    write to files in total. Raises
    SandboxError only when the workdir is unusable or the sandbox itself is broken.
    Safe to call from several threads at once.
    """
    from groundskeeper.sandbox.shell import run_cmdline

    return run_cmdline(
        cmdline,
        workdir=workdir,
        read_only=read_only,
        timeout=timeout,
        env=env,
        quota=quota,
        errexit=errexit,
        sentinel=sentinel,
    )


def interrupt_runs() -> None:
    """Stop every sandbox run of this process at once (fault "interrupted", status 130), and
    every run started after, until `allow_runs`: what SIGINT and SIGTERM do to a run."""
    from groundskeeper.sandbox.wasi import interrupt_runs as stop_all

    stop_all()


def allow_runs() -> None:
    """Let runs start again after `interrupt_runs` (a process that goes on after one run)."""
    from groundskeeper.sandbox.wasi import allow_runs as allow

    allow()
