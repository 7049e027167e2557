"""Scripted judges: the `judges:` section of a scripted model's YAML, read and replayed.

It owns the three kinds of scripted judge answer — a verdict (`{verdict, reasons}`, sent as
the forced `verdict` tool call a real judge makes), an API error that persisted (`{error}`)
and a raw turn (`{say}` or `{tool, input}`, with an optional `stop_reason`) for answers a
judge must refuse to read. It does not judge anything: `acceptance.judge` reads the turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from groundskeeper.models.model import AssistantTurn, ModelCallError, ScriptError, Usage

VERDICT_TOOL = "verdict"
VERDICTS = ("pass", "fail")


@dataclass(frozen=True, slots=True)
class JudgeTurn:
    """One scripted judge answer. Exactly one of the shapes is set."""

    verdict: str | None = None
    reasons: tuple[str, ...] = ()
    error: str | None = None  # the call fails with this, as an API error past its retries
    say: str | None = None  # a text turn (no tool call)
    tool: str | None = None  # a raw tool call, `input` as written (malformed on purpose)
    input: Any = None
    stop_reason: str | None = None

    def replay(self, block_id: str, model: str) -> AssistantTurn:
        usage = Usage(model=model)
        if self.error is not None:
            raise ModelCallError(self.error, usage=usage)
        if self.verdict is not None:
            block = {
                "type": "tool_use",
                "id": block_id,
                "name": VERDICT_TOOL,
                "input": {"verdict": self.verdict, "reasons": list(self.reasons)},
            }
            return AssistantTurn((block,), self.stop_reason or "tool_use", usage)
        if self.tool is not None:
            raw = {"type": "tool_use", "id": block_id, "name": self.tool, "input": self.input}
            return AssistantTurn((raw,), self.stop_reason or "tool_use", usage)
        text = {"type": "text", "text": self.say or ""}
        return AssistantTurn((text,), self.stop_reason or "end_turn", usage)


def parse_judges(raw: object, source: str) -> dict[str, list[JudgeTurn]]:
    """`judges:` as written: a mapping of task `:ID:`, title or `"*"` to a list of answers."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ScriptError(f"{source}: `judges:` must map a task :ID: or title to answers")
    judges: dict[str, list[JudgeTurn]] = {}
    for key, turns in raw.items():
        where = f"{source}: judges.{key!r}"
        if not isinstance(turns, list):
            raise ScriptError(f"{where}: expected a list of judge answers")
        judges[str(key)] = [_judge_turn(turn, f"{where}[{i}]") for i, turn in enumerate(turns)]
    return judges


_SHAPES = (
    "`{verdict: pass|fail, reasons: [...]}`, `{error: MESSAGE}`, `{say: TEXT}` or"
    " `{tool: NAME, input: ...}` (the last two with an optional `stop_reason:`)"
)


def _judge_turn(raw: object, where: str) -> JudgeTurn:
    if not isinstance(raw, Mapping):
        raise ScriptError(f"{where}: a judge answer is {_SHAPES}")
    keys = set(raw)
    stop = raw.get("stop_reason")
    if stop is not None and not isinstance(stop, str):
        raise ScriptError(f"{where}: `stop_reason:` must be a string such as refusal")
    if "verdict" in keys and keys <= {"verdict", "reasons", "stop_reason"}:
        verdict = raw["verdict"]
        if verdict not in VERDICTS:
            raise ScriptError(
                f"{where}: `verdict:` is pass or fail, not {verdict!r} (script a malformed"
                " answer as `{tool: verdict, input: ...}`)"
            )
        reasons = raw.get("reasons") or []
        if not isinstance(reasons, list) or not all(isinstance(r, str) for r in reasons):
            raise ScriptError(f"{where}: `reasons:` must be a list of strings")
        return JudgeTurn(verdict=verdict, reasons=tuple(reasons), stop_reason=stop)
    if keys == {"error"}:
        if not isinstance(raw["error"], str) or not raw["error"]:
            raise ScriptError(f"{where}: `error:` must be the message of the API error")
        return JudgeTurn(error=raw["error"])
    if "say" in keys and keys <= {"say", "stop_reason"}:
        if not isinstance(raw["say"], str):
            raise ScriptError(f"{where}: `say:` must be a string")
        return JudgeTurn(say=raw["say"], stop_reason=stop)
    if "tool" in keys and keys <= {"tool", "input", "stop_reason"}:
        if not isinstance(raw["tool"], str):
            raise ScriptError(f"{where}: `tool:` must be a tool name")
        return JudgeTurn(tool=raw["tool"], input=raw.get("input"), stop_reason=stop)
    raise ScriptError(f"{where}: a judge answer is {_SHAPES}")
