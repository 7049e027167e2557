"""The task, compiled once: each task's acceptance properties read from its heading into one
typed `TaskSpec` — check, protected, hidden and writable patterns, contracts, evidence, judge
criteria and files, gate and gate files, dock, invariants, attempt limit — with what could not
be read kept beside it for lint. Lint, the runner, the worker prompt and `check` read the spec;
nothing else reads a heading's properties. It does not judge anything (lint and the stages do).
"""

from __future__ import annotations

import functools
import hashlib
import json
import threading
import weakref
from collections.abc import Iterator, Mapping

from groundskeeper.fastclass import fastclass
from groundskeeper.plan.contract_syntax import (
    Contract,
    ContractProblem,
    task_contracts,
    verifying,
)
from groundskeeper.plan.invariants import Invariant, PlanInvariants, read_invariants
from groundskeeper.plan.org import Check, Heading, Plan
from groundskeeper.plan.properties import (
    EvidenceField,
    gate_files,
    inherited_patterns,
    is_gated,
    judge_files,
    max_attempts,
    max_attempts_problem,
    patterns_by_task,
    task_evidence,
)

__all__ = ["PlanSpec", "TaskSpec", "compile_plan"]


@fastclass(frozen=True, slots=True)
class TaskSpec:
    """One task as the rungs see it. Properties a plan leaves unset are empty or None."""

    heading: Heading
    check: Check | None
    protect: tuple[str, ...]  # the patterns its worker may not change (inherited, file, schemas)
    hide: tuple[str, ...]  # the patterns no worker may see or change (inherited, `#+HIDE:`)
    writable: tuple[str, ...]  # expected files its worker may change after all (inherited)
    contracts: tuple[Contract, ...]
    contract_problems: tuple[ContractProblem, ...]  # lint's T015
    evidence: tuple[EvidenceField, ...]
    evidence_problems: tuple[str, ...]  # lint's T017
    judge: str | None  # the `:judge:` property as written (None: unset)
    judge_files: tuple[str, ...]  # `:judge-files:` paths that can be read
    judge_files_given: bool  # `:judge-files:` is set (even to nothing readable)
    judge_file_problems: tuple[str, ...]  # lint's J003
    gate: str | None  # the `:gate:` property as written (None: unset)
    gated: bool  # `:gate: approval`
    gate_files: tuple[str, ...] | None  # None: `:gate-files:` unset
    dock: str | None  # the `:dock:` component path (stripped), None: unset
    invariants: tuple[Invariant, ...]  # what its worker is told must hold
    max_attempts: int
    max_attempts_problem: str | None  # lint's T011, the runner's R002

    @property
    def task_id(self) -> str:
        return self.heading.task_id

    @property
    def checked(self) -> bool:
        """Whether something other than the worker's word decides DONE: a check, or a hard
        contract that runs the work itself (`pytest`)."""
        return self.check is not None or bool(verifying(self.contracts))

    @property
    def judged_beyond_check(self) -> bool:
        """Whether DONE takes more than its check passing: contracts or evidence (judged on a
        worker's claim), a judge's pass, a person's yes (`:gate:`) or a dock. `check --write`
        never promotes such a task, and `audit` says so."""
        return bool(
            self.contracts
            or self.contract_problems
            or self.evidence
            or self.evidence_problems
            or self.judge is not None
            or self.gate is not None
            or self.dock is not None
        )

    @property
    def title(self) -> str:
        return self.heading.title

    @property
    def verdict_sha256(self) -> str:
        """The digest of every rule that decides this task's DONE: its check (language and
        text), contracts, evidence, judge criteria and files, gate and gate files, and dock.
        Sealed with each verdict (`state`): a DONE is backed only under the rules it got, so
        one sealed before the plan gained or changed any of them is judged again."""
        check = self.check
        return _verdict_digest(
            None if check is None else (check.language, check.text),
            tuple(c.text for c in self.contracts),
            len(self.contract_problems),
            tuple(f.spec for f in self.evidence),
            self.evidence_problems,
            self.judge,
            self.judge_files if self.judge_files_given else None,
            self.gate,
            self.gate_files,
            self.dock,
        )


@fastclass(frozen=True, slots=True)
class PlanSpec:
    """Every task's spec in document order, and the plan's invariants."""

    plan: Plan
    tasks: Mapping[Heading, TaskSpec]
    invariants: PlanInvariants

    def __iter__(self) -> Iterator[TaskSpec]:
        return iter(self.tasks.values())

    def of(self, heading: Heading) -> TaskSpec:
        return self.tasks[heading]


_compiled: weakref.WeakKeyDictionary[Plan, PlanSpec] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def compile_plan(plan: Plan) -> PlanSpec:
    """The plan's tasks compiled; a plan (an immutable reading of a file) is compiled once,
    however many readers ask."""
    with _lock:
        found = _compiled.get(plan)
    if found is not None:
        return found
    invariants = read_invariants(plan)
    seen = invariants.for_tasks(plan)
    paths = _PathProperties(
        patterns_by_task(plan),
        inherited_patterns(plan, "hide", "HIDE"),
        inherited_patterns(plan, "writable"),
    )
    tasks = {h: _compile_task(plan, h, paths, seen.get(h, ())) for h in plan.tasks()}
    spec = PlanSpec(plan, tasks, invariants)
    with _lock:
        return _compiled.setdefault(plan, spec)


@fastclass(frozen=True, slots=True)
class _PathProperties:
    protect: dict[Heading, tuple[str, ...]]
    hide: dict[Heading, tuple[str, ...]]
    writable: dict[Heading, tuple[str, ...]]


def _compile_task(
    plan: Plan, heading: Heading, paths: _PathProperties, invariants: tuple[Invariant, ...]
) -> TaskSpec:
    contracts: tuple[Contract, ...] = ()
    contract_problems: tuple[ContractProblem, ...] = ()
    if heading.get_property("contract") is not None:
        found, wrong = task_contracts(plan, heading)
        contracts, contract_problems = tuple(found), tuple(wrong)
    evidence: tuple[EvidenceField, ...] = ()
    evidence_problems: tuple[str, ...] = ()
    if heading.get_property("evidence") is not None:
        fields, problems = task_evidence(plan, heading)
        evidence, evidence_problems = tuple(fields), tuple(problems)
    files, wrong_files = judge_files(heading)
    dock = heading.get_property("dock")
    return TaskSpec(
        heading=heading,
        check=heading.check,
        protect=paths.protect[heading],
        hide=paths.hide[heading],
        writable=paths.writable[heading],
        contracts=contracts,
        contract_problems=contract_problems,
        evidence=evidence,
        evidence_problems=evidence_problems,
        judge=heading.get_property("judge"),
        judge_files=tuple(files),
        judge_files_given=heading.get_property("judge-files") is not None,
        judge_file_problems=tuple(wrong_files),
        gate=heading.get_property("gate"),
        gated=is_gated(heading),
        gate_files=gate_files(heading),
        dock=None if dock is None else dock.strip(),
        invariants=invariants,
        max_attempts=max_attempts(heading),
        max_attempts_problem=max_attempts_problem(heading),
    )


@functools.lru_cache(maxsize=4096)
def _verdict_digest(
    check: tuple[str, str] | None,
    contracts: tuple[str, ...],
    contract_problems: int,
    evidence: tuple[str, ...],
    evidence_problems: tuple[str, ...],
    judge: str | None,
    judge_files: tuple[str, ...] | None,
    gate: str | None,
    gate_files: tuple[str, ...] | None,
    dock: str | None,
) -> str:
    """`TaskSpec.verdict_sha256` of these rules: a pure function of them, so remembered (a
    resume asks it of every task several times, and most tasks of a plan share their rules)."""
    parts = {
        "check": None if check is None else [*check],
        "contracts": [*contracts],
        "contract_problems": contract_problems,
        "evidence": [*evidence],
        "evidence_problems": [*evidence_problems],
        "judge": judge,
        "judge_files": None if judge_files is None else [*judge_files],
        "gate": gate,
        "gate_files": None if gate_files is None else [*gate_files],
        "dock": dock,
    }
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
