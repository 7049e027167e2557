"""The control plane of a plan: one directory beside it, `.groundskeeper/<plan file name>/`,
holding everything the supervisor keeps (ledger, checkpoint, locks, telemetry, rejected plan
copies, the dock registry), the one-run-at-a-time lock, and which ledger a reviewer's path
means. The ledger's file names and bytes are `record.ledger_format`'s (imported, never the other
way round). Hiding the directory from workers is the sandbox fence's job
(`groundskeeper.sandbox.fence`); this module only names and creates it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import stat
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from groundskeeper.errors import GroundskeeperError, UsageError
from groundskeeper.fastclass import fastclass
from groundskeeper.record.ledger_format import LEDGER_FILE, LedgerUnreadable

#: The directory beside a plan that holds every plan's control directory.
CONTROL_ROOT = ".groundskeeper"

TELEMETRY_NAME = "_telemetry.db"
RUN_LOCK_NAME = "run.lock"
REJECTED_DIR = "rejected"
COMPONENTS_DIR = "components"

#: Files an earlier version kept beside the plan, moved into the control directory once.
LEGACY_NAMES = (
    "_steps.jsonl",
    "_steps.checkpoint",
    "_steps.lock",
    "_telemetry.db",
    "_telemetry.db-wal",
    "_telemetry.db-shm",
)


class ControlDirError(UsageError):
    """The control directory cannot be used as it is (a symlink, someone else's, a file)."""


class PlanInUse(GroundskeeperError):
    """Another run holds the plan; the message names it (pid, start time, command)."""


@fastclass(frozen=True, slots=True)
class ControlDir:
    """Where one plan's control files live. Paths only: `ensure` creates the directory."""

    plan_path: Path
    path: Path

    @classmethod
    def for_plan(cls, plan_path: Path) -> ControlDir:
        plan_path = Path(plan_path).absolute()
        return cls(plan_path, plan_path.parent / CONTROL_ROOT / plan_path.name)

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def ledger(self) -> Path:
        return self.path / LEDGER_FILE

    @property
    def telemetry(self) -> Path:
        return self.path / TELEMETRY_NAME

    @property
    def run_lock(self) -> Path:
        return self.path / RUN_LOCK_NAME

    @property
    def rejected(self) -> Path:
        return self.path / REJECTED_DIR

    @property
    def components(self) -> Path:
        return self.path / COMPONENTS_DIR

    def ensure(self) -> ControlDir:
        """Create the control directory (0700) if missing; refuse one that is not plainly ours.

        Each level is made and then checked without following links: a `.groundskeeper`
        planted as a symlink (by a setup, or by a worker of an earlier version) would
        otherwise carry the supervisor's files wherever it points."""
        for directory in (self.root, self.path):
            try:
                os.mkdir(directory, 0o700)
            except FileExistsError:
                pass
            except OSError as exc:
                raise ControlDirError(
                    f"cannot create the control directory {directory}: {exc.strerror}; the"
                    f" plan's folder must be writable (or move the plan somewhere it is)"
                ) from exc
            _check_ours(directory)
        return self

    def legacy_files(self) -> list[Path]:
        """Control files an earlier version left beside the plan."""
        beside = self.plan_path.parent
        found = [beside / name for name in LEGACY_NAMES if os.path.lexists(beside / name)]
        prefix = self.plan_path.name + ".rejected-"
        with contextlib.suppress(OSError):
            found += sorted(beside / n for n in os.listdir(beside) if n.startswith(prefix))
        return found

    def migrate(self) -> list[str]:
        """Move an earlier version's control files into the control directory (once: only
        while the control directory holds no ledger). Returns what was moved."""
        legacy = self.legacy_files()
        if not legacy or os.path.lexists(self.ledger):
            return []
        self.ensure()
        moved: list[str] = []
        for source in legacy:
            info = os.lstat(source)
            if not (stat.S_ISREG(info.st_mode) and info.st_uid == os.getuid()):
                raise ControlDirError(
                    f"{source}: an earlier version's control file that is not a regular file of"
                    f" yours; inspect it, then remove it or move it into {self.path}"
                )
            if source.name.startswith(self.plan_path.name + ".rejected-"):
                self.rejected.mkdir(mode=0o700, exist_ok=True)
                target = self.rejected / source.name
            else:
                target = self.path / source.name
            os.rename(source, target)
            moved.append(source.name)
        return moved


def find_ledger(path: Path) -> Path:
    """The ledger a reviewer's path means: a plan file (`*.org`) → its control directory's;
    a directory → its plan's (`plan.org`, else its only plan's), else a `_steps.jsonl` in it
    (a control directory, or a plan directory of an earlier version); any other file is
    taken as the ledger itself."""
    if not path.is_dir():
        return ControlDir.for_plan(path).ledger if path.suffix == ".org" else path
    root = path / CONTROL_ROOT
    default = ControlDir.for_plan(path / "plan.org").ledger
    if default.exists():
        return default
    found = sorted(root.glob(f"*/{LEDGER_FILE}")) if root.is_dir() else []
    if len(found) > 1:
        plans = ", ".join(p.parent.name for p in found)
        raise LedgerUnreadable(
            f"{path} holds the ledgers of several plans ({plans}); pass the plan file instead"
        )
    if found:
        return found[0]
    if (path / LEDGER_FILE).exists():
        return path / LEDGER_FILE
    return default


def _check_ours(directory: Path) -> None:
    try:
        info = os.lstat(directory)
    except OSError as exc:
        raise ControlDirError(f"{directory}: cannot use it: {exc.strerror}") from exc
    if stat.S_ISLNK(info.st_mode):
        raise ControlDirError(
            f"{directory} is a symlink; the control directory must be a real directory."
            f" Remove it (`rm {directory}`) and run again"
        )
    if not stat.S_ISDIR(info.st_mode):
        raise ControlDirError(f"{directory} is not a directory; move it aside and run again")
    if info.st_uid != os.getuid():
        raise ControlDirError(
            f"{directory} belongs to uid {info.st_uid}, not you; the control directory must be"
            " yours alone"
        )
    if info.st_mode & 0o022:
        raise ControlDirError(
            f"{directory} can be written by others (mode {stat.S_IMODE(info.st_mode):o});"
            f" run `chmod go-w {directory}`"
        )


# ---- one run at a time --------------------------------------------------------------------


class RunLock:
    """An exclusive lock on a plan for the length of a run (`resume`, `run`, `check --write`).

    flock on a file in the control directory: the kernel drops it when the holder dies, so a
    lock left by a killed run is simply taken over. The holder writes who it is (pid, start
    time, command) into the file for the refusal message of whoever comes next."""

    def __init__(self, control: ControlDir) -> None:
        self.control = control
        self._fd: int | None = None

    def acquire(self, wait: float = 0.0) -> RunLock:
        """Take the lock, or PlanInUse naming the holder. `wait`: seconds to keep trying
        first (a short appender — a hook, an MCP check — waits out another short one; a run
        holds the plan for minutes and a second one is refused at once)."""
        refuse_plan_links(self.control.plan_path)
        self.control.ensure()
        path = self.control.run_lock
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise ControlDirError(f"{path}: cannot open the run lock: {exc.strerror}") from exc
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ControlDirError(f"{path} is not a regular file; remove it and run again")
        deadline = time.monotonic() + wait
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise
                    time.sleep(0.05)
        except OSError as exc:
            holder = _read_holder(fd)
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise ControlDirError(f"{path}: cannot lock: {exc.strerror}") from exc
            raise PlanInUse(
                f"{self.control.plan_path} is in use by another run ({holder}); wait for it"
                " to finish, or stop it, then run again"
            ) from None
        me = {
            "pid": os.getpid(),
            "started": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": " ".join(sys.argv),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode(), 0)
        self._fd = fd
        return self

    @staticmethod
    def held(control: ControlDir) -> bool:
        """Whether some process holds the plan now; creates nothing (for readers)."""
        try:
            fd = os.open(control.run_lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)  # closing drops a lock this call took
        return False

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing drops the flock
            self._fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *_exc: object) -> None:
        self.release()


def refuse_plan_links(plan: Path) -> None:
    """A plan a run may hold is one file under one name. A run rewrites its plan by renaming a
    new file into place, and keeps its record and its lock under the name it is given: a
    symbolic link would be replaced by a file (the run blaming itself for tampering), and a
    second name of the same file (a link, a hard link) would run beside it under another lock.
    ControlDirError naming the file itself; a missing plan is its reader's to report."""
    try:
        info = plan.lstat()
    except OSError:
        return
    if stat.S_ISLNK(info.st_mode):
        real = plan.resolve()
        raise ControlDirError(
            f"{plan} is a symbolic link (to {os.readlink(plan)}): a run rewrites its plan in"
            f" place and keys its record and lock by the name it is given; run the file"
            f" itself ({real}; `--workdir` names the folder its checks see), or replace the"
            " link by a copy"
        )
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        raise ControlDirError(
            f"{plan} has {info.st_nlink} names (hard links): a run rewrites its plan by"
            " renaming a new file into place, which would split them, and keys its record and"
            " lock by one name; give the plan one name (copy it) and run that"
        )


def _read_holder(fd: int) -> str:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"pid {int(data['pid'])}, started {data['started']}, command `{data['command']}`"
    except (OSError, ValueError, KeyError, TypeError):
        return "holder unknown"
