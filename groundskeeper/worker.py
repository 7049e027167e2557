"""The worker: one task's agent loop — model turn, tool calls, results back — until it claims.

It owns the worker prompt, the four tools (`sh`, `read_file`, `write_file`, `list_files`) and
their confinement to the workdir, what each call tells the record (the facts `sh` and
`write_file` seal), the `claim_done` tool that ends an attempt with a claim, and the
per-attempt turn limit. It does not judge the claim: the runner checks evidence, contracts
(`evidence`, `contracts`) and the acceptance check (`acceptance.py`) afterwards.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import importlib.resources
import json
import os
import re
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, NoReturn

from groundskeeper.acceptance import SealedCheck, Shell, sandbox_shell
from groundskeeper.attempt_record import (
    CMD_INLINE,
    changed_between,
    read_at_most,
    sealable_changed,
    sha256_text,
    watch_state,
)
from groundskeeper.errors import GroundskeeperError
from groundskeeper.invariants import Invariant, render_invariants
from groundskeeper.models import (
    AssistantTurn,
    ContentBlock,
    Message,
    Model,
    ModelCall,
    ModelCallError,
    ModelCallRefused,
    ModelRequest,
    ToolSpec,
    Usage,
)
from groundskeeper.sandbox import fence as fences
from groundskeeper.sandbox.quota import DiskQuota

DEFAULT_MAX_TURNS = 30
DEFAULT_SH_TIMEOUT = 30.0
READ_LIMIT = 100_000
WRITE_LIMIT = 1_000_000
RESULT_LIMIT = 20_000

#: The stop reasons of a turn the model ended itself; only these can carry a claim.
FINISHED_STOPS: frozenset[str] = frozenset({"end_turn", "stop_sequence"})
#: Stop reasons after which no further attempt can help: the task is FAILED, by name, and
#: its check does not run for that attempt.
TERMINAL_STOPS: dict[str, str] = {
    "refusal": "model refused: the model stopped with stop_reason `refusal`",
    "model_context_window_exceeded": (
        "model_context_window_exceeded: the conversation no longer fits the model's context window"
    ),
}


def stop_failure(stop: str) -> str | None:
    """Why an attempt that ended with `stop` carries no claim, by name; None for a turn the
    model finished itself (`end_turn`, `stop_sequence`)."""
    if stop in FINISHED_STOPS:
        return None
    if stop in TERMINAL_STOPS:
        return TERMINAL_STOPS[stop]
    if stop == "max_tokens":
        return "max_tokens: the model's reply was cut off at its output limit; no claim"
    if stop == "max_turns":
        return "max_turns: the attempt used every turn it had without finishing; no claim"
    if stop == "tool_use":
        return "tool_use: the model asked for tools but named none; no claim"
    return f"unknown stop_reason `{stop}`: not a finished turn; no claim"


TOOL_SPECS: tuple[ToolSpec, ...] = (
    ToolSpec(
        "sh",
        "Run a command line in the sandbox shell, the working directory read-write."
        " Returns the exit status, stdout and stderr.",
        {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
    ),
    ToolSpec(
        "read_file",
        "Read a text file; the path is relative to the working directory.",
        {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ),
    ToolSpec(
        "write_file",
        "Create or replace a text file (parent folders are created); the path is relative"
        " to the working directory.",
        {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    ),
    ToolSpec(
        "list_files",
        "List a folder (default: the working directory); folders end with `/`.",
        {"type": "object", "properties": {"path": {"type": "string"}}},
    ),
    ToolSpec(
        "claim_done",
        "Claim the task is finished; this ends your turn. `summary`: what you did."
        " `evidence`: the fields the task asks for, each checked against the record of"
        " what your tool calls really did.",
        {
            "type": "object",
            "properties": {"summary": {"type": "string"}, "evidence": {"type": "object"}},
            "required": ["summary"],
        },
    ),
)

#: The tool that ends an attempt with a claim (the supervisor answers it, not the toolbox).
CLAIM_TOOL = "claim_done"


class ToolRefused(GroundskeeperError):
    """A tool call the worker may not make; its message goes back to the model as is."""


class FileTooLarge(GroundskeeperError):
    """A file read with a size limit is larger than the limit."""


def load_prompt(name: str) -> str:
    """`prompts/NAME`, from the installed package or (editable install) the repo."""
    try:
        resource = importlib.resources.files("groundskeeper") / "prompts" / name
        return resource.read_text(encoding="utf-8")
    except (FileNotFoundError, NotADirectoryError):
        repo_copy = Path(__file__).resolve().parent.parent / "prompts" / name
        return repo_copy.read_text(encoding="utf-8")


def load_worker_prompt() -> str:
    return load_prompt("worker.md")


@dataclass(frozen=True, slots=True)
class WorkerTask:
    """What a worker is told about its task. The sentinel is never part of it."""

    task_id: str
    title: str
    body: str
    check: SealedCheck | None
    plan_name: str = "plan.org"
    contracts: tuple[str, ...] = ()  # the task's contract lines, as written
    evidence: tuple[str, ...] = ()  # its evidence fields, `name:type[:pattern]`
    invariants: tuple[Invariant, ...] = ()  # the plan's and its contexts' (`:contexts:`)


def render_worker_prompt(task: WorkerTask, template: str | None = None) -> str:
    if task.check is None:
        check = "This task has no acceptance check; your claim will be recorded as unverified."
    else:
        check = f"```{task.check.language}\n{task.check.text.rstrip()}\n```"
    slug = re.sub(r"[^A-Za-z0-9]+", "-", task.task_id).strip("-").lower() or "task"
    values = {
        "requirements": _requirements(task),
        "invariants": render_invariants(task.invariants),
        "title": task.title,
        "task_id": task.task_id,
        "body": task.body.strip() or "(no description beyond the title)",
        "check": check,
        "plan_name": task.plan_name,
        "task_slug": slug,
    }
    text = template if template is not None else load_worker_prompt()
    # one pass, so a value that happens to contain `{{…}}` is never expanded itself
    return re.sub(r"\{\{(\w+)\}\}", lambda m: values.get(m[1], m[0]), text)


def _requirements(task: WorkerTask) -> str:
    lines: list[str] = []
    if task.contracts:
        lines.append("Contracts your work must meet (checked after you claim, from the files and")
        lines.append("the record of your tool calls in this attempt):")
        lines.extend(f"- `{c}`" for c in task.contracts)
    if task.evidence:
        lines.append("Evidence your `claim_done` must carry, as fields of `evidence`:")
        lines.extend(f"- `{e}`" for e in task.evidence)
        lines.append(
            "An `output-of:PATTERN` field quotes what a command matching PATTERN printed when"
            " you ran it on its own line with `sh` in this attempt, and it must have exited 0."
        )
    if not lines:
        return "Nothing beyond the acceptance check."
    return "\n".join(lines)


def claims_done(text: str) -> bool:
    """A final message claims DONE when its first word is `DONE` — and not asked: `DONE?`
    is a question, not a claim."""
    return re.match(r"\W*DONE(?![\w?])", text) is not None


def input_sha256(tool_input: Mapping[str, Any]) -> str:
    """The hash the ledger records for a tool call's input; never raises, because a model's
    malformed input (non-string keys, NaN, lone surrogates) must still be recorded."""
    try:
        canonical = json.dumps(
            tool_input, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False
        )
    except (TypeError, ValueError):
        canonical = "!repr:" + repr(tool_input)  # not JSON, so it cannot collide with JSON
    return hashlib.sha256(canonical.encode("utf-8", errors="surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    text: str
    is_error: bool
    status: str  # "ok", "error", "refused", or "exit N" for sh
    # what the record seals beyond the status (JSON-native): for `sh` the command, exit
    # status, output hashes and the paths it changed; for `write_file` the path written
    facts: Mapping[str, Any] = field(default_factory=dict)
    # texts the record keeps by hash in the control directory (the command, what it printed)
    texts: tuple[str, ...] = ()


_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW


@dataclass
class Toolbox:
    """The worker's tools, confined to `workdir` and fenced (`sandbox.fence`): the control
    plane and $GROUNDSKEEPER_HOME are absent, the running plan's file is read-only.

    A path is judged first (`resolve`: no absolute paths, no `..`, no symlink leading out),
    then opened by walking the judged, symlink-free path one component at a time with
    O_NOFOLLOW from the workdir, so a symlink swapped in between (another worker's `mv`)
    is refused rather than followed.
    """

    workdir: Path
    plan_path: Path
    shell: Shell | None = None
    sh_timeout: float = DEFAULT_SH_TIMEOUT
    # the run's disk quota: `write_file` counts the bytes it writes (a rewrite counts again),
    # `sh` hands it to the sandbox (a fake `shell` is called without it)
    quota: DiskQuota | None = None
    # paths whose content is taken before and after each `sh` call, so the record says which
    # of them it changed (a `changed` contract's); with none, the record's `changed` is null
    watch: tuple[str, ...] = ()
    _root: Path = field(init=False)

    def __post_init__(self) -> None:
        self._root = self.workdir.resolve()
        self._plan = self.plan_path.resolve()

    @property
    def fence(self) -> fences.Fence:
        return fences.active()

    def call(self, name: str, tool_input: object) -> ToolOutcome:
        """Run one tool; every failure comes back as an error outcome, never an exception."""
        if not isinstance(tool_input, dict):
            return ToolOutcome("tool input must be a JSON object", True, "error")
        try:
            if name == "sh":
                return self._sh(tool_input)
            if name == "read_file":
                return self._read(tool_input)
            if name == "write_file":
                return self._write(tool_input)
            if name == "list_files":
                return self._list(tool_input)
        except ToolRefused as exc:
            return ToolOutcome(f"refused: {exc}", True, "refused")
        except (OSError, UnicodeError, ValueError) as exc:  # ValueError: a NUL in a path
            return ToolOutcome(f"{name} failed: {exc}", True, "error")
        return ToolOutcome(
            f"unknown tool `{name}`; the tools are sh, read_file, write_file, list_files,"
            " claim_done",
            True,
            "error",
        )

    def _arg(self, tool_input: Mapping[str, Any], key: str, default: str | None = None) -> str:
        value = tool_input.get(key, default)
        if not isinstance(value, str):
            raise ToolRefused(f"`{key}` must be a string")
        return value

    def resolve(self, raw: str) -> Path:
        """The real path of `raw` inside the workdir, or ToolRefused saying why not."""
        if not raw:
            raise ToolRefused("empty path")
        if "\0" in raw:
            raise ToolRefused("a path may not contain a NUL character")
        pure = PurePosixPath(raw)
        if pure.is_absolute() or raw.startswith("~"):
            raise ToolRefused(f"`{raw}` is absolute; paths are relative to the working directory")
        if ".." in pure.parts:
            raise ToolRefused(f"`{raw}` uses `..`; paths stay inside the working directory")
        target = (self._root / pure).resolve()
        if target != self._root and self._root not in target.parents:
            raise ToolRefused(f"`{raw}` leads outside the working directory (a symlink)")
        if target != self._root and self.fence.hides_path(
            str(self._root), str(target.relative_to(self._root))
        ):
            raise _absent(raw)
        return target

    def _guard_identity(self, raw: str, fd: int) -> os.stat_result:
        st = os.fstat(fd)
        if self.fence.hides(st):
            raise _absent(raw)
        return st

    def _guard_writable(self, raw: str, parent: int, name: str) -> None:
        fence = self.fence
        why = fence.refusal(os.fstat(parent), name)
        if why == "protected by the plan":
            raise ToolRefused(f"`{raw}` is protected by the plan; workers may read it, never"
                              " change it")  # fmt: skip
        if why is not None:
            raise ToolRefused(
                f"`{raw}` is the plan file of the running plan; workers may read it, never"
                " change it"
            )

    def _walk(self, raw: str, target: Path, *, create_dirs: bool = False) -> int:
        """An O_DIRECTORY fd of `target`'s parent, reached without following any symlink."""
        parts = target.relative_to(self._root).parts
        fd = os.open(self._root, _DIR_FLAGS)
        try:
            for part in parts[:-1]:
                try:
                    child = self._open_component(raw, part, _DIR_FLAGS, fd)
                except FileNotFoundError:
                    if not create_dirs:
                        raise
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, dir_fd=fd)
                    child = self._open_component(raw, part, _DIR_FLAGS, fd)
                os.close(fd)
                fd = child
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open_component(
        self, raw: str, name: str, flags: int, dir_fd: int, mode: int = 0o666
    ) -> int:
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            self._guard_writable(raw, dir_fd, name)
        try:
            fd = os.open(name, flags | _NOFOLLOW, mode, dir_fd=dir_fd)
        except OSError as exc:
            raise self._swapped(raw, exc, name, dir_fd) from None
        if flags & os.O_DIRECTORY and self.fence.hidden and self.fence.hides(os.fstat(fd)):
            os.close(fd)
            raise _absent(raw)
        return fd

    @staticmethod
    def _swapped(raw: str, exc: OSError, name: str, dir_fd: int) -> OSError | ToolRefused:
        """A symlink where the judged path had none is a refusal; any other error stays."""
        try:
            is_link = stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
        except OSError:
            is_link = False
        if is_link:
            return ToolRefused(
                f"`{raw}` changed into a symlink while it was being opened; not followed"
            )
        return exc

    def _open_target(self, raw: str, target: Path, flags: int, *, create_dirs: bool = False) -> int:
        if target == self._root:
            return os.open(self._root, _DIR_FLAGS)
        parent = self._walk(raw, target, create_dirs=create_dirs)
        try:
            return self._open_component(raw, target.name, flags, parent)
        finally:
            os.close(parent)

    def _sh(self, tool_input: Mapping[str, Any]) -> ToolOutcome:
        cmd = self._arg(tool_input, "cmd")
        run = self.shell if self.shell is not None else sandbox_shell(self.quota)
        # what the command changed, for the record: the watched paths before and after
        before = watch_state(self._root, self.watch) if self.watch else None
        facts: dict[str, Any] = {
            "cmd": cmd if len(cmd) <= CMD_INLINE else None,
            "cmd_sha256": sha256_text(cmd),
        }
        try:
            result = run(cmd, workdir=self._root, read_only=False, timeout=self.sh_timeout)
        except Exception as exc:  # the worker hears of it; the run goes on
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            text = f"the sandbox could not run the command: {type(exc).__name__}: {first}"
            after = watch_state(self._root, self.watch) if self.watch else None
            facts |= {
                "exit_status": None,
                "fault": "not-run",
                "stdout_sha256": None,
                "stderr_sha256": None,
                "changed": sealable_changed(changed_between(before, after)),
            }
            return ToolOutcome(text, True, "error", facts, (cmd,))
        facts |= {
            "exit_status": result.status,
            "fault": result.fault,
            "stdout_sha256": sha256_text(result.stdout),
            "stderr_sha256": sha256_text(result.stderr),
            "changed": sealable_changed(
                changed_between(before, watch_state(self._root, self.watch) if self.watch else None)
            ),
        }
        text = f"exit status {result.status}\n"
        if result.fault:
            text += f"stopped by the sandbox: {result.fault}\n"
        text += f"--- stdout ---\n{result.stdout}--- stderr ---\n{result.stderr}"
        failed = result.status != 0 or result.fault is not None
        texts = (cmd, result.stdout, result.stderr)
        return ToolOutcome(_clip(text), failed, f"exit {result.status}", facts, texts)

    def _read(self, tool_input: Mapping[str, Any]) -> ToolOutcome:
        raw = self._arg(tool_input, "path")
        target = self.resolve(raw)
        # O_NONBLOCK: a FIFO must not hang the worker; it is refused below as not a file
        fd = self._open_target(raw, target, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            st = self._guard_identity(raw, handle.fileno())
            if stat.S_ISDIR(st.st_mode):
                return ToolOutcome(f"`{raw}` is a folder; use list_files", True, "error")
            if not stat.S_ISREG(st.st_mode):
                return ToolOutcome(f"`{raw}` is not a regular file", True, "error")
            data = handle.read(READ_LIMIT + 1)
        text = data[:READ_LIMIT].decode("utf-8", errors="replace")
        if len(data) > READ_LIMIT:
            text += f"\n… (truncated at {READ_LIMIT} bytes)"
        return ToolOutcome(text, False, "ok")

    def _write(self, tool_input: Mapping[str, Any]) -> ToolOutcome:
        raw = self._arg(tool_input, "path")
        content = self._arg(tool_input, "content")
        target = self.resolve(raw)
        if len(content) > WRITE_LIMIT:
            raise ToolRefused(f"content is longer than {WRITE_LIMIT} characters")
        data = content.encode("utf-8")  # before opening: a bad string must not truncate
        if target == self._root or target.is_dir():
            return ToolOutcome(f"`{raw}` is a folder", True, "error")
        if self.quota is not None and len(data) > self.quota.left():
            self._over_quota()  # before the open: nothing is created or truncated
        # no O_TRUNC until the opened file is known not to be a control file
        fd = self._open_target(
            raw, target, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK, create_dirs=True
        )
        with os.fdopen(fd, "wb") as handle:
            st = self._guard_identity(raw, handle.fileno())
            if not stat.S_ISREG(st.st_mode):
                return ToolOutcome(f"`{raw}` is not a regular file", True, "error")
            if self.fence.is_read_only_file(st):
                raise ToolRefused(
                    f"`{raw}` is a link to the plan file or a protected input; workers may not"
                    " change it"
                )
            if self.quota is not None and not self.quota.take(len(data)):
                self._over_quota()
            handle.truncate(0)
            handle.write(data)
        written = target.relative_to(self._root).as_posix()
        facts = {"path": written, "changed": [written]}
        return ToolOutcome(f"wrote {len(data)} bytes to {raw}", False, "ok", facts)

    def read_limited(self, raw: str, limit: int) -> bytes:
        """A regular file's bytes under the tools' path rules (no absolute path, no `..`, no
        symlink leading out, nothing behind the fence), at most `limit` of them: `FileTooLarge`
        past that. Contracts read the worker's files through this, never natively run them."""
        target = self.resolve(raw)
        fd = self._open_target(raw, target, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            st = self._guard_identity(raw, handle.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ToolRefused(f"`{raw}` is not a regular file")
            data = read_at_most(handle, limit)
        if len(data) > limit:
            raise FileTooLarge(f"`{raw}` is larger than {limit} bytes")
        return data

    def read_head(self, raw: str, limit: int) -> tuple[bytes, bool]:
        """The first `limit` bytes of a regular file under the same path rules as
        `read_limited`, and whether the file holds more (the judge is shown a file's head)."""
        target = self.resolve(raw)
        fd = self._open_target(raw, target, os.O_RDONLY | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            st = self._guard_identity(raw, handle.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ToolRefused(f"`{raw}` is not a regular file")
            data = read_at_most(handle, limit)
        return data[:limit], len(data) > limit

    def _over_quota(self) -> NoReturn:
        assert self.quota is not None
        raise ToolRefused(f"{self.quota.message()} (this run's writes, in total)")

    def _list(self, tool_input: Mapping[str, Any]) -> ToolOutcome:
        raw = self._arg(tool_input, "path", ".")
        target = self.resolve(raw or ".")
        try:
            fd = self._open_target(raw, target, os.O_RDONLY | os.O_DIRECTORY)
        except NotADirectoryError:
            return ToolOutcome(f"`{raw}` is not a folder", True, "error")
        except FileNotFoundError:
            return ToolOutcome(f"`{raw}` is not a folder", True, "error")
        fence = self.fence
        try:
            with os.scandir(fd) as entries:
                names = sorted(
                    e.name + ("/" if e.is_dir(follow_symlinks=False) else "")
                    for e in entries
                    if not fence.hides_entry(e)
                )
        finally:
            os.close(fd)
        return ToolOutcome("\n".join(names) if names else "(empty)", False, "ok")


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    tool: str
    input_sha256: str
    status: str
    is_error: bool
    facts: Mapping[str, Any] = field(default_factory=dict)  # sealed with the call
    texts: tuple[str, ...] = ()  # kept by hash in the control directory, never sealed inline


@dataclass(frozen=True, slots=True)
class AttemptOutcome:
    """How one attempt ended: the worker's final text (its claim) and why it stopped."""

    claim: str
    stop: str  # the model's stop_reason, "max_turns", or "claim_done" (the claim tool)
    turns: int
    tool_calls: tuple[ToolCallRecord, ...]
    # the `evidence` object of a `claim_done` call; None for a bare final text
    evidence: Mapping[str, Any] | None = None

    @property
    def claims_done(self) -> bool:
        """DONE only from a turn the model finished on purpose: text cut off (`max_tokens`),
        a `refusal`, a `tool_use` turn without tool calls, an unknown stop reason or the
        turn limit make no claim, whatever the text says. A `claim_done` call is a claim."""
        if self.stop == CLAIM_TOOL:
            return True
        return self.stop in FINISHED_STOPS and claims_done(self.claim)

    @property
    def no_claim(self) -> str | None:
        """Why this attempt made no claim at all, by its stop reason (None: it finished)."""
        return stop_failure(self.stop)

    @property
    def ends_task(self) -> bool:
        """A stop no further attempt can help (`TERMINAL_STOPS`): the task is FAILED."""
        return self.stop in TERMINAL_STOPS


@dataclass
class WorkerSession:
    """One task's conversation; it is kept across attempts so feedback lands in context."""

    model: Model
    task: WorkerTask
    toolbox: Toolbox
    max_turns: int = DEFAULT_MAX_TURNS
    on_tool_call: Callable[[ToolCallRecord], None] | None = None
    # every model call, answered or failed, before its reply is acted on (the runner seals it)
    on_model_call: Callable[[ModelCall], None] | None = None
    system: str = ""
    messages: list[Message] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.system:
            self.system = render_worker_prompt(self.task)

    def _say(self, text: str) -> None:
        block: ContentBlock = {"type": "text", "text": text}
        if self.messages and self.messages[-1]["role"] == "user":
            # the API alternates roles: fold into the pending user turn (tool results)
            self.messages[-1]["content"].append(block)
        else:
            self.messages.append({"role": "user", "content": [block]})

    def attempt(self, feedback: str | None = None) -> AttemptOutcome:
        """Run the loop until the model stops calling tools or the turn limit is reached."""
        if feedback is None:
            self._say(f"Do the task `{self.task.title}`. Finish with DONE or FAILED.")
        else:
            self._say(feedback)
        calls: list[ToolCallRecord] = []
        last_text = ""
        for turn in range(1, self.max_turns + 1):
            reply = self._call()
            self.messages.append(reply.to_message())
            if reply.text:
                last_text = reply.text
            uses = reply.tool_uses
            if reply.stop_reason == "pause_turn" and not uses:
                continue  # the server paused a long turn; sending it back as is resumes it
            if reply.stop_reason != "tool_use" or not uses:
                # any other stop ends the attempt; tool calls in a refused or cut-off turn
                # (their input may be incomplete) are never run
                return AttemptOutcome(reply.text, reply.stop_reason, turn, tuple(calls))
            results: list[ContentBlock] = []
            claimed: AttemptOutcome | None = None
            for use in uses:
                if claimed is not None:  # the claim ended the attempt: later calls do not run
                    outcome = ToolOutcome("not run: the attempt ended with claim_done", True,
                                          "skipped")  # fmt: skip
                elif use.get("name") == CLAIM_TOOL:
                    outcome, claimed = _claim(use.get("input"), turn)
                else:
                    outcome = self.toolbox.call(str(use.get("name")), use.get("input"))
                raw_input = use.get("input")
                record = ToolCallRecord(
                    tool=str(use.get("name")),
                    input_sha256=input_sha256(raw_input if isinstance(raw_input, dict) else {}),
                    status=outcome.status,
                    is_error=outcome.is_error,
                    facts=outcome.facts,
                    texts=outcome.texts,
                )
                calls.append(record)
                if self.on_tool_call is not None:
                    self.on_tool_call(record)
                results.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": use.get("id"),
                        "content": [{"type": "text", "text": outcome.text}],
                        "is_error": outcome.is_error,
                    }
                )
            self.messages.append({"role": "user", "content": results})
            if claimed is not None:
                return AttemptOutcome(claimed.claim, claimed.stop, claimed.turns, tuple(calls),
                                      claimed.evidence)  # fmt: skip
        return AttemptOutcome(last_text, "max_turns", self.max_turns, tuple(calls))

    def _call(self) -> AssistantTurn:
        """One model call, reported to `on_model_call` whether it answered or failed; a
        `ModelCallError` goes on to the caller (the attempt is unfinished, not judged)."""
        request = ModelRequest(
            system=self.system,
            messages=list(self.messages),
            tools=TOOL_SPECS,
            task_id=self.task.task_id,
            task_title=self.task.title,
        )
        try:
            reply = self.model.respond(request)
        except ModelCallRefused:
            raise  # no call was made: nothing to record
        except ModelCallError as exc:
            if self.on_model_call is not None:
                self.on_model_call(ModelCall("worker", None, exc.usage or Usage(), str(exc)))
            raise
        if self.on_model_call is not None:
            usage = reply.usage if reply.usage is not None else Usage(model=self.model.name)
            self.on_model_call(ModelCall("worker", reply.stop_reason, usage))
        return reply


def _claim(tool_input: object, turn: int) -> tuple[ToolOutcome, AttemptOutcome | None]:
    """A `claim_done` call: the attempt's claim, or an error the worker can correct."""
    if not isinstance(tool_input, dict):
        return ToolOutcome("claim_done input must be a JSON object", True, "error"), None
    summary = tool_input.get("summary", "")
    evidence = tool_input.get("evidence", {})
    if not isinstance(summary, str):
        return ToolOutcome("claim_done: `summary` must be a string", True, "error"), None
    if not isinstance(evidence, dict):
        return ToolOutcome("claim_done: `evidence` must be an object", True, "error"), None
    text = "claim received; the supervisor now checks it against the record"
    claim = AttemptOutcome(summary, CLAIM_TOOL, turn, (), evidence)
    return ToolOutcome(text, False, "ok"), claim


def _absent(raw: str) -> FileNotFoundError:
    """What a worker meets at the control plane: nothing, as if it did not exist."""
    return FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), raw)


def _clip(text: str) -> str:
    if len(text) <= RESULT_LIMIT:
        return text
    return text[:RESULT_LIMIT] + f"\n… (truncated, {len(text) - RESULT_LIMIT} more characters)"
