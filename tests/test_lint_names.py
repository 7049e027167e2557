"""A misspelt property is not silently ignored: a name close to one groundskeeper reads is a
warning naming the intended one (P001), and an error when it was meant as the task's only
check (P002); org's own names and far-off names are left alone."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from groundskeeper.plan.lint import validate
from groundskeeper.plan.lint_names import intended_property
from groundskeeper.plan.org import parse_plan

CHECK = ":done-when: grep -q ok out.txt\n"


def findings(props: str) -> list[tuple[str, str, str]]:
    text = f"* TODO t\n:PROPERTIES:\n{props}:END:\n"
    return [(d.level, d.code, d.message) for d in validate(parse_plan(text))]


@pytest.mark.parametrize(
    ("written", "intended"),
    [
        ("protec", "protect"),
        ("contarct", "contract"),
        ("contarct+", "contract"),
        ("evidense", "evidence"),
        ("judge_files", "judge-files"),
        ("GATE-FILE", "gate-files"),
        ("max-attempt", "max-attempts"),
        ("judeg", "judge"),
        ("hidde", "hide"),
        ("writeable", "writable"),
    ],
)
def test_a_near_miss_is_a_warning_naming_the_intended_property(written: str, intended: str) -> None:
    assert intended_property(written) == intended
    ((level, code, message),) = findings(f":{written}: x\n{CHECK}")
    assert (level, code) == ("warning", "P001")
    assert message == (
        f"`:{written}:` is not a property groundskeeper reads, so it does nothing; did you"
        f" mean `:{intended}:`?"
    )


@pytest.mark.parametrize("written", ["done-whne", "DONE_WHEN", "done-when2", "doen-when"])
def test_a_misspelt_check_on_a_task_without_one_is_an_error(written: str) -> None:
    found = findings(f":{written}: grep -q ok out.txt\n")
    assert ("error", "P002") in [(level, code) for level, code, _ in found]
    (message,) = [m for _, c, m in found if c == "P002"]
    assert "did you mean `:done-when:`?" in message
    assert "DONE would rest on the worker's word" in message


def test_a_misspelt_check_beside_a_real_one_is_a_warning() -> None:
    found = findings(f":done-whne: test -s a.txt\n{CHECK}")
    assert [(level, code) for level, code, _ in found] == [("warning", "P001")]


@pytest.mark.parametrize(
    "name",
    ["ID", "Done-When", "CONTRACT+", "CUSTOM_ID", "EFFORT", "date", "dir", "ORDERED", "owner",
     "priority-note", "estimate", "reviewer"],
)  # fmt: skip
def test_own_names_in_any_case_and_org_or_unrelated_names_are_quiet(name: str) -> None:
    assert intended_property(name) is None
    assert [f for f in findings(f":{name}: x\n{CHECK}") if f[1].startswith("P")] == []


def test_lint_through_the_cli_names_line_and_exits_1(tmp_path: Path) -> None:
    plan = tmp_path / "plan.org"
    plan.write_text(
        "#+TODO: TODO | DONE FAILED\n* TODO write\n  :PROPERTIES:\n"
        "  :protec: tests/\n  :done-whne: test -s a.txt\n  :END:\n"
    )
    result = CliRunner().invoke(main, ["lint", str(plan)])
    assert result.exit_code == 1
    assert f"{plan}:4: warning: write: `:protec:` is not a property" in result.output
    assert f"{plan}:5: error: write: `:done-whne:` is not a property" in result.output
