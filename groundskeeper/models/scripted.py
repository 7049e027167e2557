"""`ScriptedModel`: replays a YAML script of worker, author and judge turns offline (tests,
evals, the demo) through the same `Model` interface as Claude. It owns the script format and
its strict loading; it does not own the interface (`model.py`).
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from groundskeeper.models.model import (
    WORKER_TOOLS,
    AssistantTurn,
    ContentBlock,
    ModelRequest,
    ScriptError,
    Usage,
)
from groundskeeper.regular_file import NotARegularFileError, read_regular_file

if TYPE_CHECKING:
    from groundskeeper.models.judge_script import JudgeTurn


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
    # the judge's answers by task `:ID:`, title or "*" (`judge_script.JudgeTurn`), one per call
    judges: Mapping[str, Sequence[JudgeTurn]] = field(default_factory=dict)
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
        unknown = sorted(str(k) for k in data if k not in ("workers", "author", "judges"))
        if unknown:
            raise ScriptError(
                f"{source}: unknown top-level key(s) {', '.join(unknown)};"
                " expected `workers:`, `author:` and `judges:`"
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
        from groundskeeper.models.judge_script import parse_judges  # it needs this module's types

        judges = parse_judges(data.get("judges"), source)
        return cls(workers=workers, author=tuple(author), source=source, judges=judges)

    def script_for(self, task_id: str, title: str) -> Sequence[Turn] | None:
        for key in (task_id, title, "*"):
            if key in self.workers:
                return self.workers[key]
        return None

    def respond(self, request: ModelRequest) -> AssistantTurn:
        started = time.perf_counter()
        turn = self._replay(request)
        ms = int((time.perf_counter() - started) * 1000)
        return AssistantTurn(turn.content, turn.stop_reason, Usage(latency_ms=ms, model=self.name))

    def _replay(self, request: ModelRequest) -> AssistantTurn:
        if request.purpose == "author":
            return self._author_turn()
        if request.purpose == "judge":
            return self._judge_turn(request)
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

    def _author_turn(self) -> AssistantTurn:
        """The next scripted outline; once they have run out, an empty reply (which the
        validator rejects, so a script with too few outlines fails rather than loops)."""
        with self._lock:
            cursor = self._cursors.setdefault(_AUTHOR_CURSOR, _Cursor())
            position = cursor.position
            cursor.position += 1
        text = self.author[position] if position < len(self.author) else ""
        return AssistantTurn(({"type": "text", "text": text},), "end_turn")

    def _judge_turn(self, request: ModelRequest) -> AssistantTurn:
        """The next scripted judge answer for the task; once they have run out (or with none
        scripted), a text turn with no verdict, which the judge counts as a failure."""
        turns = None
        for key in (request.task_id, request.task_title, "*"):
            if key in self.judges:
                turns = self.judges[key]
                break
        with self._lock:
            cursor = self._cursors.setdefault(_JUDGE_CURSOR + request.task_id, _Cursor())
            position = cursor.position
            cursor.position += 1
            block_id = f"toolu_scripted_{next(self._ids):06d}"
        if turns is None or position >= len(turns):
            text = "(the script has no judge answer left for this task)"
            return AssistantTurn(({"type": "text", "text": text},), "end_turn")
        return turns[position].replay(block_id, self.name)


# The author's cursor lives beside the tasks' under a key no task `:ID:` can have (an ID is
# one word; this has a space).
_AUTHOR_CURSOR = "author outline"
_JUDGE_CURSOR = "judge of "


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
