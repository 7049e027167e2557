"""What the files a task's `changed` contracts name held when the task FIRST started, across
attempts and runs: hashed as its first start is sealed (`task-start`'s `watched`), read back
from the record when a later run starts it again, so content put back as it was before any
work is never a change — not in a second attempt, not after a resume.

It owns that map and its sealed form (inline in the step when small, else in the output store
by its hash, which the step seals). It does not judge `changed` (`acceptance.contracts`) and
does not seal (`sealing`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from groundskeeper.acceptance.attempt_record import AttemptRecord, OutputStore
from groundskeeper.acceptance.check import sha256_text
from groundskeeper.acceptance.protect import named_files

if TYPE_CHECKING:
    from groundskeeper.acceptance.contracts import WorkFiles

__all__ = ["WATCHED_INLINE_BYTES", "FirstStart", "first_start", "sealed_form"]

#: A first-start map longer than this (as JSON) is sealed by its hash, its text kept in the
#: output store (a 64 KiB ledger line holds the rest of the step).
WATCHED_INLINE_BYTES = 16 * 1024


@dataclass(frozen=True, slots=True)
class FirstStart:
    """The patterns watched, each covered file's SHA-256 at the task's first start (None:
    absent), and the patterns whose first start cannot be told (too many files, or a
    sealed map the store no longer holds): `changed` on those cannot hold."""

    patterns: tuple[str, ...] = ()
    hashes: Mapping[str, str | None] = field(default_factory=dict)
    unknown: tuple[str, ...] = ()


def first_start(
    files: WorkFiles,
    patterns: tuple[str, ...],
    sealed: Mapping[str, Any] | None,
    store: OutputStore,
) -> FirstStart:
    """The map for a task starting now: what the record sealed at an earlier start (its last
    `task-start` with `watched_patterns`), and, for a pattern no earlier start watched, every
    file it covers hashed now."""
    known, hashes = _read_back(sealed, store)
    unknown: list[str] = []
    merged: dict[str, str | None] = dict(hashes or {})
    for pattern in patterns:
        if hashes is None and pattern in known:
            unknown.append(pattern)  # watched before, but what it held then is lost
            continue
        if pattern in known:
            continue  # every file it covered then is listed; one made since was absent
        try:
            covered = named_files(files.workdir, pattern)
        except ValueError:
            unknown.append(pattern)
            continue
        from groundskeeper.acceptance.contracts import ContractContext

        now = ContractContext(files, AttemptRecord(()))
        for path in covered:
            merged.setdefault(path, now.sha256_now(path))
    return FirstStart(patterns, merged, tuple(unknown))


def sealed_form(watched: FirstStart, store: OutputStore) -> dict[str, Any]:
    """`task-start`'s fields for the map: `watched_patterns`, `watched` (the list, or null
    when it is long and kept in the store), `watched_sha256`."""
    listed = [{"path": p, "sha256": h} for p, h in sorted(watched.hashes.items())]
    text = json.dumps(listed, sort_keys=True, ensure_ascii=True, separators=(",", ":"))
    inline = len(text) <= WATCHED_INLINE_BYTES
    if not inline:
        store.put(text)
    known = [p for p in watched.patterns if p not in watched.unknown]
    return {
        "watched_patterns": known,
        "watched": listed if inline else None,
        "watched_sha256": sha256_text(text),
    }


def _read_back(
    sealed: Mapping[str, Any] | None, store: OutputStore
) -> tuple[tuple[str, ...], dict[str, str | None] | None]:
    """(the patterns an earlier start watched, the map it sealed; None when it is lost)."""
    if sealed is None:
        return (), {}
    patterns = tuple(p for p in sealed.get("watched_patterns") or () if isinstance(p, str))
    listed = sealed.get("watched")
    if not isinstance(listed, list):
        digest = sealed.get("watched_sha256")
        text = store.get(digest) if isinstance(digest, str) else None
        try:
            listed = json.loads(text) if text is not None else None
        except ValueError:
            listed = None
    if not isinstance(listed, list):
        return patterns, None
    hashes: dict[str, str | None] = {}
    for item in listed:
        if isinstance(item, Mapping) and isinstance(item.get("path"), str):
            sha = item.get("sha256")
            hashes[item["path"]] = sha if isinstance(sha, str) else None
    return patterns, hashes
