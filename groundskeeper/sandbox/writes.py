"""What one sandbox run changed in its workdir, as the run itself did it: every path its
commands (`preview1`) and its interpreter (`confine`) opened for writing, created, truncated,
renamed (both names), linked, removed or touched. A writer is known by what it did, not by
what changed on disk meanwhile, so a parallel sibling's writes are never its own.

It owns the journal and how a run finds it (`recording`, bound to the current context as a
fence is: the commands of the thread that opened it note into it, no other thread's). It does
not decide what a change means: the worker's toolbox seals the list, contracts and gates
read it from the record.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

from groundskeeper.fastclass import fastclass, field
from groundskeeper.sandbox.fence import directory_path

__all__ = ["MAX_NOTED", "WriteJournal", "current", "recording"]

#: The most paths one journal lists (a renamed directory's files included); past it the
#: run's writes are unknown, which fails closed wherever they are asked for.
MAX_NOTED = 10_000


@fastclass(eq=False)
class WriteJournal:
    """The workdir paths one run changed (relative, `/`-separated, as their real names).

    `served` is set when the sandbox's interpreter picked the journal up: a shell that never
    did (a stand-in for the sandbox) wrote nothing anyone can tell. `unknown` is set when a
    write's place could not be told or the list outgrew `MAX_NOTED`."""

    root: str  # the workdir's real path
    paths: set[str] = field(default_factory=set)
    trees: set[str] = field(default_factory=set)  # directories renamed into place
    served: bool = False
    unknown: bool = False

    def note(self, real: str | None, *, tree: bool = False) -> None:
        """A real path that was changed (None: where it is cannot be told)."""
        if real is None:
            self.unknown = True
            return
        if real == self.root or not real.startswith(self.root + os.sep):
            return  # outside the workdir (CPython's private /tmp): not the work
        relative = real[len(self.root) + 1 :].replace(os.sep, "/")
        (self.trees if tree else self.paths).add(relative)
        if len(self.paths) + len(self.trees) > MAX_NOTED:
            self.unknown = True

    def note_at(self, parent: int, name: bytes | str, *, tree: bool = False) -> None:
        """`name` in the open directory `parent` was changed."""
        directory = directory_path(parent)
        text = os.fsdecode(name)
        self.note(None if directory is None else os.path.join(directory, text), tree=tree)

    def note_fd(self, fd: int) -> None:
        """The file open as `fd` was opened to be changed. A regular file with more than one
        name changes under its other names too, which no one can list: unknown."""
        try:
            info = os.fstat(fd)
        except OSError:
            info = None
        if info is None or (stat.S_ISREG(info.st_mode) and info.st_nlink > 1):
            self.unknown = True
            return
        self.note(directory_path(fd))

    def files(self) -> tuple[str, ...] | None:
        """Every path noted, each renamed directory as the files now under it, sorted; None
        when the run's writes cannot all be told."""
        if self.unknown:
            return None
        found = set(self.paths)
        for tree in self.trees:
            found.add(tree)
            top = os.path.join(self.root, tree)
            try:
                is_dir = stat.S_ISDIR(os.lstat(top).st_mode)
            except OSError:
                continue
            if not is_dir:
                continue
            for base, _dirs, names in os.walk(top, followlinks=False):
                inner = Path(base).relative_to(self.root).as_posix()
                found.update(f"{inner}/{name}" for name in names)
                if len(found) > MAX_NOTED:
                    return None
        return tuple(sorted(found))


_current: ContextVar[WriteJournal | None] = ContextVar("writes", default=None)


@contextmanager
def recording(workdir: str | Path) -> Iterator[WriteJournal]:
    """A journal of what the sandbox runs of this thread (this context) change under
    `workdir` until the block ends."""
    journal = WriteJournal(os.path.realpath(workdir))
    token = _current.set(journal)
    try:
        yield journal
    finally:
        _current.reset(token)


def current() -> WriteJournal | None:
    """The journal the current context's sandbox runs note into, if one is recording."""
    return _current.get()
