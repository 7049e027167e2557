"""Model backends behind one interface shaped after the Anthropic Messages API.

A `Model` takes a system prompt, messages of content blocks and tool definitions, and answers
with one assistant turn (text and/or `tool_use` blocks plus a `stop_reason`). This module owns
that interface and `ScriptedModel`, which replays a YAML script offline (tests, evals, demo);
it does not own the tool loop (`worker.py`) nor the Anthropic backend (a later issue).
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from groundskeeper.errors import UsageError
from groundskeeper.regular_file import NotARegularFileError, read_regular_file

# Content blocks and messages are plain dicts shaped exactly like Anthropic's, so the real
# backend can pass them through unchanged:
#   {"type": "text", "text": ...}
#   {"type": "tool_use", "id": ..., "name": ..., "input": {...}}
#   {"type": "tool_result", "tool_use_id": ..., "content": ..., "is_error": bool}
ContentBlock = dict[str, Any]
Message = dict[str, Any]  # {"role": "user" | "assistant", "content": [ContentBlock, ...]}

#: The tools a worker may call; a script naming any other tool is refused when loaded.
WORKER_TOOLS: frozenset[str] = frozenset(
    {"sh", "read_file", "write_file", "list_files", "claim_done"}
)


class ScriptError(UsageError):
    """A scripted-model file that cannot be replayed; the message names the file and entry."""


class ModelUnavailableError(UsageError):
    """A `--model` spec naming a backend that does not exist (or not yet)."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool definition as the Messages API takes it."""

    name: str
    description: str
    input_schema: Mapping[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": dict(self.input_schema),
        }


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One call: what the Messages API takes, plus which task is asking.

    `task_id` and `task_title` are not sent to a real API; the scripted model uses them to
    find the task's script, the way a person reading the conversation would know the task.
    """

    system: str
    messages: Sequence[Message]
    tools: Sequence[ToolSpec]
    task_id: str
    task_title: str
    max_tokens: int = 4096


@dataclass(frozen=True, slots=True)
class AssistantTurn:
    """One assistant message: content blocks and why generation stopped."""

    content: tuple[ContentBlock, ...]
    stop_reason: str  # end_turn | tool_use | max_tokens | stop_sequence | pause_turn | refusal

    @property
    def text(self) -> str:
        return "\n".join(b["text"] for b in self.content if b.get("type") == "text")

    @property
    def tool_uses(self) -> list[ContentBlock]:
        return [b for b in self.content if b.get("type") == "tool_use"]

    def to_message(self) -> Message:
        return {"role": "assistant", "content": [dict(b) for b in self.content]}


class Model(Protocol):
    """A model backend. Implementations must be safe to call from several threads."""

    @property
    def name(self) -> str: ...

    def respond(self, request: ModelRequest) -> AssistantTurn: ...


@dataclass(frozen=True, slots=True)
class ToolTurn:
    tool: str
    input: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SayTurn:
    say: str


Turn = ToolTurn | SayTurn


@dataclass(slots=True)
class _Cursor:
    position: int = 0
    last_claim: str = ""


@dataclass
class ScriptedModel:
    """Replays scripted worker turns: by the task's `:ID:`, then its title, then `"*"`.

    Each task has its own cursor that survives across its attempts, so attempt 2 continues
    where attempt 1 stopped. A task whose script has run out ends every further call with its
    last claim (an empty one if it never said anything).
    """

    workers: Mapping[str, Sequence[Turn]]
    author: Sequence[str] = ()
    source: str = "<script>"
    _cursors: dict[str, _Cursor] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _ids: itertools.count[int] = field(default_factory=itertools.count, init=False, repr=False)

    @property
    def name(self) -> str:
        return f"scripted:{self.source}"

    @classmethod
    def from_file(cls, path: Path) -> ScriptedModel:
        try:
            text = read_regular_file(path).decode("utf-8")
        except NotARegularFileError:
            raise ScriptError(
                f"{path}: the model script is not a regular file; pass a YAML file"
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ScriptError(f"{path}: cannot read the model script: {exc}") from exc
        return cls.from_yaml(text, source=str(path))

    @classmethod
    def from_yaml(cls, text: str, *, source: str = "<script>") -> ScriptedModel:
        try:
            data = yaml.load(text, Loader=_StrictLoader)  # a SafeLoader subclass
        except yaml.YAMLError as exc:
            raise ScriptError(f"{source}: not valid YAML: {exc}") from exc
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ScriptError(
                f"{source}: a model script is a mapping with `workers:` (and `author:`)"
            )
        unknown = sorted(str(k) for k in data if k not in ("workers", "author"))
        if unknown:
            raise ScriptError(
                f"{source}: unknown top-level key(s) {', '.join(unknown)};"
                " expected `workers:` and `author:`"
            )
        author = data.get("author") or []
        if not isinstance(author, list) or not all(isinstance(a, str) for a in author):
            raise ScriptError(f"{source}: `author:` must be a list of outline strings")
        raw_workers = data.get("workers") or {}
        if not isinstance(raw_workers, dict):
            raise ScriptError(f"{source}: `workers:` must map a task :ID: or title to turns")
        workers: dict[str, list[Turn]] = {}
        for key, turns in raw_workers.items():
            where = f"{source}: workers.{key!r}"
            if not isinstance(turns, list):
                raise ScriptError(f"{where}: expected a list of turns")
            workers[str(key)] = [_parse_turn(turn, f"{where}[{i}]") for i, turn in enumerate(turns)]
        return cls(workers=workers, author=tuple(author), source=source)

    def script_for(self, task_id: str, title: str) -> Sequence[Turn] | None:
        for key in (task_id, title, "*"):
            if key in self.workers:
                return self.workers[key]
        return None

    def respond(self, request: ModelRequest) -> AssistantTurn:
        turns = self.script_for(request.task_id, request.task_title)
        with self._lock:
            cursor = self._cursors.setdefault(request.task_id, _Cursor())
            if turns is None or cursor.position >= len(turns):
                claim = cursor.last_claim
                return AssistantTurn(({"type": "text", "text": claim},), "end_turn")
            turn = turns[cursor.position]
            cursor.position += 1
            if isinstance(turn, SayTurn):
                cursor.last_claim = turn.say
                return AssistantTurn(({"type": "text", "text": turn.say},), "end_turn")
            block_id = f"toolu_scripted_{next(self._ids):06d}"
        block: ContentBlock = {
            "type": "tool_use",
            "id": block_id,
            "name": turn.tool,
            "input": dict(turn.input),
        }
        return AssistantTurn((block,), "tool_use")


class _StrictLoader(yaml.SafeLoader):
    """safe_load, except that a key given twice is an error: in a script, the second entry
    for a task would silently replace the first."""


def _construct_strict_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> Any:
    seen: set[Any] = set()
    for key_node, _value in node.value:
        key = loader.construct_object(key_node, deep=True)
        try:
            duplicate = key in seen
            seen.add(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, "a mapping key must be a plain value", key_node.start_mark
            ) from None
        if duplicate:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark
            )
    return loader.construct_mapping(node, deep=True)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_strict_mapping
)


def _json_native(value: object) -> bool:
    """Is `value` what a Messages API tool input can hold (string keys, JSON values)?"""
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list):
        return all(_json_native(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_native(v) for k, v in value.items())
    return False


def _parse_turn(raw: object, where: str) -> Turn:
    if not isinstance(raw, dict):
        raise ScriptError(f"{where}: a turn is `{{tool: NAME, input: {{...}}}}` or `{{say: TEXT}}`")
    keys = set(raw)
    if keys == {"say"}:
        if not isinstance(raw["say"], str):
            raise ScriptError(f"{where}: `say:` must be a string")
        return SayTurn(raw["say"])
    if "tool" in keys and keys <= {"tool", "input"}:
        tool = raw["tool"]
        if not isinstance(tool, str) or tool not in WORKER_TOOLS:
            raise ScriptError(
                f"{where}: unknown tool {tool!r}; the tools are {', '.join(sorted(WORKER_TOOLS))}"
            )
        tool_input = raw.get("input")
        if tool_input is None:
            tool_input = {}
        if not isinstance(tool_input, dict):
            raise ScriptError(f"{where}: `input:` must be a mapping")
        if not _json_native(tool_input):
            raise ScriptError(
                f"{where}: `input:` must hold JSON values under string keys (quote dates,"
                " numbers used as keys and binary data)"
            )
        return ToolTurn(tool, tool_input)
    unknown = sorted(str(k) for k in keys - {"tool", "input", "say"})
    detail = f"unknown key(s) {', '.join(unknown)}" if unknown else "mixes `say:` and `tool:`"
    raise ScriptError(f"{where}: {detail}; a turn is `{{tool, input}}` or `{{say}}`")


def load_model(spec: str) -> Model:
    """Resolve a `--model` spec: `scripted:FILE` or `anthropic:MODEL`."""
    kind, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ModelUnavailableError(
            f"--model {spec!r}: expected `scripted:FILE` or `anthropic:MODEL`"
        )
    if kind == "scripted":
        return ScriptedModel.from_file(Path(rest))
    if kind == "anthropic":
        raise ModelUnavailableError(
            f"--model {spec!r}: the Anthropic backend is not available yet in this version;"
            " use --model scripted:FILE"
        )
    raise ModelUnavailableError(
        f"--model {spec!r}: unknown backend {kind!r}; expected `scripted` or `anthropic`"
    )
