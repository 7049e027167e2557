"""`groundskeeper mcp`: the plan's read-only tools and `run_check` for an agent, over MCP."""

from __future__ import annotations

from pathlib import Path

import click

from groundskeeper.cli.output import fail_usage


@click.command("mcp")
@click.option(
    "--plan",
    type=click.Path(path_type=Path),
    help="The plan (default: plan.org, or the only *.org, in the current folder).",
)
@click.option(
    "--workdir",
    type=click.Path(path_type=Path),
    help="The folder the checks see (default: the plan's folder).",
)
def mcp(plan: Path | None, workdir: Path | None) -> None:
    """Serve the plan to an agent over MCP (stdio): list_tasks, get_task, run_check,
    lint_plan, verify_ledger.

    run_check re-runs a task's sealed check in the sandbox and seals the verdict (the answer
    carries its ledger sequence number); nothing here marks a task DONE — the hook
    (`groundskeeper hook AGENT`) decides that. Protected and hidden inputs are named, never
    shown. The answers are MCP's JSON-RPC on stdout (no --json).

    \b
    Claude Code (.mcp.json):
      {"mcpServers": {"groundskeeper": {"command": "groundskeeper",
                                        "args": ["mcp", "--plan", "plan.org"]}}}
    """
    from groundskeeper.agents.mcp_server import build_server
    from groundskeeper.agents.seal import HookFailure

    try:
        server = build_server(plan, workdir)
    except HookFailure as exc:
        fail_usage(str(exc))
    server.run("stdio")
