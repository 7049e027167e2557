"""WASI preview1's path calls, confined: every path walked one name at a time inside the workdir.

It owns the walk (O_NOFOLLOW from an open directory fd, symlinks read and spliced in here, so
`..` or a link never leaves the root), the fence's refusals and the path_* calls; not the fd table.
"""

from __future__ import annotations

import errno
import os
import stat
import time

import groundskeeper.sandbox.fence as fences
from groundskeeper.sandbox.preview1_abi import (
    ACCES,
    ATIM,
    ATIM_NOW,
    CHARACTER_DEVICE,
    DIRECTORY,
    EXIST,
    FD_APPEND,
    FILESTAT,
    INVAL,
    ISDIR,
    LOOP,
    MAX_SYMLINKS,
    MTIM,
    MTIM_NOW,
    NOENT,
    NOTCAPABLE,
    NOTDIR,
    O_CREAT,
    O_DIRECTORY,
    O_EXCL,
    O_TRUNC,
    PERM,
    R_FD_READ,
    R_FD_READDIR,
    R_WRITING,
    REGULAR_FILE,
    ROFS,
    SUCCESS,
    SYMLINK_FOLLOW,
    U32,
    Memory,
    WasiError,
    filetype,
    load,
    pack_stat,
    store,
    wasi_errno,
)
from groundskeeper.sandbox.preview1_fds import DEV_NULL, FdCalls, Handle

__all__ = ["PathCalls"]


class PathCalls(FdCalls):
    """The path layer of a process: resolving a guest's paths and the path_* calls."""

    def _walk(self, fd: int, path: bytes, follow: bool) -> tuple[int, bytes, int]:
        """Resolve `path` under directory `fd`: (an open directory the caller closes, the last
        component in it, that directory's depth below the workdir). The component is `.` for
        the directory itself, never `..`.

        Every step opens one name with O_NOFOLLOW relative to the step before. A symlink met
        on the way (or at the end, when following) is read and its target walked in its
        place; an absolute target or a `..` above the root is refused (ENOTCAPABLE).
        """
        handle = self._directory(fd)
        if handle.host_fd < 0:  # `/dev`: `null` is served by the calls themselves
            raise WasiError(NOENT)
        # The depth of stack[-1] is handle.depth + len(stack) - 1; the returns below compute
        # it after their pop(), as handle.depth + len(stack).
        base, depth = handle.host_fd, handle.depth
        if not path:
            raise WasiError(NOENT)
        if b"\0" in path:
            raise WasiError(INVAL)
        if path.startswith(b"/"):
            raise WasiError(NOTCAPABLE)
        parts = path.split(b"/")
        if parts[-1] == b"":  # "dir/": the directory itself, links followed
            parts[-1] = b"."
        parts.reverse()  # a stack: the next component is last
        stack = [os.dup(base)]
        links = 0
        try:
            while True:
                part = parts.pop()
                last = not parts
                if part in (b"", b"."):
                    if last:
                        return stack.pop(), b".", depth + len(stack)
                    continue
                if part == b"..":
                    if len(stack) == 1:
                        raise WasiError(NOTCAPABLE)
                    os.close(stack.pop())
                    if last:
                        return stack.pop(), b".", depth + len(stack)
                    continue
                if self.fence.hides_name(part):
                    raise WasiError(NOENT)  # the control plane is absent, by any spelling
                if self.reads is not None and not (last and not follow):
                    self.reads.node_at(fences.directory_path(stack[-1]), part)
                if last and not follow:
                    return stack.pop(), part, depth + len(stack)
                if self.fence.hidden_files:
                    # looked at before anything is done with it: what the host would say of
                    # a hidden name (not a directory, a link to follow) must not be heard
                    target = self._unhidden_link_target(part, stack[-1], last)
                else:
                    target = _link_target(part, stack[-1], last)
                if target is not None:
                    links += 1
                    if links > MAX_SYMLINKS:
                        raise WasiError(LOOP)
                    if self.reads is not None:
                        self.reads.link_at(fences.directory_path(stack[-1]), part, target)
                    if target.startswith(b"/") or not target:
                        raise WasiError(NOTCAPABLE)
                    pieces = target.split(b"/")
                    if pieces[-1] == b"":
                        pieces[-1] = b"."
                    parts.extend(reversed(pieces))
                    continue
                if last:
                    return stack.pop(), part, depth + len(stack)
                try:
                    inner = os.open(
                        part,
                        os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                        dir_fd=stack[-1],
                    )
                except OSError as error:
                    raise WasiError(self._errno(error, stack[-1], part)) from error
                stack.append(inner)
                if self.fence.hidden and self.fence.hides(os.fstat(inner)):
                    raise WasiError(NOENT)
        finally:
            for leftover in stack:
                os.close(leftover)

    def _hidden_at(self, parent: int, name: bytes) -> bool:
        """Whether `name` in the open directory `parent` is hidden (a hidden input, or a
        directory the fence hides): something no answer about it may reveal."""
        try:
            info = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except OSError:
            return False
        return self.fence.hides(info)

    def _errno(self, error: OSError, parent: int, name: bytes) -> int:
        """The errno for a host call on `name` in `parent` that failed: ENOENT for a hidden
        name, whatever the host said (ENOTDIR, ELOOP, EISDIR, EEXIST … would tell that
        something is there), else the host's."""
        return NOENT if self._hidden_at(parent, name) else wasi_errno(error)

    def _unhidden_link_target(self, name: bytes, directory: int, last: bool) -> bytes | None:
        """`_link_target` for a fence hiding inputs: a hidden name is absent (ENOENT) before
        its kind or its target can show through."""
        try:
            info = os.stat(name, dir_fd=directory, follow_symlinks=False)
        except OSError as error:
            if error.errno == errno.ENOENT or (last and error.errno == errno.ENOTDIR):
                return None
            raise WasiError(wasi_errno(error)) from error
        if self.fence.hides(info):
            raise WasiError(NOENT)
        if not stat.S_ISLNK(info.st_mode):
            return None
        return _link_target(name, directory, last)

    def _open_plain(
        self, fd: int, path: bytes, flags: int, follow: bool
    ) -> tuple[int, bytes, int] | None:
        """The common case of path_open without a walk: one name in directory `fd`, opened
        with O_NOFOLLOW (in `flags`). (host fd, name, the directory's depth), or None when
        `_walk` must decide: the path has several names, or is a link to follow."""
        if not _plain(path):
            return None
        if self.fence.hides_name(path):
            raise WasiError(NOENT)
        directory = self._directory(fd)
        if self.reads is not None:
            self.reads.node_at(fences.directory_path(directory.host_fd), path)
        try:
            return os.open(path, flags, 0o666, dir_fd=directory.host_fd), path, directory.depth
        except OSError as error:
            if error.errno == errno.ELOOP and follow:
                return None
            raise WasiError(self._errno(error, directory.host_fd, path)) from error

    def _named(self, fd: int, path: bytes, dot: int) -> tuple[int, bytes, int]:
        """`_walk` for calls that act on the name itself (unlink, mkdir, rename, …); a path
        that ends at a directory itself (`.`, `dir/..`) fails with errno `dot`. A trailing
        slash is dropped here: each call decides what it means (see `_trailing`)."""
        parent, name, depth = self._walk(fd, path.rstrip(b"/") or path, follow=False)
        if name == b".":
            os.close(parent)
            raise WasiError(dot)
        return parent, name, depth

    def _fenced(self, parent: int, name: bytes, *, changing: bool) -> None:
        """Refuse acting on `name` in `parent` when the fence says so: a hidden directory or
        input is absent; a pinned directory, a read-only file or a name under a protected
        pattern (a directory holding one included) cannot be changed (EACCES)."""
        try:
            info: os.stat_result | None = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        fence = self.fence
        if info is not None and fence.hides(info):
            if changing:  # a hidden input removed or renamed: refused as absent, and noted
                fence.note(fences.ABSENT, parent, name)
            raise WasiError(NOENT)
        if not changing:
            return
        if info is not None and fence.pins(info):
            fence.note(fences.PROTECTED, parent, name)
            raise WasiError(ACCES)
        if fence.keeps_files:
            why = fence.refusal_at(parent, name) or fence.tree_refusal(parent, name)
            if why is not None:
                fence.note(why, parent, name)
                raise WasiError(NOENT if why == fences.ABSENT else ACCES)

    def _noted(self, parent: int, name: bytes, *, tree: bool = False) -> None:
        """`name` in `parent` was changed: the run's journal hears of it, if one records."""
        if self.journal is not None:
            self.journal.note_at(parent, name, tree=tree)

    @staticmethod
    def _require_directory(parent: int, name: bytes) -> None:
        """A name written with a trailing slash must be a directory (as in POSIX)."""
        if not stat.S_ISDIR(os.stat(name, dir_fd=parent, follow_symlinks=False).st_mode):
            raise WasiError(NOTDIR)

    # -- path_* calls

    def path_open(
        self,
        memory: Memory,
        fd: int,
        lookup: int,
        path: int,
        path_length: int,
        oflags: int,
        rights: int,
        _inheriting: int,
        fdflags: int,
        out: int,
    ) -> int:
        name_bytes = load(memory, path, path_length)
        if self._directory(fd).devices:
            return self._open_device(memory, name_bytes, out)
        if self.absent_suffixes and _last_name(name_bytes).endswith(self.absent_suffixes):
            return NOENT
        read = bool(rights & (R_FD_READ | R_FD_READDIR))
        write = bool(rights & R_WRITING) or bool(oflags & O_TRUNC)
        directory = self._directory(fd)
        if self._frozen(directory) and (write or oflags & O_CREAT or fdflags & FD_APPEND):
            return ROFS
        flags = os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK
        flags |= os.O_RDWR if read and write else os.O_WRONLY if write else os.O_RDONLY
        for wasi_flag, host_flag in (
            (O_CREAT, os.O_CREAT),
            (O_DIRECTORY, os.O_DIRECTORY),
            (O_EXCL, os.O_EXCL),
            (O_TRUNC, os.O_TRUNC),
        ):
            if oflags & wasi_flag:
                flags |= host_flag
        if fdflags & FD_APPEND:
            flags |= os.O_APPEND
        follow = bool(lookup & SYMLINK_FOLLOW)
        changing = write or bool(oflags & O_CREAT) or bool(fdflags & FD_APPEND)
        if changing and self.reads is not None:
            self.reads.taint("a file opened to be written")
        elif self.reads is not None and oflags & O_DIRECTORY:
            # a folder opened to be listed is the check's input even when it is missing now
            # (a loop over the cases it held runs zero times: adversary-17 F10)
            self.reads.folder_at(fences.directory_path(directory.host_fd), name_bytes)
        # Truncate only once the file is known not to be a read-only one under another name.
        truncate = bool(flags & os.O_TRUNC) and self.fence.keeps_files
        if truncate:
            flags &= ~os.O_TRUNC
        opened = (
            None
            if changing and self.fence.keeps_files
            else self._open_plain(fd, name_bytes, flags, follow)
        )
        if opened is not None:
            host_fd, name, depth = opened
        else:
            parent, name, depth = self._walk(fd, name_bytes, follow)
            try:
                fence = self.fence
                why = fence.refusal_at(parent, name) if changing and fence.keeps_files else None
                if why is not None:  # a hidden input is absent; the plan, a protected input
                    fence.note(why, parent, name)  # are read-only
                    return NOENT if why == fences.ABSENT else ACCES
                if self.reads is not None and name != b".":
                    self.reads.node_at(fences.directory_path(parent), name)
                host_fd = os.open(name, flags, 0o666, dir_fd=parent)
            except OSError as error:
                return self._errno(error, parent, name)
            finally:
                os.close(parent)
        if changing and self.journal is not None:
            self.journal.note_fd(host_fd)  # made, or about to be written
        info = os.fstat(host_fd)
        if self.fence.hidden and self.fence.hides(info):
            os.close(host_fd)
            return NOENT
        if write and self.fence.is_read_only_file(info):
            self.fence.note(fences.PROTECTED, host_fd)
            os.close(host_fd)
            return ACCES
        if truncate and stat.S_ISREG(info.st_mode):
            os.ftruncate(host_fd, 0)
        if self.reads is not None and not changing:
            self.reads.opened(fences.directory_path(host_fd), host_fd)
        kind = filetype(info.st_mode)
        if kind not in (REGULAR_FILE, DIRECTORY):
            # A FIFO or device would block this thread, where no deadline can reach it.
            os.close(host_fd)
            return ACCES
        handle = Handle(
            kind,
            host_fd=host_fd,
            readable=read or kind == DIRECTORY,
            writable=write,
            append=bool(fdflags & FD_APPEND),
            owned=True,
            depth=depth + (name != b"."),
            frozen=directory.frozen,
            loose=directory.loose,
        )
        U32.pack_into(memory, out, self._new_fd(handle))
        return SUCCESS

    def _open_device(self, memory: Memory, name: bytes, out: int) -> int:
        if name != b"null":
            return NOENT
        handle = Handle(CHARACTER_DEVICE, readable=True, writable=True, sink=DEV_NULL)
        U32.pack_into(memory, out, self._new_fd(handle))
        return SUCCESS

    def path_filestat_get(
        self, memory: Memory, fd: int, lookup: int, path: int, length: int, out: int
    ) -> int:
        raw, follow = load(memory, path, length), bool(lookup & SYMLINK_FOLLOW)
        if self._directory(fd).devices:
            if raw != b"null":
                return NOENT
            FILESTAT.pack_into(memory, out, 0, 0, CHARACTER_DEVICE, 1, 0, 0, 0, 0)
            return SUCCESS
        if self.absent_suffixes and _last_name(raw).endswith(self.absent_suffixes):
            return NOENT
        if _plain(raw) and not self.fence.hides_name(raw):
            # one name in this directory: no walk, unless it is a link to follow
            where = self._directory(fd).host_fd
            if self.reads is not None:
                self.reads.node_at(fences.directory_path(where), raw)
            info = os.stat(raw, dir_fd=where, follow_symlinks=False)
            if not (follow and stat.S_ISLNK(info.st_mode)):
                if self.fence.hides(info):
                    return NOENT
                if self.reads is not None:
                    self.reads.shown(_joined(fences.directory_path(where), raw), info)
                pack_stat(memory, out, info, no_atime=self.reads is not None)
                return SUCCESS
        parent, name, _ = self._walk(fd, raw, follow)
        try:
            seen = fences.directory_path(parent) if self.reads is not None else None
            if self.reads is not None and name != b".":
                self.reads.node_at(seen, name)  # before the stat: an absence is a fact too
            info = os.stat(name, dir_fd=parent, follow_symlinks=False)
            if self.reads is not None:
                self.reads.shown(seen if name == b"." else _joined(seen, name), info)
        finally:
            os.close(parent)
        if self.fence.hides(info):
            return NOENT
        pack_stat(memory, out, info, no_atime=self.reads is not None)
        return SUCCESS

    def path_filestat_set_times(
        self,
        memory: Memory,
        fd: int,
        lookup: int,
        path: int,
        length: int,
        atime: int,
        mtime: int,
        which: int,
    ) -> int:
        if self.reads is not None:
            self.reads.taint("path_filestat_set_times")
        self._refuse_writes(fd)
        parent, name, _ = self._walk(fd, load(memory, path, length), bool(lookup & SYMLINK_FOLLOW))
        try:
            self._fenced(parent, name, changing=True)
            now = time.time_ns()
            current = os.stat(name, dir_fd=parent, follow_symlinks=False)
            access = now if which & ATIM_NOW else atime if which & ATIM else current.st_atime_ns
            modify = now if which & MTIM_NOW else mtime if which & MTIM else current.st_mtime_ns
            os.utime(name, ns=(access, modify), dir_fd=parent, follow_symlinks=False)
            self._noted(parent, name)
        finally:
            os.close(parent)
        return SUCCESS

    def path_create_directory(self, memory: Memory, fd: int, path: int, length: int) -> int:
        if self.reads is not None:
            self.reads.taint("path_create_directory")
        parent, name, _ = self._named(fd, load(memory, path, length), dot=EXIST)
        try:
            # as on a read-only mount, an existing name says so first
            if self._frozen(self._handle(fd)):
                there = _exists(parent, name) and not self._hidden_at(parent, name)
                return EXIST if there else ROFS
            if self.fence.keeps_files and self.fence.refusal_at(parent, name) == fences.ABSENT:
                self.fence.note(fences.ABSENT, parent, name)
                return NOENT  # a hidden input's name: nothing may be made there
            os.mkdir(name, 0o777, dir_fd=parent)
        finally:
            os.close(parent)
        return SUCCESS

    def path_remove_directory(self, memory: Memory, fd: int, path: int, length: int) -> int:
        if self.reads is not None:
            self.reads.taint("path_remove_directory")
        self._refuse_writes(fd)
        parent, name, _ = self._named(fd, load(memory, path, length), dot=INVAL)
        try:
            self._fenced(parent, name, changing=True)
            os.rmdir(name, dir_fd=parent)
            self._noted(parent, name)
        finally:
            os.close(parent)
        return SUCCESS

    def path_unlink_file(self, memory: Memory, fd: int, path: int, length: int) -> int:
        if self.reads is not None:
            self.reads.taint("path_unlink_file")
        self._refuse_writes(fd)
        raw = load(memory, path, length)
        parent, name, _ = self._named(fd, raw, dot=ISDIR)
        try:
            self._fenced(parent, name, changing=True)
            if raw.endswith(b"/"):
                self._require_directory(parent, name)  # and unlink then says EISDIR
            os.unlink(name, dir_fd=parent)
            self._noted(parent, name)
        finally:
            os.close(parent)
        return SUCCESS

    def path_rename(
        self,
        memory: Memory,
        fd: int,
        old: int,
        old_length: int,
        new_fd: int,
        new: int,
        new_length: int,
    ) -> int:
        if self.reads is not None:
            self.reads.taint("path_rename")
        self._refuse_writes(fd, new_fd)
        old_path, new_path = load(memory, old, old_length), load(memory, new, new_length)
        source, source_name, _ = self._named(fd, old_path, dot=INVAL)
        try:
            target, target_name, depth = self._named(new_fd, new_path, dot=INVAL)
            try:
                self._fenced(source, source_name, changing=True)
                self._fenced(target, target_name, changing=True)
                moved = self.fence.tree_refusal(source, source_name, (target, target_name))
                if moved is not None:  # it would bring a name under a protected pattern
                    self.fence.note(moved, source, source_name)
                    self.fence.note(moved, target, target_name)
                    return NOENT if moved == fences.ABSENT else ACCES
                info = os.stat(source_name, dir_fd=source, follow_symlinks=False)
                if (old_path.endswith(b"/") or new_path.endswith(b"/")) and not stat.S_ISDIR(
                    info.st_mode
                ):
                    return NOTDIR
                if stat.S_ISLNK(info.st_mode) and not _stays_inside(
                    os.fsencode(os.readlink(source_name, dir_fd=source)), depth
                ):
                    return NOTCAPABLE  # moved there, the link would point outside
                os.rename(source_name, target_name, src_dir_fd=source, dst_dir_fd=target)
                self._noted(source, source_name)
                self._noted(target, target_name, tree=stat.S_ISDIR(info.st_mode))
            finally:
                os.close(target)
        finally:
            os.close(source)
        return SUCCESS

    def path_symlink(
        self, memory: Memory, old: int, old_length: int, fd: int, new: int, new_length: int
    ) -> int:
        if self.reads is not None:
            self.reads.taint("path_symlink")
        self._refuse_writes(fd)
        target = load(memory, old, old_length)
        link = load(memory, new, new_length)
        if link.endswith(b"/"):
            return NOENT
        parent, name, depth = self._named(fd, link, dot=EXIST)
        try:
            # A link made here never points outside, even for readers that are not confined,
            # nor into the control plane (which every reader here would find absent anyway).
            if not _stays_inside(target, depth) or any(
                self.fence.hides_name(part) for part in target.split(b"/")
            ):
                return NOTCAPABLE
            if self._aliases_hidden(parent, target):
                return NOTCAPABLE  # a second name for a hidden input, which checks follow
            self._fenced(parent, name, changing=True)
            os.symlink(target, name, dir_fd=parent)
            self._noted(parent, name)
        finally:
            os.close(parent)
        return SUCCESS

    def _aliases_hidden(self, parent: int, target: bytes) -> bool:
        """Whether a link to `target` from the directory `parent` would name a hidden input
        (as it is, or under a hidden pattern) or a directory that holds one: the worker
        could not read through it, but a check, which sees hidden inputs, would."""
        fence = self.fence
        if not (fence.hidden_files or fence.hidden_paths or fence.rules):
            return False
        directory = fences.directory_path(parent)
        if directory is None:
            return True  # where it is cannot be told: refused, not guessed
        lexical = os.path.normpath(os.path.join(directory, os.fsdecode(target)))
        # and through the links on its way, whether or not its end exists: a link to a link
        # to a hidden name is refused as the direct one is, so the refusal says nothing of
        # whether the hidden name is there
        for real in dict.fromkeys((lexical, os.path.realpath(lexical))):
            for path in fence.hidden_paths:
                if real == path or real.startswith(path + os.sep) or path.startswith(real + os.sep):
                    return True
            if fence.rule_refusal(real) == fences.ABSENT:
                return True
        real = lexical
        try:
            info = os.stat(real)
        except OSError:
            return False
        if fence.hides(info):
            return True
        if not stat.S_ISDIR(info.st_mode) or not fence.hidden_files:
            return False
        return _hidden_under(fence, real)

    def path_link(
        self,
        memory: Memory,
        fd: int,
        lookup: int,
        old: int,
        old_length: int,
        new_fd: int,
        new: int,
        new_length: int,
    ) -> int:
        """A hard link inside the workdir to a regular file inside it. Never to a protected or
        read-only file (the new name would be a second door to it), a hidden one, or a
        symlink (moved into another directory, its target could lead out)."""
        if self.reads is not None:
            self.reads.taint("path_link")
        self._refuse_writes(fd, new_fd)
        old_path, new_path = load(memory, old, old_length), load(memory, new, new_length)
        if new_path.endswith(b"/"):
            return NOENT
        source, source_name, _ = self._walk(fd, old_path, bool(lookup & SYMLINK_FOLLOW))
        try:
            if source_name == b".":
                return PERM  # a directory: Linux refuses hard links to them too
            target, target_name, _ = self._named(new_fd, new_path, dot=EXIST)
            try:
                self._fenced(source, source_name, changing=True)  # no second name either
                self._fenced(target, target_name, changing=True)
                info = os.stat(source_name, dir_fd=source, follow_symlinks=False)
                if not stat.S_ISREG(info.st_mode):
                    return PERM
                if self.fence.is_read_only_file(info):
                    self.fence.note(fences.PROTECTED, source, source_name)
                    return ACCES
                os.link(
                    source_name,
                    target_name,
                    src_dir_fd=source,
                    dst_dir_fd=target,
                    follow_symlinks=False,
                )
                self._noted(target, target_name)
            finally:
                os.close(target)
        finally:
            os.close(source)
        return SUCCESS

    def path_readlink(
        self, memory: Memory, fd: int, path: int, length: int, buffer: int, size: int, out: int
    ) -> int:
        raw = load(memory, path, length)
        if raw.endswith(b"/"):
            # "link/" names what the link points to, which is not a link; but a name that is
            # not there (or is hidden) says so first, as on Linux
            parent, _, _ = self._walk(fd, raw, follow=True)
            os.close(parent)
            return INVAL
        parent, name, _ = self._named(fd, raw, dot=INVAL)
        try:
            if self.reads is not None:
                self.reads.node_at(fences.directory_path(parent), name)
            self._fenced(parent, name, changing=False)  # a hidden link is absent
            target = os.readlink(name, dir_fd=parent)
        finally:
            os.close(parent)
        piece = os.fsencode(target)[:size]
        store(memory, buffer, piece)
        U32.pack_into(memory, out, len(piece))
        return SUCCESS


def _joined(directory: str | None, name: bytes) -> str | None:
    return None if directory is None else os.path.join(directory, os.fsdecode(name))


def _last_name(path: bytes) -> bytes:
    """The name a path ends at (`a/b.mpy/` → `b.mpy`)."""
    return path.rstrip(b"/").rpartition(b"/")[2]


def _plain(path: bytes) -> bool:
    """One ordinary name: what a path usually is, and what needs no walk."""
    return b"/" not in path and path not in (b"", b".", b"..") and b"\0" not in path


_ALIAS_SCAN = 10_000  # names looked at under a link's target directory before refusing


def _hidden_under(fence: fences.Fence, real: str) -> bool:
    """Whether the directory `real` holds a hidden input, or more names than are looked at."""
    seen = 0
    for base, dirs, files in os.walk(real):
        for name in dirs + files:
            seen += 1
            if seen > _ALIAS_SCAN:
                return True
            try:
                info = os.stat(os.path.join(base, name), follow_symlinks=False)
            except OSError:
                continue
            if fence.hides(info):
                return True
    return False


def _stays_inside(target: bytes, depth: int) -> bool:
    """Whether a link `target`, read from a directory `depth` levels below the workdir,
    stays inside it when its names are taken as written (no link in it followed)."""
    if not target or target.startswith(b"/") or b"\0" in target:
        return False
    for part in target.split(b"/"):
        if part == b"..":
            depth -= 1
            if depth < 0:
                return False
        elif part not in (b"", b"."):
            depth += 1
    return True


def _exists(parent: int, name: bytes) -> bool:
    try:
        os.stat(name, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return True


def _link_target(name: bytes, directory: int, last: bool) -> bytes | None:
    """The target of `name` when it is a symlink, else None (a missing name included)."""
    try:
        return os.fsencode(os.readlink(name, dir_fd=directory))
    except OSError as error:
        if error.errno in (errno.EINVAL, errno.ENOENT) or (last and error.errno == errno.ENOTDIR):
            return None
        raise WasiError(wasi_errno(error)) from error
