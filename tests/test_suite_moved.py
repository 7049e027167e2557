"""Adversary-17 F16: under `:contract: pytest tests`, a task asked to rename a test module
("Rename tests/test_util.py to tests/test_utils.py") moves its tests: a red-first test that
runs now, by the same name, from the file the worker was entitled to add is not gone
(C022). A test removed outright still is. Through the CLI, fakes beside the honest twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _sh

TEXT = "Rename tests/test_util.py to tests/test_utils.py."


def _run(root: Path, cmd: str, *, alone: bool = False) -> dict[str, object]:
    """`alone`: the renamed module is the whole suite."""
    (root / "calc.py").write_text("def mul(a, b):\n    return a * b\n")
    (root / "tests").mkdir()
    if not alone:
        (root / "tests" / "test_calc.py").write_text(
            "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
        )
    (root / "tests" / "test_util.py").write_text(
        "from calc import mul\n\n\ndef test_zero():\n    assert mul(0, 5) == 0\n"
    )
    heading = task("Rename the test module", "ren", None, max_attempts="1", contract="pytest tests")
    plan, script = setup(root, heading + "  " + TEXT + "\n",
                         "workers:\n  ren:\n" + _sh(cmd) + "    - say: DONE\n")  # fmt: skip
    _, doc = resume(plan, script, "--max-parallel", "1")
    return dict(_row(doc, "ren"))


@pytest.mark.parametrize(
    "cmd",
    [
        "rm tests/test_util.py",  # removed, not renamed
        # renamed, its test emptied: the red-first test by that name runs nowhere
        "printf 'def test_other():\\n    pass\\n' > tests/test_utils.py; rm tests/test_util.py",
    ],
)
@pytest.mark.parametrize("alone", [False, True])
def test_a_red_first_test_that_runs_nowhere_now_is_gone(
    tmp_path: Path, cmd: str, alone: bool
) -> None:
    row = _run(tmp_path, cmd, alone=alone)
    assert row["state"] == "FAILED"
    assert str(row["reason"]).startswith(
        "C022: pytest tests: tests collected before any work are gone:"
        " tests/test_util.py::test_zero"
    ), row


@pytest.mark.parametrize("alone", [False, True])
def test_the_asked_rename_moves_its_tests_and_is_done(tmp_path: Path, alone: bool) -> None:
    """`alone` (adversary-19 F2): the red-first tests' run without the added file collects
    nothing, since every one of them moved into it: pytest's status 5 is no failure there."""
    row = _run(tmp_path, "mv tests/test_util.py tests/test_utils.py", alone=alone)
    assert (row["state"], row["reason"]) == ("DONE", None), row
    assert (tmp_path / "tests" / "test_utils.py").exists()
