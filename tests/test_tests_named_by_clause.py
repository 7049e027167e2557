"""A "the test(s)" that are no object of the changing verb free no test file: a possessive
("fix the tests' failures"), the subject of a relative clause after a noun ("fix the code
the tests exercise", "fix the bug the test suite found") and a means that names what is
changed ("fix the tests by fixing calc.py") — each a fake that read as asking before. Lint
warns (T031) where the request may still mean the tests ("fix the test's expected value",
"update the tests by adding a case"). Fake first, then the honest twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper.plan.asking import ASKS, SILENT, symptom_of_tests, text_reading
from tests.agents.test_hook_as_a_run import started
from tests.agents.test_hook_session_bound import hook
from tests.test_check_inputs import _row, _write
from tests.test_cli_run import resume, setup, task
from tests.test_tests_asked import (
    CALC_RIGHT,
    TEST,
    TEST_RIGHT,
    _hook_project,
    _lint,
    rewriting_the_test_is_refused,
)


@pytest.mark.parametrize(
    ("text", "expected", "warned"),
    [
        ("Fix the tests' failures.", SILENT, True),
        ("Fix the code the tests exercise.", SILENT, False),
        ("Update the values the test expects.", SILENT, False),
        ("Rewrite the functions the tests import.", SILENT, False),
        ("Fix the behaviour the tests check.", SILENT, False),
        ("Fix the bug the test suite found.", SILENT, False),
        ("Fix the regressions the tests caught.", SILENT, False),
        ("Fix whatever the tests complain about.", SILENT, False),
        ("Leave the tests alone; fix calc.py.", SILENT, False),
        ("Fix the tests by fixing calc.py.", SILENT, True),
        # not read as asking, but may mean the test: lint says so
        ("Fix the test's expected value to 5.", SILENT, True),
        ("Update the tests by adding a case for zero.", SILENT, True),
        # the honest twins: the tests are the verb's object, or a sentence's subject
        ("Fix the test so it expects 5.", ASKS, False),
        ("Change the test and the code it tests.", ASKS, False),
        ("The test expects the wrong sum; fix it so it expects 5.", ASKS, False),
        ("Update the tests and calc.py so everything passes.", ASKS, False),
        ("Rewrite the tests to use pytest.approx.", ASKS, False),
        ("Fix calc.py and the tests.", ASKS, False),
    ],
)
def test_the_tests_as_no_object_are_not_asked(text: str, expected: str, warned: bool) -> None:
    assert text_reading(text, TEST, test_file=True) == expected
    assert symptom_of_tests(text) is warned


@pytest.mark.parametrize(
    "text",
    [
        "Fix the tests' failures.",
        "Fix the code the tests exercise.",
        "Fix the bug the test suite found.",
        "Fix the tests by fixing calc.py.",
    ],
)
def test_a_worker_told_to_fix_what_the_tests_run_that_rewrites_them_fails(
    tmp_path: Path, text: str
) -> None:
    rewriting_the_test_is_refused(tmp_path, text)


def test_lint_warns_of_a_possessive_or_a_means(tmp_path: Path) -> None:
    found = _lint(tmp_path, "Update the tests by adding a case for zero.")
    assert len(found) == 1, found
    assert found[0].startswith("T031 the check of task t reads `tests/test_calc.py`"), found
    assert "`:writable: tests/test_calc.py`" in found[0]


def test_the_hook_blocks_a_session_told_to_fix_the_bug_the_tests_found_that_rewrites_them(
    tmp_path: Path,
) -> None:
    work = _hook_project(tmp_path, "Fix the bug the test suite found.")
    started(work)
    (work / "calc.py").write_text(CALC_RIGHT)
    (work / TEST).write_text(TEST_RIGHT)
    reason = hook(work).blocked or ""
    assert f"input changed: the check read `{TEST}`" in reason, reason


# -- any file named as a relative clause's subject after a noun --------------------------------


@pytest.mark.parametrize(
    ("text", "path", "test_file", "expected"),
    [
        ("Fix the bug tests/test_calc.py found.", TEST, True, SILENT),
        ("Fix the code the test in tests/test_calc.py exercises.", TEST, True, SILENT),
        ("Fix the function tests/test_calc.py imports.", TEST, True, SILENT),
        ("Fix the code the tests under tests/ exercise.", TEST, True, SILENT),
        ("Fix the code the tests in tests/test_calc.py exercise.", TEST, True, SILENT),
        ("Fix the tests under tests/.", TEST, True, ASKS),
        ("Update the test in tests/test_calc.py and calc.py.", TEST, True, ASKS),
        ("Fix the lines expected.txt disagrees with in out.txt.", "expected.txt", False, SILENT),
        ("Fix everything expected.txt complains about.", "expected.txt", False, SILENT),
        ("Correct the entries of out.txt expected.txt marks.", "expected.txt", False, SILENT),
        # a comparison of two files: either may be meant, so neither is freed
        ("Fix the diff between out.txt and expected.txt.", "expected.txt", False, SILENT),
        ("Make out.txt and expected.txt agree.", "expected.txt", False, SILENT),
        ("Add a blank line between the sections in notes.md.", "notes.md", False, ASKS),
        ("Update out.txt and expected.txt.", "expected.txt", False, ASKS),
        # an apposition names the file changed
        ("Rewrite the module calc.py completely.", "calc.py", False, ASKS),
        ("Update the golden file expected.txt accordingly.", "expected.txt", False, ASKS),
        ("Edit the config file app.cfg to use port 8080.", "app.cfg", False, ASKS),
    ],
)
def test_a_name_as_a_relative_clause_subject_is_not_asked(
    text: str, path: str, test_file: bool, expected: str
) -> None:
    assert text_reading(text, path, test_file=test_file) == expected


@pytest.mark.parametrize(
    "text",
    [
        "Fix the lines expected.txt disagrees with in out.txt.",
        "Make out.txt and expected.txt agree.",
    ],
)
def test_a_worker_told_to_fix_the_lines_a_key_disagrees_with_that_rewrites_it_fails(
    tmp_path: Path, text: str
) -> None:
    (tmp_path / "out.txt").write_text("1\n")
    (tmp_path / "expected.txt").write_text("2\n")
    plan, script = setup(
        tmp_path,
        task("Out", "o", "diff out.txt expected.txt", max_attempts="1") + text + "\n",
        "workers:\n  o:\n" + _write("expected.txt", "1") + "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    assert _row(doc, "o")["reason"] == (
        "protected_input_changed: protected input changed: expected.txt: the worker tried to"
        " change it, and the sandbox refused (an expected file the check of o compares against)"
    ), _row(doc, "o")
    assert (tmp_path / "expected.txt").read_text() == "2\n"
    assert result.exit_code == 1


def test_a_worker_told_to_update_the_golden_file_by_name_that_does_is_done(
    tmp_path: Path,
) -> None:
    (tmp_path / "out.txt").write_text("1\n")
    (tmp_path / "expected.txt").write_text("2\n")
    plan, script = setup(
        tmp_path,
        task("Out", "o", "diff out.txt expected.txt", max_attempts="1")
        + "Update the golden file expected.txt accordingly: out.txt is right.\n",
        "workers:\n  o:\n" + _write("expected.txt", "1") + "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    assert (_row(doc, "o")["state"], _row(doc, "o")["reason"]) == ("DONE", None), _row(doc, "o")
    assert result.exit_code == 0
