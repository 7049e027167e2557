"""One writer per ledger (ledger/SPEC.md §5, §9): a run's lines follow its run-start with no
other run's between them, so every command that appends a run of its own to a plan's ledger —
`dock --plan`, `agent seal` and `agent setup`, a hook call, an MCP `run_check` — holds the
plan's run lock from its run-start to its run-end. While a `resume` runs they are refused
(exit 2 or a hook failure naming the holder) and the ledger verifies after the resume;
two short writers wait for each other."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from click.testing import CliRunner
from mcp import Client

from groundskeeper.agents import gate
from groundskeeper.agents.gate import HookRecord
from groundskeeper.agents.mcp_server import build_server
from groundskeeper.agents.seal import HookFailure
from groundskeeper.cli import main
from groundskeeper.record.control import ControlDir, RunLock
from groundskeeper.record.keys import load_signing_key
from tests.components import write_wasm
from tests.test_check_write import snapshot, start_resume, verified, wait_for_lock
from tests.test_cli_run import keywords, setup, steps, task

SLOW = (
    "workers:\n  slow:\n    - {tool: sh, input: {cmd: 'sleep 12'}}\n"
    "    - {tool: write_file, input: {path: s.txt, content: s}}\n    - say: DONE\n"
)


def mcp_run_check(plan: Path, task_id: str) -> tuple[bool, Any]:
    async def go() -> tuple[bool, Any]:
        async with Client(build_server(plan)) as client:
            result = await client.call_tool("run_check", {"task_id": task_id})
            text = " ".join(getattr(c, "text", "") for c in result.content)
            return result.is_error, text if result.is_error else result.structured_content

    return anyio.run(go)


def test_no_other_run_lands_inside_a_running_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gate, "HOOK_LOCK_WAIT", 0.5)
    plan, script = setup(tmp_path, task("Slow", "slow", "grep -q s s.txt"), SLOW)
    component = write_wasm("dock_all", tmp_path)
    holder = start_resume(plan, script)
    try:
        wait_for_lock(plan)
        before = snapshot(plan)
        in_use = f"is in use by another run (pid {holder.pid}, started "
        for argv in (
            ["dock", str(component), "--plan", str(plan)],
            ["agent", "seal", str(plan)],
            ["agent", "setup", "claude-code", "--plan", str(plan)],
        ):
            result = CliRunner().invoke(main, argv)
            assert result.exit_code == 2, (argv, result.output)
            assert in_use in result.stderr, (argv, result.stderr)
        refused, why = mcp_run_check(plan, "slow")
        assert refused and in_use in why, why
        with pytest.raises(HookFailure) as caught:  # what every hook call seals through
            HookRecord(ControlDir.for_plan(plan), load_signing_key().key, {"kind": "hook"})
        assert caught.value.kind == "plan-in-use" and in_use in str(caught.value)
        # nothing docked, no run appended, and `agent setup` wrote nothing (no settings, no
        # interpreter manifest, no workdir snapshot): it looks for the holder first
        assert snapshot(plan) == before
        assert not (ControlDir.for_plan(plan).components / "dock_all.wasm").exists()
    finally:
        assert holder.wait(timeout=90) == 0, holder.stderr.read() if holder.stderr else ""
    assert keywords(plan) == {"slow": "DONE"}
    assert len(steps(plan, "run-start")) == 1
    verified(plan)
    # the plan free again, each of them appends a whole run of its own and it verifies
    assert CliRunner().invoke(main, ["dock", str(component), "--plan", str(plan)]).exit_code == 0
    assert CliRunner().invoke(main, ["agent", "seal", str(plan)]).exit_code == 0
    refused, answer = mcp_run_check(plan, "slow")
    assert not refused and answer["verdict"] == "PASS"
    assert len(steps(plan, "run-start")) == 4
    verified(plan)


def test_a_short_writer_waits_for_another(tmp_path: Path) -> None:
    plan, _ = setup(tmp_path, task("Slow", "slow", "grep -q s s.txt"), SLOW)
    assert CliRunner().invoke(main, ["agent", "seal", str(plan)]).exit_code == 0
    control = ControlDir.for_plan(plan)
    other = RunLock(control).acquire()  # another hook call, sealing its run
    threading.Timer(0.5, other.release).start()
    started = time.monotonic()
    record = HookRecord(control, load_signing_key().key, {"kind": "hook"})
    assert time.monotonic() - started >= 0.4  # it waited for the other one
    assert RunLock.held(control)  # and holds the plan while its run is open
    record.seal("run-end", {"ok": True, "states": [], "tampers": 0})
    assert not RunLock.held(control)  # given back at its run-end
    verified(plan)
