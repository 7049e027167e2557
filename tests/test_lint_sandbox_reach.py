"""What the sandbox cannot reach, said by lint before any work. T044 (adv24 H4): a
test-runner check whose tests import a package of the `src/` layout that nothing puts on
`sys.path` (the sandbox installs nothing, so the tests cannot import it whatever the worker
does, and pytest's `pythonpath`, the fix, is configuration the run keeps from every worker).
T045 (adv24 F5): a hidden key compared with the output of the code under test, which can
open it and print it while the check runs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import load_plan

PLAN = """\
* TODO Fix the cart total
  :PROPERTIES:
  :ID: cart
  :done-when: python3 -m pytest -q tests
  :END:
  Fix total() in src/shop/__init__.py.
"""


def _codes(tmp_path: Path, **files: str) -> list[str]:
    (tmp_path / "plan.org").write_text(PLAN)
    (tmp_path / "src" / "shop").mkdir(parents=True)
    (tmp_path / "src" / "shop" / "__init__.py").write_text("def total(xs):\n    return 0\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_shop.py").write_text(
        "from shop import total\n\ndef test_total():\n    assert total([1, 2]) == 3\n"
    )
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return [d.code for d in validate(load_plan(tmp_path / "plan.org")) if d.code == "T044"]


def test_a_src_package_nothing_puts_on_the_path_is_said(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.setuptools.packages.find]\nwhere = ["src"]\n')
    assert _codes(tmp_path) == ["T044"]
    (message,) = [d.message for d in validate(load_plan(tmp_path / "plan.org")) if d.code == "T044"]
    assert message.startswith("the tests import `shop`, which lies under `src/`")
    assert 'add `pythonpath = ["src"]` under `[tool.pytest.ini_options]`' in message


@pytest.mark.parametrize(
    "files",
    [
        {"pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["src"]\n'},
        {"pytest.ini": "[pytest]\npythonpath = src\n"},
        {"conftest.py": "import sys\nsys.path.insert(0, 'src')\n"},
        {"shop.py": "def total(xs):\n    return sum(xs)\n"},  # importable from the top
    ],
    ids=["pyproject", "pytest-ini", "conftest", "top-level"],
)
def test_a_project_that_puts_it_there_is_not(tmp_path: Path, files: dict[str, str]) -> None:
    assert _codes(tmp_path, **files) == []


HIDDEN = """\
* TODO Upper-case the names
  :PROPERTIES:
  :ID: conv
  :hide: tests/expected.txt
  :done-when: {check}
  :END:
  Make upper.py print each name of the file it is given upper-cased, one a line.
"""


@pytest.mark.parametrize(
    ("check", "codes"),
    [
        # adv24 F5: the program judged is the work; it can open the hidden key and print it
        ("python3 upper.py names.txt | diff - tests/expected.txt", ["T045"]),
        # a tool over the work, given the file it writes: no program of the work runs
        ("diff out.txt tests/expected.txt", []),
    ],
)
def test_a_hidden_key_compared_with_the_works_output_is_said(
    tmp_path: Path, check: str, codes: list[str]
) -> None:
    (tmp_path / "plan.org").write_text(HIDDEN.format(check=check))
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "expected.txt").write_text("ANN\n")
    (tmp_path / "names.txt").write_text("ann\n")
    (tmp_path / "upper.py").write_text("print('x')\n")
    found = [d.code for d in validate(load_plan(tmp_path / "plan.org")) if d.code == "T045"]
    assert found == codes


@pytest.mark.parametrize(
    ("check", "refused"),
    [
        # adv24b F6: never passes; F3: `test ! -x` always does
        ("test -x deploy.sh", True),
        ("[ -x deploy.sh ]", True),
        ("test -f config.sh && test ! -x config.sh", True),
        ("test -O out.txt", True),
        ("[[ -x deploy.sh ]]", False),  # the shell answers it from the file's mode
        ('test "$MODE" = -x', False),  # a string compared, no operator
    ],
)
def test_a_test_operator_the_sandbox_cannot_answer_is_refused(
    tmp_path: Path, check: str, refused: bool
) -> None:
    text = "* TODO t\n  :PROPERTIES:\n  :ID: t\n  :done-when: {}\n  :END:\n  Do it.\n"
    (tmp_path / "plan.org").write_text(text.format(check))
    codes = [d.code for d in validate(load_plan(tmp_path / "plan.org")) if d.code == "T012"]
    assert codes == (["T012"] if refused else [])
