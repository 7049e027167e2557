"""A doctest check's examples live in the code under test, which its worker may edit: every
example its files held at run start must still be there, as it was, when the check passes
(adversary-21 F14: deleting the failing example passed `python3 -m doctest mathx.py`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundskeeper.acceptance.doctests import doctest_files, examples_in, examples_lost
from tests.test_cli_run import HEAD, resume

MODULE = '''"""Doubling.

>>> 2 + 2
4
"""


def double(x):
    """
    >>> double(3)
    6
    """
    return x + 2
'''


@pytest.mark.parametrize(
    ("check", "files"),
    [
        ("python3 -m doctest mathx.py", ["mathx.py"]),
        ("python3 -m doctest -v -o ELLIPSIS a.py docs/b.txt", ["a.py", "docs/b.txt"]),
        ("python3 -m doctest $F", []),  # not spelt out
        ("python3 -m pytest -q tests", []),
        ("python3 mathx.py && python3 -m doctest mathx.py", ["mathx.py"]),
        # adv24b F5: the modules pytest collects examples from
        ("python3 -m pytest -q --doctest-modules mathx.py tests", ["mathx.py"]),
        ("python3 -m pytest --doctest-modules lib/m.py::m.f", ["lib/m.py"]),
        ("python3 -m pytest -q mathx.py", []),  # no examples collected
    ],
)
def test_doctest_files_reads_the_check(check: str, files: list[str]) -> None:
    assert list(doctest_files(check)) == files


def test_examples_are_read_from_docstrings_and_from_text(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(MODULE + 'X = """\n>>> not_a_docstring()\n1\n"""\n')
    (tmp_path / "d.txt").write_text("Intro.\n\n>>> 1 + 1\n2\n")
    assert len(examples_in(tmp_path / "m.py") or ()) == 2  # a plain string is no docstring
    assert len(examples_in(tmp_path / "d.txt") or ()) == 1
    (tmp_path / "bad.py").write_text("def (:\n")
    assert examples_in(tmp_path / "bad.py") is None


@pytest.mark.parametrize(
    ("after", "lost"),
    [
        (MODULE.replace("return x + 2", "return x * 2"), None),  # fixed: all kept
        (MODULE.replace("    >>> double(3)\n    6\n", ""), "1 of the 2 example(s)"),
        (MODULE.replace("    6\n", "    5\n"), "1 of the 2 example(s)"),  # expectation rewritten
        (MODULE.replace('"""Doubling.\n\n>>> 2 + 2\n4\n"""', '"""Doubling."""'), "1 of the 2"),
        ("def double(x):\n    return x * 2\n", "2 of the 2 example(s)"),
        ("def (:\n", "cannot be read for them now"),
    ],
)
def test_a_lost_example_is_named(tmp_path: Path, after: str, lost: str | None) -> None:
    (tmp_path / "mathx.py").write_text(MODULE)
    before = {"mathx.py": examples_in(tmp_path / "mathx.py")}
    (tmp_path / "mathx.py").write_text(after)
    found = examples_lost(before, tmp_path, ["mathx.py"])
    if lost is None:
        assert found == []
    else:
        (message,) = found
        assert message.startswith("doctest examples: ") and lost in message, message


def _run(
    tmp_path: Path,
    content: str,
    check: str = "python3 -m doctest mathx.py",
    text: str = "double() is wrong for most inputs. Make the doctests pass.",
) -> dict[str, object]:
    (tmp_path / "mathx.py").write_text(MODULE)
    plan = tmp_path / "plan.org"
    plan.write_text(
        HEAD + "* TODO Make the doctests pass\n  :PROPERTIES:\n  :ID: dt\n"
        f"  :done-when: {check}\n  :max-attempts: 1\n  :END:\n  {text}\n"
    )
    script = tmp_path / "w.yaml"
    script.write_text(
        "workers:\n  dt: [{tool: write_file, input: {path: mathx.py, content: "
        + json.dumps(content)
        + "}}, {say: DONE}]\n"
    )
    _, doc = resume(plan, script)
    (entry,) = doc["tasks"]
    return {"state": entry["state"], "reason": entry["reason"]}


def test_deleting_the_failing_example_fails_the_task(tmp_path: Path) -> None:
    found = _run(tmp_path, MODULE.replace("    >>> double(3)\n    6\n", ""))
    assert found["state"] == "FAILED"
    assert "examples_lost: doctest examples: 1 of the 2 example(s) `mathx.py` held" in str(
        found["reason"]
    ), found


def test_fixing_the_function_passes(tmp_path: Path) -> None:
    assert _run(tmp_path, MODULE.replace("return x + 2", "return x * 2")) == {
        "state": "DONE",
        "reason": None,
    }


def test_a_resume_holds_the_file_to_what_the_first_run_saw(tmp_path: Path) -> None:
    """The example deleted in a run that then failed (or was cut short) is not taken as what
    the file held before the work by the next run."""
    stripped = MODULE.replace("    >>> double(3)\n    6\n", "")
    assert _run(tmp_path, stripped)["state"] == "FAILED"
    assert "double(3)" not in (tmp_path / "mathx.py").read_text()  # the worker's edit stays
    script = tmp_path / "w.yaml"
    script.write_text("workers:\n  dt: [{say: DONE}]\n")
    _, doc = resume(tmp_path / "plan.org", script)
    (entry,) = doc["tasks"]
    assert entry["state"] == "FAILED", entry
    assert "examples_lost" in str(entry["reason"]), entry


PYTEST_DOCTESTS = "python3 -m pytest -q --doctest-modules mathx.py"


@pytest.mark.parametrize(
    "edit",
    [
        MODULE.replace("    >>> double(3)\n    6\n", ""),  # the failing example deleted
        MODULE.replace("    6\n", "    5\n"),  # rewritten to the bug's answer
    ],
    ids=["deleted", "rewritten"],
)
def test_pytests_doctests_are_held_too(tmp_path: Path, edit: str) -> None:
    """adv24b F5: pytest's `--doctest-modules` runs the same examples; losing one fails."""
    found = _run(tmp_path, edit, PYTEST_DOCTESTS)
    assert found["state"] == "FAILED"
    assert "examples_lost" in str(found["reason"]), found


def test_the_module_pytest_collects_examples_from_is_the_work(tmp_path: Path) -> None:
    """adv24b F10: the module handed to `pytest --doctest-modules` is the code under test
    (its examples held as above), not the check's own test file: fixing it is DONE, with a
    text that only says it is wrong."""
    text = "double() in mathx.py is wrong."
    fixed = MODULE.replace("return x + 2", "return x * 2")
    assert _run(tmp_path, fixed, PYTEST_DOCTESTS, text) == {"state": "DONE", "reason": None}


@pytest.mark.parametrize(
    ("text", "props", "state"),
    [
        # adv24b F9: the examples asked to change, or the file freed, are the work
        (
            "double() must return a float now: return 2.0 * x and update its doctest examples.",
            "",
            "DONE",
        ),
        ("double() must return a float; update the doctests in mathx.py to match.", "", "DONE"),
        ("double() must return a float now.", "  :writable: mathx.py\n", "DONE"),
        # adversary-28 H1: the other ways a text asks for them
        ("double() must return a float; correct the two examples in its docstring.", "", "DONE"),
        ("double() must return a float. Its docstring examples are wrong too.", "", "DONE"),
        ("double() must return a float; change the expected output of its examples.", "", "DONE"),
        # not asked: held as before ("fix" makes them pass; it does not rewrite them)
        ("double() must return a float now. Fix the doctests.", "", "FAILED"),
        ("double() must return a float; do not update the doctest examples.", "", "FAILED"),
    ],
)
def test_examples_the_task_asks_to_change_may_change(
    tmp_path: Path, text: str, props: str, state: str
) -> None:
    (tmp_path / "mathx.py").write_text(MODULE)
    plan = tmp_path / "plan.org"
    plan.write_text(
        HEAD + "* TODO Float double\n  :PROPERTIES:\n  :ID: dt\n"
        f"  :done-when: python3 -m doctest mathx.py\n  :max-attempts: 1\n{props}  :END:\n"
        f"  {text}\n"
    )
    floats = MODULE.replace("return x + 2", "return 2.0 * x").replace("    6\n", "    6.0\n")

    script = tmp_path / "w.yaml"
    script.write_text(
        "workers:\n  dt: [{tool: write_file, input: {path: mathx.py, content: "
        + json.dumps(floats)
        + "}}, {say: DONE}]\n"
    )
    _, doc = resume(plan, script)
    (entry,) = doc["tasks"]
    assert entry["state"] == state, entry
