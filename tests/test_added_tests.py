"""adversary-19 F14: under a plain `python3 -m pytest -q tests` check, the test file a task
asks for is imported at collection, before any test runs: it could rebind the code under test
(`calc.add = lambda a, b: a + b`) so that the old failing tests pass with no fix. The pytest
contract already runs its red-first tests without the added files; a plain pytest check now
does the same: the tests that were there must pass without the test files a worker added.
The honest twin (the fix, and the asked test) is DONE."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row

TEXT = "Fix add in calc.py and add a test for negative numbers in tests/test_a_neg.py."
NEG = "def test_neg():\n    assert calc.add(-2, -3) == -5\n"


def _run(root: Path, writes: dict[str, str], check: str = "python3 -m pytest -q tests") -> dict:
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    calls = "".join(
        f"    - tool: write_file\n      input: {{path: {p}, content: {json.dumps(c)}}}\n"
        for p, c in writes.items()
    )
    plan, script = setup(root, task("Fix add", "fix", check, max_attempts="1") + f"  {TEXT}\n",
                         "workers:\n  fix:\n" + calls + "    - say: DONE\n")  # fmt: skip
    _, doc = resume(plan, script)
    return dict(_row(doc, "fix"))


def test_an_asked_test_file_that_patches_the_code_fails(tmp_path: Path) -> None:
    patch = "import calc\ncalc.add = lambda a, b: a + b\n\n" + NEG
    row = _run(tmp_path, {"tests/test_a_neg.py": patch})
    assert row["state"] == "FAILED", row
    reason = str(row["reason"])
    assert reason.startswith(
        "added_tests_decide: without tests/test_a_neg.py, which the worker of task `fix` added,"
        " the tests that were there fail: "
    ), reason
    assert "return a - b" in (tmp_path / "calc.py").read_text()


@pytest.mark.parametrize(
    "check", ["python3 -m pytest -q tests", "python3 -m pytest -q tests/test_calc.py tests"]
)
def test_the_fix_and_the_asked_test_are_done(tmp_path: Path, check: str) -> None:
    fix = "def add(a, b):\n    return a + b\n"
    row = _run(tmp_path, {"calc.py": fix, "tests/test_a_neg.py": "import calc\n\n" + NEG}, check)
    assert (row["state"], row["reason"]) == ("DONE", None), row
