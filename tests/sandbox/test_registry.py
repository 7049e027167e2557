"""The registry's one table of synopses: complete, honest about what exists, and the source
of `command_reference()` and of the "did you mean" an unknown command gets."""

from __future__ import annotations

import pytest

from groundskeeper.sandbox.registry import (
    COMMAND_SYNOPSES,
    COMMANDS,
    Synopsis,
    available_synopses,
    closest_command,
    command_reference,
    did_you_mean,
)


def test_every_command_has_a_synopsis() -> None:
    assert sorted(COMMANDS - set(COMMAND_SYNOPSES)) == []


def test_every_synopsis_names_a_real_command() -> None:
    assert set(COMMAND_SYNOPSES) - COMMANDS == set()


def test_synopses_are_one_line_each() -> None:
    for name, synopsis in COMMAND_SYNOPSES.items():
        assert isinstance(synopsis, Synopsis)
        assert synopsis.summary and "\n" not in synopsis.summary, name
        assert all(option and "\n" not in option for option in synopsis.options), name


def test_only_what_the_sandbox_has_is_offered() -> None:
    shown = available_synopses()
    assert list(shown) == sorted(COMMANDS)


def test_command_reference_is_a_markdown_line_per_command() -> None:
    text = command_reference()
    lines = text.splitlines()
    assert text.endswith("\n") and len(lines) == len(COMMANDS)
    assert "- `base64` — encode or decode base64 (-d, -i, -w COLS)" in lines
    assert "- `dirname` — strip the last component" in lines
    assert all(line.startswith("- `") for line in lines)


@pytest.mark.parametrize(
    ("name", "closest"),
    [
        ("grpe", "grep"),  # a dropped-in letter
        ("gerp", "grep"),  # two letters swapped
        ("sedd", "sed"),
        ("realpth", "realpath"),
        ("sha265sum", "sha256sum"),
        ("/usr/bin/grep", "grep"),  # a path means its last component
        ("./sort", "sort"),
        ("bash", None),  # at difflib's default 0.6 this would be base64
        ("curl", None),
        ("sh", None),
        ("/bin/sh", None),
        ("grep", None),  # a command the sandbox has is not "unknown"
    ],
)
def test_closest_command(name: str, closest: str | None) -> None:
    assert closest_command(name) == closest
    assert did_you_mean(name) == (f"; did you mean {closest}?" if closest else "")


def test_a_huge_unknown_name_is_answered_at_once() -> None:
    import time

    started = time.perf_counter()
    assert closest_command("grpe" + "x" * 1_000_000) is None
    assert time.perf_counter() - started < 0.5
