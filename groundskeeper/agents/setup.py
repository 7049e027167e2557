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
    #: what was done to a configuration file that was there (merged into, its backup)
    merged: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "files": [str(f) for f in self.files],
            "launch": self.launch,
            "notes": list(self.notes),
            "merged": list(self.merged),
        }


def configuration_path(agent: str, plan: Path, root: Path) -> Path:
    """The file `write_setup` writes AGENT's hooks into (Claude Code's: in the plan's control
    directory, groundskeeper's own; the others': the agent's project file, the user's too)."""
    if agent == "claude-code":
        return ControlDir.for_plan(plan.absolute()).path / SETTINGS_NAME
    relative = {
        "codex": (".codex", "hooks.json"),
        "gemini": (".gemini", "settings.json"),
        "copilot": (".github", "hooks", "groundskeeper.json"),
        "cursor": (".cursor", "hooks.json"),
    }.get(agent)
    if relative is None:
        dialect_for(agent)  # raises for an unknown agent
        raise AssertionError(agent)
    return root.absolute().joinpath(*relative)


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
        # groundskeeper's own file, in the control directory: written whole. The user's Claude
        # Code settings are left as they are, and said: `agent run` does not read them
        theirs = [p for p in (root / ".claude" / "settings.json",
                              root / ".claude" / "settings.local.json") if p.is_file()]  # fmt: skip
        if theirs:
            notes.append(
                f"{', '.join(str(p) for p in theirs)} left as it is; `groundskeeper agent run`"
                ' launches claude with groundskeeper\'s settings only (`--setting-sources ""`),'
                " so the hooks and permissions in it do not apply to those sessions"
            )
        launch = shlex.join(
            ["groundskeeper", "agent", "run", "claude-code", "--plan", str(plan), "--"]
        )
        return Setup(agent, (path,), launch + " ARGS…", tuple(notes))

    def command(event: str) -> str:  # one command line per event: the hook never guesses it
        return hook_command(agent, plan, max_blocks, workdir, event)

    path = configuration_path(agent, plan, root)
    ours: dict[str, Any]
    if agent == "codex":
        ours = {"hooks": {
            e: [{"hooks": [{"type": "command", "command": command(e), "timeout": 600}]}]
            for e in EVENTS["codex"]
        }}  # fmt: skip
        notes.append(
            "Codex runs a new or edited hook only once you trust it: open `/hooks` in codex"
            " and trust groundskeeper's; an edited hook is skipped until trusted again, and"
            " `groundskeeper hook` blocks every stop while the sealed file differs"
        )
        launch = "codex"
    elif agent == "gemini":
        ours = {"hooks": {
            e: [{"hooks": [{"type": "command", "command": command(e), "timeout": 60000}]}]
            for e in EVENTS["gemini"]
        }}  # fmt: skip
        launch = "gemini"
    elif agent == "copilot":
        ours = {"version": 1, "hooks": {
            e: [{"type": "command", "bash": command(e), "timeoutSec": 30}]
            for e in EVENTS["copilot"]
        }}  # fmt: skip
        notes.append(
            "Copilot CLI times a hook out after 30 s and lets the stop through:"
            " keep checks short (the hook answers within 24 s)"
        )
        launch = "copilot"
    else:
        ours = {"version": 1, "hooks": {"stop": [{"command": command("stop")}]}}
        launch = "cursor-agent"
    merged = _write_config(path, ours, _marker(plan))
    return Setup(agent, (path,), launch, tuple(notes), merged)


def _marker(plan: Path) -> str:
    """What every hook command line `hook_command` writes for `plan` holds: how a merge
    finds groundskeeper's own entries for this plan (an earlier set-up's) to replace them."""
    return f"--plan {shlex.quote(str(plan.absolute()))} "


def _ours(entry: Any, marker: str) -> bool:
    """Whether a hook entry (a command, or a group of them) is groundskeeper's for the plan."""
    if isinstance(entry, str):
        return marker in entry and "--require-seal" in entry
    if isinstance(entry, dict):
        return any(_ours(v, marker) for v in entry.values())
    if isinstance(entry, list):
        return any(_ours(v, marker) for v in entry)
    return False


def _write_config(path: Path, ours: dict[str, Any], marker: str) -> tuple[str, ...]:
    """Write groundskeeper's hooks (`ours`: `{"hooks": {EVENT: [entry…]}, …}`) into the agent's
    configuration file at `path`. A file already there is the user's too: it is merged into
    (each of its settings and hooks kept, groundskeeper's own entries for this plan from an
    earlier set-up replaced), a backup written beside it first; one that does not parse as a
    JSON object with a `hooks` object of lists is refused (HookFailure), never replaced.
    What was done to a file that was there, said for a person (empty: none was there)."""
    from groundskeeper.agents.seal import HookFailure

    try:
        data = path.read_bytes()
    except FileNotFoundError:
        _write_json(path, ours)
        return ()
    except OSError as exc:
        raise HookFailure("setup", f"cannot read {path}: {exc.strerror}") from exc
    try:
        existing = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise HookFailure(
            "setup",
            f"{path} is there but is not JSON ({exc}); groundskeeper merges its hooks into an"
            " agent's configuration and never replaces it: fix the file or move it aside,"
            " then run `groundskeeper agent setup` again",
        ) from exc
    hooks = existing.get("hooks", {}) if isinstance(existing, dict) else None
    if not isinstance(hooks, dict) or not all(isinstance(v, list) for v in hooks.values()):
        raise HookFailure(
            "setup",
            f"{path} is there but is not an agent configuration groundskeeper can merge into"
            " (a JSON object whose `hooks` is an object of lists); it is not replaced: fix it"
            " or move it aside, then run `groundskeeper agent setup` again",
        )
    assert isinstance(existing, dict)
    document: dict[str, Any] = dict(existing)
    kept_hooks: dict[str, list[Any]] = {
        event: [e for e in entries if not _ours(e, marker)] for event, entries in hooks.items()
    }
    replaced = sum(len(hooks[e]) - len(kept_hooks[e]) for e in hooks)
    for event, entries in ours["hooks"].items():
        kept_hooks[event] = [*kept_hooks.get(event, []), *entries]
    for key, value in ours.items():
        if key != "hooks":
            document.setdefault(key, value)
    document["hooks"] = {e: v for e, v in kept_hooks.items() if v or e in hooks}
    others = sorted(k for k in existing if k != "hooks")
    theirs = sorted(
        e for e, v in hooks.items() for x in v if not _ours(x, marker)
    )  # each user's entry, by event
    backup = path.with_name(path.name + ".groundskeeper-backup")
    _write_bytes(backup, data)
    _write_json(path, document)
    added = ", ".join(ours["hooks"])
    said = [
        f"merged groundskeeper's hooks ({added}) into {path}, which was there"
        + (f" (replacing {replaced} of an earlier set-up)" if replaced else "")
        + f"; kept: {_kept(others, theirs)}; its content before: {backup}"
    ]
    return tuple(said)


def _kept(others: list[str], theirs: list[str]) -> str:
    parts = []
    if theirs:
        counted = {e: theirs.count(e) for e in theirs}
        parts.append("your hooks " + ", ".join(f"{e} ×{n}" for e, n in counted.items()))
    if others:
        parts.append("your settings " + ", ".join(f"`{k}`" for k in others))
    return "; ".join(parts) if parts else "nothing else was in it"


def _write_bytes(path: Path, data: bytes) -> None:
    temporary = path.with_name(path.name + f".{os.getpid()}.tmp")
    temporary.write_bytes(data)
    os.replace(temporary, path)


def _write_json(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(path.name + f".{os.getpid()}.tmp")
    temporary.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    os.replace(temporary, path)
