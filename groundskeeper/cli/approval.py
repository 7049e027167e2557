"""The answers a waiting goal run takes: the plan's approval (`run --approve`) and a task's
approval gate (`:gate: approval`), from the file `groundskeeper approve` leaves in the plan's
control directory or typed at a terminal.

It owns where those answers live, binding an answer to the interrupt and the hash it answers
(a stale one is refused, never applied) and the terminal prompt. It does not drive the graph
(`goal_cmd`, `supervisor.graph`) and does not parse the `approve` command (`approve_cmd`).
"""

from __future__ import annotations

import hashlib
import json
import select
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from groundskeeper.errors import UsageError

if TYPE_CHECKING:
    from groundskeeper.cli.progress import Progress
    from groundskeeper.record.control import ControlDir

#: The plan's approval answer, in the control directory.
APPROVAL_FILE = "approval.json"
ANSWER_POLL = 0.25  # seconds between looks for an answer from `groundskeeper approve`


def gate_answer_path(control: ControlDir, task_id: str) -> Path:
    """Where `groundskeeper approve --task` leaves its answer for one task's gate."""
    digest = hashlib.sha256(task_id.encode("utf-8")).hexdigest()[:16]
    return control.path / f"gate-{digest}.json"


def await_gate_answer(
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
                return gate_answer(interrupt_id, value, decision, note, "terminal")
            if typed == "" and sys.stdin.closed:
                return None
            progress.say("answer y, n or r")
        answer = _read_gate_answer(path, interrupt_id, value)
        if answer is not None:
            return answer


def gate_answer(
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


def await_plan_answer(
    control: ControlDir, interrupt_id: str, value: dict[str, Any], progress: Progress
) -> dict[str, Any] | None:
    """The approval for the waiting interrupt: from `groundskeeper approve` (a file in the
    control directory) or, on a terminal, typed y/n; None when there is no one to ask."""
    path = control.path / APPROVAL_FILE
    answer = _read_plan_answer(path, interrupt_id, value)
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
        answer = _read_plan_answer(path, interrupt_id, value)
        if answer is not None:
            return answer


def _read_plan_answer(
    path: Path, interrupt_id: str, value: dict[str, Any]
) -> dict[str, Any] | None:
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
