"""The files pytest (and the Python it runs in) reads configuration from in a workdir: one
list, which lint, the run's protection of plain pytest checks (`plan.expected`) and the
`pytest` contract (`acceptance.suite`) all read.

`AT_ROOT` is pytest's own list for the pinned version (pytest 9.2's
`_pytest.config.findpaths.CONFIG_LOADERS_BY_NAME`, in its order; a test holds the two equal),
each with the text that makes the file pytest's configuration ("": any such file is).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import posixpath
import re
from pathlib import Path

__all__ = [
    "ANYWHERE",
    "AT_ROOT",
    "PTH",
    "PYTEST_CONFIGURATION",
    "SHARED",
    "TEST_MODULES",
    "is_test_module",
    "named_as_test",
    "section_name",
    "section_sha256",
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


#: The files pytest shares with other tools (`AT_ROOT` with a marker), each with the part of
#: it pytest reads: another task may be asked to change the file (a version bump, a flake8
#: option), never that part (adversary-24c F4).
SHARED = {"pyproject.toml": "tool.pytest", "setup.cfg": "tool:pytest", "tox.ini": "pytest"}
# an INI header pytest could read as its own, however it is spelled
_INI_HEADER = re.compile(r"^\s*\[\s*(?P<name>[^\]]*?)\s*\]")
_INI_OWN = frozenset({"pytest", "tool:pytest"})


def section_name(path: str) -> str:
    """How the part pytest reads of a shared file is named in a seal and a reason
    (`pyproject.toml#[tool.pytest]`)."""
    return f"{path}#[{SHARED[posixpath.basename(path)]}]"


def section_sha256(path: Path) -> str | None:
    """The SHA-256 of the part of a shared configuration file (`SHARED`) that pytest reads;
    None when the file is not there. For `pyproject.toml`, the `tool.pytest` table as TOML
    reads it (every sub-table, `ini_options` included); for an INI file, the raw text of
    every section whose header reads as `[pytest]` or `[tool:pytest]` in any case or
    spacing. A file that does not parse digests its whole text (any edit then counts)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError:
        return "unreadable"
    if path.name == "pyproject.toml":
        import tomllib

        try:
            document = tomllib.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError):
            return "unparsed:" + hashlib.sha256(data).hexdigest()
        tool = document.get("tool")
        table = tool.get("pytest") if isinstance(tool, dict) else None
        canonical = json.dumps(table, sort_keys=True, default=str)
        return hashlib.sha256(canonical.encode()).hexdigest()
    own: list[str] = []
    keep = False
    for line in data.decode("utf-8", errors="replace").splitlines(keepends=True):
        header = _INI_HEADER.match(line)
        if header is not None:
            name = re.sub(r"\s+", "", header.group("name")).casefold()
            keep = name in _INI_OWN
        if keep:
            own.append(line)
    return hashlib.sha256("".join(own).encode()).hexdigest()
