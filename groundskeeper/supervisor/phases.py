"""The run's own checks, no worker involved: as phases around the walk (every DONE the
record does not back re-verified before anything is skipped, red first before any worker runs,
the final sweep over what the run made DONE), and a parent's roll-up once its children are DONE.

It owns those checks and the pool the phases run in (at least four wide: they only read); the
walk and the attempts are the runner's, and verdicts are taken through the `settle` it is given.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from groundskeeper.acceptance.check import CheckResult
from groundskeeper.diagnostics import Diagnostic
from groundskeeper.plan.contract_syntax import judged_again
from groundskeeper.plan.org import Heading
from groundskeeper.plan.tree import Node
from groundskeeper.record.backing import Record
from groundskeeper.supervisor.activity import Activity
from groundskeeper.supervisor.pipeline import AttemptContext, Pipeline, Verdict
from groundskeeper.supervisor.reports import RunOptions
from groundskeeper.supervisor.run_checks import Observed, RunChecks
from groundskeeper.supervisor.sealing import SealingError
from groundskeeper.supervisor.task_run import Demotion, Outcome, TaskRun

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
        again: Pipeline,
        activity: Activity | None = None,
    ) -> None:
        self.tasks = tasks
        self.record = record
        self.checks = checks
        self.verify = verify  # a parent's own verdict at its roll-up: `again`'s, then its dock
        self.again = again  # a DONE asserted again: every stage that can judge it without a worker
        self.settle = settle
        self.options = options
        self.activity = activity  # what acted on the workdir in this run: see `_untouched`
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
            and not self.record.backs_done(t.heading.task_id, t.check_sha256, t.spec.verdict_sha256)
        ]
        checked: list[TaskRun] = []
        for task in unbacked:
            changed = self.record.rules_changed(task.heading.task_id, task.check_sha256)
            unsealed = (
                "its sealed DONE was given under other rules (a gate, judge, dock, contract or"
                " evidence added or changed since)"
                if changed
                else "the DONE headline had no sealed record"
            )
            task.rules_changed = changed
            if task.heading.child_tasks:
                task.start_state = "TODO"  # the walk rolls it up again from its children
            elif task.contracts or task.evidence or task.gated or task.spec.dock is not None:
                # judged only on a worker's claim (the record of its attempt), a person's
                # answer or its component's docking: no check alone can stand in for that,
                # so the task is worked on again
                task.start_state = "TODO"
                why = (
                    f"re-verified: {unsealed}, and its contracts, evidence, approval gate or"
                    " dock are judged only on a worker's claim (a person's answer, a docking);"
                    " back to TODO"
                )
                self.settle(task, "TODO", 0, None, why, "", 0)
            elif task.criteria is not None:
                # a judged task is DONE only with the judge's pass: its check alone is not that
                task.start_state = "TODO"
                why = (
                    f"re-verified: {unsealed}, and the task is judged only after a worker's"
                    " attempt; back to TODO"
                )
                self.settle(task, "TODO", 0, None, why, "", 0)
            elif task.check is None:
                task.verified, task.reason = False, "unverified (no record)"
                if self.options.require_checks:
                    task.start_state = "TODO"  # and, without a check, FAILED for it
            else:
                checked.append(task)
        self._reverified(checked)

    def earned_elsewhere(self, workdir: str) -> bool:
        """Whether a DONE carried into this run was earned in a workdir other than this one
        (`workdir`: its real path, as `run-start` seals it): another `--workdir`, a control
        directory copied to another folder. Its verdict says nothing of the files here, so
        the final sweep judges it again in this workdir, even when no task runs."""
        return any(
            t.start_state == "DONE" and self.record.earned_elsewhere(t.heading.task_id, workdir)
            for t in self.tasks.values()
        )

    def held_to_flags(self, require_red: bool) -> None:
        """A DONE carried from an earlier run must meet this run's flags, as a DONE made in it
        would: under --require-checks one that rests on the worker's word (no check, no
        verifying contract) is worked on again, and FAILED for want of a check; under
        --require-red one whose current check was never seen red (it passed before any work,
        or was never asked) is FAILED with that reason. Their DONE parents roll up again."""
        from groundskeeper.plan.contract_syntax import verifying

        parents = {c: t.heading for t in self.tasks.values() for c in t.heading.child_tasks}
        demoted: list[TaskRun] = []
        for task in self.tasks.values():
            if task.start_state != "DONE" or task.heading.child_tasks:
                continue
            if self.options.require_checks and task.check is None and not verifying(task.contracts):
                task.start_state = "TODO"  # the check stage fails it: no check to confirm it
                why = (
                    "a DONE carried from an earlier run rests on the worker's word, and this run"
                    " requires checks (--require-checks); worked on again"
                )
                self.settle(task, "TODO", 0, False, why, "", 0)
                demoted.append(task)
            elif (
                require_red
                and task.check is not None
                and task.check_sha256 is not None
                and (task.heading.task_id, task.check_sha256) not in self.record.red
            ):
                task.start_state = "TODO"
                task.red = (
                    "red-first: a DONE carried from an earlier run whose check was never seen"
                    " red (it passed before any work, or was never asked), and this run"
                    " requires red (--require-red)"
                )
                demoted.append(task)
        for task in demoted:
            above = parents.get(task.heading)
            while above is not None:
                parent = self.tasks.get(above)
                if parent is not None and parent.start_state == "DONE":
                    parent.start_state = "TODO"  # the walk rolls it up again from its children
                above = parents.get(above)

    def _reverified(self, checked: list[TaskRun]) -> None:
        results = self._phase(checked, "reverify")
        if results is None:
            return  # latched: the loop starts nothing unsealed
        for task, (result, ms) in zip(checked, results, strict=True):
            unsealed = (
                "its sealed DONE was given under other rules"
                if task.rules_changed
                else "the DONE headline had no sealed record"
            )
            if result.passed:
                why = f"re-verified: {unsealed}; its check passes"
                self.settle(task, "DONE", 0, True, why, result.output, ms)
            else:
                task.start_state = "TODO"
                why = (
                    f"re-verified: {unsealed} and its check fails"
                    f" ({result.code}: {result.reason}); back to TODO"
                )
                self.settle(task, "TODO", 0, True, why, result.output, ms)

    def red_first(self, diagnostics: list[Diagnostic], required: bool) -> None:
        """Before any worker runs: each pending task's check, once, on the untouched workdir.
        A check that already passes cannot tell work from no work: reported (R007), and
        FAILED when `required` (--require-red or `#+REQUIRE_RED: t`). A resumed plan asks
        this only of tasks that have never started — and, when red is required, of every
        task whose check was never seen red: a second run cannot skip what the first
        refused. A check already seen red before any work is never asked again: work done
        since (a sibling's, before an interruption) is not the task's failure."""
        record = self.record
        pending = [
            t
            for t in self.tasks.values()
            if t.start_state != "DONE"
            and t.check is not None
            and t.check_sha256 is not None
            and (t.heading.task_id, t.check_sha256) not in record.red
            and (t.heading.task_id not in record.started or required)
            and t.red is None  # already refused (`held_to_flags`), with its own reason
        ]
        results = self._phase(pending, "red-first")
        if results is None:
            return
        for task, (result, _) in zip(pending, results, strict=True):
            if self.checks.paths is not None:  # what it read is its own from now on
                self.checks.paths.read_before_work(task.heading.task_id, result.read)
            if not result.passed:
                continue
            why = "red-first: passes before any work"
            if required:
                task.red = why
            else:
                task.green_first = f"warning: {why}, so it cannot tell the work from no work [R007]"
                message = (
                    f"{why} — the check cannot tell the work from no work;"
                    " make it test what the task must produce (or pass --require-red to fail"
                    " such tasks)"
                )
                diagnostics.append(
                    Diagnostic("warning", task.heading.title, message, task.heading.line, "R007")
                )

    def final_sweep(self, nodes: Mapping[Heading, Node]) -> None:
        """When any task ran in this run: once more, every DONE there is to judge again —
        made DONE in this run or carried from an earlier one — through the same stages as a
        roll-up's (contracts on the files, the check, the judged artifacts, an approved
        gate's files). Whatever undid its work since its verdict (a later sibling, an
        accomplice) demotes it here, with its DONE parents, before the run ends."""
        done = [t for t in self.tasks.values() if t.state == "DONE" and _judged_again(t)]
        try:
            done = self._unchanged(self._untouched(done, "sweep"))
            verdicts = list(self._checks_pool().map(lambda t: self._again(t, "sweep"), done))
        except SealingError:
            return
        finally:
            self.checks.books.flush_check_events()
        for task, verdict in zip(done, verdicts, strict=True):
            if verdict.kind == "DONE":
                continue
            demoted = _demotion(nodes[task.heading], verdict)
            task.waiting = demoted.gate
            self.settle(task, demoted.state, task.attempts, True, demoted.reason,
                        demoted.output, 0)  # fmt: skip
            node = nodes.get(task.heading)
            parent = node.parent if node is not None else None
            while parent is not None and parent.heading is not None:
                above = self.tasks.get(parent.heading)
                if above is not None and above.state == "DONE":
                    note = f"a child no longer passes: {task.heading.title}"
                    self.settle(above, "PARTIAL", above.attempts, above.verified, note, "", 0)
                parent = parent.parent

    def _untouched(self, done: list[TaskRun], phase: str) -> list[TaskRun]:
        """The DONEs this run decided after the last action on the workdir (no worker's tool
        call and no dock since their pipeline began: `supervisor.activity`) keep their
        verdict without being judged again — sealed together, "no worker acted since its
        verdict"; the rest, to judge again."""
        activity = self.activity
        if activity is None:
            return done
        kept: list[TaskRun] = []
        rest: list[TaskRun] = []
        for task in done:
            (kept if activity.untouched_since(task.decided_at) else rest).append(task)
        if kept:
            self.checks.books.untouched(phase, [(t.heading.task_id, t.check_sha256) for t in kept])
        return rest

    def _unchanged(self, done: list[TaskRun]) -> list[TaskRun]:
        """The sweep's cheap path: a carried DONE judged again only by its check (no contract
        on files, no judge, no gate) whose sealed read set still holds on disk keeps its
        DONE without a run — sealed together, "inputs unchanged since its verdict". The
        rest, to judge through the whole pipeline (their checks may still be judged by
        their read sets there)."""
        judged: list[tuple[str, str, str]] = []
        rest: list[TaskRun] = []
        root = os.path.realpath(self.checks.workdir)  # once for the sweep
        observed = Observed()  # a set many DONEs share is observed once, now
        for task in done:
            check, found = task.check, None
            if check is not None and _check_only(task):
                rules = task.spec.verdict_sha256
                found = self.checks.reused(
                    task.heading.task_id, check, self.record, rules, root, observed
                )
            if check is None or found is None or found.reads is None:
                rest.append(task)
                continue
            # `reused` took (and compared with the sealed one) the digest of these facts
            digest = observed.digests.get(found.reads)
            if digest is None:
                from groundskeeper.sandbox import read_set

                digest = read_set.digest(found.reads)
            judged.append((task.heading.task_id, found.check_sha256 or check.sha256, digest))
        if judged:
            self.checks.books.inputs_unchanged(judged)
        return rest

    def _asked_after(self, child: Node, children: list[Node]) -> str | None:
        """Why a child's check fails at the roll-up when a later sibling's text asked to
        change a file it reads (lint's T042): that change was the plan's, not an undoing."""
        from groundskeeper.plan.lint_properties import changed_later

        later = children[children.index(child) + 1 :]
        found = changed_later(self.tasks[child.task].spec, (self.tasks[c.task].spec for c in later))
        if found is None:
            return None
        other, name = found
        return (
            f"task {other}, later in the plan, was asked to change `{name}`, which this check"
            " reads: both checks must hold on the final files (lint T042)"
        )

    def roll_up(self, node: Node) -> Outcome:
        """A parent whose children are all DONE (a job on a pool thread): each child's check
        once more (a later sibling or an accomplice may have undone an earlier one's work),
        then its own check, then its `:dock:`."""
        task = self.tasks[node.task]
        started = time.monotonic()
        if task.red is not None:
            return Outcome(node, "FAILED", 0, True, task.red, "", 0)
        demoted: list[Demotion] = []
        children = [c for c in node.children if c.kind != "group"]
        # a child the user closed (CANCELLED) did no work to judge again
        judged = [c for c in children if c.outcome == "DONE" and _judged_again(self.tasks[c.task])]
        again = {id(t) for t in self._untouched([self.tasks[c.task] for c in judged], "rollup")}
        asked = False
        for child in judged:
            if id(self.tasks[child.task]) not in again:
                continue
            verdict = self._again(self.tasks[child.task], "rollup")
            if verdict.kind != "DONE":
                demotion = _demotion(child, verdict)
                cause = self._asked_after(child, children)
                if cause is not None and demotion.state == "FAILED":
                    asked = True
                    demotion = replace(demotion, reason=f"{demotion.reason}; {cause}")
                demoted.append(demotion)
        if demoted:
            ms = int((time.monotonic() - started) * 1000)
            names = ", ".join(d.node.task.title for d in demoted)
            reason = (
                f"a child's check no longer holds after a later task's asked change: {names}"
                if asked
                else f"a child's work was undone before the roll-up: {names} no longer passes"
            )
            return Outcome(node, "PARTIAL", 1, True, reason, "", ms, demote=tuple(demoted))
        verified = None if task.check is None else True
        activity = self.activity or Activity()  # none given: no verdict is kept untouched
        mark = activity.mark()
        with activity.judging(task.dock is not None):
            verdict = self.verify.judge(AttemptContext(task, 1, phase="rollup"))
        task.decided_at = mark if verdict.kind == "DONE" else None
        ms = int((time.monotonic() - started) * 1000)
        if verdict.stage in ("check", "contracts"):
            what = "check failed" if verdict.stage == "check" else "contracts do not hold"
            reason = f"every child is DONE but the task's own {what}: {verdict.reason}"
            return Outcome(node, "PARTIAL", 1, True, reason, verdict.output, ms)
        if verdict.kind == "FAILED":  # its dock
            return Outcome(node, "FAILED", 1, verified, verdict.reason, verdict.output, ms)
        return Outcome(node, "DONE", 1, verified, None, verdict.output, ms)

    def _again(self, task: TaskRun, phase: str) -> Verdict:
        """A DONE asserted again, through the stages that can judge it without a worker."""
        return self.again.judge(AttemptContext(task, 0, phase=phase))

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


def _judged_again(task: TaskRun) -> bool:
    """Whether a DONE has anything to judge again without a worker: a check, a contract on
    its files, or artifacts a judge or a person gave its verdict on."""
    return (
        task.check is not None or any(judged_again(c) for c in task.contracts) or bool(task.bound)
    )


def _check_only(task: TaskRun) -> bool:
    """Whether the check is all there is to judge of a DONE asserted again."""
    return (
        not task.bound
        and task.criteria is None
        and not task.gated
        and not any(judged_again(c) for c in task.contracts)
    )


def _demotion(node: Node, verdict: Verdict) -> Demotion:
    """What a DONE becomes when asserted again and refused: back to its active state waiting
    at a gate opened again, or FAILED with why."""
    if verdict.kind == "WAITING":
        return Demotion(node, "TODO", verdict.reason or "waiting for approval", "", verdict.gate)
    if verdict.stage == "check":
        why = f"no longer passes: {verdict.reason}"
    elif verdict.stage == "contracts":
        why = f"no longer holds: {verdict.reason}"
    else:
        why = verdict.reason or f"no longer holds: {verdict.stage}"
    return Demotion(node, "FAILED", why, verdict.output)
