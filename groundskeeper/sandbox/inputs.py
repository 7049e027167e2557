"""A read set's facts observed again on disk (`read_set` records them): whether a verdict
that rested on them still rests on the same inputs. It reads only; what it finds is a yes or
no, never a verdict."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import groundskeeper.sandbox.fence as fences
import groundskeeper.sandbox.read_set as read_set
from groundskeeper.sandbox.confine import Workdir

__all__ = ["UNCHANGED", "sealed_facts", "unchanged"]

#: Why a DONE is kept without running its check: its read set still holds.
UNCHANGED = "inputs unchanged since its verdict"


def sealed_facts(
    sealed: Mapping[str, Any] | None,
    check_sha256: str,
    digests: dict[tuple[tuple[str, ...], ...], str] | None = None,
) -> tuple[tuple[str, ...], ...] | None:
    """The facts of a sealed read set (`record.backing`'s `reads`: a passing check's), when
    it was sealed for this check by this sandbox and its digest is theirs; None otherwise.
    A run's sweep and the hook's judge a carried DONE by them alike. `digests` keeps the
    digests taken (a sweep's, for the many DONEs that share a set)."""
    if sealed is None or sealed.get("check_sha256") != check_sha256:
        return None
    if sealed.get("version") != read_set.sandbox_version():
        return None
    listed = sealed.get("facts")
    if not isinstance(listed, list):
        return None
    facts: list[tuple[str, ...]] = []
    for fact in listed:
        if not isinstance(fact, list) or not all(isinstance(part, str) for part in fact):
            return None
        facts.append(tuple(fact))
    found = tuple(facts)
    digest = digests.get(found) if digests is not None else None
    if digest is None:
        digest = read_set.digest(found)
        if digests is not None:
            digests[found] = digest
    if digest != sealed.get("sha256"):
        return None
    return found


def unchanged(
    workdir: str | Path, facts: Sequence[read_set.Fact], *, real: bool = False, hashed: bool = True
) -> bool:
    """Whether every fact still holds on disk now (any doubt: False). `real`: `workdir` is
    already its real path (a caller asking of many sets at once resolves it once).
    `hashed=False`: the `bytes` facts are not hashed again (the recorder that took them has
    just found each file's ctime as it was when it was hashed: `ReadSet.steady`)."""
    root = str(workdir) if real else os.path.realpath(workdir)
    if read_set.hides_inputs(fences.active()):
        return False  # what is seen then depends on whose fence: run it
    replay = None
    for fact in facts:
        try:
            kind = fact[0]
            if kind == "node":
                if read_set.node(root, fact[1]) != (fact[2], fact[3]):
                    return False
            elif kind == "bytes":
                if hashed and _bytes(root, fact[1]) != fact[2]:
                    return False
            elif kind == "stat":
                path = os.path.join(root, fact[1]) if fact[1] else root
                if read_set.stat_fields(os.lstat(path)) != fact[2]:
                    return False
            elif kind == "list":
                if _listing(root, fact[1]) != fact[2]:
                    return False
            elif kind.startswith("sh-"):
                if replay is None:
                    replay = Workdir(root, recording=False)
                if replay.replay(fact) != fact[-1]:
                    return False
            else:
                return False
        except (OSError, ValueError, IndexError):
            return False
    return True


def _bytes(root: str, rel: str) -> str | None:
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    fd = os.open(os.path.join(root, rel), flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return read_set.file_digest(fd)
    finally:
        os.close(fd)


def _listing(root: str, rel: str) -> str:
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(os.path.join(root, rel) if rel else root, flags)
    try:
        return read_set.listing_digest(read_set.list_directory(fd, fences.active()))
    finally:
        os.close(fd)
