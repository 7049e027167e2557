"""A gated plan and one hook call as the agent makes it (a process of its own, the event on
stdin): shared by the hook tests (`tests/agents`) and `benchmarks/hook_overhead.py`."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Two tasks, each with a check; `state` is their headlines' keyword.
PLAN_TEMPLATE = """\
#+TODO: TODO | DONE FAILED
* {state} Write the notes
  :PROPERTIES:
  :ID: notes
  :done-when: grep -q shipped NOTES.md
  :END:
* {state} Count them
  :PROPERTIES:
  :ID: count
  :done-when: grep -qx 1 COUNT
  :END:
"""

PLAN = PLAN_TEMPLATE.format(state="TODO")


@dataclass(frozen=True)
class HookRun:
    status: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        return json.loads(self.stdout)

    @property
    def blocked(self) -> str | None:
        """The reason, when this is Claude Code's block (JSON on a Stop or SubagentStop, exit
        2 elsewhere); None when the agent may stop."""
        if self.status == 2:
            return self.stderr
        if self.status == 0 and self.stdout.strip():
            answer = json.loads(self.stdout)
            if answer.get("decision") == "block":
                assert answer["reason"].strip()
                return str(answer["reason"])
        return None


def stop_event(work: Path, **extra: Any) -> dict[str, Any]:
    return {
        "session_id": "s-1",
        "transcript_path": str(work / "t.jsonl"),
        "cwd": str(work),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": "All done: the notes are written.",
        **extra,
    }


def call_hook(
    agent: str,
    event: dict[str, Any] | bytes,
    *args: str,
    env: dict[str, str] | None = None,
    timeout: float = 60,
) -> HookRun:
    data = event if isinstance(event, bytes) else json.dumps(event).encode()
    proc = subprocess.run(
        [sys.executable, "-m", "groundskeeper", "hook", agent, *args],
        input=data,
        capture_output=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    return HookRun(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def make_work(root: Path, state: str = "TODO") -> Path:
    """`root`, made, holding the two-task plan with its tasks in `state`."""
    root.mkdir()
    (root / "plan.org").write_text(PLAN_TEMPLATE.format(state=state), encoding="utf-8")
    return root


def make_done_work(root: Path, env: dict[str, str]) -> Path:
    """`root`, made, holding the two-task plan with its work done and both tasks DONE as a
    run made them (`resume` on a worker that only claims): DONE headlines the ledger backs,
    which a hook call takes as done without running their checks."""
    work = make_work(root, "TODO")
    plan = work / "plan.org"
    plan.write_text(plan.read_text(encoding="utf-8").replace(
        "| DONE FAILED\n", "| DONE FAILED PARTIAL\n", 1), encoding="utf-8")  # fmt: skip
    do_the_work(work)
    claimer = root.parent / f"{root.name}-claimer.yaml"
    claimer.write_text('workers:\n  "*":\n    - say: DONE\n', encoding="utf-8")
    resume = [sys.executable, "-m", "groundskeeper", "resume", str(plan)]
    subprocess.run([*resume, "--model", f"scripted:{claimer}"], env=env, check=True,
                   capture_output=True)  # fmt: skip
    assert plan.read_text(encoding="utf-8").count("* DONE ") == 2
    return work


def do_the_work(work: Path) -> None:
    (work / "NOTES.md").write_text("shipped\n", encoding="utf-8")
    (work / "COUNT").write_text("1\n", encoding="utf-8")


def ledger_steps(work: Path) -> list[tuple[str, dict[str, Any]]]:
    path = work / ".groundskeeper" / "plan.org" / "_steps.jsonl"
    return [
        (obj["step"], obj["body"])
        for obj in (json.loads(line) for line in path.read_text().splitlines())
    ]


def set_up_stop_hook(work: Path, env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """Run `agent setup claude-code` on the work's plan; the Stop hook's command line it
    wrote, as argv and the environment it sets (its `VAR=value` words), without the
    shell's test of the interpreter before it and its fallback after `||`."""
    plan = work / "plan.org"
    setup = [sys.executable, "-m", "groundskeeper", "agent", "setup", "claude-code"]
    subprocess.run([*setup, "--plan", str(plan)], env=env, check=True, capture_output=True)
    settings = json.loads((work / ".groundskeeper" / "plan.org" / "claude-code.settings.json")
                          .read_text(encoding="utf-8"))  # fmt: skip
    command = settings["hooks"]["Stop"][0]["hooks"][0]["command"]
    words = shlex.split(command.split("}; ", 1)[-1].partition(" || ")[0])
    assigned: dict[str, str] = {}
    while words and "=" in words[0] and not words[0].startswith(("/", "-")):
        name, _, value = words.pop(0).partition("=")
        assigned[name] = value
    return words, assigned
