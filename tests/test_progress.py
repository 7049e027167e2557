"""The progress narrator: plain lines off a terminal, a status line with counts and tokens."""

from __future__ import annotations

import pytest

from groundskeeper.cli.progress import Progress


def test_off_a_terminal_narration_is_plain_lines_on_stderr(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with Progress(live=False) as progress:
        progress.say("▶ draft")
        progress.set_total(3)
        progress.task_started("draft")
        progress.task_ended("draft")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == "▶ draft\n"


def test_the_status_line_counts_done_running_and_tokens() -> None:
    progress = Progress(live=False)
    assert progress.status_line().startswith("authoring · ")
    progress.set_total(7)
    for task in ("a", "b", "c", "d", "e", "f"):
        progress.task_started(task)
    progress.task_ended("a")
    progress.add_tokens(1234)
    line = progress.status_line()
    assert line.startswith("1/7 done · running: b, c, d, e +1 · ")
    assert line.endswith(" s · 1234 tokens")


def test_a_live_line_draws_on_stderr_and_never_on_stdout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with Progress(live=True) as progress:
        progress.set_total(1)
        progress.say("sealed the plan")
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "sealed the plan" in captured.err
