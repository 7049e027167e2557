"""The decision behind `groundskeeper hook AGENT`: may this agent stop?

It owns one hook call from event to sealed decision: find the plan, refuse a ledger or key
it cannot trust, compare the plan with the one sealed at session start, run the open tasks'
checks in the sandbox exactly as `groundskeeper check` does (`acceptance.check`), count the
session's blocks, and seal the claim, each check and the decision before answering. Anything
it cannot confirm raises `HookFailure`, which the caller turns into a block. It does not
speak any agent's dialect (`agents.dialects`) and never prints.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundskeeper import __version__, collector
from groundskeeper.acceptance.check import (
    DEFAULT_CHECK_TIMEOUT,
    CheckResult,
    SealedCheck,
    Shell,
    check_feedback,
    run_check,
    sandbox_shell,
    sha256_text,
)
from groundskeeper.agents.dialects import Decision, HookEvent
from groundskeeper.agents.seal import (
    ANCHOR_DIR,
    Fingerprint,
    HookFailure,
    LedgerView,
    aliases_of_hidden,
    check_anchor,
    fingerprint,
    input_identities,
    late_seals,
    new_hook_run_id,
    refusals_in_force,
    write_anchor,
)
from groundskeeper.errors import GroundskeeperError
from groundskeeper.fastclass import fastclass, field, replace
from groundskeeper.logs import Logger
from groundskeeper.plan.org import VERDICT_STATES, Heading, Plan, load_plan
from groundskeeper.plan.spec import PlanSpec, TaskSpec, compile_plan
from groundskeeper.record.control import CONTROL_ROOT, ControlDir, RunLock
from groundskeeper.record.keys import (
    SigningKey,
    groundskeeper_home,
    load_signing_key,
    trusted_keys,
)
from groundskeeper.record.ledger import Ledger, excerpt, known_lines
from groundskeeper.record.verified_prefix import verify_with_prefix

if TYPE_CHECKING:
    from groundskeeper.agents.snapshot import Snapshot
    from groundskeeper.diagnostics import Diagnostic
    from groundskeeper.record.backing import Record

__all__ = [
    "DEFAULT_MAX_BLOCKS",
    "HookOptions",
    "HookRecord",
    "backed_by",
    "beyond_check",
    "check_body",
    "configuration_unsealed",
    "decide",
    "find_plan",
    "hides_inputs",
    "ledger_lines",
    "open_plan_record",
    "open_tasks",
    "plan_changed_since",
    "recheck_plan",
    "record_changed",
    "refused_seal",
    "seal_fingerprint",
    "seal_plan",
    "seal_refusal",
    "session_outcome",
    "session_refusals",
    "verified_entries",
    "verified_steps",
]

log = Logger(__name__)

#: How long a hook (or an MCP check) waits for another short writer of the plan's ledger —
#: a concurrent hook call, a dock — before it refuses: a `resume` holds the plan for minutes.
HOOK_LOCK_WAIT = 10.0

#: Claude Code's own cap; a model that calls a tool between blocks is never stopped by it.
DEFAULT_MAX_BLOCKS = 8

#: Where failures of groundskeeper's own are counted when nothing can be sealed.
FAILURES_FILE = "hook-failures.json"


@fastclass(frozen=True, slots=True)
class HookOptions:
    plan: Path | None = None
    workdir: Path | None = None
    max_blocks: int = DEFAULT_MAX_BLOCKS
    check_timeout: float = DEFAULT_CHECK_TIMEOUT
    shell: Shell | None = field(default=None, repr=False)
    #: the one task this session works on (Claude Code as groundskeeper's worker)
    task: str | None = None
    #: set-up sealed the plan: a ledger without a seal was deleted or replaced
    require_seal: bool = False


def find_plan(given: Path | None, cwd: str | None) -> Path:
    """The plan a hook gates: the one named on its command line, else the single plan in the
    session's directory (`plan.org`, else its only `*.org`)."""
    if given is not None:
        if not given.is_file():
            raise HookFailure("no-plan", f"the plan {given} named by the hook is not a file")
        return given
    where = Path(cwd) if cwd else Path.cwd()
    if (where / "plan.org").is_file():
        return where / "plan.org"
    found = sorted(p for p in where.glob("*.org") if p.is_file())
    if len(found) == 1:
        return found[0]
    what = "no plan" if not found else f"{len(found)} plans ({', '.join(p.name for p in found)})"
    raise HookFailure(
        "no-plan",
        f"{what} in {where}: name the plan in the hook's command (`groundskeeper hook AGENT"
        " --plan PLAN`, or `groundskeeper agent setup AGENT --plan PLAN`)",
    )


class HookRecord:
    """One hook call's (or MCP tool call's) run in the plan's ledger."""

    def __init__(self, control: ControlDir, key: SigningKey, first: Mapping[str, Any]) -> None:
        self.run_id = new_hook_run_id()
        # one writer per ledger: a run's lines follow its run-start with no other run's
        # between them (ledger/SPEC.md §5, §9), so this run holds the plan's run lock from its
        # run-start to its run-end — waiting out another hook's, refused by a `resume`'s
        try:
            self._lock: RunLock | None = RunLock(control).acquire(wait=HOOK_LOCK_WAIT)
        except GroundskeeperError as exc:
            raise HookFailure(
                "plan-in-use", f"cannot seal this call in the plan's ledger: {exc}"
            ) from exc
        self.ledger = Ledger(control.path, key, self.run_id)
        self.seal("run-start", first)

    def release(self) -> None:
        """Give the plan back (at the run's end, or when a step could not be sealed)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def seal(self, step: str, body: Mapping[str, Any]) -> int:
        """Seal one step; its sequence number in the ledger."""
        try:
            seq = self.ledger.record(step, {"run_id": self.run_id, **body}).seq
        except (GroundskeeperError, OSError) as exc:
            self.release()
            raise HookFailure("ledger", f"cannot seal the `{step}` step: {exc}") from exc
        if step == "run-end":
            self.release()
        return seq

    def stage(self, step: str, body: Mapping[str, Any]) -> None:
        """Queue one step for `commit` (one write and one sync for all of a call's steps:
        the hook answers only after its commit)."""
        try:
            self.ledger.stage(step, {"run_id": self.run_id, **body})
        except GroundskeeperError as exc:
            self.release()
            raise HookFailure("ledger", f"cannot seal the `{step}` step: {exc}") from exc

    def commit(self) -> None:
        """Make every staged step durable; HookFailure when they cannot be."""
        try:
            self.ledger.commit()
        except (GroundskeeperError, OSError) as exc:
            raise HookFailure("ledger", f"cannot seal this call's steps: {exc}") from exc
        finally:
            self.release()  # every commit of a hook run ends it (its run-end is staged last)


def _versions() -> dict[str, str]:
    return {"groundskeeper": __version__}


def _load_key() -> SigningKey:
    try:
        return load_signing_key().key
    except GroundskeeperError as exc:
        raise HookFailure("key", f"groundskeeper cannot sign its decision: {exc}") from exc
    except Exception as exc:  # an unreadable file is as unusable as a malformed one
        raise HookFailure("key", f"groundskeeper cannot sign its decision: {exc}") from exc


def verified_steps(
    control: ControlDir, plan_path: Path, key: SigningKey | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """The ledger's steps, every line of it verified (`verified_entries`), without their runs."""
    return [(step, body) for _, step, body in verified_entries(control, plan_path, key)]


def verified_entries(
    control: ControlDir, plan_path: Path, key: SigningKey | None = None
) -> list[tuple[str, str, dict[str, Any]]]:
    """The plan's ledger, every line of it verified: each step as (its run, its name, its
    body); read once, so the steps are the bytes that verified. With the signing `key`, the
    lines a call before verified are taken from the verified prefix it left
    (`record.verified_prefix`: bound to those bytes by hash, signed with `key`) and only the
    lines after them are checked."""
    check_anchor(plan_path, control.path)
    if not control.ledger.exists():
        return []
    try:
        report, data, after = verify_with_prefix(control.ledger, trusted_keys(), key)
    except GroundskeeperError as exc:
        raise HookFailure("ledger", f"the plan's ledger cannot be read: {exc}") from exc
    # a checkpoint behind verified lines is a writer stopped between its append and its
    # checkpoint (a hook killed there): every line still verifies, as `resume` accepts it
    if not report.ok and not all(f.code == "checkpoint-stale" for f in report.findings):
        first = report.findings[0]
        raise HookFailure(
            "ledger",
            f"the plan's ledger {control.ledger} does not verify (line {first.line}:"
            f" {first.code}: {first.reason}); run `groundskeeper ledger verify"
            f" {control.plan_path}`",
        )
    lines = data.split(b"\n")[: report.lines]
    if after.tree.size == report.lines == len(lines):
        # the call's own steps are appended to these very lines: the writer takes their
        # Merkle tree from this verification, not from hashing every line again
        known_lines(control.ledger, data[: data.rfind(b"\n") + 1], after.tree)
    # one parse of them all: a verified line is one JSON object
    objs = json.loads(b"[" + b",".join(lines) + b"]")
    return [
        (str(obj.get("run", "")), str(obj["step"]), obj["body"])
        for obj in objs
        if isinstance(obj.get("body"), dict)
    ]


def open_plan_record(plan_path: Path) -> tuple[ControlDir, SigningKey]:
    try:
        control = ControlDir.for_plan(plan_path).ensure()
    except GroundskeeperError as exc:
        raise HookFailure("control", str(exc)) from exc
    return control, _load_key()


def seal_plan(
    plan_path: Path,
    workdir: Path | None,
    by: str,
    session: str = "",
    guarded: list[Path] | None = None,
    snapshot: Snapshot | None = None,
    note: Mapping[str, Any] | None = None,
) -> Fingerprint:
    """Seal the plan as it is now as the one sessions are held to (a `hook-seal` run), with
    the agent configuration files the seal before guarded and those in `guarded`, and the
    workdir `snapshot` the user's seal took (written into the control directory; None: the
    seal before's is kept). `note`: more for the seal's line (the changes on a check's side
    the user took: `agents.reseal.accepted_body`)."""
    control, key = open_plan_record(plan_path)
    view = LedgerView.read(verified_steps(control, plan_path, key), session)
    plan = _load(plan_path)
    root = (workdir or plan_path.parent).resolve()
    # every agent configuration set up on the plan stays sealed, not only the last one
    paths = [p for p, _ in view.seal.guarded] if view.seal is not None else []
    paths += [str(p.absolute()) for p in guarded or []]
    now = fingerprint(plan, root, paths)
    if snapshot is not None:
        from groundskeeper.agents.snapshot import write_snapshot

        now = replace(now, snapshot=write_snapshot(control.path, snapshot))
    elif view.seal is not None:
        now = replace(now, snapshot=view.seal.snapshot)
    _record_seal(plan_path, control, key, now, by, session, note)
    return now


def seal_fingerprint(plan_path: Path, now: Fingerprint, by: str, session: str = "") -> None:
    """Seal `now` (groundskeeper's own edit of a plan it verified) as the plan sessions are
    held to, without reading the disk again."""
    control, key = open_plan_record(plan_path)
    verified_steps(control, plan_path, key)
    _record_seal(plan_path, control, key, now, by, session)


def _record_seal(
    plan_path: Path,
    control: ControlDir,
    key: SigningKey,
    now: Fingerprint,
    by: str,
    session: str,
    note: Mapping[str, Any] | None = None,
) -> None:
    record = HookRecord(
        control,
        key,
        {
            "kind": "hook-seal",
            "plan": str(plan_path),
            "by": by,
            "session_id": session,
            **now.to_json(),
            "versions": _versions(),
            **(note or {}),
        },
    )
    record.stage("run-end", {"ok": True, "states": [], "tampers": 0})
    record.commit()
    write_anchor(plan_path, control.path)


def _load(plan_path: Path) -> Plan:
    try:
        return load_plan(plan_path)
    except GroundskeeperError as exc:
        raise HookFailure("plan", f"the plan cannot be read: {exc}") from exc


def decide(event: HookEvent, options: HookOptions) -> Decision:
    """The answer to one hook event, sealed before it is returned."""
    plan_path = find_plan(options.plan, event.cwd).absolute()
    if event.kind == "config-change":
        return Decision(
            "block",
            "groundskeeper fixed this session's settings when it started (`groundskeeper agent"
            " setup`); a change to them is refused. Ask the user to change them outside the"
            " session.",
        )
    if event.kind == "session-start" and not event.session_id:
        # a start that names no session (Copilot's documented `sessionStart` input) claims
        # nothing and runs no check: recorded as a start of no session, never judged
        control, key = open_plan_record(plan_path)
        verified_entries(control, plan_path, key)
        _record_session_start(control, key, event, plan_path, sha256_text(_load(plan_path).text))
        return Decision("allow", "")
    if not event.session_id:
        # a client always names its session; a call naming none is no session's, and would
        # otherwise be judged as a session of its own (with no start to hold it to)
        raise HookFailure(
            "session",
            f"the {event.name} event names no session (`session_id`): groundskeeper cannot"
            " tell which session it belongs to, so nothing of it is confirmed",
        )
    if options.task is not None and event.kind == "stop":
        event = replace(event, subject=options.task)
    control, key = open_plan_record(plan_path)
    if event.kind == "tool":
        return _record_tool(event, plan_path, control, key, options)
    entries = verified_entries(control, plan_path, key)
    view = LedgerView.read([(step, body) for _, step, body in entries], event.session_id)
    if view.seal is None and options.require_seal:
        # `agent setup` sealed the plan before the session: were the ledger and its anchor
        # both removed, a first call would otherwise seal whatever the plan says now
        raise HookFailure(
            "ledger",
            f"the plan's ledger {control.ledger} holds no seal, but `agent setup` sealed the"
            " plan: the ledger was deleted or replaced. Inspect it; `groundskeeper agent setup`"
            " seals the plan again",
        )
    plan = _load(plan_path)
    root = (options.workdir or plan_path.parent).resolve()
    guarded = [p for p, _ in view.seal.guarded] if view.seal else []
    # the inputs as they stand before they are hashed, read again after the checks: a process
    # of the agent's may swap an input in for the checks and back before the next stop
    inputs = [p for p, _ in view.seal.protected + view.seal.hidden] if view.seal else []
    before = input_identities(root, inputs)
    now = fingerprint(plan, root, guarded, view.seal)
    if view.seal is not None:
        now = replace(now, snapshot=view.seal.snapshot)  # the user's, carried by every seal
    if view.seal is None:
        by = "session-start" if event.kind == "session-start" else "first hook call"
        seal_plan(plan_path, options.workdir, by, event.session_id)
        view = LedgerView(now, by, view.blocks, started=True)
    if event.kind == "session-start":
        if not view.started:
            _record_session_start(control, key, event, plan_path, now.plan_sha256)
        return Decision("allow", "")
    changes = now.changes_from(view.seal) if view.seal is not None else []
    if view.refused:
        # the seal in force may be the refused session's own: held until the user re-seals
        changes.insert(0, _REFUSED + "; ".join(view.refused))
    if view.late:
        # whatever re-sealed the plan ran while the session did (the agent can run
        # `agent seal` or `agent setup` with the home it reads in its own environment): the
        # session stays held to the plan sealed when it started
        changes.insert(
            0,
            "the plan was sealed again while this session ran, by "
            + ", ".join(view.late)
            + "; a seal made during a session does not apply to it",
        )
    held = _read_record(entries)
    tasks, note = _tasks_for(plan, event, _backed(held))
    # a Stop claims the whole plan: every DONE's work too, which the session may have undone
    again = _swept(plan, tasks) if tasks is not None and event.subject is None else []
    scope = "plan" if event.subject is None else "task" if tasks is not None else "none"
    record = HookRecord(
        control,
        key,
        {
            "kind": "hook",
            "agent": event.agent,
            "event": event.name,
            "session_id": event.session_id,
            "plan": str(plan_path),
            "plan_sha256": now.plan_sha256,
            "checks": [{"task_id": t, "check_sha256": s} for t, s in now.checks],
            "workdir": str(root),
            "max_blocks": options.max_blocks,
            "versions": _versions(),
        },
    )
    claim_body = {
        "task_id": event.subject if tasks is not None else None,
        "subject": event.subject,
        "attempt": view.blocks + 1,
        "claim_sha256": sha256_text(event.claim, keep_surrogates=True),
        "excerpt": excerpt(event.claim),
        "evidence_json": None,
        "evidence_sha256": None,
    }
    record.stage("claim", claim_body)
    if changes:
        reason = (
            "the plan changed since the session started: " + "; ".join(changes) + f" ({plan_path})."
            " Put the plan, its checks and protected inputs back as they were: only the user"
            " re-seals a plan (`groundskeeper agent seal`), between sessions."
        )
        return _finish(
            record, event, view, options, Decision("block", reason), [], plan_path, now, scope
        )
    aliases = aliases_of_hidden(root, [p for p, _ in now.hidden])
    if aliases:
        reason = (
            "groundskeeper: not done — a hidden input is reachable by another name: "
            + "; ".join(aliases)
            + ". A check would follow it and compare the held-out file with itself. Remove"
            " it and do the work."
        )
        return _finish(
            record, event, view, options, Decision("block", reason), [], plan_path, now, scope
        )
    if tasks is None:
        return _finish(
            record, event, view, options, Decision("allow", note), [], plan_path, now, scope
        )
    failures: list[tuple[TaskSpec, str]] = []
    shell = _Sandbox(options.shell)  # the sandbox loads only when a check is to run
    withhold = hides_inputs(plan)
    rule = _SessionInputs(plan, root, control, now.snapshot)
    ran: dict[str, CheckResult] = {}
    for task in tasks:
        why = _judge_task(
            task, root, shell(), options.check_timeout, record, view.blocks + 1, withhold,
            rule=rule, ran=ran,
        )  # fmt: skip
        if why is not None:
            failures.append((task, why))
    undone = _judge_again(
        again, root, shell, options.check_timeout, record, view.blocks + 1, withhold, held,
        rule=rule, ran=ran,
    )  # fmt: skip
    failures += undone
    after = input_identities(root, inputs)
    moved = sorted(n for n in before.keys() | after.keys() if before.get(n) != after.get(n))
    moved += aliases_of_hidden(root, [p for p, _ in now.hidden]) if now.hidden else []
    if moved:
        reason = (
            "groundskeeper: not done — the plan's inputs changed while the checks ran: "
            + "; ".join(f"`{n}`" if not n.startswith(("`", "the ")) else n for n in moved)
            + ". A process of yours is still writing there: stop it, then stop again."
        )
        return _finish(
            record, event, view, options, Decision("block", reason), [], plan_path, now, scope
        )
    if not failures:
        done = ", ".join(f"`{t.task_id}`" for t in tasks) or "no open task"
        still = ", ".join(f"`{t.task_id}`" for t in again)
        said = f"checks pass: {done}" + (f"; DONE, judged again: {still}" if still else "")
        stale = [f"`{t.task_id}`" for t in tasks if t.heading.keyword == "FAILED"]
        if stale:  # the headline is left as it is: the user's `check --write` writes DONE
            said += (
                f"; FAILED in the plan but passing now: {', '.join(stale)} (after the"
                " session, the user's `groundskeeper check PLAN --write` judges it again and"
                " writes its headline; run during a session, it edits the sealed plan, and"
                " every later stop of the session is blocked as a plan change)"
            )  # adversary-24c H8: the agent that followed the old hint was blocked
        return _finish(
            record,
            event,
            view,
            options,
            Decision("allow", said),
            [],
            plan_path,
            now,
            scope,
        )
    opened = len(failures) - len(undone)
    head = f"{opened} of {len(tasks)} open task(s) fail"
    if undone:
        head += f"; {len(undone)} DONE task(s) no longer pass"
    lines = [f"groundskeeper: not done — {head}:"]
    for task, why in failures:
        lines.append(f"- task `{task.title}` ({plan_path.name}:{task.heading.line}): {why}")
    lines.append("Do the work (not the plan, its checks or the settings), then stop again.")
    return _finish(
        record,
        event,
        view,
        options,
        Decision("block", "\n".join(lines)),
        failures,
        plan_path,
        now,
        scope,
        plan,
    )


_REFUSED = (
    "the seal in force is marked: `agent run` refused a session launched on it, so it may be"
    " that session's own seal, and only the user's `groundskeeper agent seal` accepts it: "
)


def refused_seal(plan_path: Path) -> str | None:
    """Why no session may be launched on the plan's seal in force (a session `agent run`
    refused since the user last sealed it), or None."""
    control, _ = open_plan_record(plan_path)
    refused = refusals_in_force(verified_steps(control, plan_path))
    if not refused:
        return None
    return (
        "the last session launched on the plan's seal was refused ("
        + "; ".join(refused)
        + "): the seal in force may be that session's own. Look at the plan, its checks and"
        " inputs (`groundskeeper ledger show`), then accept them with `groundskeeper agent"
        f" seal {plan_path}`"
    )


def seal_refusal(plan_path: Path, session: str | None, reasons: list[str]) -> str | None:
    """Seal into the plan's ledger, whatever ledger is there, that `agent run` refused the
    session it launched, with `reasons`: the seal in force is marked (`refusals_in_force`)
    until the user seals the plan again. None when sealed, else why it could not be (a
    ledger that cannot take an append: the next hook call and launch refuse it anyway)."""
    try:
        control = ControlDir.for_plan(plan_path).ensure()
        key = _load_key()
        try:
            check_anchor(plan_path, control.path)
            anchored = True
        except HookFailure:
            anchored = False  # a replaced ledger stays unanchored: the refusal blesses nothing
        record = HookRecord(
            control,
            key,
            {
                "kind": "launcher-refusal",
                "plan": str(plan_path),
                "session_id": session or "",
                "reasons": [excerpt(r) for r in reasons],
                "versions": _versions(),
            },
        )
        record.stage("run-end", {"ok": False, "states": [], "tampers": 0})
        record.commit()
        if anchored:
            write_anchor(plan_path, control.path)
    except (GroundskeeperError, OSError) as exc:
        return str(exc)
    return None


def _record_session_start(
    control: ControlDir, key: SigningKey, event: HookEvent, plan_path: Path, plan_sha256: str
) -> None:
    """Mark where the session starts in the ledger: the seal in force then is the one its
    stops are held to, and any seal after it was made during the session."""
    record = HookRecord(
        control,
        key,
        {
            "kind": "hook-session",
            "agent": event.agent,
            "event": event.name,
            "session_id": event.session_id,
            # Claude Code's `startup`, `resume`, `clear`, `compact`: a `clear` start names the
            # id a `/clear` gave the session `agent run` follows (`followed_sessions`)
            "source": excerpt(str(event.raw.get("source") or ""), 40),
            "plan": str(plan_path),
            "plan_sha256": plan_sha256,
            "versions": _versions(),
        },
    )
    record.stage("run-end", {"ok": True, "states": [], "tampers": 0})
    record.commit()
    write_anchor(plan_path, control.path)


def _record_tool(
    event: HookEvent, plan_path: Path, control: ControlDir, key: SigningKey, options: HookOptions
) -> Decision:
    """A PostToolUse: the tool call sealed as the worker's record (it decides nothing)."""
    raw = event.raw
    tool = raw.get("tool_name")
    response = raw.get("tool_response")
    is_error = isinstance(response, dict) and bool(
        response.get("is_error") or response.get("error")
    )
    record = HookRecord(
        control,
        key,
        {
            "kind": "hook-tool",
            "agent": event.agent,
            "session_id": event.session_id,
            "plan": str(plan_path),
        },
    )
    record.stage(
        "tool-call",
        {
            "task_id": options.task,
            "attempt": 0,
            "tool": str(tool or ""),
            "input_sha256": sha256_text(json.dumps(raw.get("tool_input"), sort_keys=True)),
            "status": "error" if is_error else "ok",
            "is_error": is_error,
            "tool_use_id": str(raw.get("tool_use_id") or ""),
            # what the client said it ran, not what groundskeeper saw: anyone who can run the
            # hook's command line can report a call; no record-based rule reads it
            "reported_by": "client",
        },
    )
    record.stage("run-end", {"ok": True, "states": [], "tampers": 0})
    record.commit()
    return Decision("allow", "")


def _tasks_for(
    plan: Plan, event: HookEvent, backed: Callable[[TaskSpec], bool]
) -> tuple[list[TaskSpec] | None, str]:
    """The tasks a stop claims: the one a TaskCompleted or SubagentStop names (with its
    subtree), else every open task. None: the event names no task of the plan (nothing of
    it is claimed)."""
    if event.subject is None:
        return open_tasks(plan, backed), ""
    named = [h for h in plan.tasks() if event.subject in (h.task_id, h.title)]
    if not named:
        return None, f"`{event.subject}` is no task of the plan; the final stop checks them all"
    heads: set[Heading] = set()
    for heading in named:
        stack = [heading]
        while stack:
            current = stack.pop()
            heads.add(current)
            stack.extend(current.child_tasks)
    return [t for t in open_tasks(plan, backed) if t.heading in heads], ""


def backed_by(entries: list[tuple[str, str, dict[str, Any]]]) -> Callable[[TaskSpec], bool]:
    """Whether the ledger backs a task's DONE: a sealed DONE for it, judged with its check
    as it is now (`record.backing`, what a run and `audit` read)."""
    return _backed(_read_record(entries))


def _read_record(entries: list[tuple[str, str, dict[str, Any]]]) -> Record:
    from groundskeeper.record.backing import read_record

    return read_record(entries)


def _backed(record: Record) -> Callable[[TaskSpec], bool]:
    def backed(task: TaskSpec) -> bool:
        sha = SealedCheck.seal(task.check).sha256 if task.check is not None else None
        return record.backs_done(task.task_id, sha, task.verdict_sha256)

    return backed


def _swept(plan: Plan, judged: list[TaskSpec]) -> list[TaskSpec]:
    """The DONEs a claim of the whole plan judges again (`done_again`) that are not already
    among the open tasks `judged` (a DONE the ledger does not back is open)."""
    opened = {t.heading for t in judged}
    return [t for t in done_again(plan) if t.heading not in opened]


#: The failure code of a pass that rests on an input the session was not entitled to change
#: (the run's own, `supervisor.run_checks`).
CHANGED = "protected_input_changed"
#: The failure code of a doctest check's pass that lost an example (the run's own).
EXAMPLES_LOST = "examples_lost"


class _SessionInputs:
    """The rule on a check's inputs for a session, which has no write journal
    (`acceptance.check_inputs.session_inputs_changed`): each file a passing check read that
    the workdir snapshot the user sealed holds and that differs now fails the task, unless
    it is the code under test or a task of the plan asks to change it; and each it read that
    the snapshot does not hold (made since) on the check's side (a new `tests/calc.py`,
    `tests/test_0.py`, `__init__.py`: `check_inputs.made_side`), unless a task asks for it.
    No snapshot sealed (a seal made before it existed): no rule. The snapshot is read at
    its first use."""

    def __init__(self, plan: Plan, root: Path, control: ControlDir, sealed: str | None) -> None:
        self._plan, self._root, self._control, self._sealed = plan, root, control, sealed
        self._held: dict[str, str] | None = None
        self._data: tuple[str, ...] = ()  # the sealed snapshot's modules of values
        self._examples: dict[str, frozenset[str] | None] = {}  # and its doctest examples
        self._statements: dict[str, tuple[str, ...]] = {}  # and its test modules' statements
        self._appended: dict[str, dict[str, tuple[str, ...]]] = {}  # task → module → tests
        self._modules: dict[str, frozenset[str]] | None = None
        self._tasks: list[TaskSpec] | None = None

    def why(self, task: TaskSpec, result: CheckResult) -> str | None:
        if self._sealed is None:
            return None
        from groundskeeper.acceptance.check_inputs import (
            SINCE_SEALED,
            inputs_gone,
            may_remove,
            module_index,
            session_inputs_changed,
            session_inputs_made,
        )
        from groundskeeper.acceptance.check_links import links_made
        from groundskeeper.acceptance.work_modules import source_reader
        from groundskeeper.agents.snapshot import changed_since, readable

        held = self._snapshot()
        # a link the check went through that the snapshot does not hold, to the same target
        # (`acceptance.check_links`)
        found: list[str] = []
        if result.links is not None or result.read is not None:  # a stand-in shell: neither
            found = links_made(result.links, lambda path: _link_target(held.get(path)))
        # a check that read more files than are kept read, for this rule, every one
        read = result.read if result.read is not None else tuple(held)
        changed = changed_since(self._root, held, read)
        new = [p for p in read if p not in held and not _skipped(p)]
        root = self._root
        # a held file on the check's side that is gone now: a removed or renamed failing
        # test, a case file the check loops over (adversary-14 F4)
        found += inputs_gone(
            task,
            held,
            lambda path: not readable(root / path),
            read,
            lambda path: may_remove(self._all_tasks(), path),
            SINCE_SEALED,
            result.folders or (),
        )
        self._appended[task.task_id] = {}
        if changed or new:
            tasks = self._all_tasks()
            appended = self._tests_appended(changed, tasks)
            self._appended[task.task_id] = appended
            changed -= set(appended)
            if changed:
                found += session_inputs_changed(task, read, changed, tasks, self._data)
            if new:
                if self._modules is None:
                    self._modules = module_index(held)
                found += session_inputs_made(
                    task, read, new, tasks, self._modules, source_reader(root),
                    tuple(result.folders or ()),
                )  # fmt: skip
        return "; ".join(found) if found else None

    def added_tests(self, task: TaskSpec, result: CheckResult) -> list[str]:
        """The test modules a passing pytest check read that the sealed snapshot does not
        hold (made since), when it also read tests the snapshot holds: what the check runs
        without once more (`acceptance.added_tests`). Empty without a sealed snapshot."""
        if self._sealed is None or result.read is None:
            return []
        from groundskeeper.acceptance.added_tests import test_modules_read

        held = self._snapshot()
        tests = test_modules_read(task, result.read)
        added = sorted(p for p in tests if p not in held and not _skipped(p))
        return added if added and any(p in held for p in tests) else []

    def _tests_appended(
        self, changed: set[str], tasks: list[TaskSpec]
    ) -> dict[str, tuple[str, ...]]:
        """The changed test modules (of those whose statements the snapshot holds) that
        only have tests appended (`acceptance.appended_tests`), each with their names, when
        some task asks for tests (the session works on every task): not an input changed,
        but the check passes again without them (`appended_tests`)."""
        candidates = [p for p in sorted(changed) if p in self._statements]
        if not candidates:
            return {}
        from groundskeeper.acceptance.appended_tests import appended_to
        from groundskeeper.plan.expected import asks_for_tests

        if not any(asks_for_tests(t) for t in tasks):
            return {}
        found: dict[str, tuple[str, ...]] = {}
        for path in candidates:
            names = appended_to(self._statements[path], self._root / path)
            if names:
                found[path] = names
        return found

    def appended_tests(self, task: TaskSpec) -> dict[str, tuple[str, ...]]:
        """The tests appended to modules that were there which `why` let the task's pass
        stand on (module → names): what the check runs without once more."""
        return self._appended.get(task.task_id, {})

    def _snapshot(self) -> dict[str, str]:
        """The sealed snapshot's files, read at the first use."""
        if self._held is None:
            from groundskeeper.agents.snapshot import load_sealed

            assert self._sealed is not None
            sealed = load_sealed(self._control.path, self._sealed)
            self._held, self._data = sealed.files, sealed.data
            self._examples = {name: frozenset(d) for name, d in sealed.examples}
            self._statements = dict(sealed.statements)
        return self._held

    def examples_lost(self, task: TaskSpec) -> list[str]:
        """Why a pass of the task's doctest check must not stand: an example one of its
        files held when the user sealed the snapshot is gone or changed
        (`acceptance.doctests`, the run's rule). Empty without a sealed snapshot."""
        from groundskeeper.acceptance.doctests import examples_lost, task_doctest_files

        files = task_doctest_files(task)
        if self._sealed is None or not files:
            return []
        self._snapshot()
        return examples_lost(self._examples, self._root, files)

    def _all_tasks(self) -> list[TaskSpec]:
        if self._tasks is None:
            self._tasks = list(compile_plan(self._plan))
        return self._tasks


def _skipped(path: str) -> bool:
    """Whether the snapshot never holds `path` (under a folder it skips)."""
    from groundskeeper.agents.snapshot import SKIPPED

    return any(part in SKIPPED for part in path.split("/")[:-1])


def _link_target(identity: str | None) -> str | None:
    """The target of a link a snapshot holds (`link:TARGET`), else None."""
    if identity is None or not identity.startswith("link:"):
        return None
    return identity[len("link:") :]


class _Sandbox:
    """The shell the checks run in, loaded at its first use (a call that runs no check never
    loads the sandbox)."""

    def __init__(self, shell: Shell | None) -> None:
        self._shell = shell

    def __call__(self) -> Shell:
        if self._shell is None:
            self._shell = sandbox_shell()
        collector.release()  # a check runs with the collector on (off while a hook starts)
        return self._shell


def _judge_again(
    tasks: list[TaskSpec],
    root: Path,
    shell: _Sandbox,
    timeout: float,
    record: HookRecord,
    attempt: int,
    withhold: bool,
    held: Record,
    phase: str = "hook",
    *,
    rule: _SessionInputs | None = None,
    ran: dict[str, CheckResult] | None = None,
) -> list[tuple[TaskSpec, str]]:
    """Each DONE of `tasks` judged again by its check alone, as a run's final sweep judges a
    carried DONE: one whose sealed read set (its last passing check's) still holds on disk
    keeps its DONE without a run (sealed together as `inputs-unchanged`); the others' checks
    run, each sealed (once a call: `ran`, as `_judge_task`). Each that no longer passes,
    with why."""
    if not tasks:
        return []
    from groundskeeper.sandbox import inputs

    unchanged: list[dict[str, str]] = []
    failed: list[tuple[TaskSpec, str]] = []
    for task in tasks:
        assert task.check is not None
        sealed = SealedCheck.seal(task.check)
        reads = held.reads.get(task.task_id)
        facts = inputs.sealed_facts(reads, sealed.sha256)
        if facts is not None and reads is not None and inputs.unchanged(root, facts):
            row = {"task_id": task.task_id, "check_sha256": sealed.sha256 or ""}
            unchanged.append({**row, "reads_sha256": str(reads.get("sha256"))})
            continue
        result = _held(task, _run_once(sealed, root, shell(), timeout, ran), rule)
        record.stage("check", check_body(task.task_id, attempt, result, phase, withhold=withhold))
        if result.code == CHANGED:
            why = f"it is DONE, but its check passes on {result.reason}"
            failed.append((task, f"{CHANGED}: {why}"))
        elif not result.passed:
            detail = f"{result.reason}\n{result.output}".rstrip()
            said = check_feedback(sealed, detail, hides=withhold)
            why = f"it is DONE, but its check no longer passes: {said}"
            failed.append((task, why if withhold else f"{result.code}: {why}"))
    if unchanged:
        record.stage(
            "inputs-unchanged", {"phase": phase, "reason": inputs.UNCHANGED, "tasks": unchanged}
        )
    return failed


def open_tasks(plan: Plan, backed: Callable[[TaskSpec], bool]) -> list[TaskSpec]:
    """The tasks a stop must judge, read as a run reads them, in the order a run judges
    them (each parent after its children): every task not finished — a custom done state
    (`CANCELLED` after `|`) is finished and never judged; DONE is finished only when the
    ledger backs it (`backed`: a sealed DONE with this very check), and judged again
    otherwise; FAILED and PARTIAL are open. A parent is judged on its own check, if it has
    one (without one, its children decide; when each is closed that way, none of them is
    DONE and nothing confirms it: a run's roll-up is PARTIAL, and the hook names it)."""
    spec = compile_plan(plan)
    ended = _ended(plan, spec)
    found: list[TaskSpec] = []
    for task in spec:
        keyword = task.heading.keyword or ""
        if task.heading in ended:
            continue
        if keyword == "DONE" and backed(task):
            continue
        children = task.heading.child_tasks
        if children and not task.checked and not all(c in ended for c in children):
            continue  # its children decide; when every one is closed, nothing can
        found.append(task)
    # deepest first (a stable sort keeps document order among equals): a parent after its
    # children, as a run's roll-up judges it
    return sorted(found, key=lambda t: -t.heading.level)


def done_again(plan: Plan) -> list[TaskSpec]:
    """The DONE tasks a final sweep judges again by their check (`agent work`'s, and a Stop's
    and the launcher's, which claim the whole plan): every DONE with a check outside a
    finished (custom done state) subtree, ledger-backed or not, deepest first — a later
    session, or anything else, may have undone the work it was DONE for."""
    spec = compile_plan(plan)
    ended = _ended(plan, spec)
    found = [
        t
        for t in spec
        if t.heading.keyword == "DONE" and t.check is not None and t.heading not in ended
    ]
    return sorted(found, key=lambda t: -t.heading.level)


def _ended(plan: Plan, spec: PlanSpec) -> set[Heading]:
    """The headings of every finished task (a custom done state, `CANCELLED` after `|`) and
    of its subtree: never run."""
    finished = frozenset(plan.done_states) - set(VERDICT_STATES)
    ended: set[Heading] = set()
    for task in spec:
        if (task.heading.keyword or "") in finished:
            stack = [task.heading]
            while stack:
                current = stack.pop()
                ended.add(current)
                stack.extend(current.child_tasks)
    return ended


def session_refusals(plan: Plan) -> list[Diagnostic]:
    """Why `agent setup` or `agent seal` must not seal `plan` for agents' sessions, as
    error diagnostics in document order (empty: none): each error lint finds (T005 a check
    that cannot fail, …), and each task a stop would have to pass (`open_tasks`, a DONE
    taken as backed) that nothing the hook runs can confirm — no check (T002), or judged also
    on contracts, evidence, a judge or an approval gate (H001), which only a run confirms."""
    from groundskeeper.diagnostics import Diagnostic
    from groundskeeper.plan.edit import unwritable_states
    from groundskeeper.plan.lint import validate

    found = [d for d in validate(plan) if d.level == "error"]
    missing = unwritable_states(plan, HOOK_VERDICTS) if plan.tasks() else []
    if missing:
        found.append(Diagnostic("error", "outline", unwritable_message(missing), None, "H002"))
    for task in open_tasks(plan, lambda _: True):
        title, line = task.title, task.heading.line
        if not task.checked:
            message = (
                "task has no acceptance check: a hook cannot confirm it, and every stop would"
                " be refused; add `:done-when:` or a `#+begin_src sh :check` block"
            )
            found.append(Diagnostic("error", title, message, line, "T002"))
            continue
        more = beyond_check(task)
        if more:
            message = (
                f"task is judged on {' and '.join(more)}, which a hook cannot confirm (only"
                " `groundskeeper run` does): every stop would be refused; work this plan with"
                " `groundskeeper run`, or give the task a check of its own instead"
            )
            found.append(Diagnostic("error", title, message, line, "H001"))
    return sorted(found, key=lambda d: d.line or 0)


#: What the hook itself writes into a headline: the breaker's FAILED.
HOOK_VERDICTS = ("FAILED",)


def unwritable_message(missing: list[str]) -> str:
    """Why the plan cannot hold the hook's verdicts, and the fix (`agent setup`'s H002, the
    breaker's answer): the same words wherever it is said."""
    words = " ".join(missing)
    return (
        f"the #+TODO line has no {', '.join(missing)} after `|`: the hook's breaker seals and"
        f" writes FAILED when it stops a session, and a headline could not show it; add"
        f" {words} after `|` (e.g. `#+TODO: TODO | DONE {words}`, keeping your own states)"
    )


def beyond_check(task: TaskSpec) -> list[str]:
    """What the task is judged on besides its check: what no hook can confirm."""
    return [
        name
        for name, present in (
            ("contracts", bool(task.contracts or task.contract_problems)),
            ("evidence", bool(task.evidence or task.evidence_problems)),
            ("a judge", task.judge is not None),
            ("an approval gate", task.gate is not None),
        )
        if present
    ]


def hides_inputs(plan: Plan) -> bool:
    """Whether the plan holds inputs out (`:hide:`, `#+HIDE:`): then no check output reaches
    the agent or the ledger, whose control directory a native agent can read — a `diff`
    against an answer key prints the answer."""
    return any(t.hide for t in compile_plan(plan))


def _judge_task(
    task: TaskSpec,
    root: Path,
    shell: Shell,
    timeout: float,
    record: HookRecord,
    attempt: int,
    withhold: bool,
    phase: str = "hook",
    *,
    rule: _SessionInputs | None = None,
    ran: dict[str, CheckResult] | None = None,
) -> str | None:
    """Why the task is not done (None: its check passed, on inputs the session was entitled
    to change: `rule`), its check sealed. `ran`: the results of the checks this call ran, by
    hash — a check the same as one already run (the whole suite, the check of many tasks)
    runs once a stop (adversary-24c H5: one after another, they outran the hook's budget)."""
    more = beyond_check(task)
    if task.check is None:
        if task.checked:  # a hard `:contract: pytest`: a check, but one only a run confirms
            return (
                f"it is judged on {' and '.join(more)} (a `pytest` contract), which a hook"
                " cannot confirm; work it with `groundskeeper run` (`agent setup` refuses"
                " such a plan, H001)"
            )
        return (
            "it has no acceptance check, so nothing can confirm it; add `:done-when:` or a"
            " `#+begin_src sh :check` block to the plan (the user re-seals it)"
        )
    sealed = SealedCheck.seal(task.check)
    result = _held(task, _run_once(sealed, root, shell, timeout, ran), rule)
    added = rule.added_tests(task, result) if rule is not None and result.passed else []
    if added:
        from groundskeeper.acceptance.added_tests import without_added

        made = f"which {'was' if len(added) == 1 else 'were'} made since the session's seal"
        result = without_added(
            sealed,
            added,
            made,
            result,
            lambda alone: run_check(alone, root, shell=shell, timeout=timeout),
        )
    appended = rule.appended_tests(task) if rule is not None and result.passed else {}
    if appended:
        from groundskeeper.acceptance.appended_tests import without_appended

        result = without_appended(
            sealed,
            appended,
            "appended since the session's seal",
            result,
            lambda alone: run_check(alone, root, shell=shell, timeout=timeout),
        )
    record.stage("check", check_body(task.task_id, attempt, result, phase, withhold=withhold))
    if result.code == CHANGED:
        return f"{CHANGED}: {result.reason}"
    if not result.passed:
        detail = f"{result.reason}\n{result.output}".rstrip()
        said = check_feedback(sealed, detail, hides=withhold)  # `told`: the one way back
        return said if withhold else f"{result.code}: {said}"
    if more:
        return (
            f"its check passes, but it is also judged on {' and '.join(more)}, which a hook"
            " cannot confirm; finish it with `groundskeeper resume`"
        )
    return None


def _run_once(
    sealed: SealedCheck,
    root: Path,
    shell: Shell,
    timeout: float,
    ran: dict[str, CheckResult] | None,
) -> CheckResult:
    """The check's result: run now, or the one this call already got for the same check
    (`ran`, by hash, which covers its text and deadline), its time counted once."""
    found = ran.get(sealed.sha256) if ran is not None else None
    if found is not None:
        return found
    result = run_check(sealed, root, shell=shell, timeout=timeout)
    if ran is not None:
        ran[sealed.sha256] = replace(result, duration_ms=0)
    return result


def _held(task: TaskSpec, result: CheckResult, rule: _SessionInputs | None) -> CheckResult:
    """The check's result as the hook decides it: a pass on inputs the session was not
    entitled to change (`rule`) is a failure (`protected_input_changed`, the reason naming
    each), so the sealed `check` says what was decided, never PASS for a refused task."""
    if not result.passed or rule is None:
        return result
    changed = rule.why(task, result)
    if changed is not None:
        return replace(result, verdict="FAIL", code=CHANGED, reason=changed)
    lost = rule.examples_lost(task)
    if lost:
        return replace(result, verdict="FAIL", code=EXAMPLES_LOST, reason="; ".join(lost))
    return result


def check_body(
    task_id: str, attempt: int, result: CheckResult, phase: str = "hook", *, withhold: bool = False
) -> dict[str, Any]:
    """A `check` step's body (SPEC §7), with the `phase` that ran it; `withhold`: the output
    only by its hash (the plan hides inputs)."""
    return {
        "phase": phase,
        "task_id": task_id,
        "attempt": attempt,
        "check_sha256": result.check_sha256,
        "output_sha256": result.output_sha256,
        "verdict": result.verdict,
        "reason": result.code or None,
        "excerpt": "" if withhold else excerpt(result.output),
        "duration_ms": result.duration_ms,
    }


def _finish(
    record: HookRecord,
    event: HookEvent,
    view: LedgerView,
    options: HookOptions,
    decision: Decision,
    failures: list[tuple[TaskSpec, str]],
    plan_path: Path,
    verified: Fingerprint,
    scope: str,
    plan: Plan | None = None,
) -> Decision:
    """Seal the decision; `scope`: what the stop claims, the whole plan (a Stop), one
    `task`, or `none` of the plan's (only an allowed Stop ends a row of refusals). `plan`:
    the plan `failures` were judged on (the breaker writes their FAILED into it)."""
    blocks = view.blocks + 1 if decision.outcome == "block" else 0
    states: list[tuple[str, str]] = []
    if decision.outcome == "block" and blocks >= options.max_blocks:
        # the agent would be stopped anyway: the tasks it could not finish are FAILED, sealed,
        # and the user is told (never a silent allow). Only where the headline can show it:
        # a seal the plan cannot agree with would be a false record (`unwritable_states`)
        from groundskeeper.plan.edit import unwritable_states

        unwritable = unwritable_states(plan, ("FAILED",)) if plan is not None else []
        for task, _ in [] if unwritable else failures:
            record.stage(
                "state",
                {
                    "task_id": task.task_id,
                    "from": task.heading.keyword or "",
                    "to": "FAILED",
                    "stop": "breaker",
                },
            )
            states.append((task.task_id, "FAILED"))
        failed = ", ".join(f"`{t}`" for t, _ in states) or "none (the plan itself changed)"
        if unwritable:
            failed = f"none sealed or written ({unwritable_message(unwritable)})"
        decision = Decision(
            "stop",
            f"groundskeeper: the agent was refused {blocks} times (--max-blocks"
            f" {options.max_blocks}); its stop is NOT a pass. FAILED: {failed}. Last reason:"
            f" {decision.reason}",
        )
    record.stage(
        "hook-decision",
        {
            "agent": event.agent,
            "event": event.name,
            "session_id": event.session_id,
            "task_id": event.subject if scope == "task" else None,
            "subject": event.subject,
            "scope": scope,
            "decision": decision.outcome,
            "reason": excerpt(decision.reason),
            "reason_sha256": sha256_text(decision.reason),
            "blocks": blocks,
        },
    )
    record.stage(
        "run-end",
        {
            "ok": decision.outcome == "allow",
            "states": [{"task_id": t, "state": s} for t, s in states],
            "tampers": 0,
        },
    )
    record.commit()  # the claim, each check and the decision: durable before any answer
    control = ControlDir.for_plan(plan_path)
    write_anchor(plan_path, control.path)
    if states:
        _write_failed(plan_path, [t for t, _ in states], verified, event.session_id)
    return decision


def _write_failed(
    plan_path: Path, task_ids: list[str], verified: Fingerprint, session: str
) -> None:
    """Write the breaker's FAILED into the headlines and re-seal the plan with that edit, so
    it is not taken for the agent's. The seal is `verified` (the plan and inputs this call
    compared with the last seal) with only groundskeeper's edit applied, never what is on
    disk by then: the checks take time, and the agent's processes may still be running."""
    from groundskeeper.plan.edit import state_edited, write_atomically
    from groundskeeper.plan.org import parse_plan

    current = _load(plan_path)
    if sha256_text(current.text) != verified.plan_sha256:
        log.warning("%s changed while the checks ran: not edited, not re-sealed", plan_path)
        return
    edited = current
    try:
        for task_id in task_ids:
            edited = parse_plan(state_edited(edited, task_id, "FAILED"), plan_path)
        write_atomically(plan_path, edited.text)
    except GroundskeeperError as exc:
        log.warning("cannot write FAILED into %s: %s", plan_path, exc)
        return
    control, key = open_plan_record(plan_path)
    _record_seal(plan_path, control, key, verified.with_plan(edited), "breaker", session)


# -- what a launched session's stops came to ----------------------------------------------------


def recheck_plan(
    plan_path: Path, workdir: Path | None, shell: Shell | None = None, session: str | None = None
) -> list[str]:
    """The plan judged by the launcher itself after its session (`agent run`), whatever the
    session's recorded stops say — a hook call can be forged by anyone who can run its
    command line, and one killed early leaves no trace: the plan, its checks and inputs
    against the latest seal, the hidden inputs' aliases, every open task's check
    (`open_tasks`) and every DONE's (`done_again`, as a run's final sweep) run in the
    sandbox, each sealed; `session`: the session judged, named in the record. Each reason
    the work is not done, said for a person (empty: every task passes)."""
    control, key = open_plan_record(plan_path)
    entries = verified_entries(control, plan_path)
    view = LedgerView.read([(step, body) for _, step, body in entries], "")
    if view.seal is None:
        return [f"the plan's ledger {control.ledger} holds no seal: nothing can be confirmed"]
    plan = _load(plan_path)
    root = (workdir or plan_path.parent).resolve()
    now = fingerprint(plan, root, [p for p, _ in view.seal.guarded], view.seal)
    found = [f"the plan changed since it was sealed: {c}" for c in now.changes_from(view.seal)]
    found += aliases_of_hidden(root, [p for p, _ in now.hidden])
    if found:
        return found
    held = _read_record(entries)
    tasks = open_tasks(plan, _backed(held))
    again = _swept(plan, tasks)  # the session may have undone a DONE's work: judged again
    record = HookRecord(
        control,
        key,
        {
            "kind": "launcher-check",
            "plan": str(plan_path),
            "workdir": str(root),
            "session_id": session or "",
            "tasks": [t.task_id for t in tasks],
            "done_again": [t.task_id for t in again],
        },
    )
    withhold = hides_inputs(plan)
    sandbox = _Sandbox(shell)
    rule = _SessionInputs(plan, root, control, view.seal.snapshot)
    failed: list[tuple[TaskSpec, str]] = []
    for task in tasks:
        why = _judge_task(
            task, root, sandbox(), DEFAULT_CHECK_TIMEOUT, record, 0, withhold, "launcher",
            rule=rule,
        )  # fmt: skip
        if why is not None:
            failed.append((task, why))
    failed += _judge_again(
        again, root, sandbox, DEFAULT_CHECK_TIMEOUT, record, 0, withhold, held, "launcher",
        rule=rule,
    )  # fmt: skip
    for task, why in failed:
        found.append(f"task `{task.title}` ({plan_path.name}:{task.heading.line}): {why}")
    record.stage("run-end", {"ok": not found, "states": [], "tampers": 0})
    record.commit()
    write_anchor(plan_path, control.path)
    return found


def configuration_unsealed(plan_path: Path, configuration: Path) -> str | None:
    """Why `configuration` (the agent configuration a launcher is about to hand its client)
    is not the one sealed with the plan, or None when it is."""
    from groundskeeper.acceptance.protect import file_sha256

    control, _ = open_plan_record(plan_path)
    view = LedgerView.read(verified_steps(control, plan_path), "")
    if view.seal is None:
        return f"the plan's ledger {control.ledger} holds no seal; run `groundskeeper agent setup`"
    sealed = dict(view.seal.guarded)
    name = str(configuration.absolute())
    if name not in sealed:
        return f"{configuration} was never sealed with the plan; run `groundskeeper agent setup`"
    if file_sha256(configuration) != sealed[name]:
        return (
            f"{configuration} differs from the one sealed with the plan (it was edited since"
            " `agent setup` wrote it): its hooks may not be groundskeeper's. Run `groundskeeper"
            " agent setup` again to write and seal it afresh"
        )
    return None


def ledger_lines(plan_path: Path) -> tuple[int, str]:
    """How many lines the plan's ledger holds now (0: none yet), and their SHA-256: what
    `agent run` holds the record before its session to."""
    try:
        data = ControlDir.for_plan(plan_path).ledger.read_bytes()
    except OSError:
        data = b""
    return data.count(b"\n"), hashlib.sha256(data).hexdigest()


def session_outcome(plan_path: Path, before: tuple[int, str], session: str | None) -> str | None:
    """What the user must hear about the session `agent run` launched, read back from the
    ledger written since `before` (its lines and their hash at launch), or None when the
    session's last Stop was allowed, every one of its hook calls was answered, and nothing
    re-sealed the plan or rewrote the record meanwhile. `session`: the session id it
    launched (None: the one whose SessionStart is the first after launch). Only that
    session's calls are its own, and only a Stop (the whole plan's claim) is its last stop:
    the agent stops whenever its hook is killed (Claude Code lets a stop through on a hook
    that dies), and such a call leaves a run-start with no decision."""
    changed = record_changed(plan_path, before)
    if changed is not None:
        return changed
    after = before[0]
    try:
        steps = verified_steps(ControlDir.for_plan(plan_path), plan_path)
    except HookFailure as exc:  # changed since `record_changed` read it
        return f"the plan's ledger cannot be trusted: {exc}"
    if session is None:
        started = [
            str(body.get("session_id"))
            for step, body in steps[after:]
            if step == "run-start" and body.get("kind") == "hook-session" and body.get("session_id")
        ]
        # a session resumed (`--continue`) starts no new one: its calls' one session id
        seen = {
            str(body.get("session_id"))
            for step, body in steps[after:]
            if step == "run-start" and body.get("kind") == "hook"
        }
        if not started and len(seen) > 1:
            return (
                f"stops of {len(seen)} sessions reached the hook and no session start after the"
                " launch names the one launched: which it was cannot be told; nothing is"
                " confirmed"
            )
        if not started and not seen:
            return "no stop of the session reached groundskeeper's hook; nothing is confirmed"
        session = started[0] if started else seen.pop()
    chain = followed_sessions(steps[after:], session)
    if isinstance(chain, str):
        return chain
    runs: dict[str, str | None] = {}  # hook run id -> its decision (None: never answered)
    stops: list[str] = []  # the session's Stop decisions (the whole plan's claim), in order
    for step, body in steps[after:]:
        run = str(body.get("run_id", ""))
        if step == "run-start" and body.get("kind") == "hook":
            if body.get("session_id") in chain:
                runs[run] = None
        elif step == "hook-decision" and run in runs:
            runs[run] = str(body.get("decision"))
            if body.get("scope") == "plan":
                stops.append(str(body.get("decision")))
    unanswered = [r for r, d in runs.items() if d is None]
    if unanswered:
        return (
            f"{len(unanswered)} stop(s) of the session were never answered (the hook was stopped"
            f" before it could decide: {', '.join(unanswered)}); nothing of them is confirmed"
        )
    if not stops:
        others = sorted(
            {
                str(body.get("session_id"))
                for step, body in steps[after:]
                if step == "run-start" and body.get("kind") == "hook"
            }
            - set(chain)
        )
        if others:
            return (
                f"no stop of the session reached groundskeeper's hook; stops of another session"
                f" ({', '.join(f'`{o}`' for o in others[:3])}) did, and no `/clear` start of"
                " the session (a SessionStart with source `clear`) links it to the one launched;"
                " nothing is confirmed"
            )
        return "no stop of the session reached groundskeeper's hook; nothing is confirmed"
    if stops[-1] != "allow":
        return f"the session's last stop was not allowed ({stops[-1]}): the work is not done"
    return None


def followed_sessions(steps: list[tuple[str, dict[str, Any]]], launched: str) -> list[str] | str:
    """The session ids the launched session went by, in order, read from the ledger written
    since its launch: `launched`, then each id a `/clear` gave it. Claude Code's `/clear`
    starts the conversation over under a new id and sends `SessionStart` with source
    `clear`, naming only the new id; such a start is followed when it comes after a call of
    the id in force and that id makes no call after it (a `/clear` ends it). A clear-start of
    another session while the launched one is still calling is not its own: the answer is why
    the session cannot be told (a str), never a guess. A bare id with no clear-start before
    it is never followed."""
    chain = [launched]
    active = False  # has the id in force made a call (or its start) yet?
    for step, body in steps:
        if step != "run-start" or body.get("kind") not in ("hook", "hook-session"):
            continue
        sid = str(body.get("session_id") or "")
        if sid in chain[:-1]:
            return (
                f"the session's id `{sid}` made a hook call after a `/clear` start"
                f" (`{chain[chain.index(sid) + 1]}`) the launcher took for its own: two sessions"
                " ran on the plan and which stop is the launched one's cannot be told; nothing"
                " is confirmed"
            )
        if sid == chain[-1]:
            active = True
        elif active and body.get("kind") == "hook-session" and body.get("source") == "clear":
            chain.append(sid)
            active = True
    return chain


def record_changed(plan_path: Path, before: tuple[int, str]) -> str | None:
    """Why the record a session was launched on no longer holds (the ledger cannot be
    trusted, its lines from before the launch were rewritten, or the plan was sealed again
    during the session), or None: what makes `agent run` refuse the session and mark the
    seal (`seal_refusal`)."""
    control = ControlDir.for_plan(plan_path)
    try:
        steps = verified_steps(control, plan_path)
        data = control.ledger.read_bytes()
    except HookFailure as exc:
        return f"the plan's ledger cannot be trusted: {exc}"
    except OSError as exc:
        return f"the plan's ledger cannot be read: {exc.strerror}"
    after, digest = before
    kept = b"".join(data.splitlines(keepends=True)[:after])
    if hashlib.sha256(kept).hexdigest() != digest:
        return (
            "the plan's ledger as it was when the session started was rewritten during it;"
            " nothing the session stopped on is confirmed"
        )
    late = late_seals(steps, after)
    if late:
        return (
            "the plan was sealed again while the session ran, by " + ", ".join(late) + ": a"
            " seal made during a session does not apply to it, and nothing it stopped on is"
            " confirmed"
        )
    return None


def plan_changed_since(plan_path: Path, launched: str) -> str | None:
    """What the user must hear when the plan file differs from its text `launched` (read as
    the session was launched) by more than the breaker's FAILED headlines: read from the
    disk, not the ledger, so no record written during the session bears on it."""
    from groundskeeper.plan.edit import state_edited
    from groundskeeper.plan.org import parse_plan

    try:
        now = load_plan(plan_path)
        expected = parse_plan(launched, plan_path)
        was = {h.task_id: h.keyword for h in expected.tasks()}
        for heading in now.tasks():
            if heading.keyword == "FAILED" and was.get(heading.task_id, "FAILED") != "FAILED":
                expected = parse_plan(state_edited(expected, heading.task_id, "FAILED"), plan_path)
    except GroundskeeperError as exc:
        return f"the plan {plan_path} cannot be read as it was launched: {exc}"
    if now.text != expected.text:
        return (
            f"the plan {plan_path} was changed during the session (other than groundskeeper's"
            " FAILED headlines): nothing the session stopped on is confirmed"
        )
    return None


# -- failures of groundskeeper's own, counted where nothing could be sealed ---------------------


def count_failure(
    plan_hint: Path | None, cwd: str | None, session: str, *, reset: bool = False
) -> int:
    """Count one failure block for `session` in a row (`reset`: a decision was sealed, the
    row ends); return the count so far. Kept in the control directory when there is one,
    else in $GROUNDSKEEPER_HOME: a broken groundskeeper must not loop an agent forever
    either."""
    where = _failure_file(plan_hint, cwd)
    if reset and not where.exists():
        return 0
    counts: dict[str, int] = {}
    try:
        loaded = json.loads(where.read_text(encoding="utf-8"))
        if isinstance(loaded, dict):
            counts = {str(k): int(v) for k, v in loaded.items() if isinstance(v, int)}
    except (OSError, ValueError):
        pass
    counts[session] = 0 if reset else counts.get(session, 0) + 1
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        temporary = where.with_name(where.name + f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(counts), encoding="utf-8")
        os.replace(temporary, where)
    except OSError:
        log.warning("cannot record a hook failure in %s", where)
    return counts[session]


def _failure_file(plan_hint: Path | None, cwd: str | None) -> Path:
    for candidate in (plan_hint, Path(cwd) / "plan.org" if cwd else None):
        if candidate is not None and (candidate.parent / CONTROL_ROOT).is_dir():
            return ControlDir.for_plan(candidate).path / FAILURES_FILE
    return groundskeeper_home() / ANCHOR_DIR / FAILURES_FILE
