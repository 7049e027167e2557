"""A test a sibling task is asked to add under a `pytest` contract's test paths ("Add a test
for mul with zero in tests/test_zero.py") is the plan's asked-for work: the contract of the
task after it counts its tests as new ones it tolerates (adversary-17 F3), after the red-first
tests pass without that file. A test file a sibling adds unasked is still new (C022), and an
asked one that patches the code under test still fails the red-first tests without it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_cli_run import HEAD, resume

CALC = "def add(a, b):\n    return a + b\n\ndef mul(a, b):\n    return a + b\n"
FIXED = CALC.replace("return a + b\n", "return a * b\n").replace(
    "def add(a, b):\n    return a * b", "def add(a, b):\n    return a + b"
)
TESTS = "from calc import add, mul\n\ndef test_add():\n    assert add(2, 3) == 5\n\n" + (
    "def test_mul():\n    assert mul(6, 7) == 42\n"
)
ZERO = "from calc import mul\n\ndef test_mul_zero():\n    assert mul(0, 5) == 0\n"
PATCHING = "import calc\n\ncalc.mul = lambda a, b: a * b\n\ndef test_mul_zero():\n    pass\n"


def _write(path: str, content: str) -> str:
    return "{tool: write_file, input: {path: " + path + ", content: " + json.dumps(content) + "}}"


def _run(tmp_path: Path, first: str, first_writes: str, fix_writes: str) -> dict[str, str]:
    (tmp_path / "calc.py").write_text(CALC)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text(TESTS)
    plan = tmp_path / "plan.org"
    plan.write_text(
        HEAD + "* TODO Calc\n  :PROPERTIES:\n  :ORDERED: t\n  :END:\n"
        "** TODO First\n   :PROPERTIES:\n   :ID: zt\n   :done-when: test -s notes.txt\n"
        f"   :END:\n   {first}\n"
        "** TODO Fix mul\n   :PROPERTIES:\n   :ID: fix\n   :contract: pytest tests\n"
        "   :END:\n   Fix mul in calc.py so the tests pass.\n"
    )
    script = tmp_path / "w.yaml"
    script.write_text(
        f"workers:\n  zt: [{_write('notes.txt', 'done')}, {first_writes}, {{say: DONE}}]\n"
        f"  fix: [{fix_writes}{{say: DONE}}]\n"
    )
    _, doc = resume(plan, script)
    return {t["id"]: t["state"] for t in doc["tasks"] if t["id"] in ("zt", "fix")}


ASKED = "Write notes.txt, and add a test for mul with zero in tests/test_zero.py."
UNASKED = "Write notes.txt holding the word done."


def test_a_test_file_a_sibling_adds_unasked_fails_the_contract(tmp_path: Path) -> None:
    found = _run(
        tmp_path, UNASKED, _write("tests/test_zero.py", ZERO), _write("calc.py", FIXED) + ", "
    )
    assert found["fix"] == "FAILED"


def test_an_asked_test_file_that_patches_the_code_fails_the_contract(tmp_path: Path) -> None:
    found = _run(tmp_path, ASKED, _write("tests/test_zero.py", PATCHING), "")
    assert found == {"zt": "DONE", "fix": "FAILED"}


def test_a_test_file_a_sibling_is_asked_to_add_counts(tmp_path: Path) -> None:
    found = _run(
        tmp_path, ASKED, _write("tests/test_zero.py", ZERO), _write("calc.py", FIXED) + ", "
    )
    assert found == {"zt": "DONE", "fix": "DONE"}
