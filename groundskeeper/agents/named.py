"""The paths a plan's checks name, for the agents' snapshot (`agents.snapshot`): a snapshot
never walks the folders it skips (`node_modules`, `.venv`, `__pycache__`, …), so a key a
check keeps there must be named to be held (adversary-14 F2, p27).

Read from the text alone, never run: each path-like word of a task's check, of each workdir
program the check runs (`plan.programs`) and of each test file under a pytest or unittest
check's test paths (`plan.test_paths`) — `open("node_modules/keys/answer.txt")` in a checker,
`diff out.txt .venv/expected.txt` in the check. A path the check builds at run time (joined
from parts, read from a list) is not seen: such a key belongs outside the skipped folders.
Bounded: `MAX_TEXT_BYTES` read of a file, `MAX_TEST_FILES` test files a task.

It names paths; it decides nothing (the snapshot holds those in a skipped folder).
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Iterable
from pathlib import Path

from groundskeeper.agents.snapshot import SKIPPED
from groundskeeper.plan.spec import TaskSpec

__all__ = ["MAX_TEST_FILES", "MAX_TEXT_BYTES", "skipped_named"]

#: The most bytes of a program or test file read for the paths it names.
MAX_TEXT_BYTES = 256 * 1024

#: The most test files read a task.
MAX_TEST_FILES = 200

#: A word that may be a path: no blanks, quotes or shell punctuation.
_WORD = re.compile(r"[A-Za-z0-9_.@+,=~%/-]+")


def skipped_named(tasks: Iterable[TaskSpec], root: Path) -> list[str]:
    """The workdir paths (relative, `/`-separated) that lie in a folder the snapshot skips and
    that some task's check names in its text, its programs' or its tests'."""
    from groundskeeper.plan.programs import command_programs
    from groundskeeper.plan.test_paths import runs_pytest_check, runs_unittest, test_paths

    texts: list[str] = []
    for task in tasks:
        if task.check is None:
            continue
        texts.append(task.check.text)
        programs = command_programs(task.check.text)
        if not isinstance(programs, str):
            texts += [_text(root, path) for p in programs for path in p.paths]
        if runs_pytest_check(task) or runs_unittest(task):
            texts += [_text(root, path) for path in _test_files(root, test_paths(task))]
    found: set[str] = set()
    for text in texts:
        for word in _WORD.findall(text):
            path = posixpath.normpath(word.strip("/") if not word.startswith("/") else "")
            parts = path.split("/")
            if path not in ("", ".") and ".." not in parts and any(p in SKIPPED for p in parts):
                found.add(path)
    return sorted(found)


def _text(root: Path, relative: str) -> str:
    try:
        with open(root / relative, "rb") as handle:
            return handle.read(MAX_TEXT_BYTES).decode("utf-8", "replace")
    except OSError:
        return ""


def _test_files(root: Path, paths: Iterable[str]) -> list[str]:
    """The `.py` files under the test paths (a file path: itself), at most `MAX_TEST_FILES`."""
    found: list[str] = []
    for path in paths:
        where = root / path
        if where.is_file():
            found.append(path)
            continue
        for directory, dirs, names in os.walk(where):
            dirs[:] = sorted(d for d in dirs if d not in SKIPPED)
            base = os.path.relpath(directory, root).replace(os.sep, "/")
            found += [f"{base}/{n}" for n in sorted(names) if n.endswith(".py")]
            if len(found) >= MAX_TEST_FILES:
                return found[:MAX_TEST_FILES]
    return found[:MAX_TEST_FILES]
