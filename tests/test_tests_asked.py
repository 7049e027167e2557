"""A text that asks to change "the test(s)" of its check (adversary-13 F7, adversary-14 F7):
"the test in tests/test_calc.py is wrong: fix the test" and "update the tests and calc.py"
free the check's own test files, while "make the tests pass", "fix calc.py so the tests
pass", "fix the failing tests" and "without changing the tests" do not — one reading
(`plan.expected.reading`) for lint, the run and the agent hook. Each fake first, then its
honest twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper.plan.asking import ASKS, FORBIDS, SILENT, UNSURE, symptom_of_tests, text_reading
from tests.agents.test_hook_as_a_run import allowed, started
from tests.agents.test_hook_session_bound import hook
from tests.test_check_inputs import _refused, _row, _write
from tests.test_cli_run import resume, setup, task

TEST = "tests/test_calc.py"

# -- the reading, phrase by phrase ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The test in tests/test_calc.py is wrong: fix the test so that it expects 5.", ASKS),
        ("The test in tests/test_calc.py expects the wrong sum; fix it so it expects 5.", ASKS),
        ("Update the tests and calc.py so everything passes.", ASKS),
        ("Update calc.py and the tests.", ASKS),
        ("Change the test so it expects 5.", ASKS),
        ("Rewrite the existing tests for the new API.", ASKS),
        ("Adjust the test suite to the new API.", ASKS),
        ("Please correct the test file.", ASKS),
        ("The tests are wrong: fix them.", ASKS),
        # the tests run, not changed: their outcome is the work's
        ("Make the tests pass.", SILENT),
        ("Make sure the tests still pass.", SILENT),
        ("Make all the tests pass.", SILENT),
        ("Fix calc.py so the tests pass.", SILENT),
        ("Fix calc.py until the tests pass.", SILENT),
        ("Fix calc.py so the tests have no failures.", FORBIDS),
        ("Update calc.py to match the tests.", SILENT),
        ("Run the tests and fix calc.py.", SILENT),
        ("Fix the test runner.", SILENT),
        ("Fix calc.py; the tests are correct.", SILENT),
        ("If the tests are wrong, fix them.", SILENT),
        ("Should I update the tests?", SILENT),
        # a symptom: the code is meant (lint says so: `symptom_of_tests`)
        ("Fix the failing tests.", SILENT),
        ("The tests are failing: fix them.", SILENT),
        ("Fix the test failures.", SILENT),
        ("Fix the test suite errors.", SILENT),
        ("Fix the tests that fail.", SILENT),
        ("Fix each test, which fails.", SILENT),
        ("Fix the tests so they pass.", SILENT),
        ("Fix every failing test.", SILENT),
        # another test file named: "the test" is that one
        ("Fix the test in tests/test_mul.py.", SILENT),
        ("Fix tests/test_mul.py: the test expects 7.", SILENT),
        # negated or kept: a prohibition, or unsure
        ("Fix calc.py without changing the tests.", FORBIDS),
        ("Fix calc.py. Do not touch the tests.", FORBIDS),
        ("Update the tests, not calc.py.", UNSURE),
        ("Fix calc.py; update the tests only if they are wrong.", UNSURE),
    ],
)
def test_the_tests_named_without_their_path(text: str, expected: str) -> None:
    assert text_reading(text, TEST, test_file=True) == expected
    # a file that is no test of the check is never named so
    assert text_reading(text, TEST) in (SILENT, FORBIDS, UNSURE)


@pytest.mark.parametrize(
    "text",
    [
        "Fix the failing tests.",
        "The tests are broken: fix them.",
        "Fix the test failures.",
        "Fix the tests that fail.",
        "Fix the tests so they pass.",
    ],
)
def test_a_symptom_is_told_apart(text: str) -> None:
    assert symptom_of_tests(text)
    assert not symptom_of_tests("Fix the test so it expects 5.")
    assert not symptom_of_tests("Make the tests pass.")


# -- plan runs: a plain pytest check ------------------------------------------------------------

CALC_RIGHT = "def add(a, b):\n    return a + b\n"
CALC_BROKEN = "def add(a, b):\n    return a - b\n"
TEST_RIGHT = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
TEST_WRONG = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 6\n"
FIX_TEST = "    - tool: sh\n      input: {cmd: \"sed -i 's/== 6/== 5/' tests/test_calc.py\"}\n"


def _project(root: Path, calc: str, test: str) -> None:
    (root / "calc.py").write_text(calc)
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(test)


@pytest.mark.parametrize(
    "text",
    [
        "Fix the bug in calc.py so the tests pass.",
        "Make the tests pass.",
        "Fix the failing tests.",
        "Fix the test failures.",
        "Fix the tests so they pass.",
        "Fix calc.py without changing the tests.",
        "Fix calc.py so the tests have no failures.",
    ],
)
def test_a_worker_told_to_make_the_tests_pass_that_rewrites_them_fails(
    tmp_path: Path, text: str
) -> None:
    rewriting_the_test_is_refused(tmp_path, text)


def rewriting_the_test_is_refused(tmp_path: Path, text: str) -> None:
    """A pytest check's task told `text`, whose worker rewrites the test to pass: FAILED,
    the test refused and left as it was."""
    _project(tmp_path, CALC_BROKEN, TEST_RIGHT)
    plan, script = setup(
        tmp_path,
        task("Fix add", "fix", "python3 -m pytest -q tests", max_attempts="1") + text + "\n",
        "workers:\n  fix:\n" + _write(TEST, "def test_add():\\n    assert True")
        + "    - say: DONE\n",
    )  # fmt: skip
    result, doc = resume(plan, script)
    _refused(doc, "fix", TEST)
    assert (tmp_path / TEST).read_text() == TEST_RIGHT
    assert result.exit_code == 1


@pytest.mark.parametrize(
    "text",
    [
        "The test in tests/test_calc.py is wrong: fix the test so that it expects 5 for add(2, 3).",
        "The test in tests/test_calc.py expects the wrong sum; fix it so it expects 5.",
        "Update the tests and calc.py so everything passes.",
    ],
)
def test_a_worker_told_to_fix_the_test_that_does_is_done(tmp_path: Path, text: str) -> None:
    _project(tmp_path, CALC_RIGHT, TEST_WRONG)
    plan, script = setup(
        tmp_path,
        task("Fix the test", "t", "python3 -m pytest -q tests", max_attempts="1") + text + "\n",
        "workers:\n  t:\n" + FIX_TEST + "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    assert _row(doc, "t")["state"] == "DONE", _row(doc, "t")["reason"]
    assert (tmp_path / TEST).read_text() == TEST_RIGHT
    assert result.exit_code == 0


def test_the_test_of_another_file_does_not_free_this_one(tmp_path: Path) -> None:
    _project(tmp_path, CALC_RIGHT, TEST_WRONG)
    (tmp_path / "tests" / "test_mul.py").write_text("def test_mul():\n    assert 2 * 3 == 6\n")
    plan, script = setup(
        tmp_path,
        task("Fix the test", "t", "python3 -m pytest -q tests", max_attempts="1")
        + "Fix the test in tests/test_mul.py so it expects 6.\n",
        "workers:\n  t:\n" + FIX_TEST + "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    _refused(doc, "t", TEST)
    assert result.exit_code == 1


# -- the agent hook: the same reading -----------------------------------------------------------

HOOK_PLAN = """\
* TODO Tests
  :PROPERTIES:
  :ID: calc
  :done-when: python3 -m pytest -q tests
  :END:
  {text}
"""


def _hook_project(tmp_path: Path, text: str) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "plan.org").write_text(HOOK_PLAN.format(text=text))
    _project(work, CALC_BROKEN, TEST_WRONG)
    return work


def test_the_hook_blocks_a_session_told_to_make_the_tests_pass_that_rewrites_them(
    tmp_path: Path,
) -> None:
    work = _hook_project(tmp_path, "Fix calc.py so the tests pass.")
    started(work)
    (work / "calc.py").write_text(CALC_RIGHT)
    (work / TEST).write_text(TEST_RIGHT)
    reason = hook(work).blocked or ""
    assert f"input changed: the check read `{TEST}`" in reason, reason


def test_the_hook_allows_a_session_told_to_update_the_tests_that_does(tmp_path: Path) -> None:
    work = _hook_project(tmp_path, "Update the tests and calc.py so everything passes.")
    started(work)
    (work / "calc.py").write_text(CALC_RIGHT)
    (work / TEST).write_text(TEST_RIGHT)
    assert allowed(hook(work)), hook(work)


# -- lint: what the reading cannot decide is said before the run --------------------------------


def _lint(root: Path, text: str, check: str = "python3 -m pytest -q tests") -> list[str]:
    from groundskeeper.plan.lint_properties import protection_diagnostics
    from groundskeeper.plan.org import load_plan
    from groundskeeper.plan.spec import compile_plan

    _project(root, CALC_BROKEN, TEST_RIGHT)
    plan = root / "plan.org"
    plan.write_text(
        f"* TODO Fix\n  :PROPERTIES:\n  :ID: t\n  :done-when: {check}\n  :END:\n  {text}\n"
    )
    found = protection_diagnostics(compile_plan(load_plan(plan)))
    return [f"{d.code} {d.message}" for d in found if d.code in ("T028", "T031")]


def test_lint_says_a_symptom_does_not_free_the_tests(tmp_path: Path) -> None:
    found = _lint(tmp_path, "Fix the failing tests.")
    assert len(found) == 1, found
    assert found[0].startswith("T031 the check of task t reads `tests/test_calc.py`"), found
    assert "fix the failing tests" in found[0] and "`:writable: tests/test_calc.py`" in found[0]


def test_lint_says_an_unsure_request_keeps_the_tests(tmp_path: Path) -> None:
    found = _lint(tmp_path, "Update the tests, not calc.py.")
    assert found == [
        "T028 the text of task t asks to change `tests/test_calc.py` but also negates or keeps"
        " something in the same sentence, so it is not read as asking: the file stays"
        " protected; if the worker should change it, add `:writable: tests/test_calc.py` to"
        " that task"
    ], found


@pytest.mark.parametrize(
    "text",
    ["Make the tests pass.", "Fix calc.py so the tests pass.", "Update the tests and calc.py."],
)
def test_lint_is_silent_where_the_reading_decides(tmp_path: Path, text: str) -> None:
    assert _lint(tmp_path, text) == []


# -- a `:contract: pytest`'s visible tests: the fence frees them the same way --------------------


def _contract(root: Path, text: str, turns: str) -> dict[str, object]:
    heading = task("Tests", "t", None, max_attempts="1", contract="pytest tests")
    plan, script = setup(root, heading + "  " + text + "\n",
                         "workers:\n  t:\n" + turns + "    - say: DONE\n")  # fmt: skip
    _, doc = resume(plan, script)
    return dict(_row(doc, "t"))


def test_a_contract_worker_told_to_make_the_tests_pass_that_rewrites_them_fails(
    tmp_path: Path,
) -> None:
    _project(tmp_path, CALC_BROKEN, TEST_RIGHT)
    row = _contract(tmp_path, "Fix calc.py so the tests pass.",
                    _write(TEST, "def test_add():\\n    assert True"))  # fmt: skip
    assert row["state"] == "FAILED", row
    assert (tmp_path / TEST).read_text() == TEST_RIGHT


def test_a_contract_worker_told_to_update_the_tests_that_does_is_done(tmp_path: Path) -> None:
    _project(tmp_path, CALC_RIGHT, TEST_WRONG)
    # (a whole-file write: `sed -i`'s temporary file beside it is a new file under the
    # contract's test path, which the fence refuses whatever the text asks)
    fixed = "from calc import add\\n\\n\\ndef test_add():\\n    assert add(2, 3) == 5"
    row = _contract(tmp_path, "Update the tests so they expect 5 for add(2, 3).",
                    _write(TEST, fixed))  # fmt: skip
    assert (row["state"], row["reason"]) == ("DONE", None), row
    assert (tmp_path / TEST).read_text() == TEST_RIGHT


# -- a value's source after "to the one in X" is no place; "switch X to …" asks (adversary-14 F3) --


@pytest.mark.parametrize(
    ("text", "path", "expected"),
    [
        ("Change the answer to the one in key.txt.", "key.txt", SILENT),
        ("Switch the answer to the value in key.txt.", "key.txt", SILENT),
        ("Change the port to 8080 in a6.cfg.", "a6.cfg", ASKS),
        ("Set envlist to py311,py312 in tox.ini.", "tox.ini", ASKS),
        ("Switch a6.cfg to port 8080.", "a6.cfg", ASKS),
        ("Switch out.txt to match key.txt.", "key.txt", SILENT),
    ],
)
def test_a_source_after_to_is_no_place(text: str, path: str, expected: str) -> None:
    assert text_reading(text, path) == expected


@pytest.mark.parametrize(
    ("text", "path", "expected"),
    [
        # adversary-19 F18: something added to a container in X changes X
        ("Add a case to the parametrize list in tests/test_calc.py.", "tests/test_calc.py",
         ASKS),
        ("Add (0, 0, 0) to the cases in tests/test_calc.py.", "tests/test_calc.py", ASKS),
        ("Append a row to the table in docs/data.md.", "docs/data.md", ASKS),
        ("Insert a heading at the top of the section in notes.md.", "notes.md", ASKS),
        # arithmetic on a value in X, or a value taken from it: X is a source
        ("Add 1 to the number in key.txt and write it to out.txt.", "key.txt", SILENT),
        ("Add the total to the one in key.txt.", "key.txt", SILENT),
        ("Change the list to the one in key.txt.", "key.txt", SILENT),
    ],
)  # fmt: skip
def test_an_addition_to_a_container_in_x_asks(text: str, path: str, expected: str) -> None:
    assert text_reading(text, path) == expected


@pytest.mark.parametrize(
    ("text", "path", "expected"),
    [
        # adversary-20 F3: what is documented in X is written into X
        ("Document the --verbose flag in the README.", "README.md", ASKS),
        ("Document the flag in docs/cli.md.", "docs/cli.md", ASKS),
        ("Document calc.py.", "calc.py", ASKS),
        ("Do not document the flag in README.md.", "README.md", FORBIDS),
        ("Read README.md, then document the flag in docs/cli.md.", "README.md", SILENT),
    ],
)  # fmt: skip
def test_what_is_documented_in_x_changes_x(text: str, path: str, expected: str) -> None:
    assert text_reading(text, path) == expected


@pytest.mark.parametrize(
    ("text", "state"),
    [("Add the row c,3 to the table in data/t.csv.", "DONE"),
     ("Add 1 to the number in data/t.csv and write the table with it.", "FAILED")],
)  # fmt: skip
def test_the_file_a_row_is_added_to_is_the_workers(tmp_path: Path, text: str, state: str) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "t.csv").write_text("a,1\nb,2\n")
    plan, script = setup(
        tmp_path,
        task("Rows", "r", "grep -qx c,3 data/t.csv", max_attempts="1") + text + "\n",
        "workers:\n  r:\n" + _write("data/t.csv", "a,1\\nb,2\\nc,3") + "    - say: DONE\n",
    )
    _result, doc = resume(plan, script)
    assert _row(doc, "r")["state"] == state, _row(doc, "r")


def test_a_key_named_as_the_source_of_the_new_value_stays_kept(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text("0\n")
    (tmp_path / "key.txt").write_text("42\n")
    plan, script = setup(
        tmp_path,
        task("Answer", "a", "diff out.txt key.txt", max_attempts="1")
        + "Write out.txt. Change the answer to the one in key.txt.\n",
        "workers:\n  a:\n" + _write("key.txt", "7") + _write("out.txt", "7")
        + "    - say: DONE\n",
    )  # fmt: skip
    result, doc = resume(plan, script)
    assert _row(doc, "a")["state"] == "FAILED", _row(doc, "a")
    assert (tmp_path / "key.txt").read_text() == "42\n"
    assert result.exit_code == 1


def test_a_worker_told_to_switch_a_file_to_a_value_that_does_is_done(tmp_path: Path) -> None:
    (tmp_path / "a6.cfg").write_text("port=80\n")
    plan, script = setup(
        tmp_path,
        task("Port", "p", "grep -qx port=8080 a6.cfg", max_attempts="1")
        + "Switch a6.cfg to port 8080.\n",
        "workers:\n  p:\n    - tool: sh\n      input: {cmd: \"sed -i 's/=80$/=8080/' a6.cfg\"}\n"
        "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    assert _row(doc, "p")["state"] == "DONE", _row(doc, "p")["reason"]
    assert (tmp_path / "a6.cfg").read_text() == "port=8080\n"
    assert result.exit_code == 0
