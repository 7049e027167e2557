"""Protected inputs: the files a plan says workers may not change (`:protect:` on a task,
inherited by its subtree; `#+PROTECT:` for the whole file), as patterns, as the files they
match in a workdir, and as the hashes a run seals. The sandbox's fence enforces them; the
runner re-hashes them before each check; lint asks whether a compared file is covered.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

from groundskeeper.plan import Heading, Plan
from groundskeeper.plan_keywords import file_keywords
from groundskeeper.sandbox.fence import HIDDEN_NAMES

#: How many files one plan may protect (a pattern like `**` must not hash a whole disk).
MAX_PROTECTED = 10_000


def patterns_by_task(plan: Plan) -> dict[Heading, tuple[str, ...]]:
    """Every task's protected patterns: the file's, its ancestors' and its own `:protect:`."""
    found: dict[Heading, tuple[str, ...]] = {}
    base = tuple(p for value in file_keywords(plan.text, "PROTECT") for p in value.split())

    def visit(headings: Iterable[Heading], inherited: tuple[str, ...]) -> None:
        for heading in headings:
            own = heading.get_property("protect")
            mine = inherited + tuple(own.split() if own else ())
            if heading.is_task:
                found[heading] = mine
            visit(heading.children, mine)

    visit(plan.roots, base)
    return found


def covers(patterns: Iterable[str], relative: str) -> bool:
    """Whether `relative` (a path inside the workdir) is one of the patterns' files."""
    path = PurePosixPath(os.path.normpath(relative)).as_posix()
    return any(fnmatch.fnmatchcase(path, os.path.normpath(p)) for p in patterns)


def matched_files(workdir: Path, patterns: Iterable[str]) -> list[str]:
    """The regular files inside `workdir` the patterns match now (relative, sorted). Links
    and anything behind the fence are not followed."""
    root = Path(os.path.realpath(workdir))
    found: set[str] = set()
    for pattern in dict.fromkeys(patterns):
        if pattern.startswith("/") or ".." in PurePosixPath(pattern).parts:
            continue  # lint says so; a run protects only what lies inside the workdir
        for candidate in root.glob(pattern):
            relative = candidate.relative_to(root)
            if any(part.casefold() in HIDDEN_NAMES for part in relative.parts):
                continue
            try:
                info = os.stat(candidate, follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode) and os.path.realpath(candidate).startswith(
                str(root) + os.sep
            ):
                found.add(relative.as_posix())
            if len(found) > MAX_PROTECTED:
                raise ValueError(f"the protected patterns match more than {MAX_PROTECTED} files")
    return sorted(found)


def file_sha256(path: Path) -> str | None:
    """The file's SHA-256, or None when it is gone or not a regular file (no link followed)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        digest = hashlib.sha256()
        while chunk := os.read(fd, 1 << 20):
            digest.update(chunk)
        return digest.hexdigest()
    finally:
        os.close(fd)


def changed(workdir: Path, sealed: Mapping[str, str | None], paths: Iterable[str]) -> list[str]:
    """Which of `paths` no longer hash to what was sealed at run start."""
    return [p for p in paths if file_sha256(workdir / p) != sealed.get(p)]
