"""What a run seals, step by step: the bodies of its ledger lines, and the latch that stops it.

`RunSeal` turns the runner's events into step bodies (JSON-native, no floats, outputs as hashes
plus excerpts) for a `StepRecorder` — the signed ledger, or `MemoryRecorder`, its fake. The
ledger's file format is `groundskeeper.record.ledger`'s business, not this module's.
"""

from __future__ import annotations

import logging
import platform
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from groundskeeper import __version__
from groundskeeper.acceptance.check import CheckResult, sha256_text
from groundskeeper.errors import GroundskeeperError
from groundskeeper.models.model import ModelCall
from groundskeeper.record.ledger import canonical_json
from groundskeeper.record.ledger_format import sealable
from groundskeeper.sandbox.inputs import UNCHANGED
from groundskeeper.supervisor.worker import AttemptOutcome, ToolCallRecord

if TYPE_CHECKING:
    from groundskeeper.acceptance.judge import Judgement
    from groundskeeper.conformance.rules import DockResult

log = logging.getLogger(__name__)

EXCERPT = 200
CHECKS_INLINE_BYTES = 48 * 1024  # leaves room in a 64 KiB ledger line for the rest

#: A lone surrogate (a text that came from bytes that were not UTF-8)
_SURROGATES = re.compile("[\ud800-\udfff]")


class StepRecorder(Protocol):
    """Where the runner seals its steps (the ledger); bodies are JSON-native, no floats.

    `record` is called from several threads at once and must be thread-safe; it returns once
    the step is durable (the ledger commits concurrent steps together)."""

    def record(self, step: str, body: Mapping[str, Any]) -> object: ...


#: Tasks one `inputs-unchanged` line names, and the bytes their rows take at most (a long
#: task id makes fewer a line): well inside a ledger line.
UNCHANGED_PER_LINE = 200
#: Why an `untouched` line keeps a DONE without judging it again.
UNTOUCHED = "no worker acted since its verdict"
UNCHANGED_LINE_BYTES = 32 * 1024
#: The most bytes a check step's read set takes (its facts as JSON); a larger one is not
#: sealed, and that check is run again whenever its verdict is asserted again.
MAX_READS_BYTES = 16 * 1024


def sealed_reads(facts: tuple[tuple[str, ...], ...]) -> dict[str, Any] | None:
    """A read set as a check step carries it: its digest, the sandbox that recorded it and
    the facts (None when they would take more than `MAX_READS_BYTES`)."""
    import json

    from groundskeeper.sandbox import read_set

    listed = [list(fact) for fact in facts]
    if len(json.dumps(listed)) > MAX_READS_BYTES:
        return None
    return {"sha256": read_set.digest(facts), "version": read_set.sandbox_version(),
            "facts": listed}  # fmt: skip


@runtime_checkable
class GroupCommitting(Protocol):
    """A recorder that can hold steps until a decision needs them durable (the ledger):
    `stage` queues a step in order, `commit` makes everything staged durable at once."""

    def stage(self, step: str, body: Mapping[str, Any]) -> None: ...

    def commit(self) -> None: ...


# The steps a run stages for its next decision point (ledger/SPEC.md §9, "Decision points"):
# what happened, not what is decided. Every other step (run-start, gate, gate-decision, dock,
# run-end, a goal run's steps) is durable before `record` returns.
# `len(json.dumps(row))` of an inputs-unchanged row is this plus its three values' JSON
_ROW_FRAME = len('{"task_id": , "check_sha256": , "reads_sha256": }')

STAGED_STEPS = frozenset(
    {
        "task-start",
        "tool-call",
        "model-call",
        "claim",
        "check",
        "inputs-unchanged",  # the sweep's judgment by read sets, as its `check` steps are
        "untouched",  # DONEs kept by the sweep or a roll-up: nothing acted since their verdict
        "contract",
        "evidence",
        "judge",
        "state",
        "plan-edit",
        "tamper",
    }
)


@dataclass
class MemoryRecorder:
    """Keeps steps in a list: the fake ledger for tests, benchmarks and library callers."""

    steps: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, step: str, body: Mapping[str, Any]) -> None:
        with self._lock:
            self.steps.append((step, dict(body)))

    def of(self, step: str) -> list[dict[str, Any]]:
        with self._lock:
            return [body for name, body in self.steps if name == step]

    def history(self) -> list[tuple[str, str, dict[str, Any]]]:
        """(run id, step, body) of every step kept, in order (`record.HasHistory`)."""
        with self._lock:
            return [(str(body.get("run_id", "")), name, body) for name, body in self.steps]


class SealingError(GroundskeeperError):
    """A step could not be sealed (a damaged or unwritable ledger); the run must stop."""


def excerpt(text: str) -> str:
    return text if len(text) <= EXCERPT else text[:EXCERPT] + "…"


def model_call_body(task_id: str | None, attempt: int, call: ModelCall) -> dict[str, Any]:
    """The body of a `model-call` step (ledger/SPEC.md §7); JSON-native, no floats."""
    usage = call.usage
    return {
        "task_id": task_id,
        "attempt": attempt,
        "purpose": call.purpose,
        "model": usage.model,
        "stop_reason": call.stop_reason,
        "error": None if call.error is None else excerpt(call.error),
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
        "latency_ms": usage.latency_ms,
        "request_id": usage.request_id,
        "retries": usage.retries,
    }


def _evidence(claim: AttemptOutcome) -> dict[str, Any]:
    """The claim's evidence as sealed: JSON text (it may hold floats and non-ASCII names, which
    a ledger body may not) and its hash; text past a line's room is sealed by hash only."""
    if claim.evidence is None:
        return {"evidence_json": None, "evidence_sha256": None}
    import json

    text = json.dumps(claim.evidence, sort_keys=True, ensure_ascii=True, default=repr)
    return {
        "evidence_json": text if len(text) <= CHECKS_INLINE_BYTES // 2 else None,
        "evidence_sha256": sha256_text(text),
    }


def _protected_inputs(listed: list[dict[str, str | None]]) -> dict[str, Any]:
    encoded = canonical_json(listed)
    return {
        "protected": listed if len(encoded) <= CHECKS_INLINE_BYTES // 2 else None,
        "protected_sha256": sha256_text(encoded),
    }


def _paths(key: str, paths: list[str]) -> dict[str, Any]:
    return {key: paths if len(canonical_json(paths)) <= CHECKS_INLINE_BYTES // 4 else None}


class RunSeal:
    """The steps of one run, recorded one at a time from any thread.

    Fail-closed: the first step the recorder cannot take latches `failure`, and no later
    step reaches the recorder. Steps that open work (run-start, task-start, tool-call, claim,
    check, dock) raise `SealingError`, so the work stops there; steps that record what has
    already happened (state, tamper, run-end) only latch, and the runner stops at its next
    scheduling point.
    """

    def __init__(self, recorder: StepRecorder, run_id: str, *, group_commit: bool = False) -> None:
        self.recorder = recorder
        self.run_id = run_id
        self.failure: str | None = None
        self._lock = threading.Lock()  # guards `failure` and the counts below
        # with group commit, STAGED_STEPS wait for the next `commit` (a decision point)
        self._staging = recorder if group_commit and isinstance(recorder, GroupCommitting) else None
        self._staged = self._committed = 0  # steps staged, and how many of them are durable

    def record(self, step: str, body: Mapping[str, Any], *, opens_work: bool = True) -> None:
        if self.failure is None:
            try:
                if self._staging is not None and step in STAGED_STEPS:
                    with self._lock:
                        self._staged += 1
                    self._staging.stage(step, {"run_id": self.run_id, **body})
                else:
                    self.recorder.record(step, {"run_id": self.run_id, **body})
                return
            except Exception as exc:  # whatever the cause, this step is not sealed
                log.error("sealing a %s step failed: %s", step, exc)
                self._latch(f"the `{step}` step could not be sealed: {exc}")
        if opens_work:
            raise SealingError(self.failure)

    def commit(self) -> None:
        """A decision point: every step recorded so far is durable when this returns.
        SealingError (latched, like a step that could not be sealed) if they cannot be made
        durable: nothing may then act on them — no plan write, no feedback, no dock.

        After a failure, what was durable before it stays so: a commit with nothing staged
        since the last one returns (a verdict taken before the failure may still be
        written); one with steps staged fails (they may never become durable)."""
        with self._lock:
            staged = self._staged
        if self._staging is None or staged == self._committed:
            return
        if self.failure is None:
            try:
                self._staging.commit()
                with self._lock:
                    self._committed = max(self._committed, staged)
                return
            except Exception as exc:
                log.error("committing the run's steps failed: %s", exc)
                self._latch(f"the run's steps could not be made durable: {exc}")
        raise SealingError(self.failure)

    def _latch(self, failure: str) -> None:
        with self._lock:
            if self.failure is None:
                self.failure = failure

    def run_start(
        self,
        *,
        plan: str,
        plan_text: str,
        checks: Iterable[tuple[str, str | None]],
        model: str,
        workdir: str,
        max_parallel: int,
        require_checks: bool,
        require_red: bool = False,
        protected: Iterable[tuple[str, str | None]] = (),
        hidden: Iterable[str] = (),
        automatic: Iterable[str] = (),
        breaker: int | None = None,
        max_total_attempts: int | None = None,
        forget_record: bool = False,
        accept_changes: bool = False,
        workdir_snapshot: str | None = None,
        unrecorded: Mapping[str, Any] | None = None,
        doctest_examples: Mapping[str, list[str]] | None = None,
    ) -> None:
        # a list, not a mapping: task ids may be any text, ledger keys are ASCII
        listed = [{"task_id": t, "check_sha256": sha} for t, sha in checks]
        encoded = canonical_json(listed)
        self.record(
            "run-start",
            {
                "plan": plan,
                "plan_sha256": sha256_text(plan_text),
                # A ledger line holds at most 64 KiB, about 650 tasks' hashes: past that only
                # the digest of the list is sealed here, and each task-start carries its hash.
                "checks": listed if len(encoded) <= CHECKS_INLINE_BYTES else None,
                "checks_sha256": sha256_text(encoded),
                "checks_count": len(listed),
                "model": model,
                "workdir": workdir,
                "max_parallel": max_parallel,
                "require_checks": require_checks,
                "require_red": require_red,
                # the plan's headlines showed verdicts no ledger holds, and the run was told
                # to start over without them (`--forget-record`)
                **({"forget_record": True} if forget_record else {}),
                # the user took the workdir's files as they are (`--accept-changes`): what
                # earlier runs' workers changed is no longer held against them
                **({"accept_changes": True} if accept_changes else {}),
                # the SHA-256 of the workdir's files as this run starts, kept beside the ledger
                **({"workdir_snapshot": workdir_snapshot} if workdir_snapshot else {}),
                # what the latest run's workers in flight wrote when it stopped mid-call: changes
                # no sealed tool call lists, held against those tasks from now on
                **({"unrecorded": sealable(dict(unrecorded))} if unrecorded else {}),
                # the doctest examples each doctest check's file holds as this run starts (a
                # later run holds the file to the first sealed: `acceptance.doctests`)
                **(
                    {
                        "doctest_examples": [
                            {"path": sealable(p), "examples": list(d)}
                            for p, d in doctest_examples.items()
                        ]
                    }
                    if doctest_examples
                    else {}
                ),
                # what ends a fix loop early (`groundskeeper.acceptance.loops`): null when not given
                "breaker": breaker,
                "max_total_attempts": max_total_attempts,
                # the protected inputs as they were before any work (hash-only past a line)
                **_protected_inputs([{"path": p, "sha256": h} for p, h in protected]),
                # which of them are hidden from workers, and which expected files were
                # protected without a pattern naming them (the digest covers the hashes)
                **_paths("hidden", list(hidden)),
                **_paths("protected_automatically", list(automatic)),
                "versions": {"groundskeeper": __version__, "python": platform.python_version()},
            },
        )

    def task_start(
        self,
        task_id: str,
        kind: str,
        check_sha256: str | None,
        *,
        invariants: list[dict[str, object]] | None = None,
        protected: list[tuple[str, str | None]] | None = None,
        watched: Mapping[str, Any] | None = None,
    ) -> None:
        """`invariants` (a leaf's): each `{context, line, sha256}` its worker's system prompt
        states, for every attempt of this task-start (the texts are in the sealed plan).
        `protected` (a leaf's): its protected inputs as its work starts, which its checks
        compare against from then on. `watched` (a leaf with a `changed` contract): what the
        files its patterns cover held at the task's first start (`first_start.sealed_form`)."""
        body: dict[str, Any] = {"task_id": task_id, "kind": kind, "check_sha256": check_sha256}
        if invariants is not None:
            body["invariants"] = invariants
        if protected is not None:
            body.update(_protected_inputs([{"path": p, "sha256": h} for p, h in protected]))
        if watched is not None:
            body.update(watched)
        self.record("task-start", body)

    def tool_call(self, task_id: str, attempt: int, call: ToolCallRecord) -> dict[str, Any]:
        """Seal one tool call with what it did (`call.facts`: for `sh` the command, its exit
        status, output hashes and changed paths; for `write_file` the path); the body back."""
        body = {
            **call.facts,
            "task_id": task_id,
            "attempt": attempt,
            "tool": call.tool,
            "input_sha256": call.input_sha256,
            "status": call.status,
            "is_error": call.is_error,
        }
        # a name that is not UTF-8 (a worker's `résumé.txt` in Latin-1) is sealed as its bytes
        self.record("tool-call", sealable(body))
        return body

    def model_call(self, task_id: str | None, attempt: int, call: ModelCall) -> None:
        """One model call, answered (`stop_reason`) or failed (`error`), with what it cost.
        `task_id` is None for a call made for no task (the author's)."""
        self.record("model-call", model_call_body(task_id, attempt, call))

    def claim(self, task_id: str, attempt: int, claim: AttemptOutcome) -> None:
        """The worker's claim. Its text is the worker's: a lone surrogate in it (a model's
        malformed output) is hashed as it is, shown as U+FFFD in the excerpt, and sealed
        losslessly wherever else it appears (`sealable`) — never a step the run cannot seal."""
        shown = _SURROGATES.sub("\ufffd", claim.claim)
        self.record(
            "claim",
            sealable(
                {
                    "task_id": task_id,
                    "attempt": attempt,
                    "claims_done": claim.claims_done,
                    "stop": claim.stop,
                    "turns": claim.turns,
                    "claim_sha256": sha256_text(claim.claim, keep_surrogates=True),
                    "excerpt": excerpt(shown),
                    **_evidence(claim),
                }
            ),
        )

    def contracts(self, task_id: str, attempt: int, verdicts: list[dict[str, Any]]) -> None:
        """The verdicts of a task's contracts on one claim (`ContractVerdict.to_json`)."""
        self.record("contract", {"task_id": task_id, "attempt": attempt, "verdicts": verdicts})

    def evidence(self, task_id: str, attempt: int, verdicts: list[dict[str, Any]]) -> None:
        """The verdicts on a claim's evidence fields (`EvidenceVerdict.to_json`)."""
        self.record("evidence", {"task_id": task_id, "attempt": attempt, "verdicts": verdicts})

    def judge(
        self, task_id: str, attempt: int, profile: str, model: str | None, judgement: Judgement
    ) -> None:
        """The judge's answer on one attempt whose check passed: what it was asked (the
        prompt's hash and the artifacts' hashes), its verdict and reasons, what it cost."""
        usage = judgement.usage
        self.record(
            "judge",
            {
                "task_id": task_id,
                "attempt": attempt,
                "profile": profile,
                "model": model,
                "called": judgement.called,
                "prompt_sha256": judgement.prompt_sha256 or None,
                "verdict": judgement.verdict,
                "code": judgement.code,
                "reasons": [excerpt(r) for r in judgement.reasons],
                "message": excerpt(judgement.message),
                "stop_reason": judgement.stop_reason,
                "error": None if judgement.error is None else excerpt(judgement.error),
                "artifacts": [
                    {**a.to_json(), "path": excerpt(a.path)} for a in judgement.artifacts
                ],
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cache_read_tokens": usage.cache_read_tokens,
                "cache_write_tokens": usage.cache_write_tokens,
                "latency_ms": usage.latency_ms,
                "request_id": usage.request_id,
            },
        )

    def check(
        self, task_id: str, attempt: int, result: CheckResult, phase: str | None = None
    ) -> None:
        """A check's verdict; `phase` names a check outside the worker's attempts
        (`red-first`, `reverify`, `rollup`, `sweep`)."""
        extra: dict[str, Any] = {"phase": phase} if phase is not None else {}
        if result.reads is not None and result.passed:
            reads = sealed_reads(result.reads)
            if reads is not None:
                extra["reads"] = reads
        if result.reused:
            extra["reused"] = UNCHANGED
        self.record(
            "check",
            {
                **extra,
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

    def inputs_unchanged(self, judged: Iterable[tuple[str, str, str]]) -> None:
        """DONEs the final sweep judged by their check's read set, every fact of it unchanged
        since the verdict it was sealed with: (task id, check sha256, read set sha256) each,
        in lines of at most `UNCHANGED_PER_LINE` tasks and `UNCHANGED_LINE_BYTES` of them."""
        from json.encoder import encode_basestring_ascii as quoted

        rows = (
            (
                {"task_id": task_id, "check_sha256": check_sha256, "reads_sha256": reads_sha256},
                _ROW_FRAME + len(quoted(task_id) + quoted(check_sha256) + quoted(reads_sha256)),
            )
            for task_id, check_sha256, reads_sha256 in judged
        )
        self._in_lines("inputs-unchanged", {"phase": "sweep", "reason": UNCHANGED}, rows)

    def untouched(self, phase: str, kept: Iterable[tuple[str, str | None]]) -> None:
        """DONEs this run decided after the last action on the workdir, kept without being
        judged again in `phase` (`sweep`, `rollup`): (task id, check sha256) each, in lines
        of at most `UNCHANGED_PER_LINE` tasks and `UNCHANGED_LINE_BYTES` of them."""
        from json import dumps

        rows = (
            (row, len(dumps(row))) for row in ({"task_id": t, "check_sha256": c} for t, c in kept)
        )
        self._in_lines("untouched", {"phase": phase, "reason": UNTOUCHED}, rows)

    def _in_lines(
        self, step: str, head: dict[str, str], rows: Iterable[tuple[Mapping[str, str | None], int]]
    ) -> None:
        """`head` and the rows (each with its JSON's length) as its `tasks`, in lines of at
        most `UNCHANGED_PER_LINE` rows and `UNCHANGED_LINE_BYTES` of them."""
        line: list[Mapping[str, str | None]] = []
        size = 0
        for row, more in rows:
            if line and (len(line) == UNCHANGED_PER_LINE or size + more > UNCHANGED_LINE_BYTES):
                self.record(step, {**head, "tasks": line})
                line, size = [], 0
            line.append(row)
            size += more
        if line:
            self.record(step, {**head, "tasks": line})

    def dock(self, task_id: str, component: str, result: DockResult) -> None:
        self.record(
            "dock",
            {
                "task_id": task_id,
                "component": component,
                "sha256": result.sha256,
                "ok": result.ok,
                "interface": result.interface,
                "diagnostics": [d.to_json() for d in result.diagnostics],
            },
        )

    def gate(self, attempt: int, opened: dict[str, Any]) -> None:
        """A gated task's check passed: it waits for a person (`GateOpened.to_json`)."""
        self.record("gate", {**opened, "attempt": attempt})

    def gate_decision(self, body: dict[str, Any]) -> None:
        """A person's answer to a gate, sealed before it takes effect (or with `applied`
        false and the reason it was refused)."""
        self.record("gate-decision", body)

    def state(
        self,
        task_id: str,
        before: str,
        after: str,
        stop: str | None = None,
        lies: Iterable[str] = (),
        rules: str | None = None,
    ) -> None:
        """A verdict; `rules` is the digest of every rule that decided it
        (`TaskSpec.verdict_sha256`: a DONE is backed only under them); `stop` names why a
        task's fix loop ended without DONE (`groundskeeper.acceptance.loops`: `max-attempts`,
        `breaker`, `attempt-cap`); `lies` the attempts caught lying on the way (`attempt 1:
        false evidence: …`)."""
        body: dict[str, Any] = {"task_id": task_id, "from": before, "to": after}
        if rules is not None:
            body["verdict_sha256"] = rules
        if stop is not None:
            body["stop"] = stop
        if lies := list(lies):
            body["lies"] = lies
        self.record("state", body, opens_work=False)

    def plan_edit(self, line: int, text: str, reason: str) -> None:
        """The one change to a plan beyond a keyword: a line the run inserted."""
        self.record("plan-edit", {"line": line, "text": text, "reason": reason}, opens_work=False)

    def tamper(self, task_ids: list[str], rejected_name: str | None, sha256: str) -> None:
        self.record(
            "tamper",
            {"task_ids": task_ids, "rejected_path": rejected_name, "sha256": sha256},
            opens_work=False,
        )

    def run_end(
        self,
        ok: bool,
        states: Iterable[tuple[str, str]],
        tampers: int,
        interrupted: tuple[str, tuple[str, ...]] | None = None,
    ) -> None:
        """`interrupted`: the signal that stopped the run and the tasks then in flight."""
        body: dict[str, Any] = {
            "ok": ok,
            "states": [{"task_id": t, "state": s} for t, s in states],
            "tampers": tampers,
        }
        if interrupted is not None:
            body["interrupted"], body["in_flight"] = interrupted[0], list(interrupted[1])
        self.record("run-end", body, opens_work=False)
