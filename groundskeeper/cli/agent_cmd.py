"""`groundskeeper agent`: put an agent's stops behind `groundskeeper hook`, seal the plan its
sessions are held to, and launch it with settings it cannot edit.

The set-up itself is `groundskeeper.agents.setup`'s; this module parses, narrates and exits.
"""

from __future__ import annotations

from pathlib import Path

import click

from groundskeeper.cli.output import EXIT_OK, emit_json, fail_usage, narrate
from groundskeeper.errors import GroundskeeperError


@click.group("agent")
def agent() -> None:
    """Gate an agent you already run (Claude Code, Codex, Gemini CLI, Copilot, Cursor): its
    "done" goes through `groundskeeper hook`, which allows a stop only on passing checks.

    \b
    Example (Claude Code):
      groundskeeper agent setup claude-code --plan plan.org
      groundskeeper agent run claude-code --plan plan.org -- -p "do the plan"
    """


@agent.command("seal")
@click.argument("plan", type=click.Path(path_type=Path))
@click.option("--workdir", type=click.Path(path_type=Path),
              help="The folder the checks see (default: the plan's folder).")  # fmt: skip
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
def seal(plan: Path, workdir: Path | None, as_json: bool) -> None:
    """Seal PLAN as it is now: the plan, its checks and protected inputs that every agent
    session is held to. A session's stop is refused while any of them differs from the seal;
    only this command (the user's) accepts a change."""
    from groundskeeper.agents.gate import seal_plan
    from groundskeeper.agents.seal import HookFailure
    from groundskeeper.record.keys import ensure_signing_key

    if not plan.is_file():
        fail_usage(f"{plan}: no such plan file; pass the plan the agent works on")
    try:
        ensure_signing_key()
        sealed = seal_plan(plan.absolute(), workdir, "agent seal")
    except (HookFailure, GroundskeeperError) as exc:
        fail_usage(str(exc))
    if as_json:
        emit_json({"plan": str(plan), **sealed.to_json()})
    else:
        narrate(
            f"sealed {plan}: {len(sealed.checks)} task(s), {len(sealed.protected)} protected"
            f" input(s) (plan sha256 {sealed.plan_sha256[:16]}…)"
        )
    raise SystemExit(EXIT_OK)
