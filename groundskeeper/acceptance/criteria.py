"""Which tasks the LLM judge judges, and with which model: read off a compiled plan, without
the judge itself (`acceptance.judge`, which re-exports these), so a run with no judged task
(every resume of plain checks) never imports it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from groundskeeper.plan.spec import PlanSpec, TaskSpec

__all__ = ["DEFAULT_JUDGE_MODEL", "STRICT_CRITERIA", "judge_criteria", "judge_model_spec"]

DEFAULT_JUDGE_MODEL = "anthropic:claude-haiku-4-5"
# what `strict` judges a task with a check and no `:judge:` against
STRICT_CRITERIA = "The work does completely what the task's title and description ask."


def judge_criteria(task: TaskSpec, profile: str) -> str | None:
    """What the judge checks the task's work against: its `:judge:` words; under `strict`,
    a task with a check and no `:judge:` is judged too, against its title and description.
    None: the task has no judge."""
    if task.heading.child_tasks:
        return None  # a parent has no worker to judge (lint: J005)
    if task.judge is not None and task.judge.strip():
        return task.judge.strip()
    if profile == "strict" and task.check is not None:
        return STRICT_CRITERIA
    return None


def judge_model_spec(
    plan: PlanSpec, given: str | None, worker_spec: str, profile: str
) -> str | None:
    """The `--judge-model` a run needs: None when no task of `plan` is judged (no judge is
    loaded, and no API key asked for); else the one given, else — for a `scripted:` worker —
    the same script (its `judges:`; an offline run never reaches the network by default),
    else DEFAULT_JUDGE_MODEL."""
    if not any(judge_criteria(task, profile) is not None for task in plan):
        return None
    if given:
        return given
    if worker_spec.startswith("scripted:"):
        return worker_spec
    return DEFAULT_JUDGE_MODEL
