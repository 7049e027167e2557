"""The plan as sealed for an agent's sessions, and what a hook reads back of the ledger.

It owns the fingerprint of a plan (the file's hash, each task's check hash, the protected and
hidden inputs' hashes, read as a run reads them), the `hook-seal` runs that record it, the
anchor in $GROUNDSKEEPER_HOME that names each plan's ledger (so a deleted or swapped ledger
is seen), and counting a session's blocks from the signed record. It does not run checks or
answer agents.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from groundskeeper.acceptance.check import SealedCheck, sha256_text
from groundskeeper.acceptance.protect import file_sha256, input_sha256, matched_files
from groundskeeper.errors import GroundskeeperError
from groundskeeper.fastclass import fastclass, replace
from groundskeeper.plan.org import Plan
from groundskeeper.plan.spec import PlanSpec, compile_plan
from groundskeeper.record.keys import groundskeeper_home
from groundskeeper.record.ledger_format import LEDGER_FILE, ledger_origin
from groundskeeper.sandbox.fence import HIDDEN_NAMES

__all__ = [
    "ANCHOR_DIR",
    "OWN_SEALS",
    "Fingerprint",
    "HookFailure",
    "LedgerView",
    "aliases_of_hidden",
    "check_anchor",
    "fingerprint",
    "held_inputs",
    "input_identities",
    "input_patterns",
    "late_seals",
    "new_hook_run_id",
    "refusals_in_force",
    "write_anchor",
]

#: Where each gated plan's ledger is named, under $GROUNDSKEEPER_HOME.
ANCHOR_DIR = "agents"


class HookFailure(GroundskeeperError):
    """Something groundskeeper needs to confirm a stop is missing or damaged: the hook blocks
    with this message (no plan, an unusable key, a ledger that does not verify, …)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def new_hook_run_id() -> str:
    now = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    return f"hook-{now}-{os.urandom(4).hex()}"


@fastclass(frozen=True, slots=True)
class Fingerprint:
    """What a session may not change: the plan file, each task's check, the protected and
    hidden inputs (by content)."""

    plan_sha256: str
    checks: tuple[tuple[str, str | None], ...]
    protected: tuple[tuple[str, str | None], ...]
    #: the agent's hook configuration `agent setup` wrote (absolute paths)
    guarded: tuple[tuple[str, str | None], ...] = ()
    #: the held-out files (`:hide:`, `#+HIDE:`): named and hashed, never shown
    hidden: tuple[tuple[str, str | None], ...] = ()
    #: the SHA-256 of the workdir snapshot the user's seal took (`agents.snapshot`; None:
    #: none taken, as before the rule on a check's inputs)
    snapshot: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "plan_sha256": self.plan_sha256,
            "checks": [{"task_id": t, "check_sha256": s} for t, s in self.checks],
            "protected": [{"path": p, "sha256": s} for p, s in self.protected],
            "hidden": [{"path": p, "sha256": s} for p, s in self.hidden],
            "guarded": [{"path": p, "sha256": s} for p, s in self.guarded],
            "snapshot_sha256": self.snapshot,
        }

    @classmethod
    def from_json(cls, body: Mapping[str, Any]) -> Fingerprint:
        def pairs(name: str) -> tuple[tuple[str, str | None], ...]:
            return tuple((str(p.get("path")), p.get("sha256")) for p in body.get(name) or [])

        checks = body.get("checks") or []
        snapshot = body.get("snapshot_sha256")
        return cls(
            str(body.get("plan_sha256", "")),
            tuple((str(c.get("task_id")), c.get("check_sha256")) for c in checks),
            pairs("protected"),
            pairs("guarded"),
            pairs("hidden"),
            snapshot if isinstance(snapshot, str) else None,
        )

    def with_plan(self, plan: Plan) -> Fingerprint:
        """This fingerprint with the plan's own part (its hash, its checks) taken from `plan`
        and the inputs' hashes kept: how groundskeeper re-seals an edit of its own."""
        return replace(self, plan_sha256=sha256_text(plan.text), checks=_check_hashes(plan))

    def changes_from(self, sealed: Fingerprint) -> list[str]:
        """What differs from `sealed`, each said for a person (empty: nothing)."""
        found: list[str] = []
        before, now = dict(sealed.checks), dict(self.checks)
        for task_id in sorted(before.keys() | now.keys()):
            if task_id not in now:
                found.append(f"task `{task_id}` was removed")
            elif task_id not in before:
                found.append(f"task `{task_id}` was added")
            elif before[task_id] != now[task_id]:
                found.append(f"the check of task `{task_id}` was changed")
        for kind, was, now_i in (
            ("protected", dict(sealed.protected), dict(self.protected)),
            ("hidden", dict(sealed.hidden), dict(self.hidden)),
        ):
            # named, never shown: a hidden input's content is in no reason
            for path in sorted(was.keys() | now_i.keys()):
                if was.get(path) != now_i.get(path):
                    found.append(f"the {kind} input `{path}` was changed")
        was_g, now_g = dict(sealed.guarded), dict(self.guarded)
        for path in sorted(was_g.keys() | now_g.keys()):
            if was_g.get(path) != now_g.get(path):
                found.append(f"the agent's hook configuration {path} was changed")
        if self.plan_sha256 != sealed.plan_sha256 and not found:
            found.append("the plan file was edited (its headlines, properties or text)")
        return found


def input_patterns(
    spec: PlanSpec, workdir: Path, sealed: Fingerprint | None = None
) -> tuple[list[str], list[str]]:
    """(the protected patterns, the hidden ones) a session is held to, read by the run's own
    rules (`plan.expected`): `:protect:` and `#+PROTECT:`; each expected file a check
    compares against that no task frees (`:writable:`, or a task's text asking to change
    it) and that existed when the plan was sealed (`sealed`; None: now, as it is being
    sealed); pytest's configuration at any depth when a check runs pytest itself; `:hide:`
    and `#+HIDE:`. One session does every task, so it is held as every worker of a run is."""
    tasks = list(spec)
    protect: set[str] = set()
    hide: set[str] = set()
    for task in tasks:
        protect.update(task.protect)
        hide.update(task.hide)
    if any(t.check is not None and "pytest" in t.check.text for t in tasks):
        # (the word first: a plan with no pytest check parses no check for it)
        from groundskeeper.plan.expected import configuration_kept

        protect.update(configuration_kept(tasks))
    if sealed is not None and sealed.plan_sha256 == sha256_text(spec.plan.text):
        # the plan as sealed: its expected files are the ones sealed (no check parsed again;
        # a shared file's pytest section, `#[…]`, is no file: `shared_sections`)
        protect.update(f"/{p}" for p, _ in sealed.protected if "#[" not in p)
        return sorted(protect), sorted(hide)
    from groundskeeper.plan.expected import expected_inputs, freed

    known = None if sealed is None else frozenset(p for p, _ in sealed.protected)
    expected = expected_inputs(tasks, workdir, known)
    protect.update(f"/{p}" for p in expected if not freed(tasks, p))
    return sorted(protect), sorted(hide)


def shared_sections(
    spec: PlanSpec, workdir: Path, protected: Iterable[str] = ()
) -> tuple[tuple[str, str | None], ...]:
    """pytest's own part of each shared configuration file (`pytest_files.SHARED`) that a
    task frees (asked to bump its version, `:writable:`), when a check runs pytest: the rest
    of the file is that task's work, the part pytest reads stays the check's (adversary-24c
    F4). Each as (`FILE#[section]`, its digest); none for a file held whole (`protected`)."""
    tasks = list(spec)
    if not any(t.check is not None and "pytest" in t.check.text for t in tasks):
        return ()
    from groundskeeper.plan.expected import configuration_kept
    from groundskeeper.pytest_files import SHARED, section_name, section_sha256

    freed = [name for name in SHARED if name not in configuration_kept(tasks)]
    if not freed:
        return ()
    try:
        files = matched_files(workdir, freed)
    except ValueError as exc:
        raise HookFailure("plan", f"cannot hash pytest's configuration: {exc}") from exc
    held = set(protected)
    return tuple((section_name(f), section_sha256(workdir / f)) for f in files if f not in held)


def in_virtualenv(workdir: Path, path: str) -> bool:
    """Whether `path` is a configuration file (`pytest_files.PYTEST_CONFIGURATION`) inside
    a virtual environment of the workdir (a folder named `.venv` or `venv`, or holding
    `pyvenv.cfg`): the agent's `python3 -m venv .venv` and `pip install` write `.pth` files
    there (adversary-24c H9), which neither pytest (it collects no virtual environment) nor
    the sandbox's Python (its one site directory is read-only) reads."""
    from groundskeeper.pytest_files import ANYWHERE, AT_ROOT

    *parts, name = path.split("/")
    if not parts or not (name in ANYWHERE or name in AT_ROOT or name.endswith(".pth")):
        return False
    for depth in range(len(parts)):
        if parts[depth] in (".venv", "venv"):
            return True
        if (workdir.joinpath(*parts[: depth + 1]) / "pyvenv.cfg").is_file():
            return True
    return False


def _check_hashes(plan: Plan) -> tuple[tuple[str, str | None], ...]:
    return tuple(
        (t.task_id, SealedCheck.seal(t.check).sha256 if t.check is not None else None)
        for t in compile_plan(plan)
    )


def held_inputs(plan: Plan, workdir: Path) -> tuple[list[Path], list[Path]]:
    """(the protected inputs, the hidden ones) of the plan in `workdir` now, as absolute
    paths: what an agent's own deny rules name."""
    protect, hide = input_patterns(compile_plan(plan), workdir)
    try:
        hidden = matched_files(workdir, hide)
        protected = [f for f in matched_files(workdir, protect) if f not in hidden]
    except ValueError as exc:
        raise HookFailure("plan", f"cannot list the protected inputs: {exc}") from exc
    root = workdir.absolute()
    return [root / f for f in protected], [root / f for f in hidden]


def fingerprint(
    plan: Plan, workdir: Path, guarded: Iterable[str] = (), sealed: Fingerprint | None = None
) -> Fingerprint:
    """The plan and its inputs now; `sealed`: the seal it will be compared with, whose
    expected files stay protected (one the agent removed reads as changed)."""
    spec = compile_plan(plan)
    checks = _check_hashes(plan)
    protect, hide = input_patterns(spec, workdir, sealed)
    try:
        hidden_files = matched_files(workdir, hide)
        files = [
            f
            for f in matched_files(workdir, protect)
            if f not in hidden_files and not in_virtualenv(workdir, f)
        ]
    except ValueError as exc:
        raise HookFailure("plan", f"cannot hash the protected inputs: {exc}") from exc
    protected = tuple((f, input_sha256(workdir, f)) for f in files)
    protected += shared_sections(spec, workdir, files)
    hidden = tuple((f, input_sha256(workdir, f)) for f in hidden_files)
    configuration = tuple((g, file_sha256(Path(g))) for g in sorted(set(guarded)))
    return Fingerprint(sha256_text(plan.text), checks, protected, configuration, hidden)


Identity = tuple[int, int, int, int, int, int] | None


def input_identities(workdir: Path, inputs: Iterable[str]) -> dict[str, Identity]:
    """Each input's and each folder holding it's file identity (device, inode, size, mtime,
    ctime, links; None when absent), the workdir itself aside: taken before a hook hashes
    the inputs and again after its checks, any write, rename or swap between the two reads
    differently, since no process can set a ctime back."""
    names: set[str] = set()
    for relative in inputs:
        parts = relative.split("/")
        names.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    found: dict[str, Identity] = {}
    for name in sorted(names):
        try:
            st = os.lstat(workdir / name)
        except OSError:
            found[name] = None
            continue
        found[name] = (
            st.st_dev,
            st.st_ino,
            st.st_size,
            st.st_mtime_ns,
            st.st_ctime_ns,
            st.st_nlink,
        )
    return found


#: Names looked at for links to hidden inputs before the hook gives up (and blocks).
MAX_SCANNED = 200_000


def aliases_of_hidden(workdir: Path, hidden: Iterable[str]) -> list[str]:
    """Each name in `workdir` that reaches a hidden input other than by its own: a symbolic
    link to one or to a directory holding one, and a hidden input with a hard link. A check
    follows them, and the agent needs no read of the answer to make one; said by name."""
    root = os.path.realpath(workdir)
    named = set(hidden)
    if not named:
        return []
    found: list[str] = []
    targets: dict[str, str] = {}
    for relative in sorted(named):
        path = os.path.join(root, relative)
        try:
            info = os.lstat(path)
        except OSError:
            continue
        targets[os.path.realpath(path)] = relative
        if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
            found.append(f"the hidden input `{relative}` has another name (a hard link)")
    seen = 0
    stack = [root]
    while stack:
        directory = stack.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            seen += 1
            if seen > MAX_SCANNED:
                raise HookFailure(
                    "inputs",
                    f"more than {MAX_SCANNED} names in {workdir} to look through for links to"
                    " the hidden inputs",
                )
            if entry.name.casefold() in HIDDEN_NAMES:
                continue
            relative = os.path.relpath(entry.path, root).replace(os.sep, "/")
            if entry.is_symlink():
                if relative in named:
                    continue
                real = os.path.realpath(entry.path)
                reached = [
                    h for t, h in targets.items() if t == real or t.startswith(real + os.sep)
                ]
                if reached:
                    found.append(f"`{relative}` is a link to the hidden input `{reached[0]}`")
            elif entry.is_dir(follow_symlinks=False):
                stack.append(entry.path)
    return sorted(found)


#: A seal groundskeeper itself makes in a session: the breaker's FAILED, sealed on the plan
#: it verified (`gate._write_failed`); it is no change of what the session is held to.
OWN_SEALS = frozenset({"breaker"})


@fastclass(frozen=True, slots=True)
class LedgerView:
    """What the hook reads back of a plan's (verified) ledger: the latest seal, the session's
    decisions since it, and any seal made while the session ran."""

    seal: Fingerprint | None
    sealed_by: str | None
    blocks: int  # this session's refused stops since its last allowed Stop (or the last seal)
    #: whether the ledger holds this session already (its SessionStart, or a hook call)
    started: bool = False
    #: each seal made after the session started (not groundskeeper's own), said for a person:
    #: a seal made during a session does not apply to it
    late: tuple[str, ...] = ()
    #: each session `agent run` refused since the user last sealed (`refusals_in_force`)
    refused: tuple[str, ...] = ()

    @classmethod
    def read(cls, steps: Iterable[tuple[str, dict[str, Any]]], session: str) -> LedgerView:
        steps = list(steps)
        seal: Fingerprint | None = None
        by: str | None = None
        blocks = 0
        started = False
        late: list[str] = []
        for step, body in steps:
            kind = body.get("kind") if step == "run-start" else None
            mine = bool(session) and body.get("session_id") == session
            if kind == "hook-seal":
                new, by = Fingerprint.from_json(body), str(body.get("by", ""))
                # the breaker's own seal changes headlines only: one that changes a check or
                # an input is no seal of groundskeeper's, whatever it calls itself
                own = by in OWN_SEALS and seal is not None and _same_inputs(new, seal)
                if started and not own:
                    late.append(f"`{by}` (run {body.get('run_id', '?')})")
                seal, blocks = new, 0
                if mine and by in ("session-start", "first hook call"):
                    started = True
            elif kind in ("hook", "hook-session") and mine:
                started = True
            elif step == "hook-decision" and mine:
                if body.get("decision") == "block":
                    blocks += 1
                elif body.get("decision") == "stop" or body.get("scope") == "plan":
                    # the breaker, or an allowed Stop (the whole plan's claim), ends a row of
                    # refusals: a SubagentStop or TaskCompleted claims one task, or nothing
                    blocks = 0
        return cls(seal, by, blocks, started, tuple(late), tuple(refusals_in_force(steps)))


def late_seals(steps: list[tuple[str, dict[str, Any]]], after: int) -> list[str]:
    """Each seal among `steps[after:]` that is not the breaker's own (headlines only), said
    for a person."""
    seal: Fingerprint | None = None
    late: list[str] = []
    for index, (step, body) in enumerate(steps):
        if step != "run-start" or body.get("kind") != "hook-seal":
            continue
        new, by = Fingerprint.from_json(body), str(body.get("by", ""))
        own = by in OWN_SEALS and seal is not None and _same_inputs(new, seal)
        if index >= after and not own:
            late.append(f"`{by}` (run {body.get('run_id', '?')})")
        seal = new
    return late


#: The seals that are the user's own (`agent seal`, `agent setup AGENT`): only they lift the
#: mark a refused session leaves on the seal in force.
def _users_seal(by: str) -> bool:
    return by == "agent seal" or by.startswith("agent setup")


def refusals_in_force(steps: Iterable[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """Each session `agent run` refused (a `launcher-refusal` run) since the user last sealed
    the plan, said for a person: while any is in force, the seal may be the refused
    session's own, and no session is launched on it (empty: none)."""
    found: list[str] = []
    for step, body in steps:
        if step != "run-start":
            continue
        kind = body.get("kind")
        if kind == "hook-seal" and _users_seal(str(body.get("by", ""))):
            found = []
        elif kind == "launcher-refusal":
            reasons = [str(r) for r in body.get("reasons") or [] if isinstance(r, str)]
            session = body.get("session_id") or "?"
            found.append(
                f"session {session} (run {body.get('run_id', '?')}): "
                + ("; ".join(reasons) or "no reason recorded")
            )
    return found


def _same_inputs(a: Fingerprint, b: Fingerprint) -> bool:
    return (a.checks, a.protected, a.hidden, a.guarded, a.snapshot) == (
        b.checks,
        b.protected,
        b.hidden,
        b.guarded,
        b.snapshot,
    )


def _anchor_path(plan_path: Path) -> Path:
    digest = hashlib.sha256(str(plan_path.absolute()).encode("utf-8", "surrogatepass"))
    return groundskeeper_home() / ANCHOR_DIR / f"{digest.hexdigest()}.json"


def _ledger_head(ledger: Path) -> tuple[str, int] | None:
    try:
        data = ledger.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise HookFailure("ledger", f"cannot read the ledger {ledger}: {exc.strerror}") from exc
    if not data:
        return None
    first, _, _ = data.partition(b"\n")
    return ledger_origin(first + b"\n"), data.count(b"\n")


def check_anchor(plan_path: Path, control: Path) -> None:
    """Refuse a ledger that is not the one this home last sealed for the plan (deleted,
    replaced, or cut short)."""
    anchor = _anchor_path(plan_path)
    try:
        known = json.loads(anchor.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return
    except (OSError, ValueError) as exc:
        raise HookFailure(
            "ledger",
            f"the ledger anchor {anchor} cannot be read ({exc}); it names"
            f" {plan_path}'s ledger: inspect it, or move it aside to start over",
        ) from exc
    head = _ledger_head(control / LEDGER_FILE)
    origin, size = known.get("origin"), known.get("lines")
    if head is None:
        raise HookFailure(
            "ledger",
            f"the plan's ledger {control / LEDGER_FILE} is gone, but {size} sealed lines of it"
            f" were recorded in {anchor}: it was deleted. If you start over on purpose (the"
            f" project re-created at this path, a fresh clone), move that record aside (`mv"
            f" {anchor} {anchor}.old`) and run `groundskeeper agent setup` again",
        )
    if head[0] != origin:
        raise HookFailure(
            "ledger",
            f"the plan's ledger {control / LEDGER_FILE} is not the one sealed before"
            f" (recorded in {anchor}): it was replaced",
        )
    if isinstance(size, int) and head[1] < size:
        raise HookFailure(
            "ledger",
            f"the plan's ledger has {head[1]} lines but {size} were sealed: it was cut short",
        )


def write_anchor(plan_path: Path, control: Path) -> None:
    head = _ledger_head(control / LEDGER_FILE)
    if head is None:
        return
    anchor = _anchor_path(plan_path)
    anchor.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    document = {"plan": str(plan_path.absolute()), "origin": head[0], "lines": head[1]}
    temporary = anchor.with_name(anchor.name + f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps(document) + "\n", encoding="utf-8")
    os.replace(temporary, anchor)
