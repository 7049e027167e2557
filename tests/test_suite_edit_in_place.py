"""An edit in place of a test file the task asks to change, under its own `pytest` contract
(adversary-17 F11): `sed -i` writes a temporary file beside the target and renames it over
it, so the temporary file is a write to the allowed file, not a new test file; a new file
under the suite's path that is renamed over no allowed file stays refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _sh

TEXT = "The test in tests/test_calc.py expects the wrong sum; fix it so it expects 5."


def _calc(root: Path, cmd: str, text: str = TEXT) -> dict[str, object]:
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 6\n"
    )
    (root / "tests" / "test_other.py").write_text("def test_other():\n    assert True\n")
    plan, script = setup(
        root,
        task("Fix the test", "t", contract="pytest tests", max_attempts="1") + text + "\n",
        "workers:\n  t:\n" + _sh(cmd) + "    - say: DONE\n",
    )
    _result, doc = resume(plan, script)
    return _row(doc, "t")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "cmd",
    [
        "sed -i 's/== 6/== 5/' tests/test_calc.py",
        "sed -i.bak 's/== 6/== 5/' tests/test_calc.py; rm tests/test_calc.py.bak",
        "python3 -c \"import os; open('tests/.t.tmp', 'w').write(open('tests/test_calc.py')"
        ".read().replace('== 6', '== 5')); os.replace('tests/.t.tmp', 'tests/test_calc.py')\"",
    ],
)
def test_an_asked_test_file_edited_in_place_passes(tmp_path: Path, cmd: str) -> None:
    row = _calc(tmp_path, cmd)
    assert row["state"] == "DONE", row["reason"]
    assert "== 5" in (tmp_path / "tests" / "test_calc.py").read_text()


@pytest.mark.parametrize(
    ("cmd", "reason"),
    [
        # a temporary file renamed over another test file, which the text does not ask for
        (
            "sed -i 's/== 6/== 5/' tests/test_calc.py; sed -i 's/True/False or True/'"
            " tests/test_other.py",
            "protected input changed: tests/test_other.py: the worker tried to change it",
        ),
        # a new test file (a name pytest collects) is no temporary: refused as it is made
        (
            "sed -i 's/== 6/== 5/' tests/test_calc.py; cp tests/test_calc.py tests/test_more.py",
            "protected input changed: tests/test_more.py: the worker tried to change it",
        ),
        # a new file of another kind, left beside the allowed one
        (
            "sed -i 's/== 6/== 5/' tests/test_calc.py; echo 5 > tests/expected.txt",
            "protected input changed: tests/expected.txt: made by the worker under a protected"
            " pattern",
        ),
    ],
)
def test_an_edit_of_a_test_file_not_asked_for_stays_refused(
    tmp_path: Path, cmd: str, reason: str
) -> None:
    row = _calc(tmp_path, cmd)
    assert row["state"] == "FAILED", row
    assert reason in str(row["reason"]), row["reason"]
