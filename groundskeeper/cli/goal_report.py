"""What a goal-driven run tells its person: the narration while the graph runs (the author's
outlines, the approval, the plan's tasks) and the outcome at the end, as the `--json`
document or as the task table on stderr.

It owns the outcome's shape and exit code; it does not run anything (`goal_cmd`) and does
not answer approvals (`approval`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from groundskeeper.cli.output import EXIT_FINDINGS, EXIT_OK, EXIT_WAITING
from groundskeeper.cli.run_cmd import event_line, print_table, task_name, usage_line, verified_word

if TYPE_CHECKING:
    from groundskeeper.cli.progress import Progress
    from groundskeeper.models.model import UsageTotals
    from groundskeeper.supervisor.graph import MissionEvent
    from groundskeeper.supervisor.runner import RunEvent

#: The plan's file name in a goal run's directory.
PLAN_NAME = "plan.org"


@dataclass
class GoalOutcome:
    """How a goal run ended, or where it waits: its `--json` document, its table, its exit
    code. `state` is the graph's last state; `waiting` what an answer is awaited for."""

    where: Path
    thread_id: str
    state: dict[str, Any]
    waiting: dict[str, Any] | None

    @property
    def outcome(self) -> str:
        if self.waiting is not None:
            return "waiting"
        return str(self.state.get("outcome") or "stopped")

    @property
    def ok(self) -> bool:
        report = self.state.get("report")
        return self.outcome == "ran" and isinstance(report, dict) and bool(report.get("ok"))

    @property
    def model_unavailable(self) -> str | None:
        report = self.state.get("report") or {}
        value = report.get("model_unavailable")
        return str(value) if value else None

    @property
    def resumable(self) -> str | None:
        """Why the run stopped with tasks left to continue: the model went away, or the
        run's attempt cap was reached (`attempt-cap: …`)."""
        report = self.state.get("report") or {}
        return self.model_unavailable or (str(report.get("attempt_cap") or "") or None)

    @property
    def exit_code(self) -> int:
        if self.waiting is not None:
            return EXIT_WAITING
        return EXIT_OK if self.ok else EXIT_FINDINGS

    def outlines(self) -> list[dict[str, Any]]:
        return [
            {
                "attempt": a["n"],
                "ok": a["diagnostics"] == [],
                "outline_sha256": a["outline_sha256"],
                "stop_reason": a["stop_reason"],
                "diagnostics": a["diagnostics"] or [],
                "usage": a["usage"],
            }
            for a in self.state.get("attempts", [])
        ]

    def to_json(self) -> dict[str, Any]:
        report = self.state.get("report") or {}
        return {
            "ok": self.ok,
            "outcome": self.outcome,
            "dir": str(self.where),
            "plan": str(self.where / PLAN_NAME),
            "thread_id": self.thread_id,
            "outlines": self.outlines(),
            "approval": self.state.get("approval"),
            "waiting": self.waiting,
            "run_id": report.get("run_id"),
            "tasks": report.get("tasks", []),
            "usage": _usage_totals(self.state).to_json(),
            "model_unavailable": self.model_unavailable,
        }

    def print(self) -> None:
        report = self.state.get("report")
        if isinstance(report, dict) and report.get("tasks"):
            print_table(
                ("STATE", "TRIES", "CHECK", "TASK", "REASON"),
                [
                    (
                        t["state"],
                        str(t["attempts"]),
                        verified_word(t["verified"]),
                        task_name(t["title"], t["id"]),
                        t["reason"] or "",
                    )
                    for t in report["tasks"]
                ],
            )
        click.echo(usage_line(_usage_totals(self.state)), err=True)
        if self.resumable:
            click.echo(
                f"{self.resumable}\ncontinue with: groundskeeper run --resume {self.where}",
                err=True,
            )
        click.echo(f"{self.outcome}: {self.where / PLAN_NAME}", err=True)


def narrate_mission(progress: Progress, event: MissionEvent) -> None:
    if event.kind == "author":
        progress.say(f"✎ outline {event.attempt} written by the author ({event.detail})")
    elif event.kind == "outline":
        if event.ok:
            progress.say(f"✔ outline {event.attempt} is valid")
        else:
            progress.say(f"✘ outline {event.attempt} is invalid:")
            for diagnostic in event.diagnostics:
                progress.say(f"    {diagnostic.format(PLAN_NAME)}")
    elif event.kind == "retry":
        progress.say("↻ the diagnostics go back to the author (its one retry)")
    elif event.kind == "approval":
        progress.say("✔ approved" if event.ok else "✘ not approved: nothing runs")
    elif event.kind == "sealed":
        progress.say(f"sealed the plan: {event.detail}")
    elif event.kind == "gate-answer":
        verdict = "applies" if event.ok else "refused"
        progress.say(f"gate answer {event.detail}: {verdict}")
    elif event.kind == "execute":
        from groundskeeper.plan.org import load_plan

        progress.set_total(len(load_plan(Path(event.detail)).tasks()))


def narrate_run(progress: Progress, event: RunEvent) -> None:
    if event.kind == "task-start" and event.task_id is not None:
        progress.task_started(event.task_id)
    elif event.kind == "task-end" and event.task_id is not None:
        progress.task_ended(event.task_id)
    progress.say(event_line(event))


def narrate_end(progress: Progress, state: dict[str, Any], where: Path) -> None:
    if state.get("outcome") == "invalid":
        kept = ", ".join(
            str(where / f"plan.outline-{a['n']}.org") for a in state.get("attempts", [])
        )
        progress.say(f"the outline stayed invalid after the one retry; nothing ran ({kept})")


def _usage_totals(state: dict[str, Any]) -> UsageTotals:
    """The author's calls (each attempt's, a call even when it reported no usage) added to
    the workers' (the plan run's report, totalled by the runner)."""
    from groundskeeper.models.model import Usage, UsageTotals

    totals = UsageTotals(**((state.get("report") or {}).get("usage") or {}))
    for attempt in state.get("attempts", []):
        totals = totals.add(Usage(**(attempt.get("usage") or {})))
    return totals
