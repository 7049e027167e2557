"""pytest's own part of a file shared with other tools (`pytest_files.section_sha256`,
adversary-24c F4): another task may change `pyproject.toml`'s version or `setup.cfg`'s flake8
options, but not the table pytest reads — every edit there, however spelled, changes the
digest; edits elsewhere do not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundskeeper.pytest_files import section_sha256

PYPROJECT = """\
[project]
name = "slug"
version = "1.0.0"

[tool.pytest.ini_options]
testpaths = ["tests"]
"""

SETUP_CFG = """\
[flake8]
max-line-length = 79

[tool:pytest]
testpaths = tests
"""


def _digest(tmp_path: Path, name: str, text: str) -> str | None:
    path = tmp_path / name
    path.write_text(text)
    return section_sha256(path)


@pytest.mark.parametrize(
    ("name", "before", "after"),
    [
        ("pyproject.toml", PYPROJECT, PYPROJECT + 'addopts = "--deselect tests/test_slug.py"\n'),
        ("pyproject.toml", PYPROJECT, PYPROJECT + '\n[tool.pytest]\naddopts = ["-k", "x"]\n'),
        ("pyproject.toml", PYPROJECT, PYPROJECT.replace('"tests"', '"other"')),
        ("pyproject.toml", PYPROJECT, PYPROJECT.replace("[tool.pytest.ini_options]", "[x]")),
        ("pyproject.toml", PYPROJECT, PYPROJECT + "[[broken\n"),
        ("setup.cfg", SETUP_CFG, SETUP_CFG + "addopts = --deselect tests/test_slug.py\n"),
        ("setup.cfg", SETUP_CFG, SETUP_CFG + "\n[pytest]\naddopts = -k x\n"),
        ("setup.cfg", SETUP_CFG, SETUP_CFG + "\n[tool:pytest]\naddopts = -k x\n"),
        ("setup.cfg", SETUP_CFG, SETUP_CFG.replace("[tool:pytest]", "[Tool:Pytest]")),
        ("tox.ini", "[tox]\nenvlist = py\n", "[tox]\nenvlist = py\n[pytest]\naddopts = -x\n"),
    ],
)
def test_every_edit_of_pytests_own_part_changes_it(
    tmp_path: Path, name: str, before: str, after: str
) -> None:
    assert _digest(tmp_path, name, before) != _digest(tmp_path, name, after)


@pytest.mark.parametrize(
    ("name", "before", "after"),
    [
        ("pyproject.toml", PYPROJECT, PYPROJECT.replace("1.0.0", "1.1.0")),
        ("pyproject.toml", PYPROJECT, "# the project\n" + PYPROJECT),
        ("setup.cfg", SETUP_CFG, SETUP_CFG.replace("79", "100")),
        ("setup.cfg", SETUP_CFG, "[metadata]\nname = slug\n\n" + SETUP_CFG),
    ],
)
def test_an_edit_elsewhere_in_the_file_leaves_it(
    tmp_path: Path, name: str, before: str, after: str
) -> None:
    assert _digest(tmp_path, name, before) == _digest(tmp_path, name, after)


def test_a_file_that_is_not_there_has_none(tmp_path: Path) -> None:
    assert section_sha256(tmp_path / "pyproject.toml") is None


# -- in a run: the task that bumps the version may change the file, not pytest's table ---------

SLUG = """\
* TODO Fix slugify
  :PROPERTIES:
  :ID: slug
  :max-attempts: 1
  :done-when: python3 -m pytest -q tests
  :END:
  slugify() in slug.py keeps upper-case letters; it must lower-case them. Fix slug.py.
* TODO Bump the version
  :PROPERTIES:
  :ID: bump
  :max-attempts: 1
  :done-when: grep -qx 'version = "1.1.0"' pyproject.toml
  :END:
  Bump the version in pyproject.toml to 1.1.0.
"""
BUMPED = PYPROJECT.replace("1.0.0", "1.1.0")


def _slug(tmp_path: Path, bump: str, fix: bool) -> dict[str, str]:
    from tests.test_cli_run import resume, setup
    from tests.test_paths_cli import _row

    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_slug.py").write_text(
        "from slug import slugify\n\ndef test_lower():\n"
        "    assert slugify('Hello World') == 'hello-world'\n"
    )
    (tmp_path / "slug.py").write_text("def slugify(s):\n    return s.replace(' ', '-')\n")
    (tmp_path / "pyproject.toml").write_text(PYPROJECT)
    slug = (
        "def slugify(s):\n    return s.lower().replace(' ', '-')\n"
        if fix
        else "def slugify(s):\n    return s.replace(' ', '-')\n\ndef test_smoke():\n    pass\n"
    )
    writes = (
        f"    - tool: write_file\n      input: {{path: slug.py, content: {json.dumps(slug)}}}\n"
    )
    script = (
        f"workers:\n  bump:\n    - tool: write_file\n      input: {{path: pyproject.toml,"
        f" content: {json.dumps(bump)}}}\n    - say: DONE\n  slug:\n{writes}    - say: DONE\n"
    )
    plan, workers = setup(tmp_path, "", script)
    first, second = SLUG.split("* TODO Bump")
    plan.write_text("* TODO Bump" + second + first)  # the bump first, then the fix
    _result, doc = resume(plan, workers, "--max-parallel", "1")
    return {t: f"{_row(doc, t)['state']} {_row(doc, t)['reason'] or ''}".strip()
            for t in ("slug", "bump")}  # fmt: skip


def test_a_run_fails_a_pytest_check_whose_table_another_task_changed(tmp_path: Path) -> None:
    """The bump's worker deselects the failing test (and the slug worker's own test keeps
    one collected): the slug task fails naming pytest's table, before its check runs."""
    bump = BUMPED + 'addopts = "--deselect tests/test_slug.py::test_lower slug.py"\n'
    states = _slug(tmp_path, bump, fix=False)
    assert states["slug"] == (
        "FAILED protected_input_changed: protected input changed: pyproject.toml#[tool.pytest]:"
        " pytest's own part of the file, which no task asks to change (the rest of it is the"
        " work of the task that asks for it)"
    ), states
    assert states["bump"] == "DONE", states


def test_a_run_takes_the_version_bumped_beside_the_fix(tmp_path: Path) -> None:
    assert _slug(tmp_path, BUMPED, fix=True) == {"slug": "DONE", "bump": "DONE"}
