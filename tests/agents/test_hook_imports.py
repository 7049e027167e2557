"""What a hook call imports: only what a Stop on its plan can need. An agent starts the hook
at every stop, so each module it does not need is start-up it pays for nothing
(`benchmarks/hook_overhead.py`); these are the ones a hook call must never import again."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.agents.gated import do_the_work, make_done_work, make_work, set_up_stop_hook, stop_event

#: Never on a hook call: the CLI's start-up, the supervisor and its models, the resume's
#: record index, tempfile (and the archive modules shutil brings), the key serializers, the
#: reading of task texts (~30 patterns compiled: only when a check's input changed). (The
#: record reader, `record.backing`, it does need: which DONE headlines the ledger backs.)
NEVER = (
    "click",
    "groundskeeper.supervisor",
    "groundskeeper.models",
    "langgraph",
    "langchain_core",
    "anthropic",
    "mcp",
    "groundskeeper.record.record_index",
    "groundskeeper.plan.edit",
    "tempfile",
    "shutil",
    "bz2",
    "lzma",
    "pathspec",
    "cryptography.hazmat.primitives.serialization",
    "difflib",
    "doctest",  # with pdb and unittest, ~18 ms: only for a doctest check's examples
    "pdb",
    "unittest",
    "groundskeeper.plan.asking",
    "groundskeeper.plan.expected",
)
#: Not when no check is to run: the sandbox; nor dataclasses (with the inspect, ast, dis and
#: tokenize it imports, ~20 ms: `fastclass` makes the records without it).
NO_CHECK_NEVER = (
    *NEVER,
    "wasmtime",
    "groundskeeper.sandbox.shell",
    "groundskeeper.sandbox.wasi",
    "dataclasses",
    "inspect",
    "ast",
    "dis",
    "tokenize",
)


def imported_by_a_stop(work: Path) -> set[str]:
    """Every module the Stop hook's command line, as `agent setup` wrote it, imports for a
    Stop (read from `-X importtime`: the hook leaves by `os._exit`, so no exit hook runs)."""
    env = {**os.environ}
    hook, assigned = set_up_stop_hook(work, env)
    proc = subprocess.run(
        [hook[0], "-X", "importtime", *hook[1:]],
        input=json.dumps(stop_event(work)).encode(),
        capture_output=True,
        env={**env, **assigned},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr.decode()[-2000:]
    assert proc.stdout == b"", proc.stdout  # allowed
    return {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.decode().splitlines()
        if line.startswith("import time:") and "|" in line
    }


@pytest.mark.parametrize("state", ["DONE", "TODO"])
def test_a_stop_imports_nothing_it_cannot_need(tmp_path: Path, state: str) -> None:
    from groundskeeper.record.keys import create_signing_key

    create_signing_key()
    if state == "DONE":  # backed by the ledger: a DONE headline alone is judged again
        work = make_done_work(tmp_path / "work", dict(os.environ))
    else:
        work = make_work(tmp_path / "work", state)
        do_the_work(work)
    modules = imported_by_a_stop(work)
    assert "groundskeeper.agents.gate" in modules  # the decision was made in this process
    never = NO_CHECK_NEVER if state == "DONE" else NEVER
    found = sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in never))
    assert found == [], found
    assert ("wasmtime" in modules) == (state == "TODO")


#: Nor, since they are loaded only where used: logging (a module logs through
#: `groundskeeper.logs.Logger`), secrets and its random (tokens come from os.urandom),
#: subprocess (git runs only when a snapshot is taken) and lint's diagnostics.
LAZY = ("logging", "secrets", "random", "subprocess", "groundskeeper.diagnostics")


@pytest.mark.parametrize("state", ["DONE", "TODO"])
def test_a_stop_loads_no_logging_secrets_subprocess_or_diagnostics(
    tmp_path: Path, state: str
) -> None:
    from groundskeeper.record.keys import create_signing_key

    create_signing_key()
    if state == "DONE":
        work = make_done_work(tmp_path / "work", dict(os.environ))
    else:
        work = make_work(tmp_path / "work", state)
        do_the_work(work)
    modules = imported_by_a_stop(work)
    assert "groundskeeper.agents.gate" in modules
    assert ("wasmtime" in modules) == (state == "TODO")  # the checks ran in the sandbox
    assert sorted(m for m in modules if m in LAZY) == []
