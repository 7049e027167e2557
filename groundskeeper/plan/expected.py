"""Expected-output files: what a task's check compares the work against (`plan.compared` reads
the check as it will run: `cd`, variables, options), unless the task asks its worker to
change the file — its text makes the file the object of a changing verb ("regenerate
tests/expected.txt"; "make out.txt match tests/expected.txt" asks nothing of the golden) —
or `:writable:` covers it. A run protects those that exist before it starts and says so once
(issue 23); lint's T014 asks that they be hidden. It reads the compiled spec, and the disk
only in `existing_files`.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from pathlib import Path

from groundskeeper.path_patterns import covers, normal_path
from groundskeeper.plan.lint_checks import CHECK_LANGUAGE
from groundskeeper.plan.spec import TaskSpec
from groundskeeper.pytest_files import PYTEST_CONFIGURATION

__all__ = [
    "PYTEST_CONFIGURATION",
    "asks_to_change",
    "compared_by",
    "configuration_kept",
    "existing_files",
    "expected_files",
    "expected_inputs",
    "freed",
    "runs_pytest_check",
]

# Verbs with which a task asks for a file to be made or changed, when the file is their
# object: "regenerate tests/expected.txt", "update the golden tests/out.golden", "append a
# line to notes.txt".
_CHANGING = frozenset(
    {
        "write", "writes", "rewrite", "rewrites", "update", "updates", "regenerate",
        "regenerates", "generate", "generates", "create", "creates", "change", "changes",
        "edit", "edits", "fix", "fixes", "refresh", "refreshes", "produce", "produces",
        "replace", "replaces", "modify", "modifies", "overwrite", "overwrites", "make",
        "makes", "record", "records", "re-record", "bless", "blesses", "append", "appends",
        "fill", "fills", "extend", "extends", "add", "adds", "save", "saves",
    }
)  # fmt: skip
# Words after which a name is what the work is measured by, not what it changes: the verb's
# object has ended ("make out.txt match tests/expected.txt", "so it equals GOLDEN").
_ENDS_OBJECT = frozenset(
    {
        "match", "matches", "matching", "equal", "equals", "equaling", "compare", "compares",
        "compared", "comparing", "against", "like", "same", "as", "than", "so", "that",
        "until", "unless", "with", "versus", "vs", "per", "according", "reads", "read",
        "reading", "using", "use", "uses", "from",
    }
)  # fmt: skip
_NEGATIONS = frozenset({"not", "never", "don't", "dont", "without", "nor", "no"})
_MAX_BETWEEN = 4  # words between a verb and its object ("write the final answer to X")
_TOKEN = re.compile(r"[^\s,;:()\"'`]+|[,;:()]")


@functools.lru_cache(maxsize=4096)
def compared_by(language: str, text: str) -> tuple[str, ...]:
    """The files (or glob patterns) a check's script compares against, as the check will
    name them when it runs, in order, each once; none when the check does not parse (lint
    says so) or is not a shell check."""
    if language != CHECK_LANGUAGE:
        return ()
    from groundskeeper.plan.compared import compared_files
    from groundskeeper.sandbox import ShellSyntaxError, parse

    try:
        script = parse(text)
    except ShellSyntaxError:
        return ()
    found = (normal_path(name) for name in compared_files(script))
    return tuple(dict.fromkeys(name for name in found if name is not None))


def asks_to_change(task: TaskSpec, path: str, *, anywhere: bool = False) -> bool:
    """Whether the task's title or text (its check aside) makes `path` the object of a
    verb that changes it, not negated: then the file is the worker's to make. With
    `anywhere`, a file of that name in any directory (`tests/conftest.py` for `conftest.py`)."""
    heading = task.heading
    check = heading.check.text if heading.check is not None else ""
    body = heading.body.replace(check, "") if check else heading.body
    return any(
        _object_of_change(line, path, anywhere=anywhere)
        for line in [heading.title, *body.splitlines()]
    )


def _object_of_change(line: str, path: str, *, anywhere: bool = False) -> bool:
    """Whether `line` makes `path` (with `anywhere`, a file of that name in any directory)
    the object of a changing verb."""
    if path not in line:
        return False
    tokens = [t.rstrip(".").lower() for t in _TOKEN.findall(line)]
    wanted = path.lower().removeprefix("./")
    for at, token in enumerate(tokens):
        token = token.removeprefix("./")
        if token != wanted and not (anywhere and token.endswith("/" + wanted)):
            continue
        between = 0
        for back in range(at - 1, -1, -1):
            word = tokens[back]
            if word in _CHANGING:
                before = tokens[max(0, back - 2) : back]
                if not any(w in _NEGATIONS or w.endswith("n't") for w in before):
                    return True
                break
            if word in _ENDS_OBJECT or word in (";", ":", "(", ")") or word.endswith("n't"):
                break
            if word in ("and", "or", ",") or "/" in word or "." in word:
                continue  # a list of objects ("to a.txt and b.txt")
            between += 1
            if between > _MAX_BETWEEN:
                break
    return False


def freed(spec_tasks: tuple[TaskSpec, ...] | list[TaskSpec], path: str) -> bool:
    """Whether some task of the plan may change `path`: `:writable:` covers it, or its text
    asks for the change (a sibling whose job is to regenerate the golden)."""
    return any(covers(t.writable, path) or asks_to_change(t, path) for t in spec_tasks)


def expected_files(task: TaskSpec) -> tuple[str, ...]:
    """The task's expected-output files (a glob stays a pattern): compared against by its
    check, neither asked to be changed by its text nor freed by `:writable:`."""
    check = task.check
    if check is None:
        return ()
    return tuple(
        path
        for path in compared_by(check.language, check.text)
        if not covers(task.writable, path) and not asks_to_change(task, path)
    )


def existing_files(base: Path, name: str) -> list[str]:
    """The regular files under `base` that `name` (a path, or a glob pattern) names now,
    relative and `/`-separated; never inside a control directory."""
    if not any(c in name for c in "*?["):
        return [name] if (base / name).is_file() else []
    try:
        found = sorted(p for p in base.glob(name) if p.is_file())
    except (ValueError, OSError):
        return []
    relative = (p.relative_to(base).as_posix() for p in found)
    return [r for r in relative if ".groundskeeper" not in r.casefold().split("/")]


@functools.lru_cache(maxsize=4096)
def _runs_pytest(language: str, text: str) -> bool:
    if language != CHECK_LANGUAGE:
        return False
    from groundskeeper.plan.compared import runs_pytest
    from groundskeeper.sandbox import ShellSyntaxError, parse

    try:
        return runs_pytest(parse(text))
    except ShellSyntaxError:
        return False


def runs_pytest_check(task: TaskSpec) -> bool:
    """Whether the task's check runs pytest itself (`python3 -m pytest …`)."""
    return task.check is not None and _runs_pytest(task.check.language, task.check.text)


def configuration_kept(tasks: tuple[TaskSpec, ...] | list[TaskSpec]) -> tuple[str, ...]:
    """The pytest configuration patterns no worker of the run may write, when some task's
    check runs pytest itself: each that no task frees (`:writable:` covering the name, or a
    task's text asking to change a file of that name)."""
    if not any(runs_pytest_check(t) for t in tasks):
        return ()
    return tuple(
        pattern
        for pattern in PYTEST_CONFIGURATION
        if not any(
            covers(t.writable, pattern) or asks_to_change(t, pattern, anywhere=True) for t in tasks
        )
    )


def expected_inputs(
    tasks: tuple[TaskSpec, ...] | list[TaskSpec], base: Path, known: frozenset[str] | None = None
) -> dict[str, list[str]]:
    """Each expected file that exists (under `base` now; `known`: among these names, as a
    seal recorded them) and is protected without a pattern naming it (not covered by the
    comparing task's own `:protect:` or `:hide:`) → the tasks comparing against it. A run
    protects these (`supervisor.run_paths`), and an agent's session the same ones."""
    found: dict[str, list[str]] = {}
    for task in tasks:
        for pattern in expected_files(task):
            if known is None:
                names = existing_files(base, pattern)
            elif any(c in pattern for c in "*?["):
                names = sorted(n for n in known if fnmatch.fnmatchcase(n, pattern))
            else:
                names = [pattern] if pattern in known else []
            for name in names:
                if covers(task.protect, name) or covers(task.hide, name):
                    continue
                comparing = found.setdefault(name, [])
                if task.task_id not in comparing:
                    comparing.append(task.task_id)
    return found
