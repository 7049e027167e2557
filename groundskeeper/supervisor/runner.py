"""The runner: one run of a plan, every task gated by its acceptance check.

It owns attempts and feedback, sealing checks at run start, taking verdicts (into the plan
through `PlanGuard`, telemetry and the sealed steps of `RunSeal`) and blaming tampering. The
tree walk is `task_tree`'s; narration is the CLI's, from the `RunEvent`s emitted here.
"""

from __future__ import annotations

import logging
import queue
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Literal

from groundskeeper.acceptance import protect
from groundskeeper.acceptance.attempt_record import OUTPUTS_DIR, AttemptRecord, OutputStore
from groundskeeper.acceptance.check import (
    DEFAULT_CHECK_TIMEOUT,
    CheckResult,
    SealedCheck,
    Shell,
    run_check,
    sha256_text,
)
from groundskeeper.acceptance.contracts import ContractContext, judge_contracts
from groundskeeper.acceptance.evidence import judge_evidence
from groundskeeper.acceptance.gates import (
    DECISIONS,
    GateAnswer,
    GateOpened,
    artifacts_sha256,
    hash_files,
    new_gate_id,
    workdir_files,
)
from groundskeeper.acceptance.judge import (
    J_UNAVAILABLE,
    J_UNREADABLE,
    Judgement,
    JudgeTask,
    ask_judge,
    collect_artifacts,
    judge_criteria,
    load_judge_prompt,
)
from groundskeeper.acceptance.loops import (
    DEFAULT_BREAKER,
    STOP_ATTEMPT_CAP,
    STOP_BREAKER,
    STOP_MAX_ATTEMPTS,
    AttemptBudget,
    Breaker,
)
from groundskeeper.acceptance.toolbox import DEFAULT_SH_TIMEOUT, Toolbox
from groundskeeper.diagnostics import Diagnostic, has_errors
from groundskeeper.errors import GroundskeeperError
from groundskeeper.models.model import (
    AssistantTurn,
    Model,
    ModelCall,
    ModelCallError,
    ModelCallRefused,
    ModelRequest,
    Usage,
    UsageTotals,
)
from groundskeeper.plan.contract_syntax import Contract, watched_paths
from groundskeeper.plan.edit import (
    TODO_LINE,
    has_statistics_cookie,
    needs_todo_line,
    statistics_cookies,
)
from groundskeeper.plan.edit import replace_keyword as edit_keyword
from groundskeeper.plan.invariants import Invariant
from groundskeeper.plan.keywords import file_flag
from groundskeeper.plan.org import Heading, Plan, PlanReadError
from groundskeeper.plan.properties import DEFAULT_MAX_ATTEMPTS, EvidenceField, covers
from groundskeeper.plan.spec import compile_plan
from groundskeeper.plan.tree import Node, TaskWalk, build_tree
from groundskeeper.record.backing import HasHistory, Record, read_record
from groundskeeper.record.control import ControlDir, RunLock
from groundskeeper.record.telemetry import Telemetry
from groundskeeper.sandbox import fence as fences
from groundskeeper.sandbox.quota import DEFAULT_DISK_QUOTA, DiskQuota
from groundskeeper.supervisor.plan_guard import PlanGuard, Tamper
from groundskeeper.supervisor.sealing import (
    MemoryRecorder,
    RunSeal,
    SealingError,
    StepRecorder,
    excerpt,
)
from groundskeeper.supervisor.worker import (
    DEFAULT_MAX_TURNS,
    AttemptOutcome,
    ToolCallRecord,
    WorkerSession,
    WorkerTask,
    load_worker_prompt,
    render_worker_prompt,
)

__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "DEFAULT_MAX_PARALLEL",
    "FailFastModel",
    "MemoryRecorder",
    "PlanGuard",
    "RunEvent",
    "RunOptions",
    "RunReport",
    "Runner",
    "StepRecorder",
    "Tamper",
    "TaskReport",
    "new_run_id",
    "preflight",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_PARALLEL = 4
VERIFY_PARALLEL = 4  # the least width of the run's own read-only checks
VERDICT_STATES = ("DONE", "FAILED", "PARTIAL")


@dataclass(frozen=True, slots=True)
class RunOptions:
    max_parallel: int = DEFAULT_MAX_PARALLEL
    require_checks: bool = False
    require_red: bool = False  # a check that passes before any work is FAILED (`#+REQUIRE_RED`)
    max_turns: int = DEFAULT_MAX_TURNS
    check_timeout: float = DEFAULT_CHECK_TIMEOUT
    sh_timeout: float = DEFAULT_SH_TIMEOUT
    disk_quota: int = DEFAULT_DISK_QUOTA  # bytes all of a run's commands and tools may write
    # what a judge's API error means (`acceptance.judge.PROFILES`; docs/plans.md): `fast`
    # lets the check's pass stand, the others keep the task from DONE, resumable
    judge_profile: str = "auto"
    breaker: int = DEFAULT_BREAKER  # the same normalized failure this many times ends a task
    max_total_attempts: int | None = None  # the run starts no attempt past this many


@dataclass(frozen=True, slots=True)
class TaskReport:
    id: str
    title: str
    line: int
    idx: int
    state: str
    attempts: int
    verified: bool | None
    reason: str | None
    output: str = ""
    stop: str | None = (
        None  # why the fix loop ended without DONE (`groundskeeper.acceptance.loops`)
    )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "line": self.line,
            "state": self.state,
            "attempts": self.attempts,
            "verified": self.verified,
            "reason": self.reason,
            "stop": self.stop,
        }


@dataclass(frozen=True, slots=True)
class RunReport:
    run_id: str
    ok: bool
    started: bool
    diagnostics: tuple[Diagnostic, ...]
    tasks: tuple[TaskReport, ...]
    tampers: tuple[Tamper, ...] = ()
    plan_edits: tuple[str, ...] = ()  # changes beyond keywords: the inserted #+TODO: line
    usage: UsageTotals = field(
        default_factory=UsageTotals
    )  # every model call of the run, failed ones included
    # why the run stopped calling the model (`model unavailable: …`): the plan is resumable
    model_unavailable: str | None = None
    # why judged tasks were left resumable (`judge unavailable: …`), under every profile but fast
    judge_unavailable: str | None = None
    # why the run started no more attempts (`attempt-cap: …`): the tasks left are resumable
    attempt_cap: str | None = None
    waiting: tuple[GateOpened, ...] = ()  # gated tasks whose check passed: a person decides

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "ok": self.ok,
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "tasks": [t.to_json() for t in self.tasks],
            "plan_edits": list(self.plan_edits),
            "usage": self.usage.to_json(),
            "model_unavailable": self.model_unavailable,
            "judge_unavailable": self.judge_unavailable,
            "attempt_cap": self.attempt_cap,
            "waiting": [g.to_json() for g in self.waiting],
        }


EventKind = Literal["task-start", "attempt-failed", "task-end", "tamper", "plan-edit"]


@dataclass(frozen=True, slots=True)
class RunEvent:
    """Progress for a narrator, one call at a time (`attempt-failed` from a pool thread)."""

    kind: EventKind
    task_id: str | None
    title: str = ""
    state: str | None = None
    attempts: int = 0
    verified: bool | None = None
    reason: str | None = None


class FailFastModel:
    """The run's model behind a latch: after one call fails for good (`ModelCallError`, the
    API down past its retries), no further call is made in this run — each is refused at
    once — so the run ends quickly and resumably instead of waiting out every task's retries."""

    def __init__(self, model: Model) -> None:
        self.inner = model
        self.failure: str | None = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.inner.name

    def respond(self, request: ModelRequest) -> AssistantTurn:
        if self.failure is not None:
            raise ModelCallRefused(
                f"not called: the model failed earlier in this run ({self.failure})"
            )
        try:
            return self.inner.respond(request)
        except ModelCallError as exc:
            with self._lock:
                if self.failure is None:
                    self.failure = str(exc)
            raise


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(4)


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
    for task in compile_plan(plan):
        if task.max_attempts_problem is not None:
            heading = task.heading
            found.append(
                Diagnostic("error", heading.title, task.max_attempts_problem, heading.line, "R002")
            )
    return found


@dataclass(slots=True)
class _TaskRun:
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


@dataclass(frozen=True, slots=True)
class _Outcome:
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


def _nodes(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children:
        yield from _nodes(child)


class Runner:
    """One run of one plan. Create, then `run()` once.

    Steps are sealed through `recorder`: the CLI passes the signed ledger; without one they
    are kept in memory (`MemoryRecorder`). A step that cannot be sealed stops the run (R004).
    """

    def __init__(
        self,
        plan: Plan,
        *,
        model: Model,
        workdir: Path | None = None,
        options: RunOptions | None = None,
        recorder: StepRecorder | None = None,
        telemetry: Telemetry | None = None,
        shell: Shell | None = None,
        on_event: Callable[[RunEvent], None] | None = None,
        run_id: str | None = None,
        run_lock: RunLock | None = None,
        judge_model: Model | None = None,
        gate_answers: dict[str, GateAnswer] | None = None,
    ) -> None:
        if plan.path is None:
            raise PlanReadError("the runner needs a plan read from a file")
        self.plan = plan
        self.spec = compile_plan(plan)  # every task's properties, read once
        self.plan_path = plan.path
        self.control = ControlDir.for_plan(plan.path)
        self.run_lock = run_lock  # held by the caller; else `run` holds its own
        self.workdir = (workdir or plan.path.parent).resolve()
        self.model = FailFastModel(model)
        # the judge's own latch: one API error past its retries and no judge is called again
        self.judge_model = FailFastModel(judge_model) if judge_model is not None else None
        self._judge_warnings: list[Diagnostic] = []
        self.options = options or RunOptions()
        self.run_id = run_id or new_run_id()
        self.seal = RunSeal(recorder if recorder is not None else MemoryRecorder(), self.run_id)
        self.telemetry = telemetry
        self.shell = shell
        self.on_event = on_event
        self.tasks: dict[Heading, _TaskRun] = {}
        self.tampers: list[Tamper] = []
        self._lines = plan.text.split("\n")  # a verdict edits one line, as the plan numbers them
        self._shift = 0  # 1 once the run has inserted the #+TODO: line above every headline
        self._parents = {c: h for h in plan.walk() for c in h.children}
        # custom done states (after `|`, not a verdict of ours): finished, never run again
        self._finished_states = frozenset(plan.done_states) - set(VERDICT_STATES)
        self._queue: queue.SimpleQueue[_Outcome] = queue.SimpleQueue()
        self._inflight: dict[Node, None] = {}  # submitted, not yet judged
        self._started: set[Node] = set()  # picked up by a pool thread
        self._started_lock = threading.Lock()
        self._event_lock = threading.Lock()
        self._record = Record()  # what the ledger held at run start (`_run_fenced`)
        self._nodes: dict[Heading, Node] = {}
        self._pool: ThreadPoolExecutor | None = None
        self._check_events: list[tuple[str, str, str, str | None]] = []
        self._inputs: dict[str, str | None] = {}  # protected input → sha256 at run start
        self._inputs_of: dict[str, list[str]] = {}  # task id → the protected inputs it reads
        self._dock_lock = threading.Lock()  # guards the record's docks, which docking updates
        self._guard = PlanGuard(self.plan_path, plan.text, self.control.rejected)
        self._usage = UsageTotals()
        self._usage_lock = threading.Lock()
        self._outputs = OutputStore(self.control.path / OUTPUTS_DIR)
        self._soft: list[Diagnostic] = []  # soft contract failures: warnings in the report
        self._budget = AttemptBudget(self.options.max_total_attempts)
        self._answers = dict(gate_answers or {})  # task id → a person's answer to its gate

    # -- public ---------------------------------------------------------------------------------

    def run(self, lint: Callable[[Plan], list[Diagnostic]] | None = None) -> RunReport:
        """Lint (rung 1, `groundskeeper.plan.lint.validate` unless given), then run the plan.

        One run at a time per plan: PlanInUse if another holds it. Workers and checks run
        behind the plan's fence (its control directory absent, its file read-only)."""
        if self.run_lock is not None:
            return self._run(lint)
        with RunLock(self.control):
            return self._run(lint)

    def _run(self, lint: Callable[[Plan], list[Diagnostic]] | None) -> RunReport:
        self.control.ensure()
        fence = fences.for_plan(self.plan_path, self.control.root)
        patterns = {task.heading: task.protect for task in self.spec}
        try:
            files = protect.matched_files(self.workdir, [p for ps in patterns.values() for p in ps])
        except ValueError as exc:
            raise PlanReadError(f"{self.plan_path}: :protect: {exc}; narrow the patterns") from exc
        # sealed at run start: what each protected input holds before any worker runs
        self._inputs = {f: protect.input_sha256(self.workdir, f) for f in files}
        self._inputs_of = {
            h.task_id: [f for f in files if covers(ps, f)] for h, ps in patterns.items()
        }
        with fences.enforced(fence.union(fences.protecting(self.workdir, files))):
            return self._run_fenced(lint)

    def _run_fenced(self, lint: Callable[[Plan], list[Diagnostic]] | None) -> RunReport:
        if lint is None:
            from groundskeeper.plan.lint import validate

            lint = validate
        diagnostics = [*lint(self.plan), *preflight(self.plan), *self._judge_preflight()]
        if has_errors(diagnostics):
            return RunReport(self.run_id, False, False, tuple(diagnostics), self._reports())
        for idx, heading in enumerate(self.plan.tasks()):
            check = SealedCheck.seal(heading.check) if heading.check else None
            keyword = heading.keyword or ""
            sha256 = check.sha256 if check else None
            run = self.tasks[heading] = _TaskRun(heading, idx, check, sha256, keyword, keyword)
            # lint refused a plan whose contract or evidence lines cannot be read
            spec = self.spec.of(heading)
            run.contracts, run.evidence, run.gated = spec.contracts, spec.evidence, spec.gated
            run.invariants = spec.invariants
        try:
            self.seal.run_start(
                plan=str(self.plan_path),
                plan_text=self.plan.text,
                checks=[(t.heading.task_id, t.check_sha256) for t in self.tasks.values()],
                model=self.model.name,
                workdir=str(self.workdir),
                max_parallel=self.options.max_parallel,
                require_checks=self.options.require_checks,
                require_red=self.options.require_red or file_flag(self.plan.text, "REQUIRE_RED"),
                protected=sorted(self._inputs.items()),
                breaker=self.options.breaker,
                max_total_attempts=self.options.max_total_attempts,
            )
        except SealingError:
            diagnostics.append(self._unsealed(started=False))
            return RunReport(self.run_id, False, False, tuple(diagnostics), self._reports())
        self._record = read_record(
            self.seal.recorder.history() if isinstance(self.seal.recorder, HasHistory) else ()
        )
        if self.telemetry is not None:
            # a row a killed run left pending is kept only for a verdict the plan shows and,
            # for DONE, the record backs: an unbacked DONE is re-verified, with a row of its own
            self.telemetry.reconcile(
                {
                    t.heading.task_id: t.start_state
                    for t in self.tasks.values()
                    if t.start_state != "DONE"
                    or self._record.backs_done(t.heading.task_id, t.check_sha256)
                }
            )
        tree = build_tree(self.plan.roots)
        self._walk = TaskWalk(tree, self, self._finished_states)
        self._nodes = {n.heading: n for n in _nodes(tree) if n.heading is not None}
        # read once per run: every worker shares them (the toolbox keeps no state of its own)
        self._prompt = load_worker_prompt()
        self._judge_prompt = load_judge_prompt()
        self._toolbox = Toolbox(
            self.workdir,
            self.plan_path,
            self.shell,
            self.options.sh_timeout,
            quota=DiskQuota(self.options.disk_quota),
        )
        self._guard.start()
        self._executor = ThreadPoolExecutor(max_workers=max(1, self.options.max_parallel))
        try:
            self._back_every_done()
            self._red_first(diagnostics)
            self._walk.begin()
            self._loop()
            if self._halted is None:  # a model that went away leaves the earned DONEs to check
                self._final_sweep()
        finally:
            self._executor.shutdown(wait=True, cancel_futures=True)
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
            tampers = self._guard.close()
            self._flush_check_events()  # the roll-ups'
        for tamper in tampers:
            self._tampered(tamper)
        diagnostics.extend(t.diagnostic() for t in self.tampers)
        with self._event_lock:
            diagnostics.extend(self._soft)
        lost = self.telemetry.displaced() if self.telemetry is not None else None
        if lost is not None:
            diagnostics.append(Diagnostic("error", "telemetry", lost, None, "R005"))
        reports = self._reports()
        ok = all(r.state == "DONE" for r in reports) and not self.tampers and lost is None
        if self._guard.failure is not None:
            ok = False
            message = (
                f"{self._guard.failure}; the run stopped, and no verdict after that reached the"
                " plan (the next run re-verifies whatever the plan shows)"
            )
            diagnostics.append(Diagnostic("error", "plan", message, None, "R006"))
        self.seal.run_end(ok, [(r.id, r.state) for r in reports], len(self.tampers))
        if self.seal.failure is not None:
            ok = False
            diagnostics.append(self._unsealed(started=True))
        edits = (f"inserted line 1: {TODO_LINE}",) if self._shift else ()
        down = self.model.failure
        if down is not None:
            ok = False
            diagnostics.append(self._model_down_diagnostic(down, reports))
        judge_down = self._judge_down()
        if judge_down is not None:
            ok = False
            diagnostics.append(self._judge_down_diagnostic(judge_down, reports))
        with self._event_lock:
            diagnostics.extend(self._judge_warnings)
        capped = None
        if self._budget.refused:
            ok = False
            diagnostics.append(self._cap_diagnostic(reports))
            capped = f"attempt-cap: {self._budget.taken} attempt(s) started"
        with self._usage_lock:
            usage = self._usage
        waiting = tuple(t.waiting for t in self.tasks.values() if t.waiting is not None)
        return RunReport(
            self.run_id, ok, True, tuple(diagnostics), reports, tuple(self.tampers), edits,
            usage, None if down is None else f"model unavailable: {down}",
            None if judge_down is None else f"judge unavailable: {judge_down}",
            capped,
            waiting,
        )  # fmt: skip

    def _model_down_diagnostic(self, down: str, reports: tuple[TaskReport, ...]) -> Diagnostic:
        left = sum(r.state not in VERDICT_STATES and r.state not in self._finished_states
                   for r in reports)  # fmt: skip
        message = (
            f"model unavailable: {down}; the run stopped calling it, and {left} task(s) are"
            " left resumable (never DONE): run the same `groundskeeper resume` again once the"
            " API answers"
        )
        return Diagnostic("error", "model", message, None, "R008")

    def _cap_diagnostic(self, reports: tuple[TaskReport, ...]) -> Diagnostic:
        left = sum(r.stop == STOP_ATTEMPT_CAP for r in reports)
        message = (
            f"attempt cap reached: the run started its {self._budget.taken} attempt(s)"
            f" (--max-total-attempts {self._budget.limit}) and started nothing more; {left}"
            " task(s) are left resumable (never DONE): run `groundskeeper resume` again,"
            " with a larger cap if need be"
        )
        return Diagnostic("error", "run", message, None, "I010")

    # -- DONE is backed by the record ------------------------------------------------------------

    def _back_every_done(self) -> None:
        """Before anything is skipped: every DONE headline must be backed by a sealed DONE for
        that task and the same check. One that is not (hand-edited, written by a worker, left
        by a run killed mid-write) is re-verified: its check runs; pass → DONE, recorded as
        re-verified; fail → back to TODO, so this run works on it. A parent is re-derived from
        its children; a leaf without a check stays DONE only as `unverified (no record)`."""
        unbacked = [
            t
            for t in self.tasks.values()
            if t.start_state == "DONE"
            and not self._record.backs_done(t.heading.task_id, t.check_sha256)
        ]
        checked: list[_TaskRun] = []
        for task in unbacked:
            if task.heading.child_tasks:
                task.start_state = "TODO"  # the walk rolls it up again from its children
            elif task.contracts or task.evidence or task.gated:
                # judged only on a worker's claim (the record of its attempt): no check alone
                # can stand in for that, so the task is worked on again
                task.start_state = "TODO"
                why = (
                    "re-verified: the DONE headline had no sealed record, and its contracts,"
                    " evidence or approval gate are judged only on a worker's claim (and a"
                    " person's answer); back to TODO"
                )
                self._settle(task, "TODO", 0, None, why, "", 0)
            elif judge_criteria(self.spec.of(task.heading), self.options.judge_profile) is not None:
                # a judged task is DONE only with the judge's pass: its check alone is not that
                task.start_state = "TODO"
                why = (
                    "re-verified: the DONE headline had no sealed record, and the task is"
                    " judged only after a worker's attempt; back to TODO"
                )
                self._settle(task, "TODO", 0, None, why, "", 0)
            elif task.check is None:
                task.verified, task.reason = False, "unverified (no record)"
                if self.options.require_checks:
                    task.start_state = "TODO"  # and, without a check, FAILED for it
            else:
                checked.append(task)
        results = self._phase(checked, "reverify")
        if results is None:
            return  # latched: the loop starts nothing unsealed
        for task, (result, ms) in zip(checked, results, strict=True):
            if result.passed:
                why = "re-verified: the DONE headline had no sealed record; its check passes"
                self._settle(task, "DONE", 0, True, why, result.output, ms)
            else:
                task.start_state = "TODO"
                why = (
                    "re-verified: the DONE headline had no sealed record and its check fails"
                    f" ({result.code}: {result.reason}); back to TODO"
                )
                self._settle(task, "TODO", 0, True, why, result.output, ms)

    def _red_first(self, diagnostics: list[Diagnostic]) -> None:
        """Before any worker runs: each pending task's check, once, on the untouched workdir.
        A check that already passes cannot tell work from no work: reported (R007), and
        FAILED under --require-red (or `#+REQUIRE_RED: t`). A resumed plan asks this only of
        tasks that have never started."""
        required = self.options.require_red or file_flag(self.plan.text, "REQUIRE_RED")
        pending = [
            t
            for t in self.tasks.values()
            if t.start_state != "DONE"
            and t.check is not None
            and t.heading.task_id not in self._record.started
        ]
        results = self._phase(pending, "red-first")
        if results is None:
            return
        for task, (result, _) in zip(pending, results, strict=True):
            if not result.passed:
                continue
            why = "red-first: passes before any work"
            if required:
                task.red = why
            else:
                message = (
                    f"{task.heading.title}: {why} — the check cannot tell the work from no work;"
                    " make it test what the task must produce (or pass --require-red to fail"
                    " such tasks)"
                )
                diagnostics.append(
                    Diagnostic("warning", task.heading.title, message, task.heading.line, "R007")
                )

    def _checks_pool(self) -> ThreadPoolExecutor:
        """Where the run's own checks (red first, re-verification, the sweep) run: at least 4
        wide whatever --max-parallel says (they only read, and their sealed steps then share
        the ledger's durable commits)."""
        if self._pool is None:
            wide = max(VERIFY_PARALLEL, self.options.max_parallel)
            self._pool = ThreadPoolExecutor(max_workers=wide, thread_name_prefix="gk-verify")
        return self._pool

    def _final_sweep(self) -> None:
        """Once more, every task that became DONE in this run: whatever undid its work since
        its check passed (a later sibling, an accomplice) demotes it here, with its DONE
        parents, before the run ends."""
        earned = [
            t
            for t in self.tasks.values()
            if t.state == "DONE" and t.start_state != "DONE" and t.check is not None
        ]
        results = self._phase(earned, "sweep")
        if results is None:
            return
        for task, (result, _) in zip(earned, results, strict=True):
            if result.passed:
                continue
            why = f"no longer passes: {result.code}: {result.reason}"
            self._settle(task, "FAILED", task.attempts, True, why, result.output, 0)
            node = self._nodes.get(task.heading)
            parent = node.parent if node is not None else None
            while parent is not None and parent.heading is not None:
                above = self.tasks.get(parent.heading)
                if above is not None and above.state == "DONE":
                    note = f"a child no longer passes: {task.heading.title}"
                    self._settle(above, "PARTIAL", above.attempts, above.verified, note, "", 0)
                parent = parent.parent

    def _phase(self, tasks: list[_TaskRun], phase: str) -> list[tuple[CheckResult, int]] | None:
        """The run's own check of each task (with a check) for `phase`, in the checks pool:
        (result, ms) in the tasks' order, or None once a step could not be sealed. The
        phase's telemetry rows are written in one transaction at its end."""

        def one(task: _TaskRun) -> tuple[CheckResult, int]:
            assert task.check is not None
            started = time.monotonic()
            if phase == "reverify":  # a task of its own in the record, not an attempt's
                self.seal.task_start(task.heading.task_id, "reverify", task.check_sha256)
            result = self._check(task.heading.task_id, 0, task.check, phase)
            return result, int((time.monotonic() - started) * 1000)

        try:
            return list(self._checks_pool().map(one, tasks))
        except SealingError:
            return None
        finally:
            self._flush_check_events()

    # -- the walk's host (scheduler thread) -----------------------------------------------------

    def start_state(self, node: Node) -> str:
        return self._task(node).start_state

    def has_own_check(self, node: Node) -> bool:
        """A parent's own job after its children: its children's checks once more, then its
        own check and its `:dock:` (every parent has one, so DONE is earned at roll-up)."""
        return True

    def submit(self, node: Node) -> None:
        self._inflight[node] = None
        job = self._leaf_job if node.kind == "leaf" else self._rollup_job
        self._executor.submit(self._guarded, job, node)

    def settle(self, node: Node, state: str, reason: str | None) -> None:
        self._settle(self._task(node), state, 0, None, reason, "", 0)

    # -- scheduling (scheduler thread) ----------------------------------------------------------

    def _loop(self) -> None:
        walk = self._walk
        while True:
            while walk.pending and self._stopping is None:
                walk.run_next()
            if self._stopping is not None:
                walk.abandon()  # fail closed: nothing new starts unsealed or unwritten
            if not self._inflight:
                return
            self._handle(self._queue.get())
            while True:
                try:
                    outcome = self._queue.get_nowait()
                except queue.Empty:
                    break
                self._handle(outcome)

    @property
    def _halted(self) -> str | None:
        """Why the run can record nothing more: a step it could not seal, a plan it could not
        write."""
        return self.seal.failure or self._guard.failure

    @property
    def _stopping(self) -> str | None:
        """Why the run starts nothing more: it is halted, the model is unavailable (under
        `--judge-profile safe|strict`, the judge's model too), or an attempt was refused by
        the run's cap."""
        if self._budget.refused:
            return self._halted or self.model.failure or "attempt cap reached"
        return self._halted or self.model.failure or self._judge_stops_run

    @property
    def _judge_stops_run(self) -> str | None:
        """Under `--judge-profile safe|strict`, why a failed judge stops the run starting tasks."""
        judge = self.judge_model
        if judge is None or self.options.judge_profile not in ("safe", "strict"):
            return None
        return judge.failure

    def _guarded(self, job: Callable[[Node], _Outcome], node: Node) -> None:
        """A job on a pool thread: sealed as started when it really starts, never unsealed."""
        task = self._task(node)
        started = time.monotonic()
        down = self.model.failure
        judge_down = self._judge_stops_run
        if node.kind == "leaf" and (down is not None or judge_down is not None):
            # queued before the model went away: not started at all (nothing sealed for it)
            which = "the model" if down is not None else "the judge's model"
            why = f"not started: {which} is unavailable ({down or judge_down})"
            self._queue.put(_Outcome(node, task.start_state, 0, None, why, "", 0))
            return
        if node.kind == "leaf" and task.red is None and self._budget.spent:
            self._budget.take()  # refused: latches, so the walk starts nothing more
            self._queue.put(_Outcome(node, task.start_state, 0, None, self._capped(0, None), "", 0,
                                     stop=STOP_ATTEMPT_CAP))  # fmt: skip
            return
        try:
            invariants = [i.to_json() for i in task.invariants] if node.kind == "leaf" else None
            self.seal.task_start(
                task.heading.task_id, node.kind, task.check_sha256, invariants=invariants
            )
            with self._started_lock:
                self._started.add(node)
            self._emit(RunEvent("task-start", task.heading.task_id, task.heading.title))
            outcome = job(node)
        except BaseException as exc:  # handed to the scheduler thread, which decides
            ms = int((time.monotonic() - started) * 1000)
            outcome = _Outcome(node, "FAILED", 0, None, f"internal error: {exc}", "", ms, exc)
        self._queue.put(outcome)

    def _handle(self, outcome: _Outcome) -> None:
        if outcome.error is not None and not isinstance(outcome.error, GroundskeeperError):
            raise outcome.error
        # a leaf job looked at the plan after each attempt; the writer looks before each write
        for tamper in outcome.tampers:
            self._tampered(tamper, blamed=True)
        self._inflight.pop(outcome.node, None)
        with self._started_lock:
            self._started.discard(outcome.node)
        for child, why, output in outcome.demote:
            self._settle(self._task(child), "FAILED", self._task(child).attempts, True, why,
                         output, 0)  # fmt: skip
            child.outcome = "FAILED"
        task = self._task(outcome.node)
        task.waiting = outcome.gate if task.tainted is None else None
        state, reason, verified = outcome.state, outcome.reason, outcome.verified
        if task.tainted is not None:
            state, verified = "FAILED", None
            reason = (
                f"tampering: {task.tainted.describe()}; workers cannot write the plan, so the"
                " change came from outside the sandbox and blame cannot be placed: every task"
                " running then fails closed"
            )
        self._settle(
            task, state, outcome.attempts, verified, reason, outcome.output, outcome.duration_ms,
            stop=outcome.stop if task.tainted is None else None,
        )  # fmt: skip
        self._walk.finished(outcome.node, task.state)

    # -- jobs (pool threads) --------------------------------------------------------------------

    def _leaf_job(self, node: Node) -> _Outcome:
        task = self._task(node)
        heading = task.heading
        started = time.monotonic()
        if task.red is not None:
            return _Outcome(node, "FAILED", 0, True, task.red, "", 0)
        about = WorkerTask(
            heading.task_id,
            heading.title,
            heading.body,
            task.check,
            self.plan_path.name,
            tuple(c.text for c in task.contracts),
            tuple(f.spec for f in task.evidence),
            task.invariants,
        )
        # the paths a `changed` contract names are looked at around each of its `sh` calls
        watching = watched_paths(task.contracts)
        session = WorkerSession(
            self.model,
            about,
            replace(self._toolbox, watch=watching) if watching else self._toolbox,
            max_turns=self.options.max_turns,
            system=render_worker_prompt(about, self._prompt),
        )
        limit = self.spec.of(heading).max_attempts
        feedback: str | None = None
        written: set[str] = set()  # what this job's attempts wrote: a gate's artifacts
        if task.gated:
            # a revised task stays bound to what its open gate showed, and to what it adds
            shown = (self._record.gates.get(heading.task_id) or {}).get("files")
            written.update(
                str(f["path"]) for f in shown or () if isinstance(f, dict) and f.get("path")
            )
            settled, feedback = self._gate_first(node, task, started)
            if settled is not None:
                return settled
        state: str = "FAILED"
        verified: bool | None = None
        reason: str | None = "no attempt was made"
        output = ""
        # one rule ends a loop early: the same normalized failure `--breaker` times in a row
        breaker = Breaker(self.options.breaker)
        stop: str | None = None
        attempt = 0
        found: list[Tamper] = []
        unavailable = ""
        wrote: list[str] = []  # paths the record shows the worker wrote, over its attempts
        while attempt < limit:
            if not self._budget.take():
                # the run's cap, not this task's failure: it keeps its state, resumable
                ms = int((time.monotonic() - started) * 1000)
                last = reason if attempt else None
                return _Outcome(node, task.start_state, attempt, None, self._capped(attempt, last),
                                output, ms, None, tuple(found), stop=STOP_ATTEMPT_CAP)  # fmt: skip
            attempt += 1
            sealed: list[dict[str, Any]] = []  # this attempt's tool calls, as sealed
            session.on_tool_call = partial(
                self._tool_call,
                heading.task_id,
                attempt,
                sealed,
                bool(task.contracts or task.evidence),
            )
            session.on_model_call = partial(self._model_called, heading.task_id, attempt)
            watched = self._watch(task)
            try:
                claim: AttemptOutcome | None = session.attempt(feedback)
                written.update(_written_paths(sealed))
            except ModelCallError as exc:
                claim, unavailable = None, f"model unavailable: {exc}"
            # look at the plan before anything else can run: the culprit is among the started
            for tamper in self._guard.verify():
                self._blame(tamper)
                found.append(tamper)
            if task.tainted is not None:
                break
            if claim is None:
                # not the worker's failure: the attempt is unfinished and does not count; the
                # task keeps the state it started in, for the next resume (never DONE)
                ms = int((time.monotonic() - started) * 1000)
                return _Outcome(node, task.start_state, attempt - 1, None, unavailable, output,
                                ms, None, tuple(found))  # fmt: skip
            self.seal.claim(heading.task_id, attempt, claim)
            if claim.ends_task:  # refusal, context window exceeded: no attempt can help
                state, verified, reason, output = "FAILED", None, claim.no_claim, claim.claim
                break
            unmet = self._judge_claim(task, attempt, claim, sealed, watched)
            if unmet is not None:
                state, verified, reason = "FAILED", True, unmet[0]
                output = ""
                if breaker.failed(f"claim\n{unmet[1]}") and attempt < limit:
                    reason, stop = self._broken(reason, attempt, limit), STOP_BREAKER
                    break
                if attempt < limit:
                    self._emit(
                        RunEvent("attempt-failed", heading.task_id, heading.title, "FAILED",
                                 attempt, True, f"claimed {excerpt(claim.claim)!r}, but {reason}")
                    )  # fmt: skip
                feedback = unmet[1]
                continue
            if task.check is None:
                state, verified, reason = self._unchecked(claim)
                output = claim.claim
                if state == "DONE" and task.gated:  # the worker's word, then a person's
                    return self._gate_open(node, task, attempt, written, output, started)
                if state == "DONE":  # a `:dock:` is honoured with or without a check
                    dock_failure = self._dock(heading)
                    if dock_failure is not None:
                        state, reason = "FAILED", dock_failure
                break
            result = self._check(heading.task_id, attempt, task.check)
            output = result.output
            for body in sealed:  # what the worker wrote, for the judge (every attempt's)
                if isinstance(body.get("changed"), list):
                    wrote.extend(p for p in body["changed"] if p not in wrote)
            judged = self._judged(task, attempt, wrote) if result.passed else None
            if judged is not None and judged.unavailable:
                # not the worker's failure: like a model outage, the task keeps its state
                ms = int((time.monotonic() - started) * 1000)
                return _Outcome(node, task.start_state, attempt, None, judged.reason, output,
                                ms, None, tuple(found))  # fmt: skip
            failure: str  # what the breaker compares, its volatile parts aside
            if judged is not None:
                failure = f"judge\n{judged.reason}"
                state, verified, reason = "FAILED", True, judged.reason
                detail = judged.reason
                judge_feedback: str | None = judged.feedback()
            elif result.passed:
                judge_feedback = None
                if task.gated:  # docked once a person approves
                    return self._gate_open(node, task, attempt, written, output, started)
                dock_failure = self._dock(heading)
                if dock_failure is None:
                    state, verified, reason = "DONE", True, None
                    break
                failure = f"dock\n{dock_failure}"
                state, verified, reason = "FAILED", True, dock_failure
                detail = dock_failure
            else:
                judge_feedback = None
                failure = f"{result.code}\n{result.reason}\n{result.output}"
                state, verified, reason = "FAILED", True, f"{result.code}: {result.reason}"
                if claim.no_claim is not None:  # e.g. cut off at max_tokens: say so
                    reason = f"{reason} (and the worker made no claim: {claim.no_claim})"
                detail = f"{result.reason}\n{result.output}".rstrip()
            if breaker.failed(failure) and attempt < limit:
                reason, stop = self._broken(reason, attempt, limit), STOP_BREAKER
                break
            if attempt < limit:
                self._emit(
                    RunEvent("attempt-failed", heading.task_id, heading.title, "FAILED",
                             attempt, True, f"claimed {excerpt(claim.claim)!r}, but {reason}")
                )  # fmt: skip
            feedback = judge_feedback or (
                f"your work did not pass its acceptance check: {task.check.text.strip()} → {detail}"
            )
        else:  # the loop ran out: every attempt `:max-attempts:` allows was used, and failed
            stop = STOP_MAX_ATTEMPTS if state != "DONE" else None
        ms = int((time.monotonic() - started) * 1000)
        return _Outcome(node, state, attempt, verified, reason, output, ms, None, tuple(found),
                        stop=stop)  # fmt: skip

    def _broken(self, reason: str | None, attempt: int, limit: int) -> str:
        """The reason a breaker gives: it names itself first (its code), then the failure."""
        n = self.options.breaker
        return (
            f"breaker: the same failure {n} times in a row (volatile parts such as timings,"
            f" temp names and line numbers aside), so attempt {attempt + 1} of {limit} was not"
            f" started; the failure: {reason}"
        )

    def _capped(self, attempts: int, last: str | None) -> str:
        """The reason a task the run's attempt cap stopped is left as it was."""
        cap = self._budget.limit
        said = f"attempt-cap: the run had started its {cap} attempt(s) (--max-total-attempts {cap})"
        if not attempts:
            return f"{said}; this task was not started and is left resumable"
        return (
            f"{said}; after {attempts} failed attempt(s) this task is left resumable, never"
            f" DONE; its last failure: {last}"
        )

    # -- the judge (pool threads; acceptance.judge) -------------------------------------------

    def _judge_preflight(self) -> list[Diagnostic]:
        """A plan with a judged task needs a judge model (the CLI always passes one): without
        it the run does not start, rather than let such a task pass unjudged."""
        if self.judge_model is not None:
            return []
        profile = self.options.judge_profile
        for task in self.spec:
            if judge_criteria(task, profile) is not None:
                heading = task.heading
                message = "the plan has a judged task, but the run was given no judge model"
                return [Diagnostic("error", heading.title, message, heading.line, "J015")]
        return []

    def _judged(self, task: _TaskRun, attempt: int, wrote: list[str]) -> Judgement | None:
        """After a passing check, the judge (if the task has one): None when it passes, else
        its judgement — a failure for the worker to hear, or `unavailable` (an API error past
        its retries) for the task to wait on. Under `--judge-profile fast` an unavailable
        judge is a recorded warning and None: the check's pass stands. Sealed either way."""
        heading = task.heading
        profile = self.options.judge_profile
        criteria = judge_criteria(self.spec.of(heading), profile)
        if criteria is None:
            return None
        named = self.spec.of(heading).judge_files  # lint refused a plan with unreadable paths
        artifacts, unreadable = collect_artifacts(self._toolbox, named, wrote)
        judge = self.judge_model
        if unreadable:
            why = f"the judge was not asked: :judge-files: unreadable: {'; '.join(unreadable)}"
            judgement = Judgement(None, J_UNREADABLE, (), why, "", None, Usage(),
                                  tuple(artifacts), None, False)  # fmt: skip
        elif judge is None:
            why = "the judge's model is unavailable: the run was given none"
            judgement = Judgement(None, J_UNAVAILABLE, (), why, "", None, Usage(),
                                  tuple(artifacts), "no judge model", False)  # fmt: skip
        else:
            about = JudgeTask(heading.task_id, heading.title, heading.body, criteria)
            judgement = ask_judge(judge, about, artifacts, self._judge_prompt)[0]
        if judgement.called:
            call = ModelCall("judge", judgement.stop_reason, judgement.usage, judgement.error)
            self._model_called(heading.task_id, attempt, call)
        name = judge.name if judge is not None else None
        self.seal.judge(heading.task_id, attempt, profile, name, judgement)
        if judgement.passed:
            return None
        if judgement.unavailable and profile == "fast":
            message = f"{judgement.reason}; --judge-profile fast: the check's pass stands, unjudged"
            warning = Diagnostic("warning", heading.title, message, heading.line, J_UNAVAILABLE)
            with self._event_lock:
                self._judge_warnings.append(warning)
            return None
        return judgement

    def _judge_down(self) -> str | None:
        """Why judged tasks were left waiting (never under `fast`, where the pass stands)."""
        judge = self.judge_model
        if judge is None or judge.failure is None or self.options.judge_profile == "fast":
            return None
        return judge.failure

    def _judge_down_diagnostic(self, down: str, reports: tuple[TaskReport, ...]) -> Diagnostic:
        waiting = sum((r.reason or "").startswith(J_UNAVAILABLE) for r in reports)
        message = (
            f"judge unavailable: {down}; {waiting} judged task(s) are left resumable (never"
            " DONE without the judge's pass): run the same command again once the judge's API"
            " answers, or choose --judge-profile fast to let a passing check stand"
        )
        return Diagnostic("error", "judge", message, None, J_UNAVAILABLE)

    # -- approval gates (pool threads) ----------------------------------------------------------

    def _gate_open(
        self,
        node: Node,
        task: _TaskRun,
        attempt: int,
        written: set[str] | None,
        output: str,
        started: float,
        files: tuple[str, ...] | None = None,
        refused: str | None = None,
    ) -> _Outcome:
        """The gated task's work passed: seal a gate bound to its artifacts (`:gate-files:`,
        else what its attempts wrote, else the whole workdir) and the check; the task keeps its
        headline and waits for a person."""
        heading = task.heading
        if files is None:
            files = self.spec.of(heading).gate_files or tuple(sorted(written or ())) or None
        if files is None:
            skip = (self.plan_path, self.control.root)
            files = tuple(workdir_files(self.workdir, skip))
        hashed = hash_files(self.workdir, files)
        opened = GateOpened(
            heading.task_id,
            heading.title,
            new_gate_id(),
            task.check_sha256,
            tuple((str(f["path"]), f["sha256"]) for f in hashed),
            artifacts_sha256(task.check_sha256, hashed),
        )
        self.seal.gate(attempt, opened.to_json())
        ms = int((time.monotonic() - started) * 1000)
        reason = f"waiting for approval (gate {opened.gate_id}, {len(hashed)} file(s))"
        if refused is not None:  # said first: why the person is asked again
            reason = f"answer refused ({refused}); {reason}"
        verified = task.check is not None  # an unchecked task waits on the worker's word
        return _Outcome(node, task.start_state, attempt, verified, reason, output, ms, gate=opened)

    def _gate_first(
        self, node: Node, task: _TaskRun, started: float
    ) -> tuple[_Outcome | None, str | None]:
        """Before a gated task's first attempt: apply a person's answer to its open gate, or
        keep it waiting. (an outcome to return now, or None and the first attempt's feedback;
        both None: an ordinary task that no gate holds yet)."""
        heading = task.heading
        opened = self._record.gates.get(heading.task_id)
        answer = self._answers.pop(heading.task_id, None)
        decided = self._record.decided.get(heading.task_id)
        last = self._record.tasks.get(heading.task_id)
        if (
            opened is None
            and decided is not None
            and decided[1] == "no"
            and (task.start_state == "FAILED" and last is not None and last.state == "FAILED")
        ):
            # a person aborted it: it stays FAILED, never worked on again by itself (set its
            # headline back to TODO to try once more)
            ms = int((time.monotonic() - started) * 1000)
            why = "aborted at its approval gate (earlier; set it to TODO to try again)"
            return _Outcome(node, "FAILED", 0, task.check is not None, why, "", ms), None
        if opened is None and answer is None:
            return None, None
        if (
            opened is None
            and answer is not None
            and answer.refused is None
            and decided == (answer.gate_id, "revise")
        ):
            # applied in an earlier run the model left before any claim: sealed then, so it is
            # not sealed again, and its note still goes to the worker
            return None, _revise_feedback(answer)
        raw_files = opened.get("files") if opened is not None else None
        files = tuple(
            str(f.get("path")) for f in raw_files or () if isinstance(f, dict) and f.get("path")
        )
        now = artifacts_sha256(task.check_sha256, hash_files(self.workdir, files))
        refused: str | None = None
        if answer is not None:
            refused = _refusal(answer, opened, now)
            self.seal.gate_decision({
                "task_id": heading.task_id,
                "gate_id": answer.gate_id,
                "interrupt_id": answer.interrupt_id,
                "decision": answer.decision,
                "note": excerpt(answer.note),
                "note_sha256": sha256_text(answer.note),
                "by": excerpt(answer.by),
                "artifacts_sha256": answer.artifacts_sha256,
                "artifacts_now": now,
                "applied": refused is None,
                "refused": refused,
            })  # fmt: skip
            if refused is None:
                return self._gate_apply(node, task, answer, started)
            log.info("gate answer for %s refused: %s", heading.task_id, refused)
            if opened is None:
                return None, None  # no gate held it: worked on as any task
        # no answer (or a refused one): still the work the gate showed? Then it waits again,
        # with a fresh gate id, so no answer given before can apply to it
        if task.check is not None:
            result = self._check(heading.task_id, 0, task.check)
            if not result.passed:
                return None, (
                    "your work no longer passes its acceptance check:"
                    f" {task.check.text.strip()} → {result.reason}\n{result.output}".rstrip()
                )
        return self._gate_open(node, task, 0, None, "", started, files or None, refused), None

    def _gate_apply(
        self, node: Node, task: _TaskRun, answer: GateAnswer, started: float
    ) -> tuple[_Outcome | None, str | None]:
        """A sealed, bound answer takes effect: yes → DONE once its check passes again (and it
        docks); no → FAILED; revise → the note goes to the worker as feedback."""
        heading = task.heading

        def done(state: str, reason: str | None, output: str = "") -> _Outcome:
            ms = int((time.monotonic() - started) * 1000)
            return _Outcome(node, state, 0, task.check is not None, reason, output, ms)

        if answer.decision == "no":
            return done("FAILED", f"aborted at its approval gate ({answer.by or 'a person'})"), None
        if answer.decision == "revise":
            return None, _revise_feedback(answer)
        output = ""
        if task.check is not None:
            result = self._check(heading.task_id, 0, task.check)
            output = result.output
            if not result.passed:
                why = f"approved, but its check no longer passes: {result.code}: {result.reason}"
                return done("FAILED", why, output), None
        dock_failure = self._dock(heading)
        if dock_failure is not None:
            return done("FAILED", dock_failure, output), None
        return done("DONE", None, output), None

    def _model_called(self, task_id: str, attempt: int, call: ModelCall) -> None:
        """Every model call, answered or failed: sealed (before its reply is acted on), a row
        in telemetry, and added to the run's totals."""
        self.seal.model_call(task_id, attempt, call)
        with self._usage_lock:
            self._usage = self._usage.add(call.usage)
        if self.telemetry is not None:
            self.telemetry.record_model_call(self.run_id, task_id, attempt, call)

    def _tool_call(
        self,
        task_id: str,
        attempt: int,
        sealed: list[dict[str, Any]],
        keep: bool,
        call: ToolCallRecord,
    ) -> None:
        """Seal the call; its body joins the attempt's record. For a task with evidence or
        contracts (`keep`), first keep what the call printed by hash, so that a sealed hash
        names a stored text; other tasks' outputs are sealed as hashes only."""
        for text in call.texts if keep else ():
            try:
                self._outputs.put(text)
            except OSError as exc:  # the record then lacks it: evidence quoting it fails
                log.warning("could not keep a tool call's output: %s", exc)
        sealed.append(self.seal.tool_call(task_id, attempt, call))

    def _watch(self, task: _TaskRun) -> dict[str, str | None]:
        """The content hash, as the attempt starts, of every path a `changed` contract names."""
        paths = watched_paths(task.contracts)
        if not paths:
            return {}
        context = ContractContext(self._toolbox, AttemptRecord(()))
        return {p: context.sha256_now(p) for p in paths}

    def _judge_claim(
        self,
        task: _TaskRun,
        attempt: int,
        claim: AttemptOutcome,
        sealed: list[dict[str, Any]],
        watched: dict[str, str | None],
    ) -> tuple[str, str] | None:
        """Evidence, then contracts, judged against this attempt's sealed record: None when
        every hard one holds, else (reason, feedback for the worker). Each verdict is sealed
        and written to telemetry; a soft failure becomes a warning in the report."""
        if not task.contracts and not task.evidence:
            return None
        task_id, title = task.heading.task_id, task.heading.title
        record = AttemptRecord(tuple(sealed), self._outputs)
        hard: list[str] = []
        rows: list[dict[str, Any]] = []
        if task.evidence:
            verdicts = judge_evidence(task.evidence, claim.evidence, record)
            self.seal.evidence(task_id, attempt, [v.to_json() for v in verdicts])
            hard.extend(v.reason for v in verdicts if not v.ok)
            rows.extend({"kind": "evidence", "spec": v.field.spec, "soft": False, "ok": v.ok,
                         "code": v.code, "message": v.message} for v in verdicts)  # fmt: skip
        if task.contracts:
            context = ContractContext(self._toolbox, record, watched)
            judged = judge_contracts(task.contracts, context)
            self.seal.contracts(task_id, attempt, [v.to_json() for v in judged])
            for v in judged:
                rows.append({"kind": "contract", "spec": v.contract.text, "soft": v.contract.soft,
                             "ok": v.ok, "code": v.code, "message": v.message,
                             "detail": dict(v.detail)})  # fmt: skip
                if v.hard_failure:
                    hard.append(v.reason)
                elif not v.ok:
                    warning = Diagnostic("warning", title, f"soft contract failed: {v.reason}",
                                         v.contract.line, v.code or "")  # fmt: skip
                    with self._event_lock:
                        if warning not in self._soft:  # the same on every attempt: said once
                            self._soft.append(warning)
        if self.telemetry is not None:
            self.telemetry.record_contract_events(self.run_id, task_id, attempt, rows)
        if not hard:
            return None
        more = f" (and {len(hard) - 1} more)" if len(hard) > 1 else ""
        feedback = "your claim did not hold against the record of this attempt:\n" + "\n".join(
            f"- {h}" for h in hard
        )
        return hard[0] + more, feedback

    def _unchecked(self, claim: AttemptOutcome) -> tuple[str, bool, str | None]:
        """The verdict on a task without a check: the worker's word, unless checks are required."""
        if self.options.require_checks:
            return "FAILED", False, "no acceptance check (--require-checks)"
        if claim.claims_done:
            return "DONE", False, None
        if claim.no_claim is not None:
            return "FAILED", False, claim.no_claim
        return (
            "FAILED",
            False,
            f"the worker did not claim DONE: {excerpt(claim.claim) or '(nothing)'}",
        )

    def _rollup_job(self, node: Node) -> _Outcome:
        """A parent whose children are all DONE: each child's check once more (a later
        sibling or an accomplice may have undone an earlier one's work), then its own check,
        then its `:dock:`."""
        task = self._task(node)
        started = time.monotonic()
        if task.red is not None:
            return _Outcome(node, "FAILED", 0, True, task.red, "", 0)
        demoted: list[tuple[Node, str, str]] = []
        for child in node.children:
            if child.kind == "group" or self._task(child).check is None:
                continue
            child_check = self._task(child).check
            assert child_check is not None
            again = self._check(child.task.task_id, 0, child_check, "rollup")
            if not again.passed:
                why = f"no longer passes: {again.code}: {again.reason}"
                demoted.append((child, why, again.output))
        if demoted:
            ms = int((time.monotonic() - started) * 1000)
            names = ", ".join(c.task.title for c, _, _ in demoted)
            reason = f"a child's work was undone before the roll-up: {names} no longer passes"
            return _Outcome(node, "PARTIAL", 1, True, reason, "", ms, demote=tuple(demoted))
        output, verified = "", None if task.check is None else True
        if task.check is not None:
            result = self._check(task.heading.task_id, 1, task.check)
            output = result.output
            if not result.passed:
                ms = int((time.monotonic() - started) * 1000)
                reason = (
                    "every child is DONE but the task's own check failed:"
                    f" {result.code}: {result.reason}"
                )
                return _Outcome(node, "PARTIAL", 1, True, reason, output, ms)
        dock_failure = self._dock(task.heading)
        ms = int((time.monotonic() - started) * 1000)
        if dock_failure is not None:
            return _Outcome(node, "FAILED", 1, verified, dock_failure, output, ms)
        return _Outcome(node, "DONE", 1, verified, None, output, ms)

    def _check(
        self, task_id: str, attempt: int, check: SealedCheck, phase: str | None = None
    ) -> CheckResult:
        gone = protect.changed(self.workdir, self._inputs, self._inputs_of.get(task_id, ()))
        if gone:
            why = f"protected input changed: {', '.join(gone)}"
            result = CheckResult("FAIL", "protected_input_changed", why, "", check.sha256,
                                 sha256_text(""), 0, None)  # fmt: skip
        else:
            result = run_check(
                check, self.workdir, shell=self.shell, timeout=self.options.check_timeout
            )
        self.seal.check(task_id, attempt, result, phase)
        if phase is not None and self.telemetry is not None:
            said = f"{result.code}: {result.reason}" if result.code else None
            with self._event_lock:  # written in one transaction when the phase ends
                self._check_events.append((task_id, phase, result.verdict, said))
        return result

    def _flush_check_events(self) -> None:
        with self._event_lock:
            events, self._check_events = self._check_events, []
        if events and self.telemetry is not None:
            self.telemetry.record_check_events(self.run_id, events)

    def _dock(self, heading: Heading) -> str | None:
        """None when the task has no `:dock:` or its artifact docked; else why not."""
        raw = self.spec.of(heading).dock
        if raw is None:
            return None
        try:
            component = self._toolbox.resolve(raw.strip())
        except GroundskeeperError as exc:
            return f"dock: {exc}"
        from groundskeeper.conformance.rules import dock  # wasmtime.component: only when docking

        with self._dock_lock:
            sealed = dict(self._record.docks)
        result = dock(component, self.control.components, sealed=sealed)
        if result.ok:
            with self._dock_lock:
                self._record.docks[component.name] = result.sha256
        messages = "; ".join(d.message for d in result.diagnostics if d.level == "error")
        self.seal.dock(heading.task_id, raw.strip(), result)
        if self.telemetry is not None:
            self.telemetry.record_dock(
                self.run_id, heading.task_id, raw.strip(), result.sha256, result.ok,
                result.diagnostics,
            )  # fmt: skip
        if result.ok:
            return None
        return f"conformance: `{raw.strip()}` did not dock: {messages or 'refused'}"

    # -- verdicts, writes, tampering (scheduler thread) -----------------------------------------

    def _task(self, node: Node) -> _TaskRun:
        return self.tasks[node.task]

    def _emit(self, event: RunEvent) -> None:
        if self.on_event is not None:
            with self._event_lock:
                self.on_event(event)

    def _settle(
        self,
        task: _TaskRun,
        state: str,
        attempts: int,
        verified: bool | None,
        reason: str | None,
        output: str,
        duration_ms: int,
        stop: str | None = None,
    ) -> None:
        """Take a verdict: into the headline now; the row and the step once it is on disk.

        After a sealing failure nothing is taken: the plan shows only verdicts whose steps
        were sealed (a verdict already on its way to disk may lose its `state` step)."""
        if self._halted is not None:
            task.attempts = attempts
            task.reason = (
                "no verdict: the run could not seal its steps and stopped (R004)"
                if self.seal.failure is not None
                else "no verdict: the run could not write the plan and stopped (R006)"
            )
            return
        before = task.state
        task.state, task.attempts, task.verified = state, attempts, verified
        task.reason, task.output, task.stop = reason, output, stop
        heading = task.heading
        shown = "WAITING" if task.waiting is not None else state  # at its gate: a person next
        self._emit(
            RunEvent("task-end", heading.task_id, heading.title, shown, attempts, verified, reason)
        )
        inserted = False
        if before != state:
            inserted = self._write_keyword(heading, before, state)
        telemetry, seal = self.telemetry, self.seal
        rows: list[int] = []

        def recorded() -> None:
            # pending until the plan holds it: a crash in between never leaves a row for a
            # verdict the plan lost (the next run's reconcile drops it), nor the reverse
            if telemetry is not None:
                rows.append(
                    telemetry.record_verdict(
                        run_id=self.run_id,
                        task_id=heading.task_id,
                        idx=task.idx,
                        title=heading.title,
                        state=state,
                        output=output,
                        attempt=attempts,
                        verified=verified,
                        reason=reason,
                        duration_ms=duration_ms,
                        committed=False,
                        stop=stop,
                    )
                )

        def written() -> None:
            if inserted:
                seal.plan_edit(1, TODO_LINE, f"`{state}` is a state org knows only from it")
            seal.state(heading.task_id, before, state, stop)  # a failure latches; the loop stops
            if telemetry is not None:
                telemetry.commit_verdicts(rows)

        # the writer thread does the I/O, so the next task starts meanwhile
        self._guard.submit("\n".join(self._lines), written, before=recorded)

    def _write_keyword(self, heading: Heading, before: str, state: str) -> bool:
        """The verdict into `_lines`: the keyword, then the parent's statistics cookies as
        org counts them. True when the #+TODO: line had to be inserted first (once a run)."""
        inserted = False
        lines = self._lines
        if not self._shift and needs_todo_line(self.plan, state):
            first = lines[0]
            bom = "\ufeff" if first.startswith("\ufeff") else ""
            crlf = "\r" if first.endswith("\r") else ""
            lines[0] = first[len(bom) :]
            lines.insert(0, bom + TODO_LINE + crlf)
            self._shift, inserted = 1, True
            self._emit(
                RunEvent("plan-edit", None, state=state, reason=(
                    f"inserted `{TODO_LINE}` as line 1: the plan had no #+TODO: line, and org"
                    f" reads `{state}` only with one (every later line moved down by one)"
                ))
            )  # fmt: skip
        number = heading.line - 1 + self._shift
        lines[number] = edit_keyword(lines[number], 1, before, state)
        parent = self._parents.get(heading)
        if parent is not None and has_statistics_cookie(parent):
            done = set(self.plan.done_states) | (set(VERDICT_STATES) if self._shift else set())
            total = finished = 0
            for child in parent.children:
                run = self.tasks.get(child)
                keyword = run.state if run is not None else child.keyword
                if keyword is not None:
                    total += 1
                    finished += keyword in done
            at = parent.line - 1 + self._shift
            lines[at] = statistics_cookies(lines[at], finished, total)
        return inserted

    def _blame(self, tamper: Tamper) -> None:
        """Taint the suspects of a tampering; safe from any thread.

        The sandbox and the tools cannot write the plan, so a change to it came from outside,
        and no worker's record shows it: every worker that has started and is not yet judged
        fails closed, and its reason says blame could not be placed."""
        with self._started_lock:
            for node in self._started:
                if node.kind == "leaf":
                    task = self._task(node)
                    task.tainted = tamper
                    tamper.task_ids.append(task.heading.task_id)

    def _tampered(self, tamper: Tamper, *, blamed: bool = False) -> None:
        if not blamed:
            self._blame(tamper)
        self.tampers.append(tamper)
        if self.telemetry is not None:
            self.telemetry.record_tamper(
                run_id=self.run_id,
                task_id=",".join(tamper.task_ids) or None,
                rejected_path=str(tamper.rejected_path or ""),
                sha256=tamper.sha256,
                detail=tamper.describe(),
            )
        rejected = tamper.rejected_path.name if tamper.rejected_path else None
        self.seal.tamper(list(tamper.task_ids), rejected, tamper.sha256)
        self._emit(RunEvent("tamper", None, reason=tamper.describe()))

    def _unsealed(self, *, started: bool) -> Diagnostic:
        outcome = "stopped; no verdict after that was written" if started else "did not start"
        message = f"the run could not be sealed, so it {outcome}: {self.seal.failure}"
        return Diagnostic("error", "ledger", message, None, "R004")

    def _reports(self) -> tuple[TaskReport, ...]:
        reports: list[TaskReport] = []
        for idx, heading in enumerate(self.plan.tasks()):
            keyword = heading.keyword or ""  # a task the run never took keeps its state
            task = self.tasks.get(heading) or _TaskRun(heading, idx, None, None, keyword, keyword)
            state = "WAITING" if task.waiting is not None else task.state  # headline unchanged
            reports.append(
                TaskReport(heading.task_id, heading.title, heading.line + self._shift, idx,
                           state, task.attempts, task.verified, task.reason, task.output,
                           task.stop)
            )  # fmt: skip
        return tuple(reports)


def _written_paths(sealed: list[dict[str, Any]]) -> set[str]:
    """The paths an attempt's sealed tool calls show it changed."""
    found: set[str] = set()
    for body in sealed:
        changed = body.get("changed")
        for path in changed if isinstance(changed, list) else ():
            if isinstance(path, str):
                found.add(path)
    return found


def _revise_feedback(answer: GateAnswer) -> str:
    return (
        "A person reviewed your work at the task's approval gate and asked for changes:"
        f"\n\n{answer.note}\n\nRevise the work, then finish as before."
    )


def _refusal(answer: GateAnswer, opened: Any, now: str) -> str | None:
    """Why an answer may not take effect (None: it may): it was refused already, answers
    another gate or other artifacts, the artifacts changed since, or it is not a decision."""
    if answer.refused is not None:
        return answer.refused
    if opened is None:
        return "no gate is open for this task"
    if answer.gate_id != opened.get("gate_id"):
        return f"stale: it answers gate {answer.gate_id}, but gate {opened.get('gate_id')} waits"
    if answer.artifacts_sha256 != opened.get("artifacts_sha256"):
        return "stale: it answers other artifacts than the gate showed"
    if answer.artifacts_sha256 != now:
        return "stale: the artifacts changed since the gate opened"
    if answer.decision not in DECISIONS:
        return f"not a decision: {answer.decision!r} (yes, no or revise)"
    if answer.decision == "revise" and not answer.note.strip():
        return "a revise answer needs a note for the worker"
    return None
