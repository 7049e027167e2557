"""What a run is told and what it tells: its options, the events it emits, its report, and
the diagnostics that explain a run left unfinished (model, judge, attempt cap, ledger).

It owns these values and their `--json` shapes; it does not run anything or print them (the
CLI narrates).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from groundskeeper.acceptance.check import DEFAULT_CHECK_TIMEOUT
from groundskeeper.acceptance.loops import DEFAULT_BREAKER, STOP_ATTEMPT_CAP, AttemptBudget
from groundskeeper.acceptance.toolbox import DEFAULT_SH_TIMEOUT
from groundskeeper.diagnostics import Diagnostic
from groundskeeper.errors import GroundskeeperError
from groundskeeper.models.model import UsageTotals
from groundskeeper.sandbox.quota import DEFAULT_DISK_QUOTA
from groundskeeper.supervisor.plan_guard import Tamper
from groundskeeper.supervisor.task_run import VERDICT_STATES
from groundskeeper.supervisor.worker import DEFAULT_MAX_TURNS

if TYPE_CHECKING:
    from groundskeeper.acceptance.gates import GateOpened

DEFAULT_MAX_PARALLEL = 4


@dataclass(frozen=True, slots=True)
class RunOptions:
    max_parallel: int = DEFAULT_MAX_PARALLEL
    require_checks: bool = False
    require_red: bool = False  # a check that passes before any work is FAILED (`#+REQUIRE_RED`)
    # start a plan whose headlines show earlier verdicts over a ledger that is gone (sealed)
    forget_record: bool = False
    # the files earlier runs' workers changed are taken as they are now (sealed)
    accept_changes: bool = False
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
    lies: tuple[str, ...] = ()  # attempts caught lying on the way ("attempt 1: false evidence…")

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
            "lies": list(self.lies),
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
    # the signal that stopped the run (`SIGINT`, `SIGTERM`): every task is left resumable
    interrupted: str | None = None

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
            "interrupted": self.interrupted,
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


def model_down_diagnostic(
    down: str, reports: tuple[TaskReport, ...], finished_states: frozenset[str]
) -> Diagnostic:
    left = sum(r.state not in VERDICT_STATES and r.state not in finished_states
               for r in reports)  # fmt: skip
    message = (
        f"model unavailable: {down}; the run stopped calling it, and {left} task(s) are"
        " left resumable (never DONE): run the same `groundskeeper resume` again once the"
        " API answers"
    )
    return Diagnostic("error", "model", message, None, "R008")


def cap_diagnostic(budget: AttemptBudget, reports: tuple[TaskReport, ...]) -> Diagnostic:
    left = sum(r.stop == STOP_ATTEMPT_CAP for r in reports)
    message = (
        f"attempt cap reached: the run started its {budget.taken} attempt(s)"
        f" (--max-total-attempts {budget.limit}) and started nothing more; {left}"
        " task(s) are left resumable (never DONE): run `groundskeeper resume` again,"
        " with a larger cap if need be"
    )
    return Diagnostic("error", "run", message, None, "I010")


def judge_down_diagnostic(down: str, reports: tuple[TaskReport, ...]) -> Diagnostic:
    from groundskeeper.acceptance.judge import J_UNAVAILABLE

    waiting = sum((r.reason or "").startswith(J_UNAVAILABLE) for r in reports)
    message = (
        f"judge unavailable: {down}; {waiting} judged task(s) are left resumable (never"
        " DONE without the judge's pass): run the same command again once the judge's API"
        " answers, or choose --judge-profile fast to let a passing check stand"
    )
    return Diagnostic("error", "judge", message, None, J_UNAVAILABLE)


class RunInterrupted(GroundskeeperError):
    """The run was asked to stop (SIGINT, SIGTERM): an attempt in flight ends where it is."""


def interrupted_diagnostic(why: str, in_flight: tuple[str, ...]) -> Diagnostic:
    running = f" ({', '.join(in_flight)})" if in_flight else ""
    message = (
        f"interrupted by {why}: the run stopped its sandbox commands, started nothing more and"
        f" sealed its end; the {len(in_flight)} task(s) in flight{running} keep their state,"
        " and every task not DONE is resumable: run the same `groundskeeper resume` again"
    )
    return Diagnostic("error", "run", message, None, "R009")


def unsealed_diagnostic(failure: str | None, *, started: bool) -> Diagnostic:
    outcome = "stopped; no verdict after that was written" if started else "did not start"
    message = f"the run could not be sealed, so it {outcome}: {failure}"
    return Diagnostic("error", "ledger", message, None, "R004")
