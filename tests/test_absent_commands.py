"""A common command the sandbox lacks (`mktemp`; adversary-13 O1) answers 127 with what to
write instead, in a worker's `sh` and in lint's T004 alike (`registry.ABSENT_ADVICE`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import parse_plan
from groundskeeper.sandbox.registry import did_you_mean

INSTEAD = "write to a name of your own beside the target and rename it"


def test_mktemp_in_the_sandbox_is_127_saying_what_to_write_instead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["sh", "--", "mktemp out.XXXXXX"])
    assert result.exit_code == 127
    assert "mktemp: command not found (not in the sandbox); for a temporary file," in result.output
    assert INSTEAD in result.output


def test_the_idiom_it_offers_runs_in_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out").mkdir()
    idiom = "echo total > out/.report.tmp && mv out/.report.tmp out/report.txt"
    result = CliRunner().invoke(main, ["sh", "--", idiom])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "report.txt").read_text() == "total\n"
    assert not (tmp_path / "out" / ".report.tmp").exists()


def test_lint_t004_says_the_same() -> None:
    text = '* TODO t\n:PROPERTIES:\n:done-when: t=$(mktemp); test -s "$t"\n:END:\n'
    (found,) = [d for d in validate(parse_plan(text)) if d.code == "T004"]
    assert found.message.startswith("check uses `mktemp`, which the sandbox does not have; ")
    assert INSTEAD in found.message


def test_a_slip_of_the_fingers_still_gets_its_closest_name() -> None:
    assert did_you_mean("gerp") == "; did you mean grep?"
    assert did_you_mean("/usr/bin/mktemp").startswith("; for a temporary file,")
