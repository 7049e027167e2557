"""The one shape every rung speaks: a `Diagnostic`.

A diagnostic names what is wrong (`scope`), how bad it is (`level`), where (`line`, 1-based or
None) and which stable rule found it (`code`). It owns no rule itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

Level = Literal["error", "warning", "info"]

LEVELS: tuple[Level, ...] = ("error", "warning", "info")


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One finding of a validator, a check or a verifier."""

    level: Level
    scope: str
    message: str
    line: int | None = None
    code: str = ""

    def __post_init__(self) -> None:
        if self.level not in LEVELS:
            raise ValueError(f"level must be one of {LEVELS}, not {self.level!r}")

    def to_json(self) -> dict[str, Any]:
        """The JSON object for this diagnostic: exactly level, scope, message, line, code."""
        return {
            "level": self.level,
            "scope": self.scope,
            "message": self.message,
            "line": self.line,
            "code": self.code,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Diagnostic:
        return cls(
            level=data["level"],
            scope=data["scope"],
            message=data["message"],
            line=data.get("line"),
            code=data.get("code", ""),
        )

    def format(self, filename: str | None = None) -> str:
        """Compiler-style line: `plan.org:4: error: Scope: message [CODE]`."""
        where = filename or ""
        if self.line is not None:
            where = f"{where}:{self.line}" if where else str(self.line)
        prefix = f"{where}: " if where else ""
        suffix = f" [{self.code}]" if self.code else ""
        return f"{prefix}{self.level}: {self.scope}: {self.message}{suffix}"


def has_errors(diagnostics: Iterable[Diagnostic]) -> bool:
    """True when any diagnostic is error-level (the fail-closed test every gate uses)."""
    return any(d.level == "error" for d in diagnostics)
