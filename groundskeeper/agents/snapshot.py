"""The workdir as the user sealed it for agents' sessions: each file's path and content hash,
taken at `agent setup` and `agent seal`, kept in the plan's control directory and sealed by
its hash with the plan (`Fingerprint.snapshot`).

A hook has no write journal (the agent writes with its own tools), so what a session changed
is what differs from this snapshot: at a `Stop`, each file a passing check read that was in
the snapshot and differs now goes through the run's rule on a check's inputs
(`acceptance.check_inputs.session_inputs_changed`).

Bounded: at most `MAX_FILES` files, a file over `MAX_HASHED_BYTES` by its size and
modification time instead of its bytes. Skipped: the folders no check's inputs live in
(`SKIPPED`: `.git`, the control directory, virtual environments, `node_modules`, caches).
A file in a skipped folder that a task's check names (`agents.named`: in the check's text,
its program's or its tests': a key under `node_modules/`, `.venv/`, `__pycache__/`) is held
anyway, by its content, at most `MAX_NAMED_SKIPPED` of them (adversary-14 F2, p27).
What git ignores when the workdir is in a git work tree (`git ls-files --others --ignored
--exclude-standard --directory`: a `build/`, a `data/` listed in `.gitignore`) is held by its
stat key alone (device, inode, size, modification and change time; at most
`MAX_IGNORED_FILES`), never read: an answer key a check program opens there is held as any
other input (adversary-14 F2), and an ignored tree no check reads costs a walk. A file
skipped, past a bound or made after the snapshot is not in it: the rule treats it as new (the
work), never as an input that existed before.

It owns taking, writing and reading the snapshot; it decides nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from groundskeeper.agents.seal import HookFailure
from groundskeeper.fastclass import fastclass

if TYPE_CHECKING:
    from groundskeeper.plan.spec import TaskSpec

__all__ = [
    "MAX_FILES",
    "MAX_HASHED_BYTES",
    "SKIPPED",
    "SNAPSHOT_FILE",
    "Snapshot",
    "changed_since",
    "in_skipped",
    "load_sealed",
    "load_snapshot",
    "readable",
    "take_snapshot",
    "write_snapshot",
]

#: The snapshot's file in the plan's control directory.
SNAPSHOT_FILE = "workdir-snapshot.json"

#: Files a snapshot holds at most (the rest are not in it: said at set-up).
MAX_FILES = 50_000

#: Git-ignored files a snapshot holds by their stat key at most, beside `MAX_FILES`.
MAX_IGNORED_FILES = 50_000

#: A larger file is hashed too (streamed), and the snapshot keeps its stat key beside the
#: hash: while the key is unchanged the file is not read again. The key holds the change
#: time, which no `touch -r` puts back, so an edit with its mtime restored is hashed again.
MAX_HASHED_BYTES = 64 * 1024 * 1024

#: Files in a skipped folder that a check names, held at most (`take_snapshot`'s `named`).
MAX_NAMED_SKIPPED = 1_000

#: Folders never walked, at any depth, but for the files a check names there
#: (`MAX_NAMED_SKIPPED`): no other check input lives there (or the agent cannot reach it:
#: the control directory, never held).
SKIPPED = frozenset(
    {
        ".git",
        ".groundskeeper",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        "node_modules",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
    }
)


@fastclass(frozen=True, slots=True)
class Snapshot:
    """Each file's identity (relative, `/`-separated path → `sha256:HEX`, `link:TARGET`,
    `sha256:HEX;stat:DEV:INO:SIZE:MTIME_NS:CTIME_NS` for a file over `MAX_HASHED_BYTES`, or
    `stat:DEV:INO:SIZE:MTIME_NS:CTIME_NS` alone for a file git ignores), and whether every
    file of the workdir is in it."""

    files: dict[str, str]
    complete: bool
    ignored_by_git: bool
    #: the modules among `files` that held only values (`work_modules.holds_data_only`): a
    #: test's expected values kept as Python, the checks' data (adversary-19 F20)
    data: tuple[str, ...] = ()
    #: the examples each file a doctest check runs held (`acceptance.doctests`: file →
    #: digests), which a pass of that check must not have lost
    examples: tuple[tuple[str, tuple[str, ...]], ...] = ()
    #: each test module's top-level statements (`acceptance.appended_tests`: module →
    #: digests), taken when a task asks for tests: what a test appended to it is told by
    statements: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def to_bytes(self) -> bytes:
        document: dict[str, object] = {
            "version": 1,
            "complete": self.complete,
            "ignored_by_git": self.ignored_by_git,
            "files": dict(sorted(self.files.items())),
        }
        if self.data:  # absent when none: a snapshot without any reads as before
            document["data_modules"] = sorted(self.data)
        if self.examples:  # the same
            document["doctest_examples"] = {name: list(d) for name, d in sorted(self.examples)}
        if self.statements:  # the same
            document["test_statements"] = {name: list(d) for name, d in sorted(self.statements)}
        return (json.dumps(document, sort_keys=True, separators=(",", ":")) + "\n").encode()


def identity(path: Path, held: str | None = None) -> str | None:
    """What a snapshot holds of one file (None: absent, or not a file or link). A file over
    `MAX_HASHED_BYTES` is hashed as well, its stat key kept beside the hash; when `held` (what
    the snapshot holds of it) carries the same key, it is not read again; a file `held` by
    its stat key alone (git ignores it) is compared by that key (`_stat_key`)."""
    if held is not None and held.startswith("stat:"):
        return _stat_key(path)
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        try:
            return "link:" + os.readlink(path)
        except OSError:
            return None
    if not stat.S_ISREG(info.st_mode):
        return None
    key = None
    if info.st_size > MAX_HASHED_BYTES:
        key = _stat_text(info)
        if held is not None and held.startswith("sha256:") and held.endswith(";" + key):
            return held
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError:
        return None
    found = "sha256:" + digest.hexdigest()
    return found if key is None else f"{found};{key}"


def _content(found: str | None) -> str | None:
    """The part of a file's identity that names its bytes (a stat key beside it dropped)."""
    return None if found is None else found.split(";stat:", 1)[0]


def _git_ignored(root: Path) -> set[str] | None:
    """What git ignores in `root` (relative paths, a folder with a trailing `/`), or None
    when `root` is in no git work tree (or git is not installed)."""
    import subprocess  # only a snapshot is taken with git: a hook's cold start skips it

    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--others", "--ignored",
             "--exclude-standard", "--directory"],
            capture_output=True,
            timeout=60,
            check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    return {p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p}


def take_snapshot(
    root: Path,
    named: Iterable[str] = (),
    doctests: Iterable[str] = (),
    tasks: Iterable[TaskSpec] = (),
) -> Snapshot:
    """The workdir `root` now (see the module for what is skipped and the bounds); `named`:
    the paths a check names (relative, `/`-separated) — each file among them, or under a
    directory among them, that lies in a skipped folder is held by its content; `doctests`:
    the files a doctest check runs the examples of, whose examples are held too; `tasks`:
    the plan's, whose tests' references are the check's data (`work_modules`)."""
    root = root.resolve()
    ignored = _git_ignored(root)
    skip = ignored or set()
    files: dict[str, str] = {}
    complete = True
    stack = [(root, False)]
    kept_ignored = 0
    while stack:
        directory, under_ignored = stack.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            relative = os.path.relpath(entry.path, root).replace(os.sep, "/")
            if entry.is_dir(follow_symlinks=False):
                if entry.name not in SKIPPED:
                    stack.append((Path(entry.path), under_ignored or relative + "/" in skip))
                continue
            if under_ignored or relative in skip:
                if kept_ignored >= MAX_IGNORED_FILES:
                    complete = False
                    continue
                found = _stat_key(Path(entry.path))
                kept_ignored += found is not None
            elif len(files) - kept_ignored >= MAX_FILES:
                complete = False
                continue
            else:
                found = identity(Path(entry.path))
            if found is not None:
                files[relative] = found
    complete &= _hold_named(root, named, files)
    from groundskeeper.acceptance.work_modules import data_modules, reference_modules

    held = [p for p, found in files.items() if p.endswith(".py") and found.startswith("sha256:")]
    data = tuple(sorted(data_modules(root, held) | reference_modules(root, tasks, held)))
    from groundskeeper.acceptance.doctests import examples_in, sealable

    examples = sealable({name: examples_in(root / name) for name in doctests})
    held_examples = tuple((name, tuple(d)) for name, d in examples.items())
    from groundskeeper.acceptance.appended_tests import test_statements

    statements = tuple(test_statements(root, held, tasks).items())
    return Snapshot(files, complete, ignored is not None, data, held_examples, statements)


def in_skipped(path: str) -> bool:
    """Whether the walk never reaches `path` (a folder of it is one `SKIPPED`)."""
    return any(part in SKIPPED for part in path.split("/")[:-1])


def _hold_named(root: Path, named: Iterable[str], files: dict[str, str]) -> bool:
    """Hold each file of `named` (a directory's files below it) that lies in a skipped folder
    other than the control directory, by its content, into `files`; False past
    `MAX_NAMED_SKIPPED`."""
    held = 0
    for name in sorted(set(named)):
        parts = name.split("/")
        if ".groundskeeper" in parts or ".." in parts or not in_skipped(name + "/"):
            continue
        found: list[str] = []
        path = root / name
        if path.is_dir() and not path.is_symlink():
            if parts[-1] in SKIPPED and len(parts) == 1:
                continue  # a whole skipped folder (`ls node_modules`): no file named
            for directory, dirs, names in os.walk(path):
                dirs[:] = [d for d in sorted(dirs) if d != ".groundskeeper"]
                base = os.path.relpath(directory, root).replace(os.sep, "/")
                found += [f"{base}/{n}" for n in sorted(names)]
                if len(found) > MAX_NAMED_SKIPPED:
                    break
        else:
            found.append(name)
        for relative in found:
            if relative in files or not in_skipped(relative):
                continue
            if held >= MAX_NAMED_SKIPPED:
                return False
            identity_now = identity(root / relative)
            if identity_now is not None:
                files[relative] = identity_now
                held += 1
    return True


def _stat_key(path: Path) -> str | None:
    """A file git ignores, by its stat key alone (a link by its target); None: not a file."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return identity(path)
    if not stat.S_ISREG(info.st_mode):
        return None
    return _stat_text(info)


def _stat_text(info: os.stat_result) -> str:
    """A file's stat key: what no edit leaves as it was (the change time cannot be set back)."""
    return f"stat:{info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}"


def write_snapshot(control: Path, snapshot: Snapshot) -> str:
    """Write `snapshot` into the control directory; its SHA-256 (what the seal holds)."""
    data = snapshot.to_bytes()
    path = control / SNAPSHOT_FILE
    temporary = path.with_name(path.name + f".{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)
    return hashlib.sha256(data).hexdigest()


def load_snapshot(control: Path, sealed_sha256: str) -> dict[str, str]:
    """The sealed snapshot's files; HookFailure when the file is gone or is not the one
    sealed (its hash differs)."""
    return load_sealed(control, sealed_sha256).files


def load_sealed(control: Path, sealed_sha256: str) -> Snapshot:
    """The sealed snapshot (`load_snapshot`'s rules), its data modules too."""
    path = control / SNAPSHOT_FILE
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise HookFailure(
            "snapshot",
            f"the workdir snapshot sealed with the plan ({path}) cannot be read:"
            f" {exc.strerror}; once you have looked at the workdir, `groundskeeper agent seal"
            " --accept-changes` takes it again",
        ) from exc
    if hashlib.sha256(data).hexdigest() != sealed_sha256:
        raise HookFailure(
            "snapshot",
            f"the workdir snapshot {path} is not the one sealed with the plan: it was changed;"
            " once you have looked at the workdir, `groundskeeper agent seal --accept-changes`"
            " takes it again",
        )
    try:
        document = json.loads(data)
        files = {str(k): str(v) for k, v in document["files"].items()}
        modules = tuple(str(p) for p in document.get("data_modules", ()))
        examples = tuple(
            (str(name), tuple(str(d) for d in digests))
            for name, digests in document.get("doctest_examples", {}).items()
        )
        statements = tuple(
            (str(name), tuple(str(d) for d in digests))
            for name, digests in document.get("test_statements", {}).items()
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise HookFailure("snapshot", f"the workdir snapshot {path} cannot be read") from exc
    complete, by_git = bool(document.get("complete")), bool(document.get("ignored_by_git"))
    return Snapshot(files, complete, by_git, modules, examples, statements)


def changed_since(root: Path, held: dict[str, str], paths: Iterable[str] | None) -> set[str]:
    """Each of `paths` (None: every file the snapshot holds) that the snapshot `held` and
    that differs now or is gone."""
    names = held.keys() if paths is None else [p for p in paths if p in held]
    return {
        name
        for name in names
        if _content(identity(root / name, held[name])) != _content(held[name])
    }


def readable(path: Path) -> bool:
    """Whether `path` is there as a file a check can read (a link: its target read), not
    gone, a directory or unreadable."""
    try:
        with open(path, "rb"):
            pass
    except OSError:
        return False
    return not path.is_dir()
