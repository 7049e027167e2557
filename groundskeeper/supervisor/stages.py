"""The stages of an attempt's verdict, in the order `attempt_stages` registers them: the claim
(its evidence, then the task's contracts, against the record of the attempt), the check, the
judge, the approval gate, the dock. Each is one class with the `pipeline.Stage` interface.

It owns what each stage asks, the steps it names for sealing and how its failure reads to the
worker; the rules themselves are `acceptance`'s and `conformance`'s, sealing is the pipeline's
and the attempt loop the runner's. A new stage is a class here, added to `attempt_stages`.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundskeeper.acceptance.attempt_record import AttemptRecord, OutputStore
from groundskeeper.acceptance.check import CheckResult, check_feedback, told
from groundskeeper.acceptance.toolbox import Toolbox
from groundskeeper.diagnostics import Diagnostic
from groundskeeper.errors import GroundskeeperError
from groundskeeper.models.model import Model, ModelCall, Usage
from groundskeeper.plan.contract_syntax import judged_again, verifying
from groundskeeper.record.backing import Record
from groundskeeper.sandbox import fence as fences
from groundskeeper.supervisor.pipeline import (
    AttemptContext,
    Joint,
    Stage,
    StageResult,
    Step,
)
from groundskeeper.supervisor.run_books import RunBooks
from groundskeeper.supervisor.run_checks import RunChecks
from groundskeeper.supervisor.sealing import excerpt
from groundskeeper.supervisor.task_run import TaskRun
from groundskeeper.supervisor.worker import AttemptOutcome

if TYPE_CHECKING:
    from groundskeeper.acceptance.contracts import ContractVerdict
    from groundskeeper.acceptance.evidence import EvidenceVerdict, Written
    from groundskeeper.acceptance.gates import GateOpened
    from groundskeeper.acceptance.judge import Artifact, Judgement
    from groundskeeper.conformance.rules import DockResult
    from groundskeeper.supervisor.task_run import TaskRun

# The stages' rules (`acceptance.contracts`, `.evidence`, `.judge`, `.gates`) are imported by
# the stage that needs them, when a task has something for it to judge: a run of plain checks
# (a resume of a long plan, above all) does not pay for importing them.


@dataclass(frozen=True)
class StageTools:
    """What the stages of one run share: its tools and output store, its checks, its judge,
    the record it started from (whose docks docking updates) and where components dock."""

    toolbox: Toolbox
    outputs: OutputStore
    checks: RunChecks
    require_checks: bool
    judge_model: Model | None
    judge_prompt: str
    judge_profile: str
    skip: tuple[Path, ...]  # what a gate never binds: the plan file, the control directory
    components: Path
    record: Record
    docks_lock: threading.Lock = field(default_factory=threading.Lock)
    # the plan hides inputs: a check's or contract's message, status or output could carry
    # one, so a worker is told only which check or contract failed (`check.told`)
    holds_out: bool = False

    @property
    def hides(self) -> bool:
        """Whether what goes back to a worker is reduced to pass or fail (`check.told`)."""
        return self.holds_out or bool(self.checks.hidden)


def attempt_stages(tools: StageTools) -> list[Stage | Joint]:
    """The stages that judge a worker's attempt, in order (register a new stage here)."""
    claim = Joint("claim", (EvidenceStage(tools), ContractsStage(tools)), claim_failure)
    return [claim, CheckStage(tools), JudgeStage(tools), GateStage(tools), DockStage(tools)]


def verify_stages(tools: StageTools) -> list[Stage | Joint]:
    """A task's own verdict without an attempt to judge (a parent's roll-up, an approved
    gate): the same stages as an attempt's, each judging what it can without a worker's
    record — the contracts judged on files, the check, the judge's artifacts, the gate's
    files — then its dock."""
    return [*again_stages(tools), DockStage(tools)]


def again_stages(tools: StageTools) -> list[Stage | Joint]:
    """A DONE asserted again (a child at its parent's roll-up, the final sweep): the
    contracts judged on the files as they are now, the check, the judged artifacts (changed
    since the judge passed them: judged again) and an approved gate's files (changed: the
    gate opens again). A docked component is not docked twice."""
    return [ContractsStage(tools), CheckStage(tools), JudgeStage(tools), GateStage(tools)]


# -- the claim: evidence and contracts, against the record of the attempt ----------------------


def claim_failure(problems: tuple[str, ...], told: tuple[str, ...]) -> StageResult:
    """Every hard failure of the claim, in one message for the worker: each as `told` it
    (`check.told`); the record and the report keep `problems` whole."""
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    head = "your claim did not hold against the record of this attempt:\n"
    feedback = head + "\n".join(f"- {h}" for h in told)
    whole = head + "\n".join(f"- {h}" for h in problems)  # the breaker compares the record's
    return StageResult("claim", "fail", problems[0] + more, feedback, f"claim\n{whole}", True)


def _claim_result(
    name: str,
    problems: list[str],
    steps: list[Step],
    rows: list[dict[str, Any]],
    told: list[str] | None = None,
) -> StageResult:
    said_told = tuple(problems if told is None else told)
    said = claim_failure(tuple(problems), said_told) if problems else StageResult(name)
    return replace(said, stage=name, steps=tuple(steps), problems=tuple(problems),
                   told=said_told, rows=tuple(rows))  # fmt: skip


@dataclass(frozen=True, slots=True)
class EvidenceSealed:
    verdicts: tuple[EvidenceVerdict, ...]

    def record(self, books: RunBooks, task_id: str, attempt: int) -> None:
        books.seal.evidence(task_id, attempt, [v.to_json() for v in self.verdicts])


class EvidenceStage:
    """The claim's evidence fields, each against the attempt's sealed tool calls."""

    name = "evidence"

    def __init__(self, tools: StageTools) -> None:
        self.outputs = tools.outputs
        self.toolbox = tools.toolbox
        self.tools = tools

    @property
    def hides(self) -> bool:
        return self.tools.hides

    def judge(self, context: AttemptContext) -> StageResult:
        task, claim = context.task, context.claim
        if not task.evidence or claim is None:
            return StageResult(self.name)
        from groundskeeper.acceptance.evidence import judge_evidence

        record = AttemptRecord(context.sealed, self.outputs)
        quoted = any(f.pattern for f in task.evidence)
        written = self._written(context, record) if quoted else None
        verdicts = tuple(judge_evidence(task.evidence, claim.evidence, record, written))
        rows: list[dict[str, Any]] = [{"kind": "evidence", "spec": v.field.spec, "soft": False,
                                       "ok": v.ok, "code": v.code, "message": v.message}
                                      for v in verdicts]  # fmt: skip
        problems = [v.reason for v in verdicts if not v.ok]
        # evidence is judged on the worker's own tool calls: what it saw (`check.told`)
        told_ = [told(p, hides=self.hides, seen=True) for p in problems]
        return _claim_result(self.name, problems, [EvidenceSealed(verdicts)], rows, told_)

    def _written(self, context: AttemptContext, record: AttemptRecord) -> Written:
        """What the task's worker wrote: the text of every file the attempt changed by any
        tool (the workdir's stamps) or that its record's journal names, as it is now (None:
        unreadable; absent ones left out), and what its earlier attempts changed."""
        stamped = None if context.wrote is None else frozenset(context.wrote)
        paths = set(stamped or ())
        paths.update(context.history.earlier or ())  # what a planted quote may sit in
        paths.update(context.others or ())
        paths.update(context.earlier_others)
        for _index, _tool, changed in record.writes():
            paths.update(changed or ())
        root = os.path.realpath(self.toolbox.workdir)
        texts: dict[str, str | None] = {}
        for path in sorted(paths):
            full = os.path.join(root, path)
            if not os.path.lexists(full):
                continue  # absent now
            if os.path.isdir(full) and not os.path.islink(full):
                texts[path] = ""  # a directory holds no quote; its name may
                continue
            try:
                data = self.toolbox.read_limited(path, EVIDENCE_READ_LIMIT)
            except (OSError, ValueError, GroundskeeperError):
                texts[path] = None
                continue
            texts[path] = data.decode("utf-8", "replace")

        def real(path: str) -> str | None:
            found = os.path.realpath(os.path.join(root, path))
            inside = found.startswith(root + os.sep)
            return found[len(root) + 1 :].replace(os.sep, "/") if inside else None

        from groundskeeper.acceptance.attempt_record import input_digests
        from groundskeeper.acceptance.evidence import Written

        def now(path: str) -> str | None:
            return input_digests(root, (path,))[path]

        from groundskeeper.path_patterns import covers
        from groundskeeper.plan.expected import asks_to_change

        spec = context.task.spec

        def asked(path: str) -> bool:
            return covers(spec.writable, path) or asks_to_change(spec, path)

        return Written(texts, stamped, context.history.earlier, real, context.others, now,
                       context.earlier_others, asked)  # fmt: skip


EVIDENCE_READ_LIMIT = 4 * 1024 * 1024  # a written file larger than this cannot clear a quote


@dataclass(frozen=True, slots=True)
class ContractsSealed:
    verdicts: tuple[ContractVerdict, ...]

    def record(self, books: RunBooks, task_id: str, attempt: int) -> None:
        books.seal.contracts(task_id, attempt, [v.to_json() for v in self.verdicts])


@dataclass(frozen=True, slots=True)
class SoftWarning:
    """A soft contract that failed: a warning in the report, said once however often."""

    warning: Diagnostic

    def record(self, books: RunBooks, task_id: str, attempt: int) -> None:
        books.soft_warning(self.warning)


class ContractsStage:
    """The task's contracts on the workdir and the attempt's record; a soft one's failure is a
    warning, not a failure."""

    name = "contracts"

    def __init__(self, tools: StageTools) -> None:
        self.toolbox = tools.toolbox
        self.outputs = tools.outputs
        self.checks = tools.checks
        self.tools = tools

    def judge(self, context: AttemptContext) -> StageResult:
        task = context.task
        contracts = task.contracts
        if context.claim is None:  # asserted again: what the files show now, no record
            contracts = tuple(c for c in contracts if judged_again(c))
        if not contracts:
            return StageResult(self.name)
        from groundskeeper.acceptance.contracts import ContractContext, judge_contracts

        record = AttemptRecord(context.sealed, self.outputs)
        judged = tuple(
            judge_contracts(
                contracts,
                ContractContext(
                    self.toolbox,
                    record,
                    context.watched.hashes,
                    self.toolbox.workdir,
                    task.baselines,
                    task.spec.protect + self.checks.configuration,
                    hidden=self.checks.hidden,
                    unwatched=context.watched.unknown,
                    added=self.checks.freed,
                    new_tests=self.checks.new_tests,
                    removed=self.checks.removed,
                    renamed=self.checks.renamed,
                    left_to=self._left_to(task.heading.task_id),
                    inputs_changed=self._inputs_changed(task.heading.task_id),
                ),
            )
        )
        steps: list[Step] = [ContractsSealed(judged)]
        problems: list[str] = []
        said: list[str] = []  # each as the worker is told it (`check.told`)
        rows: list[dict[str, Any]] = []
        for v in judged:
            rows.append({"kind": "contract", "spec": v.contract.text, "soft": v.contract.soft,
                         "ok": v.ok, "code": v.code, "message": v.message,
                         "detail": dict(v.detail)})  # fmt: skip
            if v.hard_failure:
                problems.append(v.reason)
                shown = told(v.reason, hides=self.tools.hides)  # the reason names its contract
                said.append(shown if shown == v.reason else f"{v.contract.text}: {shown}")
            elif not v.ok:
                warning = Diagnostic("warning", task.heading.title,
                                     f"soft contract failed: {v.reason}", v.contract.line,
                                     v.code or "")  # fmt: skip
                steps.append(SoftWarning(warning))
        return _claim_result(self.name, problems, steps, rows, said)

    def _left_to(self, task_id: str) -> Callable[[str], str | None] | None:
        paths = self.checks.paths
        return None if paths is None else paths.left_to(task_id)

    def _inputs_changed(self, task_id: str) -> Callable[[tuple[str, ...] | None], list[str]] | None:
        """The check backstop a suite's pass answers to, as a check's does: each file the
        suite read that was there before the work and that a worker not entitled to it
        changed (`RunPaths.inputs_read`)."""
        paths = self.checks.paths
        if paths is None:
            return None
        return lambda read: paths.inputs_read(task_id, read)


# -- the check ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CheckSealed:
    result: CheckResult
    phase: str | None = None

    def record(self, books: RunBooks, task_id: str, attempt: int) -> None:
        books.check(task_id, attempt, self.result, self.phase)


class CheckStage:
    """The task's acceptance check on the workdir. Without a check, the worker's word decides
    (unless checks are required), and finally: no other attempt can be told apart."""

    name = "check"

    def __init__(self, tools: StageTools) -> None:
        self.checks = tools.checks
        self.outputs = tools.outputs
        self.record = tools.record
        self.require_checks = tools.require_checks
        self.tools = tools

    def judge(self, context: AttemptContext) -> StageResult:
        task, claim = context.task, context.claim
        if task.check is None:
            kept = self.checks.kept(task.heading.task_id)
            if kept is not None:  # the check's rule of protection, without a check to run
                reason = f"{kept.code}: {kept.reason}"
                feedback = f"your work did not pass: {told(kept.reason, hides=self.tools.hides)}"
                return StageResult(self.name, "fail", reason, feedback,
                                   f"{kept.code}\n{kept.reason}", True, "")  # fmt: skip
            return StageResult(self.name) if claim is None else self._unchecked(task, claim)
        result = None
        if context.phase == "sweep" and claim is None:  # a DONE carried from an earlier run
            result = self.checks.reused(
                task.heading.task_id, task.check, self.record, task.spec.verdict_sha256
            )
        if result is None:
            result = self.checks.run(task.heading.task_id, task.check)
        wrote = context.history.wrote  # what the worker wrote, for the judge (every attempt's)
        found, _unknown = AttemptRecord(context.sealed, self.outputs).changed()
        wrote.extend(p for p in sorted(found) if p not in wrote)
        steps = (CheckSealed(result, context.phase),)
        if result.passed:
            return StageResult(self.name, verified=True, output=result.output, steps=steps)
        reason = f"{result.code}: {result.reason}"
        if claim is not None and claim.no_claim is not None:  # e.g. cut off at max_tokens
            reason = f"{reason} (and the worker made no claim: {claim.no_claim})"
        detail = f"{result.reason}\n{result.output}".rstrip()  # the record keeps it all
        feedback = check_feedback(task.check, detail, hides=self.tools.hides)
        return StageResult(self.name, "fail", reason, feedback,
                           f"{result.code}\n{result.reason}\n{result.output}", True,
                           result.output, steps)  # fmt: skip

    def _unchecked(self, task: TaskRun, claim: AttemptOutcome) -> StageResult:
        if verifying(task.contracts) and claim.claims_done:
            # its suite ran and passed in the claim's stage, before this one: a check
            return StageResult(self.name, verified=True, output=claim.claim)
        if self.require_checks:
            reason = "no acceptance check (--require-checks)"
        elif claim.claims_done:
            return StageResult(self.name, verified=False, output=claim.claim)
        elif claim.no_claim is not None:
            reason = claim.no_claim
        else:
            reason = f"the worker did not claim DONE: {excerpt(claim.claim) or '(nothing)'}"
        return StageResult(self.name, "fail", reason, verified=False, output=claim.claim)


# -- the judge ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModelCalled:
    call: ModelCall

    def record(self, books: RunBooks, task_id: str, attempt: int) -> None:
        books.model_called(task_id, attempt, self.call)


@dataclass(frozen=True, slots=True)
class JudgeSealed:
    profile: str
    model: str | None
    judgement: Judgement

    def record(self, books: RunBooks, task_id: str, attempt: int) -> None:
        books.seal.judge(task_id, attempt, self.profile, self.model, self.judgement)


@dataclass(frozen=True, slots=True)
class JudgeWarning:
    """`--judge-profile fast`: the judge was unavailable and the check's pass stood."""

    warning: Diagnostic

    def record(self, books: RunBooks, task_id: str, attempt: int) -> None:
        books.judge_warning(self.warning)


class JudgeStage:
    """After a passing check, the task's judge (if it has one) on its artifacts. An API error
    past its retries leaves the task resumable, except under `--judge-profile fast`, where
    the check's pass stands with a warning."""

    name = "judge"

    def __init__(self, tools: StageTools) -> None:
        self.toolbox = tools.toolbox
        self.checks = tools.checks
        self.model = tools.judge_model
        self.prompt = tools.judge_prompt
        self.profile = tools.judge_profile
        self.tools = tools

    def judge(self, context: AttemptContext) -> StageResult:
        task = context.task
        if task.check is None or task.criteria is None:
            return StageResult(self.name)
        if context.claim is None:
            return self._again(context)
        # lint refused a plan whose `:judge-files:` paths cannot be read
        artifacts, unreadable = self._collect(task, context.history.wrote)
        return self._judged(context, artifacts, unreadable)

    def _collect(self, task: TaskRun, changed: Iterable[str]) -> tuple[list[Artifact], list[str]]:
        paths = self.checks.paths
        # the judge never sees a hidden input: it reads under the fence the workers do
        with fences.binding(paths.judge_fence()) if paths is not None else nullcontext():
            files = paths.judged(task.judge_files) if paths is not None else task.judge_files
            from groundskeeper.acceptance.judge import collect_artifacts

            return collect_artifacts(self.toolbox, files, changed)

    def _again(self, context: AttemptContext) -> StageResult:
        """A judged DONE asserted again: the artifacts its judge passed, as they are now. The
        same bytes: its verdict stands. Changed: the judge is asked again, and only its pass
        keeps the DONE (unavailable, it is not kept: no one judged the work as it is)."""
        task = context.task
        bound = task.bound.get("judge")
        if bound is None:  # no judge passed it (`fast` and an unavailable judge): nothing bound
            return StageResult(self.name)
        judged = [p for p, _ in bound if p not in task.judge_files]
        artifacts, unreadable = self._collect(task, judged)
        changed = _changed(bound, tuple((a.path, a.sha256) for a in artifacts))
        if not changed and not unreadable:
            return StageResult(self.name)
        result = self._judged(context, artifacts, unreadable)
        if result.status == "pass":
            return result
        why = f"judged work changed since its verdict ({', '.join(changed) or 'unreadable'})"
        said = result.reason or "the judge was not asked"
        return replace(result, status="fail", reason=f"{why}: {said}", feedback=None,
                       failure=f"judge\n{why}")  # fmt: skip

    def _judged(
        self, context: AttemptContext, artifacts: list[Artifact], unreadable: list[str]
    ) -> StageResult:
        task = context.task
        heading = task.heading
        judgement = self._ask(context, artifacts, unreadable)
        steps: list[Step] = []
        if judgement.called:
            call = ModelCall("judge", judgement.stop_reason, judgement.usage, judgement.error)
            steps.append(ModelCalled(call))
        name = self.model.name if self.model is not None else None
        steps.append(JudgeSealed(self.profile, name, judgement))
        if judgement.passed:
            # what the pass was given on: a DONE asserted again must still be this
            task.bound["judge"] = tuple((a.path, a.sha256) for a in judgement.artifacts)
            return StageResult(self.name, steps=tuple(steps))
        if judgement.unavailable and self.profile == "fast" and context.claim is not None:
            from groundskeeper.acceptance.judge import J_UNAVAILABLE

            message = f"{judgement.reason}; --judge-profile fast: the check's pass stands, unjudged"
            warning = Diagnostic("warning", heading.title, message, heading.line, J_UNAVAILABLE)
            return StageResult(self.name, steps=(*steps, JudgeWarning(warning)))
        if judgement.unavailable:  # not the worker's failure: the task keeps its state
            return StageResult(self.name, "unavailable", judgement.reason, steps=tuple(steps))
        assert task.check is not None  # a judged task has a check (`judge` returned before)
        # the judge reads under the workers' fence (`_collect`): its words show nothing hidden
        hides = self.tools.hides
        said = judgement.feedback()
        feedback = (
            told(said, hides=hides, seen=True)
            if said
            else check_feedback(task.check, judgement.reason, hides=hides, seen=True)
        )
        return StageResult(self.name, "fail", judgement.reason, feedback,
                           f"judge\n{judgement.reason}", True, steps=tuple(steps))  # fmt: skip

    def _ask(
        self, context: AttemptContext, artifacts: list[Artifact], unreadable: list[str]
    ) -> Judgement:
        from groundskeeper.acceptance.judge import (
            J_UNAVAILABLE,
            J_UNREADABLE,
            Judgement,
            JudgeTask,
            ask_judge,
        )

        task = context.task
        if unreadable:
            why = f"the judge was not asked: :judge-files: unreadable: {'; '.join(unreadable)}"
            return Judgement(None, J_UNREADABLE, (), why, "", None, Usage(),
                             tuple(artifacts), None, False)  # fmt: skip
        if self.model is None:
            why = "the judge's model is unavailable: the run was given none"
            return Judgement(None, J_UNAVAILABLE, (), why, "", None, Usage(),
                             tuple(artifacts), "no judge model", False)  # fmt: skip
        assert task.criteria is not None
        heading = task.heading
        about = JudgeTask(heading.task_id, heading.title, heading.body, task.criteria)
        return ask_judge(self.model, about, artifacts, self.prompt)[0]


# -- the approval gate ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GateSealed:
    opened: GateOpened

    def record(self, books: RunBooks, task_id: str, attempt: int) -> None:
        books.seal.gate(attempt, self.opened.to_json())


class GateStage:
    """A gated task whose work passed waits for a person: a gate is sealed, bound to its
    artifacts (`:gate-files:`, else what its attempts wrote, else the whole workdir) and
    check. It docks once a person approves."""

    name = "gate"

    def __init__(self, tools: StageTools) -> None:
        self.workdir = tools.checks.workdir
        self.skip = tools.skip

    def judge(self, context: AttemptContext) -> StageResult:
        task = context.task
        if not task.gated:
            return StageResult(self.name)
        if context.claim is None:
            return self._again(context)
        from groundskeeper.acceptance.gates import gate_paths
        from groundskeeper.supervisor.gating import open_gate

        # named files, read by the matcher (none named: the whole workdir, never nothing)
        files = (gate_paths(self.workdir, task.gate_files) or None) if task.gate_files else None
        if not task.gate_files and not context.history.unknown:  # unknown: every file, not a guess
            files = tuple(sorted(context.history.written)) or None
        opened = open_gate(task, files, self.workdir, self.skip)
        reason = f"waiting for approval (gate {opened.gate_id}, {len(opened.files)} file(s))"
        # an unchecked task waits on the worker's word
        return StageResult(self.name, "wait", reason, verified=task.check is not None,
                           steps=(GateSealed(opened),), gate=opened)  # fmt: skip

    def _again(self, context: AttemptContext) -> StageResult:
        """An approved DONE asserted again: the files the person approved, as they are now.
        Changed: the gate is open again, on the files as they are."""
        task = context.task
        bound = task.bound.get("gate")
        if bound is None:
            return StageResult(self.name)
        from groundskeeper.acceptance.gates import gate_paths, hash_files
        from groundskeeper.supervisor.gating import open_gate

        paths = tuple(p for p, _ in bound)
        if task.gate_files:  # and what its `:gate-files:` patterns name now
            paths += tuple(p for p in gate_paths(self.workdir, task.gate_files) or ()
                           if p not in paths)  # fmt: skip
        hashed = hash_files(self.workdir, paths)
        changed = _changed(bound, tuple((str(f["path"]), f["sha256"]) for f in hashed))
        if not changed:
            return StageResult(self.name)
        opened = open_gate(task, paths, self.workdir, self.skip)
        del task.bound["gate"]
        reason = (
            f"approved work changed since its approval ({', '.join(changed)}): waiting for"
            f" approval again (gate {opened.gate_id}, {len(opened.files)} file(s))"
        )
        return StageResult(self.name, "wait", reason, verified=task.check is not None,
                           steps=(GateSealed(opened),), gate=opened)  # fmt: skip


def _changed(
    bound: tuple[tuple[str, str | None], ...], now: tuple[tuple[str, str | None], ...]
) -> list[str]:
    """The paths whose hash differs from the one a verdict was given on (or is gone), and
    those there now that it was not given on (a file made since under a named pattern)."""
    current, given = dict(now), dict(bound)
    differ = [path for path, sha in bound if path not in current or current[path] != sha]
    return differ + [path for path in current if path not in given]


# -- the dock -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DockSealed:
    component: str
    result: DockResult

    def record(self, books: RunBooks, task_id: str, attempt: int) -> None:
        result = self.result
        books.seal.dock(task_id, self.component, result)
        if books.telemetry is not None:
            books.telemetry.record_dock(
                books.run_id, task_id, self.component, result.sha256, result.ok,
                result.diagnostics,
            )  # fmt: skip


class DockStage:
    """The task's `:dock:` component, docked (`conformance.rules.dock`); without one, a pass."""

    name = "dock"

    def __init__(self, tools: StageTools) -> None:
        self.toolbox = tools.toolbox
        self.components = tools.components
        self.record = tools.record  # its docks: what docked so far, updated as components dock
        self.lock = tools.docks_lock
        self.tools = tools

    def judge(self, context: AttemptContext) -> StageResult:
        raw = context.task.dock
        if raw is None:
            return StageResult(self.name)
        try:
            component = self.toolbox.resolve(raw.strip())
        except GroundskeeperError as exc:
            return self._failed(context, f"dock: {exc}", ())
        from groundskeeper.conformance.rules import dock  # wasmtime.component: only when docking

        with self.lock:
            sealed = dict(self.record.docks)
        result = dock(component, self.components, sealed=sealed)
        if result.ok:
            with self.lock:
                self.record.docks[component.name] = result.sha256
        steps = (DockSealed(raw.strip(), result),)
        if result.ok:
            return StageResult(self.name, steps=steps)
        messages = "; ".join(d.message for d in result.diagnostics if d.level == "error")
        why = f"conformance: `{raw.strip()}` did not dock: {messages or 'refused'}"
        return self._failed(context, why, steps)

    def _failed(self, context: AttemptContext, why: str, steps: tuple[Step, ...]) -> StageResult:
        """A checked task hears it as its check's failure; an unchecked one's verdict is final."""
        check = context.task.check
        hides = self.tools.hides
        feedback = check_feedback(check, why, hides=hides) if check is not None else None
        return StageResult(self.name, "fail", why, feedback, f"dock\n{why}", steps=steps)
