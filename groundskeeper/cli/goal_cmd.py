"""`groundskeeper run "GOAL"` and `groundskeeper approve DIR`: the goal-driven front door.

The work happens in `supervisor.graph` (author → validate → one retry → approve → seal →
execute → report); this module picks the directory, wires the models, ledger, telemetry and
checkpointer, answers the approval gate at a terminal, and prints the report.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import select
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from groundskeeper.cli.output import EXIT_FINDINGS, EXIT_OK, emit_json, fail_usage
from groundskeeper.cli.progress import Progress
from groundskeeper.cli.run_cmd import (
    attempt_options,
    event_line,
    judge_options,
    load_judge,
    open_ledger,
    open_telemetry,
    plan_lock,
    print_table,
    task_name,
    usage_line,
    verified_word,
)
from groundskeeper.errors import GroundskeeperError, UsageError

if TYPE_CHECKING:
    from groundskeeper.models.model import AssistantTurn, Model, ModelRequest, UsageTotals
    from groundskeeper.record.control import ControlDir
    from groundskeeper.supervisor.graph import Mission, MissionEvent, MissionFile
    from groundskeeper.supervisor.runner import RunEvent

EXIT_WAITING = 3
PLAN_NAME = "plan.org"
APPROVAL_FILE = "approval.json"
ANSWER_POLL = 0.25  # seconds between looks for an answer from `groundskeeper approve`

MODEL_HELP = (
    "The workers' model: `anthropic:MODEL` (the Anthropic API; needs ANTHROPIC_API_KEY) or"
    " `scripted:FILE` (a YAML script, offline). Default: $GROUNDSKEEPER_MODEL."
)


@click.command("run")
@click.argument("goal", required=False)
@click.option(
    "--resume",
    "resume_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Continue the goal-driven run in DIR where it stopped; the author is never asked"
    " again once an outline was sealed.",
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(path_type=Path, file_okay=False),
    help="Where the plan and the work go (created; must be new or empty). Default: a new"
    " folder named after the goal.",
)
@click.option("--model", "model_spec", envvar="GROUNDSKEEPER_MODEL", help=MODEL_HELP)
@click.option(
    "--author-model",
    "author_spec",
    envvar="GROUNDSKEEPER_AUTHOR_MODEL",
    help="The model that writes the plan (default: the workers' model);"
    " $GROUNDSKEEPER_AUTHOR_MODEL.",
)
@click.option(
    "--approve",
    is_flag=True,
    help="Show the validated plan and wait for a yes or no before anything runs: at the"
    " terminal, or from `groundskeeper approve DIR`. Without a terminal the run stops with"
    " exit 3 and prints the command that answers it.",
)
@click.option(
    "--max-parallel",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="How many tasks run at once.",
)
@click.option(
    "--require-checks",
    is_flag=True,
    help="Every leaf task needs an acceptance check: the outline is invalid without one, and"
    " a task without one is FAILED.",
)
@attempt_options
@judge_options
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
def run(
    goal: str | None,
    resume_dir: Path | None,
    directory: Path | None,
    model_spec: str | None,
    author_spec: str | None,
    approve: bool,
    max_parallel: int,
    require_checks: bool,
    max_turns: int,
    judge_spec: str | None,
    judge_profile: str,
    breaker: int,
    max_total_attempts: int | None,
    as_json: bool,
) -> None:
    """Give it a goal: an author model writes the plan, workers do it, checks decide.

    The author's outline is validated before anything runs (rung 1, at least one task, and
    under --require-checks a check on every leaf); an invalid outline goes back to the author
    once, with the validator's own diagnostics. A second invalid outline ends the run (exit
    1) with both kept beside the plan. The valid plan is written to DIR/plan.org and run as
    `groundskeeper resume` would: a task is DONE only when its check passes in the sandbox.
    Every step is sealed in the plan's signed ledger; the graph is checkpointed in the plan's
    control directory, so a killed run continues with `run --resume DIR`.

    \b
    Examples:
      groundskeeper run "write a haiku into haiku.txt" --model anthropic:claude-sonnet-4-5
      groundskeeper run "GOAL" --model scripted:mission.yaml --dir work --approve
      groundskeeper run --resume work

    Exit 0 when every task is DONE, 1 when a task is not, the outline stayed invalid, the
    plan was not approved or the model stayed unavailable (the run is resumable), 2 for bad
    input, 3 when the run waits for an approval.
    """
    from groundskeeper.record.control import ControlDir
    from groundskeeper.supervisor.graph import MissionFile
    from groundskeeper.supervisor.runner import new_run_id

    if (goal is None) == (resume_dir is None):
        fail_usage('give a goal (`groundskeeper run "GOAL"`) or --resume DIR, not both or neither')
    if resume_dir is not None:
        if directory is not None:
            fail_usage("--dir and --resume both name the directory; pass only --resume DIR")
        where = resume_dir
        control = ControlDir.for_plan(where / PLAN_NAME)
        try:
            mission_file = MissionFile.read(control)
        except GroundskeeperError as exc:
            fail_usage(str(exc))
        if model_spec:
            mission_file.model = model_spec
        if author_spec:
            mission_file.author_model = author_spec
        if judge_spec:
            mission_file.judge_model = judge_spec
        if judge_profile != "auto":  # the default does not undo a profile chosen at start
            mission_file.judge_profile = judge_profile
    else:
        assert goal is not None
        if not goal.strip():
            fail_usage('the goal is empty; say what you want done: groundskeeper run "GOAL"')
        if not model_spec:
            fail_usage(
                "no model: pass --model anthropic:MODEL or --model scripted:FILE (or set"
                " GROUNDSKEEPER_MODEL)"
            )
        where = directory if directory is not None else _directory_for(goal)
        _claim_directory(where)
        control = ControlDir.for_plan(where / PLAN_NAME)
        mission_file = MissionFile(
            thread_id=new_run_id(),
            goal=goal,
            model=model_spec,
            author_model=author_spec or model_spec,
            require_checks=require_checks,
            approve=approve,
            max_parallel=max_parallel,
            judge_model=judge_spec,
            judge_profile=judge_profile,
        )
    outcome = _drive(
        where,
        control,
        mission_file,
        max_turns,
        fresh=resume_dir is None,
        breaker=breaker,
        max_total_attempts=max_total_attempts,
    )
    if as_json:
        emit_json(outcome.to_json())
    else:
        outcome.print()
    sys.exit(outcome.exit_code)


@dataclass
class _Outcome:
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


def _drive(
    where: Path,
    control: ControlDir,
    mission_file: MissionFile,
    max_turns: int,
    *,
    fresh: bool,
    breaker: int = 3,
    max_total_attempts: int | None = None,
) -> _Outcome:
    """Run (or continue) the graph under the plan's lock; answer an approval if one waits."""
    from groundskeeper.models import load_model
    from groundskeeper.models.model import ModelCallError
    from groundskeeper.supervisor.graph import (
        Mission,
        ModelWentAway,
        build_graph,
        checkpointer,
        config_for,
    )
    from groundskeeper.supervisor.runner import RunOptions

    try:
        worker_model = load_model(mission_file.model)
        author_model = (
            worker_model
            if mission_file.author_model == mission_file.model
            else load_model(mission_file.author_model)
        )
    except GroundskeeperError as exc:
        fail_usage(str(exc))
    options = RunOptions(
        max_parallel=mission_file.max_parallel,
        require_checks=mission_file.require_checks,
        max_turns=max_turns,
        judge_profile=mission_file.judge_profile,
        breaker=breaker,
        max_total_attempts=max_total_attempts,
    )
    plan_path = where / PLAN_NAME
    with plan_lock(plan_path) as lock, Progress() as progress:
        try:
            control.ensure()
        except GroundskeeperError as exc:
            fail_usage(str(exc))
        if fresh:
            mission_file.write(control)
        telemetry = open_telemetry(control)
        mission = Mission(
            plan_path=plan_path,
            control=control,
            author_model=_Counted(author_model, progress),
            worker_model=_Counted(worker_model, progress),
            options=options,
            approve=mission_file.approve,
            open_recorder=lambda run_id: open_ledger(control, run_id),
            telemetry=telemetry,
            run_lock=lock,
            on_event=lambda event: _narrate_mission(progress, event),
            on_run_event=lambda event: _narrate_run(progress, event),
            load_judge=lambda plan: load_judge(
                plan, mission_file.judge_model, mission_file.model, mission_file.judge_profile
            ),
        )
        config = config_for(mission_file.thread_id)
        try:
            with checkpointer(control) as saver:
                graph = build_graph(mission, saver)
                try:
                    outcome = _advance(graph, config, mission, mission_file, fresh, progress)
                except ModelWentAway as exc:
                    state = {**graph.get_state(config).values, "report": exc.report.to_json()}
                    outcome = _Outcome(where, mission_file.thread_id, state, None)
        except UsageError as exc:
            mission.end_goal_run(False, f"stopped: {exc}")
            fail_usage(str(exc))
        except ModelCallError as exc:
            mission.end_goal_run(False, f"stopped: model unavailable: {exc}")
            progress.say(f"groundskeeper: the author's model unavailable: {exc}")
            progress.say(f"the run is resumable: groundskeeper run --resume {where}")
            sys.exit(EXIT_FINDINGS)
        except GroundskeeperError as exc:
            mission.end_goal_run(False, f"stopped: {exc}")
            progress.say(f"groundskeeper: {exc}")
            progress.say(f"the run is resumable: groundskeeper run --resume {where}")
            sys.exit(EXIT_FINDINGS)
        finally:
            telemetry.close()
        if outcome.waiting is None:
            _narrate_end(progress, outcome.state, where)
    return outcome


def _advance(
    graph: Any,
    config: Any,
    mission: Mission,
    mission_file: MissionFile,
    fresh: bool,
    progress: Progress,
) -> _Outcome:
    """Start the graph, or continue it where it stopped; answer approvals while they wait."""
    from langgraph.types import Command

    from groundskeeper.supervisor.graph import pending_approval, pending_gates

    where = mission.plan_path.parent
    snapshot = graph.get_state(config)
    pending = pending_approval(graph, mission_file.thread_id)
    if pending is None and pending_gates(graph, mission_file.thread_id):
        pass  # task gates wait: answered below
    elif pending is None and (fresh or not snapshot.values):
        graph.invoke({"goal": mission_file.goal, "attempts": []}, config, durability="sync")
    elif pending is None and snapshot.next:
        progress.say(f"continuing at {', '.join(snapshot.next)}")
        graph.invoke(None, config, durability="sync")
    elif pending is None and snapshot.values.get("outcome") == "ran":
        # the plan ran before: run it again from execute (its DONE tasks are skipped)
        progress.say(f"continuing the plan {mission.plan_path} (its DONE tasks are skipped)")
        graph.update_state(config, {}, as_node="seal")
        graph.invoke(None, config, durability="sync")
    while True:
        pending = pending_approval(graph, mission_file.thread_id)
        if pending is None:
            gates = pending_gates(graph, mission_file.thread_id)
            if not gates:
                break
            answers = {
                interrupt_id: answer
                for interrupt_id, value in gates
                if (answer := _await_gate_answer(mission.control, interrupt_id, value, progress))
                is not None
            }
            if not answers:
                return _waiting_at_gates(graph, config, mission, mission_file, gates, progress)
            graph.invoke(Command(resume=answers), config, durability="sync")
            continue
        interrupt_id, value = pending
        answer = _await_answer(mission.control, interrupt_id, value, progress)
        if answer is None:
            mission.end_goal_run(False, "waiting for approval")
            command = f"groundskeeper approve {where} --yes|--no"
            progress.say(
                f"waiting for approval: answer with `{command}`, then continue with"
                f" `groundskeeper run --resume {where}`"
            )
            waiting: dict[str, Any] = {
                "interrupt_id": interrupt_id,
                "plan_sha256": value.get("plan_sha256"),
                "command": command,
                "gates": [],
            }
            state = dict(graph.get_state(config).values)
            return _Outcome(where, mission_file.thread_id, state, waiting)
        graph.invoke(Command(resume={interrupt_id: answer}), config, durability="sync")
    return _Outcome(where, mission_file.thread_id, dict(graph.get_state(config).values), None)


def _waiting_at_gates(
    graph: Any,
    config: Any,
    mission: Mission,
    mission_file: MissionFile,
    gates: list[tuple[str, dict[str, Any]]],
    progress: Progress,
) -> _Outcome:
    """The run stops (exit 3) with tasks at their approval gates, each named with the command
    that answers it."""
    where = mission.plan_path.parent
    mission.end_goal_run(False, "waiting for approval")
    listed = []
    for interrupt_id, value in gates:
        task_id = str(value.get("task_id"))
        command = (
            f"groundskeeper approve {where} --task {_quoted(task_id)} --yes|--no|--revise NOTE"
        )
        files = ", ".join(str(f.get("path")) for f in value.get("files") or []) or "none"
        progress.say(f"waiting for approval: {value.get('title')} ({files}): `{command}`")
        listed.append({
            "interrupt_id": interrupt_id,
            "task_id": task_id,
            "title": value.get("title"),
            "gate_id": value.get("gate_id"),
            "artifacts_sha256": value.get("artifacts_sha256"),
            "files": value.get("files") or [],
            "command": command,
        })  # fmt: skip
    nxt = f"groundskeeper run --resume {where}"
    progress.say(f"then continue with `{nxt}`")
    waiting = {"interrupt_id": None, "plan_sha256": None, "command": nxt, "gates": listed}
    state = dict(graph.get_state(config).values)
    return _Outcome(where, mission_file.thread_id, state, waiting)


def _quoted(text: str) -> str:
    import shlex

    return shlex.quote(text)


def gate_answer_path(control: ControlDir, task_id: str) -> Path:
    """Where `groundskeeper approve --task` leaves its answer for one task's gate."""
    digest = hashlib.sha256(task_id.encode("utf-8")).hexdigest()[:16]
    return control.path / f"gate-{digest}.json"


def _await_gate_answer(
    control: ControlDir, interrupt_id: str, value: dict[str, Any], progress: Progress
) -> dict[str, Any] | None:
    """The answer to one task's gate: from `groundskeeper approve --task` or, on a terminal,
    typed y, n or r (then a note); None when there is no one to ask."""
    path = gate_answer_path(control, str(value.get("task_id")))
    answer = _read_gate_answer(path, interrupt_id, value)
    if answer is not None or not (sys.stdin.isatty() and sys.stderr.isatty()):
        return answer
    files = "\n".join(f"  {f.get('path')}  {f.get('sha256')}" for f in value.get("files") or [])
    progress.say(f"the task `{value.get('title')}` passed its check and waits for you:\n{files}")
    progress.say("approve it? [y]es / [n]o (abort) / [r]evise")
    while True:
        readable, _, _ = select.select([sys.stdin], [], [], ANSWER_POLL)
        if readable:
            typed = sys.stdin.readline().strip().lower()
            if typed in ("y", "yes", "n", "no", "r", "revise"):
                decision = {"y": "yes", "n": "no", "r": "revise"}[typed[0]]
                note = ""
                if decision == "revise":
                    progress.say("the note for the worker (one line):")
                    note = sys.stdin.readline().strip()
                return _gate_answer(interrupt_id, value, decision, note, "terminal")
            if typed == "" and sys.stdin.closed:
                return None
            progress.say("answer y, n or r")
        answer = _read_gate_answer(path, interrupt_id, value)
        if answer is not None:
            return answer


def _gate_answer(
    interrupt_id: str, value: dict[str, Any], decision: str, note: str, by: str
) -> dict[str, Any]:
    return {
        "interrupt_id": interrupt_id,
        "task_id": value.get("task_id"),
        "gate_id": value.get("gate_id"),
        "artifacts_sha256": value.get("artifacts_sha256"),
        "decision": decision,
        "note": note,
        "by": by,
        "answered_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def _read_gate_answer(
    path: Path, interrupt_id: str, value: dict[str, Any]
) -> dict[str, Any] | None:
    """A `groundskeeper approve --task` answer, consumed only if it is bound to this interrupt
    and this gate; any other answer is refused (exit 2), never applied."""
    try:
        answer = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: unreadable approval ({exc}); answer again") from exc
    if not isinstance(answer, dict):
        raise UsageError(f"{path}: unreadable approval; answer again")
    if answer.get("interrupt_id") != interrupt_id or answer.get("gate_id") != value.get("gate_id"):
        raise UsageError(
            f"stale approval refused for task {value.get('task_id')}: it answers interrupt"
            f" {answer.get('interrupt_id')} (gate {answer.get('gate_id')}), but the task waits"
            f" at interrupt {interrupt_id} (gate {value.get('gate_id')}); answer again with"
            " `groundskeeper approve DIR --task ID --yes|--no|--revise NOTE`"
        )
    path.unlink()
    return answer


@dataclass
class _Counted:
    """A model whose calls' tokens count on the live progress line; otherwise the model."""

    model: Model
    progress: Progress

    @property
    def name(self) -> str:
        return self.model.name

    def respond(self, request: ModelRequest) -> AssistantTurn:
        reply = self.model.respond(request)
        if reply.usage is not None:
            self.progress.add_tokens(reply.usage.input_tokens + reply.usage.output_tokens)
        return reply


def _await_answer(
    control: ControlDir, interrupt_id: str, value: dict[str, Any], progress: Progress
) -> dict[str, Any] | None:
    """The approval for the waiting interrupt: from `groundskeeper approve` (a file in the
    control directory) or, on a terminal, typed y/n; None when there is no one to ask."""
    path = control.path / APPROVAL_FILE
    answer = _read_answer(path, interrupt_id, value)
    if answer is not None:
        return answer
    interactive = sys.stdin.isatty() and sys.stderr.isatty()
    if not interactive:
        return None
    progress.say("the plan, for approval:\n")
    progress.say(str(value.get("outline", "")))
    progress.say(
        f"approve it? [y/n] (or from elsewhere: groundskeeper approve {control.root.parent}"
        " --yes|--no)"
    )
    while True:
        readable, _, _ = select.select([sys.stdin], [], [], ANSWER_POLL)
        if readable:
            typed = sys.stdin.readline().strip().lower()
            if typed in ("y", "yes", "n", "no"):
                return {
                    "interrupt_id": interrupt_id,
                    "plan_sha256": value.get("plan_sha256"),
                    "decision": "yes" if typed.startswith("y") else "no",
                    "by": "terminal",
                }
            if typed == "" and sys.stdin.closed:
                return None
            progress.say("answer y or n")
        answer = _read_answer(path, interrupt_id, value)
        if answer is not None:
            return answer


def _read_answer(path: Path, interrupt_id: str, value: dict[str, Any]) -> dict[str, Any] | None:
    """A `groundskeeper approve` answer, consumed only if it is bound to this interrupt and
    this plan; any other answer is refused (exit 2), never applied."""
    try:
        answer = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: unreadable approval ({exc}); answer again") from exc
    if not isinstance(answer, dict):
        raise UsageError(f"{path}: unreadable approval; answer again")
    if answer.get("interrupt_id") != interrupt_id or answer.get("plan_sha256") != value.get(
        "plan_sha256"
    ):
        raise UsageError(
            "stale approval refused: it answers interrupt"
            f" {answer.get('interrupt_id')} (plan {str(answer.get('plan_sha256'))[:12]}), but"
            f" the run waits at interrupt {interrupt_id} (plan"
            f" {str(value.get('plan_sha256'))[:12]}); answer again with `groundskeeper approve"
            " DIR --yes|--no`"
        )
    path.unlink()
    return answer


@click.command("approve")
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--task",
    "task_id",
    help="Answer this task's approval gate (`:gate: approval`), not the plan's approval.",
)
@click.option("--yes", "decision", flag_value="yes", help="Approve the plan (or the task): it runs"
              " (the task is DONE).")  # fmt: skip
@click.option("--no", "decision", flag_value="no", help="Reject it: nothing runs (the task is"
              " FAILED).")  # fmt: skip
@click.option(
    "--revise",
    "note",
    help="With --task: send the task back to its worker with NOTE as feedback (a new attempt,"
    " then its gate again).",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
def approve(
    directory: Path, task_id: str | None, decision: str | None, note: str | None, as_json: bool
) -> None:
    """Answer an approval a `groundskeeper run` waits for in DIR: the plan's, or a task's.

    Without --task it answers the plan's approval (`run --approve`); with --task ID, that
    task's gate (`:gate: approval`): --yes makes it DONE, --no FAILED, --revise NOTE sends it
    back to its worker with the note.

    The answer is bound to the waiting interrupt and to the hash of what it shows (the plan;
    for a task, its gate, its check and its artifacts' contents); the run checks them before
    it applies the answer and seals it in the ledger before it takes effect. An answer for a
    task whose artifacts changed since its gate opened is refused as stale, and the task is
    gated again. An answer when nothing waits is refused (exit 2).

    \b
    Examples:
      groundskeeper approve work --yes && groundskeeper run --resume work
      groundskeeper approve work --task report --revise "cite the source"
    """
    from groundskeeper.record.control import ControlDir
    from groundskeeper.supervisor.graph import (
        MissionFile,
        build_graph,
        checkpointer,
        pending_approval,
        pending_gates,
    )

    if note is not None:
        if decision is not None:
            fail_usage("say one of --yes, --no or --revise NOTE")
        if task_id is None:
            fail_usage("--revise answers a task's gate: pass --task ID")
        if not note.strip():
            fail_usage("--revise needs a note saying what to change")
        decision = "revise"
    if decision is None:
        fail_usage("say --yes or --no" + (" or --revise NOTE" if task_id is not None else ""))
    control = ControlDir.for_plan(directory / PLAN_NAME)
    try:
        mission_file = MissionFile.read(control)
    except GroundskeeperError as exc:
        fail_usage(str(exc))
    with checkpointer(control) as saver:
        graph = build_graph(None, saver)
        pending = pending_approval(graph, mission_file.thread_id)
        gates = pending_gates(graph, mission_file.thread_id)
    nxt = f"groundskeeper run --resume {directory}"
    if task_id is not None:
        found = [(i, v) for i, v in gates if v.get("task_id") == task_id]
        if not found:
            waiting = ", ".join(str(v.get("task_id")) for _, v in gates) or "none"
            fail_usage(
                f"no approval gate of task {task_id!r} is waiting in {directory} (tasks"
                f" waiting: {waiting}); nothing was answered"
            )
        interrupt_id, value = found[0]
        by = f"groundskeeper approve (pid {os.getpid()})"
        answer = _gate_answer(interrupt_id, value, decision, note or "", by)
        from groundskeeper.plan.edit import write_atomically

        write_atomically(gate_answer_path(control, task_id), json.dumps(answer, indent=2) + "\n")
        if as_json:
            emit_json({**answer, "next": nxt})
        else:
            click.echo(
                f"answered {decision} for task {task_id} (gate {value.get('gate_id')}); a"
                f" waiting run goes on, or continue it with `{nxt}`"
            )
        return
    if pending is None:
        hint = (
            f"; tasks wait at their gates ({', '.join(str(v.get('task_id')) for _, v in gates)}):"
            " pass --task ID"
            if gates
            else ""
        )
        fail_usage(f"no approval is waiting in {directory}{hint}; nothing was answered")
    interrupt_id, value = pending
    answer = {
        "interrupt_id": interrupt_id,
        "plan_sha256": value.get("plan_sha256"),
        "decision": decision,
        "by": f"groundskeeper approve (pid {os.getpid()})",
        "answered_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    from groundskeeper.plan.edit import write_atomically

    write_atomically(control.path / APPROVAL_FILE, json.dumps(answer, indent=2) + "\n")
    if as_json:
        emit_json({**answer, "next": nxt})
    else:
        click.echo(
            f"answered {decision} for plan {str(value.get('plan_sha256'))[:12]}; a waiting run"
            f" goes on, or continue it with `{nxt}`"
        )


def _directory_for(goal: str) -> Path:
    """A new folder in the current one, named from the goal's first words."""
    words = re.findall(r"[a-z0-9]+", goal.lower())[:6]
    slug = "-".join(words)[:40].strip("-") or "goal"
    candidate = Path(slug)
    n = 2
    while candidate.exists():
        candidate = Path(f"{slug}-{n}")
        n += 1
    return candidate


def _claim_directory(where: Path) -> None:
    if where.exists() and not where.is_dir():
        fail_usage(f"--dir {where}: exists and is not a folder; pass a new folder")
    if where.is_dir() and any(where.iterdir()):
        fail_usage(
            f"{where} is not empty; pass --dir with a new folder, or continue a run there with"
            f" `groundskeeper run --resume {where}`"
        )
    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        fail_usage(f"cannot create {where}: {exc}")


def _narrate_mission(progress: Progress, event: MissionEvent) -> None:
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


def _narrate_run(progress: Progress, event: RunEvent) -> None:
    if event.kind == "task-start" and event.task_id is not None:
        progress.task_started(event.task_id)
    elif event.kind == "task-end" and event.task_id is not None:
        progress.task_ended(event.task_id)
    progress.say(event_line(event))


def _narrate_end(progress: Progress, state: dict[str, Any], where: Path) -> None:
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
