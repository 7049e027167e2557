"""The run's models behind latches: after one call fails for good, the run calls that model no
more, and what a judge that failed so means for the run under each `--judge-profile`.

It owns `FailFastModel` and those judge rules; the calls themselves are the worker's and the
judge stage's, and the models' own retries are theirs.
"""

from __future__ import annotations

import threading

from groundskeeper.acceptance.criteria import judge_criteria
from groundskeeper.diagnostics import Diagnostic
from groundskeeper.models.model import (
    AssistantTurn,
    Model,
    ModelCallError,
    ModelCallRefused,
    ModelRequest,
)
from groundskeeper.plan.spec import PlanSpec


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


def judge_preflight(spec: PlanSpec, judge: FailFastModel | None, profile: str) -> list[Diagnostic]:
    """A plan with a judged task needs a judge model (the CLI always passes one): without
    it the run does not start, rather than let such a task pass unjudged."""
    if judge is not None:
        return []
    for task in spec:
        if judge_criteria(task, profile) is not None:
            heading = task.heading
            message = "the plan has a judged task, but the run was given no judge model"
            return [Diagnostic("error", heading.title, message, heading.line, "J015")]
    return []


def judge_down(judge: FailFastModel | None, profile: str) -> str | None:
    """Why judged tasks were left waiting (never under `fast`, where the pass stands)."""
    if judge is None or judge.failure is None or profile == "fast":
        return None
    return judge.failure


def judge_stops_run(judge: FailFastModel | None, profile: str) -> str | None:
    """Under `--judge-profile safe|strict`, why a failed judge stops the run starting tasks."""
    if judge is None or profile not in ("safe", "strict"):
        return None
    return judge.failure
