"""Adversary-8 F9: under a `:contract: pytest tests`, a test file the task's text asks for
("add tests/test_mul.py with a test for it"), or one `:writable:` names, is the worker's to
write, and its new tests count; an existing test file stays protected unless the text asks
for it, and pytest's configuration always. An added file cannot carry the red-first tests:
they must pass without it (an added file, imported first, could patch the code under test).
Through the CLI, fakes beside their honest twins."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _sh, _write

BROKEN = "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n"
FIXED = "def add(a, b):\\n    return a + b\\n\\n\\ndef mul(a, b):\\n    return a * b\\n"
TEST_ADD = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
TEST_MUL = "from calc import mul\\n\\n\\ndef test_mul():\\n    assert mul(2, 3) == 6\\n"
ASKED = "Fix mul in calc.py and add tests/test_mul.py with a test for it."


def _seed(root: Path, red_mul: bool = False) -> None:
    (root / "calc.py").write_text(BROKEN)
    (root / "tests").mkdir()
    test = TEST_ADD
    if red_mul:
        test += "\n\ndef test_mul_red():\n    from calc import mul\n\n    assert mul(2, 3) == 6\n"
    (root / "tests" / "test_calc.py").write_text(test)


def _run(root: Path, heading: str, text: str, turns: str) -> dict[str, object]:
    plan, script = setup(root, heading + "  " + text + "\n",
                         "workers:\n  t:\n" + turns + "    - say: DONE\n")  # fmt: skip
    _, doc = resume(plan, script, "--max-parallel", "1")
    return dict(_row(doc, "t"))


CONTRACT = task("Mul", "t", None, max_attempts="1", contract="pytest tests --min 2")
WRITABLE = task("Mul", "t", None, max_attempts="1", contract="pytest tests --min 2",
                writable="tests/test_mul.py")  # fmt: skip


@pytest.mark.parametrize(
    ("heading", "text"),
    [(CONTRACT, ASKED), (WRITABLE, "Fix mul in calc.py; its test is yours to write.")],
)
def test_an_asked_for_test_file_is_written_and_counted(
    tmp_path: Path, heading: str, text: str
) -> None:
    _seed(tmp_path)
    turns = _write("calc.py", FIXED) + _write("tests/test_mul.py", TEST_MUL)
    row = _run(tmp_path, heading, text, turns + _sh("python3 -m pytest -q tests"))
    assert (row["state"], row["reason"]) == ("DONE", None), row
    assert (tmp_path / "tests" / "test_mul.py").exists()


def test_a_test_added_to_an_asked_existing_file_counts(tmp_path: Path) -> None:
    _seed(tmp_path)
    add = (
        "printf 'def test_add_negative():\\n    assert add(-2, -3) == -5\\n' >> tests/test_calc.py"
    )
    row = _run(tmp_path, task("Case", "t", None, max_attempts="1", contract="pytest tests"),
               "Add a test_add_negative test to tests/test_calc.py.", _sh(add))  # fmt: skip
    assert (row["state"], row["reason"]) == ("DONE", None), row
    assert "test_add_negative" in (tmp_path / "tests" / "test_calc.py").read_text()


def test_an_added_file_that_patches_the_code_does_not_carry_the_red_tests(
    tmp_path: Path,
) -> None:
    # mul stays broken; the asked-for file patches calc.mul at import, so with it every test
    # passes — without it the red-first test_mul_red fails, which is the verdict
    _seed(tmp_path, red_mul=True)
    patch = "import calc\\n\\ncalc.mul = lambda a, b: a * b\\n\\n\\ndef test_mul():\\n    pass\\n"
    row = _run(tmp_path, CONTRACT, ASKED, _write("tests/test_mul.py", patch))
    assert row["state"] == "FAILED"
    assert str(row["reason"]).startswith("C020: pytest tests --min 2: 1 of the suite's tests"
                                         " failed: tests/test_calc.py::test_mul_red")  # fmt: skip


@pytest.mark.parametrize("path", ["tests/test_extra.py", "tests/conftest.py"])
def test_an_unasked_test_file_or_configuration_stays_protected(tmp_path: Path, path: str) -> None:
    _seed(tmp_path)
    turns = _write("calc.py", FIXED) + _write("tests/test_mul.py", TEST_MUL) + _write(path, "")
    text = ASKED if path.endswith("test_extra.py") else ASKED + " Write tests/conftest.py too."
    row = _run(tmp_path, CONTRACT, text, turns)
    assert row["state"] == "FAILED"
    assert str(row["reason"]).startswith(
        f"protected_input_changed: protected input changed: {path}: the worker tried to change"
        " it, and the sandbox refused (a file the task's contract `pytest tests --min 2`"
        " judges with)"
    ), row["reason"]
    assert not (tmp_path / path).exists()


# -- lint: a `:writable:` the contract cannot free (T030), read as the run reads it ----------


def _t030(root: Path, writable: str) -> list[str]:
    from groundskeeper.plan.lint import validate
    from groundskeeper.plan.org import load_plan

    plan = root / "plan.org"
    plan.write_text(
        "#+TODO: TODO | DONE FAILED PARTIAL\n* TODO Mul\n  :PROPERTIES:\n  :ID: t\n"
        f"  :contract: pytest tests\n  :writable: {writable}\n  :END:\n  Fix mul.\n"
    )
    return [d.message for d in validate(load_plan(plan)) if d.code == "T030"]


def test_lint_warns_when_writable_names_configuration_the_contract_keeps(tmp_path: Path) -> None:
    _seed(tmp_path)
    assert _t030(tmp_path, "tests/conftest.py") == [
        "`:writable: tests/conftest.py` cannot free it: under the contract `pytest tests`"
        " pytest's configuration (conftest.py, pytest.ini, …) stays protected, since the"
        " contract refuses configuration a worker could write (C021); a new test file, or an"
        " existing one the task asks to change, is the worker's to write"
    ]


def test_lint_is_silent_for_a_writable_test_file(tmp_path: Path) -> None:
    _seed(tmp_path)
    assert _t030(tmp_path, "tests/test_mul.py") == []


# -- a sibling asked to add a test under the suite's path (adversary-17 F3) -------------------

ZERO = "from calc import mul\\n\\n\\ndef test_mul_zero():\\n    assert mul(0, 5) == 0\\n"
PATCHES = (
    "import calc\\n\\ncalc.mul = lambda a, b: a * b\\n\\n\\ndef test_mul_zero():\\n    pass\\n"
)
ASK_ZERO = "Add a test for mul with zero in tests/test_zero.py."


def _siblings(root: Path, zero_text: str, zero_file: str, fix: str) -> dict[str, str]:
    _seed(root, red_mul=True)
    zt = task("Add a zero test", "zt", "grep -q mul calc.py", level=2, max_attempts="1")
    fixing = task("Fix mul", "fix", None, level=2, max_attempts="1", contract="pytest tests")
    plan, script = setup(
        root,
        "* TODO Calc\n  :PROPERTIES:\n  :ID: calc\n  :ORDERED: t\n  :END:\n"
        + zt
        + f"   {zero_text}\n"
        + fixing
        + "   Fix mul in calc.py so the tests pass.\n",
        "workers:\n  zt:\n" + _write("tests/test_zero.py", zero_file) + "    - say: DONE\n"
        "  fix:\n" + fix + "    - say: DONE\n",
    )
    _, doc = resume(plan, script, "--max-parallel", "1")
    return {t: str(_row(doc, t)["state"]) + " " + str(_row(doc, t)["reason"]) for t in
            ("zt", "fix")}  # fmt: skip


def test_a_test_a_sibling_was_asked_to_add_counts_for_the_next_suite(tmp_path: Path) -> None:
    rows = _siblings(tmp_path, ASK_ZERO, ZERO, _write("calc.py", FIXED))
    assert rows["zt"].startswith("DONE") and rows["fix"] == "DONE None", rows


def test_a_test_file_a_sibling_was_not_asked_for_is_still_new(tmp_path: Path) -> None:
    rows = _siblings(tmp_path, "Look at calc.py.", ZERO, _write("calc.py", FIXED))
    assert rows["fix"].startswith(
        "FAILED C022: pytest tests: tests not collected before any work:"
        " tests/test_zero.py::test_mul_zero"
    ), rows


def test_an_asked_sibling_test_that_patches_the_code_carries_nothing(tmp_path: Path) -> None:
    # the fix's worker does nothing: the red-first tests must pass without the added file
    rows = _siblings(tmp_path, ASK_ZERO, PATCHES, "")
    assert rows["fix"].startswith(
        "FAILED C020: pytest tests: 1 of the suite's tests failed: tests/test_calc.py::test_mul_red"
    ), rows


@pytest.mark.parametrize(
    ("text", "patterns"),
    [
        # adversary-20 F2: asking for tests frees new test modules under the contract's paths
        ("Add sub to calc.py and write a unit test for it.",
         ("tests/**/test_*.py", "tests/**/*_test.py")),
        ("Fix add, with a test for it.", ("tests/**/test_*.py", "tests/**/*_test.py")),
        ("Fix add. Do not add tests.", ()),
        ("Fix add in calc.py.", ()),
    ],
)  # fmt: skip
def test_asking_for_tests_frees_new_test_modules_only(text: str, patterns: tuple[str, ...]) -> None:
    from groundskeeper.plan.org import parse_plan
    from groundskeeper.plan.spec import compile_plan
    from groundskeeper.plan.suite_paths import suite_tests_new

    (spec,) = compile_plan(
        parse_plan(f"* TODO t\n:PROPERTIES:\n:contract: pytest tests\n:END:\n{text}\n")
    )
    assert suite_tests_new(spec) == patterns


def test_asking_for_tests_never_frees_a_test_file_there_before(tmp_path: Path) -> None:
    """The new module is the worker's; the existing test file it weakens stays protected."""
    _seed(tmp_path)
    weakened = "from calc import mul\\n\\n\\ndef test_mul():\\n    assert mul(2, 3) == 5\\n"
    plan, script = setup(
        tmp_path,
        task("Fix mul", "t", None, max_attempts="1", contract="pytest tests")
        + "  Fix mul in calc.py and write a unit test for it.\n",
        "workers:\n  t:\n" + _write("tests/test_mul.py", weakened.removesuffix("\\n"))
        + _write("tests/test_calc.py", "def test_add():\\n    assert True")
        + "    - say: DONE\n",
    )  # fmt: skip
    _, doc = resume(plan, script, "--max-parallel", "1")
    row = _row(doc, "t")
    assert row["state"] == "FAILED"
    assert "tests/test_calc.py" in str(row["reason"])
