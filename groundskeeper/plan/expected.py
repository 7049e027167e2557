"""Expected-output files: what a task's check compares the work against (`diff`/`cmp`/`comm`
operands, `sha256sum -c` lists, `grep -f` files, `test "$(cat X)" = …`), unless the task's
own text asks its worker to change the file or `:writable:` covers it. A run protects those
that exist before it starts, for that task's worker, and says so once (issue 23); lint's
T014 asks that they be hidden. It reads the compiled spec; it does not look at the disk.
"""

from __future__ import annotations

import functools
import re

from groundskeeper.path_patterns import covers, normal_path
from groundskeeper.plan.lint_checks import CHECK_LANGUAGE, compared_files
from groundskeeper.plan.spec import TaskSpec

__all__ = ["asks_to_change", "compared_by", "expected_files"]

# Words with which a task's text asks for a file to be made or changed ("regenerate
# tests/expected.txt", "update the golden tests/out.golden").
_CHANGING = re.compile(
    r"\b(write|writes|rewrite|update|updates|regenerate|generate|create|change|edit|fix|"
    r"refresh|produce|replace|modify|overwrite|make|record|bless)\b",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=4096)
def compared_by(language: str, text: str) -> tuple[str, ...]:
    """The files a check's script compares against, in order, each once; none when the
    check does not parse (lint says so) or is not a shell check."""
    if language != CHECK_LANGUAGE:
        return ()
    from groundskeeper.sandbox import ShellSyntaxError, parse

    try:
        script = parse(text)
    except ShellSyntaxError:
        return ()
    found = (normal_path(name) for name in compared_files(script))
    return tuple(dict.fromkeys(name for name in found if name is not None))


def asks_to_change(task: TaskSpec, path: str) -> bool:
    """Whether the task's title or text (its check aside) names `path` on a line that asks
    for a change: then the file is the worker's to make, not an expectation."""
    heading = task.heading
    check = heading.check.text if heading.check is not None else ""
    body = heading.body.replace(check, "") if check else heading.body
    for line in [heading.title, *body.splitlines()]:
        if path in line and _CHANGING.search(line):
            return True
    return False


def expected_files(task: TaskSpec) -> tuple[str, ...]:
    """The task's expected-output files: compared against by its check, neither asked to be
    changed by its text nor freed by `:writable:`."""
    check = task.check
    if check is None:
        return ()
    return tuple(
        path
        for path in compared_by(check.language, check.text)
        if not covers(task.writable, path) and not asks_to_change(task, path)
    )
