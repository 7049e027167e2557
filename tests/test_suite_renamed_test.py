"""Adversary-19 F19: under `:contract: pytest tests`, a task asked to rename a test function
("Rename the test test_add in tests/test_calc.py to test_add_positive") moves its test: the
red-first id runs now by its new name in the same file, and is not gone (C022). A rename
the text does not ask for, or the old test removed with no new one, stays C022. Through the
CLI, fakes beside the honest twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper.plan.org import parse_plan
from groundskeeper.plan.spec import compile_plan
from groundskeeper.plan.suite_paths import suite_tests_renamed
from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _sh

TEXT = "Rename the test test_add in tests/test_calc.py to test_add_positive."
RENAME = "sed -i 's/def test_add(/def test_add_positive(/' tests/test_calc.py"


def _run(root: Path, cmd: str, text: str = TEXT) -> dict[str, object]:
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_zero():\n    assert add(0, 0) == 0\n"
    )
    heading = task("Tidy the tests", "t", None, max_attempts="1", contract="pytest tests")
    plan, script = setup(root, heading + "  " + text + "\n",
                         "workers:\n  t:\n" + _sh(cmd) + "    - say: DONE\n")  # fmt: skip
    _, doc = resume(plan, script, "--max-parallel", "1")
    return dict(_row(doc, "t"))


def test_the_asked_rename_of_a_test_is_done(tmp_path: Path) -> None:
    row = _run(tmp_path, RENAME)
    assert (row["state"], row["reason"]) == ("DONE", None), row
    assert "def test_add_positive(" in (tmp_path / "tests" / "test_calc.py").read_text()


@pytest.mark.parametrize(
    ("cmd", "text", "gone"),
    [
        # the file is the worker's to edit, but no rename is asked
        (RENAME, "Tidy the test test_add in tests/test_calc.py.", "test_add"),
        # another test renamed than the one asked
        ("sed -i 's/def test_zero(/def test_add_positive(/' tests/test_calc.py", TEXT, "test_zero"),
        # the asked test removed, not renamed
        ("sed -i 's/def test_add(/def _gone(/' tests/test_calc.py", TEXT, "test_add"),
    ],
)
def test_a_rename_not_asked_for_is_gone(tmp_path: Path, cmd: str, text: str, gone: str) -> None:
    row = _run(tmp_path, cmd, text)
    assert row["state"] == "FAILED", row
    assert str(row["reason"]).startswith(
        f"C022: pytest tests: tests collected before any work are gone: tests/test_calc.py::{gone}"
    ), row["reason"]


@pytest.mark.parametrize(
    ("text", "renamed"),
    [
        (TEXT, (("tests/test_calc.py", "test_add", "test_add_positive"),)),
        (
            "Rename test_add to test_add_positive in tests/test_calc.py.",
            (("tests/test_calc.py", "test_add", "test_add_positive"),),
        ),
        ("Rename `test_add` to `test_sum`.", (("", "test_add", "test_sum"),)),
        ("Rename the function test_add as test_sum", (("", "test_add", "test_sum"),)),
        ("Do not rename test_add to test_sum.", ()),
        ("Fix test_add in tests/test_calc.py.", ()),
        ("Rename tests/test_util.py to tests/test_utils.py.", ()),
    ],
)
def test_the_reading_of_an_asked_test_rename(
    text: str, renamed: tuple[tuple[str, str, str], ...]
) -> None:
    (spec,) = compile_plan(
        parse_plan(f"* TODO t\n:PROPERTIES:\n:contract: pytest tests\n:END:\n{text}\n")
    )
    assert suite_tests_renamed(spec) == renamed
