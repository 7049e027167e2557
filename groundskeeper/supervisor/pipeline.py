"""One attempt's verdict: a pipeline of stages, each judging the attempt one way.

It owns the `Stage` interface (a name and `judge(context) -> StageResult`), what a stage is
given (`AttemptContext`) and gives back (`StageResult`, naming the steps to seal), `Joint`
(stages judged together, their failures joined), and `Pipeline`: it runs its stages in order,
seals each result's steps as the stage returns, stops at the first result that does not pass
and turns it into a `Verdict`. It knows no stage (`stages` has them) and does not schedule,
count attempts or write verdicts (the runner does).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from groundskeeper.acceptance.attempt_record import AttemptRecord
from groundskeeper.supervisor.first_start import FirstStart
from groundskeeper.supervisor.run_books import RunBooks
from groundskeeper.supervisor.task_run import TaskRun
from groundskeeper.supervisor.worker import AttemptOutcome

if TYPE_CHECKING:
    from groundskeeper.acceptance.gates import GateOpened

__all__ = [
    "AttemptContext",
    "AttemptHistory",
    "Joint",
    "Pipeline",
    "Stage",
    "StageResult",
    "Status",
    "Step",
    "Verdict",
]

Status = Literal["pass", "fail", "wait", "unavailable"]
VerdictKind = Literal["DONE", "FAILED", "WAITING", "UNAVAILABLE"]
_KINDS: dict[Status, VerdictKind] = {
    "fail": "FAILED",
    "wait": "WAITING",
    "unavailable": "UNAVAILABLE",
}


class Step(Protocol):
    """What a stage's result asks the run to keep, in order: a sealed step (with the telemetry
    row that goes with it) or a warning for the report."""

    def record(self, books: RunBooks, task_id: str, attempt: int) -> None: ...


@dataclass(frozen=True, slots=True)
class StageResult:
    """One stage's word on one attempt: `pass`; `fail`; `wait` (a person decides next); or
    `unavailable` (no one could judge it: the task keeps its state, resumable)."""

    stage: str
    status: Status = "pass"
    reason: str | None = None
    feedback: str | None = None  # a failure's message for the next attempt; None: it is final
    failure: str = ""  # what the breaker compares (its volatile parts aside)
    verified: bool | None = None  # None: as the stages before said
    output: str | None = None  # None: as the stages before left it
    steps: tuple[Step, ...] = ()  # sealed by the pipeline as the stage returns
    problems: tuple[str, ...] = ()  # each failure on its own, for a `Joint` to join
    rows: tuple[Mapping[str, Any], ...] = ()  # the claim's verdicts, for telemetry, one commit
    gate: GateOpened | None = None  # `wait`: the gate that holds the task
    told: tuple[str, ...] = ()  # each of `problems` as the worker is told it (`check.told`)


@dataclass(slots=True)
class AttemptHistory:
    """What a task's attempts so far leave for its later stages (one job's own)."""

    written: set[str] = field(default_factory=set)  # every attempt's changes: a gate's files
    unknown: bool = False  # some tool call's changes could not be told (a gate binds all)
    wrote: list[str] = field(default_factory=list)  # those of attempts that reached the check
    # what the attempts before the last one taken changed (None: not all of it could be told)
    earlier: frozenset[str] | None = frozenset()

    def took(self, record: AttemptRecord) -> None:
        """An attempt's tool calls: what they changed (by any tool) joins `written`."""
        self.earlier = None if self.unknown else frozenset(self.written)
        found, unknown = record.changed()
        self.written.update(found)
        self.unknown = self.unknown or bool(unknown)


class RunWrites:
    """What every worker of this run wrote, by task (thread-safe: jobs run in parallel). A
    quote another worker planted (an accomplice sibling) is no more evidence than one the
    task's own worker planted (`evidence._self_made`)."""

    def __init__(self) -> None:
        self._by: dict[str, set[str]] = {}
        self._unknown: set[str] = set()  # tasks some of whose writes could not be told
        self._lock = threading.Lock()

    def took(self, task_id: str, record: AttemptRecord, stamped: Iterable[str] | None) -> None:
        """An attempt's writes: its record's, and the workdir's stamps when they were taken."""
        found, unknown = record.changed()
        with self._lock:
            mine = self._by.setdefault(task_id, set())
            mine.update(found)
            mine.update(stamped or ())
            if unknown and stamped is None:
                self._unknown.add(task_id)

    def by_others(self, task_id: str) -> frozenset[str] | None:
        """What the other tasks' workers wrote so far (None: not all of it could be told)."""
        with self._lock:
            if self._unknown - {task_id}:
                return None
            return frozenset(p for t, ps in self._by.items() if t != task_id for p in ps)


@dataclass(frozen=True, slots=True)
class AttemptContext:
    """What a stage judges: the task, the attempt's number, the worker's claim (None when the
    run verifies a task itself: a roll-up, an approved gate, the final sweep), the attempt's
    sealed tool calls, what the files its `changed` contracts name held as it first started, the
    task's history, and the phase that asserts a verdict again."""

    task: TaskRun
    attempt: int
    claim: AttemptOutcome | None = None
    sealed: tuple[dict[str, Any], ...] = ()
    watched: FirstStart = field(default_factory=FirstStart)
    history: AttemptHistory = field(default_factory=AttemptHistory)
    phase: str | None = None  # a verdict asserted again: `rollup`, `sweep`; None: an attempt
    # every file the attempt created or changed, by any tool (None: it could not be told);
    # taken only for a task that quotes output as evidence
    wrote: tuple[str, ...] | None = ()
    # what the other workers of the run wrote so far (None: not all of it could be told)
    others: frozenset[str] | None = frozenset()
    # what other tasks' workers wrote in the plan's earlier runs (the record's `wrote`): a
    # quote planted there is no more evidence than one planted in this run (adversary-28 F8)
    earlier_others: frozenset[str] = frozenset()


class Stage(Protocol):
    """One way of judging an attempt. `judge` may run checks or ask a model; it seals nothing
    itself, but names in its result the steps to seal."""

    @property
    def name(self) -> str: ...

    def judge(self, context: AttemptContext) -> StageResult: ...


@dataclass(frozen=True, slots=True)
class Joint:
    """Stages judged together: each runs, and is sealed, even when one before it failed; their
    `problems` reach the worker as one failure, worded by `join` (which seals nothing), and
    their rows go to telemetry in one commit."""

    name: str
    stages: tuple[Stage, ...]
    join: Callable[[tuple[str, ...], tuple[str, ...]], StageResult]


@dataclass(frozen=True, slots=True)
class Verdict:
    """The pipeline's word on one attempt. FAILED with `feedback`: another attempt may help;
    without it the failure is final. `stage` names the stage that decided (None: DONE)."""

    kind: VerdictKind
    stage: str | None
    verified: bool | None
    reason: str | None
    output: str
    feedback: str | None = None
    failure: str = ""
    gate: GateOpened | None = None


class Pipeline:
    """Stages in the order they were registered; `judge` may be called from any thread."""

    def __init__(self, books: RunBooks, stages: Iterable[Stage | Joint] = ()) -> None:
        self.books = books
        self.stages: list[Stage | Joint] = list(stages)

    def register(self, stage: Stage | Joint) -> None:
        self.stages.append(stage)

    def judge(self, context: AttemptContext) -> Verdict:
        verified: bool | None = None
        output = ""
        for stage in self.stages:
            if isinstance(stage, Joint):
                result = self._joint(stage, context)
            else:
                result = self._stage(stage, context)
            if result.rows:
                self.books.claim_events(context.task.heading.task_id, context.attempt, result.rows)
            verified = verified if result.verified is None else result.verified
            output = output if result.output is None else result.output
            if result.status != "pass":
                return Verdict(_KINDS[result.status], result.stage, verified, result.reason,
                               output, result.feedback, result.failure, result.gate)  # fmt: skip
        return Verdict("DONE", None, verified, None, output)

    def _stage(self, stage: Stage, context: AttemptContext) -> StageResult:
        """One stage judged, and what its result names sealed at once."""
        result = stage.judge(context)
        for step in result.steps:
            step.record(self.books, context.task.heading.task_id, context.attempt)
        return result

    def _joint(self, joint: Joint, context: AttemptContext) -> StageResult:
        results = [self._stage(stage, context) for stage in joint.stages]
        problems = tuple(p for r in results for p in r.problems)
        told = tuple(t for r in results for t in r.told)
        rows = tuple(row for r in results for row in r.rows)
        if not problems:
            return StageResult(joint.name, rows=rows)
        return replace(joint.join(problems, told), rows=rows)
