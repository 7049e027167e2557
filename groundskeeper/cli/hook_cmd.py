"""`groundskeeper hook AGENT`: an agent's "done" event in, that agent's own answer out.

The decision is `groundskeeper.agents.gate`'s; this module reads stdin, keeps the deadline
and makes sure every way it can fail is a block in the form the agent obeys: the agents let
a stop through on a hook that exits 1, crashes or times out.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from pathlib import Path
from typing import NoReturn

import click

from groundskeeper.cli.params import Seconds

#: The agents `hook` speaks for (`groundskeeper.agents.dialects.AGENTS`; kept here so that
#: `--help` needs no import of the package).
AGENT_NAMES = ("claude-code", "codex", "copilot", "cursor", "gemini")

#: What is left of the agent's own hook timeout for groundskeeper to answer in.
MARGIN = 0.8


_ANSWERED = threading.Lock()

#: Where the hook keeps the event's name once read, for `FailClosedCommand`'s answer.
EVENT_META = "groundskeeper.hook.event"


def _emit(status: int, stdout: str, stderr: str) -> NoReturn:
    """Answer once and leave at once: nothing at interpreter exit may change the status, and
    the deadline's answer and the decision's never both go out."""
    if not _ANSWERED.acquire(blocking=False):
        threading.Event().wait()  # the other answer is being given; it ends the process
    with contextlib.suppress(OSError, ValueError):
        if stdout:
            sys.stdout.write(stdout)
        if stderr:
            sys.stderr.write(stderr)
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(status)


def _event_name(data: bytes) -> str | None:
    """The event's name, read before anything can fail, to answer in that event's form."""
    import json

    try:
        raw = json.loads(data)
    except (ValueError, RecursionError):
        return None
    name = raw.get("hook_event_name") if isinstance(raw, dict) else None
    return name if isinstance(name, str) else None


class FailClosedCommand(click.Command):
    """A command whose every error after its options were read is the agent's block: a
    traceback's exit 1 would let the stop through."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except BaseException as exc:  # _emit leaves by os._exit: nothing normal lands here
            from groundskeeper.agents.dialects import Decision, dialect_for

            agent = ctx.params.get("agent", "claude-code")
            answer = dialect_for(str(agent)).answer(
                Decision("block", f"groundskeeper could not confirm this stop (error): {exc!r}"),
                ctx.meta.get(EVENT_META),
            )
            _emit(answer.status, answer.stdout, answer.stderr)


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
    type=click.IntRange(1, 1000),
    default=8,
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
    honours: exit 2 with the reason on stderr (Claude Code), a JSON block on stdout (Codex,
    Copilot), `decision: deny` (Gemini CLI), a `followup_message` (Cursor). Never
    `stop_hook_active`: --max-blocks bounds the loop.

    Set it up with `groundskeeper agent setup AGENT --plan PLAN` (docs/agents.md).
    """
    from groundskeeper.agents.dialects import Decision, dialect_for

    dialect = dialect_for(agent)
    seconds = budget if budget is not None else dialect.agent_timeout * MARGIN
    session = ""
    cwd: str | None = None
    event_name: str | None = None

    def fail(kind: str, message: str) -> NoReturn:
        from groundskeeper.agents.gate import count_failure

        starting = event_name in ("SessionStart", "sessionStart")
        try:  # a session start cannot be refused: only claimed stops count towards the bound
            count = 1 if starting else count_failure(plan, cwd, session)
        except Exception:
            count = 1
        text = f"groundskeeper could not confirm this stop ({kind}): {message}"
        if count >= max_blocks:
            text += (
                f"\n(refused {count} times for groundskeeper's own failure; the turn ends with"
                " nothing confirmed — fix groundskeeper's set-up and run again)"
            )
            answer = dialect.answer(Decision("stop", text), event_name)
        else:
            answer = dialect.answer(Decision("block", text), event_name)
        _emit(answer.status, answer.stdout, answer.stderr)

    def deadline() -> NoReturn:
        fail("timeout", f"the checks did not finish within the hook's budget of {seconds:g} s")

    timer = threading.Timer(seconds, deadline)
    timer.daemon = True
    timer.start()
    try:
        from groundskeeper.agents.gate import HookOptions, decide
        from groundskeeper.agents.seal import HookFailure

        data = sys.stdin.buffer.read()
        event_name = _event_name(data)
        click.get_current_context().meta[EVENT_META] = event_name
        event = dialect.read(data)
        session, cwd = event.session_id, event.cwd
        options = HookOptions(
            plan=plan,
            workdir=workdir,
            max_blocks=max_blocks,
            task=task_id,
            require_seal=require_seal,
        )
        if event.kind == "tool" and not record_tool:
            raise HookFailure("event", "a PostToolUse is only taken with --record-tool")
        decision = decide(event, options)
    except HookFailure as exc:
        timer.cancel()
        fail(exc.kind, str(exc))
    except BaseException as exc:  # fail closed: whatever breaks is a block, never exit 1
        timer.cancel()
        fail("error", f"{type(exc).__name__}: {exc}")
    timer.cancel()
    with contextlib.suppress(Exception):  # the row of failures of its own ends here
        from groundskeeper.agents.gate import count_failure

        count_failure(plan, cwd, session, reset=True)
    answer = dialect.answer(decision, event.name)
    _emit(answer.status, answer.stdout, answer.stderr)
