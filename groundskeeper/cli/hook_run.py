"""One `groundskeeper hook AGENT` call: the event on stdin in, that agent's own answer out.

The decision is `groundskeeper.agents.gate`'s; this module reads stdin, keeps the deadline and
makes sure every way the call can fail is a block in the form the agent obeys: the agents let
a stop through on a hook that exits 1, crashes or times out. It imports no click: an agent
starts the hook at every stop, and `python -m groundskeeper hook …` (the command line `agent
setup` writes) comes here through `answer_from_argv` without the CLI's start-up;
`cli.hook_cmd` is the same call as a click command (`--help`, the reference).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from pathlib import Path
from typing import NoReturn

from groundskeeper.fastclass import fastclass

#: The agents `hook` speaks for (`groundskeeper.agents.dialects.AGENTS`; kept here so that
#: `--help` needs no import of the package).
AGENT_NAMES = ("claude-code", "codex", "copilot", "cursor", "gemini")

#: What is left of the agent's own hook timeout for groundskeeper to answer in.
MARGIN = 0.8

#: The hook's options, as `cli.hook_cmd` declares them to click.
MAX_BLOCKS_RANGE = (1, 1000)
DEFAULT_MAX_BLOCKS = 8
MAX_SECONDS = 24 * 3600.0

_ANSWERED = threading.Lock()

#: The event's name once read: a failure after it is answered in that event's form.
_EVENT: dict[str, str | None] = {"name": None}


@fastclass(frozen=True, slots=True)
class HookArgs:
    agent: str
    plan: Path | None = None
    workdir: Path | None = None
    max_blocks: int = DEFAULT_MAX_BLOCKS
    budget: float | None = None
    task_id: str | None = None
    require_seal: bool = False
    record_tool: bool = False
    #: the event the command line is configured for (`--event`)
    event: str | None = None


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


def answer_error(agent: str, exc: BaseException) -> NoReturn:
    """A failure outside the decision's own guard: the agent's block all the same, in the
    form of the event if it was read (a traceback's exit 1 would let the stop through)."""
    from groundskeeper.agents.dialects import Decision, dialect_for

    answer = dialect_for(agent if agent in AGENT_NAMES else "claude-code").answer(
        Decision("block", f"groundskeeper could not confirm this stop (error): {exc!r}"),
        _EVENT["name"],
    )
    _emit(answer.status, answer.stdout, answer.stderr)


def answer(args: HookArgs) -> NoReturn:
    """Read the event on stdin, decide, seal and answer; every failure is a block."""
    try:
        _answer(args)
    except BaseException as exc:  # _emit leaves by os._exit: nothing normal lands here
        answer_error(args.agent, exc)


def _answer(args: HookArgs) -> NoReturn:
    from groundskeeper.agents.dialects import Decision, dialect_for

    dialect = dialect_for(args.agent)
    seconds = args.budget if args.budget is not None else dialect.agent_timeout * MARGIN
    session = ""
    cwd: str | None = None
    event_name: str | None = None

    def fail(kind: str, message: str) -> NoReturn:
        starting = event_name in dialect.session_events
        try:  # a session start cannot be refused: only claimed stops count towards the bound
            from groundskeeper.agents.gate import count_failure  # (itself what failed?)

            count = 1 if starting else count_failure(args.plan, cwd, session)
        except Exception:
            count = 1
        text = f"groundskeeper could not confirm this stop ({kind}): {message}"
        if count >= args.max_blocks:
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
        event_name = _EVENT["name"] = args.event or _event_name(data)
        event = dialect.read(data, args.event)
        session, cwd = event.session_id, event.cwd
        options = HookOptions(
            plan=args.plan,
            workdir=args.workdir,
            max_blocks=args.max_blocks,
            task=args.task_id,
            require_seal=args.require_seal,
        )
        if event.kind == "tool" and not args.record_tool:
            raise HookFailure("event", "a PostToolUse is only taken with --record-tool")
        decision = decide(event, options)
    except BaseException as exc:  # fail closed: whatever breaks is a block, never exit 1
        timer.cancel()
        # HookFailure is imported inside the guard: a module that fails to import is named
        # as it failed, not as a name the handler could not read
        seal = sys.modules.get("groundskeeper.agents.seal")
        known = getattr(seal, "HookFailure", None)
        if known is not None and isinstance(exc, known):
            fail(exc.kind, str(exc))
        fail("error", f"{type(exc).__name__}: {exc}")
    timer.cancel()
    with contextlib.suppress(Exception):  # the row of failures of its own ends here
        from groundskeeper.agents.gate import count_failure

        count_failure(args.plan, cwd, session, reset=True)
    answer = dialect.answer(decision, event.name)
    _emit(answer.status, answer.stdout, answer.stderr)


# -- the command line without click -------------------------------------------------------------

_VALUED = {"--plan", "--workdir", "--max-blocks", "--budget", "--task", "--event"}
_FLAGS = {"--require-seal", "--record-tool"}


def parse_argv(argv: list[str]) -> HookArgs | None:
    """`hook AGENT [OPTIONS]` as click would read it, or None for anything this reader does
    not take whole (help, an unknown option, a bad value): click then reads it and says why."""
    if not argv or argv[0] != "hook":
        return None
    agent: str | None = None
    values: dict[str, str] = {}
    flags: set[str] = set()
    words = iter(argv[1:])
    for word in words:
        name, eq, inline = word.partition("=")
        if word == "--" or word in ("-h", "--help"):
            return None
        if name in _VALUED:
            value = inline if eq else next(words, None)
            if value is None:
                return None
            values[name] = value
        elif word in _FLAGS:
            flags.add(word)
        elif word.startswith("-") or agent is not None:
            return None
        else:
            agent = word
    if agent not in AGENT_NAMES:
        return None
    try:
        max_blocks = int(values.get("--max-blocks", DEFAULT_MAX_BLOCKS))
        budget = float(values["--budget"]) if "--budget" in values else None
    except ValueError:
        return None
    low, high = MAX_BLOCKS_RANGE
    if not low <= max_blocks <= high:
        return None
    if budget is not None and not 0.0 < budget <= MAX_SECONDS:  # NaN fails this too
        return None
    return HookArgs(
        agent=agent,
        plan=Path(values["--plan"]) if "--plan" in values else None,
        workdir=Path(values["--workdir"]) if "--workdir" in values else None,
        max_blocks=max_blocks,
        budget=budget,
        task_id=values.get("--task"),
        require_seal="--require-seal" in flags,
        record_tool="--record-tool" in flags,
        event=values.get("--event"),
    )


def answer_from_argv(argv: list[str]) -> bool:
    """Answer a `hook …` command line without the CLI's start-up; False (nothing done) for
    any other command line, or one to leave to click."""
    args = parse_argv(argv)
    if args is None:
        return False
    answer(args)
