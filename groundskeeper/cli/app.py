"""The `groundskeeper` click group: each command family lives in its own module and is
imported only when it is called, so `groundskeeper lint` does not pay for importing langgraph
or anthropic."""

from __future__ import annotations

import importlib
from typing import Any

import click

from groundskeeper import __version__

# command name -> "module:attribute"; modules are imported on first use.
COMMANDS: dict[str, str] = {
    "audit": "groundskeeper.cli.audit_cmd:audit",
    "lint": "groundskeeper.cli.lint_cmd:lint",
    "sh": "groundskeeper.cli.sh_cmd:sh",
    "conform": "groundskeeper.cli.conform_cmd:conform",
    "dock": "groundskeeper.cli.conform_cmd:dock",
    "engine": "groundskeeper.cli.conform_cmd:engine",
    "resume": "groundskeeper.cli.run_cmd:resume",
    "check": "groundskeeper.cli.run_cmd:check",
    "ledger": "groundskeeper.cli.ledger_cmd:ledger",
    "report": "groundskeeper.cli.report_cmd:report",
    "keygen": "groundskeeper.cli.ledger_cmd:keygen",
    "eval": "groundskeeper.cli.eval_cmd:eval_",
    "run": "groundskeeper.cli.goal_cmd:run",
    "approve": "groundskeeper.cli.approve_cmd:approve",
    "hook": "groundskeeper.cli.hook_cmd:hook",
    "agent": "groundskeeper.cli.agent_cmd:agent",
    "mcp": "groundskeeper.cli.mcp_cmd:mcp",
    "validate-script": "groundskeeper.cli.validate_script_cmd:validate_script",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        command: Any = getattr(importlib.import_module(module_name), attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="groundskeeper")
def main() -> None:
    """groundskeeper: a supervisor for LLM agents where DONE is a claim, not a fact.

    A task becomes DONE only when its acceptance check passes in a WebAssembly sandbox,
    and every step is sealed in a signed ledger you can verify offline.

    \b
    A tour, in the order a plan lives:
      groundskeeper run "GOAL" --model anthropic:MODEL
                                                   a goal in, a plan authored, checked, run
      groundskeeper lint plan.org                  rung 1: is the plan coherent?
      groundskeeper resume plan.org --model scripted:workers.yaml
                                                   run it: DONE only on a passing check
      groundskeeper check plan.org                 is every DONE still earned?
      groundskeeper ledger verify .                did anyone alter the signed record?
      groundskeeper report . -o review.html        the run on one page that re-verifies it
      groundskeeper sh -- 'grep -c x notes.md'     try a command in the sandbox
      groundskeeper conform component.wasm         rung 3: does a component fit its world?

    Every command takes --json. Exit codes: 0 ok, 1 findings or failures, 2 bad input.
    User state (signing key, trusted keys, caches) lives in $GROUNDSKEEPER_HOME
    (default ~/.config/groundskeeper).
    """
