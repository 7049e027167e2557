"""`groundskeeper run "GOAL"`: the goal-driven front door.

The work happens in `supervisor.graph` (author → validate → one retry → approve → seal →
execute → report); this module picks the directory, wires the models, ledger, telemetry and
checkpointer and drives the graph, handing a waiting approval to `approval` and the outcome to
`goal_report`. Answering from elsewhere is `approve_cmd`'s.
"""

from __future__ import annotations

import re
import sqlite3
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from groundskeeper.cli.approval import await_gate_answer, await_plan_answer
from groundskeeper.cli.goal_report import (
    PLAN_NAME,
    GoalOutcome,
    narrate_end,
    narrate_mission,
    narrate_run,
)
from groundskeeper.cli.many_plans import forwarded, plan_options, run_many
from groundskeeper.cli.output import EXIT_FINDINGS, emit_json, fail_usage
from groundskeeper.cli.progress import Progress
from groundskeeper.cli.run_cmd import (
    attempt_options,
    judge_options,
    load_judge,
    open_ledger,
    open_telemetry,
    plan_lock,
)
from groundskeeper.errors import GroundskeeperError, UsageError

if TYPE_CHECKING:
    from groundskeeper.models.model import AssistantTurn, Model, ModelRequest
    from groundskeeper.record.control import ControlDir
    from groundskeeper.supervisor.graph import Mission, MissionFile

MODEL_HELP = (
    "The workers' model: `anthropic:MODEL` (the Anthropic API; needs ANTHROPIC_API_KEY) or"
    " `scripted:FILE` (a YAML script, offline). Default: $GROUNDSKEEPER_MODEL."
)


@click.command("run")
@click.argument("words", nargs=-1, metavar="[GOAL | DIR…]")
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
@plan_options
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
@click.pass_context
def run(
    ctx: click.Context,
    words: tuple[str, ...],
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
    jobs: int,
    backend: str,
    address: str | None,
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

    `run --resume DIR DIR2 …` continues several goal runs, each in its own process (--jobs
    at a time, or as Ray tasks with --backend ray, never retried by the engine).

    \b
    Examples:
      groundskeeper run "write a haiku into haiku.txt" --model anthropic:claude-sonnet-4-5
      groundskeeper run "GOAL" --model scripted:mission.yaml --dir work --approve
      groundskeeper run --resume work

    Exit 0 when every task is DONE, 1 when a task is not, the outline stayed invalid, the
    plan was not approved or the model stayed unavailable (the run is resumable), 2 for bad
    input, 3 when the run waits for an approval, 130 when Ctrl-C (or SIGTERM) stopped it: its
    sandbox commands end at once, the plan run's end is sealed as interrupted, and the command
    that continues is printed (a second Ctrl-C exits at once).
    """
    from groundskeeper.record.control import ControlDir
    from groundskeeper.supervisor.graph import MissionFile
    from groundskeeper.supervisor.runner import new_run_id

    if resume_dir is not None and (words or backend == "ray"):
        if directory is not None:
            fail_usage("--dir and --resume both name the directory; pass only --resume DIR")
        extra = forwarded(ctx, frozenset({"words", "resume_dir", "directory"}))
        dirs = [str(resume_dir), *words]
        run_many(
            [(d, ["run", "--resume", d, *extra]) for d in dirs],
            jobs=jobs,
            backend=backend,
            address=address,
            as_json=as_json,
        )
    if len(words) > 1:
        fail_usage(f'a goal is one argument: quote it (`groundskeeper run "{" ".join(words)}"`)')
    goal = words[0] if words else None
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


def _drive(
    where: Path,
    control: ControlDir,
    mission_file: MissionFile,
    max_turns: int,
    *,
    fresh: bool,
    breaker: int = 3,
    max_total_attempts: int | None = None,
) -> GoalOutcome:
    """Run (or continue) the graph under the plan's lock; answer an approval if one waits."""
    from groundskeeper.cli.interrupts import EXIT_INTERRUPTED, interruptible
    from groundskeeper.models import load_model
    from groundskeeper.models.model import ModelCallError
    from groundskeeper.supervisor.graph import (
        Mission,
        ModelWentAway,
        RunStopped,
        build_graph,
        checkpointer,
        config_for,
        unreadable_graph,
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
            on_event=lambda event: narrate_mission(progress, event),
            on_run_event=lambda event: narrate_run(progress, event),
            load_judge=lambda plan: load_judge(
                plan, mission_file.judge_model, mission_file.model, mission_file.judge_profile
            ),
        )
        config = config_for(mission_file.thread_id)
        again = f"groundskeeper run --resume {where}"
        try:
            with checkpointer(control) as saver:
                graph = build_graph(mission, saver)
                try:
                    with interruptible(mission.interrupt, again):
                        outcome = _advance(graph, config, mission, mission_file, fresh, progress)
                except ModelWentAway as exc:
                    state = {**graph.get_state(config).values, "report": exc.report.to_json()}
                    outcome = GoalOutcome(where, mission_file.thread_id, state, None)
        except RunStopped as exc:
            mission.end_goal_run(False, f"interrupted: {exc.why}")
            progress.say(f"groundskeeper: {exc}; every task is left resumable")
            progress.say(f"continue with: {again}")
            sys.exit(EXIT_INTERRUPTED)
        except UsageError as exc:
            mission.end_goal_run(False, f"stopped: {exc}")
            fail_usage(str(exc))
        except sqlite3.DatabaseError as exc:  # the graph checkpoint, damaged in a page read late
            mission.end_goal_run(False, "stopped: unreadable graph checkpoint")
            fail_usage(str(unreadable_graph(control, exc)))
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
            narrate_end(progress, outcome.state, where)
    return outcome


def _advance(
    graph: Any,
    config: Any,
    mission: Mission,
    mission_file: MissionFile,
    fresh: bool,
    progress: Progress,
) -> GoalOutcome:
    """Start the graph, or continue it where it stopped; answer approvals while they wait."""
    from langgraph.types import Command

    from groundskeeper.supervisor.graph import pending_approval, pending_gates

    where = mission.plan_path.parent
    snapshot = graph.get_state(config)
    pending = pending_approval(graph, mission_file.thread_id)
    if pending is None and pending_gates(graph, mission_file.thread_id):
        pass  # task gates wait: answered below
    elif pending is None and not fresh and not snapshot.values and _lost_graph(mission, progress):
        # the checkpoint lost the thread, the ledger sealed the plan: continue it from execute
        state = {"goal": mission_file.goal, "attempts": [], "outcome": "ran"}
        graph.update_state(config, state, as_node="seal")
        graph.invoke(None, config, durability="sync")
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
                if (answer := await_gate_answer(mission.control, interrupt_id, value, progress))
                is not None
            }
            if not answers:
                return _waiting_at_gates(graph, config, mission, mission_file, gates, progress)
            graph.invoke(Command(resume=answers), config, durability="sync")
            continue
        interrupt_id, value = pending
        answer = await_plan_answer(mission.control, interrupt_id, value, progress)
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
            return GoalOutcome(where, mission_file.thread_id, state, waiting)
        graph.invoke(Command(resume={interrupt_id: answer}), config, durability="sync")
    return GoalOutcome(where, mission_file.thread_id, dict(graph.get_state(config).values), None)


def _lost_graph(mission: Mission, progress: Progress) -> bool:
    """Resumed, and the graph checkpoint holds nothing of this run (lost, or moved aside):
    True when the ledger sealed a plan, which the run continues (the author is never asked
    again); False when none was sealed and no plan file is there (the run starts from its
    goal: nothing was sealed to lose). A plan file the ledger never sealed is refused."""
    from groundskeeper.supervisor.graph import GRAPH_DB, sealed_plan

    control, plan = mission.control, mission.plan_path
    sealed = sealed_plan(control)
    if sealed is not None and plan.exists():
        progress.say(
            f"the graph checkpoint {control.path / GRAPH_DB} holds nothing of this run;"
            f" continuing the plan {plan} sealed in the ledger (plan {sealed[:12]}; the author"
            " is not asked again, its DONE tasks are skipped)"
        )
        return True
    if sealed is not None:
        raise UsageError(
            f"{plan}: the plan this run sealed (plan {sealed[:12]}) is missing; put it back"
            f" and continue with `groundskeeper run --resume {plan.parent}`"
        )
    if plan.exists():
        raise UsageError(
            f"{control.path / GRAPH_DB} holds nothing of this run and its ledger seals no plan,"
            f" but {plan} exists: continue it with `groundskeeper resume {plan}`, or move it"
            f" aside to start again from the goal with `groundskeeper run --resume {plan.parent}`"
        )
    return False


def _waiting_at_gates(
    graph: Any,
    config: Any,
    mission: Mission,
    mission_file: MissionFile,
    gates: list[tuple[str, dict[str, Any]]],
    progress: Progress,
) -> GoalOutcome:
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
    return GoalOutcome(where, mission_file.thread_id, state, waiting)


def _quoted(text: str) -> str:
    import shlex

    return shlex.quote(text)


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
