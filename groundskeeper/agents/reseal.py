"""What a user's re-seal would take as it is: the workdir now against the snapshot the last
seal holds (`agents.snapshot`), each change read by the hook's own rule on a check's inputs
(`acceptance.check_inputs.sealed_side`).

A seal is the user's word that the workdir is as it should be; after a session the hook
refused for a rewritten key, a routine `agent seal` would otherwise make the rewritten key
the one the next session is held to (adversary-14 F10). So a change on a check's side —
a test, a checker program or its module, a key or any file a check may read that no task
asks to change, the protected and hidden inputs — is taken only when the user names it
(`--accept PATH`, or `--accept-changes` for all of them), and sealed with its identity
before and after; the rest (the work: the code under test, the files the tasks ask for) is
listed and taken.

It reads the ledger and the workdir; it decides what needs the user's word, and writes
nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundskeeper.agents.seal import Fingerprint, HookFailure
from groundskeeper.agents.snapshot import Snapshot, in_skipped, load_snapshot

__all__ = ["Change", "Changes", "accepted_body", "changes_since_seal", "short_identity"]


@dataclass(frozen=True, slots=True)
class Change:
    """One file that differs from the last seal: how (`changed`, `added`, `removed`), its
    identity then and now (`agents.snapshot.identity`; None: absent), and where it sits on
    a check's side (None: the work)."""

    path: str
    change: str
    before: str | None
    after: str | None
    side: str | None

    def said(self) -> str:
        """The change for a person: `PATH: changed (sha256 ab12… → cd34…)`."""
        was, now = short_identity(self.before), short_identity(self.after)
        if self.change == "added":
            what = f"added ({now})"
        elif self.change == "removed":
            what = f"removed (was {was})"
        else:
            what = f"changed ({was} → {now})"
        return f"`{self.path}`: {what}" + (f" — {self.side}" if self.side else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "change": self.change,
            "before": self.before,
            "after": self.after,
            **({"side": self.side} if self.side else {}),
        }


@dataclass(frozen=True, slots=True)
class Changes:
    """Every change since the last seal (`changes`), and why none could be read (`unread`:
    the last seal's snapshot is gone or not the one sealed: every file then needs the
    user's word)."""

    changes: tuple[Change, ...]
    unread: str | None = None

    def held(self) -> list[Change]:
        """The changes on a check's side: taken only when the user names them."""
        return [c for c in self.changes if c.side is not None]

    def work(self) -> list[Change]:
        return [c for c in self.changes if c.side is None]


def short_identity(identity: str | None) -> str:
    if identity is None:
        return "absent"
    if identity.startswith("link:"):
        return f"a link to {identity[len('link:') :]}"
    digest = identity.split(";", 1)[0].removeprefix("sha256:")
    return f"sha256 {digest[:12]}…"


def changes_since_seal(
    plan_path: Path,
    root: Path,
    now: Snapshot,
    sealed: Fingerprint | None,
    fresh: Fingerprint,
    skip: Iterable[str] = (),
) -> Changes:
    """What `now` (the snapshot this seal takes) and `fresh` (the plan's inputs now) change
    from `sealed` (the seal in force; None: the plan's first seal, nothing to compare),
    each change read by the hook's rule. `skip`: workdir files the seal holds otherwise (the
    plan file, the agent's configuration it writes)."""
    if sealed is None:
        return Changes(())
    from groundskeeper.acceptance.check_inputs import module_index, sealed_side
    from groundskeeper.plan.org import load_plan
    from groundskeeper.plan.spec import compile_plan
    from groundskeeper.record.control import ControlDir

    tasks: Sequence[Any] = list(compile_plan(load_plan(plan_path)))
    found: dict[str, Change] = {}
    unread: str | None = None
    if sealed.snapshot is not None:
        try:
            held = load_snapshot(ControlDir.for_plan(plan_path).path, sealed.snapshot)
        except HookFailure as exc:
            held, unread = {}, str(exc)
        skipped = set(skip)
        modules = module_index(held)
        for path in sorted(held.keys() | now.files.keys()):
            if path in skipped:
                continue
            was, is_ = held.get(path), now.files.get(path)
            if _content(was) == _content(is_):
                continue
            if in_skipped(path) and (was is None or (is_ is None and (root / path).exists())):
                # in a folder a snapshot holds only as a check names it: a file one seal
                # holds and the other does not was named by a check, not added or removed
                continue
            change = "added" if was is None else "removed" if is_ is None else "changed"
            side = sealed_side(tasks, path, change, modules)
            if unread is not None and side is None:
                side = "the last seal's snapshot cannot be compared"
            found[path] = Change(path, change, was, is_, side)
    # the protected and hidden inputs by their sealed hashes: a git-ignored key, or one under
    # a folder the snapshot skips, is held here
    for kind, was_all, now_all in (
        ("a protected input", dict(sealed.protected), dict(fresh.protected)),
        ("a hidden input", dict(sealed.hidden), dict(fresh.hidden)),
    ):
        for path in sorted(was_all.keys() | now_all.keys()):
            was_h, now_h = was_all.get(path), now_all.get(path)
            if was_h == now_h or path in found:
                continue
            change = "removed" if now_h is None else "added" if was_h is None else "changed"
            before = None if was_h is None else f"sha256:{was_h}"
            after = None if now_h is None else f"sha256:{now_h}"
            found[path] = Change(path, change, before, after, kind)
    return Changes(tuple(found[p] for p in sorted(found)), unread)


def _content(identity: str | None) -> str | None:
    return None if identity is None else identity.split(";stat:", 1)[0]


def accepted_body(accepted: Sequence[Change], every: bool) -> dict[str, Any]:
    """What the seal's ledger line holds of the changes the user took on a check's side."""
    if not accepted:
        return {}
    return {
        "accepted": [c.to_json() for c in accepted],
        **({"accept_changes": True} if every else {}),
    }
