"""Setting an agent up so that its stops go through `groundskeeper hook`, with the hook where
the agent's own tools are told not to edit it, and the launch line that uses it.

It owns the configuration each agent reads (Claude Code: a settings file in the plan's
control directory used as `claude --settings FILE --setting-sources ""`; Codex, Gemini CLI,
Copilot CLI, Cursor: their hook files) and the hook command line in them. What it writes is
sealed with the plan (`agents.seal`), so a later edit blocks every stop. It never prints.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from groundskeeper.agents.dialects import dialect_for
from groundskeeper.record.control import ControlDir
from groundskeeper.record.keys import groundskeeper_home

__all__ = ["SETTINGS_NAME", "Setup", "claude_code_command", "hook_command", "write_setup"]

#: Claude Code's settings file, in the plan's control directory.
SETTINGS_NAME = "claude-code.settings.json"

#: The events each agent's hook is wired to.
EVENTS: dict[str, tuple[str, ...]] = {
    "claude-code": ("SessionStart", "Stop", "SubagentStop", "TaskCompleted", "ConfigChange"),
    "codex": ("SessionStart", "Stop"),
    "gemini": ("SessionStart", "AfterAgent"),
    "copilot": ("sessionStart", "agentStop"),
    "cursor": ("stop",),
}


@dataclass(frozen=True, slots=True)
class Setup:
    """What `write_setup` did: the files written, how to launch, and plain limits."""

    agent: str
    files: tuple[Path, ...]
    launch: str
    notes: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "files": [str(f) for f in self.files],
            "launch": self.launch,
            "notes": list(self.notes),
        }


def hook_command(
    agent: str, plan: Path, max_blocks: int, workdir: Path | None = None, event: str | None = None
) -> str:
    """The hook's command line: the base interpreter, by its resolved name, started by
    `agents.interpreter` (`-I -S -B`: no PYTHON* variables, no site directory, no `.pth`, no
    `sitecustomize`, no venv `pyvenv.cfg`; the import roots put on `sys.path` by the program
    itself once every file the hook imports is as it was at set-up), this home, this plan,
    by absolute path, nothing looked up on the agent's PATH or in its directory. An
    interpreter gone, or any exit but the answer itself, is that agent's block with a
    named reason — never the shell's own "No such file" (Claude Code reads an exit-2 hook
    saying that as one that failed to run, and lets the stop through)."""
    from groundskeeper.agents.interpreter import hook_interpreter

    home = f"GROUNDSKEEPER_HOME={shlex.quote(str(groundskeeper_home().absolute()))}"
    form = dialect_for(agent).form(event)
    interpreter = hook_interpreter(ControlDir.for_plan(plan).ensure().path)
    words = [
        *interpreter.words(form),
        "hook",
        agent,
        "--plan",
        str(plan.absolute()),
        "--max-blocks",
        str(max_blocks),
        "--require-seal",
    ]
    if event is not None:
        words += ["--event", event]
    if workdir is not None:
        words += ["--workdir", str(workdir.absolute())]
    line = f"{home} {shlex.join(words)}"
    gone = (
        f"groundskeeper: the hook cannot start: its interpreter {interpreter.executable}"
        " is missing or not executable; nothing is confirmed"
    )
    failed = "groundskeeper: the hook failed to run; nothing is confirmed"
    start = f"test -x {shlex.quote(interpreter.executable)}"
    if form == "exit2":
        return (
            f"{start} || {{ echo {shlex.quote(gone)} >&2; exit 2; }};"
            f" {line} || {{ s=$?; [ $s = 2 ] || echo {shlex.quote(failed)} >&2; exit 2; }}"
        )

    def block(reason: str) -> str:
        answer = {
            "json-block": {"decision": "block", "reason": reason},
            "json-deny": {"decision": "deny", "reason": reason},
            "followup": {"followup_message": reason},
        }[form]
        return shlex.quote(json.dumps(answer))

    return (
        f"{start} || {{ echo {block(gone)}; exit 0; }};"
        f" {line} || {{ echo {block(failed)}; exit 0; }}"
    )


def _absolute_rule(tool: str, path: Path, tree: bool) -> str:
    # Claude Code reads `//path` as an absolute path in a permission rule
    # the resolved name (no `..`, no linked folder): Claude Code matches a rule against it
    text = "/" + os.path.realpath(path)
    return f"{tool}({text}/**)" if tree else f"{tool}({text})"


def claude_code_settings(
    plan: Path,
    max_blocks: int,
    workdir: Path | None,
    protected: list[Path],
    hidden: list[Path] | None = None,
) -> dict[str, Any]:
    from groundskeeper.agents.interpreter import hook_interpreter

    control = ControlDir.for_plan(plan)
    timeout = int(dialect_for("claude-code").agent_timeout)
    hooks = {
        event: [
            {
                "hooks": [
                    {
                        "type": "command",
                        "command": hook_command("claude-code", plan, max_blocks, workdir, event),
                        "timeout": timeout,
                    }
                ]
            }
        ]
        for event in EVENTS["claude-code"]
    }
    deny: list[str] = []
    for tree in (control.root, groundskeeper_home()):
        deny += [_absolute_rule(t, tree, True) for t in ("Read", "Edit", "Write")]
    for tree in hook_interpreter(control.ensure().path).held_trees():
        deny += [_absolute_rule(t, tree, True) for t in ("Edit", "Write")]
    for path in (plan, *protected):
        deny += [_absolute_rule(t, path, False) for t in ("Edit", "Write")]
    for path in hidden or []:  # held out: not even to be read
        deny += [_absolute_rule(t, path, False) for t in ("Read", "Edit", "Write")]
    deny += ["Bash(groundskeeper agent seal:*)", "Bash(groundskeeper agent setup:*)"]
    settings: dict[str, Any] = {
        "hooks": hooks,
        "permissions": {"deny": deny, "disableBypassPermissionsMode": "disable"},
        "env": {"CLAUDE_CODE_STOP_HOOK_BLOCK_CAP": str(max_blocks)},
        "disableAllHooks": False,
    }
    if shutil.which("bwrap") is not None:
        settings["sandbox"] = {"enabled": True, "autoAllowBashIfSandboxed": False}
    return settings


def claude_code_command(plan: Path, args: list[str]) -> list[str]:
    """`claude` with groundskeeper's settings and only them (`--setting-sources ""`): a
    project or user settings file cannot switch the hooks off (`disableAllHooks`)."""
    settings = ControlDir.for_plan(plan).path / SETTINGS_NAME
    binary = os.environ.get("GROUNDSKEEPER_CLAUDE", "claude")
    return [binary, "--settings", str(settings), "--setting-sources", "", *args]


def write_setup(
    agent: str,
    plan: Path,
    *,
    max_blocks: int,
    workdir: Path | None = None,
    protected: list[Path] | None = None,
    hidden: list[Path] | None = None,
) -> Setup:
    """Write AGENT's hook configuration for `plan`; return what was written."""
    plan = plan.absolute()
    root = (workdir or plan.parent).absolute()
    control = ControlDir.for_plan(plan).ensure()
    notes: list[str] = []
    if agent == "claude-code":
        path = control.path / SETTINGS_NAME
        settings = claude_code_settings(plan, max_blocks, workdir, protected or [], hidden)
        _write_json(path, settings)
        if "sandbox" not in settings:
            notes.append(
                "Claude Code's own sandbox is not enabled: bubblewrap (`bwrap`) is not"
                " installed; its Bash tool runs with your rights"
            )
        launch = shlex.join(
            ["groundskeeper", "agent", "run", "claude-code", "--plan", str(plan), "--"]
        )
        return Setup(agent, (path,), launch + " ARGS…", tuple(notes))

    def command(event: str) -> str:  # one command line per event: the hook never guesses it
        return hook_command(agent, plan, max_blocks, workdir, event)

    if agent == "codex":
        path = root / ".codex" / "hooks.json"
        _write_json(path, {"hooks": {
            e: [{"hooks": [{"type": "command", "command": command(e), "timeout": 600}]}]
            for e in EVENTS["codex"]
        }})  # fmt: skip
        notes.append(
            "Codex runs a new or edited hook only once you trust it: open `/hooks` in codex"
            " and trust groundskeeper's; an edited hook is skipped until trusted again, and"
            " `groundskeeper hook` blocks every stop while the sealed file differs"
        )
        return Setup(agent, (path,), "codex", tuple(notes))
    if agent == "gemini":
        path = root / ".gemini" / "settings.json"
        _write_json(path, {"hooks": {
            e: [{"hooks": [{"type": "command", "command": command(e), "timeout": 60000}]}]
            for e in EVENTS["gemini"]
        }})  # fmt: skip
        return Setup(agent, (path,), "gemini", tuple(notes))
    if agent == "copilot":
        path = root / ".github" / "hooks" / "groundskeeper.json"
        _write_json(path, {"version": 1, "hooks": {
            e: [{"type": "command", "bash": command(e), "timeoutSec": 30}]
            for e in EVENTS["copilot"]
        }})  # fmt: skip
        notes.append(
            "Copilot CLI times a hook out after 30 s and lets the stop through:"
            " keep checks short (the hook answers within 24 s)"
        )
        return Setup(agent, (path,), "copilot", tuple(notes))
    if agent == "cursor":
        path = root / ".cursor" / "hooks.json"
        _write_json(path, {"version": 1, "hooks": {"stop": [{"command": command("stop")}]}})
        return Setup(agent, (path,), "cursor-agent", tuple(notes))
    dialect_for(agent)  # raises for an unknown agent
    raise AssertionError(agent)


def _write_json(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, path)
