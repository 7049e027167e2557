"""Adversary-11 H2: `#+PROTECT: README.md` covers `docs/readme.md` (a pattern without a `/`
matches at any depth, and letters match in either case, since a file system that folds case
opens one as the other), so the fence refuses a task whose text asks it to write that file.
Lint says so before the run (T032), naming the pattern and the fix, from the reading the run
uses (`suite_paths.asked_but_kept`, `path_patterns.covering`); the run's refusal names the
same pattern. Through the CLI: lint, then the run, each beside its honest twin."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from tests.test_cli_run import HEAD, resume, task
from tests.test_paths_cli import _row, _script, _write

CHECK = "grep -q Plugin docs/readme.md"


def _plan(root: Path, head: str, title: str = "Write docs/readme.md for the plugin") -> Path:
    (root / "README.md").write_text("# Project\n")
    (root / "docs").mkdir()
    plan = root / "plan.org"
    plan.write_text(HEAD + head + task(title, "readme", CHECK, max_attempts="1"))
    (root / "workers.yaml").write_text(_script("readme", _write("docs/readme.md", "# Plugin")))
    return plan


def _lint(plan: Path) -> list[str]:
    result = CliRunner().invoke(main, ["lint", str(plan)])
    return [line for line in result.output.splitlines() if "[T032]" in line]


@pytest.mark.parametrize(
    ("head", "pattern", "where"),
    [
        ("#+PROTECT: README.md\n", "README.md", "`:protect:`/`#+PROTECT:`"),
        ("#+PROTECT: *.MD\n", "*.MD", "`:protect:`/`#+PROTECT:`"),
        ("#+HIDE: readme.md\n", "readme.md", "`:hide:`/`#+HIDE:`"),
    ],
)
def test_lint_names_the_pattern_that_will_refuse_an_asked_write(
    tmp_path: Path, head: str, pattern: str, where: str
) -> None:
    found = _lint(_plan(tmp_path, head))
    assert len(found) == 1, found
    assert (
        f"task readme asks its worker to write `docs/readme.md`, but the {where} pattern"
        f" `{pattern}` covers it"
    ) in found[0]
    assert "neither the ask nor `:writable:` frees it; narrow the pattern" in found[0]


def test_lint_says_why_and_how_to_anchor(tmp_path: Path) -> None:
    (line,) = _lint(_plan(tmp_path, "#+PROTECT: README.md\n"))
    assert (
        "(a pattern without a `/` before its end matches at any depth; letters match in"
        " either case)"
    ) in line
    assert "anchor it, `/README.md`, or name the very file it is for" in line


@pytest.mark.parametrize(
    ("head", "title"),
    [
        ("#+PROTECT: /README.md\n", "Write docs/readme.md for the plugin"),  # anchored
        ("#+PROTECT: README.md\n", "Write docs/intro.md from docs/readme.md"),  # a mention
        ("#+PROTECT: docs/api.md\n", "Write docs/readme.md for the plugin"),  # not covered
    ],
)
def test_lint_is_silent_when_the_run_lets_the_write_through(
    tmp_path: Path, head: str, title: str
) -> None:
    assert _lint(_plan(tmp_path, head, title)) == []


def test_the_run_refuses_the_write_naming_the_pattern_lint_named(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "#+PROTECT: README.md\n")
    result, doc = resume(plan, tmp_path / "workers.yaml")
    row = _row(doc, "readme")
    assert row["state"] == "FAILED", doc
    assert "(a protected pattern of the task: `README.md`)" in result.stderr + result.stdout
    assert not (tmp_path / "docs" / "readme.md").exists()


def test_the_anchored_pattern_lets_the_task_be_done(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "#+PROTECT: /README.md\n")
    result, doc = resume(plan, tmp_path / "workers.yaml")
    assert _row(doc, "readme")["state"] == "DONE", doc
    assert (tmp_path / "docs" / "readme.md").read_text() == "# Plugin\n"
    assert (tmp_path / "README.md").read_text() == "# Project\n"
    assert result.exit_code == 0
