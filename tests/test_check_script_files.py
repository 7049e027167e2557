"""Adversary-11 O1: a check that runs a script file — `sh run.sh`, `bash run.sh`, `. ./run.sh`,
`./run.sh` — fails with 127 in the sandbox, which has no shell to run a file and runs no
workdir file as a command. Lint says so (T004, with what to write instead), the run fails
the same way, and the docs offer no such form as a check idiom: each command docs/plans.md
gives as "a workdir program the check runs" lints without T004."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from groundskeeper.plan.lint_checks import judge_check
from groundskeeper.plan.org import Check
from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _script

DOCS = Path(__file__).resolve().parent.parent / "docs" / "plans.md"

FORMS = {
    "sh": ('test "$(sh run.sh)" = hello', "`sh`", "the sandbox runs no shell but the check's own"),
    "bash": ("bash run.sh", "`bash`", "the sandbox runs no shell but the check's own"),
    "dot": (". ./run.sh", "`.`", "the sandbox runs no shell but the check's own"),
    "path": ("./run.sh", "`./run.sh`", "a check cannot run a workdir file as a command"),
}


def _run_sh(root: Path) -> None:
    (root / "run.sh").write_text("echo hello\n")


@pytest.mark.parametrize("form", sorted(FORMS))
def test_lint_refuses_a_check_that_runs_a_script_file(tmp_path: Path, form: str) -> None:
    check, name, why = FORMS[form]
    _run_sh(tmp_path)
    plan, _ = setup(tmp_path, task("Print hello", "t", check), _script("t"))
    result = CliRunner().invoke(main, ["lint", str(plan)])
    found = [line for line in result.output.splitlines() if "[T004]" in line]
    assert len(found) == 1, result.output
    assert f"check uses {name}, which the sandbox does not have: {why}" in found[0]
    assert "`python3 FILE`" in found[0]
    assert result.exit_code == 1


@pytest.mark.parametrize("command", ["sh run.sh", "bash run.sh", ". ./run.sh", "./run.sh"])
def test_the_sandbox_checks_run_in_answers_127(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    _run_sh(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["sh", "--", command])
    assert result.exit_code == 127, (result.output, result.stderr)
    assert "command not found (not in the sandbox)" in result.stderr
    assert "hello" not in result.stdout


def test_the_honest_twin_a_python_program_passes(tmp_path: Path) -> None:
    (tmp_path / "run.py").write_text("print('hello')\n")
    plan, script = setup(
        tmp_path, task("Print hello", "t", 'test "$(python3 run.py)" = hello'), _script("t")
    )
    lint = CliRunner().invoke(main, ["lint", str(plan)])
    assert "[T004]" not in lint.output, lint.output
    _, doc = resume(plan, script)
    assert _row(doc, "t")["state"] == "DONE", doc


def _documented_programs() -> list[str]:
    """The commands docs/plans.md lists as "a workdir program the check runs (…)"."""
    text = " ".join(DOCS.read_text().split())
    found: list[str] = []
    for match in re.finditer(r"a workdir program the check runs \(([^()]*)", text):
        found += [c for c in re.findall(r"`([^`]+)`", match.group(1)) if " " in c or "/" in c]
    return found


def test_every_check_program_the_docs_offer_lints_without_t004() -> None:
    commands = _documented_programs()
    assert "python3 check.py" in commands, commands
    for command in commands:
        findings = judge_check(Check(text=command, language="sh", line=1, source="done-when"))
        assert [f for f in findings if f[1] == "T004"] == [], (command, findings)
