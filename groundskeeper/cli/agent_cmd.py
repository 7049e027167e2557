"""`groundskeeper agent`: put an agent's stops behind `groundskeeper hook`, seal the plan its
sessions are held to, and launch it with settings it cannot edit.

The set-up itself is `groundskeeper.agents.setup`'s; this module parses, narrates and exits.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from groundskeeper.cli.output import EXIT_FINDINGS, EXIT_OK, emit_json, fail_usage, narrate
from groundskeeper.errors import GroundskeeperError

if TYPE_CHECKING:
    from groundskeeper.agents.reseal import Change, Changes
    from groundskeeper.agents.snapshot import Snapshot

_Command = TypeVar("_Command", bound=Callable[..., Any])
_CHECKS_SEE = "The folder the checks see (default: the plan's folder)."


def _options(
    *,
    plan: str | None = None,
    workdir: str | None = None,
    max_blocks: str | None = None,
    as_json: bool = False,
) -> Callable[[_Command], _Command]:
    """The options the agent commands share, each with its help text where it is taken:
    `--plan PLAN` (required), `--workdir DIR`, `--max-blocks N` (1–1000, default 8) and
    `--json`, listed in that order."""
    chosen: list[Callable[[_Command], _Command]] = []
    if plan is not None:
        chosen.append(
            click.option(
                "--plan", "plan", required=True, type=click.Path(path_type=Path), help=plan
            )
        )
    if workdir is not None:
        chosen.append(click.option("--workdir", type=click.Path(path_type=Path), help=workdir))
    if max_blocks is not None:
        chosen.append(
            click.option(
                "--max-blocks",
                type=click.IntRange(1, 1000),
                default=8,
                show_default=True,
                help=max_blocks,
            )
        )
    if as_json:
        chosen.append(
            click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
        )

    def apply(command: _Command) -> _Command:
        for option in reversed(chosen):
            command = option(command)
        return command

    return apply


@click.group("agent")
def agent() -> None:
    """Gate an agent you already run (Claude Code, Codex, Gemini CLI, Copilot, Cursor): its
    "done" goes through `groundskeeper hook`, which allows a stop only on passing checks.

    \b
    Example (Claude Code):
      groundskeeper agent setup claude-code --plan plan.org
      groundskeeper agent run claude-code --plan plan.org -- -p "do the plan"
    """


_ACCEPT_HELP = (
    "Take this file as it is now although it is on a check's side (a test, a checker"
    " program or its module, a key or another file a check may read that no task asks to"
    " change, a protected or hidden input) and changed, was added or was removed since the"
    " last seal; repeat for each. Sealed in the ledger with its hashes before and after."
)
_ACCEPT_CHANGES_HELP = (
    "Take the workdir's files as they are now: every change on a check's side since the last"
    " seal (without it, or `--accept PATH` naming each, the seal is refused, exit 2, and each"
    " is listed). Sealed in the ledger with the hashes before and after."
)


def _accept_options(command: _Command) -> _Command:
    command = click.option("--accept-changes", is_flag=True, help=_ACCEPT_CHANGES_HELP)(command)
    return click.option(
        "--accept", "accept", multiple=True, metavar="PATH", type=str, help=_ACCEPT_HELP
    )(command)


@agent.command("seal")
@click.argument("plan", type=click.Path(path_type=Path))
@_options(workdir=_CHECKS_SEE, as_json=True)
@_accept_options
def seal(
    plan: Path,
    workdir: Path | None,
    as_json: bool,
    accept: tuple[str, ...],
    accept_changes: bool,
) -> None:
    """Seal PLAN as it is now: the plan, its checks and protected inputs that every agent
    session is held to. A session's stop is refused while any of them differs from the seal;
    only this command (the user's) accepts a change, for the sessions started after it.

    The workdir is compared with the snapshot the last seal took: a file on a check's side
    that changed, was added or was removed (a test, a checker program, a key a check reads)
    is taken only when you name it (`--accept PATH`, or `--accept-changes` for all), since a
    session may have rewritten it; otherwise the seal is refused (exit 2) and each is listed.
    Every other change (the work) is listed and taken."""
    from groundskeeper.agents.gate import seal_plan
    from groundskeeper.agents.seal import HookFailure
    from groundskeeper.record.keys import ensure_signing_key

    if not plan.is_file():
        fail_usage(f"{plan}: no such plan file; pass the plan the agent works on")
    plan = _normal(plan)
    workdir = _normal(workdir) if workdir is not None else None
    root = (workdir or plan.parent).resolve()
    try:
        _refuse_unfit(plan)
        _refuse_in_use(plan)
        ensure_signing_key()
        snapshot = _snapshot(plan, workdir)
        changes = _since_seal(plan, root, snapshot, [])
        taken = _taken(plan, "agent seal", root, changes, accept, accept_changes)
        sealed = seal_plan(
            plan, workdir, "agent seal", snapshot=snapshot, note=_accepted(taken, accept_changes)
        )
        unbacked = _unbacked_done(plan)
    except (HookFailure, GroundskeeperError) as exc:
        fail_usage(str(exc))
    _say_changes(changes)
    _warn_unbacked(plan, unbacked)
    _warn_unasked(plan, root)
    _warn_lint(plan)
    _note_snapshot(snapshot)
    _note_links_out(snapshot, root)
    if as_json:
        emit_json({"plan": str(plan), **sealed.to_json(), **_changes_json(changes)})
    else:
        narrate(
            f"sealed {plan}: {len(sealed.checks)} task(s), {len(sealed.protected)} protected"
            f" input(s) (plan sha256 {sealed.plan_sha256[:16]}…)"
        )
    raise SystemExit(EXIT_OK)


@agent.command("setup")
@click.argument(
    "agent_name",
    metavar="AGENT",
    type=click.Choice(("claude-code", "codex", "copilot", "cursor", "gemini")),
)
@_options(
    plan="The plan the agent works on.",
    workdir=_CHECKS_SEE,
    max_blocks="Refuse a session's stops at most this many times in a row.",
    as_json=True,
)
@_accept_options
def setup(
    agent_name: str,
    plan: Path,
    workdir: Path | None,
    max_blocks: int,
    as_json: bool,
    accept: tuple[str, ...],
    accept_changes: bool,
) -> None:
    """Wire AGENT's "done" event to `groundskeeper hook`, and seal the plan.

    \b
    claude-code  a settings file in the plan's control directory (hooks on SessionStart,
                 Stop, SubagentStop, TaskCompleted, ConfigChange; deny rules for the control
                 directory, $GROUNDSKEEPER_HOME, the plan, its protected and hidden inputs; the
                 block cap; Claude Code's sandbox where bubblewrap is installed), used by
                 `groundskeeper agent run claude-code --plan PLAN -- ARGS…`
    codex        .codex/hooks.json (trust it in codex: /hooks)
    gemini       .gemini/settings.json
    copilot      .github/hooks/groundskeeper.json
    cursor       .cursor/hooks.json

    The files written are sealed with the plan: while any differs, every stop is blocked.
    An agent's configuration file that exists is merged into (its other settings and hooks
    kept, a backup written beside it); one that does not parse is refused (exit 2).
    Set up again on a plan sealed before, the workdir is compared with the last seal as
    `agent seal` compares it (`--accept PATH`, `--accept-changes`).
    """
    from groundskeeper.agents.gate import seal_plan
    from groundskeeper.agents.seal import HookFailure, aliases_of_hidden, held_inputs
    from groundskeeper.agents.setup import write_setup
    from groundskeeper.plan.org import load_plan
    from groundskeeper.record.keys import ensure_signing_key

    if not plan.is_file():
        fail_usage(f"{plan}: no such plan file; pass the plan the agent works on")
    plan = _normal(plan)
    workdir = _normal(workdir) if workdir is not None else None
    root = (workdir or plan.parent).resolve()
    try:
        _refuse_unfit(plan)
        _refuse_in_use(plan)
        loaded = ensure_signing_key()
        if loaded.created:
            narrate(f"created a signing key: {loaded.private_path}")
        protected, hidden = held_inputs(load_plan(plan), root)
        # a link to a hidden input already in the workdir would block every stop, and the
        # agent would be told to remove the user's file: said now, to the user
        aliases = aliases_of_hidden(root, [str(h.relative_to(root)) for h in hidden])
        if aliases:
            fail_usage(
                "a hidden input is reachable by another name: "
                + "; ".join(aliases)
                + ". A check would follow it; remove it before the agent's session"
            )
        _set_up_cpython(plan)
        changes = _since_seal(plan, root, None, _configuration_paths(agent_name, plan, root))
        taken = _taken(plan, f"agent setup {agent_name}", root, changes, accept, accept_changes)
        done = write_setup(
            agent_name,
            plan,
            max_blocks=max_blocks,
            workdir=workdir,
            protected=protected,
            hidden=hidden,
        )
        snapshot = _snapshot(plan, workdir)
        sealed = seal_plan(
            plan,
            workdir,
            f"agent setup {agent_name}",
            guarded=list(done.files),
            snapshot=snapshot,
            note=_accepted(taken, accept_changes),
        )
        unbacked = _unbacked_done(plan)
    except (HookFailure, GroundskeeperError, ValueError, OSError) as exc:
        fail_usage(str(exc))
    _say_changes(changes)
    _warn_unbacked(plan, unbacked)
    _warn_unasked(plan, root)
    _warn_lint(plan)
    _note_snapshot(snapshot)
    _note_links_out(snapshot, root)
    if as_json:
        emit_json({**done.to_json(), "sealed": sealed.to_json(), **_changes_json(changes)})
    else:
        for path in done.files:
            narrate(f"wrote {path}")
        for line in done.merged:
            narrate(line)
        for note in done.notes:
            narrate(f"note: {note}")
        narrate(f"sealed {plan} ({len(sealed.checks)} task(s)); launch with:")
        click.echo(done.launch)
    raise SystemExit(EXIT_OK)


def _set_up_cpython(plan: Path) -> None:
    """CPython for the sandbox set up now (about a minute, once per installation), when a
    check of the plan names python and it is not: the hook's manifest then holds it as it
    is (`agents.interpreter`), and a hook never sets it up itself — a set-up made after
    `agent setup` is a change, which blocks every stop until the next `agent setup`. When it
    cannot be set up, a python3 in a hook's check fails closed, named."""
    from groundskeeper.plan.org import load_plan
    from groundskeeper.plan.spec import compile_plan
    from groundskeeper.sandbox.cpython import NotSetUp
    from groundskeeper.sandbox.cpython_setup import ensure

    tasks = compile_plan(load_plan(plan))
    if any(t.check is not None and "python" in t.check.text for t in tasks):
        with contextlib.suppress(NotSetUp):
            ensure(lambda line: narrate(line.rstrip("\n")))


def _refuse_in_use(plan: Path) -> None:
    """PlanInUse (naming the holder) when another run holds the plan, before set-up writes
    anything: the settings, the interpreter's manifest and the workdir snapshot it would
    write are sealed under the same lock, and a set-up refused the seal must leave none of
    them behind (a running session's hooks are held to the ones sealed). A run that takes
    the plan between this look and the seal still refuses the seal (the files then stay
    unsealed, and every hook made from them blocks until a seal is made)."""
    from groundskeeper.record.control import ControlDir, RunLock

    RunLock(ControlDir.for_plan(plan)).acquire().release()


def _configuration_paths(agent_name: str, plan: Path, root: Path) -> list[str]:
    """The workdir files `agent setup AGENT` writes (Claude Code's is in the control
    directory): sealed by their own hashes, not compared as the work."""
    from groundskeeper.agents.setup import configuration_path

    path = configuration_path(agent_name, plan, root)
    try:
        return [path.relative_to(root).as_posix()]
    except ValueError:
        return []


def _since_seal(plan: Path, root: Path, snapshot: Snapshot | None, skip: list[str]) -> Changes:
    """The workdir (`snapshot`; None: taken now) against the last seal's snapshot, each change
    read by the hook's rule (`agents.reseal`); nothing when the plan was never sealed."""
    from groundskeeper.agents.gate import open_plan_record, verified_steps
    from groundskeeper.agents.reseal import Changes, changes_since_seal
    from groundskeeper.agents.seal import LedgerView, fingerprint
    from groundskeeper.plan.org import load_plan

    control, key = open_plan_record(plan)
    sealed = LedgerView.read(verified_steps(control, plan, key), "").seal
    if sealed is None:
        return Changes(())
    now = snapshot if snapshot is not None else _snapshot(plan, root)
    fresh = fingerprint(load_plan(plan), root, (), sealed=sealed)
    skip = [*skip, *(_relative(Path(p), root) for p, _ in sealed.guarded), _relative(plan, root)]
    return changes_since_seal(plan, root, now, sealed, fresh, [s for s in skip if s])


def _relative(path: Path, root: Path) -> str:
    try:
        return path.absolute().relative_to(root).as_posix()
    except ValueError:
        return ""


def _taken(
    plan: Path,
    by: str,
    root: Path,
    changes: Changes,
    accept: tuple[str, ...],
    every: bool,
) -> list[Change]:
    """The changes on a check's side the user took (`--accept PATH`, `--accept-changes`);
    exit 2, each listed on stderr, while any is not taken (adversary-14 F10: a routine
    re-seal after a refused session would make a rewritten key the one held)."""
    held = changes.held()
    named = {_accept_name(word, root) for word in accept}
    known = {c.path for c in changes.changes}
    unknown = sorted(n for n in named if n not in known)
    if unknown:
        fail_usage(
            f"--accept {unknown[0]}: no such change since the last seal"
            + (f" (the changes on a check's side: {', '.join(c.path for c in held)})" if held
               else " (nothing on a check's side changed)")
        )  # fmt: skip
    refused = [c for c in held if not every and c.path not in named]
    if refused:
        if changes.unread is not None:
            click.echo(f"{plan}: the last seal's snapshot cannot be compared: {changes.unread}",
                       err=True)  # fmt: skip
        for change in refused:
            click.echo(
                f"{plan}: not taken: {change.said()}; restore it, or seal with `--accept"
                f" {change.path}` if it is right as it is",
                err=True,
            )
        fail_usage(
            f"{plan} is not sealed ({by}): {len(refused)} file(s) on a check's side differ from"
            " the last seal (above), which a session may have changed. Restore them, or name"
            " each with `--accept PATH` (or all with `--accept-changes`) if it is right as it is"
        )
    return [c for c in held if every or c.path in named]


def _accept_name(word: str, root: Path) -> str:
    """`--accept`'s PATH as the workdir-relative name the snapshot uses (as given, from the
    current directory; else as given, from the workdir)."""
    import os

    absolute = Path(os.path.abspath(word))
    for candidate in (absolute, absolute.parent.resolve() / absolute.name):
        try:
            return candidate.relative_to(root).as_posix()
        except ValueError:
            continue
    return Path(word).as_posix()


def _accepted(taken: list[Change], every: bool) -> dict[str, Any]:
    from groundskeeper.agents.reseal import accepted_body

    return accepted_body(taken, every)


#: Changes listed at most, each kind (the rest counted).
_LISTED = 20


def _say_changes(changes: Changes) -> None:
    """The changes since the last seal that this seal takes, said (stderr)."""
    for title, listed in (
        ("taken on a check's side (your --accept; sealed with its hashes)", changes.held()),
        ("changed since the last seal (the work, taken as it is)", changes.work()),
    ):
        if not listed:
            continue
        narrate(f"{title}:")
        for change in listed[:_LISTED]:
            narrate(f"  {change.said()}")
        if len(listed) > _LISTED:
            narrate(f"  … and {len(listed) - _LISTED} more")


def _changes_json(changes: Changes) -> dict[str, Any]:
    return {"changes": [c.to_json() for c in changes.changes]}


def _warn_lint(plan: Path) -> None:
    """Lint's warnings on the plan, said at set-up and seal as `groundskeeper lint` says them
    (a limit like T025's — code under test that switches pytest off — applies to a hook's
    checks too); the errors refuse the seal already (`_refuse_unfit`)."""
    from groundskeeper.plan.lint import validate
    from groundskeeper.plan.org import load_plan

    said = []
    for diagnostic in validate(load_plan(plan)):
        # T031 is said by `_warn_unasked`, read in the workdir the checks see
        if diagnostic.level == "warning" and diagnostic.code != "T031":
            click.echo(diagnostic.format(str(plan)), err=True)
            said.append(diagnostic.code)
    if "T025" in said:
        narrate(
            "note: T025's remedy, `:contract: pytest`, is confirmed only by `groundskeeper run`"
            " (a hook refuses it, H001): in an agent's session the limit it names stands"
        )


def _normal(path: Path) -> Path:
    """`path` absolute, with `..` and symbolic links resolved: the name an agent's own
    permission rules are matched against (Claude Code matches a file's resolved path)."""
    return path.resolve()


def _refuse_unfit(plan: Path) -> None:
    """Exit 2 with each reason `plan` cannot hold an agent's sessions (`session_refusals`),
    compiler-style on stderr: a plan that fails lint, or a task no hook could confirm."""
    from groundskeeper.agents.gate import session_refusals
    from groundskeeper.plan.org import load_plan

    refusals = session_refusals(load_plan(plan))
    if not refusals:
        return
    for diagnostic in refusals:
        click.echo(diagnostic.format(str(plan)), err=True)
    fail_usage(
        f"{plan} is not sealed for agents' sessions: {len(refusals)} error(s) above; fix the"
        " plan (`groundskeeper lint` shows them too) and run this again"
    )


def _snapshot(plan: Path, workdir: Path | None) -> Snapshot:
    """The workdir as it is now, for the rule on a check's inputs (`agents.snapshot`)."""
    from groundskeeper.acceptance.doctests import task_doctest_files
    from groundskeeper.agents.named import skipped_named
    from groundskeeper.agents.snapshot import take_snapshot
    from groundskeeper.plan.org import load_plan
    from groundskeeper.plan.spec import compile_plan

    root = workdir or plan.parent
    tasks = list(compile_plan(load_plan(plan)))
    # the paths the checks name in folders the snapshot skips (`agents.named`), and the
    # files whose doctest examples a check runs
    named = skipped_named(tasks, root.resolve())
    doctests = (f for t in tasks for f in task_doctest_files(t))
    return take_snapshot(root, named, doctests, tasks)


def _note_snapshot(snapshot: Snapshot) -> None:
    from groundskeeper.agents.snapshot import MAX_FILES

    if not snapshot.complete:
        narrate(
            f"note: the workdir holds more than {MAX_FILES} files: the snapshot a session's"
            " changes are read against holds the first of them only, and a check input past"
            " them is not held by the rule on a check's inputs"
        )


def _note_links_out(snapshot: Snapshot, root: Path) -> None:
    """Each symbolic link of the workdir that leads out of it, said at set-up (adv24 H3): the
    sandbox sees the workdir only, so a check that reads through one fails at every stop,
    and the agent is told to do work it has done."""
    out: list[str] = []
    for path, held in sorted(snapshot.files.items()):
        if not held.startswith("link:"):
            continue
        target = (root / path).parent / held.removeprefix("link:")
        if not os.path.realpath(target).startswith(str(root) + os.sep):
            out.append(f"`{path}` (to {held.removeprefix('link:')})")
    if out:
        shown = ", ".join(out[:5]) + (f" and {len(out) - 5} more" if len(out) > 5 else "")
        narrate(
            f"note: {shown}: a symbolic link out of the workdir, which the sandbox does not"
            " follow (it sees the workdir only): a check that reads through it fails at every"
            " stop. Copy what it points to into the workdir, then run this again"
        )


def _warn_unasked(plan: Path, root: Path) -> None:
    """Lint's T031, said at setup (adversary-12 F6): a check reads an existing file its task
    seems to be about but does not ask to change — every stop after the change would block."""
    from groundskeeper.plan.lint_properties import unasked_message, unasked_reads
    from groundskeeper.plan.org import load_plan
    from groundskeeper.plan.spec import compile_plan

    tasks = list(compile_plan(load_plan(plan)))
    for task, name, why in unasked_reads(tasks, root):
        line = task.heading.line
        narrate(f"{plan}:{line}: warning: {unasked_message(task, name, why)} [T031]")


def _warn_unbacked(plan: Path, unbacked: list[tuple[int, str]]) -> None:
    for line, title in unbacked:
        narrate(
            f"{plan}:{line}: warning: `{title}` is DONE in the plan, but the ledger holds no"
            " sealed DONE for it with this check: every stop judges it again (its check must"
            " pass), as a run re-verifies it"
        )


def _unbacked_done(plan: Path) -> list[tuple[int, str]]:
    """Each DONE headline the ledger does not back (line, title)."""
    from groundskeeper.agents.gate import backed_by, open_plan_record, verified_entries
    from groundskeeper.plan.org import load_plan
    from groundskeeper.plan.spec import compile_plan

    control, _ = open_plan_record(plan)
    backed = backed_by(verified_entries(control, plan))
    return [
        (t.heading.line, t.title)
        for t in compile_plan(load_plan(plan))
        if t.heading.keyword == "DONE" and not backed(t)
    ]


@agent.command("run", context_settings={"ignore_unknown_options": True})
@click.argument("agent_name", metavar="AGENT", type=click.Choice(("claude-code",)))
@_options(plan="The plan set up with `agent setup`.")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run(agent_name: str, plan: Path, args: tuple[str, ...]) -> None:
    """Launch AGENT with groundskeeper's settings and only them: `claude --settings FILE
    --setting-sources "" ARGS…` (a project's .claude/settings*.json, which the agent can
    edit, is not read). The claude binary is $GROUNDSKEEPER_CLAUDE, else `claude` on PATH.

    When the agent exits, the hook calls of the session it launched (`--session-id`, passed
    unless ARGS name a session) are read back from the signed ledger: unless its last Stop was
    allowed and every call was answered (a hook the agent's own processes killed lets the
    stop through), and nothing sealed the plan again or rewrote the ledger meanwhile, you are
    told on stderr and the exit status is 1. Then, whatever the recorded stops say, the
    plan is judged again here (its seal, then every open task's check, in the sandbox): a
    task that fails is named on stderr and the exit status is 1. A settings file that
    differs from the one sealed with the plan is not launched (exit 2).

    \b
    Example:
      groundskeeper agent run claude-code --plan plan.org -- -p "do the plan's tasks"
    """
    import signal
    import subprocess

    from groundskeeper.agents.gate import (
        ledger_lines,
        plan_changed_since,
        record_changed,
        refused_seal,
        seal_refusal,
        session_outcome,
    )
    from groundskeeper.agents.setup import SETTINGS_NAME, claude_code_command
    from groundskeeper.record.control import ControlDir

    plan = _normal(plan)
    settings = ControlDir.for_plan(plan).path / SETTINGS_NAME
    if not settings.is_file():
        fail_usage(
            f"{settings}: no settings yet; run `groundskeeper agent setup {agent_name}"
            f" --plan {plan}` first"
        )
    import uuid

    from groundskeeper.agents.gate import configuration_unsealed, recheck_plan
    from groundskeeper.agents.seal import HookFailure

    try:
        # the client reads this file at launch: one edited since the seal may run anything
        # (or nothing) as its hooks, whatever the hook would have said
        unsealed = configuration_unsealed(plan, settings) or refused_seal(plan)
        hooked = _workdir_of(settings)
    except (HookFailure, GroundskeeperError, OSError, ValueError) as exc:
        fail_usage(f"cannot confirm {settings} is the sealed one: {exc}")
    if unsealed is not None:
        fail_usage(f"not launched: {unsealed}")
    changed = _interpreter_changed(settings)
    if changed is not None:
        fail_usage(f"not launched: {changed}")
    given = list(args)
    session = _session_of(given)
    if session is None and not any(a in _RESUMES for a in given):
        # the session this launcher reads back is the one it launched, by its id
        session = str(uuid.uuid4())
        given = ["--session-id", session, *given]
    command = claude_code_command(plan, given)
    before = ledger_lines(plan)
    try:
        launched = plan.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail_usage(f"cannot read {plan}: {exc}")
    # the terminal is the agent's: Ctrl-C reaches it (same process group) and this launcher
    # waits on (a handler, not SIG_IGN, which the agent would inherit through exec)
    previous = signal.signal(signal.SIGINT, lambda number, frame: None)
    try:
        status = subprocess.call(command)
    except OSError as exc:
        fail_usage(
            f"cannot start {command[0]}: {exc.strerror}; install Claude Code or point"
            " $GROUNDSKEEPER_CLAUDE at its binary"
        )
    finally:
        signal.signal(signal.SIGINT, previous)
    told = [plan_changed_since(plan, launched), record_changed(plan, before)]
    refused = [line for line in told if line is not None]
    # a file planted in the hook's interpreter during the session is named by this launcher,
    # which was running before it was (the next launch, started in it, might not: F1b), and
    # no launch starts while it differs
    told.insert(0, _interpreter_changed(settings))
    if refused:
        # the seal in force may be the session's own: the refusal is sealed into whatever
        # ledger is there, and no session is launched on that seal until the user re-seals
        failed = seal_refusal(plan, session, refused)
        told.append(
            f"the refusal could not be sealed into the plan's ledger: {failed}"
            if failed is not None
            else "this refusal is sealed in the plan's ledger: no session is launched on the"
            f" plan's seal until you accept it again (`groundskeeper agent seal {plan}`)"
        )
    else:
        told.append(session_outcome(plan, before, session))
        # the launcher's own judgement, not the recorded stops': anyone who can run the
        # hook's command line can record an allowed Stop, and a hook killed early records
        # nothing
        try:
            told += [f"not done — {why}" for why in recheck_plan(plan, hooked, session=session)]
        except (HookFailure, GroundskeeperError, OSError) as exc:
            told.append(f"the plan could not be checked after the session: {exc}")
    for line in told:
        if line is not None:
            narrate(f"groundskeeper: {line}")
            status = status or EXIT_FINDINGS
    raise SystemExit(status)


def _interpreter_changed(settings: Path) -> str | None:
    """None when the interpreter the sealed settings' Stop hook starts is as `agent setup`
    found it (the hook's own check, `agents.interpreter.BOOTSTRAP`, run with `--verify`);
    else what changed."""
    import json

    from groundskeeper.agents.interpreter import verify_command

    try:
        document = json.loads(settings.read_text(encoding="utf-8"))
        command = str(document["hooks"]["Stop"][0]["hooks"][0]["command"])
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        return f"the hook's command line cannot be read from {settings}: {exc}"
    found = verify_command(command)
    return None if found is None else found.removeprefix("groundskeeper: ")


def _workdir_of(settings: Path) -> Path | None:
    """The `--workdir` the sealed settings' Stop hook names (None: the plan's folder)."""
    import json
    import shlex

    document = json.loads(settings.read_text(encoding="utf-8"))
    command = document["hooks"]["Stop"][0]["hooks"][0]["command"]
    words = shlex.split(command)
    if "--workdir" in words and words.index("--workdir") + 1 < len(words):
        return Path(words[words.index("--workdir") + 1])
    return None


#: claude's options that pick a session already begun (its id is then not this launcher's).
_RESUMES = ("--resume", "-r", "--continue", "-c", "--fork-session")


def _session_of(args: list[str]) -> str | None:
    """The session id claude's own arguments name (`--session-id ID`, `--resume ID`)."""
    for i, word in enumerate(args):
        for option in ("--session-id", "--resume", "-r"):
            if word.startswith(option + "="):
                return word.split("=", 1)[1] if "--fork-session" not in args else None
            if word == option and i + 1 < len(args) and not args[i + 1].startswith("-"):
                return args[i + 1] if "--fork-session" not in args else None
    return None


@agent.command("work", context_settings={"ignore_unknown_options": True})
@click.argument("agent_name", metavar="AGENT", type=click.Choice(("claude-code",)))
@_options(
    plan="The plan whose open tasks Claude Code works on, one session per task.",
    workdir="The folder the work and the checks are in (default: the plan's folder).",
    max_blocks="A task's stops refused at most this many times; then it is FAILED.",
    as_json=True,
)
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def work(
    agent_name: str,
    plan: Path,
    workdir: Path | None,
    max_blocks: int,
    as_json: bool,
    args: tuple[str, ...],
) -> None:
    """Claude Code as groundskeeper's worker: each open task of PLAN, in document order, is
    one headless session (`claude -p`, JSON out) whose Stop hook is that task's check and
    whose PostToolUse hook seals each tool call; afterwards the check runs again and decides
    DONE or FAILED, sealed and written into the headline. Its usage and cost are sealed as a
    `model-call`. ARGS go to claude (e.g. `--model sonnet --permission-mode acceptEdits`).
    The claude binary is $GROUNDSKEEPER_CLAUDE, else `claude` on PATH. Exit 0 when every
    task is DONE, 1 otherwise.

    \b
    Example:
      groundskeeper agent work claude-code --plan plan.org -- --permission-mode acceptEdits
    """
    import os

    from groundskeeper.agents.seal import HookFailure
    from groundskeeper.agents.worker import work_plan
    from groundskeeper.record.keys import ensure_signing_key

    if not plan.is_file():
        fail_usage(f"{plan}: no such plan file; pass the plan to work on")
    plan = _normal(plan)
    workdir = _normal(workdir) if workdir is not None else None
    binary = os.environ.get("GROUNDSKEEPER_CLAUDE", "claude")
    try:
        ensure_signing_key()
        outcomes = work_plan(plan, binary, list(args), max_blocks=max_blocks, workdir=workdir)
    except (HookFailure, GroundskeeperError, OSError) as exc:
        fail_usage(str(exc))
    if as_json:
        emit_json({"tasks": [o.to_json() for o in outcomes]})
    else:
        for outcome in outcomes:
            why = f" — {outcome.reason}" if outcome.reason else ""
            click.echo(f"{outcome.state} {outcome.task_id} (blocks {outcome.blocks}){why}")
    raise SystemExit(EXIT_OK if all(o.state == "DONE" for o in outcomes) else 1)
