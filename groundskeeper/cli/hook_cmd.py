"""`groundskeeper hook AGENT` as a click command: its options, its `--help`, and the guard
that makes an error after the options are read the agent's block. The call itself is
`cli.hook_run`'s, which `python -m groundskeeper hook …` reaches without click.
"""

from __future__ import annotations

from pathlib import Path

import click

from groundskeeper.cli.hook_run import (
    AGENT_NAMES,
    DEFAULT_MAX_BLOCKS,
    MAX_BLOCKS_RANGE,
    HookArgs,
    answer,
    answer_error,
)
from groundskeeper.cli.params import Seconds


class FailClosedCommand(click.Command):
    """A command whose every error after its options were read is the agent's block: a
    traceback's exit 1 would let the stop through."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except BaseException as exc:  # the answer leaves by os._exit: nothing normal lands here
            answer_error(str(ctx.params.get("agent", "claude-code")), exc)


@click.command("hook", cls=FailClosedCommand)
@click.argument("agent", type=click.Choice(AGENT_NAMES))
@click.option(
    "--plan",
    type=click.Path(path_type=Path),
    help="The plan the session works on"
    " (default: plan.org, or the only *.org, in the session's directory).",
)
@click.option(
    "--workdir",
    type=click.Path(path_type=Path),
    help="The folder the checks see (default: the plan's folder).",
)
@click.option(
    "--max-blocks",
    type=click.IntRange(*MAX_BLOCKS_RANGE),
    default=DEFAULT_MAX_BLOCKS,
    show_default=True,
    help="Refuse a session's stops at most this many times in a row; then its failing tasks are"
    " sealed FAILED (breaker) and the user is told.",
)
@click.option(
    "--budget",
    type=Seconds(),
    default=None,
    help="Answer within SECONDS however long the checks take (default: 80% of the agent's own"
    " hook timeout: 480 s for Claude Code and Codex, 48 s for Gemini CLI, 24 s for Copilot"
    " and Cursor); past it the stop is blocked.",
)
@click.option(
    "--task",
    "task_id",
    default=None,
    help="Check only this task (Claude Code as groundskeeper's worker on one task).",
)
@click.option(
    "--event",
    default=None,
    help="The event this command line is configured for (`agent setup` writes one command"
    " line per event): the hook reads the event from it, not by guessing from the input, and"
    " blocks an input that names another.",
)
@click.option(
    "--require-seal",
    is_flag=True,
    help="The plan was sealed at set-up: a ledger without that seal blocks every stop.",
)
@click.option(
    "--record-tool",
    is_flag=True,
    help="For PostToolUse: seal the tool call as the worker's record (decides nothing).",
)
def hook(
    agent: str,
    plan: Path | None,
    workdir: Path | None,
    max_blocks: int,
    budget: float | None,
    task_id: str | None,
    require_seal: bool,
    record_tool: bool,
    event: str | None,
) -> None:
    """Answer AGENT's "done" event (on stdin): allow the stop only when every open task's check
    passes in the sandbox.

    \b
    Events: claude-code  Stop, SubagentStop, TaskCompleted, TeammateIdle,
                         SessionStart (seals the plan), ConfigChange (refused)
            codex        Stop, SubagentStop, SessionStart
            gemini       AfterAgent, SessionStart
            copilot      agentStop, subagentStop, sessionStart
            cursor       stop, subagentStop, sessionStart

    The claim, each check and the decision are sealed in the plan's ledger before the answer.
    A stop is blocked with the failing task, its check line and the reason; any failure of
    groundskeeper's own (no plan, a key it cannot use, a ledger that does not verify, a plan
    changed since the session started, the budget spent) blocks too, in the form the agent
    honours: for Claude Code a JSON `{"decision": "block", "reason": …}` on stdout with
    exit 0 (Stop, SubagentStop) or exit 2 with the reason on stderr (TaskCompleted,
    TeammateIdle, ConfigChange, which read only that); a JSON block on stdout (Codex, Copilot),
    `decision: deny` (Gemini CLI), a `followup_message` (Cursor). Never
    `stop_hook_active`: --max-blocks bounds the loop.

    Set it up with `groundskeeper agent setup AGENT --plan PLAN` (docs/agents.md).
    """
    answer(
        HookArgs(
            agent, plan, workdir, max_blocks, budget, task_id, require_seal, record_tool, event
        )
    )
