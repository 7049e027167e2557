"""What the sealed record says of each task: its last sealed state, the check that state was
judged with, and why it last FAILED. The runner asks it whether a DONE headline is backed;
`check --write` whether a FAILED may be promoted; `audit` what the plan claims beyond it.
It reads steps; it does not verify signatures (`ledger_verify` does, `Ledger` on append).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any, Protocol, runtime_checkable

from groundskeeper.fastclass import fastclass, field
from groundskeeper.record.ledger_format import unsealed_name

#: A check result code that means a limit stopped the check, not the work failing it.
LIMIT_CODES = frozenset(
    {
        "deadline",
        "fuel",
        "memory",
        "output",
        "trap",
        "host-memory",
        "disk",
        "loop-steps",
        "fan-out",
        "interrupted",
    }
)

#: Check codes that say the check reached no verdict on the work (a limit stopped it, the
#: process was asked to stop, the sandbox failed): such a sealed check is no observation, red
#: or green, whatever its verdict field says.
NOT_OBSERVED = LIMIT_CODES | {"sandbox_error"}
#: The rules by which steps are read; part of the record index's shape, so an index a reader
#: of other rules wrote is not continued.
READING = 4

Step = tuple[str, str, Mapping[str, Any]]  # (run id, step type, body)
#: Run-level rules (as `run-start` seals them) that hold for every later run of a plan once
#: one run was given them: a resume cannot drop what an earlier run refused by.
STICKY_RULES = ("require_red", "require_checks")
Bound = tuple[tuple[str, str | None], ...]  # files a verdict was given on, with their hashes


@runtime_checkable
class HasHistory(Protocol):
    """A recorder that can give back every step sealed before (the ledger, or memory)."""

    def history(self) -> Iterable[Step]: ...


@runtime_checkable
class HasSealedRecord(Protocol):
    """A recorder that reads its own record, faster than from `history` (the ledger, through
    its record index)."""

    def sealed_record(self) -> Record: ...


@fastclass(frozen=True, slots=True)
class TaskRecord:
    state: str  # the last sealed state
    check_sha256: str | None  # the check that state was judged with in its run (None: none)
    run_id: str
    # for FAILED: "tamper", "dock", "claim:<code>" (a contract or evidence), "limit:<code>",
    # "check:<code>"
    failure: str | None = None
    # the digest of every rule that decided it (`TaskSpec.verdict_sha256`, sealed with the
    # state; None: a state sealed without it, which backs no DONE)
    rules: str | None = None
    # the workdir its run sealed in `run-start`: where the verdict was earned (None: unsaid)
    workdir: str | None = None


@fastclass
class Record:
    tasks: dict[str, TaskRecord] = field(default_factory=dict)
    runs: list[str] = field(default_factory=list)  # in order of their run-start
    workdirs: dict[str, str] = field(default_factory=dict)  # run → the workdir it sealed
    ended: set[str] = field(default_factory=set)  # runs that sealed a run-end
    docks: dict[str, str] = field(default_factory=dict)  # component file name → sealed sha256
    started: set[str] = field(default_factory=set)  # tasks a worker or roll-up ever started
    # task id → the body of its open `gate` step: a gate that waits for a person's answer
    gates: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    # task id → (gate id, decision) of the last answer applied to it (`gate-decision`)
    decided: dict[str, tuple[str, str]] = field(default_factory=dict)
    # task id → the artifacts (path, sha256 as shown) of its last passing judge: what a DONE
    # was judged on, and must still be when it is asserted again
    judged: dict[str, Bound] = field(default_factory=dict)
    # task id → the files (path, sha256) of the gate a person last approved
    approved: dict[str, Bound] = field(default_factory=dict)
    # task id → the artifacts hash (check and files) of a yes applied to it whose verdict no
    # `state` step sealed yet (a run stopped in between): a later run honours it, once
    approval_pending: dict[str, str] = field(default_factory=dict)
    # (task id, check sha256): a red observation, its check failing before any work
    red: set[tuple[str, str]] = field(default_factory=set)
    # run-level rules an earlier run of the plan was held to (`require_red`, `require_checks`):
    # a later run is held to them too
    rules: set[str] = field(default_factory=set)
    # task id → its last `task-start` that sealed what its `changed` contracts' files held at
    # its first start (`watched_patterns`, `watched`, `watched_sha256`): a later run reads back
    watched: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    # task id → the read set (`reads`: sha256, version, facts) its last check passed with:
    # what that verdict rested on (none when its last check failed or could not say)
    reads: dict[str, Mapping[str, Any]] = field(default_factory=dict)
    # task id → its protected inputs (path → sha256) as its last `task-start` sealed them:
    # what its check compared against, which `check --write` holds the files to
    protected: dict[str, dict[str, str | None]] = field(default_factory=dict)
    # path → the first task whose worker's tool call wrote it (a `tool-call`'s listed `wrote`
    # or `changed`; a long list kept only by its hash is not read): a later run knows a file
    # there at its start as that task's own output, not an input it must leave alone
    made: dict[str, str] = field(default_factory=dict)
    # path → the tasks whose workers' tool calls changed it, in any run, in order (a task
    # once per run of changes): what a later run still holds against a file it finds
    # changed, since "before the work" is before the plan's first run, not this one's start
    wrote: dict[str, list[str]] = field(default_factory=dict)
    # path → what it held before any work, as first sealed (a run-start's or task-start's
    # `protected`, before any tool call sealed a change to it): what a protected input is
    # held to across runs
    first: dict[str, str | None] = field(default_factory=dict)
    #: run → the SHA-256 of the workdir snapshot its run-start sealed (`workdir_snapshot`)
    snapshots: dict[str, str] = field(default_factory=dict)
    #: the tasks of the latest run whose work started and that no verdict followed: what a
    #: worker's call of theirs wrote when the run stopped is in no sealed line
    in_flight: list[str] = field(default_factory=list)
    #: the paths the latest run's sealed tool calls list as changed
    last_wrote: set[str] = field(default_factory=set)
    #: path → the tasks a run-start's `unrecorded` named as its writers (in flight when a
    #: run stopped mid-call: any of them could have written it), and whether it named them
    #: its maker (`unknown_maker`); cleared when a sealed `write_file` rewrites the file whole
    suspected: dict[str, tuple[list[str], bool]] = field(default_factory=dict)
    #: path → the digests of the doctest examples it held before any work, as a run-start
    #: first sealed them (`acceptance.doctests`): what a later run holds the file to
    examples: dict[str, list[str]] = field(default_factory=dict)

    def backs_done(self, task_id: str, check_sha256: str | None, rules: str) -> bool:
        """A sealed DONE for this task, judged with this very check under these very rules
        (`TaskSpec.verdict_sha256`: a gate, judge, dock, contract or evidence added or changed
        since is a verdict it never got)."""
        found = self.tasks.get(task_id)
        return (
            found is not None
            and found.state == "DONE"
            and found.check_sha256 == check_sha256
            and found.rules == rules
        )

    def rules_changed(self, task_id: str, check_sha256: str | None) -> bool:
        """A sealed DONE with this check, under rules other than the task's now."""
        found = self.tasks.get(task_id)
        return found is not None and found.state == "DONE" and found.check_sha256 == check_sha256

    def earned_elsewhere(self, task_id: str, workdir: str) -> bool:
        """A sealed DONE earned in a workdir other than `workdir` (both as sealed: real
        paths), or in one its run did not name."""
        found = self.tasks.get(task_id)
        return found is not None and found.state == "DONE" and found.workdir != workdir

    def promotable(self, task_id: str) -> bool:
        """May `check --write` turn this FAILED into DONE? Only when the record shows it
        FAILED because its own check failed: never after tampering, a refused dock or a limit,
        nor when its check was failed because an input it rests on was changed by a worker
        (`protected_input_changed`: the check passing now may rest on that very change), nor
        when the record has no FAILED for it at all."""
        found = self.tasks.get(task_id)
        return (
            found is not None
            and found.state == "FAILED"
            and found.failure is not None
            and found.failure.startswith("check:")
            and found.failure != "check:protected_input_changed"
        )

    def unfinished(self, current: str | None = None) -> list[str]:
        """Runs that started and never sealed their end (killed, or still going)."""
        return [r for r in self.runs if r not in self.ended and r != current]


def read_record(steps: Iterable[Step]) -> Record:
    reader = RecordReader()
    for run, step, body in steps:
        reader.feed(run, step, body)
    return reader.record


Key = tuple[str, str]  # (run id, task id): what a step says within one run


@fastclass
class RecordReader:
    """`read_record` a step at a time: the record so far, and what it keeps of each run's
    steps until that run's state steps (`to_json`/`from_json`: the record index, which
    continues it from the lines after the ones it read)."""

    record: Record = field(default_factory=Record)
    check: dict[Key, str | None] = field(default_factory=dict)
    last_check: dict[Key, str | None] = field(default_factory=dict)  # a failing check's code
    docked: dict[Key, bool] = field(default_factory=dict)
    # the code of the first hard contract or evidence failure of the task's latest claim
    unmet: dict[Key, str | None] = field(default_factory=dict)
    tampered: set[Key] = field(default_factory=set)

    def feed(self, run: str, step: str, body: Mapping[str, Any]) -> None:
        record, check = self.record, self.check
        task = body.get("task_id")
        key = (run, task if isinstance(task, str) else "")
        if step == "run-start":
            if body.get("accept_changes") is True:
                # the user took the workdir as it is (`--accept-changes`): its files are what
                # they hold now, the earlier runs' changes to them no longer held against it
                record.wrote.clear()
                record.first.clear()
                record.suspected.clear()
                record.examples.clear()
            _first_seen(record, body.get("protected"))
            _examples_seen(record, body.get("doctest_examples"))
            record.in_flight.clear()
            record.last_wrote.clear()
            snapshot = body.get("workdir_snapshot")
            if isinstance(snapshot, str):
                record.snapshots[run] = snapshot
            _unrecorded(record, body.get("unrecorded"))
            record.runs.append(run)
            record.rules.update(r for r in STICKY_RULES if body.get(r) is True)
            workdir = body.get("workdir")
            if isinstance(workdir, str):
                record.workdirs[run] = workdir
        elif step == "run-end":
            record.ended.add(run)
            stopped = body.get("in_flight")  # SIGINT/SIGTERM: they kept their state
            if isinstance(stopped, list):
                for task_id in stopped:
                    if isinstance(task_id, str) and task_id not in record.in_flight:
                        record.in_flight.append(task_id)
        elif step == "task-start":
            check[key] = _sha(body.get("check_sha256"))
            if isinstance(task, str) and body.get("kind") in ("leaf", "composite"):
                record.started.add(task)
                if body.get("kind") == "leaf" and task not in record.in_flight:
                    record.in_flight.append(task)
            listed = body.get("protected")
            if not any(t != task for t in record.in_flight):
                # with another task's worker at work, a file hashed now may be mid-write
                # (its call's sealed line comes after): no "before any work" to go by
                _first_seen(record, listed)
            if isinstance(task, str) and isinstance(listed, list):
                record.protected[task] = {
                    str(i["path"]): i.get("sha256")
                    for i in listed
                    if isinstance(i, dict) and isinstance(i.get("path"), str)
                }
            if isinstance(task, str) and "watched_patterns" in body:
                record.watched[task] = body
        elif step == "check":
            check[key] = _sha(body.get("check_sha256"))
            failed = body.get("verdict") == "FAIL"
            sha = check[key]
            reason = body.get("reason")
            red = failed and reason not in NOT_OBSERVED  # cut short, it saw nothing
            if red and body.get("phase") == "red-first" and isinstance(task, str) and sha:
                record.red.add((task, sha))
            self.last_check[key] = (str(reason) if reason else "failed") if failed else None
            if isinstance(task, str):
                reads = body.get("reads")
                if not failed and isinstance(reads, Mapping) and sha:
                    record.reads[task] = {**reads, "check_sha256": sha}
                else:
                    record.reads.pop(task, None)
        elif step == "tool-call" and isinstance(task, str):
            key_of = "wrote" if body.get("tool") == "sh" and "wrote" in body else "changed"
            listed = body.get(key_of)
            made = body.get("made")  # which of them the call made (a ledger without: all)
            if isinstance(made, list):
                made = [unsealed_name(p) for p in made]
            if isinstance(listed, list):
                for item in listed:
                    path = unsealed_name(item)  # a name that is not UTF-8: sealed as bytes
                    if path is None:
                        continue
                    if not isinstance(made, list) or path in made:
                        record.made.setdefault(path, task)
                    record.last_wrote.add(path)
                    writers = record.wrote.setdefault(path, [])
                    if body.get("tool") == "write_file" and body.get("is_error") is False:
                        _rewritten(record, path, task)
                    if not writers or writers[-1] != task:
                        writers.append(task)
        elif step == "claim":
            self.unmet[key] = None  # a new attempt's claim: judged afresh
            if isinstance(task, str):
                record.decided.pop(task, None)  # worked on since the person's answer
                record.approval_pending.pop(task, None)
        elif step in ("contract", "evidence") and self.unmet.get(key) is None:
            self.unmet[key] = _first_hard_failure(body.get("verdicts"))
        elif step == "dock":
            self.docked[key] = body.get("ok") is True
            component, sha = body.get("component"), body.get("sha256")
            if self.docked[key] and isinstance(component, str) and isinstance(sha, str):
                record.docks[PurePosixPath(component).name] = sha
        elif step == "tamper":
            for blamed in body.get("task_ids") or []:
                if isinstance(blamed, str):
                    self.tampered.add((run, blamed))
        elif step == "gate" and isinstance(task, str):
            record.gates[task] = body
        elif step == "judge" and isinstance(task, str) and body.get("verdict") == "pass":
            record.judged[task] = bound_files(body.get("artifacts"))
        elif step == "gate-decision" and isinstance(task, str) and body.get("applied") is True:
            shown = record.gates.pop(task, None)  # answered: the gate is closed
            if body.get("decision") == "yes" and shown is not None:
                record.approved[task] = bound_files(shown.get("files"))
                record.approval_pending[task] = str(body.get("artifacts_sha256"))
            record.decided[task] = (str(body.get("gate_id")), str(body.get("decision")))
        elif step == "state" and isinstance(task, str):
            to = str(body.get("to"))
            if task in record.in_flight:
                record.in_flight.remove(task)
            if to != body.get("from"):
                record.gates.pop(task, None)  # a verdict (or a hand edit re-verified) closes it
                record.approval_pending.pop(task, None)  # and takes the approval it applied
            failure = None
            if to == "FAILED":
                failure = _failure(key, self.tampered, self.docked, self.last_check, self.unmet)
            rules = _sha(body.get("verdict_sha256"))
            workdir = record.workdirs.get(run)
            record.tasks[task] = TaskRecord(to, check.get(key), run, failure, rules, workdir)

    def to_json(self) -> dict[str, Any]:
        """Everything the reader holds, as JSON values (`from_json` gives it back whole). A
        field added to `Record` or to the reader must be added here and in `from_json`:
        `record_index.SHAPE` then changes, so no index written without it is read."""
        r = self.record
        return {
            "tasks": {
                t: [v.state, v.check_sha256, v.run_id, v.failure, v.rules, v.workdir]
                for t, v in r.tasks.items()
            },
            "runs": list(r.runs),
            "workdirs": dict(r.workdirs),
            "ended": sorted(r.ended),
            "docks": dict(r.docks),
            "started": sorted(r.started),
            "gates": {t: dict(body) for t, body in r.gates.items()},
            "decided": {t: list(v) for t, v in r.decided.items()},
            "judged": {t: [list(f) for f in v] for t, v in r.judged.items()},
            "approved": {t: [list(f) for f in v] for t, v in r.approved.items()},
            "approval_pending": dict(r.approval_pending),
            "red": sorted([t, sha] for t, sha in r.red),
            "rules": sorted(r.rules),
            "watched": {t: dict(body) for t, body in r.watched.items()},
            "reads": {t: dict(body) for t, body in r.reads.items()},
            "protected": {t: dict(v) for t, v in r.protected.items()},
            "made": dict(r.made),
            "wrote": {p: list(v) for p, v in r.wrote.items()},
            "first": dict(r.first),
            "snapshots": dict(r.snapshots),
            "in_flight": list(r.in_flight),
            "last_wrote": sorted(r.last_wrote),
            "suspected": {p: [list(ids), named] for p, (ids, named) in r.suspected.items()},
            "examples": {p: list(v) for p, v in r.examples.items()},
            "check": [[*k, v] for k, v in self.check.items()],
            "last_check": [[*k, v] for k, v in self.last_check.items()],
            "docked": [[*k, v] for k, v in self.docked.items()],
            "unmet": [[*k, v] for k, v in self.unmet.items()],
            "tampered": sorted([*k] for k in self.tampered),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RecordReader:
        """The reader `to_json` described. KeyError, TypeError or ValueError when `data` is
        not such a description (the caller then reads the record from the ledger)."""
        record = Record(
            tasks={t: TaskRecord(*_six(v)) for t, v in data["tasks"].items()},
            runs=[str(r) for r in data["runs"]],
            workdirs={str(k): str(v) for k, v in data["workdirs"].items()},
            ended={str(r) for r in data["ended"]},
            docks={str(k): str(v) for k, v in data["docks"].items()},
            started={str(t) for t in data["started"]},
            gates={str(t): dict(body) for t, body in data["gates"].items()},
            decided={str(t): (str(v[0]), str(v[1])) for t, v in data["decided"].items()},
            judged={str(t): _bound(v) for t, v in data["judged"].items()},
            approved={str(t): _bound(v) for t, v in data["approved"].items()},
            approval_pending={str(t): str(g) for t, g in data["approval_pending"].items()},
            red={(str(t), str(sha)) for t, sha in data["red"]},
            rules={str(r) for r in data["rules"]},
            watched={str(t): dict(body) for t, body in data["watched"].items()},
            reads={str(t): dict(body) for t, body in data["reads"].items()},
            protected={
                str(t): {str(p): _sha(h) for p, h in v.items()}
                for t, v in data["protected"].items()
            },
            made={str(p): str(t) for p, t in data["made"].items()},
            wrote={str(p): [str(t) for t in v] for p, v in data["wrote"].items()},
            first={str(p): _sha(h) for p, h in data["first"].items()},
            snapshots={str(r): str(h) for r, h in data["snapshots"].items()},
            in_flight=[str(t) for t in data["in_flight"]],
            last_wrote={str(p) for p in data["last_wrote"]},
            suspected={
                str(p): ([str(t) for t in ids], bool(named))
                for p, (ids, named) in data["suspected"].items()
            },
            examples={str(p): [str(d) for d in v] for p, v in data["examples"].items()},
        )
        return cls(
            record,
            check={(str(r), str(t)): _sha(v) for r, t, v in data["check"]},
            last_check={(str(r), str(t)): _sha(v) for r, t, v in data["last_check"]},
            docked={(str(r), str(t)): bool(v) for r, t, v in data["docked"]},
            unmet={(str(r), str(t)): _sha(v) for r, t, v in data["unmet"]},
            tampered={(str(r), str(t)) for r, t in data["tampered"]},
        )


def _unrecorded(record: Record, sealed: Any) -> None:
    """A run-start's `unrecorded` (SPEC): what the latest run's workers in flight wrote when it
    stopped mid-call, found by the resume that sealed it; their writes from then on."""
    if not isinstance(sealed, Mapping):
        return
    tasks = [t for t in sealed.get("task_ids") or [] if isinstance(t, str)]
    listed = sealed.get("changed")
    if not tasks or not isinstance(listed, list):
        return
    made = sealed.get("made")
    made_paths = {unsealed_name(p) for p in made} if isinstance(made, list) else set()
    before = sealed.get("before")
    held = before if isinstance(before, Mapping) else {}
    for item in listed:
        path = unsealed_name(item)
        if path is not None:
            sha = held.get(path)
            if isinstance(sha, str) and path not in record.wrote:
                # what it held before the stopped call, no sealed call having changed it
                # before: what it held before any work (a restore of it frees it)
                record.first.setdefault(path, sha)
            writers = record.wrote.setdefault(path, [])
            added = [t for t in tasks if t not in writers]
            writers += added
            named = path in made_paths and path not in record.made
            if path in made_paths:  # not there before: made by one of them
                record.made.setdefault(path, unknown_maker(tasks))
            record.suspected[path] = (added, named)


def unknown_maker(tasks: Sequence[str]) -> str:
    """Who made a file that a call no line seals made, the `tasks` in flight when the run
    stopped: the one task, when one was; when several were, which one is not known, so a name
    no task has (`a or b`): the file is none of theirs to pass a check on, an input of each."""
    return " or ".join(tasks)


def _rewritten(record: Record, path: str, task: str) -> None:
    """A sealed `write_file` of `task`'s worker wrote `path` whole: what it holds is that
    worker's from now on, so the tasks only an unrecorded call's change named as its writers
    (`Record.suspected`) are no longer; the task stays one, judged as any writer is."""
    suspects, named = record.suspected.pop(path, ([], False))
    writers = record.wrote.get(path, [])
    for other in suspects:
        if other != task and other in writers:
            writers.remove(other)
    if named:
        record.made[path] = task


def _examples_seen(record: Record, sealed: Any) -> None:
    """Note the doctest examples a run-start sealed for each file not noted before: what it
    held before any work."""
    if isinstance(sealed, list):
        for item in sealed:
            path = unsealed_name(item.get("path")) if isinstance(item, Mapping) else None
            digests = item.get("examples") if isinstance(item, Mapping) else None
            if path is not None and isinstance(digests, list):
                record.examples.setdefault(path, [str(d) for d in digests])


def _first_seen(record: Record, listed: Any) -> None:
    """Note each sealed (path, sha256) of a `protected` list not noted before and that no
    worker's tool call sealed before it changed: what it held before any work."""
    if isinstance(listed, list):
        for item in listed:
            path = item.get("path") if isinstance(item, dict) else None
            if isinstance(path, str) and path not in record.wrote:
                record.first.setdefault(path, _sha(item.get("sha256")))


def _six(value: Any) -> tuple[str, str | None, str, str | None, str | None, str | None]:
    state, sha, run, failure, rules, workdir = value
    return str(state), _sha(sha), str(run), _sha(failure), _sha(rules), _sha(workdir)


def _bound(files: Any) -> Bound:
    return tuple((str(path), _sha(sha)) for path, sha in files)


def bound_files(files: object) -> Bound:
    """`[{path, sha256}, …]` as sealed (a judge's artifacts, a gate's files), as pairs."""
    found: list[tuple[str, str | None]] = []
    for item in files if isinstance(files, list) else []:
        if isinstance(item, Mapping) and isinstance(item.get("path"), str):
            sha = item.get("sha256")
            found.append((item["path"], sha if isinstance(sha, str) else None))
    return tuple(found)


def _first_hard_failure(verdicts: object) -> str | None:
    for verdict in verdicts if isinstance(verdicts, list) else []:
        if isinstance(verdict, dict) and verdict.get("ok") is not True and not verdict.get("soft"):
            return str(verdict.get("code") or "failed")
    return None


def _sha(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _failure(
    key: tuple[str, str],
    tampered: set[tuple[str, str]],
    docked: Mapping[tuple[str, str], bool],
    last_check: Mapping[tuple[str, str], str | None],
    unmet: Mapping[tuple[str, str], str | None],
) -> str:
    if key in tampered:
        return "tamper"
    if docked.get(key) is False:
        return "dock"
    if unmet.get(key) is not None:
        # the last claim failed its contracts or evidence: no check alone can undo that
        return f"claim:{unmet[key]}"
    code = last_check.get(key)
    if code is None:
        return "other"  # no failing check on record: no claim, no check, a worker error
    return f"limit:{code}" if code in LIMIT_CODES else f"check:{code}"
