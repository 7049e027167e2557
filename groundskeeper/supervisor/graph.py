"""The supervisor as a LangGraph `StateGraph`: author → validate → (author once more | approve |
seal) → execute → report, checkpointed in the plan's control directory.

State is JSON-native (the goal, the outline attempts with their diagnostics, the approval,
the report); what is not state — the models, the ledger, narration — comes in a `Mission`.
The runner (`runner.py`) does the work of the execute node; the plan file stays the state of
the work, so a killed run continues without calling the author again. The CLI lives in
`cli/goal_cmd.py`.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypedDict

from groundskeeper.acceptance.check import sha256_text
from groundskeeper.diagnostics import Diagnostic
from groundskeeper.errors import GroundskeeperError, UsageError
from groundskeeper.models.model import Model, ModelCallError
from groundskeeper.plan.edit import write_atomically
from groundskeeper.record.control import ControlDir
from groundskeeper.supervisor.author import AuthorReply, ask_author, retry_message, validate_outline

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig
    from langgraph.graph.state import CompiledStateGraph

    from groundskeeper.plan.org import Plan
    from groundskeeper.record.control import RunLock
    from groundskeeper.record.telemetry import Telemetry
    from groundskeeper.supervisor.runner import RunEvent, Runner, RunOptions, RunReport
    from groundskeeper.supervisor.sealing import StepRecorder

__all__ = [
    "GRAPH_DB",
    "MISSION_FILE",
    "RECURSION_LIMIT",
    "ApprovalRefused",
    "Mission",
    "MissionEvent",
    "MissionFile",
    "MissionState",
    "ModelWentAway",
    "RunStopped",
    "build_graph",
    "checkpointer",
    "config_for",
    "pending_approval",
    "pending_gates",
    "sealed_plan",
    "unreadable_graph",
]

GRAPH_DB = "_graph.db"
MISSION_FILE = "mission.json"
#: author, validate, author, validate, approve, seal, execute, report: eight steps at most,
#: and two more (gate, execute) for each round of task approvals a person answers; the limit
#: leaves room for a few dozen rounds and still stops a routing bug.
RECURSION_LIMIT = 96
MAX_OUTLINES = 2  # the first outline and exactly one retry


class ModelWentAway(GroundskeeperError):
    """The workers' model stayed unavailable during execute: the plan run stopped with tasks
    left resumable. Raised so the graph does not record execute as done, and a resumed run
    executes again."""

    def __init__(self, report: RunReport) -> None:
        super().__init__(report.model_unavailable or "model unavailable")
        self.report = report


class RunStopped(KeyboardInterrupt):
    """A person or a process manager asked the run to stop (SIGINT, SIGTERM). Raised so the
    graph does not record the step in flight as done: a resumed run does it again. `report`
    is the plan run's, its end sealed as interrupted, when the stop came during execute.
    An interrupt, as Ctrl-C's own exception is, so no `except Exception` on the way (the
    model client's retries) takes it for a failed call."""

    def __init__(self, why: str, report: RunReport | None = None) -> None:
        super().__init__(f"stopped by {why}")
        self.why = why
        self.report = report


class ApprovalRefused(UsageError):
    """An approval answer that does not belong to the waiting interrupt or the plan."""


class Attempt(TypedDict):
    n: int
    reply: str
    outline: str
    reply_sha256: str
    outline_sha256: str
    stop_reason: str
    failure: str | None
    usage: dict[str, Any] | None
    diagnostics: list[dict[str, Any]] | None  # None until validated
    retry: str | None  # the retry message that asked for this outline


def _gather_answers(before: dict[str, Any] | None, update: dict[str, Any] | None) -> dict[str, Any]:
    """Task gates' answers, one per task, written by parallel gate nodes; execute takes
    them all and clears them (an update of None)."""
    if update is None:
        return {}
    return {**(before or {}), **update}


class MissionState(TypedDict, total=False):
    goal: str
    attempts: list[Attempt]
    outcome: Literal["invalid", "rejected", "ran"]
    plan_sha256: str
    approval: dict[str, Any]
    report: dict[str, Any]
    # task id → a person's answer to its gate, until the next execute applies it
    gate_answers: Annotated[dict[str, Any], _gather_answers]


MissionEventKind = Literal[
    "author", "outline", "retry", "approval", "sealed", "execute", "gate-answer"
]


@dataclass(frozen=True, slots=True)
class MissionEvent:
    """Progress for a narrator: one graph step done."""

    kind: MissionEventKind
    attempt: int = 0
    ok: bool | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    detail: str = ""


@dataclass
class MissionFile:
    """`mission.json` in the plan's control directory: what `run --resume DIR` needs to find
    the graph's thread and rebuild the same mission."""

    thread_id: str
    goal: str
    model: str
    author_model: str
    require_checks: bool
    approve: bool
    max_parallel: int
    judge_model: str | None = None  # `--judge-model` as given (None: the default)
    judge_profile: str = "auto"

    @classmethod
    def read(cls, control: ControlDir) -> MissionFile:
        path = control.path / MISSION_FILE
        optional = {"judge_model", "judge_profile"}  # absent from an earlier version's file
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            fields = [k for k in cls.__dataclass_fields__ if k in data or k not in optional]
            return cls(**{k: data[k] for k in fields})
        except FileNotFoundError:
            raise UsageError(
                f"{control.plan_path.parent}: no goal-driven run was started here (no"
                f' {path}); start one with `groundskeeper run "GOAL"`, or continue a plan'
                " with `groundskeeper resume PLAN`"
            ) from None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{path}: unreadable mission file ({exc}); start a new run") from exc

    def write(self, control: ControlDir) -> None:
        write_atomically(control.path / MISSION_FILE, json.dumps(self.__dict__, indent=2) + "\n")


@dataclass
class Mission:
    """What the graph's nodes use that is not state. One per process."""

    plan_path: Path
    control: ControlDir
    author_model: Model
    worker_model: Model
    options: RunOptions
    approve: bool
    open_recorder: Callable[[str], StepRecorder]  # a run id → the plan's signed ledger
    telemetry: Telemetry | None = None
    run_lock: RunLock | None = None
    on_event: Callable[[MissionEvent], None] | None = None
    on_run_event: Callable[[RunEvent], None] | None = None
    # the judge model for the plan as sealed (None: no task is judged); called at execute
    load_judge: Callable[[Plan], Model | None] | None = None
    last_report: RunReport | None = field(default=None, init=False)
    _goal_run: _GoalRun | None = field(default=None, init=False)
    # the plan run in flight (execute), which a stop asks to end and seal
    _runner: Runner | None = field(default=None, init=False)

    @property
    def require_checks(self) -> bool:
        return self.options.require_checks

    def seal(self, step: str, body: dict[str, Any], goal: str) -> None:
        """A graph step into this process's goal run (opened at its first step)."""
        if self._goal_run is None:
            self._goal_run = _GoalRun.open(self, goal)
        self._goal_run.record(step, body)

    def end_goal_run(self, ok: bool, outcome: str) -> None:
        if self._goal_run is not None:
            self._goal_run.end(ok, outcome)
            self._goal_run = None

    def emit(self, event: MissionEvent) -> None:
        if self.on_event is not None:
            self.on_event(event)

    def interrupt(self, why: str) -> None:
        """Stop (`why`: the signal's name), from a signal handler in the main thread. During
        execute the plan run ends its sandbox commands at once and seals its end as
        interrupted, and execute raises RunStopped when it returns; between plan runs (the
        author's call, validation) the step in flight is abandoned here, unrecorded."""
        if self._runner is not None:
            self._runner.interrupt(why)
            return
        raise RunStopped(why)


@dataclass
class _GoalRun:
    """The ledger run that holds one process's graph steps (`run-start` with `kind` "goal");
    the plan runs the execute node starts are runs of their own."""

    seal: Any  # sealing.RunSeal; typed loosely to keep sealing (and wasmtime) off import

    @classmethod
    def open(cls, mission: Mission, goal: str) -> _GoalRun:
        from groundskeeper import __version__
        from groundskeeper.supervisor.runner import new_run_id
        from groundskeeper.supervisor.sealing import RunSeal

        run_id = new_run_id()
        seal = RunSeal(mission.open_recorder(run_id), run_id)
        seal.record(
            "run-start",
            {
                "kind": "goal",
                "goal_sha256": sha256_text(goal),
                "goal": goal if len(goal) <= 4096 else goal[:4096] + "…",
                "plan": str(mission.plan_path),
                "author_model": mission.author_model.name,
                "model": mission.worker_model.name,
                "require_checks": mission.require_checks,
                "approve": mission.approve,
                "versions": {"groundskeeper": __version__},
            },
        )
        return cls(seal)

    def record(self, step: str, body: dict[str, Any]) -> None:
        self.seal.record(step, body)

    def end(self, ok: bool, outcome: str) -> None:
        self.seal.record(
            "run-end",
            {"ok": ok, "states": [], "tampers": 0, "outcome": outcome},
            opens_work=False,
        )


def build_graph(mission: Mission | None, saver: Any) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The supervisor graph for `mission`, checkpointed by `saver` (see `checkpointer`).

    Without a mission the graph can only be read (`pending_approval`): what `approve` needs,
    which never runs a node."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import interrupt

    def need() -> Mission:
        if mission is None:
            raise GroundskeeperError("this graph was built to be read, not run")
        return mission

    def author(state: MissionState) -> dict[str, Any]:
        mission = need()
        goal = state["goal"]
        attempts = list(state.get("attempts", []))
        history = [(a["reply"], _retry_for(a)) for a in attempts]
        retry = history[-1][1] if history else None
        n = len(attempts) + 1
        if retry is not None:
            mission.seal(
                "outline-retry",
                {"attempt": n, "message_sha256": sha256_text(retry), "message": _clip(retry)},
                goal,
            )
            mission.emit(MissionEvent("retry", n, detail=retry))
        try:
            reply = ask_author(mission.author_model, goal, history)
        except ModelCallError as exc:
            failed = exc.usage.to_json() if exc.usage is not None else None
            mission.seal(
                "author-call",
                {"attempt": n, "model": mission.author_model.name, "stop_reason": None,
                 "error": f"model unavailable: {exc}", "usage": failed},
                goal,
            )  # fmt: skip
            raise
        mission.seal("author-call", _author_step(n, mission.author_model.name, reply), goal)
        mission.emit(MissionEvent("author", n, detail=reply.stop_reason))
        attempts.append(_attempt(n, reply, retry))
        return {"attempts": attempts}

    def validate(state: MissionState) -> dict[str, Any]:
        mission = need()
        attempts = list(state["attempts"])
        last: Attempt = {**attempts[-1]}
        if last["failure"] is not None:
            found = [Diagnostic("error", "outline", last["failure"], None, "A002")]
        else:
            found = validate_outline(last["outline"], require_checks=mission.require_checks)
        last["diagnostics"] = [d.to_json() for d in found]
        attempts[-1] = last
        mission.seal(
            "outline-check",
            {
                "attempt": last["n"],
                "outline_sha256": last["outline_sha256"],
                "ok": not found,
                "diagnostics": last["diagnostics"],
            },
            state["goal"],
        )
        mission.emit(MissionEvent("outline", last["n"], not found, tuple(found)))
        update: dict[str, Any] = {"attempts": attempts}
        if found and len(attempts) >= MAX_OUTLINES:
            _keep_rejected_outlines(mission.plan_path, attempts)
            mission.end_goal_run(False, "invalid")
            update["outcome"] = "invalid"
        return update

    def after_validate(state: MissionState) -> str:
        if state.get("outcome") == "invalid":
            return "report"
        if state["attempts"][-1]["diagnostics"]:
            return "author"
        return "approve" if need().approve else "seal"

    def approve(state: MissionState) -> dict[str, Any]:
        mission = need()
        outline = state["attempts"][-1]["outline"]
        plan_sha = sha256_text(outline)
        answer = interrupt({"kind": "approval", "plan_sha256": plan_sha, "outline": outline})
        if not isinstance(answer, dict) or answer.get("plan_sha256") != plan_sha:
            raise ApprovalRefused(
                "the approval answers a different plan than the one waiting; answer again"
                " with `groundskeeper approve DIR --yes|--no`"
            )
        decision = answer.get("decision")
        if decision not in ("yes", "no"):
            raise ApprovalRefused(f"an approval is yes or no, not {decision!r}")
        mission.seal(
            "approval",
            {
                "interrupt_id": str(answer.get("interrupt_id")),
                "plan_sha256": plan_sha,
                "decision": decision,
                "by": str(answer.get("by", "")),
            },
            state["goal"],
        )
        mission.emit(MissionEvent("approval", ok=decision == "yes", detail=str(decision)))
        update: dict[str, Any] = {"approval": dict(answer)}
        if decision == "no":
            mission.end_goal_run(False, "rejected")
            update["outcome"] = "rejected"
        return update

    def after_approve(state: MissionState) -> str:
        return "report" if state.get("outcome") == "rejected" else "seal"

    def seal(state: MissionState) -> dict[str, Any]:
        mission = need()
        last = state["attempts"][-1]
        outline = last["outline"]
        _write_plan(mission.plan_path, outline)
        plan_sha = sha256_text(outline)
        mission.seal(
            "plan-sealed",
            {"plan": str(mission.plan_path), "plan_sha256": plan_sha, "attempt": last["n"]},
            state["goal"],
        )
        mission.emit(MissionEvent("sealed", last["n"], True, detail=str(mission.plan_path)))
        return {"plan_sha256": plan_sha}

    def execute(state: MissionState) -> dict[str, Any]:
        mission = need()
        mission.end_goal_run(True, "sealed")
        report = _execute(mission, state.get("gate_answers") or {})
        if report.interrupted is not None:
            raise RunStopped(report.interrupted, report)
        if report.model_unavailable is not None:
            raise ModelWentAway(report)
        return {"report": report.to_json(), "outcome": "ran", "gate_answers": None}

    def after_execute(state: MissionState) -> Any:
        from langgraph.types import Send

        waiting = (state.get("report") or {}).get("waiting") or []
        if not waiting:
            return "report"
        # one gate node per waiting task: each its own interrupt (and id), answered in any order
        return [Send("gate", dict(w)) for w in waiting]

    def gate(opened: dict[str, Any]) -> dict[str, Any]:  # a Send payload, not the state
        answer = interrupt({"kind": "gate", **opened})
        task_id = str(opened.get("task_id"))
        refused = _gate_refusal(answer, opened)
        kept = dict(answer) if isinstance(answer, dict) else {}
        kept["refused"] = refused
        mission = need()
        decision = str(kept.get("decision"))
        mission.emit(
            MissionEvent("gate-answer", ok=refused is None, detail=f"{task_id}: {decision}")
        )
        return {"gate_answers": {task_id: kept}}

    def report(state: MissionState) -> dict[str, Any]:
        return {}

    builder: StateGraph[MissionState, Any, MissionState, MissionState] = StateGraph(MissionState)
    builder.add_node("author", author)
    builder.add_node("validate", validate)
    builder.add_node("approve", approve)
    builder.add_node("seal", seal)
    builder.add_node("execute", execute)
    builder.add_node("gate", gate)  # type: ignore[arg-type]  # takes a Send payload, not state
    builder.add_node("report", report)
    builder.add_edge(START, "author")
    builder.add_edge("author", "validate")
    builder.add_conditional_edges(
        "validate", after_validate, ["author", "approve", "seal", "report"]
    )
    builder.add_conditional_edges("approve", after_approve, ["seal", "report"])
    builder.add_edge("seal", "execute")
    builder.add_conditional_edges("execute", after_execute, ["gate", "report"])
    builder.add_edge("gate", "execute")
    builder.add_edge("report", END)
    return builder.compile(checkpointer=saver)


@contextlib.contextmanager
def checkpointer(control: ControlDir) -> Iterator[Any]:
    """The graph's `SqliteSaver`, its database in the plan's control directory. A database
    sqlite cannot read is a `UsageError` naming it and the way on (`unreadable_graph`)."""
    from langgraph.checkpoint.sqlite import SqliteSaver

    path = control.path / GRAPH_DB
    try:
        conn = sqlite3.connect(path, check_same_thread=False)
    except sqlite3.Error as exc:
        raise unreadable_graph(control, exc) from None
    try:
        saver = SqliteSaver(conn)
        try:
            saver.setup()  # reads the schema now: a damaged file is named here, not mid-run
        except sqlite3.DatabaseError as exc:
            raise unreadable_graph(control, exc) from None
        yield saver
    finally:
        conn.close()


def unreadable_graph(control: ControlDir, exc: Exception) -> UsageError:
    """A damaged graph checkpoint: what it is, and the way on (moved aside, the next `run
    --resume` rebuilds the run from the plan sealed in the ledger)."""
    path = control.path / GRAPH_DB
    where = control.plan_path.parent
    return UsageError(
        f"{path}: unreadable graph checkpoint ({exc}); move it aside (`mv {path}"
        f" {path}.damaged`) and continue with `groundskeeper run --resume {where}`: a plan"
        " sealed in the ledger is continued without asking the author again"
    )


def sealed_plan(control: ControlDir) -> str | None:
    """The sha256 of the last plan a goal run sealed (`plan-sealed`) in the plan's ledger, or
    None when it seals none (or there is no ledger). What a run whose graph checkpoint was
    lost continues from: the plan file, not a new outline."""
    from groundskeeper.record.ledger import read_steps
    from groundskeeper.record.ledger_format import LedgerUnreadable

    try:
        steps = read_steps(control.ledger)
    except (LedgerUnreadable, OSError):
        return None
    found = None
    for _, obj in steps:
        body = obj.get("body") if obj is not None else None
        if obj is not None and obj.get("step") == "plan-sealed" and isinstance(body, dict):
            found = str(body.get("plan_sha256"))
    return found


def config_for(thread_id: str) -> RunnableConfig:
    """The graph's config for one thread: the thread id and an explicit recursion limit."""
    from langchain_core.runnables import RunnableConfig

    return RunnableConfig(configurable={"thread_id": thread_id}, recursion_limit=RECURSION_LIMIT)


def pending_approval(graph: Any, thread_id: str) -> tuple[str, dict[str, Any]] | None:
    """The interrupt the thread waits at (its id and value), or None when none waits."""
    snapshot = graph.get_state(config_for(thread_id))
    for waiting in snapshot.interrupts:
        value = waiting.value
        if isinstance(value, dict) and value.get("kind") == "approval":
            return str(waiting.id), value
    return None


def pending_gates(graph: Any, thread_id: str) -> list[tuple[str, dict[str, Any]]]:
    """The task gates the thread waits at: (interrupt id, value), in the plan's order."""
    snapshot = graph.get_state(config_for(thread_id))
    return [
        (str(waiting.id), waiting.value)
        for waiting in snapshot.interrupts
        if isinstance(waiting.value, dict) and waiting.value.get("kind") == "gate"
    ]


def _gate_refusal(answer: Any, opened: dict[str, Any]) -> str | None:
    """LangGraph hands a node whatever resume value reached it (an answer meant for another
    interrupt included): only one bound to this very gate and its artifacts may apply."""
    if not isinstance(answer, dict):
        return "not an answer to a gate"
    for key in ("task_id", "gate_id", "artifacts_sha256"):
        if answer.get(key) != opened.get(key):
            return f"stale: it answers another gate ({key} differs)"
    return None


def _execute(mission: Mission, answers: dict[str, Any] | None = None) -> RunReport:
    from groundskeeper.acceptance.gates import GateAnswer
    from groundskeeper.plan.lint import validate
    from groundskeeper.plan.org import load_plan
    from groundskeeper.supervisor.runner import Runner, new_run_id

    mission.emit(MissionEvent("execute", detail=str(mission.plan_path)))
    run_id = new_run_id()
    plan = load_plan(mission.plan_path)
    judge = mission.load_judge(plan) if mission.load_judge is not None else None
    runner = Runner(
        plan,
        model=mission.worker_model,
        options=mission.options,
        recorder=mission.open_recorder(run_id),
        telemetry=mission.telemetry,
        on_event=mission.on_run_event,
        run_id=run_id,
        run_lock=mission.run_lock,
        judge_model=judge,
        gate_answers={
            task: GateAnswer.from_json(task, value)
            for task, value in (answers or {}).items()
            if isinstance(value, dict)
        },
    )
    mission._runner = runner
    try:
        report = runner.run(lint=validate)
    finally:
        mission._runner = None
    mission.last_report = report
    return report


def _retry_for(attempt: Attempt) -> str:
    found = [Diagnostic.from_json(d) for d in attempt["diagnostics"] or []]
    return retry_message(found)


def _attempt(n: int, reply: AuthorReply, retry: str | None) -> Attempt:
    return {
        "n": n,
        "reply": reply.text,
        "outline": reply.outline,
        "reply_sha256": reply.reply_sha256,
        "outline_sha256": reply.outline_sha256,
        "stop_reason": reply.stop_reason,
        "failure": reply.failure,
        "usage": reply.usage,
        "diagnostics": None,
        "retry": retry,
    }


def _author_step(n: int, model: str, reply: AuthorReply) -> dict[str, Any]:
    return {
        "attempt": n,
        "model": model,
        "stop_reason": reply.stop_reason,
        "reply_sha256": reply.reply_sha256,
        "outline_sha256": reply.outline_sha256,
        "usage": reply.usage,
    }


def _keep_rejected_outlines(plan_path: Path, attempts: list[Attempt]) -> None:
    """Both invalid outlines beside the plan, for the person to read (never run)."""
    for attempt in attempts:
        target = plan_path.with_name(f"{plan_path.stem}.outline-{attempt['n']}.org")
        write_atomically(target, attempt["outline"])


def _write_plan(path: Path, outline: str) -> None:
    """The sealed plan file. Resumed after a crash it may already hold this outline; a plan
    file holding anything else is never overwritten."""
    try:
        existing = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        existing = None
    if existing is not None and existing != outline:
        raise GroundskeeperError(
            f"{path} exists and differs from the validated outline; move it aside, or continue"
            f" it with `groundskeeper resume {path}`"
        )
    if existing is None:
        write_atomically(path, outline)


def _clip(text: str, limit: int = 4000) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
