"""Helpers for the agent hook tests: a gated plan, and one hook call as the agent makes it
(a process of its own, the event on stdin)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PLAN = """\
#+TODO: TODO | DONE FAILED
* TODO Write the notes
  :PROPERTIES:
  :ID: notes
  :done-when: grep -q shipped NOTES.md
  :END:
* TODO Count them
  :PROPERTIES:
  :ID: count
  :done-when: grep -qx 1 COUNT
  :END:
"""


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


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A workdir with the two-task plan and nothing done."""
    root = tmp_path / "work"
    root.mkdir()
    (root / "plan.org").write_text(PLAN, encoding="utf-8")
    return root


def do_the_work(work: Path) -> None:
    (work / "NOTES.md").write_text("shipped\n", encoding="utf-8")
    (work / "COUNT").write_text("1\n", encoding="utf-8")


def ledger_steps(work: Path) -> list[tuple[str, dict[str, Any]]]:
    path = work / ".groundskeeper" / "plan.org" / "_steps.jsonl"
    return [
        (obj["step"], obj["body"])
        for obj in (json.loads(line) for line in path.read_text().splitlines())
    ]
