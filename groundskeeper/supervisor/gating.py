"""Approval gates across runs: before a gated task's first attempt, a person's answer to its
open gate is sealed and applied (yes, no, revise) or refused, or the task waits again with a
fresh gate; `open_gate` binds a gate to the task's artifacts and its check.

It owns those rules; the answers are collected by the CLI and the graph, earlier gates are read
from the record (`record.backing`), and the gate stage of an attempt is `stages`'.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from groundskeeper.acceptance.check import sha256_text
from groundskeeper.acceptance.gates import (
    DECISIONS,
    GateAnswer,
    GateOpened,
    artifacts_sha256,
    gate_paths,
    hash_files,
    new_gate_id,
    workdir_files,
)
from groundskeeper.plan.tree import Node
from groundskeeper.record.backing import Record, bound_files
from groundskeeper.supervisor.pipeline import AttemptContext, Pipeline
from groundskeeper.supervisor.run_checks import RunChecks
from groundskeeper.supervisor.sealing import excerpt
from groundskeeper.supervisor.task_run import Outcome, TaskRun

log = logging.getLogger(__name__)


def open_gate(
    task: TaskRun, files: tuple[str, ...] | None, workdir: Path, skip: Iterable[Path]
) -> GateOpened:
    """A new gate on `task`, bound to its check and to `files` (None: every file of the
    workdir but `skip`), as they are now."""
    if files is None:
        files = tuple(workdir_files(workdir, skip))
    hashed = hash_files(workdir, files)
    return GateOpened(
        task.heading.task_id,
        task.heading.title,
        new_gate_id(),
        task.check_sha256,
        tuple((str(f["path"]), f["sha256"]) for f in hashed),
        artifacts_sha256(task.check_sha256, hashed),
    )


class ApprovalGates:
    """The answers given since the last run, and what they do before a gated task's first
    attempt (pool threads; each task's answer is taken once)."""

    def __init__(
        self,
        record: Record,
        answers: dict[str, GateAnswer],
        checks: RunChecks,
        verify: Pipeline,
        skip: tuple[Path, ...],
    ) -> None:
        self.record = record
        self.answers = answers  # task id → a person's answer to its gate
        self.checks = checks
        self.verify = verify  # an approved task's check and dock
        self.skip = skip

    def first(self, node: Node, task: TaskRun, started: float) -> tuple[Outcome | None, str | None]:
        """Before a gated task's first attempt: apply a person's answer to its open gate, or
        keep it waiting. (an outcome to return now, or None and the first attempt's feedback;
        both None: an ordinary task that no gate holds yet)."""
        heading = task.heading
        opened = self.record.gates.get(heading.task_id)
        answer = self.answers.pop(heading.task_id, None)
        decided = self.record.decided.get(heading.task_id)
        last = self.record.tasks.get(heading.task_id)
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
            return Outcome(node, "FAILED", 0, task.check is not None, why, "", ms), None
        pending = self.record.approval_pending.get(heading.task_id)
        if (
            opened is None
            and pending is not None
            and (answer is None or (answer.decision, answer.artifacts_sha256) == ("yes", pending))
        ):
            # the graph's answer again, or none (`resume`, a lost graph): the ledger holds it
            return self._approved_earlier(node, task, pending, started)
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
        if opened is not None and task.gate_files:  # a file made since under its patterns
            named = gate_paths(self.checks.workdir, task.gate_files) or ()
            files += tuple(p for p in named if p not in files)
        now = artifacts_sha256(task.check_sha256, hash_files(self.checks.workdir, files))
        refused: str | None = None
        if answer is not None:
            refused = self._seal_answer(task, answer, opened, now)
            if refused is None:
                if answer.decision == "yes":  # what the person approved: bound to its DONE
                    task.bound["gate"] = bound_files(raw_files)
                return self._apply(node, task, answer, started)
            log.info("gate answer for %s refused: %s", heading.task_id, refused)
            if opened is None:
                return None, None  # no gate held it: worked on as any task
        return self._wait_again(node, task, files, refused, started)

    def _approved_earlier(
        self, node: Node, task: TaskRun, approved_sha256: str, started: float
    ) -> tuple[Outcome | None, str | None]:
        """A yes sealed as applied in a run that stopped before its verdict (killed or
        interrupted): sealed then, so not sealed again; it applies once more while the check
        and the files the person approved are still what they saw, else the gate opens again."""
        approved = self.record.approved.get(task.heading.task_id, ())
        files = tuple(path for path, _ in approved)
        if task.gate_files:  # a file made since under its patterns: not what was approved
            named = gate_paths(self.checks.workdir, task.gate_files) or ()
            files += tuple(p for p in named if p not in files)
        now = artifacts_sha256(task.check_sha256, hash_files(self.checks.workdir, files))
        if now != approved_sha256:
            why = "stale: the artifacts changed since the person approved them"
            return self._wait_again(node, task, files, why, started)
        task.bound["gate"] = approved
        return self._approve(node, task, started)

    def _seal_answer(self, task: TaskRun, answer: GateAnswer, opened: Any, now: str) -> str | None:
        """Seal the answer, with whether it applies; why not (None: it applies)."""
        refused = _refusal(answer, opened, now)
        self.checks.books.seal.gate_decision({
            "task_id": task.heading.task_id,
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
        return refused

    def _wait_again(
        self,
        node: Node,
        task: TaskRun,
        files: tuple[str, ...],
        refused: str | None,
        started: float,
    ) -> tuple[Outcome | None, str | None]:
        """No answer (or a refused one): still the work the gate showed? Then it waits again,
        with a fresh gate id, so no answer given before can apply to it."""
        if task.check is not None:
            result = self.checks.sealed(task.heading.task_id, 0, task.check)
            if not result.passed:
                return None, (
                    "your work no longer passes its acceptance check:"
                    f" {task.check.text.strip()} → {result.reason}\n{result.output}".rstrip()
                )
        chosen = files or (gate_paths(self.checks.workdir, task.gate_files or ()) or None)
        opened = open_gate(task, chosen, self.checks.workdir, self.skip)
        self.checks.books.seal.gate(0, opened.to_json())
        ms = int((time.monotonic() - started) * 1000)
        reason = f"waiting for approval (gate {opened.gate_id}, {len(opened.files)} file(s))"
        if refused is not None:  # said first: why the person is asked again
            reason = f"answer refused ({refused}); {reason}"
        verified = task.check is not None  # an unchecked task waits on the worker's word
        return Outcome(node, task.start_state, 0, verified, reason, "", ms, gate=opened), None

    def _apply(
        self, node: Node, task: TaskRun, answer: GateAnswer, started: float
    ) -> tuple[Outcome | None, str | None]:
        """A sealed, bound answer takes effect: yes → DONE once its check passes again (and it
        docks); no → FAILED; revise → the note goes to the worker as feedback."""

        if answer.decision == "no":
            why = f"aborted at its approval gate ({answer.by or 'a person'})"
            return _ended(node, task, started, "FAILED", why), None
        if answer.decision == "revise":
            return None, _revise_feedback(answer)
        return self._approve(node, task, started)

    def _approve(
        self, node: Node, task: TaskRun, started: float
    ) -> tuple[Outcome | None, str | None]:
        """An approval that applies: DONE once its check passes again (and it docks)."""
        verdict = self.verify.judge(AttemptContext(task, 0))
        if verdict.stage == "check":
            why = f"approved, but its check no longer passes: {verdict.reason}"
            return _ended(node, task, started, "FAILED", why, verdict.output), None
        if verdict.kind == "FAILED":  # its dock
            return _ended(node, task, started, "FAILED", verdict.reason, verdict.output), None
        return _ended(node, task, started, "DONE", None, verdict.output), None


def _ended(
    node: Node, task: TaskRun, started: float, state: str, reason: str | None, output: str = ""
) -> Outcome:
    ms = int((time.monotonic() - started) * 1000)
    return Outcome(node, state, 0, task.check is not None, reason, output, ms)


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
