"""A plan a run holds is one file under one name: a plan reached through a symbolic link, or a
file with a second name, is refused before anything runs (exit 2, naming the file itself),
never blamed as tampering nor run twice at once under two locks. Readers still read it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from groundskeeper.cli import main
from tests.test_cli_run import HEAD, task

PLAN = HEAD + task("First", "t1", "grep -qx alpha a.txt")
SCRIPT = (
    "workers:\n"
    "  t1:\n"
    "    - tool: write_file\n"
    '      input: {path: a.txt, content: "alpha\\n"}\n'
    "    - say: DONE\n"
)


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _linked(tmp_path: Path, how: str) -> tuple[Path, Path]:
    """repo/plan.org, and work/plan.org: a symbolic link to it, or a second name of it."""
    repo, work = tmp_path / "repo", tmp_path / "work"
    repo.mkdir()
    work.mkdir()
    real = repo / "plan.org"
    real.write_text(PLAN)
    (work / "w.yaml").write_text(SCRIPT)
    link = work / "plan.org"
    if how == "symlink":
        link.symlink_to(os.path.relpath(real, work))
    else:
        os.link(real, link)
    return real, link


@pytest.mark.parametrize("how", ["symlink", "hard-link"])
def test_a_run_refuses_a_plan_with_a_second_name(tmp_path: Path, how: str) -> None:
    real, link = _linked(tmp_path, how)
    for args in (
        ("resume", str(link), "--model", f"scripted:{link.parent / 'w.yaml'}"),
        ("check", str(link), "--write"),
    ):
        result = _cli(*args)
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output
        if how == "symlink":
            assert f"{link} is a symbolic link (to ../repo/plan.org)" in result.stderr
            assert f"run the file itself ({real}; `--workdir` names" in result.stderr
        else:
            assert f"{link} has 2 names (hard links)" in result.stderr
    # nothing ran, nothing was replaced, nothing was sealed
    assert link.is_symlink() == (how == "symlink")
    assert real.read_text() == PLAN and link.read_text() == PLAN
    assert not (link.parent / "a.txt").exists()
    assert not (link.parent / ".groundskeeper").exists()


def test_the_file_itself_runs_and_a_link_to_it_stays_refused_meanwhile(tmp_path: Path) -> None:
    real, link = _linked(tmp_path, "symlink")
    (real.parent / "w.yaml").write_text(SCRIPT)
    result = _cli("resume", str(real), "--model", f"scripted:{real.parent / 'w.yaml'}")
    assert result.exit_code == 0, result.output
    assert "* DONE First" in real.read_text() and link.is_symlink()
    # a reader follows the link: `check` without --write reads the same file
    checked = _cli("check", str(link), "--workdir", str(real.parent))
    assert checked.exit_code == 0, checked.output
