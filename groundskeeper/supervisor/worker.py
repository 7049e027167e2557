"""The worker: one task's agent loop — model turn, tool calls, results back — until it claims.

It owns the worker prompt, the model's side of the tool loop (the tools themselves are
`acceptance.toolbox`), the `claim_done` tool that ends an attempt with a claim, and the
per-attempt turn limit. It does not judge the claim: the pipeline checks evidence, contracts
and the acceptance check afterwards.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from groundskeeper.acceptance.check import SealedCheck
from groundskeeper.acceptance.toolbox import (
    Toolbox,
    ToolOutcome,
)
from groundskeeper.models.model import (
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
from groundskeeper.models.prompts import load_prompt
from groundskeeper.plan.invariants import Invariant, render_invariants
from groundskeeper.supervisor.activity import Activity

DEFAULT_MAX_TURNS = 30

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
    held_out: bool = False  # the run hides inputs from workers (`:hide:`, `#+HIDE:`)
    protected: tuple[str, ...] = ()  # expected files protected without a `:protect:`
    checked_by: tuple[str, ...] = ()  # the contracts that run the work itself (`pytest …`)


def render_worker_prompt(task: WorkerTask, template: str | None = None) -> str:
    if task.check is None and task.checked_by:
        listed = ", ".join(f"`{c}`" for c in task.checked_by)
        check = (
            "This task's acceptance check is the project's test suite, run by its contract"
            f" ({listed}) in the sandbox after you claim; run the tests yourself first"
            " (`python3 -m pytest -q`)."
        )
    elif task.check is None:
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
            " It is not evidence when you wrote, before that run, the program it ran or a file"
            " holding the quote; saving its report afterwards is fine."
        )
    if task.held_out:
        lines.append(
            "Held-out files: the plan hides some inputs from every worker (an answer key, held-out"
            " tests). They exist and the acceptance check reads them, but your tools and the"
            " sandbox see them as absent, and what they hold is not told. Do the work the task"
            " asks for; it is judged against them."
        )
    if task.protected:
        listed = ", ".join(f"`{p}`" for p in task.protected)
        lines.append(
            f"Expected files your work is compared against, not yours to change: {listed}."
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
    # called before a reply's tool calls run and before a request carrying feedback or tool
    # results is sent: the runner makes the steps recorded so far durable (a decision point)
    before_acting: Callable[[], None] | None = None
    # the run's count of actions on the workdir: each tool call, from its start until its
    # step is sealed (`supervisor.activity`); None: not counted
    activity: Activity | None = None
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
            if (turn > 1 or feedback is not None) and self.before_acting is not None:
                self.before_acting()
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
            if self.before_acting is not None:
                self.before_acting()
            results: list[ContentBlock] = []
            claimed: AttemptOutcome | None = None
            for use in uses:
                acting = claimed is None and use.get("name") != CLAIM_TOOL
                with self.activity.acting() if acting and self.activity else nullcontext():
                    outcome, record, claimed = self._use(use, turn, claimed)
                calls.append(record)
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

    def _use(
        self, use: ContentBlock, turn: int, claimed: AttemptOutcome | None
    ) -> tuple[ToolOutcome, ToolCallRecord, AttemptOutcome | None]:
        """One tool use of a reply run (or refused, after the claim) and its step sealed."""
        if claimed is not None:  # the claim ended the attempt: later calls do not run
            outcome = ToolOutcome("not run: the attempt ended with claim_done", True, "skipped")
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
        if self.on_tool_call is not None:
            self.on_tool_call(record)
        return outcome, record, claimed

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
