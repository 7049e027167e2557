"""The task table of a report: for every task the ledger names, each attempt's claim beside
what was checked (evidence, contracts, the check, the judge, the gate), its tokens, its last
sealed state, and whether the plan's headline is backed by the record.

It owns reading those steps into rows; it does not verify the ledger (`review.snapshot`) or
render anything. Every string in a row may have been written by a worker: rows carry plain
values and the page escapes them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groundskeeper.review.snapshot import Line

TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: object) -> int:
    return value if type(value) is int else 0


def _ref(line: Line) -> dict[str, Any]:
    return {"line": line.number, "seq": line.seq}


@dataclass
class _Attempt:
    run: str
    number: int
    first_line: int
    claim: dict[str, Any] | None = None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    contracts: list[dict[str, Any]] = field(default_factory=list)
    check: dict[str, Any] | None = None
    judge: dict[str, Any] | None = None
    gate: dict[str, Any] | None = None
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_FIELDS, 0))
    model_calls: int = 0
    tool_calls: int = 0

    def outcome(self) -> tuple[str, bool]:
        """(what became of the attempt, whether it failed)."""
        hard = [v for v in self.evidence + self.contracts if not v["ok"] and not v["soft"]]
        if hard:
            return "claim refuted: " + ", ".join(str(v["code"]) for v in hard), True
        if self.check is not None and self.check["verdict"] != "PASS":
            return f"check {self.check['verdict']}: {self.check['reason'] or 'failed'}", True
        if self.judge is not None and self.judge["verdict"] != "pass":
            return f"judge failed: {self.judge['code'] or 'no verdict'}", True
        if self.check is not None:
            gated = " · waiting at a gate" if self.gate is not None else ""
            return "check passed" + (" · judge passed" if self.judge else "") + gated, False
        if self.claim is None:
            return "no claim sealed", True
        return "no check sealed", True

    def to_json(self) -> dict[str, Any]:
        outcome, failed = self.outcome()
        claimed_done = self.claim is not None and self.claim["claims_done"] is True
        return {
            "run": self.run,
            "attempt": self.number,
            "first_line": self.first_line,
            "claim": self.claim,
            "evidence": self.evidence,
            "contracts": self.contracts,
            "check": self.check,
            "judge": self.judge,
            "gate": self.gate,
            "tokens": dict(self.tokens),
            "model_calls": self.model_calls,
            "tool_calls": self.tool_calls,
            "outcome": outcome,
            "failed": failed,
            # the agent said DONE and what was checked said otherwise
            "claim_refuted": claimed_done and failed,
        }


@dataclass
class _Task:
    task_id: str
    first_line: int
    kind: str | None = None
    state: str | None = None
    state_from: str | None = None
    stop: str | None = None
    state_line: dict[str, Any] | None = None
    check_sha256: str | None = None
    attempts: dict[tuple[str, int], _Attempt] = field(default_factory=dict)
    other_checks: list[dict[str, Any]] = field(default_factory=list)
    docks: list[dict[str, Any]] = field(default_factory=list)
    tampers: list[dict[str, Any]] = field(default_factory=list)

    def attempt(self, run: str, number: int, line: Line) -> _Attempt:
        key = (run, number)
        if key not in self.attempts:
            self.attempts[key] = _Attempt(run, number, line.number)
        return self.attempts[key]


def _verdicts(value: object, keys: Iterable[str]) -> list[dict[str, Any]]:
    found = []
    for item in value if isinstance(value, list) else []:
        if isinstance(item, dict):
            entry: dict[str, Any] = {key: _text(item.get(key)) for key in keys}
            entry["ok"] = item.get("ok") is True
            entry["soft"] = item.get("soft") is True
            found.append(entry)
    return found


def _check(line: Line) -> dict[str, Any]:
    body = line.body
    return {
        **_ref(line),
        "verdict": str(body.get("verdict")),
        "reason": _text(body.get("reason")),
        "excerpt": _text(body.get("excerpt")),
        "phase": _text(body.get("phase")),
        "check_sha256": _text(body.get("check_sha256")),
        "output_sha256": _text(body.get("output_sha256")),
    }


def _judge(line: Line) -> dict[str, Any]:
    body = line.body
    reasons = body.get("reasons")
    artifacts = body.get("artifacts")
    return {
        **_ref(line),
        "verdict": _text(body.get("verdict")) if body.get("code") is None else "fail",
        "code": _text(body.get("code")),
        "profile": _text(body.get("profile")),
        "called": body.get("called") is True,
        "reasons": [str(r) for r in reasons] if isinstance(reasons, list) else [],
        "message": _text(body.get("message")),
        "artifacts": [
            {"path": _text(a.get("path")), "sha256": _text(a.get("sha256"))}
            for a in (artifacts if isinstance(artifacts, list) else [])
            if isinstance(a, dict)
        ],
    }


class TaskTable:
    """Reads the lines in order and keeps one row per task id."""

    def __init__(self) -> None:
        self.tasks: dict[str, _Task] = {}

    def _task(self, task_id: str, line: Line) -> _Task:
        if task_id not in self.tasks:
            self.tasks[task_id] = _Task(task_id, line.number)
        return self.tasks[task_id]

    def read(self, line: Line) -> None:
        step, body, run = line.step, line.body, line.text("run") or ""
        if step == "tamper":
            for blamed in body.get("task_ids") or []:
                if isinstance(blamed, str):
                    task = self._task(blamed, line)
                    task.tampers.append({**_ref(line), "path": _text(body.get("rejected_path"))})
            return
        task_id = body.get("task_id")
        if not isinstance(task_id, str) or step is None:
            return
        task = self._task(task_id, line)
        attempt = body.get("attempt")
        number = attempt if type(attempt) is int else 0
        if step == "task-start":
            task.kind = _text(body.get("kind")) or task.kind
            task.check_sha256 = _text(body.get("check_sha256"))
        elif step == "state":
            task.state, task.state_from = _text(body.get("to")), _text(body.get("from"))
            task.stop = _text(body.get("stop"))
            task.state_line = _ref(line)
        elif step == "check" and number == 0:
            task.other_checks.append(_check(line))
            task.check_sha256 = _text(body.get("check_sha256"))
        elif step == "dock":
            task.docks.append({**_ref(line), "ok": body.get("ok") is True})
        elif number > 0:
            self._attempt_step(task.attempt(run, number, line), step, line)

    @staticmethod
    def _attempt_step(attempt: _Attempt, step: str, line: Line) -> None:
        body = line.body
        if step == "claim":
            attempt.claim = {
                **_ref(line),
                "excerpt": _text(body.get("excerpt")),
                "claim_sha256": _text(body.get("claim_sha256")),
                "claims_done": body.get("claims_done") is True,
                "evidence_json": _text(body.get("evidence_json")),
            }
        elif step == "evidence":
            fields = ("field", "type", "pattern", "code", "message")
            attempt.evidence = _verdicts(body.get("verdicts"), fields)
        elif step == "contract":
            attempt.contracts = _verdicts(
                body.get("verdicts"), ("contract", "type", "code", "message")
            )
        elif step == "check":
            attempt.check = _check(line)
        elif step == "judge":
            attempt.judge = _judge(line)
        elif step == "gate":
            attempt.gate = {**_ref(line), "gate_id": _text(body.get("gate_id"))}
        elif step == "model-call":
            attempt.model_calls += 1
            for name in TOKEN_FIELDS:
                attempt.tokens[name] += _int(body.get(name))
        elif step == "tool-call":
            attempt.tool_calls += 1

    def rows(self, headlines: Mapping[str, dict[str, Any]] | None) -> list[dict[str, Any]]:
        """The rows, failures first: a task not DONE, then a DONE reached after failed
        attempts, then the rest; in the order the ledger first names them otherwise."""
        rows = [self._row(task, headlines) for task in self.tasks.values()]
        rows.sort(key=lambda r: (r["state"] == "DONE", r["failed_attempts"] == 0, r["first_line"]))
        return rows

    @staticmethod
    def _row(task: _Task, headlines: Mapping[str, dict[str, Any]] | None) -> dict[str, Any]:
        attempts = [a.to_json() for a in task.attempts.values()]
        tokens = dict.fromkeys(TOKEN_FIELDS, 0)
        for entry in attempts:
            for name in TOKEN_FIELDS:
                tokens[name] += entry["tokens"][name]
        headline = None
        if headlines is not None:
            headline = headlines.get(task.task_id) or {"keyword": None, "backed": False}
        return {
            "task_id": task.task_id,
            "kind": task.kind,
            "first_line": task.first_line,
            "state": task.state,
            "state_from": task.state_from,
            "stop": task.stop,
            "state_line": task.state_line,
            "check_sha256": task.check_sha256,
            "attempts": attempts,
            "failed_attempts": sum(1 for a in attempts if a["failed"]),
            "refuted_claims": sum(1 for a in attempts if a["claim_refuted"]),
            "other_checks": task.other_checks,
            "docks": task.docks,
            "tampers": task.tampers,
            "tokens": tokens,
            "headline": headline,
        }


def plan_headlines(plan_path: Path, record_steps: Iterable[Line]) -> dict[str, dict[str, Any]]:
    """Each task of the plan on disk: its headline keyword and whether the sealed record backs
    it (SPEC §7, "What backs a DONE headline": a DONE needs a sealed DONE judged with the very
    check the plan has now; another keyword needs the same last sealed state). The plan is
    read as `audit` reads it; GroundskeeperError when it cannot be."""
    from groundskeeper.acceptance.check import SealedCheck
    from groundskeeper.plan.org import load_plan
    from groundskeeper.plan.spec import compile_plan
    from groundskeeper.record.backing import read_record

    plan = load_plan(plan_path)
    rules = {t.task_id: t.verdict_sha256 for t in compile_plan(plan)}
    record = read_record(
        (line.text("run") or "", line.step or "", line.body)
        for line in record_steps
        if line.obj is not None
    )
    found: dict[str, dict[str, Any]] = {}
    for task in plan.tasks():
        keyword = task.keyword or None
        check = SealedCheck.seal(task.check).sha256 if task.check is not None else None
        sealed = record.tasks.get(task.task_id)
        if keyword == "DONE":
            backed = record.backs_done(task.task_id, check, rules.get(task.task_id, ""))
        else:
            backed = sealed is None or sealed.state == keyword
        found[task.task_id] = {"keyword": keyword, "backed": backed, "line": task.line}
    return found
