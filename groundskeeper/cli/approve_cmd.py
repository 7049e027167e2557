"""`groundskeeper approve DIR`: answer, from another terminal or a script, the approval a
`groundskeeper run` waits for (the plan's, or one task's gate).

It parses the answer, finds what waits in the run's checkpoint and leaves the answer where the
run looks for it (`approval`); the run itself checks the binding and seals it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from pathlib import Path

import click

from groundskeeper.cli.approval import APPROVAL_FILE, gate_answer, gate_answer_path
from groundskeeper.cli.goal_report import PLAN_NAME
from groundskeeper.cli.output import emit_json, fail_usage
from groundskeeper.errors import GroundskeeperError


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
        config_for,
        pending_approval,
        pending_gates,
        unreadable_graph,
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
    nxt = f"groundskeeper run --resume {directory}"
    try:
        with checkpointer(control) as saver:
            graph = build_graph(None, saver)
            pending = pending_approval(graph, mission_file.thread_id)
            gates = pending_gates(graph, mission_file.thread_id)
            kept = bool(graph.get_state(config_for(mission_file.thread_id)).values)
    except GroundskeeperError as exc:
        fail_usage(str(exc))
    except sqlite3.DatabaseError as exc:
        fail_usage(str(unreadable_graph(control, exc)))
    if not kept:  # the graph checkpoint lost this run: `run --resume` rebuilds it first
        fail_usage(
            f"the graph checkpoint of {directory} holds nothing of this run (lost or moved"
            f" aside), so nothing waits to be answered; run `{nxt}` first: it continues the"
            " plan sealed in the ledger and asks again at its gates"
        )
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
        answer = gate_answer(interrupt_id, value, decision, note or "", by)
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
