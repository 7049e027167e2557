"""Adversary-17 F6, F7: a `pytest` contract's pass answers to the same backstop as a check's
(`RunPaths.inputs_read`): a file the suite read that was there before the work — the tests'
data (`data/expected.json`), a helper module (`expected_values.py`), a file beside a test
file the contract names — and that a worker not entitled to it changed fails it (C029),
though it lies outside the contract's test paths. Through the CLI, fakes beside their honest
twins."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _sh, _write

BROKEN = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\\n    return a + b\\n"
BY_DATA = (
    "import json\n\nfrom calc import add\n\n\ndef test_add():\n"
    '    assert add(2, 3) == json.load(open("data/expected.json"))["add_2_3"]\n'
)
BY_MODULE = "from calc import add\nfrom expected_values import ADD_2_3\n\n\ndef test_add():\n    assert add(2, 3) == ADD_2_3\n"  # noqa: E501
TEXT = "Fix add in calc.py so that it returns the sum and the tests pass."


def _seed(root: Path, module: bool) -> None:
    (root / "calc.py").write_text(BROKEN)
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(BY_MODULE if module else BY_DATA)
    if module:
        (root / "expected_values.py").write_text("ADD_2_3 = 5\n")
    else:
        (root / "data").mkdir()
        (root / "data" / "expected.json").write_text('{"add_2_3": 5}\n')


def _run(root: Path, turns: str, text: str = TEXT, **props: str) -> dict[str, object]:
    heading = task("Fix add", "t", None, max_attempts="1", contract="pytest tests", **props)
    plan, script = setup(root, heading + "  " + text + "\n",
                         "workers:\n  t:\n" + turns + "    - say: DONE\n")  # fmt: skip
    _, doc = resume(plan, script, "--max-parallel", "1")
    return dict(_row(doc, "t"))


FAKES = [
    (False, "echo '{\"add_2_3\": -1}' > data/expected.json", "data/expected.json"),
    (True, "echo 'ADD_2_3 = -1' > expected_values.py", "expected_values.py"),
]


@pytest.mark.parametrize(("module", "rewrite", "key"), FAKES)
def test_rewriting_what_the_suite_reads_beside_its_tests_fails(
    tmp_path: Path, module: bool, rewrite: str, key: str
) -> None:
    _seed(tmp_path, module)
    row = _run(tmp_path, _sh(rewrite))
    assert row["state"] == "FAILED"
    assert str(row["reason"]).startswith(
        f"C029: pytest tests: input changed: the check read `{key}`"
    ), row
    assert "which the worker of task `t` changed" in str(row["reason"])


@pytest.mark.parametrize("module", [False, True])
def test_the_honest_fix_of_the_code_is_done(tmp_path: Path, module: bool) -> None:
    _seed(tmp_path, module)
    row = _run(tmp_path, _write("calc.py", FIXED))
    assert (row["state"], row["reason"]) == ("DONE", None), row


def test_the_data_the_text_asks_to_fix_is_the_workers(tmp_path: Path) -> None:
    _seed(tmp_path, module=False)
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (tmp_path / "data" / "expected.json").write_text('{"add_2_3": 6}\n')
    text = "The value in data/expected.json is wrong: fix data/expected.json so that it says 5."
    row = _run(tmp_path, _write("data/expected.json", '{\\"add_2_3\\": 5}'), text)
    assert (row["state"], row["reason"]) == ("DONE", None), row


# -- a DONE judged by its suite is judged again (adversary-17 F15) -----------------------------

MUL_BROKEN = "def mul(a, b):\n    return a + b\n"
MUL_TEST = "from calc import mul\n\n\ndef test_mul():\n    assert mul(6, 7) == 42\n"
FIX = task("Fix mul", "fix", None, level=2, max_attempts="1", contract="pytest tests")
NOTES = task("Write the notes", "notes", "grep -qx done notes.txt", level=2, max_attempts="1")
CALC = "* TODO Calc\n  :PROPERTIES:\n  :ID: calc\n  :ORDERED: t\n  :END:\n"


def _calc(root: Path, notes: str) -> dict[str, dict[str, object]]:
    (root / "calc.py").write_text(MUL_BROKEN)
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(MUL_TEST)
    script = (
        "workers:\n  fix:\n" + _write("calc.py", "def mul(a, b):\\n    return a * b")
        + "    - say: DONE\n  notes:\n" + _sh(notes) + "    - say: DONE\n"
    )  # fmt: skip
    plan, path = setup(root, CALC + FIX + "   Fix mul in calc.py so the tests pass.\n"
                       + NOTES + "   Write notes.txt holding the word done.\n", script)  # fmt: skip
    _, doc = resume(plan, path, "--max-parallel", "1")
    return {t: dict(_row(doc, t)) for t in ("fix", "notes", "calc")}


def test_a_sibling_that_reverts_a_suite_judged_fix_demotes_it(tmp_path: Path) -> None:
    revert = "echo done > notes.txt; printf 'def mul(a, b):\\n    return a + b\\n' > calc.py"
    rows = _calc(tmp_path, revert)
    assert rows["fix"]["state"] == "FAILED"
    assert str(rows["fix"]["reason"]).startswith(
        "no longer holds: C020: pytest tests: 1 of the suite's tests failed"
    ), rows["fix"]
    assert rows["calc"]["state"] == "PARTIAL"


def test_the_honest_twin_of_a_suite_judged_fix_stays_done(tmp_path: Path) -> None:
    rows = _calc(tmp_path, "echo done > notes.txt")
    assert [rows[t]["state"] for t in ("fix", "notes", "calc")] == ["DONE"] * 3, rows


def test_check_runs_the_suite_of_a_task_never_run_and_fails_it_closed(tmp_path: Path) -> None:
    """`groundskeeper check` on a task judged only by its suite runs it: never run, there is
    no red-first record to judge it against, so it fails closed (C018), never NO_CHECK; a
    task with neither keeps "the task has no acceptance check"."""
    from click.testing import CliRunner

    from groundskeeper.cli import main

    plan, _ = setup(
        tmp_path,
        task("Fix add", "t", None, contract="pytest tests") + "  Fix add.\n"
        + task("Think", "u", None) + "  Think.\n",
        "workers: {}\n",
    )  # fmt: skip
    result = CliRunner().invoke(main, ["check", str(plan)])
    rows = {line.split()[2]: line for line in result.stdout.splitlines()[1:]}
    assert "FAIL      Fix add [t]" in rows["Fix"], result.stdout
    assert "C018" in rows["Fix"] or "red-first" in rows["Fix"], result.stdout
    assert rows["Think"].rstrip().endswith("the task has no acceptance check"), result.stdout
