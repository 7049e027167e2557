"""Host-side file access for the shell, confined to the workdir: redirections, globs, `cd`.

WASI confines what the commands do; this module confines what the interpreter does itself.
Paths are resolved against the shell's current directory; `..` past the workdir, absolute
paths and symlinks that lead outside are refused with a `PathRefused` naming the path.
"""

from __future__ import annotations

import contextlib
import json
import os
import posixpath
import re
import stat
from collections.abc import Callable

import groundskeeper.sandbox.fence as fences
import groundskeeper.sandbox.read_set as read_set
import groundskeeper.sandbox.writes as writes
from groundskeeper.errors import GroundskeeperError

DEV_NULL = "/dev/null"
# Where the workdir appears inside WASI. Only this directory is preopened, so an absolute
# path anywhere else (`/etc/hostname`, `/`) names nothing there and is refused.
GUEST_ROOT = "/workdir"


_MATCH_COST = 200  # bytes a kept match holds beyond its characters: two strs, a pair, a slot


def _free(_size: int) -> None:
    """A walk nobody bounds."""


def _ticked(tick: Callable[[int], None]) -> bool:
    tick(0)  # one stat to come: the walk's deadline is looked at first
    return True


class PathRefused(GroundskeeperError):
    """A path the interpreter will not touch; the message is shown as the command's error."""


class Workdir:
    """The one directory the sandbox may see. Virtual paths are relative to it, '' = root."""

    def __init__(
        self, path: str, fence: fences.Fence | None = None, *, recording: bool = True
    ) -> None:
        self.root = os.path.realpath(path)
        self.fence = fence if fence is not None else fences.active()
        # what the interpreter itself reads, when this thread's run records it (a check):
        # each question with its answer, replayed by `replay`
        self.reads = read_set.current() if recording else None
        if self.reads is not None and read_set.hides_inputs(self.fence):
            self.reads.taint("the fence hides inputs")
        # what the interpreter's own writes (redirections) change, when this thread records it
        self.journal = writes.current()
        if self.journal is not None:
            self.journal.served = True

    def host(self, relative: str) -> str:
        return os.path.join(self.root, relative) if relative else self.root

    def resolve(self, cwd: str, path: str, *, changing: bool = False) -> str:
        """The real path of `path` (seen from `cwd`) relative to the root; refuses escapes.

        A missing final component is fine (a file about to be created); symlinks are
        followed, and the result must still lie inside the workdir. A hidden path about to
        be changed (`changing`) is refused as absent, and the refusal noted.
        """
        if path.startswith("/"):
            raise PathRefused(f"{path}: absolute paths are outside the sandbox")
        joined = posixpath.normpath(posixpath.join(cwd, path)) if path else cwd
        if joined == ".":
            joined = ""
        if joined == ".." or joined.startswith("../"):
            raise PathRefused(f"{path}: leaves the workdir (not in the sandbox)")
        if self.reads is not None:
            self.reads.links_on(joined)  # the links `realpath` below follows
        try:
            real = os.path.realpath(self.host(joined))
        except OSError as error:  # a name swapped while it was being read, or a link loop
            raise PathRefused(f"{path}: {error.strerror}") from error
        if real == self.root:
            return ""
        if not real.startswith(self.root + os.sep):
            raise PathRefused(f"{path}: leads outside the workdir (not in the sandbox)")
        relative = os.path.relpath(real, self.root)
        if self.fence.hides_path(self.root, relative):
            if changing:
                self.fence.note(fences.ABSENT, real)
            raise PathRefused(f"{path}: No such file or directory")
        return relative

    def open(self, cwd: str, path: str, flags: int) -> int:
        """`_open`, noted in the run's read set: a file read, with its bytes and where it
        really is; any other open taints the set (/dev/null aside)."""
        reads = self.reads
        if reads is None:
            return self._open(cwd, path, flags)
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND):
            if path != DEV_NULL:
                reads.taint("a redirection to a file")
            return self._open(cwd, path, flags)
        try:
            fd = self._open(cwd, path, flags)
        except PathRefused as refused:
            reads.note("sh-open", cwd, path, f"!{refused}")
            raise
        reads.note("sh-open", cwd, path, self._opened(path, fd, cwd))
        return fd

    def _opened(self, path: str, fd: int, cwd: str) -> str:
        if path == DEV_NULL:
            return "null"
        relative = self.resolve(cwd, path)
        if self.reads is not None:
            self.reads.ctimes.setdefault(relative, os.fstat(fd).st_ctime_ns)
            if stat.S_ISREG(os.fstat(fd).st_mode):
                # the shell's own `<` (`read n < f`): a file the check read, as a command's
                self.reads.file_read(relative)
        return f"{read_set.file_digest(fd)}@{relative}"

    def _open(self, cwd: str, path: str, flags: int) -> int:
        """Open a confined path with no symlink followed on the way (O_NOFOLLOW at each step),
        so a link swapped in after `resolve` cannot redirect the open outside."""
        if path == DEV_NULL:
            return os.open(DEV_NULL, flags)
        changing = flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND)
        relative = self.resolve(cwd, path, changing=bool(changing))
        parts = relative.split(os.sep) if relative else []
        if not parts:
            raise PathRefused(f"{path}: Is a directory")
        directory = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY)
        fence = self.fence
        try:
            for part in parts[:-1]:
                inner = os.open(
                    part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=directory
                )
                os.close(directory)
                directory = inner
                if fence.hidden and fence.hides(os.fstat(directory)):
                    if changing:  # a write into a hidden directory: refused, and noted
                        fence.note(fences.ABSENT, directory, parts[-1])
                    raise PathRefused(f"{path}: No such file or directory")
            truncate = bool(flags & os.O_TRUNC) and fence.keeps_files
            if truncate:  # only once the file is known not to be the plan under another name
                flags &= ~os.O_TRUNC
            why = fence.refusal_at(directory, parts[-1]) if changing else None
            if why is not None:
                fence.note(why, directory, parts[-1])
            if why == fences.ABSENT:
                raise PathRefused(f"{path}: No such file or directory")
            if why is not None:
                raise PathRefused(f"{path}: Permission denied ({why})")
            # O_NONBLOCK: opening a FIFO would otherwise wait for its other end, forever and
            # where no deadline reaches; it is refused just below (regular files ignore it).
            fd = os.open(
                parts[-1],
                flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
                0o666,
                dir_fd=directory,
            )
        except OSError as error:
            raise PathRefused(f"{path}: {error.strerror}") from error
        finally:
            os.close(directory)
        if changing and self.journal is not None:
            self.journal.note_fd(fd)  # made, or about to be written
        info = os.fstat(fd)
        mode = info.st_mode
        if fence.hides(info):
            if changing:
                fence.note(fences.ABSENT, fd)
            os.close(fd)
            raise PathRefused(f"{path}: No such file or directory")
        if changing and fence.is_read_only_file(info):
            fence.note(fences.PROTECTED, fd)
            os.close(fd)
            raise PathRefused(f"{path}: Permission denied (protected by the plan, or the plan)")
        if not stat.S_ISREG(mode):
            os.close(fd)
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            raise PathRefused(f"{path}: {kind}")
        if truncate:
            os.ftruncate(fd, 0)
        return fd

    def directory(self, cwd: str, path: str) -> str:
        """`cd`: the confined real directory, relative to the root."""
        if self.reads is None:
            return self._directory(cwd, path)
        try:
            found = self._directory(cwd, path)
        except PathRefused as refused:
            self.reads.note("sh-cd", cwd, path, f"!{refused}")
            raise
        self.reads.note("sh-cd", cwd, path, found)
        return found

    def _directory(self, cwd: str, path: str) -> str:
        relative = self.resolve(cwd, path)
        if not os.path.isdir(self.host(relative)):
            exists = os.path.lexists(self.host(relative))
            raise PathRefused(
                f"{path}: {'Not a directory' if exists else 'No such file or directory'}"
            )
        return relative

    def glob(
        self,
        cwd: str,
        pattern: list[tuple[str, bool]],
        spend: Callable[[int], None] | None = None,
    ) -> list[str]:
        """Expand a pattern of (char, is_active_meta) pairs like bash: sorted matches, or []
        when nothing matches. Only directories inside the workdir are ever listed.

        `spend(bytes)` is called before each directory is looked at and each match is kept,
        with about what the match holds; it may raise to stop the walk (a deadline, a
        memory bound), since a pattern like `*/*/*/*` can walk a whole tree."""
        if self.reads is None:
            return self._glob(cwd, pattern, spend)
        shown = json.dumps(pattern)
        try:
            found = self._glob(cwd, pattern, spend)
        except PathRefused as refused:
            self.reads.note("sh-glob", cwd, shown, f"!{refused}")
            raise
        self.reads.note("sh-glob", cwd, shown, json.dumps(found))
        self._glob_folder(cwd, pattern)
        return found

    def _glob_folder(self, cwd: str, pattern: list[tuple[str, bool]]) -> None:
        """The folder a glob lists first (`cases` of `cases/*.in`), into the read set's
        folders: the check's input, though no file matched (adversary-17 F10)."""
        if self.reads is None:
            return
        first = next((i for i, (c, active) in enumerate(pattern) if active and c in "*?["), None)
        if first is None:
            return
        folder = posixpath.dirname("".join(c for c, _active in pattern[:first]))
        with contextlib.suppress(PathRefused):
            self.reads.folder(self.resolve(cwd, folder))

    def _glob(
        self,
        cwd: str,
        pattern: list[tuple[str, bool]],
        spend: Callable[[int], None] | None = None,
    ) -> list[str]:
        tick = spend if spend is not None else _free
        text = "".join(char for char, _ in pattern)
        if text.startswith("/"):
            raise PathRefused(f"{text}: absolute paths are outside the sandbox")
        components: list[list[tuple[str, bool]]] = [[]]
        for char, active in pattern:
            if char == "/":
                components.append([])
            else:
                components[-1].append((char, active))
        # Each candidate: (the text as the user will see it, its virtual path).
        candidates: list[tuple[str, str]] = [("", cwd)]
        for index, component in enumerate(components):
            last = index == len(components) - 1
            literal = "".join(char for char, _ in component)
            is_pattern = any(active and char in "*?[" for char, active in component)
            found: list[tuple[str, str]] = []
            for shown, virtual in candidates:
                tick(0)
                prefix = shown + "/" if index else ""
                if not is_pattern:
                    if not last:
                        self.resolve("", posixpath.join(virtual, literal))  # refuse escapes
                    found.append((prefix + literal, posixpath.join(virtual, literal)))
                    continue
                for name in self._list(virtual):
                    if _match(component, name):
                        tick(_MATCH_COST + 2 * (len(prefix) + len(name) + len(virtual)))
                        found.append((prefix + name, posixpath.join(virtual, name)))
            if not last:
                found = [(s, v) for s, v in found if _ticked(tick) and self._is_dir(v)]
            candidates = found
            if not candidates:
                return []
        return sorted(s for s, v in candidates if _ticked(tick) and self._exists(v))

    def test(self, cwd: str, op: str, path: str) -> bool:
        """`[[ OP path ]]` for the file tests that only look (-e -a -f -d -s -r -x -L -h),
        noted in the run's read set."""
        found = self._test(cwd, op, path)
        if self.reads is not None:
            self.reads.note("sh-test", cwd, op, path, "1" if found else "0")
        return found

    def _test(self, cwd: str, op: str, path: str) -> bool:
        if not path:
            return False
        try:
            if op in ("-L", "-h"):
                parent, _, name = path.rstrip("/").rpartition("/")
                where = self.resolve(cwd, parent or ".")
                if name in ("", ".", "..") or self.fence.hides_name(name):
                    return False
                info = os.lstat(self.host(posixpath.join(where, name)))
                return stat.S_ISLNK(info.st_mode)
            real = self.host(self.resolve(cwd, path))
            info = os.stat(real)
        except (PathRefused, OSError):
            return False
        if op in ("-e", "-a"):
            return True
        if op == "-f":
            return stat.S_ISREG(info.st_mode)
        if op == "-d":
            return stat.S_ISDIR(info.st_mode)
        if op == "-s":
            return info.st_size > 0
        return os.access(real, {"-r": os.R_OK, "-x": os.X_OK}[op])

    def replay(self, fact: tuple[str, ...]) -> str:
        """A question the interpreter noted (`sh-…`), asked again now: its answer."""
        kind, cwd, *asked = fact[:-1]
        try:
            if kind == "sh-test":
                return "1" if self._test(cwd, asked[0], asked[1]) else "0"
            if kind == "sh-cd":
                return self._directory(cwd, asked[0])
            if kind == "sh-glob":
                pattern = [(str(c), bool(a)) for c, a in json.loads(asked[0])]
                return json.dumps(self._glob(cwd, pattern))
            if kind == "sh-open":
                fd = self._open(cwd, asked[0], os.O_RDONLY)
                try:
                    return self._opened(asked[0], fd, cwd)
                finally:
                    os.close(fd)
        except PathRefused as refused:
            return f"!{refused}"
        return "?"  # a kind this code does not know: never the answer noted

    def _list(self, virtual: str) -> list[str]:
        try:
            with os.scandir(self.host(self.resolve("", virtual))) as entries:
                return [e.name for e in entries if not self.fence.hides_entry(e)]
        except OSError:
            return []

    def _is_dir(self, virtual: str) -> bool:
        try:
            return os.path.isdir(self.host(self.resolve("", virtual)))
        except PathRefused:
            return False

    def _exists(self, virtual: str) -> bool:
        lexical = posixpath.normpath(virtual)
        if lexical == ".." or lexical.startswith("../"):
            return False
        if any(self.fence.hides_name(part) for part in lexical.split("/")):
            return False
        try:
            self.resolve("", lexical)  # a hidden input is not there to be found
        except PathRefused:
            return os.path.islink(self.host(lexical))
        # A dangling or outward symlink still exists as a name inside the directory.
        return os.path.lexists(self.host("" if lexical == "." else lexical))


def _match(component: list[tuple[str, bool]], name: str) -> bool:
    """bash's rules for one path component: `*`, `?`, `[…]`; dotfiles only by a literal dot."""
    if name.startswith(".") and not (component and component[0][0] == "."):
        return False
    return re.fullmatch(_translate(component), name, re.DOTALL) is not None


def _translate(component: list[tuple[str, bool]]) -> str:
    out: list[str] = []
    i = 0
    while i < len(component):
        char, active = component[i]
        if not active:
            out.append(re.escape(char))
        elif char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif char == "[":
            end, bracket = _bracket(component, i)
            if bracket is None:
                out.append(re.escape(char))
            else:
                out.append(bracket)
                i = end
        else:
            out.append(re.escape(char))
        i += 1
    return "".join(out)


def _bracket(component: list[tuple[str, bool]], start: int) -> tuple[int, str | None]:
    """A `[…]` class starting at `start`: (index of its `]`, regex), or (start, None)."""
    i = start + 1
    negate = False
    if i < len(component) and component[i][0] in "!^":
        negate = True
        i += 1
    members: list[str] = []
    first = True
    while i < len(component):
        char = component[i][0]
        if char == "]" and not first:
            body = "".join(members)
            return i, f"[{'^' if negate else ''}{body}]"
        if char == "/":
            return start, None
        if (
            char == "-"
            and members
            and not first
            and i + 1 < len(component)
            and component[i + 1][0] != "]"
        ):
            members.append("-")
        else:
            members.append(re.escape(char))
        first = False
        i += 1
    return start, None
