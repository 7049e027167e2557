"""One task in one run: what the run read of its heading, once, and what it has decided so far.

It owns `TaskRun`, `task_runs` (the one place the runner reads a heading's properties: check,
contracts, evidence, judge, gate, dock, invariants, attempt limit), the `Outcome` a job hands
the scheduler, and the runner's own preflight of a plan. It does not schedule, judge or write.
"""

from __future__ import annotations

from dataclasses import dataclass

from groundskeeper.acceptance.check import SealedCheck
from groundskeeper.acceptance.contracts import Contract, task_contracts
from groundskeeper.acceptance.evidence import EvidenceField, task_evidence
from groundskeeper.acceptance.gates import GateOpened, gate_files, is_gated
from groundskeeper.acceptance.invariants import Invariant, read_invariants
from groundskeeper.acceptance.judge import judge_criteria, judge_files
from groundskeeper.diagnostics import Diagnostic
from groundskeeper.plan.org import Heading, Plan
from groundskeeper.plan.tree import Node
from groundskeeper.supervisor.plan_guard import Tamper

DEFAULT_MAX_ATTEMPTS = 2
VERDICT_STATES = ("DONE", "FAILED", "PARTIAL")


def preflight(plan: Plan) -> list[Diagnostic]:
    """What the runner itself needs of a plan beyond rung 1: verdict states, valid numbers."""
    found: list[Diagnostic] = []
    missing = [s for s in VERDICT_STATES if s not in plan.done_states]
    # without any #+TODO: line the run inserts one with every verdict state (`needs_todo_line`)
    if missing and plan.tasks() and plan.declares_keywords:
        message = (
            f"the #+TODO line has no {', '.join(missing)} after `|`; the runner writes DONE,"
            " FAILED and PARTIAL verdicts (e.g. `#+TODO: TODO NEXT | DONE FAILED PARTIAL`)"
        )
        found.append(Diagnostic("error", "outline", message, None, "R001"))
    for task in plan.tasks():
        raw = task.get_property("max-attempts")
        if raw is not None and not (raw.strip().isdigit() and int(raw) >= 1):
            message = f":max-attempts: must be a whole number ≥ 1, not `{raw}`"
            found.append(Diagnostic("error", task.title, message, task.line, "R002"))
    return found


def max_attempts(task: Heading) -> int:
    raw = task.get_property("max-attempts")
    return int(raw) if raw is not None and raw.strip().isdigit() else DEFAULT_MAX_ATTEMPTS


@dataclass(slots=True)
class TaskRun:
    heading: Heading
    idx: int
    check: SealedCheck | None
    check_sha256: str | None
    start_state: str
    state: str
    attempts: int = 0
    verified: bool | None = None
    reason: str | None = None
    output: str = ""
    tainted: Tamper | None = None
    red: str | None = None  # under --require-red: why this task fails before any work
    contracts: tuple[Contract, ...] = ()
    evidence: tuple[EvidenceField, ...] = ()
    invariants: tuple[Invariant, ...] = ()  # what its worker is told must hold
    stop: str | None = None
    gated: bool = False  # `:gate: approval`: a passing check waits for a person
    waiting: GateOpened | None = None
    criteria: str | None = None  # what its judge checks the work against; None: no judge
    judge_files: tuple[str, ...] = ()  # `:judge-files:`, shown to the judge first
    gate_files: tuple[str, ...] | None = None  # `:gate-files:`, the artifacts a gate binds
    dock: str | None = None  # the `:dock:` property as written
    max_attempts: int = DEFAULT_MAX_ATTEMPTS


def task_runs(plan: Plan, judge_profile: str) -> dict[Heading, TaskRun]:
    """Every task of `plan` as the run starts it, its properties read here and nowhere else
    (lint has refused a plan whose contract, evidence or judge-files lines cannot be read)."""
    runs: dict[Heading, TaskRun] = {}
    for idx, heading in enumerate(plan.tasks()):
        check = SealedCheck.seal(heading.check) if heading.check else None
        keyword = heading.keyword or ""
        sha256 = check.sha256 if check else None
        run = runs[heading] = TaskRun(heading, idx, check, sha256, keyword, keyword)
        if heading.get_property("contract") is not None:
            run.contracts = tuple(task_contracts(plan, heading)[0])
        if heading.get_property("evidence") is not None:
            run.evidence = tuple(task_evidence(plan, heading)[0])
        run.gated = is_gated(heading)
        run.criteria = judge_criteria(heading, judge_profile)
        run.judge_files = tuple(judge_files(heading)[0])
        run.gate_files = gate_files(heading)
        run.dock = heading.get_property("dock")
        run.max_attempts = max_attempts(heading)
    for heading, seen in read_invariants(plan).for_tasks(plan).items():
        runs[heading].invariants = seen
    return runs


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
    demote: tuple[tuple[Node, str, str], ...] = ()  # children whose DONE no longer holds
    stop: str | None = None  # the loop's stop code (`groundskeeper.acceptance.loops`)
    gate: GateOpened | None = None  # the task waits at this gate (its headline unchanged)
