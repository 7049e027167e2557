"""Adversary-20 F7: under `:contract: pytest tests`, a task asked to remove a test by name
("Remove the obsolete test_legacy test from tests/test_calc.py") removes it: its red-first
id no longer runs and is not gone (C022). A test the text does not name, or one it names in
a negated sentence, removed beside it stays C022. Through the CLI, fakes beside the honest
twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper.plan.org import parse_plan
from groundskeeper.plan.spec import compile_plan
from groundskeeper.plan.suite_paths import suite_tests_removed
from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row

TEXT = "add() subtracts; make it add. Remove the obsolete test_legacy test from tests/test_calc.py."
KEPT = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
FIXED = "def add(a, b):\n    return a + b\n"


def _run(root: Path, tests: str, text: str = TEXT) -> dict[str, object]:
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(
        KEPT + "\n\ndef test_legacy():\n    assert add('a', 1) == 'a1'\n"
    )
    heading = task("Fix add in calc.py", "t", None, max_attempts="1", contract="pytest tests")
    worker = (
        "workers:\n  t:\n"
        f"    - {{tool: write_file, input: {{path: tests/test_calc.py, content: {tests!r}}}}}\n"
        f"    - {{tool: write_file, input: {{path: calc.py, content: {FIXED!r}}}}}\n"
        "    - say: DONE\n"
    )
    plan, script = setup(root, heading + "  " + text + "\n", worker.replace("'", '"'))
    _, doc = resume(plan, script, "--max-parallel", "1")
    return dict(_row(doc, "t"))


def test_a_test_removed_beside_the_asked_one_is_gone(tmp_path: Path) -> None:
    row = _run(tmp_path, "from calc import add\n")
    assert row["state"] == "FAILED"
    assert "C022" in str(row["reason"])
    assert "are gone: tests/test_calc.py::test_add" in str(row["reason"])
    assert "test_legacy" not in str(row["reason"])


def test_a_removal_the_text_negates_is_gone(tmp_path: Path) -> None:
    text = "add() subtracts; make it add. Do not remove test_legacy from tests/test_calc.py."
    row = _run(tmp_path, KEPT, text)
    assert row["state"] == "FAILED"  # the edit refused (not asked), so the failing test runs
    assert str(row["reason"]).startswith(
        "C020: pytest tests: 1 of the suite's tests failed: tests/test_calc.py::test_legacy"
    )


def test_the_asked_removal_of_a_test_is_done(tmp_path: Path) -> None:
    row = _run(tmp_path, KEPT)
    assert (row["state"], row["reason"]) == ("DONE", None)


@pytest.mark.parametrize(
    ("text", "removed"),
    [
        (TEXT, ("tests/test_calc.py::test_legacy",)),
        ("Delete test_old in tests/test_a.py.", ("tests/test_a.py::test_old",)),
        ("Drop the TestLegacy class; it is unused.", ("::TestLegacy",)),
        ("Remove the test test_x.", ("::test_x",)),
        ("Remove the tests from tests/test_a.py.", ()),
        ("Remove testing from the notes.", ()),
        ("Do not remove test_old from tests/test_a.py.", ()),
        ("Fix test_add in tests/test_calc.py.", ()),
    ],
)
def test_the_reading_of_an_asked_test_removal(text: str, removed: tuple[str, ...]) -> None:
    (spec,) = compile_plan(
        parse_plan(f"* TODO t\n:PROPERTIES:\n:contract: pytest tests\n:END:\n{text}\n")
    )
    assert suite_tests_removed(spec) == removed
