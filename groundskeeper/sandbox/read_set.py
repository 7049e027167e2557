"""What one sandbox run read from its workdir, so that a verdict resting on the same inputs can
be told apart from one whose inputs changed, without running the command line again.

It owns the recorder (`ReadSet`, bound to the current context as a write journal is: the
commands of the thread that opened it note into it, no other thread's), the facts it keeps and
`sandbox.inputs.unchanged` observes every fact again on disk. The facts are named by real paths
relative to the workdir (`''` is the workdir itself):

- `node`  a name met on a path (a walk's component or its end): its kind, a link's target;
- `bytes` a regular file opened for reading: the SHA-256 of its content;
- `stat`  the fields a command was shown of a file (WASI's filestat: dev, ino, type, nlink,
          size, mtime, ctime; a recorded run shows the mtime as the access time, so that
          reading a file does not change what a later look sees);
- `list`  a directory listed: the entries as the command saw them (name, inode, type);
- `sh-…`  what the interpreter itself asked (`[[ -f x ]]`, `< file`, a glob, `cd`), with the
          answer it got, replayed through the same `confine.Workdir` code.

Fail closed: whatever the layer cannot name — the clock, randomness, sleeping, a write of any
kind, a file outside the workdir that is not the sandbox's own, a fence hiding inputs, more
facts than `MAX_FACTS` — taints the set, and a tainted set is never sealed (`facts()` is
None), so that check always runs again. It does not decide what a result means: the
supervisor seals the facts with the verdict and asks `inputs.unchanged` before trusting it
again.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import posixpath
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING

from groundskeeper.fastclass import fastclass, field
from groundskeeper.sandbox.preview1_abi import DIRECTORY, REGULAR_FILE, SYMBOLIC_LINK, UNKNOWN

if TYPE_CHECKING:
    from groundskeeper.sandbox.fence import Fence

__all__ = [
    "FORMAT",
    "MAX_FACTS",
    "MAX_FILES",
    "ReadSet",
    "current",
    "digest",
    "hides_inputs",
    "list_directory",
    "recording",
    "sandbox_version",
]

#: The shape of the facts; a set sealed under another is not trusted.
FORMAT = 1
#: The most facts one set keeps; past it the run is tainted (re-run every time).
MAX_FACTS = 4096
#: The most links one path's resolution follows (the host's own bound, ELOOP past it).
MAX_LINK_HOPS = 40
#: The most files one run's list of files read keeps; past it every file counts as read.
MAX_FILES = 100_000
_CHUNK = 1 << 16

Fact = tuple[str, ...]


@fastclass(eq=False)
class ReadSet:
    """The facts one check's run rests on, or the reason it rests on something unnameable."""

    root: str  # the workdir's real path
    found: dict[Fact, None] = field(default_factory=dict)  # insertion-ordered, deduplicated
    tainted: str | None = None
    # each file hashed as it was opened: its ctime then (any write since changes it)
    ctimes: dict[str, int] = field(default_factory=dict)
    # every workdir file opened for reading, kept whether or not the set is tainted: what
    # the verdict's rule on a check's inputs reads (`acceptance.check_inputs`); None past
    # `MAX_FILES` files (then every file counts as read)
    files: dict[str, None] | None = field(default_factory=dict)
    # every symbolic link a path of the run passed through or ended at and followed
    # (relative path → its target), kept whether or not the set is tainted: what the rule on
    # a check's links reads (`acceptance.check_links`); None past `MAX_FILES` links
    links: dict[str, str] | None = field(default_factory=dict)
    # every workdir directory (never its top) the run listed, or tried to open for listing
    # and found missing (a glob, `os.listdir`, `ls`, `find`), kept whether or not the set is
    # tainted: a folder a check lists is an input of the check, though it read no file in
    # it (a loop over `glob("cases/*.in")` that runs zero times: adversary-17 F10); None
    # past `MAX_FILES` folders
    folders: dict[str, None] | None = field(default_factory=dict)

    def taint(self, why: str) -> None:
        if self.tainted is None:
            self.tainted = why

    def note(self, *fact: str) -> None:
        if self.tainted is not None:
            return
        self.found[fact] = None
        if len(self.found) > MAX_FACTS:
            self.taint("too many inputs")

    def relative(self, real: str | None) -> str | None:
        """`real` (a host path) relative to the workdir; None outside it (or unknown)."""
        if real is None:
            return None
        if real == self.root:
            return ""
        if real.startswith(self.root + os.sep):
            return real[len(self.root) + 1 :]
        return None

    def read_files(self) -> tuple[str, ...] | None:
        """Every workdir file opened for reading (relative, `/`-separated, sorted), tainted
        or not; None when there were too many to keep."""
        return None if self.files is None else tuple(sorted(self.files))

    def file_read(self, rel: str) -> None:
        """The workdir file at `rel` was opened for reading (by a command, or by the shell's
        own `<` into a builtin: `read n < f`, `while read … done < f`)."""
        if self.files is not None:
            self.files[rel.replace(os.sep, "/")] = None
            if len(self.files) > MAX_FILES:
                self.files = None

    def listed_folders(self) -> tuple[str, ...] | None:
        """Every workdir folder listed or tried for listing (relative, `/`-separated, sorted),
        tainted or not; None when there were too many to keep."""
        return None if self.folders is None else tuple(sorted(self.folders))

    def folder(self, rel: str) -> None:
        """The folder at `rel` (relative to the workdir; `..` and the top itself ignored) was
        listed, or a listing of it was tried."""
        rel = posixpath.normpath(rel.replace(os.sep, "/"))
        if self.folders is None or rel in (".", "") or rel == ".." or rel.startswith("../"):
            return
        self.folders[rel] = None
        if len(self.folders) > MAX_FILES:
            self.folders = None

    def folder_at(self, parent_real: str | None, name: bytes) -> None:
        """A directory `name` in the one at `parent_real` opened to be listed (found or not)."""
        where = self.relative(parent_real)
        if where is not None:
            self.folder(posixpath.join(where.replace(os.sep, "/"), os.fsdecode(name)))

    def facts(self) -> tuple[Fact, ...] | None:
        """The facts, sorted; None when the run read something no fact can name."""
        if self.tainted is not None:
            return None
        return tuple(sorted(self.found))

    def steady(self) -> bool:
        """Whether no file hashed as it was opened has been written since (its ctime, which
        nothing can set back): what a command read of it after the open is what was hashed,
        even if it was changed and changed back meanwhile."""
        for rel, ctime in self.ctimes.items():
            try:
                if os.lstat(os.path.join(self.root, rel)).st_ctime_ns != ctime:
                    return False
            except OSError:
                return False
        return True

    def passed_links(self) -> tuple[tuple[str, str], ...] | None:
        """Every link the run's paths went through (relative, `/`-separated path, target),
        sorted; None when there were too many to keep."""
        if self.links is None:
            return None
        return tuple(sorted(self.links.items()))

    def link_followed(self, rel: str, target: str) -> None:
        """The link at `rel` (relative to the workdir), pointing at `target`, was followed."""
        if self.links is None:
            return
        self.links.setdefault(rel.replace(os.sep, "/"), target)
        if len(self.links) > MAX_FILES:
            self.links = None

    def links_on(self, path: str) -> None:
        """`link_followed` for each link resolving `path` (relative to the workdir, `..`
        taken after the links before it, as the host resolves it) follows."""
        for rel, target in links_on(self.root, path):
            self.link_followed(rel, target)

    # -- what the WASI layer tells it

    def link_at(self, parent_real: str | None, name: bytes, target: bytes) -> None:
        """A link `name` in the directory at `parent_real`, pointing at `target`, followed."""
        where = self.relative(parent_real)
        if where is None:
            return  # the walk refuses what is outside; `node_at` taints the set
        self.link_followed(posixpath.join(where, os.fsdecode(name)), os.fsdecode(target))

    def node_at(self, parent_real: str | None, name: bytes) -> None:
        """A name met in the directory at `parent_real`, observed now (lstat)."""
        where = self.relative(parent_real)
        if where is None:
            self.taint("a name outside the workdir")
            return
        rel = os.path.join(where, os.fsdecode(name)) if where else os.fsdecode(name)
        self.note("node", rel, *node(self.root, rel))

    def opened(self, real: str | None, fd: int) -> None:
        """A file or directory open as `fd` at `real` (a host path), to be read."""
        rel = self.relative(real)
        if rel is None:
            self.taint("a file outside the workdir")
            return
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode):
            self.file_read(rel)
            if self.tainted is not None:
                return
            self.note("bytes", rel, file_digest(fd))
            self.ctimes.setdefault(rel, info.st_ctime_ns)
        elif not stat.S_ISDIR(info.st_mode):
            self.taint("not a regular file or a directory")

    def shown(self, real: str | None, info: os.stat_result) -> None:
        """A file's stat fields, as a command was shown them."""
        rel = self.relative(real)
        if rel is None:
            self.taint("a stat outside the workdir")
            return
        self.note("stat", rel, stat_fields(info))

    def listed(self, real: str | None, entries: Sequence[tuple[bytes, int, int]]) -> None:
        rel = self.relative(real)
        if rel is None:
            self.taint("a listing outside the workdir")
            return
        self.folder(rel)
        self.note("list", rel, listing_digest(entries))


def links_on(root: str, path: str) -> list[tuple[str, str]]:
    """Each symbolic link (relative path, target) met resolving the relative `path` under
    `root` as the host does (a link's target walked in its place, `..` after it from where
    it led), in order; a missing name ends the walk, a target leading out of `root` too."""
    found: list[tuple[str, str]] = []
    pending = [p for p in reversed(path.split("/"))]
    current: list[str] = []
    while pending and len(found) <= MAX_LINK_HOPS:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            if not current:
                break
            current.pop()
            continue
        rel = "/".join([*current, part])
        try:
            target = os.readlink(os.path.join(root, rel))
        except OSError as error:
            if error.errno != errno.EINVAL:
                break  # missing, or a file: nothing below it is walked
            current.append(part)
            continue
        found.append((rel, target))
        if target.startswith("/"):
            break
        pending.extend(reversed(target.split("/")))
    return found


def hides_inputs(fence: Fence) -> bool:
    """Whether `fence` hides a plan's inputs (`:hide:`, `#+HIDE:`): what a check may read
    then depends on whose fence it runs behind. The control plane it always hides (the
    home, a plan's control directory) is hidden the same way at every run."""
    return bool(fence.hidden_files) or any(rule.conceal for rule in fence.rules)


def node(root: str, rel: str) -> tuple[str, str]:
    """(kind, a link's target) of `rel` under `root`, not following a final link."""
    try:
        info = os.lstat(os.path.join(root, rel) if rel else root)
    except FileNotFoundError:
        return "-", ""
    except OSError as error:
        return f"!{error.errno}", ""
    mode = info.st_mode
    if stat.S_ISLNK(mode):
        try:
            return "l", os.readlink(os.path.join(root, rel))
        except OSError:
            return "l?", ""
    if stat.S_ISDIR(mode):
        return "d", ""
    if stat.S_ISREG(mode):
        return "f", ""
    return "o", ""


def file_digest(fd: int) -> str:
    """The SHA-256 of the whole file open as `fd`, read with pread (its offset untouched)."""
    h = hashlib.sha256()
    offset = 0
    while True:
        block = os.pread(fd, _CHUNK, offset)
        if not block:
            return h.hexdigest()
        h.update(block)
        offset += len(block)


def stat_fields(info: os.stat_result) -> str:
    kind = stat.S_IFMT(info.st_mode)
    return (
        f"{info.st_dev},{info.st_ino},{kind},{info.st_nlink},{info.st_size},"
        f"{info.st_mtime_ns},{info.st_ctime_ns}"
    )


def listing_digest(entries: Sequence[tuple[bytes, int, int]]) -> str:
    h = hashlib.sha256()
    for name, inode, kind in entries:
        h.update(b"%d %d %s\0" % (inode, kind, name))
    return h.hexdigest()


def digest(facts: Sequence[Fact]) -> str:
    """The SHA-256 that names a set of facts (what the record seals)."""
    return hashlib.sha256(json.dumps([FORMAT, list(facts)]).encode()).hexdigest()


_version: str | None = None


def sandbox_version() -> str:
    """What a sealed read set was recorded by: groundskeeper's version and the sandbox's own
    code and module (box.wasm, the interpreter's sources), hashed. Another: run again."""
    global _version
    if _version is None:
        from groundskeeper import __version__

        here = Path(__file__).resolve().parent
        h = hashlib.sha256(f"{__version__}\n{FORMAT}\n".encode())
        # and how a check's run becomes its verdict (`acceptance/check.py`)
        verdicts = here.parent / "acceptance" / "check.py"
        for path in [*sorted(here.glob("*.py")), here / "box.wasm", verdicts]:
            h.update(path.name.encode() + b"\0")
            try:
                h.update(hashlib.sha256(path.read_bytes()).digest())
            except OSError:
                h.update(b"?")
        _version = h.hexdigest()
    return _version


def list_directory(fd: int, fence: Fence) -> list[tuple[bytes, int, int]]:
    """`.`, `..` and the entries of an open directory, as (name, inode, file type); what the
    fence hides is left out."""
    here = os.fstat(fd)
    entries = [(b".", here.st_ino, DIRECTORY), (b"..", 0, DIRECTORY)]
    with os.scandir(fd) as scan:
        for entry in scan:
            if fence.hides_entry(entry):
                continue
            if entry.is_symlink():
                kind = SYMBOLIC_LINK
            elif entry.is_dir(follow_symlinks=False):
                kind = DIRECTORY
            elif entry.is_file(follow_symlinks=False):
                kind = REGULAR_FILE
            else:
                kind = UNKNOWN
            entries.append((os.fsencode(entry.name), entry.inode(), kind))
    return entries


_current: ContextVar[ReadSet | None] = ContextVar("reads", default=None)


@contextmanager
def recording(workdir: str | Path) -> Iterator[ReadSet]:
    """A read set of what the sandbox runs of this context read under `workdir` until the
    block ends."""
    reads = ReadSet(os.path.realpath(workdir))
    token = _current.set(reads)
    try:
        yield reads
    finally:
        _current.reset(token)


def current() -> ReadSet | None:
    return _current.get()
