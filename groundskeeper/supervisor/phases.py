"""The run's own checks, no worker involved: as phases around the walk (every DONE the
record does not back re-verified before anything is skipped, red first before any worker runs,
the final sweep over what the run made DONE), and a parent's roll-up once its children are DONE.

It owns those checks and the pool the phases run in (at least four wide: they only read); the
walk and the attempts are the runner's, and verdicts are taken through the `settle` it is given.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor

from groundskeeper.acceptance.check import CheckResult
from groundskeeper.diagnostics import Diagnostic
from groundskeeper.plan.org import Heading
from groundskeeper.plan.tree import Node
from groundskeeper.record.backing import Record
from groundskeeper.supervisor.pipeline import AttemptContext, Pipeline
from groundskeeper.supervisor.reports import RunOptions
from groundskeeper.supervisor.run_checks import RunChecks
from groundskeeper.supervisor.sealing import SealingError
from groundskeeper.supervisor.task_run import Outcome, TaskRun

VERIFY_PARALLEL = 4  # the least width of the run's own read-only checks

# (task, state, attempts, verified, reason, output, duration_ms): `VerdictWriter.settle`
Settle = Callable[[TaskRun, str, int, bool | None, str | None, str, int], None]


class RunPhases:
    """The phases of one run, each called once from the scheduler thread, and its roll-ups."""

    def __init__(
        self,
        tasks: Mapping[Heading, TaskRun],
        record: Record,
        checks: RunChecks,
        verify: Pipeline,
        settle: Settle,
        options: RunOptions,
    ) -> None:
        self.tasks = tasks
        self.record = record
        self.checks = checks
        self.verify = verify  # a task's own check, then its dock
        self.settle = settle
        self.options = options
        self._pool: ThreadPoolExecutor | None = None

    def back_every_done(self) -> None:
        """Before anything is skipped: every DONE headline must be backed by a sealed DONE for
        that task and the same check. One that is not (hand-edited, written by a worker, left
        by a run killed mid-write) is re-verified: its check runs; pass → DONE, recorded as
        re-verified; fail → back to TODO, so this run works on it. A parent is re-derived from
        its children; a leaf without a check stays DONE only as `unverified (no record)`."""
        unbacked = [
            t
            for t in self.tasks.values()
            if t.start_state == "DONE"
            and not self.record.backs_done(t.heading.task_id, t.check_sha256)
        ]
        checked: list[TaskRun] = []
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
                self.settle(task, "TODO", 0, None, why, "", 0)
            elif task.criteria is not None:
                # a judged task is DONE only with the judge's pass: its check alone is not that
                task.start_state = "TODO"
                why = (
                    "re-verified: the DONE headline had no sealed record, and the task is"
                    " judged only after a worker's attempt; back to TODO"
                )
                self.settle(task, "TODO", 0, None, why, "", 0)
            elif task.check is None:
                task.verified, task.reason = False, "unverified (no record)"
                if self.options.require_checks:
                    task.start_state = "TODO"  # and, without a check, FAILED for it
            else:
                checked.append(task)
        self._reverified(checked)

    def _reverified(self, checked: list[TaskRun]) -> None:
        results = self._phase(checked, "reverify")
        if results is None:
            return  # latched: the loop starts nothing unsealed
        for task, (result, ms) in zip(checked, results, strict=True):
            if result.passed:
                why = "re-verified: the DONE headline had no sealed record; its check passes"
                self.settle(task, "DONE", 0, True, why, result.output, ms)
            else:
                task.start_state = "TODO"
                why = (
                    "re-verified: the DONE headline had no sealed record and its check fails"
                    f" ({result.code}: {result.reason}); back to TODO"
                )
                self.settle(task, "TODO", 0, True, why, result.output, ms)

    def red_first(self, diagnostics: list[Diagnostic], required: bool) -> None:
        """Before any worker runs: each pending task's check, once, on the untouched workdir.
        A check that already passes cannot tell work from no work: reported (R007), and
        FAILED when `required` (--require-red or `#+REQUIRE_RED: t`). A resumed plan asks
        this only of tasks that have never started."""
        pending = [
            t
            for t in self.tasks.values()
            if t.start_state != "DONE"
            and t.check is not None
            and t.heading.task_id not in self.record.started
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
                    f"{why} — the check cannot tell the work from no work;"
                    " make it test what the task must produce (or pass --require-red to fail"
                    " such tasks)"
                )
                diagnostics.append(
                    Diagnostic("warning", task.heading.title, message, task.heading.line, "R007")
                )

    def final_sweep(self, nodes: Mapping[Heading, Node]) -> None:
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
            self.settle(task, "FAILED", task.attempts, True, why, result.output, 0)
            node = nodes.get(task.heading)
            parent = node.parent if node is not None else None
            while parent is not None and parent.heading is not None:
                above = self.tasks.get(parent.heading)
                if above is not None and above.state == "DONE":
                    note = f"a child no longer passes: {task.heading.title}"
                    self.settle(above, "PARTIAL", above.attempts, above.verified, note, "", 0)
                parent = parent.parent

    def roll_up(self, node: Node) -> Outcome:
        """A parent whose children are all DONE (a job on a pool thread): each child's check
        once more (a later sibling or an accomplice may have undone an earlier one's work),
        then its own check, then its `:dock:`."""
        task = self.tasks[node.task]
        started = time.monotonic()
        if task.red is not None:
            return Outcome(node, "FAILED", 0, True, task.red, "", 0)
        demoted: list[tuple[Node, str, str]] = []
        for child in node.children:
            if child.kind == "group" or self.tasks[child.task].check is None:
                continue
            child_check = self.tasks[child.task].check
            assert child_check is not None
            again = self.checks.sealed(child.task.task_id, 0, child_check, "rollup")
            if not again.passed:
                why = f"no longer passes: {again.code}: {again.reason}"
                demoted.append((child, why, again.output))
        if demoted:
            ms = int((time.monotonic() - started) * 1000)
            names = ", ".join(c.task.title for c, _, _ in demoted)
            reason = f"a child's work was undone before the roll-up: {names} no longer passes"
            return Outcome(node, "PARTIAL", 1, True, reason, "", ms, demote=tuple(demoted))
        verified = None if task.check is None else True
        verdict = self.verify.judge(AttemptContext(task, 1))
        ms = int((time.monotonic() - started) * 1000)
        if verdict.stage == "check":
            reason = f"every child is DONE but the task's own check failed: {verdict.reason}"
            return Outcome(node, "PARTIAL", 1, True, reason, verdict.output, ms)
        if verdict.kind == "FAILED":  # its dock
            return Outcome(node, "FAILED", 1, verified, verdict.reason, verdict.output, ms)
        return Outcome(node, "DONE", 1, verified, None, verdict.output, ms)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

    def _phase(self, tasks: list[TaskRun], phase: str) -> list[tuple[CheckResult, int]] | None:
        """The run's own check of each task (with a check) for `phase`, in the checks pool:
        (result, ms) in the tasks' order, or None once a step could not be sealed. The
        phase's telemetry rows are written in one transaction at its end."""

        def one(task: TaskRun) -> tuple[CheckResult, int]:
            assert task.check is not None
            started = time.monotonic()
            if phase == "reverify":  # a task of its own in the record, not an attempt's
                self.checks.books.seal.task_start(task.heading.task_id, "reverify",
                                                  task.check_sha256)  # fmt: skip
            result = self.checks.sealed(task.heading.task_id, 0, task.check, phase)
            return result, int((time.monotonic() - started) * 1000)

        try:
            return list(self._checks_pool().map(one, tasks))
        except SealingError:
            return None
        finally:
            self.checks.books.flush_check_events()

    def _checks_pool(self) -> ThreadPoolExecutor:
        """Where the run's own checks (red first, re-verification, the sweep) run: at least 4
        wide whatever --max-parallel says (they only read, and their sealed steps then share
        the ledger's durable commits)."""
        if self._pool is None:
            wide = max(VERIFY_PARALLEL, self.options.max_parallel)
            self._pool = ThreadPoolExecutor(max_workers=wide, thread_name_prefix="gk-verify")
        return self._pool
