"""The fence: what neither the sandbox nor a worker's tools may reach, whatever the spelling.

Hidden (seen as absent): every directory named `.groundskeeper` (a plan's control plane),
and `$GROUNDSKEEPER_HOME` (keys, caches, witness), by name and by identity. Read-only: a
running plan's file. Pinned (never renamed or removed): the directories leading to those,
so the supervisor's paths stay true. Paths are judged one real component at a time by
`preview1`, `confine` and the worker's `Toolbox`; this module only says what is fenced.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

#: Directory names hidden wherever they appear (compared case-insensitively).
HIDDEN_NAMES = frozenset({".groundskeeper"})

Identity = tuple[int, int]  # (st_dev, st_ino)


@dataclass(frozen=True, slots=True)
class Fence:
    hidden: frozenset[Identity] = frozenset()
    hidden_paths: tuple[str, ...] = ()  # real paths of the hidden directories, for string checks
    pinned: frozenset[Identity] = frozenset()
    read_only: frozenset[tuple[int, int, str]] = frozenset()  # (parent dev, ino, folded name)
    read_only_paths: tuple[str, ...] = ()  # the same files by path, for their hard links
    protected: frozenset[tuple[int, int, str]] = frozenset()  # a plan's protected inputs
    protected_ids: frozenset[Identity] = frozenset()  # the same files, under any other name
    hidden_inodes: frozenset[int] = field(init=False)  # for a listing's quick first look

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden_inodes", frozenset(ino for _, ino in self.hidden))

    @property
    def keeps_files(self) -> bool:
        """Whether some file is read-only or protected (a write must be looked at first)."""
        return bool(self.read_only or self.protected)

    def hides_name(self, name: str | bytes) -> bool:
        text = os.fsdecode(name) if isinstance(name, bytes) else name
        return text.casefold() in HIDDEN_NAMES

    def hides_entry(self, entry: os.DirEntry[str]) -> bool:
        """A directory listing's entry to leave out: a hidden name, or a hidden directory."""
        return self.hides_name(entry.name) or (
            entry.inode() in self.hidden_inodes and self.hides(entry.stat(follow_symlinks=False))
        )

    def hides(self, info: os.stat_result) -> bool:
        """A directory (by identity) the sandbox must treat as absent."""
        return stat.S_ISDIR(info.st_mode) and (info.st_dev, info.st_ino) in self.hidden

    def hides_path(self, root: str, relative: str) -> bool:
        """Whether `relative`, a symlink-free path below the real directory `root`, passes
        through a hidden name or lies in a hidden directory."""
        if any(self.hides_name(part) for part in relative.split(os.sep)):
            return True
        real = os.path.join(root, relative)
        return any(real == p or real.startswith(p + os.sep) for p in self.hidden_paths)

    def pins(self, info: os.stat_result) -> bool:
        return stat.S_ISDIR(info.st_mode) and (info.st_dev, info.st_ino) in self.pinned

    def guards(self, parent: os.stat_result, name: str | bytes) -> bool:
        """`name` in directory `parent` is a read-only entry (a running plan's file, or a
        protected input)."""
        return self.refusal(parent, name) is not None

    def refusal(self, parent: os.stat_result, name: str | bytes) -> str | None:
        """Why `name` in directory `parent` may not be changed, or None."""
        if not self.read_only and not self.protected:
            return None
        text = os.fsdecode(name) if isinstance(name, bytes) else name
        key = (parent.st_dev, parent.st_ino, text.casefold())
        if key in self.read_only:
            return "the plan file of the running plan is read-only"
        if (parent.st_dev, parent.st_ino, text) in self.protected:
            return "protected by the plan"
        return None

    def is_read_only_file(self, info: os.stat_result) -> bool:
        """An open file that is a read-only one under another name (a hard link made before
        the run). Plan files are replaced on every write, so they are looked at now."""
        if (info.st_dev, info.st_ino) in self.protected_ids:
            return True
        if info.st_nlink < 2 or not self.read_only_paths:
            return False
        return (info.st_dev, info.st_ino) in {_identity(p) for p in self.read_only_paths}

    def union(self, other: Fence) -> Fence:
        return Fence(
            self.hidden | other.hidden,
            tuple(dict.fromkeys(self.hidden_paths + other.hidden_paths)),
            self.pinned | other.pinned,
            self.read_only | other.read_only,
            tuple(dict.fromkeys(self.read_only_paths + other.read_only_paths)),
            self.protected | other.protected,
            self.protected_ids | other.protected_ids,
        )


def _identity(path: str | Path) -> Identity | None:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def _ancestors(path: Path) -> frozenset[Identity]:
    found = {_identity(p) for p in [path, *path.parents]}
    return frozenset(i for i in found if i is not None)


def hiding(directory: Path) -> Fence:
    """A fence hiding `directory` and pinning the directories above it."""
    real = Path(os.path.realpath(directory))
    identity = _identity(real)
    if identity is None:
        return Fence(pinned=_ancestors(real.parent))
    return Fence(frozenset({identity}), (str(real),), _ancestors(real.parent))


def for_plan(plan_path: Path, control_root: Path) -> Fence:
    """The fence of a running plan: its control root hidden, the plan file read-only, the
    directories leading to both pinned."""
    plan_real = Path(os.path.realpath(plan_path))
    parent = os.stat(plan_real.parent)
    read_only = frozenset({(parent.st_dev, parent.st_ino, plan_real.name.casefold())})
    return hiding(control_root).union(Fence(read_only=read_only, read_only_paths=(str(plan_real),)))


def protecting(workdir: Path, files: list[str]) -> Fence:
    """A fence keeping `files` (relative to `workdir`, regular files) as they are: no write,
    rename, removal or link over them, nor a move of a directory above them."""
    root = Path(os.path.realpath(workdir))
    entries: set[tuple[int, int, str]] = set()
    ids: set[Identity] = set()
    pinned: set[Identity] = set()
    for relative in files:
        path = root / relative
        try:
            parent, own = os.stat(path.parent), os.stat(path, follow_symlinks=False)
        except OSError:
            continue
        entries.add((parent.st_dev, parent.st_ino, path.name))
        ids.add((own.st_dev, own.st_ino))
        pinned |= _ancestors(path.parent)
    return Fence(
        pinned=frozenset(pinned), protected=frozenset(entries), protected_ids=frozenset(ids)
    )


def groundskeeper_home() -> Path:
    """$GROUNDSKEEPER_HOME, else ~/.config/groundskeeper: where all user state lives."""
    home = os.environ.get("GROUNDSKEEPER_HOME")
    return Path(home) if home else Path.home() / ".config" / "groundskeeper"


# ---- the fences in force in this process -------------------------------------------------

_lock = threading.Lock()
_registered: list[Fence] = []
_cache: dict[str, Fence] = {}  # by $GROUNDSKEEPER_HOME's spelling: the home's fence + all runs'


@contextmanager
def enforced(fence: Fence) -> Iterator[Fence]:
    """Add `fence` to what every sandbox run and tool call in this process respects."""
    with _lock:
        _registered.append(fence)
        _cache.clear()
    try:
        yield fence
    finally:
        with _lock:
            _registered.remove(fence)
            _cache.clear()


def active() -> Fence:
    """The union of the enforced fences and the home's; cheap when nothing changed."""
    home = str(groundskeeper_home())
    found = _cache.get(home)
    if found is not None:
        return found
    with _lock:
        fence = hiding(Path(home))
        for other in _registered:
            fence = fence.union(other)
        if fence.hidden:  # a home that does not exist yet is looked at again next time
            _cache[home] = fence
    return fence
