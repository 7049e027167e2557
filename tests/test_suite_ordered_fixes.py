"""Adversary-19 F22: an ORDERED sequence of bug fixes, each with `:contract: pytest tests`.
A test red before any work that fails now the same way, that a later task of the sequence
names (its test function, or the name it tests: `test_mul`, `mul`) and this task does not,
is left to that task, which is judged on it; every other test must pass. Through the CLI,
fakes beside the honest twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _sh

ADD = "sed -i '/def add/,/def mul/ s/a - b/a + b/' calc.py"
MUL = "sed -i '/def mul/,$ s/a + b/a * b/' calc.py"


def _run(
    root: Path,
    add: str,
    mul: str = MUL,
    titles: tuple[str, str] = ("add", "mul"),
    later: str = "pytest tests",
) -> dict[str, dict[str, object]]:
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n"
                                  "    return a + b\n")  # fmt: skip
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(
        "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_mul():\n    assert mul(2, 3) == 6\n"
    )
    plan_text = (
        "* TODO Bug fixes\n  :PROPERTIES:\n  :ORDERED: t\n  :END:\n"
        + task(f"Fix {titles[0]} in calc.py", "add", None, 2, max_attempts="1",
               contract="pytest tests")
        + task(f"Fix {titles[1]} in calc.py", "mul", None, 2, max_attempts="1",
               contract=later)
    )  # fmt: skip
    plan, script = setup(
        root,
        plan_text,
        "workers:\n  add:\n"
        + _sh(add)
        + "    - say: DONE\n  mul:\n"
        + _sh(mul)
        + "    - say: DONE\n",
    )
    _, doc = resume(plan, script, "--max-parallel", "1")
    return {i: dict(_row(doc, i)) for i in ("add", "mul")}


def test_each_fix_in_its_turn_is_done(tmp_path: Path) -> None:
    rows = _run(tmp_path, ADD)
    assert [(rows[i]["state"], rows[i]["reason"]) for i in ("add", "mul")] == [
        ("DONE", None),
        ("DONE", None),
    ], rows


@pytest.mark.parametrize(
    ("add", "titles", "reason"),
    [
        # the first task's own test left red: no later task names it
        ("true", ("add", "mul"), "C020: pytest tests: 1 of the suite's tests failed:"
         " tests/test_calc.py::test_add"),
        # the later test broken another way than before the work
        (ADD + " && sed -i '/def mul/,$ s/a + b/a + b - 1/' calc.py", ("add", "mul"),
         "C020: pytest tests: 1 of the suite's tests failed: tests/test_calc.py::test_mul"),
        # no task's text names the test: nothing to leave it to
        (ADD, ("the first bug", "the second bug"),
         "C020: pytest tests: 1 of the suite's tests failed: tests/test_calc.py::test_mul"),
    ],
)  # fmt: skip
def test_a_red_test_no_later_task_takes_fails(
    tmp_path: Path, add: str, titles: tuple[str, str], reason: str
) -> None:
    rows = _run(tmp_path, add, titles=titles)
    assert rows["add"]["state"] == "FAILED", rows
    assert str(rows["add"]["reason"]).startswith(reason), rows["add"]["reason"]
    assert rows["mul"]["state"] == "TODO"


def test_check_leaves_the_red_test_to_the_later_task_too(tmp_path: Path) -> None:
    """`check` reads the rule as the run does: the first fix still PASSes while the second,
    failed, is the one its red test fails."""
    import json

    from click.testing import CliRunner

    from groundskeeper.cli import main

    rows = _run(tmp_path, ADD, mul="true")
    assert (rows["add"]["state"], rows["mul"]["state"]) == ("DONE", "FAILED"), rows
    result = CliRunner().invoke(main, ["check", str(tmp_path / "plan.org"), "--json"])
    verdicts = {t["id"]: (t["verdict"], t["reason"]) for t in json.loads(result.stdout)["tasks"]}
    assert verdicts["add"] == ("PASS", None), verdicts
    assert verdicts["mul"][0] == "FAIL", verdicts
    assert str(verdicts["mul"][1]).startswith(
        "C020: `pytest tests`: 1 of the suite's tests failed: tests/test_calc.py::test_mul"
    ), verdicts


def test_a_red_test_is_not_left_to_a_later_soft_contract(tmp_path: Path) -> None:
    # adversary-28 F9: a soft contract holds no test, so leaving test_mul to it would let the
    # sequence's parent end DONE with test_mul failing
    rows = _run(tmp_path, ADD, mul="true", later="soft pytest tests")
    assert rows["add"]["state"] == "FAILED", rows
    assert str(rows["add"]["reason"]).startswith(
        "C020: pytest tests: 1 of the suite's tests failed: tests/test_calc.py::test_mul"
    ), rows["add"]["reason"]
    assert rows["mul"]["state"] == "TODO"
