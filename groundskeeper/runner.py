"""The runner: executes a plan's task tree with workers, gated by acceptance checks.

It owns scheduling (ORDERED siblings in sequence, others in parallel), attempts and feedback,
roll-up of parents, sealing checks at run start, writing verdicts into the plan (guarded
against tampering), and calling the step recorder and telemetry. It never prints; the CLI
narrates the `RunEvent`s it emits.
"""

from __future__ import annotations

import hashlib
import logging
import os
import platform
import queue
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

from groundskeeper import __version__
from groundskeeper.acceptance import (
    DEFAULT_CHECK_TIMEOUT,
    CheckResult,
    SealedCheck,
    Shell,
    run_check,
    sha256_text,
)
from groundskeeper.diagnostics import Diagnostic, has_errors
from groundskeeper.errors import GroundskeeperError
from groundskeeper.models import Model
from groundskeeper.plan import Heading, Plan, PlanReadError, write_atomically
from groundskeeper.plan import replace_keyword as edit_keyword
from groundskeeper.telemetry import Telemetry
from groundskeeper.worker import (
    DEFAULT_MAX_TURNS,
    DEFAULT_SH_TIMEOUT,
    Toolbox,
    ToolCallRecord,
    WorkerSession,
    WorkerTask,
)

log = logging.getLogger(__name__)

DEFAULT_MAX_ATTEMPTS = 2
DEFAULT_MAX_PARALLEL = 4
EXCERPT = 200
VERDICT_STATES = ("DONE", "FAILED", "PARTIAL")


class StepRecorder(Protocol):
    """Where the runner seals its steps (the ledger); bodies are JSON-native, no floats."""

    def record(self, step: str, body: Mapping[str, Any]) -> object: ...


class NullRecorder:
    def record(self, step: str, body: Mapping[str, Any]) -> None:
        return None


@dataclass
class MemoryRecorder:
    """Keeps steps in a list: the fake ledger for tests and dry runs."""

    steps: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, step: str, body: Mapping[str, Any]) -> None:
        with self._lock:
            self.steps.append((step, dict(body)))

    def of(self, step: str) -> list[dict[str, Any]]:
        with self._lock:
            return [body for name, body in self.steps if name == step]


class _LockedRecorder:
    """Serialises calls into a recorder that may not be thread-safe."""

    def __init__(self, inner: StepRecorder) -> None:
        self._inner = inner
        self._lock = threading.Lock()

    def record(self, step: str, body: Mapping[str, Any]) -> None:
        with self._lock:
            self._inner.record(step, body)


@dataclass(frozen=True, slots=True)
class RunOptions:
    max_parallel: int = DEFAULT_MAX_PARALLEL
    require_checks: bool = False
    max_turns: int = DEFAULT_MAX_TURNS
    check_timeout: float = DEFAULT_CHECK_TIMEOUT
    sh_timeout: float = DEFAULT_SH_TIMEOUT


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

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "line": self.line,
            "state": self.state,
            "attempts": self.attempts,
            "verified": self.verified,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class RunReport:
    run_id: str
    ok: bool
    started: bool
    diagnostics: tuple[Diagnostic, ...]
    tasks: tuple[TaskReport, ...]
    tampers: tuple[Tamper, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "ok": self.ok,
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "tasks": [t.to_json() for t in self.tasks],
        }


EventKind = Literal["task-start", "attempt-failed", "task-end", "tamper"]


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


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(4)


def excerpt(text: str) -> str:
    return text if len(text) <= EXCERPT else text[:EXCERPT] + "…"


def preflight(plan: Plan) -> list[Diagnostic]:
    """What the runner itself needs of a plan beyond rung 1: verdict states, valid numbers."""
    found: list[Diagnostic] = []
    missing = [s for s in VERDICT_STATES if s not in plan.done_states]
    if missing and plan.tasks():
        found.append(
            Diagnostic(
                "error",
                "outline",
                f"the #+TODO line has no {', '.join(missing)} after `|`; the runner writes"
                " DONE, FAILED and PARTIAL verdicts (e.g. `#+TODO: TODO NEXT | DONE FAILED"
                " PARTIAL`)",
                None,
                "R001",
            )
        )
    for task in plan.tasks():
        raw = task.get_property("max-attempts")
        if raw is not None and not (raw.strip().isdigit() and int(raw) >= 1):
            found.append(
                Diagnostic(
                    "error",
                    task.title,
                    f":max-attempts: must be a whole number ≥ 1, not `{raw}`",
                    task.line,
                    "R002",
                )
            )
    return found


def max_attempts(task: Heading) -> int:
    raw = task.get_property("max-attempts")
    return int(raw) if raw is not None and raw.strip().isdigit() else DEFAULT_MAX_ATTEMPTS


# --- the tree ----------------------------------------------------------------------------------


@dataclass(eq=False)
class _Node:
    heading: Heading | None  # None for the plan itself
    kind: Literal["leaf", "composite", "group"]
    parent: _Node | None
    ordered: bool
    children: list[_Node] = field(default_factory=list)
    next_child: int = 0
    pending: int = 0
    outcome: str | None = None  # DONE, FAILED, PARTIAL (groups: DONE or PARTIAL)
    ran: bool = False  # this node or a descendant ran something in this run


def _build(headings: tuple[Heading, ...], parent: _Node) -> None:
    for heading in headings:
        if heading.is_task:
            kind: Literal["leaf", "composite", "group"] = (
                "composite" if heading.child_tasks else "leaf"
            )
        elif heading.child_tasks:
            kind = "group"
        else:
            continue
        node = _Node(heading, kind, parent, heading.ordered)
        parent.children.append(node)
        if kind != "leaf":
            _build(heading.children, node)


@dataclass(slots=True)
class _TaskRun:
    heading: Heading
    idx: int
    check: SealedCheck | None
    start_state: str
    state: str
    attempts: int = 0
    verified: bool | None = None
    reason: str | None = None
    output: str = ""
    tainted: Tamper | None = None


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What a job reports back to the scheduler thread."""

    node: _Node
    state: str
    attempts: int
    verified: bool | None
    reason: str | None
    output: str
    duration_ms: int
    error: BaseException | None = None
    tampers: tuple[Tamper, ...] = ()  # found (and blamed) by the job itself


class Runner:
    """One run of one plan. Create, then `run()` once."""

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
    ) -> None:
        if plan.path is None:
            raise PlanReadError("the runner needs a plan read from a file")
        self.plan = plan
        self.plan_path = plan.path
        self.workdir = (workdir or plan.path.parent).resolve()
        self.model = model
        self.options = options or RunOptions()
        self.recorder = _LockedRecorder(recorder or NullRecorder())
        self.telemetry = telemetry
        self.shell = shell
        self.on_event = on_event
        self.run_id = run_id or new_run_id()
        self.tasks: dict[Heading, _TaskRun] = {}
        self.tampers: list[Tamper] = []
        self._text = plan.text
        self._queue: queue.SimpleQueue[_Outcome] = queue.SimpleQueue()
        self._actions: deque[Callable[[], None]] = deque()
        self._inflight: dict[_Node, None] = {}  # submitted, not yet judged
        self._started: set[_Node] = set()  # picked up by a pool thread
        self._started_lock = threading.Lock()
        self._event_lock = threading.Lock()
        self._guard = PlanGuard(self.plan_path, plan.text)

    # -- public ---------------------------------------------------------------------------------

    def run(self, lint: Callable[[Plan], list[Diagnostic]] | None = None) -> RunReport:
        """Lint (rung 1, `groundskeeper.lint.validate` unless given), then run the plan."""
        if lint is None:
            from groundskeeper.lint import validate

            lint = validate
        diagnostics = [*lint(self.plan), *preflight(self.plan)]
        if has_errors(diagnostics):
            return RunReport(self.run_id, False, False, tuple(diagnostics), self._reports())
        for idx, heading in enumerate(self.plan.tasks()):
            check = SealedCheck.seal(heading.check) if heading.check else None
            keyword = heading.keyword or ""
            self.tasks[heading] = _TaskRun(heading, idx, check, keyword, keyword)
        if self.telemetry is not None:
            self.telemetry.reconcile({t.task_id: t.keyword or "" for t in self.plan.tasks()})
        self._record_start()
        root = _Node(None, "group", None, False)
        _build(self.plan.roots, root)
        self._guard.start()
        self._executor = ThreadPoolExecutor(max_workers=max(1, self.options.max_parallel))
        try:
            self._actions.append(lambda: self._start(root))
            self._loop()
        finally:
            self._executor.shutdown(wait=True, cancel_futures=True)
            tampers = self._guard.close()
        for tamper in tampers:
            self._tampered(tamper)
        diagnostics.extend(t.diagnostic() for t in self.tampers)
        reports = self._reports()
        ok = all(r.state == "DONE" for r in reports) and not self.tampers
        self.recorder.record(
            "run-end",
            {
                "run_id": self.run_id,
                "ok": ok,
                "states": [{"task_id": r.id, "state": r.state} for r in reports],
                "tampers": len(self.tampers),
            },
        )
        return RunReport(self.run_id, ok, True, tuple(diagnostics), reports, tuple(self.tampers))

    # -- scheduling (all on the calling thread) -------------------------------------------------

    def _loop(self) -> None:
        while True:
            while self._actions:
                self._actions.popleft()()
            if not self._inflight:
                return
            self._handle(self._queue.get())
            while True:
                try:
                    outcome = self._queue.get_nowait()
                except queue.Empty:
                    break
                self._handle(outcome)

    def _start(self, node: _Node) -> None:
        if node.kind == "leaf":
            task = self._task(node)
            if task.start_state == "DONE":
                node.outcome = "DONE"
                self._actions.append(lambda: self._child_finished(node))
                return
            self._submit(node, self._leaf_job)
            return
        if not node.children:
            self._complete(node)
        elif node.ordered:
            node.next_child = 0
            child = node.children[0]
            self._actions.append(lambda: self._start(child))
        else:
            node.pending = len(node.children)
            for child in node.children:
                self._actions.append(lambda c=child: self._start(c))  # type: ignore[misc]

    def _submit(self, node: _Node, job: Callable[[_Node], _Outcome]) -> None:
        task = self._task(node)
        node.ran = True
        self._inflight[node] = None
        self._emit(RunEvent("task-start", task.heading.task_id, task.heading.title))
        self.recorder.record(
            "task-start",
            {
                "run_id": self.run_id,
                "task_id": task.heading.task_id,
                "kind": node.kind,
                "check_sha256": task.check.sha256 if task.check else None,
            },
        )
        self._executor.submit(self._guarded, job, node)

    def _guarded(self, job: Callable[[_Node], _Outcome], node: _Node) -> None:
        with self._started_lock:
            self._started.add(node)
        started = time.monotonic()
        try:
            outcome = job(node)
        except BaseException as exc:  # handed to the scheduler thread, which decides
            ms = int((time.monotonic() - started) * 1000)
            outcome = _Outcome(node, "FAILED", 0, None, f"internal error: {exc}", "", ms, exc)
        self._queue.put(outcome)

    def _handle(self, outcome: _Outcome) -> None:
        if outcome.error is not None and not isinstance(outcome.error, GroundskeeperError):
            raise outcome.error
        for tamper in outcome.tampers:
            self._tampered(tamper, blamed=True)
        for tamper in self._guard.verify():
            self._tampered(tamper)
        self._inflight.pop(outcome.node, None)
        with self._started_lock:
            self._started.discard(outcome.node)
        task = self._task(outcome.node)
        state, reason, verified = outcome.state, outcome.reason, outcome.verified
        if task.tainted is not None:
            state, verified = "FAILED", None
            reason = f"tampering: {task.tainted.describe()}"
        self._settle(
            task, state, outcome.attempts, verified, reason, outcome.output, outcome.duration_ms
        )
        outcome.node.outcome = task.state
        self._actions.append(lambda: self._child_finished(outcome.node))

    def _child_finished(self, child: _Node) -> None:
        parent = child.parent
        if parent is None:
            return
        parent.ran = parent.ran or child.ran
        if parent.ordered:
            if child.outcome != "DONE":
                self._complete(parent)  # later siblings are not started
                return
            parent.next_child += 1
            if parent.next_child < len(parent.children):
                self._start(parent.children[parent.next_child])
            else:
                self._complete(parent)
            return
        parent.pending -= 1
        if parent.pending == 0:
            self._complete(parent)

    def _complete(self, node: _Node) -> None:
        all_done = all(c.outcome == "DONE" for c in node.children)
        if node.kind == "group":
            node.outcome = "DONE" if all_done else "PARTIAL"
            self._child_finished(node)
            return
        task = self._task(node)
        if not all_done:
            unfinished = [c for c in node.children if c.outcome != "DONE"]
            names = ", ".join(c.heading.title for c in unfinished if c.heading is not None)
            self._settle(task, "PARTIAL", 0, None, f"not every child task is DONE: {names}", "", 0)
            node.outcome = "PARTIAL"
            self._child_finished(node)
        elif not node.ran and task.start_state == "DONE":
            node.outcome = "DONE"
            self._child_finished(node)
        elif task.check is not None:
            self._submit(node, self._rollup_job)
        else:
            self._settle(task, "DONE", 0, None, None, "", 0)
            node.outcome = "DONE"
            node.ran = True
            self._child_finished(node)

    # -- jobs (on pool threads) -----------------------------------------------------------------

    def _leaf_job(self, node: _Node) -> _Outcome:
        task = self._task(node)
        heading = task.heading
        started = time.monotonic()
        session = WorkerSession(
            self.model,
            WorkerTask(
                heading.task_id, heading.title, heading.body, task.check, self.plan_path.name
            ),
            Toolbox(self.workdir, self.plan_path, self.shell, self.options.sh_timeout),
            max_turns=self.options.max_turns,
        )
        limit = max_attempts(heading)
        feedback: str | None = None
        state: str = "FAILED"
        verified: bool | None = None
        reason: str | None = "no attempt was made"
        output = ""
        previous: tuple[str, str, int | None, str] | None = None
        attempt = 0
        found: list[Tamper] = []
        while attempt < limit:
            attempt += 1
            session.on_tool_call = self._tool_recorder(heading.task_id, attempt)
            claim = session.attempt(feedback)
            # look at the plan before anything else can run: the culprit is among the started
            for tamper in self._guard.verify():
                self._blame(tamper)
                found.append(tamper)
            if task.tainted is not None:
                break
            self.recorder.record(
                "claim",
                {
                    "run_id": self.run_id,
                    "task_id": heading.task_id,
                    "attempt": attempt,
                    "claims_done": claim.claims_done,
                    "stop": claim.stop,
                    "turns": claim.turns,
                    "claim_sha256": sha256_text(claim.claim),
                    "excerpt": excerpt(claim.claim),
                },
            )
            if task.check is None:
                if self.options.require_checks:
                    state, verified = "FAILED", False
                    reason = "no acceptance check (--require-checks)"
                elif claim.claims_done:
                    state, verified, reason = "DONE", False, None
                else:
                    state, verified = "FAILED", False
                    reason = f"the worker did not claim DONE: {excerpt(claim.claim) or '(nothing)'}"
                output = claim.claim
                break
            result = self._check(heading.task_id, attempt, task.check)
            output = result.output
            if result.passed:
                dock_failure = self._dock(heading)
                if dock_failure is None:
                    state, verified, reason = "DONE", True, None
                    break
                failure_sig: tuple[str, str, int | None, str] = ("dock", dock_failure, None, "")
                state, verified, reason = "FAILED", True, dock_failure
                detail = dock_failure
            else:
                failure_sig = result.signature
                state, verified, reason = "FAILED", True, f"{result.code}: {result.reason}"
                detail = f"{result.reason}\n{result.output}".rstrip()
            if failure_sig == previous:
                if attempt < limit:
                    reason = f"{reason} (the same failure twice in a row; stopped early)"
                break
            previous = failure_sig
            if attempt < limit:
                self._emit(
                    RunEvent("attempt-failed", heading.task_id, heading.title, "FAILED",
                             attempt, True, f"claimed {excerpt(claim.claim)!r}, but {reason}")
                )  # fmt: skip
            feedback = (
                f"your work did not pass its acceptance check: {task.check.text.strip()} → {detail}"
            )
        ms = int((time.monotonic() - started) * 1000)
        return _Outcome(node, state, attempt, verified, reason, output, ms, None, tuple(found))

    def _rollup_job(self, node: _Node) -> _Outcome:
        task = self._task(node)
        assert task.check is not None  # only submitted for parents with their own check
        started = time.monotonic()
        result = self._check(task.heading.task_id, 1, task.check)
        ms = int((time.monotonic() - started) * 1000)
        if result.passed:
            return _Outcome(node, "DONE", 1, True, None, result.output, ms)
        reason = (
            f"every child is DONE but the task's own check failed: {result.code}: {result.reason}"
        )
        return _Outcome(node, "PARTIAL", 1, True, reason, result.output, ms)

    def _check(self, task_id: str, attempt: int, check: SealedCheck) -> CheckResult:
        result = run_check(
            check, self.workdir, shell=self.shell, timeout=self.options.check_timeout
        )
        self.recorder.record(
            "check",
            {
                "run_id": self.run_id,
                "task_id": task_id,
                "attempt": attempt,
                "check_sha256": result.check_sha256,
                "output_sha256": result.output_sha256,
                "verdict": result.verdict,
                "reason": result.code or None,
                "excerpt": excerpt(result.output),
                "duration_ms": result.duration_ms,
            },
        )
        return result

    def _dock(self, heading: Heading) -> str | None:
        """None when the task has no `:dock:` or its artifact docked; else why not."""
        raw = heading.get_property("dock")
        if raw is None:
            return None
        try:
            component = Toolbox(self.workdir, self.plan_path).resolve(raw.strip())
        except GroundskeeperError as exc:
            return f"dock: {exc}"
        from groundskeeper.conformance import dock  # wasmtime.component: only when docking

        result = dock(component, self.plan_path.parent / "components")
        messages = "; ".join(d.message for d in result.diagnostics if d.level == "error")
        self.recorder.record(
            "dock",
            {
                "run_id": self.run_id,
                "task_id": heading.task_id,
                "component": raw.strip(),
                "sha256": result.sha256,
                "ok": result.ok,
                "interface": result.interface,
                "diagnostics": [d.to_json() for d in result.diagnostics],
            },
        )
        if self.telemetry is not None:
            self.telemetry.record_dock(
                self.run_id, heading.task_id, raw.strip(), result.sha256, result.ok,
                result.diagnostics,
            )  # fmt: skip
        if result.ok:
            return None
        return f"conformance: `{raw.strip()}` did not dock: {messages or 'refused'}"

    def _tool_recorder(self, task_id: str, attempt: int) -> Callable[[ToolCallRecord], None]:
        def record(call: ToolCallRecord) -> None:
            self.recorder.record(
                "tool-call",
                {
                    "run_id": self.run_id,
                    "task_id": task_id,
                    "attempt": attempt,
                    "tool": call.tool,
                    "input_sha256": call.input_sha256,
                    "status": call.status,
                    "is_error": call.is_error,
                },
            )

        return record

    # -- verdicts, writes, tampering (scheduler thread) -----------------------------------------

    def _task(self, node: _Node) -> _TaskRun:
        assert node.heading is not None  # groups never reach here
        return self.tasks[node.heading]

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
    ) -> None:
        """Take a verdict: into the headline now; the row and the step once it is on disk."""
        before = task.state
        task.state, task.attempts, task.verified = state, attempts, verified
        task.reason, task.output = reason, output
        heading = task.heading
        self._emit(
            RunEvent("task-end", heading.task_id, heading.title, state, attempts, verified, reason)
        )
        if before != state:
            self._text = edit_keyword(self._text, heading.line, before, state)
        run_id, telemetry, recorder = self.run_id, self.telemetry, self.recorder
        row: int | None = None
        if telemetry is not None:
            # pending until the plan holds it: a crash in between never leaves a row for a
            # verdict the plan lost (the next run's reconcile drops it), nor the reverse
            row = telemetry.record_verdict(
                run_id=run_id,
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
            )

        def written() -> None:
            recorder.record(
                "state", {"run_id": run_id, "task_id": heading.task_id, "from": before, "to": state}
            )
            if telemetry is not None and row is not None:
                telemetry.commit_verdicts([row])

        self._guard.submit(self._text, written)

    def _blame(self, tamper: Tamper) -> None:
        """Taint the suspects of a tampering; safe from any thread.

        Which worker did it cannot be known when several run at once: every worker that has
        started and is not yet judged fails closed (one at a time: exactly the culprit)."""
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
        self.recorder.record(
            "tamper",
            {
                "run_id": self.run_id,
                "task_ids": list(tamper.task_ids),
                "rejected_path": tamper.rejected_path.name if tamper.rejected_path else None,
                "sha256": tamper.sha256,
            },
        )
        self._emit(RunEvent("tamper", None, reason=tamper.describe()))

    def _record_start(self) -> None:
        self.recorder.record(
            "run-start",
            {
                "run_id": self.run_id,
                "plan": str(self.plan_path),
                "plan_sha256": sha256_text(self.plan.text),
                # a list, not a mapping: task ids may be any text, ledger keys are ASCII
                "checks": [
                    {
                        "task_id": t.heading.task_id,
                        "check_sha256": t.check.sha256 if t.check else None,
                    }
                    for t in self.tasks.values()
                ],
                "model": self.model.name,
                "workdir": str(self.workdir),
                "max_parallel": self.options.max_parallel,
                "require_checks": self.options.require_checks,
                "versions": {"groundskeeper": __version__, "python": platform.python_version()},
            },
        )

    def _reports(self) -> tuple[TaskReport, ...]:
        reports: list[TaskReport] = []
        for idx, heading in enumerate(self.plan.tasks()):
            task = self.tasks.get(heading)
            if task is None:
                state = heading.keyword or ""
                reports.append(
                    TaskReport(
                        heading.task_id, heading.title, heading.line, idx, state, 0, None, None
                    )
                )
                continue
            reports.append(
                TaskReport(
                    heading.task_id,
                    heading.title,
                    heading.line,
                    idx,
                    task.state,
                    task.attempts,
                    task.verified,
                    task.reason,
                    task.output,
                )
            )
        return tuple(reports)


# --- the plan file, guarded ------------------------------------------------------------------


@dataclass(eq=False)
class Tamper:
    """The plan file was found changed by someone other than the runner."""

    rejected_path: Path | None  # where the foreign version was kept; None if the file was gone
    sha256: str
    task_ids: list[str] = field(default_factory=list)  # tasks failed closed because of it

    def describe(self) -> str:
        if self.rejected_path is None:
            found = "the plan file was deleted during the run"
        else:
            found = (
                "the plan file was changed during the run by something other than the runner;"
                f" the foreign version is kept as {self.rejected_path.name}"
            )
        return f"{found}, and the runner's version was restored"

    def diagnostic(self) -> Diagnostic:
        blamed = f" (failed closed: {', '.join(self.task_ids)})" if self.task_ids else ""
        return Diagnostic("error", "plan", self.describe() + blamed, None, "R003")


class PlanGuard:
    """Writes the runner's plan text on a writer thread, coalescing verdicts (group commit).

    Before every write, and whenever asked (`verify`), the file is compared with what the
    runner may have on disk; anything else is kept aside as `<plan>.rejected-N` and undone.
    Callbacks given to `submit` run once the text containing their verdict is durable.
    """

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        data = text.encode("utf-8")
        self._io = threading.Lock()
        self._last = data
        self._known: tuple[bytes, ...] = (data,)
        self._cond = threading.Condition()
        self._wanted: bytes | None = None
        self._wanted_text = ""
        self._callbacks: list[Callable[[], None]] = []
        self._found: list[Tamper] = []
        self._closing = False
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._writer, name="plan-writer", daemon=True)
        self._thread.start()

    def submit(self, text: str, written: Callable[[], None]) -> None:
        with self._cond:
            if self._error is not None:
                raise self._error
            self._wanted = text.encode("utf-8")
            self._wanted_text = text
            self._callbacks.append(written)
            self._cond.notify()

    def verify(self) -> list[Tamper]:
        """Tampering found since the last call (by the writer, or now)."""
        try:
            current: bytes | None = self.path.read_bytes()
        except FileNotFoundError:
            current = None
        if current is None or current not in self._known:
            with self._io:
                tamper = self._restore_if_foreign()
            if tamper is not None:
                with self._cond:
                    self._found.append(tamper)
        with self._cond:
            found, self._found = self._found, []
        return found

    def close(self) -> list[Tamper]:
        """Flush every submitted text, stop the writer, look at the file one last time."""
        with self._cond:
            self._closing = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()
        if self._error is not None:
            raise self._error
        return self.verify()

    def _writer(self) -> None:
        while True:
            with self._cond:
                while self._wanted is None and not self._closing:
                    self._cond.wait()
                if self._wanted is None:
                    return
                data, callbacks = self._wanted, self._callbacks
                self._wanted, self._callbacks = None, []
                text = self._wanted_text
            try:
                with self._io:
                    tamper = self._restore_if_foreign()
                    self._known = (self._last, data)  # either may be on disk mid-replace
                    write_atomically(self.path, text)
                    self._last = data
                    self._known = (data,)
                if tamper is not None:
                    with self._cond:
                        self._found.append(tamper)
                for callback in callbacks:
                    callback()
            except BaseException as exc:  # surfaced to the scheduler at its next submit/close
                log.exception("writing %s failed", self.path)
                with self._cond:
                    self._error = exc
                return

    def _restore_if_foreign(self) -> Tamper | None:
        """With the I/O lock held: undo a foreign change, keeping the foreign bytes aside."""
        try:
            current: bytes | None = self.path.read_bytes()
        except FileNotFoundError:
            current = None
        if current == self._last:
            return None
        rejected: Path | None = None
        if current is not None:
            rejected = self._next_rejected()
            with rejected.open("xb") as handle:
                handle.write(current)
                handle.flush()
                os.fsync(handle.fileno())
        write_atomically(self.path, self._last.decode("utf-8"))
        return Tamper(rejected, hashlib.sha256(current or b"").hexdigest())

    def _next_rejected(self) -> Path:
        prefix = f"{self.path.name}.rejected-"
        numbers = [
            int(p.name[len(prefix) :])
            for p in self.path.parent.glob(prefix + "*")
            if p.name[len(prefix) :].isdigit()
        ]
        return self.path.with_name(f"{prefix}{max(numbers, default=0) + 1}")
