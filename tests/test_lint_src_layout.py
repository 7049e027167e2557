"""T044 (adv24 H4): a test-runner check whose tests import a package of the `src/` layout
that nothing puts on `sys.path` is said before any work: the sandbox installs nothing, so
the tests cannot import it whatever the worker does, and pytest's `pythonpath`, the fix,
is configuration the run keeps from every worker."""

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
