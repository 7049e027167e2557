"""The files pytest (and the Python it runs in) reads configuration from in a workdir: one
list, which lint, the run's protection of plain pytest checks (`plan.expected`) and the
`pytest` contract (`acceptance.suite`) all read.

`AT_ROOT` is pytest's own list for the pinned version (pytest 9.2's
`_pytest.config.findpaths.CONFIG_LOADERS_BY_NAME`, in its order; a test holds the two equal),
each with the text that makes the file pytest's configuration ("": any such file is).
"""

from __future__ import annotations

import fnmatch
import posixpath

__all__ = [
    "ANYWHERE",
    "AT_ROOT",
    "PTH",
    "PYTEST_CONFIGURATION",
    "TEST_MODULES",
    "is_test_module",
    "named_as_test",
]

#: Files that configure pytest or Python wherever they lie in the workdir.
ANYWHERE = ("conftest.py", "sitecustomize.py", "usercustomize.py")
#: Files that configure pytest from the directory it starts in (or above): name → the text
#: that makes the file pytest's configuration ("" for every file of that name).
AT_ROOT = {
    "pytest.toml": "",
    ".pytest.toml": "",
    "pytest.ini": "",
    ".pytest.ini": "",
    "pyproject.toml": "[tool.pytest",
    "tox.ini": "[pytest]",
    "setup.cfg": "[tool:pytest]",
}
#: Path-configuration files Python's `site` reads from a site directory.
PTH = "*.pth"
#: Every name above as a path pattern (`path_patterns`).
PYTEST_CONFIGURATION = (*ANYWHERE, *AT_ROOT, PTH)
#: The names pytest collects tests from by default (its `python_files`).
TEST_MODULES = ("test_*.py", "*_test.py")


def is_test_module(path: str) -> bool:
    """Whether pytest collects tests from `path` by its name alone (`TEST_MODULES`)."""
    name = posixpath.basename(path)
    return any(fnmatch.fnmatchcase(name, p) for p in TEST_MODULES)


def named_as_test(path: str) -> bool:
    """Whether `path` is named as a test is (`test_…`, `…_test.py`), whatever its suffix
    (`test_cases.json` too): never taken for the tests' data, which a contract tells apart."""
    name = posixpath.basename(path)
    return name.startswith("test_") or name.endswith("_test.py")
