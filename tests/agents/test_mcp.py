"""The MCP server through the official SDK's own client: read-only tools, and run_check that
re-runs the sealed check and seals its verdict (never marks DONE)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from groundskeeper.agents.mcp_server import build_server
from groundskeeper.cli import main
from groundskeeper.record.keys import create_signing_key
from tests.agents.gated import ledger_steps


def call(plan: Path, tool: str, **arguments: Any) -> Any:
    async def go() -> Any:
        async with Client(build_server(plan)) as client:
            result = await client.call_tool(tool, arguments)
            assert not result.is_error, result
            return result.structured_content

    return anyio.run(go)


def test_run_check_reruns_the_sealed_check_and_seals_it(work: Path) -> None:
    create_signing_key()
    plan = work / "plan.org"
    first = call(plan, "run_check", task_id="notes")
    assert (first["verdict"], first["code"]) == ("FAIL", "nonzero_status")
    (work / "NOTES.md").write_text("shipped\n")
    second = call(plan, "run_check", task_id="notes")
    assert second["verdict"] == "PASS" and second["seq"] > first["seq"]
    checks = [
        (b["task_id"], b["verdict"], b["phase"]) for s, b in ledger_steps(work) if s == "check"
    ]
    assert checks == [("notes", "FAIL", "mcp"), ("notes", "PASS", "mcp")]
    assert "* TODO Write the notes" in plan.read_text()  # nothing marked DONE


def test_run_check_refuses_a_check_changed_since_the_seal(work: Path) -> None:
    from click.testing import CliRunner

    create_signing_key()
    plan = work / "plan.org"
    assert CliRunner().invoke(main, ["agent", "seal", str(plan)]).exit_code == 0
    plan.write_text(plan.read_text().replace("grep -q shipped NOTES.md", "true"))
    answer = call(plan, "run_check", task_id="notes")
    assert answer["verdict"] == "FAIL" and answer["code"] == "plan_changed"


def test_the_read_only_tools(work: Path) -> None:
    plan = work / "plan.org"
    tasks = call(plan, "list_tasks")
    rows = tasks["result"] if isinstance(tasks, dict) and "result" in tasks else tasks
    assert [(t["task_id"], t["state"], t["open"]) for t in rows] == [
        ("notes", "TODO", True),
        ("count", "TODO", True),
    ]
    task = call(plan, "get_task", task_id="count")
    assert task["check"] == "grep -qx 1 COUNT" and len(task["check_sha256"]) == 64
    assert call(plan, "lint_plan")["ok"] is True
    assert call(plan, "verify_ledger")["ok"] is False  # no ledger yet: nothing to vouch for
    json.dumps(task)
