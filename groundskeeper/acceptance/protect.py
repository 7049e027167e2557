"""Protected inputs in a workdir: the files a task's protected patterns (`plan.properties`:
`:protect:`, `#+PROTECT:`, the schemas of its contracts) match there, and the hashes a run
seals of them. The sandbox's fence enforces them; the runner re-hashes them before each
check. It does not read the plan.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

from groundskeeper.path_patterns import PathPatterns, normal_path
from groundskeeper.sandbox.fence import HIDDEN_NAMES

#: How many files one plan may protect (a pattern like `**` must not hash a whole disk).
MAX_PROTECTED = 10_000


def hidden_bytecode(workdir: Path, patterns: Iterable[str]) -> tuple[str, ...]:
    """The bytecode CPython compiled of each hidden module (`__pycache__/NAME.*.pyc` beside a
    hidden `NAME.py`, as anchored patterns): a copy of its source a user's earlier test run
    left readable beside it (adversary-21 F9). Hidden with it; a hidden directory covers its
    own `__pycache__` already."""
    found = []
    for relative in matched_files(workdir, patterns):
        folder, _, name = relative.rpartition("/")
        if name.endswith(".py"):
            cache = f"{folder}/__pycache__" if folder else "__pycache__"
            found.append(f"/{cache}/{name[:-3]}.*.pyc")
    return tuple(found)


def matched_files(workdir: Path, patterns: Iterable[str]) -> list[str]:
    """The regular files inside `workdir` the patterns cover now (relative, sorted; read by
    `groundskeeper.path_patterns`, gitignore's rules), and each covered link to a regular
    file inside it with its target. Links leading out of the workdir and anything behind
    the fence are not followed; no directory link is walked into."""
    rules = PathPatterns(patterns)
    if not rules:
        return []
    root = os.path.realpath(workdir)
    found: set[str] = set()
    for directory, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = [d for d in dirs if d.casefold() not in HIDDEN_NAMES]
        base = os.path.relpath(directory, root)
        for name in files + [d for d in dirs if os.path.islink(os.path.join(directory, d))]:
            relative = name if base == "." else f"{base}/{name}"
            if not rules.covers(relative):
                continue
            _add(root, relative, found)
            if len(found) > MAX_PROTECTED:
                raise ValueError(f"the patterns match more than {MAX_PROTECTED} files")
    return sorted(found)


def is_plain(pattern: str) -> bool:
    """Whether a path pattern is a plain path, with no glob character (`*`, `?`, `[`)."""
    return not any(c in pattern for c in "*?[")


def named_files(workdir: Path, pattern: str) -> list[str]:
    """The files one path argument names (a contract's FILE, `:gate-files:`, `:judge-files:`),
    read by the one matcher: every regular file it covers now (`matched_files`), and, for a
    plain path that is not a directory, that path as spelled first, there or not — it names
    that very file, so that a case or a depth the matcher also covers cannot stand in for it.
    ValueError past `MAX_PROTECTED` files."""
    covered = matched_files(workdir, [pattern])
    spelled = normal_path(pattern.lstrip("/"))
    if spelled is None or not is_plain(pattern) or (workdir / spelled).is_dir():
        return covered
    return [spelled, *(f for f in covered if f != spelled)]


def _add(root: str, relative: str, found: set[str]) -> None:
    path = os.path.join(root, relative)
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return
    if stat.S_ISREG(info.st_mode):
        found.add(relative)
        return
    real = os.path.realpath(path)
    if stat.S_ISLNK(info.st_mode) and real.startswith(root + os.sep) and os.path.isfile(real):
        # a protected name that is a link protects the link and what it points to:
        # otherwise the file it reads could be rewritten under another name
        target = PurePosixPath(os.path.relpath(real, root))
        if not any(part.casefold() in HIDDEN_NAMES for part in target.parts):
            found.add(relative)
            found.add(target.as_posix())


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


def input_sha256(workdir: Path, relative: str) -> str | None:
    """What a protected input holds: a regular file's SHA-256; for a link inside the
    workdir, one over where it points and what its target holds; else None."""
    path = workdir / relative
    try:
        is_link = stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return None
    if not is_link:
        return file_sha256(path)
    root = os.path.realpath(workdir)
    real = os.path.realpath(path)
    if not real.startswith(root + os.sep):
        return None
    try:
        pointed = os.readlink(path)
    except OSError:
        return None
    inner = file_sha256(Path(real))
    return hashlib.sha256(f"link:{pointed}\n{inner}".encode("utf-8", "surrogatepass")).hexdigest()


def changed(workdir: Path, sealed: Mapping[str, str | None], paths: Iterable[str]) -> list[str]:
    """Which of `paths` no longer hash to what was sealed at run start."""
    return [p for p in paths if input_sha256(workdir, p) != sealed.get(p)]
