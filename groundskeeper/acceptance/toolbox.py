"""The worker's four tools (`sh`, `read_file`, `write_file`, `list_files`) and their
confinement to the workdir; what each call tells the attempt record (the facts `sh` and
`write_file` seal). Contracts and the judge read files through the same path rules. It does
not run the model loop (`supervisor.worker`) nor judge anything.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, NoReturn

from groundskeeper.acceptance.attempt_record import (
    CMD_INLINE,
    READ_SEALED_BYTES,
    READ_SEALED_MAX,
    changed_between,
    input_digests,
    read_at_most,
    sealable_changed,
    stdout_file,
    watch_state,
    wrote_text,
)
from groundskeeper.acceptance.check import Shell, sandbox_shell, sha256_text
from groundskeeper.errors import GroundskeeperError
from groundskeeper.sandbox import fence as fences
from groundskeeper.sandbox import read_set, writes
from groundskeeper.sandbox.quota import DiskQuota

DEFAULT_MAX_TURNS = 30

DEFAULT_SH_TIMEOUT = 30.0
READ_LIMIT = 100_000
WRITE_LIMIT = 1_000_000
RESULT_LIMIT = 20_000


class ToolRefused(GroundskeeperError):
    """A tool call the worker may not make; its message goes back to the model as is."""


class FileTooLarge(GroundskeeperError):
    """A file read with a size limit is larger than the limit."""


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    text: str
    is_error: bool
    status: str  # "ok", "error", "refused", or "exit N" for sh
    # what the record seals beyond the status (JSON-native): for `sh` the command, exit
    # status, output hashes and the paths it changed; for `write_file` the path written
    facts: Mapping[str, Any] = field(default_factory=dict)
    # texts the record keeps by hash in the control directory (the command, what it printed)
    texts: tuple[str, ...] = ()


_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
_SHOWN_PATH = 200  # characters of a refused path kept in the record
_SHOWN_REFUSALS = 20  # refused paths named to the worker (the record keeps them all)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW


@dataclass
class Toolbox:
    """The worker's tools, confined to `workdir` and fenced (`sandbox.fence`): the control
    plane and $GROUNDSKEEPER_HOME are absent, the running plan's file is read-only.

    A path is judged first (`resolve`: no absolute paths, no `..`, no symlink leading out),
    then opened by walking the judged, symlink-free path one component at a time with
    O_NOFOLLOW from the workdir, so a symlink swapped in between (another worker's `mv`)
    is refused rather than followed.
    """

    workdir: Path
    plan_path: Path
    shell: Shell | None = None
    sh_timeout: float = DEFAULT_SH_TIMEOUT
    # the run's disk quota: `write_file` counts the bytes it writes (a rewrite counts again),
    # `sh` hands it to the sandbox (a fake `shell` is called without it)
    quota: DiskQuota | None = None
    # paths whose content is taken before and after each `sh` call, so the record says which
    # of them it changed (a `changed` contract's); with none, the record's `changed` is null
    watch: tuple[str, ...] = ()
    # what keeps a path (relative to the workdir) from this worker, said with each change the
    # fence refused (`:protect: PATTERN`, a contract's test file, …); None: "the plan"
    protection: Callable[[str], str] | None = None
    _root: Path = field(init=False)

    def __post_init__(self) -> None:
        self._root = self.workdir.resolve()
        self._plan = self.plan_path.resolve()

    @property
    def fence(self) -> fences.Fence:
        return fences.active()

    def call(self, name: str, tool_input: object) -> ToolOutcome:
        """Run one tool; every failure comes back as an error outcome, never an exception.
        A change the fence refused, by whatever the call ran (a redirection in a list whose
        last command succeeded, `python3`'s open, `mv`, `rm`, `write_file`), fails the call:
        the worker is told which paths and what protects each, and the record seals them
        (`refused`)."""
        seen = fences.Refusals()
        with fences.binding(fences.Fence(witnesses=(seen,))):
            outcome = self._call(name, tool_input)
        return self._refusals(outcome, seen)

    def _refusals(self, outcome: ToolOutcome, seen: fences.Refusals) -> ToolOutcome:
        root = str(self._root)
        home = os.path.realpath(fences.groundskeeper_home())
        refused = sorted(
            {
                os.path.relpath(real, root).replace(os.sep, "/")
                for real in seen.paths()
                if real.startswith(root + os.sep)
                # the control plane and the home stay absent: a refusal there is not told
                and not any(self.fence.hides_name(part) for part in real.split(os.sep))
                and real != home
                and not real.startswith(home + os.sep)
            }
        )
        if not refused:
            return outcome
        plan = (
            self._plan.relative_to(self._root).as_posix()
            if self._root in self._plan.parents
            else None
        )
        said = "\n".join(
            f"- `{path}`: "
            + ("the plan file of the running plan" if path == plan else self._protected_by(path))
            for path in refused[:_SHOWN_REFUSALS]
        )
        if len(refused) > _SHOWN_REFUSALS:
            said += f"\n- … and {len(refused) - _SHOWN_REFUSALS} more"
        head = (
            "refused: the sandbox refused to change what the plan keeps from you, so this call"
            " failed whatever else it printed or its exit status says:\n" + said + "\n"
        )
        facts = {**outcome.facts, "refused": _sealable_prefix(refused)}
        if len(facts["refused"]) < len(refused):
            facts["refused_more"] = len(refused) - len(facts["refused"])
        return replace(outcome, text=_clip(head + outcome.text), is_error=True, facts=facts)

    def _protected_by(self, path: str) -> str:
        return self.protection(path) if self.protection is not None else fences.PROTECTED

    def _call(self, name: str, tool_input: object) -> ToolOutcome:
        if not isinstance(tool_input, dict):
            return ToolOutcome("tool input must be a JSON object", True, "error")
        try:
            if name == "sh":
                return self._sh(tool_input)
            if name == "read_file":
                return self._read(tool_input)
            if name == "write_file":
                return self._write(tool_input)
            if name == "list_files":
                return self._list(tool_input)
        except ToolRefused as exc:
            # the path asked for is sealed with the refusal: a reviewer sees what was tried
            asked = tool_input.get("path")
            facts = {"path": asked[:_SHOWN_PATH]} if isinstance(asked, str) else {}
            return ToolOutcome(f"refused: {exc}", True, "refused", facts)
        except (OSError, UnicodeError, ValueError) as exc:  # ValueError: a NUL in a path
            return ToolOutcome(f"{name} failed: {exc}", True, "error")
        return ToolOutcome(
            f"unknown tool `{name}`; the tools are sh, read_file, write_file, list_files,"
            " claim_done",
            True,
            "error",
        )

    def _arg(self, tool_input: Mapping[str, Any], key: str, default: str | None = None) -> str:
        value = tool_input.get(key, default)
        if not isinstance(value, str):
            raise ToolRefused(f"`{key}` must be a string")
        return value

    def resolve(self, raw: str, *, changing: bool = False) -> Path:
        """The real path of `raw` inside the workdir, or ToolRefused saying why not; a hidden
        path about to be changed (`changing`) is absent, and the refusal noted."""
        if not raw:
            raise ToolRefused("empty path")
        if "\0" in raw:
            raise ToolRefused("a path may not contain a NUL character")
        pure = PurePosixPath(raw)
        if pure.is_absolute() or raw.startswith("~"):
            raise ToolRefused(f"`{raw}` is absolute; paths are relative to the working directory")
        if ".." in pure.parts:
            raise ToolRefused(f"`{raw}` uses `..`; paths stay inside the working directory")
        target = (self._root / pure).resolve()
        if target != self._root and self._root not in target.parents:
            raise ToolRefused(f"`{raw}` leads outside the working directory (a symlink)")
        if target != self._root and self.fence.hides_path(
            str(self._root), str(target.relative_to(self._root))
        ):
            if changing:
                self.fence.note(fences.ABSENT, str(target))
            raise _absent(raw)
        return target

    def _guard_identity(self, raw: str, fd: int) -> os.stat_result:
        st = os.fstat(fd)
        if self.fence.hides(st):
            raise _absent(raw)
        return st

    def _guard_writable(self, raw: str, parent: int, name: str) -> None:
        fence = self.fence
        why = fence.refusal_at(parent, name)
        if why is not None:
            fence.note(why, parent, name)
        if why == fences.ABSENT:
            raise _absent(raw)
        if why is not None and why.startswith(fences.PROTECTED):
            raise ToolRefused(f"`{raw}` is protected by the plan; workers may read it, never"
                              " change it")  # fmt: skip
        if why is not None:
            raise ToolRefused(
                f"`{raw}` is the plan file of the running plan; workers may read it, never"
                " change it"
            )

    def _walk(self, raw: str, target: Path, *, create_dirs: bool = False) -> int:
        """An O_DIRECTORY fd of `target`'s parent, reached without following any symlink."""
        parts = target.relative_to(self._root).parts
        fd = os.open(self._root, _DIR_FLAGS)
        try:
            for part in parts[:-1]:
                try:
                    child = self._open_component(raw, part, _DIR_FLAGS, fd)
                except FileNotFoundError:
                    if not create_dirs:
                        raise
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, dir_fd=fd)
                    child = self._open_component(raw, part, _DIR_FLAGS, fd)
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open_component(
        self, raw: str, name: str, flags: int, dir_fd: int, mode: int = 0o666
    ) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            self._guard_writable(raw, dir_fd, name)
        try:
            fd = os.open(name, flags | _NOFOLLOW, mode, dir_fd=dir_fd)
        except OSError as exc:
            raise self._swapped(raw, exc, name, dir_fd) from None
        if flags & os.O_DIRECTORY and self.fence.hidden and self.fence.hides(os.fstat(fd)):
            os.close(fd)
            raise _absent(raw)
        return fd

    @staticmethod
    def _swapped(raw: str, exc: OSError, name: str, dir_fd: int) -> OSError | ToolRefused:
        """A symlink where the judged path had none is a refusal; any other error stays."""
        try:
            is_link = stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        except OSError:
            is_link = False
        if is_link:
            return ToolRefused(
                f"`{raw}` changed into a symlink while it was being opened; not followed"
            )
        return exc

    def _open_target(self, raw: str, target: Path, flags: int, *, create_dirs: bool = False) -> int:
        if target == self._root:
            return os.open(self._root, _DIR_FLAGS)
        parent = self._walk(raw, target, create_dirs=create_dirs)
        try:
            return self._open_component(raw, target.name, flags, parent)
        finally:
            os.close(parent)

    def _sh(self, tool_input: Mapping[str, Any]) -> ToolOutcome:
        cmd = self._arg(tool_input, "cmd")
        run = self.shell if self.shell is not None else sandbox_shell(self.quota)
        # what the command changed, for the record: the watched paths before and after
        before = watch_state(self._root, self.watch) if self.watch else None
        facts: dict[str, Any] = {
            "cmd": cmd if len(cmd) <= CMD_INLINE else None,
            "cmd_sha256": sha256_text(cmd, keep_surrogates=True),
        }
        # what it changed, as the sandbox did it: this call's own writes, never a sibling's
        with writes.recording(self._root) as journal, read_set.recording(self._root) as reads:
            # the names of the workdir files it opened, not their facts (no hashing in it)
            reads.taint("a worker's command: the files it read are kept by name only")
            try:
                result = run(cmd, workdir=self._root, read_only=False, timeout=self.sh_timeout)
            except Exception as exc:  # the worker hears of it; the run goes on
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                text = f"the sandbox could not run the command: {type(exc).__name__}: {first}"
                after = watch_state(self._root, self.watch) if self.watch else None
                facts |= {
                    "exit_status": None,
                    "fault": "not-run",
                    "stdout_sha256": None,
                    "stderr_sha256": None,
                    "changed": sealable_changed(changed_between(before, after)),
                    **self._wrote(journal),
                }
                return ToolOutcome(text, True, "error", facts, (cmd, *_listed(facts)))
        facts |= {
            **self._wrote(journal),
            **self._sealed_reads(reads),
            "exit_status": result.status,
            "fault": result.fault,
            "stdout_sha256": sha256_text(result.stdout, keep_surrogates=True),
            "stderr_sha256": sha256_text(result.stderr, keep_surrogates=True),
            "changed": sealable_changed(
                changed_between(before, watch_state(self._root, self.watch) if self.watch else None)
            ),
        }
        texts_more = self._stdout_file(cmd, facts)
        text = f"exit status {result.status}\n"
        if result.fault:
            text += f"stopped by the sandbox: {result.fault}\n"
        text += f"--- stdout ---\n{result.stdout}--- stderr ---\n{result.stderr}"
        failed = result.status != 0 or result.fault is not None
        texts = (cmd, result.stdout, result.stderr, *_listed(facts), *texts_more)
        return ToolOutcome(_clip(text), failed, f"exit {result.status}", facts, texts)

    def _stdout_file(self, cmd: str, facts: dict[str, Any]) -> tuple[str, ...]:
        """What a one-command line printed into the file its stdout went to (`cmd >
        out/report.txt`), read back at once, before any other call of this worker: sealed
        by hash (`stdout_file`) when this very call wrote the file, so evidence can be judged
        against what the command printed there. The hash is null when it cannot be read."""
        target = stdout_file(cmd)
        wrote = facts.get("wrote")
        if target is None or not isinstance(wrote, list) or target not in wrote:
            return ()
        try:
            text = self.read_limited(target, READ_LIMIT).decode("utf-8", "replace")
        except (OSError, GroundskeeperError, ValueError):
            facts["stdout_file"] = {"path": target, "sha256": None}
            return ()
        facts["stdout_file"] = {"path": target, "sha256": sha256_text(text, keep_surrogates=True)}
        return (text,)

    def _sealed_reads(self, reads: read_set.ReadSet) -> dict[str, Any]:
        """What an `sh` call read, as sealed: `read`, each workdir file the sandbox saw it
        open for reading and what it held right after the call (`input_digests`), so that
        evidence quoting the call can tell whether its inputs changed afterwards; None when
        too many to seal. A stand-in shell seals nothing (no key)."""
        if self.shell is not None:
            return {}
        files = reads.read_files()
        if files is None or len(files) > READ_SEALED_MAX:
            return {"read": None}
        if sum(len(p.encode("utf-8", "surrogateescape")) + 72 for p in files) > READ_SEALED_BYTES:
            return {"read": None}  # room in a 64 KiB ledger line for the rest of the call
        return {"read": input_digests(self._root, files)}

    def _wrote(self, journal: writes.WriteJournal) -> dict[str, Any]:
        """What an `sh` call changed, as sealed: `wrote`, the sandbox's journal (None:
        unknown; a stand-in shell that never picked it up can tell nothing, unless it is none:
        the sandbox itself, stopped before it ran anything). A list too long for a ledger line
        is sealed by its hash (`wrote_sha256`), its text kept in the output store."""
        files = journal.files() if journal.served or self.shell is None else None
        listed = sealable_changed(files)
        if files is None or listed is not None:
            return {"wrote": listed}
        text = wrote_text(files)
        return {"wrote": None, "wrote_sha256": sha256_text(text), "wrote_text": text}

    def _read(self, tool_input: Mapping[str, Any]) -> ToolOutcome:
        raw = self._arg(tool_input, "path")
        target = self.resolve(raw)
        # O_NONBLOCK: a FIFO must not hang the worker; it is refused below as not a file
        fd = self._open_target(raw, target, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            st = self._guard_identity(raw, handle.fileno())
            if stat.S_ISDIR(st.st_mode):
                return ToolOutcome(f"`{raw}` is a folder; use list_files", True, "error")
            if not stat.S_ISREG(st.st_mode):
                return ToolOutcome(f"`{raw}` is not a regular file", True, "error")
            data = handle.read(READ_LIMIT + 1)
        text = data[:READ_LIMIT].decode("utf-8", errors="replace")
        if len(data) > READ_LIMIT:
            text += f"\n… (truncated at {READ_LIMIT} bytes)"
        return ToolOutcome(text, False, "ok")

    def _write(self, tool_input: Mapping[str, Any]) -> ToolOutcome:
        raw = self._arg(tool_input, "path")
        content = self._arg(tool_input, "content")
        target = self.resolve(raw, changing=True)
        if len(content) > WRITE_LIMIT:
            raise ToolRefused(f"content is longer than {WRITE_LIMIT} characters")
        data = content.encode("utf-8")  # before opening: a bad string must not truncate
        if target == self._root or target.is_dir():
            return ToolOutcome(f"`{raw}` is a folder", True, "error")
        if self.quota is not None and len(data) > self.quota.left():
            self._over_quota()  # before the open: nothing is created or truncated
        # no O_TRUNC until the opened file is known not to be a control file
        fd = self._open_target(
            raw, target, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK, create_dirs=True
        )
        with os.fdopen(fd, "wb") as handle:
            st = self._guard_identity(raw, handle.fileno())
            if not stat.S_ISREG(st.st_mode):
                return ToolOutcome(f"`{raw}` is not a regular file", True, "error")
            if self.fence.is_read_only_file(st):
                self.fence.note(fences.PROTECTED, handle.fileno())
                raise ToolRefused(
                    f"`{raw}` is a link to the plan file or a protected input; workers may not"
                    " change it"
                )
            if self.quota is not None and not self.quota.take(len(data)):
                self._over_quota()
            handle.truncate(0)
            handle.write(data)
        written = target.relative_to(self._root).as_posix()
        facts = {"path": written, "changed": [written]}
        return ToolOutcome(f"wrote {len(data)} bytes to {raw}", False, "ok", facts)

    def read_limited(self, raw: str, limit: int) -> bytes:
        """A regular file's bytes under the tools' path rules (no absolute path, no `..`, no
        symlink leading out, nothing behind the fence), at most `limit` of them: `FileTooLarge`
        past that. Contracts read the worker's files through this, never natively run them."""
        target = self.resolve(raw)
        fd = self._open_target(raw, target, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            st = self._guard_identity(raw, handle.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ToolRefused(f"`{raw}` is not a regular file")
            data = read_at_most(handle, limit)
        if len(data) > limit:
            raise FileTooLarge(f"`{raw}` is larger than {limit} bytes")
        return data

    def read_head(self, raw: str, limit: int) -> tuple[bytes, bool]:
        """The first `limit` bytes of a regular file under the same path rules as
        `read_limited`, and whether the file holds more (the judge is shown a file's head)."""
        target = self.resolve(raw)
        fd = self._open_target(raw, target, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            st = self._guard_identity(raw, handle.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ToolRefused(f"`{raw}` is not a regular file")
            data = read_at_most(handle, limit)
        return data[:limit], len(data) > limit

    def _over_quota(self) -> NoReturn:
        assert self.quota is not None
        raise ToolRefused(f"{self.quota.message()} (this run's writes, in total)")

    def _list(self, tool_input: Mapping[str, Any]) -> ToolOutcome:
        raw = self._arg(tool_input, "path", ".")
        target = self.resolve(raw or ".")
        try:
            fd = self._open_target(raw, target, os.O_RDONLY | os.O_DIRECTORY)
        except NotADirectoryError:
            return ToolOutcome(f"`{raw}` is not a folder", True, "error")
        except FileNotFoundError:
            return ToolOutcome(f"`{raw}` is not a folder", True, "error")
        fence = self.fence
        try:
            with os.scandir(fd) as entries:
                names = sorted(
                    e.name + ("/" if e.is_dir(follow_symlinks=False) else "")
                    for e in entries
                    if not fence.hides_entry(e)
                )
        finally:
            os.close(fd)
        return ToolOutcome("\n".join(names) if names else "(empty)", False, "ok")


def _absent(raw: str) -> FileNotFoundError:
    """What a worker meets at the control plane: nothing, as if it did not exist."""
    return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), raw)


def _listed(facts: dict[str, Any]) -> tuple[str, ...]:
    """The long `wrote` list's text, taken out of the facts (kept by hash, never sealed)."""
    text = facts.pop("wrote_text", None)
    return (text,) if isinstance(text, str) else ()


def _sealable_prefix(paths: list[str]) -> list[str]:
    """The longest prefix of `paths` a ledger line can seal (`sealable_changed`'s bound)."""
    for end in range(len(paths), 0, -1):
        if sealable_changed(tuple(paths[:end])) is not None:
            return paths[:end]
    return []


def _clip(text: str) -> str:
    if len(text) <= RESULT_LIMIT:
        return text
    return text[:RESULT_LIMIT] + f"\n… (truncated, {len(text) - RESULT_LIMIT} more characters)"
