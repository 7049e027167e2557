"""A run's protected and hidden inputs (issues 23 and 28): which files each task protects
(its patterns and the expected files its check compares against), which the run hides, their
hashes at run start and at each task's start, and the fences a worker's attempt and the
judge are bound by. The sandbox's fence enforces them; `run_checks` asks `changed` before a
check runs. It owns the rule "protection follows paths, per task"; it does not seal.

A task's protection binds its own worker (and so, being inherited, its subtree's), not every
worker of the run: a sibling whose job is to regenerate the file is not refused, and the
task's check compares against what the file held when the task started. A change its own
worker tried and the fence refused fails the attempt's check all the same, named: the worker
tried to rewrite what it is judged against, whatever the tool. Hidden inputs bind
every worker of the run — an answer key one worker could read, it could pass on through the
shared workdir — and their hashes are the run-start ones, since no worker may change them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from groundskeeper.acceptance import protect
from groundskeeper.acceptance.added_tests import test_modules_read
from groundskeeper.acceptance.appended_tests import appended_to, test_statements
from groundskeeper.acceptance.check_inputs import (
    entitled,
    inputs_gone,
    may_remove,
    module_index,
    read_inputs_changed,
    read_inputs_made,
    test_paths,
)
from groundskeeper.acceptance.check_links import links_made
from groundskeeper.acceptance.doctests import (
    examples_in,
    examples_lost,
    sealable,
    task_doctest_files,
)
from groundskeeper.acceptance.work_modules import (
    data_modules,
    reference_modules,
    source_reader,
)
from groundskeeper.diagnostics import Diagnostic
from groundskeeper.path_patterns import covering, covers, naming
from groundskeeper.plan.contract_syntax import protected_by
from groundskeeper.plan.expected import (
    PYTEST_CONFIGURATION,
    UNSURE,
    asks_for_tests,
    asks_to_change,
    configuration_kept,
    counts_pytest_runs,
    existing_files,
    expected_files,
    expected_inputs,
    freed,
    reading,
    unsure_message,
)
from groundskeeper.plan.spec import PlanSpec, TaskSpec
from groundskeeper.plan.suite_paths import later_in_order, left_to_later, suite_tests_asked
from groundskeeper.plan.test_paths import runs_pytest_check
from groundskeeper.pytest_files import SHARED, is_test_module, section_name, section_sha256
from groundskeeper.record.backing import unknown_maker
from groundskeeper.sandbox import fence as fences

__all__ = ["SNAPSHOTS_DIR", "TRIED", "RunPaths", "Snapshots", "unaccounted"]

#: What a protected input's reason adds when the worker's change to it was refused.
TRIED = "the worker tried to change it, and the sandbox refused"

Hashes = dict[str, str | None]

#: The most files the run-start snapshot lists; past it, every file counts as there before.
MAX_SNAPSHOT = 200_000

#: How far before a snapshot a file's inode change still counts as after it: file times come
#: from the kernel's coarse clock, a tick (up to 10 ms) behind the one `time.time_ns` reads.
COARSE_CLOCK_NS = 50_000_000

#: Where the run-start snapshots are kept, in the plan's control directory
SNAPSHOTS_DIR = "workdir"

#: The run-start snapshot also holds the SHA-256 of each regular file up to this size, while
#: the run's budget lasts (`MAX_HASHED_TOTAL` bytes, `MAX_HASHED_FILES` files): what a file a
#: stopped call changed held before it, so writing those bytes back restores it. A file past
#: them is held by its size and time alone, which no restore brings back.
MAX_HASHED_BYTES = 1024 * 1024
MAX_HASHED_TOTAL = 64 * 1024 * 1024
MAX_HASHED_FILES = 20_000


def _stamp(workdir: Path, path: str) -> tuple[int, int] | None:
    try:
        info = os.lstat(workdir / path)
    except OSError:
        return None
    return (info.st_size, info.st_mtime_ns)


def _test_files(workdir: Path, task: TaskSpec) -> list[str]:
    """The files under the test paths a plain pytest or unittest check names (`pytest -q
    tests`: every file under tests/; a file path: that file), there now."""
    found: list[str] = []
    for path in test_paths(task):
        if (workdir / path).is_file():
            found.append(path)
        elif (workdir / path).is_dir():
            try:
                found += protect.matched_files(workdir, [f"/{path}/**"])
            except ValueError:
                continue  # past MAX_PROTECTED: the verdict's rule still holds them
    return found


def _snapshot(
    workdir: Path,
    links: dict[str, str] | None = None,
    since: int | None = None,
    hashes: dict[str, str] | None = None,
) -> dict[str, tuple[int, int]] | None:
    """Every file under `workdir` (no control directory, no link followed) → (size, mtime);
    each symbolic link among them, or among its directories, also into `links` (→ target);
    each regular file's SHA-256 into `hashes`, within `MAX_HASHED_BYTES` and the budget.
    With `since` (ns): only the files whose inode changed at or after it (ctime, which no
    worker can set back), or whose stamp is not what `since`'s snapshot would show."""
    found: dict[str, tuple[int, int]] = {}
    budget = [MAX_HASHED_TOTAL, MAX_HASHED_FILES]
    root = os.path.realpath(workdir)
    for directory, dirs, files in os.walk(root, followlinks=False):
        dirs[:] = [d for d in dirs if d.casefold() not in fences.HIDDEN_NAMES]
        base = os.path.relpath(directory, root)
        for name in dirs:
            if links is not None and os.path.islink(os.path.join(directory, name)):
                relative = name if base == "." else f"{base}/{name}".replace(os.sep, "/")
                with contextlib.suppress(OSError):
                    links[relative] = os.readlink(os.path.join(directory, name))
        for name in files:
            relative = name if base == "." else f"{base}/{name}".replace(os.sep, "/")
            try:
                info = os.lstat(os.path.join(directory, name))
            except OSError:
                continue
            if since is not None and info.st_ctime_ns < since:
                continue
            found[relative] = (info.st_size, info.st_mtime_ns)
            if (
                hashes is not None
                and stat.S_ISREG(info.st_mode)
                and info.st_size <= min(MAX_HASHED_BYTES, budget[0])
                and budget[1] > 0
            ):
                digest = protect.file_sha256(Path(directory, name))
                if digest is not None:
                    hashes[relative] = digest
                    budget[0] -= info.st_size
                    budget[1] -= 1
            if links is not None and stat.S_ISLNK(info.st_mode):
                with contextlib.suppress(OSError):
                    links[relative] = os.readlink(os.path.join(directory, name))
            if len(found) > MAX_SNAPSHOT:
                return None
    return found


def _compared_globs(task: TaskSpec, workdir: Path) -> tuple[str, ...]:
    """The glob patterns the task's check compares against that cover files now (`for k in
    keys/*; do cmp -s out.txt "$k"`: any accepted answer): kept as patterns, so a file the
    worker adds under one (an answer of its own among the accepted) is refused as the
    existing ones are (adversary-17 F12). A pattern covering nothing yet is the work's. A
    directory it compares against (`grep -rqxF "$(cat out.txt)" accepted`, `diff -r`, what
    `ls`/`find` list into a loop) is read the same way, as the pattern of every file under
    it — unless the task's text asks to change it ("write the pages into out/") or
    `:writable:` frees a file there."""
    found: list[str] = []
    for name in expected_files(task):
        pattern = name
        if not any(c in name for c in "*?["):
            folder = name.rstrip("/")
            if not folder or not (workdir / folder).is_dir() or (workdir / folder).is_symlink():
                continue
            if asks_to_change(task, f"{folder}/") or covers(task.writable, f"{folder}/x"):
                continue
            pattern = f"{folder}/**/*"
        if not covers(task.hide, pattern) and existing_files(workdir, pattern):
            found.append(pattern)
    return tuple(dict.fromkeys(found))


def _readable(path: Path) -> bool:
    """`agents.snapshot.readable`: the hook's reading of "gone" is the run's."""
    from groundskeeper.agents.snapshot import readable

    return readable(path)


def unaccounted(
    workdir: Path,
    now: Mapping[str, tuple[int, int]] | None,
    snapshot: bytes | None,
    sealed: Iterable[str],
    exclude: Iterable[str],
) -> tuple[list[str], list[str]]:
    """What `workdir` holds now (`now`: its snapshot; None: taken here) that neither an
    earlier run's start `snapshot` (None: lost, so every file counts) nor a call of it sealed
    (`sealed`) explains: (files made since — not in the snapshot, and files changed or removed
    since — each there then whose stamp differs, or whose inode changed after it was taken
    (less the file system's coarse clock)). The paths `exclude`d (the plan, written by the
    supervisor) never. The runner holds them against the tasks in flight then; `audit`
    reports them."""
    if now is None:
        now = _snapshot(workdir) or {}
    skip = set(sealed) | set(exclude)
    if snapshot is None:
        return [], sorted(p for p in now if p not in skip)
    data = json.loads(snapshot)
    before: dict[str, Any] = data["files"]
    held = snapshot_hashes(snapshot)
    recent = _snapshot(workdir, since=int(data["taken_ns"]) - COARSE_CLOCK_NS)
    touched = set(now) if recent is None else set(recent)
    made = sorted(p for p in now if p not in before and p not in skip)
    changed = sorted(
        p
        for p in before
        if p not in skip
        and (p not in now or list(now[p]) != list(before[p]) or p in touched)
        # the bytes it held at the snapshot, written back: restored, provably
        and not (p in now and p in held and protect.input_sha256(workdir, p) == held[p])
    )
    return made, changed


def snapshot_hashes(snapshot: bytes | None) -> dict[str, str]:
    """The SHA-256 a run-start `snapshot` holds of each file it hashed (`MAX_HASHED_BYTES`):
    the files a restore of those bytes frees. None, or a snapshot from before hashes: none."""
    if snapshot is None:
        return {}
    found = json.loads(snapshot).get("sha256")
    if not isinstance(found, dict):
        return {}
    return {str(p): h for p, h in found.items() if isinstance(h, str)}


def _earlier(path: str, task_id: str) -> str:
    return (
        f"protected input changed: {path}: changed in an earlier run of the plan by the worker"
        f" of task {task_id}, whose task does not ask to change it; restore it, or resume with"
        " `--accept-changes` if it is right as it is"
    )


def _earlier_read(reason: str, earlier: Mapping[str, bool]) -> str:
    """A check backstop's reason, saying so when the change was an earlier run's."""
    sealed = [known for path, known in earlier.items() if f"`{path}`" in reason]
    if not sealed:
        return reason
    if sealed[0]:
        return (
            f"{reason}; it was changed in an earlier run of the plan: restore it, or resume"
            " with `--accept-changes` if it is right as it is"
        )
    return (
        f"{reason}; it was changed in an earlier run of the plan (what it held before is not"
        " sealed): once it holds what it should, resume with `--accept-changes`"
    )


class Snapshots:
    """Run-start workdir snapshots by their SHA-256, one file each, in the control directory
    (hidden from workers): the run-start seals the hash, and reading back re-hashes, so a
    snapshot changed by anyone reads as lost (None), never as what it now says."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def keep(self, data: bytes) -> str:
        digest = hashlib.sha256(data).hexdigest()
        path = self.root / digest
        if not path.exists():
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            temp = path.with_name(f".tmp-{digest}-{os.getpid()}")
            temp.write_bytes(data)
            os.replace(temp, path)
        return digest

    def read(self, digest: str) -> bytes | None:
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            return None
        try:
            data = (self.root / digest).read_bytes()
        except OSError:
            return None
        return data if hashlib.sha256(data).hexdigest() == digest else None


def _unrecorded_read(
    reason: str, unrecorded: Mapping[str, Sequence[str]], restorable: Collection[str]
) -> str:
    """A check backstop's reason, saying so when the change was an unrecorded call's, and
    what frees it: a restore only when the run-start snapshot holds what the file held
    (`restorable`: its hash, or it was made by the call: removing it restores)."""
    for path, tasks in unrecorded.items():
        if f"`{path}`" in reason:
            who = f"changed by an unrecorded call of task {', '.join(sorted(tasks))}'s worker"
            if path in restorable:
                return (
                    f"{reason}; {who} (the run stopped mid-call): restore it (remove it, if the"
                    " call made it), or resume with `--accept-changes` if it is right as it is"
                )
            return (
                f"{reason}; {who} (the run stopped mid-call; what it held before is not"
                " sealed, only its size and time, which no restore brings back): once it holds"
                " what it should, resume with `--accept-changes`"
            )
    return reason


class RunPaths:
    """The protected and hidden inputs of one run on `workdir`, read as it starts."""

    def __init__(self, workdir: Path, spec: PlanSpec) -> None:
        self.workdir = workdir
        hide = tuple(dict.fromkeys(p for task in spec for p in task.hide))
        hide += protect.hidden_bytecode(workdir, hide) if hide else ()
        self._hide = hide
        #: the task id → the patterns its worker may not change: its `:protect:` patterns and
        #: its expected files that exist now (as anchored paths)
        self.keep: dict[str, tuple[str, ...]] = {}
        #: expected files protected without a `:protect:` naming them → the tasks comparing
        self.automatic: dict[str, list[str]] = {}
        self.hide_of: dict[str, tuple[str, ...]] = {}
        tasks = list(spec)
        self._specs = {t.task_id: t for t in tasks}
        #: the task id → the files its doctest check runs the examples of; each such file →
        #: its examples at run start (`acceptance.doctests`: none lost when the check passes)
        self._doctest_files = {t.task_id: task_doctest_files(t) for t in tasks}
        self._doctests = {
            name: examples_in(workdir / name)
            for names in self._doctest_files.values()
            for name in names
        }
        #: the modules that hold only values before any worker ran (set with the snapshot
        #: below): a test's expected values kept as Python, the check's data (adversary-19 F20)
        self._data: frozenset[str] = frozenset()
        self.automatic = expected_inputs(tasks, workdir)
        #: the task id → the glob patterns its check compares against that cover files now
        self.compared_globs: dict[str, tuple[str, ...]] = {}
        for task in tasks:
            auto = [p for p, ids in self.automatic.items() if task.task_id in ids]
            globs = _compared_globs(task, workdir)
            self.compared_globs[task.task_id] = globs
            self.keep[task.task_id] = task.protect + tuple(f"/{p}" for p in [*auto, *globs])
            self.hide_of[task.task_id] = task.hide
        #: expected files no task may change (none frees one with `:writable:` or asks for
        #: it): every worker of the run is kept from them, and checks compare against what
        #: they held at run start — an earlier sibling's rewrite is not an expectation
        self.pinned = tuple(p for p in sorted(self.automatic) if not freed(tasks, p))
        #: pytest's configuration, when a check runs pytest itself: kept from every worker
        #: (made or changed, at any depth) and measured against run start, like `pinned`
        self.configuration = configuration_kept(tasks, workdir)
        pins = tuple(f"/{p}" for p in self.pinned) + self.configuration
        #: pytest's own part of each shared configuration file a task frees (its version
        #: bumped, a flake8 option set), when a check runs pytest: file → its digest at run
        #: start (`pytest_files.section_sha256`); the part stays every check's (adv24c F4)
        self.sections: dict[str, str | None] = {}
        if any(runs_pytest_check(t) or counts_pytest_runs(t) for t in tasks):
            freed_shared = [n for n in SHARED if n not in self.configuration]
            with contextlib.suppress(ValueError):  # past MAX_PROTECTED: the file is held whole
                self.sections = {
                    f: section_sha256(workdir / f)
                    for f in protect.matched_files(workdir, freed_shared)
                }
        if pins:
            for task in tasks:
                self.keep[task.task_id] = tuple(dict.fromkeys(self.keep[task.task_id] + pins))
        #: files kept from one task's own worker because its check runs them as tests (a
        #: plain pytest check's test paths) or read them before any work (red-first), and
        #: its text does not ask to change them → the tasks (`check_inputs`)
        self.read_kept: dict[str, list[str]] = {}
        for task in tasks:
            self._keep_read(task.task_id, _test_files(workdir, task), start=False)
        #: hidden inputs found at run start (hidden from every worker, seen by checks)
        self.hidden = protect.matched_files(workdir, hide)
        kept = protect.matched_files(workdir, [p for ps in self.keep.values() for p in ps])
        #: what every protected or hidden input held before any worker ran (sealed)
        self.start: Hashes = {
            f: protect.input_sha256(workdir, f) for f in sorted({*kept, *self.hidden})
        }
        #: (task, file) whose text both asks to change a protected file and negates: kept
        self.unsure = [
            (t.task_id, p) for p in sorted(self.automatic) for t in tasks if reading(t, p) == UNSURE
        ] + [
            (t.task_id, p)
            for p in self.configuration
            if p in PYTEST_CONFIGURATION and "*" not in p
            for t in tasks
            if reading(t, p, anywhere=True) == UNSURE
        ]
        #: what each protected input may hold now: its run-start hash, re-based when a
        #: worker whose task is entitled to change it (its text asks, `:writable:`) did
        self._current: Hashes = dict(self.start)
        #: protected inputs a worker changed whose task is not entitled to: file → task id
        self._intruded: dict[str, str] = {}
        #: files an earlier run's worker made (`made_earlier`): their maker is the first task
        #: the record names, which a run cut short may not know for sure
        self._made_earlier: set[str] = set()
        #: the task id → the names under the `pytest` contracts' test paths its worker may
        #: write after all (adversary-8 F9: "add tests/test_mul.py"; pytest's configuration
        #: never), the test files there its text asks to remove by name (adversary-17 F16:
        #: their red-first tests may go), (file, old, new) for each test its text asks to
        #: rename (adversary-19 F19: the red-first test runs by its new name, moved, not gone),
        #: and the new test modules it may make when its text asks for tests (adversary-20 F2)
        self.free, self.removed, self.renamed, self.new_tests = suite_tests_asked(tasks)
        #: the task id → the tasks with a `pytest` contract that start only once it is DONE
        #: (`:ORDERED:`): a red-first test one of them names may be left to it (F22)
        self._later = later_in_order(spec)
        self._hiding = fences.hiding_inputs(workdir, self.hidden, hide)
        self._at_task: dict[str, Hashes] = {}
        self._refused: dict[str, fences.Refusals] = {}  # the task's latest attempt's
        self._root = os.path.realpath(workdir)
        self._lock = threading.Lock()
        #: what the workdir held before any worker ran: file → (size, mtime); None past
        #: `MAX_SNAPSHOT` files (then every file counts as there before the work)
        #: every symbolic link under the workdir at run start → its target (`check_links`)
        links: dict[str, str] = {}
        #: when the snapshot was taken (ns, the clock file times are set from)
        self.taken_ns = time.time_ns()
        #: the SHA-256 of each file the snapshot hashed (`MAX_HASHED_BYTES`)
        self._hashes: dict[str, str] = {}
        self._before = _snapshot(workdir, links, hashes=self._hashes)
        # the check's modules of values, and the tests' references (adv24 F6): not the work
        self._data = data_modules(workdir, self._before or ()) | reference_modules(
            workdir, tasks, self._before or ()
        )
        self._links_before = links if self._before is not None else None
        #: each test module's top-level statements at run start, when some task asks for
        #: tests (`acceptance.appended_tests`): a test appended to one is that task's work
        self._statements = test_statements(workdir, self._before or (), tasks)
        #: the task id → the tests appended to modules that were there which its check's
        #: latest pass stood on (module → names): run once more without them
        self._appended: dict[str, dict[str, tuple[str, ...]]] = {}
        #: every file a worker of the run changed → the tasks whose workers did, in order
        self._writes: dict[str, list[str]] = {}
        #: files a worker made (not there at run start) → the first task whose worker did
        self._made: dict[str, str] = {}
        #: a task → the files other tasks' workers had made when it first started
        self._made_before: dict[str, frozenset[str]] = {}
        #: tasks one of whose attempts changed files no journal could list
        self._unlisted: list[str] = []
        #: protected inputs an earlier run's worker changed, not entitled to, and that do not
        #: hold what they held before any work: file → (that task, the sealed first hash)
        self._carried: dict[str, tuple[str, str | None]] = {}
        #: files whose changes by earlier runs' workers `_writes` holds → whether what they
        #: held before any work is sealed (`Record.first`: then restoring them is enough)
        self._earlier_written: dict[str, bool] = {}
        self._modules: dict[str, frozenset[str]] | None = None
        #: files a call of an earlier run's worker changed that no sealed line lists (the run
        #: stopped mid-call) → the tasks that were in flight (`unrecorded`)
        self._unrecorded: dict[str, list[str]] = {}
        #: those of them not there before: made by one of the tasks (`unknown_maker`)
        self._unrecorded_made: set[str] = set()
        #: what the latest run's start snapshot hashed (`unaccounted`), and the files an
        #: unrecorded call changed that a restore frees (`unrecorded`)
        self._earlier_hashes: dict[str, str] = {}
        self._restorable: set[str] = set()
        #: files there before an earlier run's stopped call, gone since (`unrecorded`), or
        #: there before the work and removed by an earlier run's worker (`earlier_runs`)
        self._gone_earlier: set[str] = set()
        #: those an earlier run's sealed tool call removed (`earlier_runs`)
        self._removed_earlier: set[str] = set()

    @property
    def holds_out(self) -> bool:
        """Whether the plan hides any input: then no check's output reaches a worker."""
        return bool(self._hide)

    def inputs_of(self, task_id: str) -> list[str]:
        """The files the task protects now (made since run start included)."""
        return protect.matched_files(self.workdir, self.keep.get(task_id, ()))

    def task_started(self, task_id: str) -> Hashes:
        """Hash the task's protected inputs as its work starts: its checks compare against
        these from now on (a sibling may have regenerated one since the run started)."""
        hashes = {f: protect.input_sha256(self.workdir, f) for f in self.inputs_of(task_id)}
        with self._lock:
            self._at_task[task_id] = hashes
            if task_id not in self._made_before:
                made = (p for p, maker in self._made.items() if maker != task_id)
                self._made_before[task_id] = frozenset(made)
        return hashes

    def worker_fence(self, task_id: str) -> fences.Fence:
        """What the task's worker is bound by, for one attempt: the run's hidden inputs,
        absent, and its own protected inputs — the files now and every name its patterns
        cover, made later; each change it refuses is noted for `changed`."""
        keep = self.keep.get(task_id, ())
        free = self.free.get(task_id, ())
        files = [f for f in self.inputs_of(task_id) if not covers(free, f)] if keep else []
        with self._lock:
            # the temporaries its earlier attempts left beside a file it may change: still
            # its own to rename or remove (`staged_left` holds them while they stay)
            earlier = self._refused.get(task_id)
            witness = fences.Refusals(earlier.staged() if earlier is not None else ())
            self._refused[task_id] = witness
        # a new test module its text asks for (`suite_tests_new`): made only, never one there
        allow = (*free, *self.new_tests.get(task_id, ()))
        return self._hiding.union(fences.protecting(self.workdir, files, keep, witness, allow))

    def refused(self, task_id: str) -> list[str]:
        """The task's protected inputs its latest attempt's worker tried to change and the
        fence refused (a directory holding one moved or removed included; a name under a
        protected or hidden pattern, made or renamed there, as that name)."""
        with self._lock:
            witness = self._refused.get(task_id)
        keep = self.keep.get(task_id, ())
        if witness is None or not (keep or self._hide):
            return []
        inputs = self.inputs_of(task_id) if keep else []
        found: list[str] = []
        for real in witness.paths():
            if real != self._root and not real.startswith(self._root + os.sep):
                continue
            relative = os.path.relpath(real, self._root).replace(os.sep, "/")
            inside = "" if relative == "." else relative + "/"
            hit = [f for f in inputs if f == relative or f.startswith(inside)]
            if (
                not hit
                and relative != "."
                and (covers(keep, relative) or covers(self._hide, relative))
            ):
                hit = [relative]  # a name made or renamed under a protected or hidden pattern
            found += [
                f
                for f in hit
                if not covers(self.free.get(task_id, ()), f)
                and (f in inputs or not covers(self.new_tests.get(task_id, ()), f))
            ]
        return list(dict.fromkeys(found))

    def staged_left(self, task_id: str) -> list[str]:
        """The names the task's latest attempt's worker made under a protected pattern beside
        a file it may change (`fence.STAGED`: an edit in place's temporary file) that are
        still there: a new file where the task may only change the one it asks for."""
        with self._lock:
            witness = self._refused.get(task_id)
        if witness is None:
            return []
        found = []
        for real in witness.staged():
            if real.startswith(self._root + os.sep) and os.path.lexists(real):
                found.append(os.path.relpath(real, self._root).replace(os.sep, "/"))
        return found

    def protection(self, task_id: str, path: str) -> str:
        """What keeps `path` (relative to the workdir) from the task's worker, said to it with
        each change the fence refused and in the reason its attempt fails: the first of a
        hidden input, pytest's configuration, an expected file a check compares against, a
        file the task's check reads (`read_kept`), a file of one of the task's contracts, a
        protected pattern."""
        task = self._specs.get(task_id)
        if covers(self._hide, path):
            return "a hidden input"
        if self.configuration and covers(self.configuration, path):
            return "pytest's configuration, kept while a check runs pytest or a DONE counts a run"
        if path in self.automatic:
            return (
                f"an expected file the check of {', '.join(self.automatic[path])} compares against"
            )
        glob = covering(self.compared_globs.get(task_id, ()), path)
        if glob is not None:
            return f"a file under `{glob}`, which the task's check compares against"
        if task_id in self.read_kept.get(path, ()):
            return "a file the task's check reads (its tests, or what it read before any work)"
        if task is None:
            return fences.PROTECTED
        for contract in task.contracts:
            if covers(protected_by((contract,)), path):
                return f"a file the task's contract `{contract.text}` judges with"
        named = covering(task.protect, path)
        if named is not None:
            return f"a protected pattern of the task: `{named}`"
        return fences.PROTECTED

    def _appendable(self, task: TaskSpec) -> bool:
        """Whether the task's worker may append tests to the test modules its check reads
        (its text asks for tests): then they are not fenced, and the verdict tells an
        append from any other edit (`_tests_appended`)."""
        return asks_for_tests(task)

    def _append_only(self, path: str, writers: Iterable[str]) -> tuple[str, ...] | None:
        """The names of the tests appended to `path`, a test module there at run start,
        when that is all that changed it and each task whose worker wrote it asks for
        tests; None otherwise."""
        before = self._statements.get(path)
        specs = [self._specs.get(t) for t in writers]
        if before is None or not specs or not all(s and self._appendable(s) for s in specs):
            return None
        return appended_to(before, self.workdir / path)

    def appended_tests(self, task_id: str) -> dict[str, tuple[str, ...]]:
        """The tests appended to modules that were there which the task's latest pass
        stood on (`inputs_read`), module → names: what the check runs without once more."""
        with self._lock:
            return dict(self._appended.get(task_id, {}))

    def _new_test(self, task_id: str, path: str) -> bool:
        """Whether `path` is a test module the task asks for (`suite_tests_new`) that was not
        there at run start: its worker's to make and write."""
        mine = self.new_tests.get(task_id, ())
        return bool(mine) and covers(mine, path) and not self._there_at_start(path)

    def worker_wrote(self, task_id: str, changed: Iterable[str], unknown: object) -> None:
        """After a worker's attempt: each file some task protects that the attempt changed
        (every one, when its changes could not all be told) and that differs from what it may
        hold now is re-based when the worker's task is entitled to change it (its text asks
        to, or `:writable:` covers it), and otherwise marked as changed by that task — which
        fails every task protecting it, naming the intruder (adversary-6 F7, F17)."""
        task = self._specs.get(task_id)
        named = set(changed)
        with self._lock:
            for path in sorted(named):
                if not self._there_at_start(path):
                    self._made.setdefault(path, task_id)
                self._writes.setdefault(path, []).append(task_id)
            if unknown:
                self._unlisted.append(task_id)
        keeps = [p for ps in self.keep.values() for p in ps]
        if task is None or not keeps:
            return
        # what the patterns cover now, and what they covered at run start (a removal too)
        there = (f for f in self.start if covers(keeps, f))
        candidates = set(protect.matched_files(self.workdir, keeps)) | set(self._current)
        candidates |= set(there)
        with self._lock:
            for path in sorted(candidates):
                if not unknown and path not in named:
                    continue
                now = protect.input_sha256(self.workdir, path)
                if now == self._current.get(path, self.start.get(path)):
                    continue
                if (
                    covers(task.writable, path)
                    or asks_to_change(task, path)
                    or self._new_test(task_id, path)
                    or self._append_only(path, [task_id])
                ):
                    self._current[path] = now
                    self._intruded.pop(path, None)
                    self._carried.pop(path, None)
                elif path not in self._intruded:
                    self._intruded[path] = task_id

    def _keep_read(self, task_id: str, files: Iterable[str], *, start: bool = True) -> None:
        """Keep `files` (there now) from the task's own worker, each that is not the code
        under test of its check and that its text does not ask to change (nor `:writable:`
        frees): its check's own tests, programs and data. `start`: hash them now as what they
        held before any work (after the run's start was sealed: red-first)."""
        task = self._specs.get(task_id)
        if task is None:
            return
        files = list(files)
        appendable = self._appendable(task)
        kept = [
            f for f in files
            if not entitled(task, f, checked=task, seen=files, data=self._data)
            and not covers(self._hide, f)
            and not (appendable and is_test_module(f))
            and (self.workdir / f).is_file()
        ]  # fmt: skip
        if not kept:
            return
        self.keep[task_id] = tuple(dict.fromkeys((*self.keep.get(task_id, ()),
                                                   *(f"/{f}" for f in kept))))  # fmt: skip
        for f in kept:
            ids = self.read_kept.setdefault(f, [])
            if task_id not in ids:
                ids.append(task_id)
            if start and f not in self.start:
                self.start[f] = protect.input_sha256(self.workdir, f)
                self._current.setdefault(f, self.start[f])

    def read_before_work(self, task_id: str, read: Iterable[str] | None) -> None:
        """What the task's check read on the untouched workdir (red-first): kept from its own
        worker from now on, as `_keep_read` says (the verdict's rule backs up what it did not
        reach)."""
        if read is not None:
            own = {p for p, maker in self._made.items() if maker == task_id}
            self._keep_read(
                task_id, sorted(p for p in read if self._there_at_start(p) and p not in own)
            )

    def made_earlier(self, made: Mapping[str, str]) -> None:
        """What earlier runs' workers wrote (`Record.made`: path → the first task whose worker
        did), there now: that task's own output from before (a run cut short, a redo asked
        for), which its worker may write again; for every other task an input like any."""
        with self._lock:
            for path, task_id in made.items():
                if task_id in self._specs and self._there_at_start(path):
                    self._made.setdefault(path, task_id)
                    self._made_earlier.add(path)
                    # made by a worker, not there before the work: the made-file rules judge
                    # it as in the run that made it (adversary-13 F3: a shadow module made by
                    # a call a SIGTERM cut short is no file of the workdir before the work)
                    if self._before is not None:
                        self._before.pop(path, None)

    def earlier_runs(
        self,
        wrote: Mapping[str, Sequence[str]],
        first: Mapping[str, str | None],
        made: Mapping[str, str] | None = None,
    ) -> None:
        """What earlier runs of the plan did, held against this one (adversary-11 F10–F13,
        F19): "before the work" is before the plan's first run, not this run's start. `wrote`
        (`Record.wrote`): file → the tasks whose workers changed it then, which the check
        backstop (`inputs_read`) counts as this run's own writes; `first` (`Record.first`):
        what each protected input held before any work, as first sealed — one that holds
        something else now, last changed then by a worker not entitled to it, fails every
        task protecting it, its own worker's included, until it is restored or the user
        resumes with `--accept-changes`. A file that holds its first content again is
        restored: its earlier writes no longer count. `made` (`Record.made`): the files a
        worker made; each other file an earlier run's worker changed and that is gone now was
        there before the work, and its removal is held as this run's (`_inputs_gone`)."""
        # hashed now: only files both changed then and sealed before any work
        restored = {
            p for p in wrote
            if first.get(p) is not None and protect.input_sha256(self.workdir, p) == first[p]
        }  # fmt: skip
        made = made or {}
        with self._lock:
            for path, tasks in wrote.items():
                if path not in restored and (self._there_at_start(path) or path in self._made):
                    self._writes[path] = [*tasks, *self._writes.get(path, [])]
                    self._earlier_written[path] = path in first
                elif (
                    tasks
                    and path not in made
                    and not self._there_at_start(path)
                    and not _readable(self.workdir / path)
                ):
                    # removed by an earlier run's worker: not there at this run's start, and
                    # no worker made it (a scratch file's removal is its maker's)
                    self._writes[path] = [*tasks, *self._writes.get(path, [])]
                    self._gone_earlier.add(path)
                    self._removed_earlier.add(path)
        for path, now in self.start.items():
            if path not in first or first[path] == now:
                continue
            intruder: str | None = None
            for task_id in wrote.get(path, ()):
                task = self._specs.get(task_id)
                if task is not None and (covers(task.writable, path) or asks_to_change(task, path)):
                    intruder = None
                elif intruder is None:
                    intruder = task_id
            if intruder is not None:  # none: an entitled worker's, or the user's, change
                self._carried[path] = (intruder, first[path])

    def snapshot(self) -> bytes | None:
        """The run-start snapshot as bytes to keep beside the ledger (its SHA-256 sealed in the
        run-start): what a resume after this run stops mid-call compares the workdir with.
        None past `MAX_SNAPSHOT` files."""
        if self._before is None:
            return None
        files = {p: list(stamp) for p, stamp in sorted(self._before.items())}
        document = {"taken_ns": self.taken_ns, "files": files, "sha256": self._hashes}
        return json.dumps(document, sort_keys=True).encode()

    def unaccounted(
        self, snapshot: bytes | None, sealed: Iterable[str], exclude: Iterable[str]
    ) -> tuple[list[str], list[str]]:
        """`unaccounted` on this run's start snapshot; what the earlier `snapshot` hashed is
        kept for `unrecorded` (what a restore frees)."""
        self._earlier_hashes = snapshot_hashes(snapshot)
        return unaccounted(self.workdir, self._before or {}, snapshot, sealed, exclude)

    def held_before(self, paths: Iterable[str]) -> dict[str, str]:
        """What each of `paths` held before an earlier run's stopped call, where its start
        snapshot hashed it (`unaccounted`): sealed with the run-start's `unrecorded`, so a
        later run frees the file once it holds those bytes again."""
        return {p: self._earlier_hashes[p] for p in paths if p in self._earlier_hashes}

    def unrecorded(self, tasks: Sequence[str], made: Iterable[str], changed: Iterable[str]) -> None:
        """Hold what an earlier run's stopped call wrote (`unaccounted`) against the `tasks`
        in flight then, as their workers' writes in this run: a file made counts as made by
        one of them (the made-file rules judge it: not there before the work) — which one is
        not known when several were, so no task's own (`unknown_maker`) — and a file changed as
        changed by them all (the check-input rules judge it)."""
        if not tasks:
            return
        maker = unknown_maker(tasks)
        with self._lock:
            for path in made:
                if self._before is not None:
                    self._before.pop(path, None)
                self._made[path] = maker
                self._writes[path] = [*tasks, *self._writes.get(path, [])]
                self._unrecorded[path] = list(tasks)
                self._unrecorded_made.add(path)
                self._restorable.add(path)  # removing it restores
            for path in changed:
                self._writes[path] = [*tasks, *self._writes.get(path, [])]
                self._unrecorded[path] = list(tasks)
                if path in self._earlier_hashes:
                    self._restorable.add(path)
                self._earlier_written.pop(path, None)
                if not _readable(self.workdir / path):
                    self._gone_earlier.add(path)

    def replaced(self, task_id: str, path: str) -> None:
        """A sealed call of the task's worker wrote `path` whole (`write_file`): what it holds
        now is that worker's, so the other tasks an unrecorded call's change to it was held
        against (`unrecorded`: any of them could have made it) are no longer its writers. The
        task itself stays one, judged as any writer is."""
        with self._lock:
            suspects = self._unrecorded.pop(path, None)
            if suspects is None:
                return
            writes = self._writes.get(path, [])
            for other in suspects:
                if other != task_id and other in writes:
                    writes.remove(other)  # the one entry `unrecorded` added
            if path in self._unrecorded_made:
                self._unrecorded_made.discard(path)
                self._made[path] = task_id

    def earlier_examples(self, sealed: Mapping[str, Sequence[str]]) -> None:
        """What the doctest files held before any work, as an earlier run's start sealed it
        (`Record.examples`): a run cut short after a worker removed an example starts from
        the record, not from what the file holds now."""
        for name in self._doctests:
            if name in sealed:
                self._doctests[name] = frozenset(sealed[name])

    @property
    def doctest_examples(self) -> dict[str, list[str]]:
        """The examples this run holds each doctest file to, for its run-start to seal (none
        past `doctests.MAX_SEALED` digests)."""
        return sealable(self._doctests)

    def doctests_lost(self, task_id: str) -> list[str]:
        """Why a pass of the task's doctest check must not stand: an example one of its
        files held at run start is gone or changed (`acceptance.doctests`)."""
        files = self._doctest_files.get(task_id, ())
        return examples_lost(self._doctests, self.workdir, files) if files else []

    def there_before(self, path: str) -> bool:
        """Whether `path` was in the workdir when this run started (the snapshot's)."""
        return self._there_at_start(path)

    def left_to(self, task_id: str) -> Callable[[str], str | None] | None:
        """Which later task of an ORDERED sequence a test failing at the task's claim is left
        to (`plan.suite_paths.left_to_later`, adversary-19 F22); None: the task has none."""
        later = self._later.get(task_id)
        task = self._specs.get(task_id)
        if not later or task is None:
            return None
        return lambda test: left_to_later(task, later, test)

    def added_tests(self, task_id: str, read: Iterable[str] | None) -> list[tuple[str, str]]:
        """The test modules (`test_*.py`, `*_test.py`) a passing pytest check of the task
        read that a worker made in the run, each with the task whose worker made it, when
        the check also read tests that were there before the work: what `RunChecks` runs
        that check without once more (adversary-19 F14). Empty for any other check."""
        task = self._specs.get(task_id)
        if task is None:
            return []
        tests = test_modules_read(task, read)
        with self._lock:
            added = [(p, self._made[p]) for p in tests if p in self._made]
        if not added or not any(self._there_at_start(p) for p in tests):
            return []
        return sorted(added)

    def _there_at_start(self, path: str) -> bool:
        return self._before is None or path in self._before

    def inputs_read(
        self, task_id: str, read: Iterable[str] | None, folders: Iterable[str] | None = None
    ) -> list[str]:
        """Why a pass of the task's check must not stand (`acceptance.check_inputs`): each
        file it `read` (None: it cannot be told, so every file a worker changed) that was
        there before the work — at run start, or made by another task's worker (before this
        task first started, or after: a parallel sibling's) — and that a worker not entitled
        to it changed (the maker of a
        file made in the run did not change it), named. An attempt
        whose changes could not all be listed counts as changing every file whose size or
        mtime differs from run start."""
        task = self._specs.get(task_id)
        if task is None:
            return []
        with self._lock:
            # a file made in the run: its maker's writes make it, they change nothing there was
            writes = {
                p: [t for t in ids if p not in self._made or t != self._made[p]]
                for p, ids in self._writes.items()
            }
            unlisted = list(dict.fromkeys(self._unlisted))
            made_before = self._made_before.get(task_id, frozenset())
            # made by another task's worker in this run, whenever: a parallel sibling's output
            # is not this task's to rewrite either (adversary-17 F5)
            theirs = {
                p
                for p, maker in self._made.items()
                if maker != task_id and p not in self._made_earlier
            }
        files = set(writes) if read is None else set(read)
        if unlisted and self._before is not None:
            for path in sorted(files | (set(self._before) if read is None else set())):
                if path in self._before and _stamp(self.workdir, path) != self._before[path]:
                    writes[path] = [*writes.get(path, []), *unlisted]
                    files.add(path)

        def existed(path: str) -> bool:
            return self._there_at_start(path) or path in made_before or path in theirs

        appended_now: dict[str, tuple[str, ...]] = {}
        for path in sorted(files):
            names = self._append_only(path, writes.get(path, ())) if path in writes else None
            if names:
                appended_now[path] = names
                del writes[path]  # tests appended, as a task asked: no input changed
        with self._lock:
            self._appended[task_id] = appended_now
        found = read_inputs_changed(task, files, writes, existed, self._specs, self._data)
        found += self._inputs_gone(task, read, set(writes), bool(unlisted), folders or ())
        with self._lock:
            earlier = {p: sealed for p, sealed in self._earlier_written.items() if p in files}
            unrecorded = {p: ids for p, ids in self._unrecorded.items() if p in files}
            restorable = set(self._restorable)
        found = [_unrecorded_read(_earlier_read(r, earlier), unrecorded, restorable) for r in found]
        if read is None:
            return found
        with self._lock:
            made = {p: list(ids) for p, ids in self._writes.items() if not self._there_at_start(p)}
        for path in read:
            if unlisted and not self._there_at_start(path):
                made[path] = [*made.get(path, []), *unlisted]
        made_found = read_inputs_made(
            task, read, made, self._specs, self._modules_before(), source_reader(self.workdir),
            tuple(folders or ()),
        )  # fmt: skip
        with self._lock:
            unrecorded = {p: ids for p, ids in self._unrecorded.items() if p in set(read)}
        return found + [_unrecorded_read(r, unrecorded, restorable) for r in made_found]

    def _inputs_gone(
        self,
        task: TaskSpec,
        read: Iterable[str] | None,
        written: set[str],
        unlisted: bool,
        folders: Iterable[str] = (),
    ) -> list[str]:
        """Each file there at run start (or before an earlier run's stopped call) on the
        task's check's side that a worker removed or renamed and no task is entitled to
        remove (`check_inputs.inputs_gone`): a deleted failing test, a case file the check
        loops over (adversary-14 F4). The files a worker's journal lists (every file there at
        run start, when an attempt's changes could not all be listed)."""
        with self._lock:
            before = self._before
            earlier = set(self._gone_earlier)
            removed_earlier = set(self._removed_earlier)
            writers = {p: list(ids) for p, ids in self._writes.items()}
        if before is None:
            return []
        candidates = (set(before) if unlisted else {p for p in written if p in before}) | earlier
        if not candidates:
            return []
        workdir = self.workdir
        tasks = list(self._specs.values())

        def who(path: str) -> tuple[str, str]:
            # the last worker whose journal lists the path removed it (an attempt whose
            # changes could not all be listed: some worker of the run)
            ids = writers.get(path)
            if not ids:
                return "a worker of the run", ""
            when = " in an earlier run of the plan" if path in removed_earlier else ""
            return f"the worker of task `{ids[-1]}`", when

        return inputs_gone(
            task,
            candidates,
            lambda path: not _readable(workdir / path),
            read or (),
            lambda path: may_remove(tasks, path),
            who,
            folders,
        )

    def _modules_before(self) -> dict[str, frozenset[str]] | None:
        """The modules the workdir held before any worker ran (`module_index`), once."""
        if self._before is None:
            return None
        if self._modules is None:
            self._modules = module_index(self._before)
        return self._modules

    def links_made(self, links: Iterable[tuple[str, str]] | None) -> list[str]:
        """Why a pass whose paths went through `links` must not stand
        (`acceptance.check_links`): each link not there, to the same target, at run start."""
        before = self._links_before
        return links_made(links, before.get if before is not None else None)

    def judge_fence(self) -> fences.Fence:
        """What the judge's reading is bound by: the hidden inputs are absent to it."""
        return self._hiding

    def changed(self, task_id: str) -> list[str]:
        """Why the task's check must not be trusted now: each hidden input it reads that
        changed since run start, each protected input changed since the task started (or,
        before it started, since run start), named."""
        with self._lock:
            baseline = self._at_task.get(task_id)
        found: list[str] = []
        hidden = [f for f in self.hidden if covers(self.hide_of.get(task_id, ()), f)]
        found += [f"hidden input changed: {f}" for f in self._differ(hidden, self.start)]
        now = self.inputs_of(task_id) if self.keep.get(task_id) else []
        if baseline is None:
            baseline = {f: h for f, h in self.start.items() if f in now or f in self._kept(task_id)}
        baseline = {**baseline, **{f: self.start.get(f) for f in self.pinned}}
        if self.configuration:
            for path in {*now, *self.start}:
                if covers(self.configuration, path):
                    baseline[path] = self.start.get(path)
        with self._lock:
            current, intruded = dict(self._current), dict(self._intruded)
            carried = dict(self._carried)
        # a file the task's own `:protect:` covers that another worker changed or removed,
        # before this task started too (its start then saw the intruder's work, not the file)
        spec = self._specs.get(task_id)
        mine = spec.protect if spec is not None else ()
        theirs = {p for p, by in intruded.items() if by != task_id and mine and covers(mine, p)}
        for path in {*now, *baseline, *theirs}:
            if path in carried and path not in intruded:
                baseline[path] = carried[path][1]  # an earlier run's intruder's: still held
            elif path in theirs:  # held to the last entitled content: the run start's, or
                baseline[path] = current.get(path, self.start.get(path))  # a re-based one
            elif path in intruded and intruded[path] != task_id:
                baseline[path] = current.get(path)  # an intruder's change is no new baseline
            elif path in current and path not in intruded and current[path] != self.start.get(path):
                baseline[path] = current[path]  # an entitled sibling's change re-bases it
        paths = sorted({*now, *baseline, *theirs})
        differ = self._differ(paths, baseline)
        found += [
            f"protected input removed: {f}: removed by the worker of task {intruded[f]}, whose"
            " task does not ask to remove it"
            if f in theirs and not (self.workdir / f).exists()
            else f"protected input changed: {f}: changed by the worker of task {intruded[f]},"
            " whose task does not ask to change it"
            if f in intruded and intruded[f] != task_id
            else _earlier(f, carried[f][0])
            if f in carried and f not in intruded
            else f"protected input changed: {f}"
            for f in differ
        ]
        if spec is not None and (runs_pytest_check(spec) or counts_pytest_runs(spec)):
            found += [
                f"protected input changed: {section_name(f)}: pytest's own part of the file,"
                " which no task asks to change (the rest of it is the work of the task that"
                " asks for it)"
                for f, was in sorted(self.sections.items())
                if section_sha256(self.workdir / f) != was
            ]
        found += [
            f"protected input changed: {f}: {TRIED} ({self.protection(task_id, f)})"
            for f in self.refused(task_id)
            if f not in differ
        ]
        found += [
            f"protected input changed: {f}: made by the worker under a protected pattern"
            f" ({self.protection(task_id, f)}) and left there; only a temporary file renamed"
            " over a file the task may change may be made there (an edit in place): remove it"
            for f in self.staged_left(task_id)
        ]
        return found

    def _kept(self, task_id: str) -> set[str]:
        keep = self.keep.get(task_id, ())
        return {f for f in self.start if keep and covers(keep, f)}

    def _differ(self, paths: Iterable[str], baseline: Hashes) -> list[str]:
        return [p for p in paths if protect.input_sha256(self.workdir, p) != baseline.get(p)]

    def judged(self, patterns: tuple[str, ...]) -> tuple[str, ...]:
        """`:judge-files:` read by the one matcher (`protect.named_files`: a plain path as
        spelled, there or not, and a pattern or a directory as the files it covers now) —
        never a hidden input, named or covered (lint's F003 says so). A pattern naming no
        file, or too many to show, stays as written: it cannot be read, and the attempt
        fails before the judge is asked (J014)."""
        found: list[str] = []
        for pattern in patterns:
            try:
                named = protect.named_files(self.workdir, pattern)
            except ValueError:
                named = []
            if not named:
                found.append(pattern)
                continue
            found += [f for f in named if f not in self.hidden and not covers(self._hide, f)]
        return tuple(dict.fromkeys(found))

    def unjudged_intrusions(self, reasons: Mapping[str, str | None]) -> list[Diagnostic]:
        """The run's word on a protected file a worker changed that no verdict of the run named
        (R010, warning; adversary-20): its task had failed already, or was not judged again.
        `reasons`: each task's reason as the run ends (a reason naming the file has said it)."""
        with self._lock:
            intruded = dict(self._intruded)
        said = []
        for path, intruder in sorted(intruded.items()):
            victims = [
                task_id
                for task_id, keep in self.keep.items()
                if task_id != intruder
                and covers(keep, path)
                and f"{path}:" not in (reasons.get(task_id) or "")
            ]
            if not victims:
                continue
            whose = ", ".join(victims)
            message = (
                f"the worker of task {intruder} changed `{path}`, which task {whose}'s check"
                " reads and which no task asks to change; no verdict of this run was judged on"
                f" it: {whose} {'fails' if len(victims) == 1 else 'fail'} on it until it is"
                " restored, or `resume --accept-changes` takes it as it is"
            )
            said.append(Diagnostic("warning", "run", message, None, "R010"))
        return said

    def announcement(self) -> list[Diagnostic]:
        """The run's one word on expected files it protects without a pattern naming them
        (F002, info): which files, for which tasks, and how to let a worker change one; and
        on pytest's configuration, when a check runs pytest itself."""
        said: list[Diagnostic] = [
            Diagnostic("info", "run", unsure_message(task_id, path), None, "F002")
            for task_id, path in self.unsure
        ]
        if self.configuration:
            message = (
                "protected automatically, as pytest's configuration a check that runs pytest"
                " (or a pytest run a task's DONE counts)"
                f" reads: {', '.join(f'`{p}`' for p in self.configuration)} (made or changed,"
                " at any depth); to let a task's worker write one, add `:writable: conftest.py`"
                " (or the name) to that task"
            )
            said.append(Diagnostic("info", "run", message, None, "F002"))
        if self.read_kept:
            listed = "; ".join(
                f"`{path}` ({', '.join(ids)})" for path, ids in sorted(self.read_kept.items())
            )
            first = min(self.read_kept)
            message = (
                "kept from the worker of the task whose check runs or reads it (its tests,"
                f" its program's files, what it read before any work): {listed}; to let that"
                f" worker change one, add `:writable: {naming(first)}` to the task (or ask for the"
                " change in its text)"
            )
            said.append(Diagnostic("info", "run", message, None, "F002"))
        if not self.automatic:
            return said
        listed = "; ".join(
            f"`{path}` (compared against by {', '.join(ids)})"
            for path, ids in sorted(self.automatic.items())
        )
        first = min(self.automatic)
        message = (
            "protected automatically, as expected output a check compares against (or a"
            f" program it runs): {listed};"
            f" to let a task's worker change one, add `:writable: {naming(first)}` to that task (a"
            " task whose text asks to change it, as `regenerate FILE`, may; no other worker"
            " of the run may)"
        )
        return [Diagnostic("info", "run", message, None, "F002"), *said]
