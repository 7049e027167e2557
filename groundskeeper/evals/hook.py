"""Eval cases through the agent hook: a scripted agent session, answered at each stop by the
real `groundskeeper hook` command exactly as `agent setup` wrote it into the agent's settings.

It owns one such session: `agent setup` on the case's plan, the agent's own steps on the
workdir (writes, removals, links: what a native agent does with the user's rights), and each
`stop` run through the hook's command line in a shell, in the session's directory, with the
event on stdin. What the last stop was answered becomes the report `evals` judges: a stop let
through is the agent's DONE; a block (or the block bound's stop) is not, caught by the
reason the hook gave (`evals.run` judges it like any report). Like every case, nothing here
weakens a defence; it imports nothing of groundskeeper's but runs its commands.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

# How a `groundskeeper` command of the user's (`agent setup`, `agent seal`) runs: (argv from
# `sys.executable` on, environment, cwd, timeout) -> as `subprocess.run(capture_output=True,
# text=True)` gives it. Default: a new Python; `evals.run` forks it from its server.
Execute = Callable[[list[str], dict[str, str], Path, float], "subprocess.CompletedProcess[str]"]


def _subprocess(
    args: list[str], env: dict[str, str], cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


__all__ = [
    "HOOK_AGENTS",
    "SESSION_STEPS",
    "HookSessionFault",
    "caught_by_hook",
    "hook_agent",
    "hook_session_problem",
    "play_session",
    "run_hook_session",
]

#: The agents a hook case can play (whose settings `agent setup` writes and this reads).
HOOK_AGENTS = ("claude-code",)

#: What a scripted session's step may do, one key per step.
SESSION_STEPS = ("write", "remove", "link", "stop", "seal")


class HookSessionFault(Exception):
    """The session could not be played (a command failed or printed what is not an answer)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def hook_session_problem(script: Any) -> str | None:
    """Why `agents.yaml` is not a hook case's session (`session:`, a list of steps, the last
    a `stop`); None when it is."""
    steps = script.get("session") if isinstance(script, dict) else None
    if not isinstance(steps, list) or not steps:
        return 'a hook case\'s agents.yaml holds `session:`, a list of steps ending in a "stop"'
    for number, step in enumerate(steps, start=1):
        if not isinstance(step, dict) or len(step) != 1 or next(iter(step)) not in SESSION_STEPS:
            return f"session step {number}: one of {', '.join(SESSION_STEPS)}"
        ((kind, value),) = step.items()
        if kind == "stop" and not isinstance(value, str):
            return f"session step {number}: a stop carries the agent's claim as text"
        if kind in ("write", "link") and not (
            isinstance(value, dict) and all(isinstance(v, str) for v in value.values())
        ):
            return f"session step {number}: {kind} maps relative paths to text"
        if kind == "seal" and not (
            isinstance(value, list) and all(isinstance(w, str) for w in value)
        ):
            return f"session step {number}: seal carries `agent seal`'s extra words as a list"
        if kind == "remove" and not isinstance(value, str):
            return f"session step {number}: remove names one relative path"
        paths = list(value) if isinstance(value, dict) else [value] if kind == "remove" else []
        if any(Path(p).is_absolute() or ".." in Path(p).parts for p in paths):
            return f"session step {number}: paths stay inside the workdir"
    if "stop" not in steps[-1]:
        return 'the session ends with a "stop"'
    return None


def _command(
    args: list[str], env: dict[str, str], cwd: Path, deadline: float, execute: Execute
) -> str:
    left = deadline - time.monotonic()
    if left <= 0:
        raise HookSessionFault("timeout", "timeout: the case ran past its time limit")
    try:
        done = execute(args, env, cwd, left)
    except subprocess.TimeoutExpired:
        raise HookSessionFault("timeout", "timeout: the hook session ran past the case's time "
                               "limit") from None  # fmt: skip
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise HookSessionFault("crash", f"crash: `{' '.join(args[3:6])}` exited "
                               f"{done.returncode}: {tail}")  # fmt: skip
    return done.stdout


def _seal(
    words: list[str], env: dict[str, str], run_dir: Path, deadline: float, execute: Execute
) -> int:
    """The user's `agent seal PLAN WORDS…` between two sessions: its exit status (a refusal,
    2, is the seal's answer, not the case's crash)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise HookSessionFault("timeout", "timeout: the case ran past its time limit")
    args = [sys.executable, "-m", "groundskeeper", "agent", "seal", "plan.org", *words]
    try:
        done = execute(args, env, run_dir, left)
    except subprocess.TimeoutExpired:
        raise HookSessionFault(
            "timeout", "timeout: a seal ran past the case's time limit"
        ) from None
    if done.returncode not in (0, 2):
        raise HookSessionFault("crash", f"crash: `agent seal` exited {done.returncode}")
    return done.returncode


def _stop(
    command: str, run_dir: Path, claim: str, deadline: float, session: str = "eval-session"
) -> tuple[str, str]:
    """One Stop through the hook's own command line: (`allow`, `block` or `stop`, reason)."""
    event = {
        "session_id": session,
        "transcript_path": str(run_dir.parent / "transcript.jsonl"),
        "cwd": str(run_dir),
        "hook_event_name": "Stop",
        "stop_hook_active": False,
        "last_assistant_message": claim,
    }
    left = deadline - time.monotonic()
    if left <= 0:
        raise HookSessionFault("timeout", "timeout: the case ran past its time limit")
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", command],
            cwd=run_dir,
            env={"PATH": "/usr/bin:/bin", "HOME": str(run_dir.parent)},
            input=json.dumps(event),
            capture_output=True,
            text=True,
            timeout=left,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise HookSessionFault(
            "timeout", "timeout: a stop ran past the case's time limit"
        ) from None
    if done.returncode == 2:
        return "block", done.stderr
    if done.returncode != 0:
        raise HookSessionFault("crash", f"crash: the hook exited {done.returncode}: "
                               f"{done.stderr.strip()[-200:]}")  # fmt: skip
    if not done.stdout.strip():
        return "allow", done.stderr
    try:
        answer = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise HookSessionFault("crash", "crash: the hook printed what is not JSON") from None
    if answer.get("decision") == "block":
        return "block", str(answer.get("reason", ""))
    if answer.get("continue") is False:
        return "stop", str(answer.get("stopReason", ""))
    raise HookSessionFault("crash", f"crash: the hook answered {done.stdout.strip()[:200]}")


def caught_by_hook(outcome: str, reason: str) -> str:
    """The reason code a blocked stop carries, as `evals.caught_by` reads a verdict's."""
    if outcome == "stop":
        return "breaker"
    for phrase, code in (
        ("the plan changed since the session started", "plan-changed"),
        ("a hidden input is reachable by another name", "hidden-alias"),
        ("changed while the checks ran", "inputs-changed"),
        ("could not confirm this stop", "could-not-confirm"),
    ):
        if phrase in reason:
            return code
    found = re.search(r"\(\S+:\d+\): ([a-z_]+): ", reason)
    return found.group(1) if found else "blocked"


def run_hook_session(
    agent: str,
    run_dir: Path,
    script: dict[str, Any],
    tasks: list[str],
    env: dict[str, str],
    deadline: float,
    execute: Execute = _subprocess,
) -> dict[str, Any]:
    """Set the agent up on the case's plan, play its session, and report each of `tasks` as
    the hook left it: DONE when the last stop was let through, else the hook's answer. The
    user's commands run through `execute`; each stop is the hook's own command line."""
    plan = run_dir / "plan.org"
    groundskeeper = [sys.executable, "-m", "groundskeeper"]
    _command([*groundskeeper, "agent", "setup", agent, "--plan", str(plan), "--json"], env,
             run_dir, deadline, execute)  # fmt: skip
    settings = run_dir / ".groundskeeper" / "plan.org" / "claude-code.settings.json"
    command = json.loads(settings.read_text(encoding="utf-8"))["hooks"]["Stop"][0]["hooks"][0]
    outcome, reason, stops = "allow", "", []
    seals: list[int] = []
    session = "eval-session"
    for step in script["session"]:
        ((kind, value),) = step.items()
        if kind == "write":
            for path, text in value.items():
                (run_dir / path).parent.mkdir(parents=True, exist_ok=True)
                (run_dir / path).write_text(text, encoding="utf-8")
        elif kind == "link":
            for path, target in value.items():
                (run_dir / path).parent.mkdir(parents=True, exist_ok=True)
                (run_dir / path).symlink_to(target)
        elif kind == "remove":
            (run_dir / value).unlink(missing_ok=True)
        elif kind == "seal":  # the user re-seals; the next stop is a new session's
            seals.append(_seal(value, env, run_dir, deadline, execute))
            session = f"eval-session-{len(seals) + 1}"
        else:
            outcome, reason = _stop(str(command["command"]), run_dir, value, deadline, session)
            stops.append(outcome)
    state = "DONE" if outcome == "allow" else {"block": "blocked", "stop": "stopped"}[outcome]
    why = None if outcome == "allow" else f"{caught_by_hook(outcome, reason)}: {reason.strip()}"
    return {
        "tasks": [{"id": t, "state": state, "reason": why} for t in tasks],
        "diagnostics": [],
        "stops": stops,
        **({"seals": seals} if seals else {}),
    }


def hook_agent(raw: Any, case_dir: Path) -> str | None:
    """expect.json's `hook` (None: not a hook case), with the case's session checked;
    ValueError saying what is wrong."""
    if raw is None:
        return None
    if raw not in HOOK_AGENTS:
        raise ValueError(f'expect.json: "hook" names the agent: {", ".join(HOOK_AGENTS)}')
    import yaml

    try:
        script = yaml.safe_load((case_dir / "agents.yaml").read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ValueError(f"agents.yaml does not parse: {exc}") from None
    problem = hook_session_problem(script)
    if problem is not None:
        raise ValueError(f"agents.yaml: {problem}")
    return str(raw)


def play_session(
    agent: str,
    run_dir: Path,
    agents: Path,
    tasks: list[str],
    env: dict[str, str],
    deadline: float,
    execute: Execute = _subprocess,
) -> dict[str, Any]:
    """A hook case's report: its `agents.yaml` session played against `agent`'s hook."""
    import yaml

    script = yaml.safe_load(agents.read_text(encoding="utf-8"))
    return run_hook_session(agent, run_dir, script, tasks, env, deadline, execute)
