from __future__ import annotations

import json

import pytest

from groundskeeper.diagnostics import Diagnostic, has_errors


def test_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match="level must be one of"):
        Diagnostic("fatal", "x", "y")  # type: ignore[arg-type]


def test_json_has_exactly_the_five_keys() -> None:
    d = Diagnostic("error", "Summarize", "input `a:b` has no upstream producer", 4, "W002")
    assert json.loads(json.dumps(d.to_json())) == {
        "level": "error",
        "scope": "Summarize",
        "message": "input `a:b` has no upstream producer",
        "line": 4,
        "code": "W002",
    }
    assert Diagnostic.from_json(d.to_json()) == d


def test_format_is_compiler_style() -> None:
    d = Diagnostic("error", "Summarize", "input `events:list` has no upstream producer", 4, "W002")
    assert d.format("plan.org") == (
        "plan.org:4: error: Summarize: input `events:list` has no upstream producer [W002]"
    )
    assert Diagnostic("warning", "outline", "m").format() == "warning: outline: m"


def test_has_errors_only_counts_error_level() -> None:
    assert not has_errors([Diagnostic("warning", "a", "b"), Diagnostic("info", "a", "b")])
    assert has_errors([Diagnostic("warning", "a", "b"), Diagnostic("error", "a", "b")])
