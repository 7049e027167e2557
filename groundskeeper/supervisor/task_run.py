"""One task in one run: what the run takes from its compiled spec, and what it has decided.

It owns `TaskRun`, `task_runs` (the one place the runner takes a task's spec: check, contracts,
evidence, judge, gate, dock, invariants, attempt limit), the `Outcome` a job hands the
scheduler, and the runner's own preflight of a plan. It does not schedule, judge or write;
reading the properties is `plan.spec`'s.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from groundskeeper.acceptance.check import SealedCheck
from groundskeeper.acceptance.criteria import judge_criteria
from groundskeeper.diagnostics import Diagnostic
from groundskeeper.plan.contract_syntax import Contract
from groundskeeper.plan.invariants import Invariant
from groundskeeper.plan.org import VERDICT_STATES as ORG_VERDICT_STATES
from groundskeeper.plan.org import Heading, Plan
from groundskeeper.plan.properties import EvidenceField
from groundskeeper.plan.spec import PlanSpec, TaskSpec, compile_plan
from groundskeeper.plan.tree import Node
from groundskeeper.record.backing import Bound
from groundskeeper.supervisor.first_start import FirstStart
from groundskeeper.supervisor.plan_guard import Tamper

if TYPE_CHECKING:
    from groundskeeper.acceptance.gates import GateOpened
    from groundskeeper.acceptance.suite import Baseline

VERDICT_STATES = ORG_VERDICT_STATES  # the plan model's (`plan.org`), read by the hook too


def verdict_states_problem(plan: Plan) -> Diagnostic | None:
    """R001: a verdict the run may write that the plan's #+TODO: line cannot hold — DONE and
    FAILED, and PARTIAL when a task has children (only a parent is PARTIAL; adversary-21 F1).
    Without any #+TODO: line the run inserts one with every verdict state. The runner's
    preflight and `lint` read it alike."""
    from groundskeeper.plan.edit import unwritable_states

    tasks = plan.tasks()
    wanted = [s for s in VERDICT_STATES if s != "PARTIAL" or any(t.child_tasks for t in tasks)]
    missing = unwritable_states(plan, wanted)
    if not missing or not tasks:
        return None
    message = (
        f"the #+TODO line has no {', '.join(missing)} after `|`; the runner writes DONE and"
        " FAILED verdicts, and PARTIAL for a parent task (e.g. `#+TODO: TODO NEXT | DONE FAILED"
        " PARTIAL`)"
    )
    return Diagnostic("error", "outline", message, None, "R001")


def preflight(plan: Plan) -> list[Diagnostic]:
    """What the runner itself needs of a plan beyond rung 1: verdict states, valid numbers."""
    found: list[Diagnostic] = []
    problem = verdict_states_problem(plan)
    if problem is not None:
        found.append(problem)
    for task in compile_plan(plan):
        if task.max_attempts_problem is not None:
            heading = task.heading
            found.append(
                Diagnostic("error", heading.title, task.max_attempts_problem, heading.line, "R002")
            )
    return found


@dataclass(slots=True)
class TaskRun:
    """A task in this run: what it was given (its sealed check and, from its spec, what its
    stages judge) and what the run has decided so far."""

    heading: Heading
    idx: int
    check: SealedCheck | None
    check_sha256: str | None
    start_state: str
    state: str
    spec: TaskSpec  # what its stages judge, as compiled from the plan
    attempts: int = 0
    verified: bool | None = None
    reason: str | None = None
    output: str = ""
    tainted: Tamper | None = None
    red: str | None = None  # under --require-red: why this task fails before any work
    # without --require-red: its check passed before any work (R007), said with its DONE
    green_first: str | None = None
    rules_changed: bool = False  # its sealed DONE was given under other rules than its spec's
    stop: str | None = None
    waiting: GateOpened | None = None
    criteria: str | None = None  # what its judge checks the work against; None: no judge
    # what its DONE was given on, by who gave it ("judge", "gate"): (path, sha256) pairs
    # that must still hash the same whenever the DONE is asserted again
    bound: dict[str, Bound] = field(default_factory=dict)
    # each `pytest` contract's red-first record of its suite, by contract text
    baselines: dict[str, Baseline] = field(default_factory=dict)
    # what its `changed` contracts' files held when it first started (this run or before)
    first_start: FirstStart = field(default_factory=FirstStart)
    # the attempts caught lying, each "attempt N: what" (false evidence, a forged sentinel, a
    # write the fence refused): kept beside the last reason for a reviewer
    lies: list[str] = field(default_factory=list)
    # where this run's pipeline that made it DONE began (`supervisor.activity`): while nothing
    # has acted on the workdir since, asserting the DONE again judges what it was given on
    decided_at: int | None = None

    @property
    def contracts(self) -> tuple[Contract, ...]:
        return self.spec.contracts

    @property
    def evidence(self) -> tuple[EvidenceField, ...]:
        return self.spec.evidence

    @property
    def invariants(self) -> tuple[Invariant, ...]:
        """What its worker is told must hold."""
        return self.spec.invariants

    @property
    def gated(self) -> bool:
        """`:gate: approval`: a passing check waits for a person."""
        return self.spec.gated

    @property
    def judge_files(self) -> tuple[str, ...]:
        """`:judge-files:`, shown to the judge first."""
        return self.spec.judge_files

    @property
    def gate_files(self) -> tuple[str, ...] | None:
        """`:gate-files:`, the artifacts a gate binds."""
        return self.spec.gate_files

    @property
    def dock(self) -> str | None:
        """The `:dock:` component path."""
        return self.spec.dock

    @property
    def max_attempts(self) -> int:
        return self.spec.max_attempts


def task_runs(spec: PlanSpec, judge_profile: str) -> dict[Heading, TaskRun]:
    """Every task of the plan as the run starts it, from its spec (lint has refused a plan
    whose contract, evidence or judge-files lines cannot be read)."""
    runs: dict[Heading, TaskRun] = {}
    for idx, task in enumerate(spec):
        heading = task.heading
        check = SealedCheck.seal(task.check) if task.check else None
        keyword = heading.keyword or ""
        sha256 = check.sha256 if check else None
        run = runs[heading] = TaskRun(heading, idx, check, sha256, keyword, keyword, task)
        run.criteria = judge_criteria(task, judge_profile)
    return runs


@dataclass(frozen=True, slots=True)
class Demotion:
    """A DONE that no longer holds when asserted again: FAILED, or back to its active state
    waiting at a gate opened again (`gate`)."""

    node: Node
    state: str
    reason: str
    output: str = ""
    gate: GateOpened | None = None


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a job reports back to the scheduler thread."""

    node: Node
    state: str
    attempts: int
    verified: bool | None
    reason: str | None
    output: str
    duration_ms: int
    error: BaseException | None = None
    tampers: tuple[Tamper, ...] = ()  # found (and blamed) by the job itself
    demote: tuple[Demotion, ...] = ()  # children whose DONE no longer holds
    stop: str | None = None  # the loop's stop code (`groundskeeper.acceptance.loops`)
    gate: GateOpened | None = None  # the task waits at this gate (its headline unchanged)
