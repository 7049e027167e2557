"""Adversary-17 F16, a removal: under `:contract: pytest tests`, a task whose text asks to
remove an obsolete test by name ("Remove the obsolete test tests/test_old.py") removes its
tests: a red-first test of that file is not gone (C022) once the file is. Removing another
test stays refused, and a test the text asks only to edit, removed, stays C022. Through the
CLI, fakes beside the honest twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper.plan.org import parse_plan
from groundskeeper.plan.spec import compile_plan
from groundskeeper.plan.suite_paths import suite_files_removed
from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _sh

TEXT = "Remove the obsolete test tests/test_old.py; the rest of the suite must pass."


def _run(root: Path, cmd: str, text: str = TEXT) -> dict[str, object]:
    (root / "calc.py").write_text("def mul(a, b):\n    return a * b\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(
        "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
    )
    (root / "tests" / "test_old.py").write_text("def test_legacy():\n    assert True\n")
    (root / "tests" / "test_zero.py").write_text(
        "from calc import mul\n\n\ndef test_zero():\n    assert mul(0, 5) == 0\n"
    )
    heading = task("Tidy the suite", "tidy", None, max_attempts="1", contract="pytest tests")
    plan, script = setup(root, heading + "  " + text + "\n",
                         "workers:\n  tidy:\n" + _sh(cmd) + "    - say: DONE\n")  # fmt: skip
    _, doc = resume(plan, script, "--max-parallel", "1")
    return dict(_row(doc, "tidy"))


def test_the_asked_removal_is_done(tmp_path: Path) -> None:
    row = _run(tmp_path, "rm tests/test_old.py")
    assert (row["state"], row["reason"]) == ("DONE", None), row
    assert not (tmp_path / "tests" / "test_old.py").exists()


def test_a_removal_asked_in_a_list_of_objects_is_done(tmp_path: Path) -> None:
    """adversary-19 F1: "Remove X and its test Y" asks for both to go."""
    (tmp_path / "old_api.py").write_text("def old():\n    return 1\n")
    row = _run(
        tmp_path,
        "rm old_api.py tests/test_old.py",
        "Remove the deprecated old_api.py and its test tests/test_old.py.",
    )
    assert (row["state"], row["reason"]) == ("DONE", None), row


@pytest.mark.parametrize(
    ("cmd", "text", "reason"),
    [
        # another test removed beside the asked one: the fence refuses it
        (
            "rm tests/test_old.py tests/test_zero.py",
            TEXT,
            "protected_input_changed: protected input changed: tests/test_zero.py: the worker"
            " tried to change it, and the sandbox refused",
        ),
        # a test the text asks to edit, removed outright
        (
            "rm tests/test_old.py",
            "Remove the obsolete assertion from tests/test_old.py.",
            "C022: pytest tests: tests collected before any work are gone:"
            " tests/test_old.py::test_legacy",
        ),
    ],
)
def test_a_removal_not_asked_for_fails(tmp_path: Path, cmd: str, text: str, reason: str) -> None:
    row = _run(tmp_path, cmd, text)
    assert row["state"] == "FAILED", row
    assert str(row["reason"]).startswith(reason), row["reason"]


@pytest.mark.parametrize(
    ("text", "removed"),
    [
        (TEXT, ("tests/test_old.py",)),
        ("Delete tests/test_old.py.", ("tests/test_old.py",)),
        ("Drop the legacy test module tests/test_old.py, it is obsolete.", ("tests/test_old.py",)),
        ("Remove the obsolete assertion from tests/test_old.py.", ()),
        ("Do not remove tests/test_old.py.", ()),
        ("Fix the test in tests/test_old.py.", ()),
        # adversary-19 F1: the removal verb governs a list of objects
        (
            "Remove the deprecated old_api.py and its test tests/test_old.py",
            ("tests/test_old.py",),
        ),
        ("Delete old_api.py, helpers.py and the module tests/test_old.py.", ("tests/test_old.py",)),
        ("Remove old_api.py and then fix the test in tests/test_old.py.", ()),
        ("Remove old_api.py and keep tests/test_old.py.", ()),
    ],
)
def test_the_reading_of_an_asked_removal(text: str, removed: tuple[str, ...]) -> None:
    (spec,) = compile_plan(
        parse_plan(f"* TODO t\n:PROPERTIES:\n:contract: pytest tests\n:END:\n{text}\n")
    )
    assert suite_files_removed(spec) == removed
