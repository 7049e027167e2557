"""The fence: what neither the sandbox nor a worker's tools may reach, whatever the spelling.

Hidden (seen as absent): every directory named `.groundskeeper` (a plan's control plane),
and `$GROUNDSKEEPER_HOME` (keys, caches, witness), by name and by identity; a plan's hidden
inputs (`:hide:`), by identity and, for names made later, by pattern. Read-only: a running
plan's file; protected inputs, by identity and by pattern (`PathRules`, read by
`groundskeeper.path_patterns`), so a file made or renamed under a protected pattern after
the run started is protected too. Pinned (never renamed or removed): the directories leading
to those, so the supervisor's paths stay true. Paths are judged one real component at a time
by `preview1`, `confine` and the worker's `Toolbox`; this module only says what is fenced.

Fences in force: the process's (`enforced`: every sandbox run and tool call) and, on top,
the one `binding` puts on the current thread for the work it does (a worker's attempt: its
task's protection and the run's hidden inputs, which its checks must still see). A fence may
carry `Refusals`, where every layer that refuses a change in its name notes the real path
(a worker's attempt: the supervisor names the protected inputs it tried to change).
"""

from __future__ import annotations

import fcntl
import os
import stat
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from groundskeeper.fastclass import fastclass, field
from groundskeeper.path_patterns import PathPatterns

#: Directory names hidden wherever they appear (compared case-insensitively).
HIDDEN_NAMES = frozenset({".groundskeeper"})

Identity = tuple[int, int]  # (st_dev, st_ino)

#: `refusal`'s answer for a name that must look absent (a hidden input): callers say ENOENT.
ABSENT = "no such file or directory"
PROTECTED = "protected by the plan"
#: `PathRules.refusal`'s answer for a new name beside a file the rules allow (a test file the
#: task may change): an edit in place makes a temporary file there and renames it over the
#: allowed one (`sed -i`, an atomic save), so the fence lets a name not there yet be made,
#: noted in the `Refusals` (`staged`); it must be gone when the attempt ends (adversary-17
#: F11). Without a witness to note it in, it is PROTECTED.
STAGED = "staged beside an allowed file"
#: How many names a renamed or removed directory may hold for its contents to be judged one
#: by one against the pattern rules; past that the move is refused.
MAX_MOVED_NAMES = 10_000
_MAX_HIDDEN_NAMES = 10_000  # names the hidden patterns may cover (as protect.MAX_PROTECTED)


class Refusals:
    """The real paths a fence refused to let change (a write, a rename, a removal, a link),
    in the order refused; safe from any thread. A record, never a decision: the layer that
    refused has already answered the guest."""

    def __init__(self, staged: tuple[str, ...] = ()) -> None:
        self._paths: list[str] = []
        self._lock = threading.Lock()
        #: names made under a protected pattern beside an allowed file (`STAGED`), as real
        #: paths: the worker's own temporaries, to be gone when its attempt ends
        self._staged: dict[str, None] = dict.fromkeys(staged)

    def stage(self, real: str) -> None:
        with self._lock:
            if len(self._staged) < MAX_NOTED:
                self._staged[real] = None

    def is_staged(self, real: str) -> bool:
        with self._lock:
            return real in self._staged

    def staged(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._staged)

    def add(self, real: str) -> None:
        with self._lock:
            if len(self._paths) < MAX_NOTED and real not in self._paths:
                self._paths.append(real)

    def paths(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(self._paths)


#: How many refused paths one `Refusals` keeps (a flood of refusals is noted by its first).
MAX_NOTED = 1_000


@fastclass(frozen=True, slots=True)
class PathRules:
    """Pattern rules over one workdir (`root`, a real path): a name under `conceal` is
    absent and never made; a name under `keep` is never made, changed, renamed or removed,
    unless `allow` covers it too (a new test file the task asks for, under its contract's
    test paths)."""

    root: str
    keep: tuple[str, ...] = ()
    conceal: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()

    def refusal(self, relative: str, *, is_dir: bool = False) -> str | None:
        if self.conceal and PathPatterns(self.conceal).covers(relative, is_dir=is_dir):
            return ABSENT
        if self.keep and PathPatterns(self.keep).covers(relative, is_dir=is_dir):
            if self.allow and PathPatterns(self.allow).covers(relative, is_dir=is_dir):
                return None
            if self.allow and not is_dir and _temporary(relative) and _beside(self.allow, relative):
                return STAGED
            return PROTECTED
        return None

    def inside(self, real: str) -> str | None:
        """`real` relative to the root (`/`-separated), '' for the root, None outside it."""
        if real == self.root:
            return ""
        if real.startswith(self.root + os.sep):
            return real[len(self.root) + 1 :].replace(os.sep, "/")
        return None


@fastclass(frozen=True, slots=True)
class Fence:
    hidden: frozenset[Identity] = frozenset()
    hidden_paths: tuple[str, ...] = ()  # real paths of the hidden directories, for string checks
    pinned: frozenset[Identity] = frozenset()
    read_only: frozenset[tuple[int, int, str]] = frozenset()  # (parent dev, ino, folded name)
    read_only_paths: tuple[str, ...] = ()  # the same files by path, for their hard links
    protected: frozenset[tuple[int, int, str]] = frozenset()  # a plan's protected inputs
    protected_ids: frozenset[Identity] = frozenset()  # the same files, under any other name
    hidden_files: frozenset[Identity] = frozenset()  # hidden inputs (files, links), by identity
    rules: tuple[PathRules, ...] = ()  # protected and hidden patterns, for names made later
    #: where refusals to change are noted (a bound worker's attempt), compared by identity
    witnesses: tuple[Refusals, ...] = field(default=(), compare=False)
    hidden_inodes: frozenset[int] = field(init=False)  # for a listing's quick first look

    def __post_init__(self) -> None:
        inodes = {ino for _, ino in self.hidden} | {ino for _, ino in self.hidden_files}
        object.__setattr__(self, "hidden_inodes", frozenset(inodes))

    @property
    def keeps_files(self) -> bool:
        """Whether some file is read-only, protected or hidden (a write is looked at first)."""
        return bool(self.read_only or self.protected or self.rules or self.hidden_files)

    def hides_name(self, name: str | bytes) -> bool:
        text = os.fsdecode(name) if isinstance(name, bytes) else name
        return text.casefold() in HIDDEN_NAMES

    def hides_entry(self, entry: os.DirEntry[str]) -> bool:
        """A directory listing's entry to leave out: a hidden name, or a hidden directory."""
        return self.hides_name(entry.name) or (
            entry.inode() in self.hidden_inodes and self.hides(entry.stat(follow_symlinks=False))
        )

    def hides(self, info: os.stat_result) -> bool:
        """A directory or a hidden input (by identity) the sandbox must treat as absent."""
        identity = (info.st_dev, info.st_ino)
        if self.hidden_files and identity in self.hidden_files:
            return True
        return stat.S_ISDIR(info.st_mode) and identity in self.hidden

    def hides_path(self, root: str, relative: str) -> bool:
        """Whether `relative`, a symlink-free path below the real directory `root`, passes
        through a hidden name, lies in a hidden directory, is a hidden input or lies under
        a hidden pattern."""
        if any(self.hides_name(part) for part in relative.split(os.sep)):
            return True
        real = os.path.join(root, relative)
        if any(real == p or real.startswith(p + os.sep) for p in self.hidden_paths):
            return True
        return self.rule_refusal(real) == ABSENT

    def rule_refusal(self, real: str, *, is_dir: bool = False) -> str | None:
        """What the pattern rules say of the real path `real` (ABSENT, PROTECTED or None). A
        name `STAGED` beside an allowed file: None when it is not there yet (noted in the
        witnesses) or a witness noted it so already, else PROTECTED."""
        found: str | None = None
        for rules in self.rules:
            relative = rules.inside(real)
            if relative:
                found = rules.refusal(relative, is_dir=is_dir) or found
                if found == ABSENT:
                    return found
        if found != STAGED:
            return found
        if not self.witnesses:
            return PROTECTED
        if any(w.is_staged(real) for w in self.witnesses):
            return None
        if os.path.lexists(real):
            return PROTECTED  # there already, and no temporary of this attempt's
        for witness in self.witnesses:
            witness.stage(real)
        return None

    def refusal_at(self, parent: int, name: str | bytes) -> str | None:
        """Why `name` in the open directory `parent` may not be made or changed: ABSENT for
        a hidden input (which must look absent), else a reason to show, or None."""
        text = os.fsdecode(name) if isinstance(name, bytes) else name
        if self.hidden_files:
            try:
                info = os.stat(text, dir_fd=parent, follow_symlinks=False)
            except OSError:
                info = None
            if info is not None and self.hides(info):
                return ABSENT
        why = self.refusal(os.fstat(parent), text)
        if why is not None or not self.rules:
            return why
        directory = directory_path(parent)
        if directory is None:
            return PROTECTED  # where it is cannot be told: refused, not guessed
        return self.rule_refusal(os.path.join(directory, text))

    def tree_refusal(
        self, parent: int, name: str | bytes, to: tuple[int, str | bytes] | None = None
    ) -> str | None:
        """What the pattern rules say of `name` in `parent` and, when it is a directory, of
        every name under it — at `to` (a directory fd and a new name) when it is about to be
        renamed there, else where it is (about to be removed or moved away)."""
        if not self.rules:
            return None
        text = os.fsdecode(name) if isinstance(name, bytes) else name
        try:
            is_dir = stat.S_ISDIR(os.stat(text, dir_fd=parent, follow_symlinks=False).st_mode)
        except OSError:
            return None
        directory = directory_path(parent)
        where = directory if to is None else directory_path(to[0])
        if directory is None or where is None:
            return PROTECTED  # where it is cannot be told: refused, not guessed
        top = os.path.join(directory, text)
        landing = top if to is None else os.path.join(where, os.fsdecode(to[1]))
        why = self.rule_refusal(landing, is_dir=is_dir)
        if not is_dir or why == ABSENT:
            return why
        seen = 0
        for base, dirs, files in os.walk(top, followlinks=False):
            inner = os.path.relpath(base, top)
            for entry in dirs + files:
                seen += 1
                if seen > MAX_MOVED_NAMES:
                    return f"{PROTECTED} (a directory of more than {MAX_MOVED_NAMES} names)"
                moved = os.path.normpath(os.path.join(landing, inner, entry))
                why = why or self.rule_refusal(moved, is_dir=entry in dirs)
                if why == ABSENT:
                    return why
        return why

    def note(self, why: str, where: int | str | None, name: str | bytes = "") -> str:
        """Note a refusal to change `name` in the open directory `where` (an fd), or the path
        `where` itself (a real path, or an fd of an open file when `name` is empty), for
        the witnesses this fence carries; `why`, for the caller to answer with."""
        if not self.witnesses:
            return why
        base = directory_path(where) if isinstance(where, int) else where
        if base is None:
            return why  # where it is cannot be told: the refusal stands, unnamed
        text = os.fsdecode(name) if isinstance(name, bytes) else name
        real = os.path.normpath(os.path.join(base, text)) if text else base
        for witness in self.witnesses:
            witness.add(real)
        return why

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
            return PROTECTED
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
            self.hidden_files | other.hidden_files,
            self.rules + other.rules,
            self.witnesses + tuple(w for w in other.witnesses if w not in self.witnesses),
        )


#: Name endings a test runner or Python reads by name (a module, a path file, pytest's
#: configuration): never a temporary file's, even beside a file the task may change.
_READ_BY_NAME = (".py", ".pyc", ".pyw", ".pth", ".so", ".ini", ".toml", ".cfg")


def _temporary(relative: str) -> bool:
    """Whether `relative` could be an edit in place's temporary file (`sed -i`'s
    `sedXXXXXX`, an editor's `.name.tmp`): no name Python or pytest reads by its ending."""
    return not relative.rpartition("/")[2].casefold().endswith(_READ_BY_NAME)


def _beside(allow: tuple[str, ...], relative: str) -> bool:
    """Whether `relative` lies in the directory of a file `allow` names (a plain path), or
    under the directory a pattern's first glob starts below (`tests/**/test_*.py`)."""
    folder = relative.rpartition("/")[0]
    for pattern in allow:
        parts = pattern.strip("/").split("/")
        glob = next((i for i, p in enumerate(parts) if any(c in p for c in "*?[")), None)
        if glob is None:
            if "/".join(parts[:-1]) == folder:
                return True
        elif folder == "/".join(parts[:glob]) or (
            "**" in parts[glob:] and folder.startswith("/".join(parts[:glob]) + "/")
        ):
            return True
    return False


def directory_path(fd: int) -> str | None:
    """The real path an open directory has now (a rename since it was opened included), or
    None when the system cannot say."""
    if sys.platform.startswith("linux"):
        try:
            return os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return None
    getpath = getattr(fcntl, "F_GETPATH", None)
    if getpath is None:
        return None
    try:
        raw = fcntl.fcntl(fd, getpath, bytes(1024))
    except OSError:
        return None
    return os.fsdecode(raw.split(b"\0", 1)[0])


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


def protecting(
    workdir: Path,
    files: list[str],
    patterns: tuple[str, ...] = (),
    witness: Refusals | None = None,
    allow: tuple[str, ...] = (),
) -> Fence:
    """A fence keeping `files` (relative to `workdir`, regular files) as they are: no write,
    rename, removal or link over them, nor a move of a directory above them; and every name
    `patterns` cover, made or renamed there later, as well — but a name `allow` covers.
    Each refusal to change is noted in `witness`, when given."""
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
        pinned=frozenset(pinned),
        protected=frozenset(entries),
        protected_ids=frozenset(ids),
        rules=(PathRules(str(root), keep=patterns, allow=allow),) if patterns else (),
        witnesses=(witness,) if witness is not None else (),
    )


def hiding_inputs(workdir: Path, files: list[str], patterns: tuple[str, ...]) -> Fence:
    """A fence making `files` (relative to `workdir`: the hidden inputs found at run start)
    and every other name `patterns` cover then (a link leading nowhere or to a directory,
    a directory) absent by identity, and every name they cover absent by path, never made."""
    root = Path(os.path.realpath(workdir))
    ids: set[Identity] = set()
    paths: list[str] = []
    pinned: set[Identity] = set()
    directories, names = _covered(root, patterns)
    for path in [root / relative for relative in files] + names:
        try:
            own = os.stat(path, follow_symlinks=False)
        except OSError:
            continue
        ids.add((own.st_dev, own.st_ino))
        paths.append(str(path))
        pinned |= _ancestors(path.parent)
    return Fence(
        hidden=frozenset(i for i in map(_identity, directories) if i is not None),
        hidden_paths=tuple(dict.fromkeys(paths + [str(d) for d in directories])),
        pinned=frozenset(pinned),
        hidden_files=frozenset(ids),
        rules=(PathRules(str(root), conceal=patterns),) if patterns else (),
    )


def _covered(root: Path, patterns: tuple[str, ...]) -> tuple[list[Path], list[Path]]:
    """The directories under `root` the patterns cover as directories (`tests/`, topmost;
    a link to one counts as one), and every name they cover (files, links, directories),
    none looked at behind a covered directory or the control plane."""
    rules = PathPatterns(patterns)
    directories: list[Path] = []
    names: list[Path] = []
    if not rules:
        return directories, names
    for base, dirs, files in os.walk(root, followlinks=False):
        keep: list[str] = []
        for name in dirs:
            relative = os.path.relpath(os.path.join(base, name), root).replace(os.sep, "/")
            if name.casefold() in HIDDEN_NAMES:
                continue
            if rules.covers(relative, is_dir=True):
                directories.append(Path(base) / name)  # what is under it is hidden with it
                names.append(Path(base) / name)
            else:
                keep.append(name)
        dirs[:] = keep
        for name in files:
            relative = os.path.relpath(os.path.join(base, name), root).replace(os.sep, "/")
            if rules.covers(relative):
                names.append(Path(base) / name)
        if len(names) > _MAX_HIDDEN_NAMES:
            raise ValueError(f"the hidden patterns cover more than {_MAX_HIDDEN_NAMES} names")
    return directories, names


def groundskeeper_home() -> Path:
    """$GROUNDSKEEPER_HOME, else ~/.config/groundskeeper: where all user state lives."""
    home = os.environ.get("GROUNDSKEEPER_HOME")
    return Path(home) if home else Path.home() / ".config" / "groundskeeper"


# ---- the fences in force in this process -------------------------------------------------

_lock = threading.Lock()
_registered: list[Fence] = []
_cache: dict[str, Fence] = {}  # by $GROUNDSKEEPER_HOME's spelling: the home's fence + all runs'
# the fence `binding` put on this thread's work, with the union last computed from it
_bound: ContextVar[tuple[Fence, dict[str, Fence]] | None] = ContextVar("fence", default=None)


@contextmanager
def binding(fence: Fence) -> Iterator[Fence]:
    """Add `fence` to what the sandbox runs and tool calls of the current thread (this
    context) respect, on top of the process's: a worker's attempt, bound by its task's
    protection and the run's hidden inputs while the checks of other threads are not."""
    outer = _bound.get()
    joined = fence if outer is None else outer[0].union(fence)
    token = _bound.set((joined, {}))
    try:
        yield joined
    finally:
        _bound.reset(token)


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
    """The union of the enforced fences, the home's and the one bound to this thread's work;
    cheap when nothing changed."""
    bound = _bound.get()
    if bound is None:
        return _process_fence()
    fence, unions = bound
    base = _process_fence()
    joined = unions.get("base")
    if joined is None or unions.get("of") is not base:
        joined = base.union(fence)
        unions.clear()
        unions.update({"base": joined, "of": base})
    return joined


def _process_fence() -> Fence:
    # keyed by the variables that spell the home, read as they are (every sandbox run and
    # tool call asks this several times; making the home's Path each time cost ~10 µs)
    spelled = os.environ.get("GROUNDSKEEPER_HOME") or "~" + os.environ.get("HOME", "")
    found = _cache.get(spelled)
    if found is not None:
        return found
    with _lock:
        fence = hiding(groundskeeper_home())
        for other in _registered:
            fence = fence.union(other)
        if fence.hidden:  # a home that does not exist yet is looked at again next time
            _cache[spelled] = fence
    return fence
