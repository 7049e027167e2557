"""The runner: one run of a plan, every task gated by its acceptance check.

It owns the run from lint to report: the walk's host (`plan.tree` orders the walk: ORDERED,
roll-ups, resume), parallelism, the run's phases in order (re-verification, red first, the walk,
the final sweep) and each leaf's attempt loop: the worker's attempt, its claim sealed, the
attempt judged by the `pipeline`, the verdict settled. It does not judge (`stages` do), write
verdicts (`verdicts`) or narrate (the CLI does, from the `RunEvent`s emitted here).
"""

from __future__ import annotations

import logging
import os
import queue
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundskeeper.acceptance.attempt_record import (
    OUTPUTS_DIR,
    AttemptRecord,
    OutputStore,
    Stamp,
    stamps_changed,
    workdir_stamps,
)
from groundskeeper.acceptance.check import Shell, sha256_text
from groundskeeper.acceptance.loops import (
    STOP_ATTEMPT_CAP,
    STOP_BREAKER,
    STOP_MAX_ATTEMPTS,
    AttemptBudget,
    Breaker,
)
from groundskeeper.acceptance.protect import is_plain
from groundskeeper.acceptance.toolbox import Toolbox
from groundskeeper.diagnostics import Diagnostic, has_errors
from groundskeeper.errors import GroundskeeperError, UsageError
from groundskeeper.models.model import Model, ModelCallError
from groundskeeper.path_patterns import normal_path
from groundskeeper.plan.contract_syntax import verifying, watched_paths
from groundskeeper.plan.edit import TODO_LINE
from groundskeeper.plan.keywords import file_flag
from groundskeeper.plan.org import Heading, Plan, PlanReadError, parse_plan
from groundskeeper.plan.properties import DEFAULT_MAX_ATTEMPTS
from groundskeeper.plan.spec import compile_plan
from groundskeeper.plan.tree import Node, TaskWalk, build_tree
from groundskeeper.record.backing import HasHistory, HasSealedRecord, Record, read_record
from groundskeeper.record.control import ControlDir, RunLock
from groundskeeper.record.ledger_format import canonical_json, sealable
from groundskeeper.record.telemetry import Telemetry
from groundskeeper.sandbox import allow_runs, interrupt_runs
from groundskeeper.sandbox import fence as fences
from groundskeeper.sandbox.quota import DiskQuota
from groundskeeper.supervisor.activity import Activity
from groundskeeper.supervisor.latches import (
    FailFastModel,
    judge_down,
    judge_preflight,
    judge_stops_run,
)
from groundskeeper.supervisor.phases import RunPhases
from groundskeeper.supervisor.pipeline import (
    AttemptContext,
    AttemptHistory,
    Pipeline,
    RunWrites,
    Verdict,
)
from groundskeeper.supervisor.plan_guard import PlanGuard, Tamper
from groundskeeper.supervisor.reports import (
    DEFAULT_MAX_PARALLEL,
    RunEvent,
    RunInterrupted,
    RunOptions,
    RunReport,
    TaskReport,
    cap_diagnostic,
    interrupted_diagnostic,
    judge_down_diagnostic,
    model_down_diagnostic,
    unsealed_diagnostic,
)
from groundskeeper.supervisor.run_books import RunBooks
from groundskeeper.supervisor.run_checks import RunChecks
from groundskeeper.supervisor.run_paths import SNAPSHOTS_DIR, TRIED, RunPaths, Snapshots
from groundskeeper.supervisor.sealing import (
    MemoryRecorder,
    RunSeal,
    SealingError,
    StepRecorder,
    excerpt,
)
from groundskeeper.supervisor.stages import (
    StageTools,
    again_stages,
    attempt_stages,
    verify_stages,
)
from groundskeeper.supervisor.suite_baselines import take_baselines
from groundskeeper.supervisor.tampering import Tampering
from groundskeeper.supervisor.task_run import (
    VERDICT_STATES,
    Outcome,
    TaskRun,
    preflight,
    task_runs,
)
from groundskeeper.supervisor.verdicts import VerdictWriter
from groundskeeper.supervisor.worker import (
    AttemptOutcome,
    ToolCallRecord,
    WorkerSession,
    WorkerTask,
    load_worker_prompt,
    render_worker_prompt,
)

if TYPE_CHECKING:
    from groundskeeper.acceptance.gates import GateAnswer
    from groundskeeper.supervisor.gating import ApprovalGates

# What only some runs need is imported when they need it: the judge's prompt (a judged task),
# the approval gates (a gated task), the first-start map (a `changed` contract), a suite's
# baselines (a `pytest` contract). A resume of plain checks imports none of them
# (tests/test_resume_speed.py holds it to that).

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

#: How many of the files a stopped call changed a run-start lists, when all of them would not
#: fit its line (the count is sealed whole)
UNRECORDED_INLINE_BYTES = 16 * 1024
UNRECORDED_INLINE_PATHS = 200


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(4)


def _nodes(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children:
        yield from _nodes(child)


#: The headline keywords only a run writes besides DONE: a verdict no person gives by hand.
RUN_VERDICTS = frozenset({"FAILED", "PARTIAL"})


class RecordLostError(UsageError):
    """A plan shows verdicts of earlier runs, and the ledger that holds them is gone."""


@dataclass(slots=True)
class _Attempts:
    """One leaf job's attempts so far, and the verdict they leave (its pool thread's own)."""

    started: float  # time.monotonic() as the job started
    breaker: Breaker  # the same normalized failure `--breaker` times in a row ends the loop
    history: AttemptHistory = field(default_factory=AttemptHistory)
    feedback: str | None = None  # for the next attempt
    attempt: int = 0
    state: str = "FAILED"
    verified: bool | None = None
    reason: str | None = "no attempt was made"
    output: str = ""
    stop: str | None = None
    found: list[Tamper] = field(default_factory=list)  # tampers this job found and blamed

    def ms(self) -> int:
        return int((time.monotonic() - self.started) * 1000)


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
        self.options = options or RunOptions()
        self.run_id = run_id or new_run_id()
        self.seal = RunSeal(
            recorder if recorder is not None else MemoryRecorder(), self.run_id, group_commit=True
        )
        self.telemetry = telemetry
        self.shell = shell
        self.on_event = on_event
        self.tasks: dict[Heading, TaskRun] = {}
        self._books = RunBooks(self.seal, telemetry, self.run_id)
        self._checks = RunChecks(self.workdir, shell, self.options.check_timeout, self._books)
        self._event_lock = threading.Lock()
        self._tampering = Tampering(self.tasks, self._books, self._emit)
        self.tampers = self._tampering.tampers
        # a decision point: the steps behind every verdict are durable before the plan shows it
        self._guard = PlanGuard(
            self.plan_path, plan.text, self.control.rejected, hold=self.seal.commit
        )
        self._verdicts = VerdictWriter(plan, self.tasks, self._guard, self._books, self._emit)
        # custom done states (after `|`, not a verdict of ours): finished, never run again
        self._finished_states = frozenset(plan.done_states) - set(VERDICT_STATES)
        self._queue: queue.SimpleQueue[Outcome] = queue.SimpleQueue()
        self._inflight: dict[Node, None] = {}  # submitted, not yet judged
        self._record = Record()  # what the ledger held at run start (`_run_fenced`)
        self._nodes: dict[Heading, Node] = {}
        self._outputs = OutputStore(self.control.path / OUTPUTS_DIR)
        self._snapshots = Snapshots(self.control.path / SNAPSHOTS_DIR)
        self._budget = AttemptBudget(self.options.max_total_attempts)
        self._answers = dict(gate_answers or {})  # task id → a person's answer to its gate
        self._ran = False  # whether the walk started any task (a worker or a roll-up)
        self._interrupted: str | None = None  # the signal that asked the run to stop
        self._in_flight: tuple[str, ...] = ()  # the tasks running when it came

    # -- public ---------------------------------------------------------------------------------

    def run(self, lint: Callable[[Plan], list[Diagnostic]] | None = None) -> RunReport:
        """Lint (rung 1, `groundskeeper.plan.lint.validate` unless given), then run the plan.

        One run at a time per plan: PlanInUse if another holds it. Workers and checks run
        behind the plan's fence (its control directory absent, its file read-only)."""
        if self.run_lock is not None:
            return self._run(lint)
        with RunLock(self.control):
            return self._run(lint)

    def interrupt(self, why: str) -> None:
        """Stop the run promptly (`why`: the signal, e.g. "SIGINT"); safe from a signal
        handler or another thread. The sandbox's commands end at once, nothing new starts,
        the tasks in flight keep their state (resumable, never judged on a cut-short check),
        and `run` returns a report whose run-end is sealed as interrupted."""
        if self._interrupted is None:
            self._in_flight = tuple(self._task(n).heading.task_id for n in list(self._inflight))
            self._interrupted = why
            interrupt_runs()

    def _run(self, lint: Callable[[Plan], list[Diagnostic]] | None) -> RunReport:
        self.control.ensure()
        fence = fences.for_plan(self.plan_path, self.control.root)
        try:
            self._paths = RunPaths(self.workdir, self.spec)
        except ValueError as exc:
            raise PlanReadError(
                f"{self.plan_path}: :protect:/:hide: {exc}; narrow the patterns"
            ) from exc
        self._checks.paths = self._paths
        git = self.workdir / ".git"
        if self._paths.holds_out and git.is_dir():  # every version of a hidden file committed
            fence = fence.union(fences.hiding(git))  # is in its object store (adversary-21 F9)
        # protection binds each task's own worker (`_attempt`); the process keeps the plan's
        with fences.enforced(fence):
            return self._run_fenced(lint)

    def _run_fenced(self, lint: Callable[[Plan], list[Diagnostic]] | None) -> RunReport:
        if lint is None:
            from groundskeeper.plan.lint import validate

            lint = validate
        diagnostics = [
            *lint(self.plan),
            *preflight(self.plan),
            *judge_preflight(self.spec, self.judge_model, self.options.judge_profile),
            *self._paths.announcement(),
        ]
        if has_errors(diagnostics):
            return RunReport(self.run_id, False, False, tuple(diagnostics), self._reports())
        self.tasks.update(task_runs(self.spec, self.options.judge_profile))
        recorder = self.seal.recorder
        if isinstance(recorder, HasSealedRecord):
            self._record = recorder.sealed_record()
        else:
            self._record = read_record(
                recorder.history() if isinstance(recorder, HasHistory) else ()
            )
        self._refuse_a_lost_record()
        self._paths.made_earlier(self._record.made)
        unrecorded: dict[str, Any] | None = None
        if not self.options.accept_changes:
            self._paths.earlier_runs(self._record.wrote, self._record.first, self._record.made)
            self._paths.earlier_examples(self._record.examples)
            unrecorded = self._unrecorded_calls()
        # a rule an earlier run of this plan was held to holds for this one (and is sealed so)
        rules, options = self._record.rules, self.options
        self.options = replace(
            options,
            require_red=options.require_red or "require_red" in rules,
            require_checks=options.require_checks or "require_checks" in rules,
        )
        try:
            self._seal_start(unrecorded)
        except SealingError:
            diagnostics.append(unsealed_diagnostic(self.seal.failure, started=False))
            return RunReport(self.run_id, False, False, tuple(diagnostics), self._reports())
        self._record.runs.append(self.run_id)
        self._reconcile_telemetry()
        self._prepare()
        self._guard.start()
        self._executor = ThreadPoolExecutor(max_workers=max(1, self.options.max_parallel))
        try:
            self._phases.back_every_done()
            # a DONE earned in another workdir is judged again in this one, task run or not
            elsewhere = self._phases.earned_elsewhere(str(self.workdir))
            self._phases.held_to_flags(self._require_red)
            take_baselines(self.tasks.values(), self.workdir, self.control.path,
                           self._record.started, self.options.accept_changes)  # fmt: skip
            self._phases.red_first(diagnostics, self._require_red)
            self._walk.begin()
            self._loop()
            # a model that went away leaves the earned DONEs to check; a run that started no
            # task changed nothing a DONE stands on — unless one was earned elsewhere
            if self._halted is None and self._interrupted is None and (self._ran or elsewhere):
                self._phases.final_sweep(self._nodes)
        finally:
            if self._interrupted is not None:
                allow_runs()  # this process may go on to run something else
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._phases.close()
            tampers = self._guard.close()
            self._books.flush_check_events()  # the roll-ups'
        for tamper in tampers:
            self._tampering.record(tamper)
        return self._report(diagnostics)

    def _refuse_a_lost_record(self) -> None:
        """A plan whose headlines show verdicts only a run gives (FAILED, PARTIAL: not DONE,
        which is re-verified, nor a done keyword of the plan's own such as CANCELLED, which
        a person sets) over a record with no run at all lost its
        ledger: deleted with the control directory, moved aside, or the plan renamed. Those
        verdicts, and the rules earlier runs were held to (`--require-red`), are gone with it;
        starting fresh would re-run a refused task under weaker rules. Refused (exit 2) unless
        `--forget-record` says to start over, which the run-start seals."""
        if self._record.runs or self.options.forget_record:
            return
        shown = [t.heading for t in self.tasks.values() if t.start_state in RUN_VERDICTS]
        if not shown:
            return
        named = ", ".join(f"{h.keyword} `{h.title}`" for h in shown[:3])
        more = f" and {len(shown) - 3} more" if len(shown) > 3 else ""
        raise RecordLostError(
            f"{self.plan_path}: its headlines show verdicts of earlier runs ({named}{more}),"
            f" but it has no ledger ({self.control.ledger} holds no run): the record behind"
            " them, and the rules those runs were held to (--require-red, --require-checks),"
            " is missing — the control directory deleted, the ledger moved aside, or the plan"
            f" renamed. Put the record back (the control directory {self.control.path}, or"
            " the plan's old name), or start the plan over knowingly with `--forget-record`"
            " (sealed in the new ledger's first run-start)"
        )

    @property
    def _require_red(self) -> bool:
        return self.options.require_red or file_flag(self.plan.text, "REQUIRE_RED")

    def _unrecorded_calls(self) -> dict[str, Any] | None:
        """What the latest run's workers wrote in calls no line seals (adversary-13 F3, F10):
        when it stopped (SIGKILL, SIGINT, SIGTERM) with tasks in flight, every file the
        workdir holds that its start's snapshot and its sealed calls do not explain is held
        against those tasks, in this run and (sealed with its run-start) every later one —
        never taken as what the workdir held before the work."""
        record = self._record
        ours = {t.heading.task_id for t in self.tasks.values()}
        tasks = [t for t in record.in_flight if t in ours]
        sealed = record.snapshots.get(record.runs[-1]) if record.runs else None
        if not tasks or sealed is None:
            return None  # nothing in flight, or a ledger from before snapshots were sealed
        snapshot = self._snapshots.read(sealed)
        plan = os.path.relpath(self.plan_path.resolve(), self.workdir.resolve())
        made, changed = self._paths.unaccounted(snapshot, record.last_wrote, [plan])
        if not made and not changed:
            return None
        self._paths.unrecorded(tasks, made, changed)
        listed = sorted({*made, *changed})
        log.warning(
            "the latest run stopped while task(s) %s worked: %d file(s) changed in no sealed"
            " call are held against them",
            ", ".join(tasks),
            len(listed),
        )
        whole = len(canonical_json(sealable(listed))) <= UNRECORDED_INLINE_BYTES
        shown = listed if whole else listed[:UNRECORDED_INLINE_PATHS]
        return {
            "task_ids": tasks,
            "changed": shown,
            "made": made if whole else [p for p in made if p in shown],
            # what each changed file held before the call, where the snapshot hashed it: a
            # later run frees the file once it holds those bytes again (`Record.first`)
            "before": self._paths.held_before(p for p in changed if p in set(shown)),
            "changed_count": len(listed),
            "snapshot_found": snapshot is not None,
        }

    def _seal_start(self, unrecorded: dict[str, Any] | None = None) -> None:
        snapshot = self._paths.snapshot()
        self.seal.run_start(
            plan=str(self.plan_path),
            plan_text=self.plan.text,
            checks=[(t.heading.task_id, t.check_sha256) for t in self.tasks.values()],
            model=self.model.name,
            workdir=str(self.workdir),
            max_parallel=self.options.max_parallel,
            require_checks=self.options.require_checks,
            require_red=self._require_red,
            protected=sorted(self._paths.start.items()),
            hidden=self._paths.hidden,
            automatic=sorted(self._paths.automatic),
            breaker=self.options.breaker,
            max_total_attempts=self.options.max_total_attempts,
            forget_record=self.options.forget_record,
            accept_changes=self.options.accept_changes,
            workdir_snapshot=self._snapshots.keep(snapshot) if snapshot is not None else None,
            unrecorded=unrecorded,
            doctest_examples=self._paths.doctest_examples,
        )

    def _reconcile_telemetry(self) -> None:
        if self.telemetry is not None:
            # a row a killed run left pending is kept only for a verdict the plan shows and,
            # for DONE, the record backs: an unbacked DONE is re-verified, with a row of its own
            self.telemetry.reconcile(
                {
                    t.heading.task_id: t.start_state
                    for t in self.tasks.values()
                    if t.start_state != "DONE"
                    or self._record.backs_done(
                        t.heading.task_id, t.check_sha256, t.spec.verdict_sha256
                    )
                }
            )

    def _prepare(self) -> None:
        """The walk, the worker's tools and prompt, the pipelines, the phases and the gates."""
        tree = build_tree(self.plan.roots)
        self._walk = TaskWalk(tree, self, self._finished_states)
        self._nodes = {n.heading: n for n in _nodes(tree) if n.heading is not None}
        # read once per run: every worker shares them (the toolbox keeps no state of its own)
        self._prompt = load_worker_prompt()
        judge_prompt = ""  # a judge's, read when the run has one
        if self.judge_model is not None:
            from groundskeeper.acceptance.judge import load_judge_prompt

            judge_prompt = load_judge_prompt()
        self._toolbox = Toolbox(
            self.workdir,
            self.plan_path,
            self.shell,
            self.options.sh_timeout,
            quota=DiskQuota(self.options.disk_quota),
        )
        skip = (self.plan_path, self.control.root)
        tools = StageTools(self._toolbox, self._outputs, self._checks, self.options.require_checks,
                           self.judge_model, judge_prompt, self.options.judge_profile, skip,
                           self.control.components, self._record,
                           holds_out=self._paths.holds_out)  # fmt: skip
        self._run_writes = RunWrites()
        self._activity = Activity()  # what acted on the workdir: a verdict since untouched
        self._pipeline = Pipeline(self._books, attempt_stages(tools))
        self._verify = Pipeline(self._books, verify_stages(tools))
        settle = self._settle_phase
        again = Pipeline(self._books, again_stages(tools))
        self._phases = RunPhases(self.tasks, self._record, self._checks, self._verify, settle,
                                 self.options, again, self._activity)  # fmt: skip
        for task in self.tasks.values():  # what earlier verdicts were given on, from the record
            task_id = task.heading.task_id
            for who, bound in (("judge", self._record.judged), ("gate", self._record.approved)):
                if task_id in bound:
                    task.bound[who] = bound[task_id]
        self._gates: ApprovalGates | None = None
        if any(t.gated for t in self.tasks.values()):
            from groundskeeper.supervisor.gating import ApprovalGates

            self._gates = ApprovalGates(self._record, self._answers, self._checks, self._verify,
                                        skip)  # fmt: skip

    def _report(self, diagnostics: list[Diagnostic]) -> RunReport:
        if self._budget.refused:  # the tasks the walk never started: the cap stopped them too
            for task in self.tasks.values():
                untouched = task.stop is None and task.reason is None and task.attempts == 0
                if (
                    untouched
                    and task.state == task.start_state
                    and task.state not in ("DONE", *self._finished_states)
                    and not task.heading.child_tasks
                ):
                    task.stop, task.reason = STOP_ATTEMPT_CAP, self._capped(0, None)
        diagnostics.extend(t.diagnostic() for t in self.tampers)
        diagnostics.extend(self._books.soft_warnings)
        lost = self.telemetry.displaced() if self.telemetry is not None else None
        if lost is not None:
            diagnostics.append(Diagnostic("error", "telemetry", lost, None, "R005"))
        if self._guard.failure is not None:
            self._unwritten()
        reports = self._reports()
        diagnostics.extend(self._paths.unjudged_intrusions({r.id: r.reason for r in reports}))
        ok = all(r.state == "DONE" for r in reports) and not self.tampers and lost is None
        if self._guard.failure is not None:
            ok = False
            message = (
                f"{self._guard.failure}; the run stopped, and no verdict after that reached the"
                " plan (the next run re-verifies whatever the plan shows)"
            )
            diagnostics.append(Diagnostic("error", "plan", message, None, "R006"))
        interrupted = None
        if self._interrupted is not None:
            ok = False
            interrupted = (self._interrupted, self._in_flight)
            diagnostics.append(interrupted_diagnostic(self._interrupted, self._in_flight))
        self.seal.run_end(ok, [(r.id, r.state) for r in reports], len(self.tampers), interrupted)
        if self.seal.failure is not None:
            ok = False
            diagnostics.append(unsealed_diagnostic(self.seal.failure, started=True))
        edits = (f"inserted line 1: {TODO_LINE}",) if self._verdicts.shift else ()
        down = self.model.failure
        if down is not None:
            ok = False
            diagnostics.append(model_down_diagnostic(down, reports, self._finished_states))
        judge_failure = judge_down(self.judge_model, self.options.judge_profile)
        if judge_failure is not None:
            ok = False
            diagnostics.append(judge_down_diagnostic(judge_failure, reports))
        diagnostics.extend(self._books.judge_warnings)
        capped = None
        if self._budget.refused:
            ok = False
            diagnostics.append(cap_diagnostic(self._budget, reports))
            capped = f"attempt-cap: {self._budget.taken} attempt(s) started"
        waiting = tuple(t.waiting for t in self.tasks.values() if t.waiting is not None)
        if self._verdicts.shift:  # name the lines of the plan as it now is, below the #+TODO:
            diagnostics = [
                d if d.line is None else replace(d, line=d.line + self._verdicts.shift)
                for d in diagnostics
            ]
        return RunReport(
            self.run_id, ok, True, tuple(diagnostics), reports, tuple(self.tampers), edits,
            self._books.usage, None if down is None else f"model unavailable: {down}",
            None if judge_failure is None else f"judge unavailable: {judge_failure}",
            capped,
            waiting,
            self._interrupted,
        )  # fmt: skip

    # -- the walk's host (scheduler thread) -----------------------------------------------------

    def start_state(self, node: Node) -> str:
        return self._task(node).start_state

    def has_own_check(self, node: Node) -> bool:
        """A parent's own job after its children: its children's checks once more, then its
        own check and its `:dock:` (every parent has one, so DONE is earned at roll-up)."""
        return True

    def submit(self, node: Node) -> None:
        self._ran = True
        self._inflight[node] = None
        job = self._leaf_job if node.kind == "leaf" else self._phases.roll_up
        self._executor.submit(self._guarded, job, node)

    def settle(self, node: Node, state: str, reason: str | None) -> None:
        self._verdicts.settle(self._task(node), state, 0, None, reason, "", 0)

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
        return (
            self._halted
            or self._interrupted
            or self.model.failure
            or judge_stops_run(self.judge_model, self.options.judge_profile)
        )

    def _guarded(self, job: Callable[[Node], Outcome], node: Node) -> None:
        """A job on a pool thread: sealed as started when it really starts, never unsealed."""
        task = self._task(node)
        started = time.monotonic()
        down = self.model.failure
        judge_failure = judge_stops_run(self.judge_model, self.options.judge_profile)
        if node.kind == "leaf" and (down is not None or judge_failure is not None):
            # queued before the model went away: not started at all (nothing sealed for it)
            which = "the model" if down is not None else "the judge's model"
            why = f"not started: {which} is unavailable ({down or judge_failure})"
            self._queue.put(Outcome(node, task.start_state, 0, None, why, "", 0))
            return
        if node.kind == "leaf" and task.red is None and self._budget.spent:
            self._budget.take()  # refused: latches, so the walk starts nothing more
            self._queue.put(Outcome(node, task.start_state, 0, None, self._capped(0, None), "", 0,
                                    stop=STOP_ATTEMPT_CAP))  # fmt: skip
            return
        try:
            invariants = [i.to_json() for i in task.invariants] if node.kind == "leaf" else None
            # its protected inputs as its work starts: what its checks compare against now
            inputs = self._paths.task_started(task.heading.task_id) if node.kind == "leaf" else None
            watched = self._first_start(task) if node.kind == "leaf" else None
            self.seal.task_start(
                task.heading.task_id, node.kind, task.check_sha256, invariants=invariants,
                protected=None if inputs is None else sorted(inputs.items()), watched=watched,
            )  # fmt: skip
            self._tampering.started(node)
            self._emit(RunEvent("task-start", task.heading.task_id, task.heading.title))
            outcome = job(node)
        except BaseException as exc:  # handed to the scheduler thread, which decides
            ms = int((time.monotonic() - started) * 1000)
            outcome = Outcome(node, "FAILED", 0, None, f"internal error: {exc}", "", ms, exc)
        self._queue.put(outcome)

    def _handle(self, outcome: Outcome) -> None:
        if outcome.error is not None and not isinstance(outcome.error, GroundskeeperError):
            raise outcome.error
        # a leaf job looked at the plan after each attempt; the writer looks before each write
        for tamper in outcome.tampers:
            self._tampering.record(tamper, blamed=True)
        self._inflight.pop(outcome.node, None)
        self._tampering.judged(outcome.node)
        for demoted in outcome.demote:  # (none once interrupted)
            child = self._task(demoted.node)
            child.waiting = demoted.gate
            self._verdicts.settle(child, demoted.state, child.attempts, True, demoted.reason,
                                  demoted.output, 0)  # fmt: skip
            demoted.node.outcome = demoted.state
        task = self._task(outcome.node)
        if self._interrupted is not None and outcome.state != "DONE":
            # stopped in flight: no verdict on a cut-short attempt or check, nothing demoted
            why = f"interrupted by {self._interrupted}: stopped in flight, left as it was"
            outcome = replace(outcome, state=task.start_state, verified=None, reason=why,
                              demote=(), stop=None, gate=None)  # fmt: skip
        task.waiting = outcome.gate if task.tainted is None else None
        state, reason, verified = outcome.state, outcome.reason, outcome.verified
        if task.tainted is not None:
            state, verified = "FAILED", None
            reason = (
                f"tampering: {task.tainted.describe()}; workers cannot write the plan, so the"
                " change came from outside the sandbox and blame cannot be placed: every task"
                " running then fails closed"
            )
        self._verdicts.settle(
            task, state, outcome.attempts, verified, reason, outcome.output, outcome.duration_ms,
            stop=outcome.stop if task.tainted is None else None,
        )  # fmt: skip
        self._walk.finished(outcome.node, task.state)

    # -- a leaf's attempts (pool threads) -------------------------------------------------------

    def _leaf_job(self, node: Node) -> Outcome:
        """The worker's attempts until one is DONE, fails for good, waits at a gate or the
        task's `:max-attempts:` (or the run's cap, or the breaker) ends the loop."""
        task = self._task(node)
        loop = _Attempts(time.monotonic(), Breaker(self.options.breaker))
        if task.red is not None:
            return Outcome(node, "FAILED", 0, True, task.red, "", 0)
        session = self._session(task)
        if task.gated:
            # a revised task stays bound to what its open gate showed, and to what it adds
            shown = (self._record.gates.get(task.heading.task_id) or {}).get("files")
            loop.history.written.update(
                str(f["path"]) for f in shown or () if isinstance(f, dict) and f.get("path")
            )
            assert self._gates is not None  # made for a plan with a gated task (`_prepare`)
            settled, loop.feedback = self._gates.first(node, task, loop.started)
            if settled is not None:
                return settled
        limit = task.max_attempts
        while loop.attempt < limit and self._interrupted is None:
            if not self._budget.take():
                # the run's cap, not this task's failure: it keeps its state, resumable
                last = loop.reason if loop.attempt else None
                return Outcome(node, task.start_state, loop.attempt, None,
                               self._capped(loop.attempt, last), loop.output, loop.ms(), None,
                               tuple(loop.found), stop=STOP_ATTEMPT_CAP)  # fmt: skip
            loop.attempt += 1
            ended = self._attempt(node, task, session, loop)
            if isinstance(ended, Outcome):
                return ended
            if ended:
                break
        else:  # the loop ran out: every attempt `:max-attempts:` allows was used, and failed
            loop.stop = STOP_MAX_ATTEMPTS if loop.state != "DONE" else None
        return Outcome(node, loop.state, loop.attempt, loop.verified, loop.reason, loop.output,
                       loop.ms(), None, tuple(loop.found), stop=loop.stop)  # fmt: skip

    def _session(self, task: TaskRun) -> WorkerSession:
        heading = task.heading
        about = WorkerTask(
            heading.task_id,
            heading.title,
            heading.body,
            task.check,
            self.plan_path.name,
            tuple(c.text for c in task.contracts),
            tuple(f.spec for f in task.evidence),
            task.invariants,
            held_out=bool(self._paths.hidden),
            protected=tuple(
                p for p, ids in self._paths.automatic.items() if heading.task_id in ids
            ),
            checked_by=tuple(c.text for c in verifying(task.contracts)),
        )
        # the plain paths a `changed` contract names are looked at around each `sh` call (what
        # a stand-in shell changed; the sandbox itself says what each call wrote)
        watching = tuple(
            n for p in watched_paths(task.contracts)
            if is_plain(p) and (n := normal_path(p.lstrip("/"))) is not None
        )  # fmt: skip
        return WorkerSession(
            self.model,
            about,
            replace(
                self._toolbox,
                watch=watching,
                protection=partial(self._paths.protection, heading.task_id),
            ),
            max_turns=self.options.max_turns,
            system=render_worker_prompt(about, self._prompt),
        )

    def _attempt(
        self, node: Node, task: TaskRun, session: WorkerSession, loop: _Attempts
    ) -> Outcome | bool:
        """One attempt: the worker, the plan looked at, its claim sealed and judged. An
        outcome to return at once; else True when the loop ends, False for another attempt."""
        task_id, attempt = task.heading.task_id, loop.attempt
        sealed: list[dict[str, Any]] = []  # this attempt's tool calls, as sealed
        keep = bool(task.contracts or task.evidence)
        session.on_tool_call = partial(self._tool_call, task_id, attempt, sealed, keep)
        session.on_model_call = partial(self._books.model_called, task_id, attempt)
        session.before_acting = self._before_acting  # before tools run and feedback goes out
        session.activity = self._activity
        stamped = _stamped(task)
        stamps = self._stamps() if stamped else None
        unavailable = ""
        wrote: tuple[str, ...] | None = ()
        try:
            # the worker is bound by its task's protection and the run's hidden inputs, in
            # this thread only: the checks of other threads still see the hidden inputs
            with fences.binding(self._paths.worker_fence(task_id)):
                claim: AttemptOutcome | None = session.attempt(loop.feedback)
            record = AttemptRecord(tuple(sealed), self._outputs)
            loop.history.took(record)
            self._paths.worker_wrote(task_id, *record.changed())
            if stamped:  # what the attempt wrote by any tool, the shell included
                wrote = stamps_changed(stamps, self._stamps())
        except ModelCallError as exc:
            claim, unavailable = None, f"model unavailable: {exc}"
        # what this worker wrote, for the evidence of every other task of the run
        self._run_writes.took(task_id, AttemptRecord(tuple(sealed), self._outputs),
                              wrote if stamped and wrote is not None else None)  # fmt: skip
        # look at the plan before anything else can run: the culprit is among the started
        for tamper in self._guard.verify():
            self._tampering.blame(tamper)
            loop.found.append(tamper)
        if task.tainted is not None:
            return True
        if claim is None:
            # not the worker's failure: the attempt is unfinished and does not count; the
            # task keeps the state it started in, for the next resume (never DONE)
            return Outcome(node, task.start_state, attempt - 1, None, unavailable, loop.output,
                           loop.ms(), None, tuple(loop.found))  # fmt: skip
        self.seal.claim(task_id, attempt, claim)
        if claim.ends_task:  # refusal, context window exceeded: no attempt can help
            loop.state, loop.verified, loop.reason = "FAILED", None, claim.no_claim
            loop.output = claim.claim
            return True
        earlier_others = frozenset(
            p for p, tasks in self._record.wrote.items() if any(t != task_id for t in tasks)
        )
        context = AttemptContext(task, attempt, claim, tuple(sealed), task.first_start,
                                 loop.history, wrote=wrote,
                                 others=self._run_writes.by_others(task_id),
                                 earlier_others=earlier_others)  # fmt: skip
        mark = self._activity.mark()  # before its first stage (`supervisor.activity`)
        with self._activity.judging(task.dock is not None):
            verdict = self._pipeline.judge(context)
        task.decided_at = mark if verdict.kind == "DONE" else None
        if verdict.kind == "FAILED":
            task.lies.extend(caught_lying(attempt, verdict.reason, verdict.output, sealed))
        return self._take(node, task, claim, loop, verdict)

    def _take(
        self, node: Node, task: TaskRun, claim: AttemptOutcome, loop: _Attempts, verdict: Verdict
    ) -> Outcome | bool:
        """The pipeline's verdict on an attempt, as `_attempt` answers."""
        if verdict.kind == "WAITING":  # a person decides next; the headline stays
            return Outcome(node, task.start_state, loop.attempt, verdict.verified, verdict.reason,
                           verdict.output, loop.ms(), gate=verdict.gate)  # fmt: skip
        if verdict.kind == "UNAVAILABLE":  # not the worker's failure: the task keeps its state
            return Outcome(node, task.start_state, loop.attempt, None, verdict.reason,
                           verdict.output, loop.ms(), None, tuple(loop.found))  # fmt: skip
        loop.state = "DONE" if verdict.kind == "DONE" else "FAILED"
        loop.verified, loop.reason, loop.output = verdict.verified, verdict.reason, verdict.output
        if verdict.kind == "DONE" and loop.reason is None:
            loop.reason = task.green_first  # a pass that says nothing of the work: said so
        if verdict.kind == "DONE" or verdict.feedback is None:
            return True
        limit = task.max_attempts
        if loop.breaker.failed(verdict.failure) and loop.attempt < limit:
            loop.reason, loop.stop = self._broken(loop.reason, loop.attempt, limit), STOP_BREAKER
            return True
        if loop.attempt < limit:
            heading = task.heading
            self._emit(
                RunEvent("attempt-failed", heading.task_id, heading.title, "FAILED", loop.attempt,
                         True, f"claimed {excerpt(claim.claim)!r}, but {loop.reason}")
            )  # fmt: skip
        loop.feedback = verdict.feedback
        return False

    def _before_acting(self) -> None:
        """A decision point in an attempt: stop there if interrupted, else seal."""
        if self._interrupted is not None:
            raise RunInterrupted(f"interrupted by {self._interrupted}")
        self.seal.commit()

    def _settle_phase(self, task: TaskRun, state: str, *args: Any, **kwargs: Any) -> None:
        """A phase's verdict, unless an interrupt cut its check short (only a pass stands)."""
        if self._interrupted is None or state == "DONE":
            self._verdicts.settle(task, state, *args, **kwargs)

    def _broken(self, reason: str | None, attempt: int, limit: int) -> str:
        """The reason a breaker gives: it names itself first (its code), then the failure."""
        n = self.options.breaker
        return (
            f"breaker: the same failure {n} times in a row (volatile parts such as timings,"
            f" temp names and pids aside), so attempt {attempt + 1} of {limit} was not"
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
        # a long list of what an `sh` call wrote is kept for every task (a gate reads it)
        listed = call.facts.get("wrote_sha256")
        kept = call.texts if keep else ()
        if not keep and listed is not None:
            kept = tuple(t for t in call.texts if sha256_text(t) == listed)
        for text in kept:
            try:
                self._outputs.put(text)
            except OSError as exc:  # the record then lacks it: evidence quoting it fails
                log.warning("could not keep a tool call's output: %s", exc)
        sealed.append(self.seal.tool_call(task_id, attempt, _with_made(call, self._paths)))
        if call.tool == "write_file" and not call.is_error:
            for path in call.facts.get("changed") or ():
                if isinstance(path, str):
                    self._paths.replaced(task_id, path)

    def _stamps(self) -> dict[str, Stamp] | None:
        return workdir_stamps(self.workdir, (self.plan_path, self.control.root))

    def _first_start(self, task: TaskRun) -> dict[str, Any] | None:
        """What the files a leaf's `changed` contracts name held when it first started: read
        back from the record, the rest hashed now; kept on the task, and sealed as it starts."""
        patterns = watched_paths(task.contracts)
        if not patterns:
            return None
        sealed = self._record.watched.get(task.heading.task_id)
        from groundskeeper.supervisor.first_start import first_start, sealed_form

        task.first_start = first_start(self._toolbox, patterns, sealed, self._outputs)
        return sealed_form(task.first_start, self._outputs)

    # -- helpers of every thread ----------------------------------------------------------------

    def _task(self, node: Node) -> TaskRun:
        return self.tasks[node.task]

    def _emit(self, event: RunEvent) -> None:
        if self.on_event is not None:
            with self._event_lock:
                self.on_event(event)

    def _unwritten(self) -> None:
        """After a failed plan write: a verdict the plan does not hold is no verdict. Each
        task takes back the state its headline shows (no `state` step was sealed for the
        rest: it follows the write), so the table and the sealed run-end say what the plan
        and the ledger do."""
        try:
            shown = {h.task_id: h.keyword or "" for h in parse_plan(self._guard.written()).tasks()}
        except GroundskeeperError:  # never: the guard wrote only plans the run made
            return
        for task in self.tasks.values():
            on_disk = shown.get(task.heading.task_id)
            if on_disk is None or on_disk == task.state or task.waiting is not None:
                continue
            task.state, task.verified, task.stop = on_disk, None, None
            task.reason = "no verdict: the run could not write the plan and stopped (R006)"

    def _reports(self) -> tuple[TaskReport, ...]:
        reports: list[TaskReport] = []
        for idx, heading in enumerate(self.plan.tasks()):
            keyword = heading.keyword or ""  # a task the run never took keeps its state
            task = self.tasks.get(heading) or TaskRun(
                heading, idx, None, None, keyword, keyword, self.spec.of(heading)
            )
            state = "WAITING" if task.waiting is not None else task.state  # headline unchanged
            reports.append(
                TaskReport(heading.task_id, heading.title, heading.line + self._verdicts.shift,
                           idx, state, task.attempts, task.verified, task.reason, task.output,
                           task.stop, tuple(task.lies) if state != "DONE" else ())
            )  # fmt: skip
        return tuple(reports)


def _with_made(call: ToolCallRecord, paths: RunPaths) -> ToolCallRecord:
    """The call with `made`: which of the paths it changed were not in the workdir when the
    run started (`Record.made` reads a file's maker from it; an earlier run's write to a file
    there before the work is a change, which later runs still hold against it)."""
    key = "wrote" if call.tool == "sh" and "wrote" in call.facts else "changed"
    listed = call.facts.get(key)
    if not isinstance(listed, list) or not listed:
        return call
    made = [p for p in listed if isinstance(p, str) and not paths.there_before(p)]
    return replace(call, facts={**call.facts, "made": made})


def _stamped(task: TaskRun) -> bool:
    """Whether a task's stages must know every file an attempt wrote by any tool: one that
    quotes output as evidence (a quote found in what the worker wrote is not evidence). The
    stamps see a sibling's writes during the attempt too, which only ever refuses more."""
    return any(f.pattern for f in task.evidence)


_FORGED_SENTINEL = re.compile(r"__WB_CHECK_OK_[0-9a-fA-F]+__")


def caught_lying(
    attempt: int, reason: str | None, output: str, sealed: list[dict[str, Any]]
) -> list[str]:
    """What a failed attempt was caught doing beyond failing: false evidence, a forged
    sentinel in what its check printed (the real one never reaches the output), a change to
    a protected input the sandbox refused (by any tool), a tool call a fence refused (the
    plan, the control directory, a protected input, outside the workdir). Each as
    `attempt N: …`."""
    found: list[str] = []
    if reason is not None and reason.startswith("false evidence"):
        found.append(f"attempt {attempt}: {reason}")
    if reason is not None and TRIED in reason:  # a protected input, by any tool
        found.append(f"attempt {attempt}: {reason.removeprefix('protected_input_changed: ')}")
    forged = _FORGED_SENTINEL.search(output)
    if forged is not None:
        found.append(
            f"attempt {attempt}: forged sentinel: the check printed `{forged.group()[:24]}…`,"
            " a success marker the sandbox never printed"
        )
    tried = reason is not None and TRIED in reason
    for body in sealed:
        refused = body.get("refused")
        if refused and body.get("status") != "refused" and not tried:
            # a change the fence refused inside a call that otherwise ran (`sh`)
            listed = ", ".join(f"`{excerpt(str(p))}`" for p in refused[:3])
            more = f" and {len(refused) - 3} more" if len(refused) > 3 else ""
            found.append(f"attempt {attempt}: a {body.get('tool')} that tried to change"
                         f" {listed}{more}, which the fence refused")  # fmt: skip
        if body.get("status") == "refused":
            target = body.get("path") or body.get("command") or ""
            shown = f" `{excerpt(str(target))}`" if target else ""
            found.append(f"attempt {attempt}: a {body.get('tool')}{shown} the fence refused")
    return found
