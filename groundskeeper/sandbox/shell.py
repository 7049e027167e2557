"""The interpreter (in progress): runs a parsed command line against box.wasm."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from groundskeeper.sandbox.result import SandboxError, ShellResult


def run_cmdline(
    cmdline: str,
    *,
    workdir: str | Path,
    read_only: bool,
    timeout: float,
    env: Mapping[str, str] | None,
) -> ShellResult:
    raise SandboxError("the sandbox interpreter is not implemented yet")
