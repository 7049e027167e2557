"""Writing a plan back: the edits a run makes to a plan file — a headline's keyword
(`replace_keyword`, `set_state`), its parent's statistics cookies, at most once the `#+TODO:`
line (`insert_todo_line`) — and the atomic write that lands them. It reads through `plan.org`
and does not judge or run anything.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

from groundskeeper.plan.org import (
    DEFAULT_TODO_LINE,
    Heading,
    Plan,
    PlanEditError,
    load_plan,
    parse_plan,
)

__all__ = [
    "TODO_LINE",
    "has_statistics_cookie",
    "insert_todo_line",
    "needs_todo_line",
    "parent_of",
    "recount_cookies",
    "replace_keyword",
    "set_state",
    "state_edited",
    "statistics_cookies",
    "unwritable_states",
    "write_atomically",
]


_COOKIE = re.compile(r"\[(\d*)(%|/(\d*))\]")  # a statistics cookie: [1/3], [/], [50%], [%]
_TAGS_AT_END = re.compile(r"(?P<gap>[ \t]+)(?P<tags>:[\w@:]+:)(?P<trail>[ \t]*)\Z")
_KEYWORD = re.compile(r"[^\s|]+\Z")
_CHUNK = 1 << 14


def _line_span(text: str, line: int) -> tuple[int, int]:
    """Start and end (before LF) offsets of a 1-based line."""
    if line < 1:
        raise PlanEditError(f"line {line} does not exist")
    # the runner calls this once per verdict on plans of 100k+ lines: count newlines a chunk at
    # a time in C, and step line by line only inside the chunk that holds the target
    start, remaining, size = 0, line - 1, len(text)
    while remaining:
        stop = min(start + _CHUNK, size)
        in_chunk = text.count("\n", start, stop)
        if in_chunk >= remaining:
            for _ in range(remaining):
                start = text.find("\n", start, stop) + 1
            break
        if stop == size:
            raise PlanEditError(f"line {line} does not exist (the text is shorter)")
        remaining -= in_chunk
        start = stop
    end = text.find("\n", start)
    return start, size if end < 0 else end


def replace_keyword(text: str, line: int, old: str | None, new: str) -> str:
    """Change only the keyword of the headline on `line` from `old` to `new`.

    Every other byte stays (CRLF, tabs, trailing text); aligned tags keep their column where
    the gap before them allows. `PlanEditError` if that line is not a headline with `old`.
    """
    if not _KEYWORD.match(new):
        raise PlanEditError(f"`{new}` is not a TODO keyword (one word, no spaces or `|`)")
    start, end = _line_span(text, line)
    content = text[start:end]
    bom = "\ufeff" if start == 0 and content.startswith("\ufeff") else ""
    content = content[len(bom) :]
    eol = "\r" if content.endswith("\r") else ""
    content = content[: len(content) - len(eol)]
    match = re.match(r"\*+ [ \t]*", content)
    if match is None:
        raise PlanEditError(f"line {line} is not a headline: {content!r}")
    stars, rest = content[: match.end()], content[match.end() :]
    if old is None:
        if rest.split(None, 1)[:1] == [new]:
            raise PlanEditError(f"line {line} already has keyword `{new}`")
        after = " " + rest if rest else ""
    elif rest.startswith(old + " ") or rest.rstrip() == old:
        after = rest[len(old) :]
    else:
        shown = rest.split(None, 1)[0] if rest.strip() else ""
        raise PlanEditError(f"line {line}: expected keyword `{old}`, found `{shown}`")
    delta = len(new) + len(after) - len(rest)
    tags = _TAGS_AT_END.search(after)
    if tags and delta and set(tags["gap"]) == {" "}:
        # keep org's tag column: the gap before the tags absorbs the change, never below one
        gap = max(1, len(tags["gap"]) - delta)
        after = after[: tags.start()] + " " * gap + tags["tags"] + tags["trail"]
    return text[:start] + bom + stars + new + after + eol + text[end:]


TODO_LINE = f"#+TODO: {DEFAULT_TODO_LINE}"
_ORG_DEFAULT_STATES = ("TODO", "DONE")  # what org knows without a #+TODO: line


def needs_todo_line(plan: Plan, state: str) -> bool:
    """Whether writing `state` needs the `#+TODO:` line first: the plan has none, and org would
    read the headline as a plain heading titled `STATE …` (anything but TODO and DONE)."""
    return not plan.declares_keywords and state not in _ORG_DEFAULT_STATES


def unwritable_states(plan: Plan, states: Iterable[str]) -> list[str]:
    """The verdicts of `states` no write-back can give a task of `plan` as a finished state:
    the plan has a `#+TODO:`-like line and none of its sequences holds the state after `|`
    (a plan without one gets `#+TODO: TODO NEXT | DONE FAILED PARTIAL` at the first such
    write). One reading for the runner's preflight (R001), `agent setup` (H002) and the
    hook's breaker, which seals FAILED only where it can write it."""
    if not plan.declares_keywords:
        return []
    return [s for s in states if s not in plan.done_states]


def insert_todo_line(text: str) -> str:
    """`text` with `#+TODO: TODO NEXT | DONE FAILED PARTIAL` as its new first line (after a
    BOM, ending as the file's lines end). Every other line moves down by one."""
    bom = "\ufeff" if text.startswith("\ufeff") else ""
    eol = "\r\n" if "\r\n" in text and text.count("\r\n") == text.count("\n") else "\n"
    return bom + TODO_LINE + eol + text[len(bom) :]


def statistics_cookies(title_line: str, done: int, total: int) -> str:
    """A headline with its statistics cookies counted as org counts them: `[done/total]`, or
    `[percent%]` rounded down (org-update-parent-todo-statistics)."""

    def counted(match: re.Match[str]) -> str:
        if match.group(2) == "%":
            return f"[{(100 * done) // max(1, total)}%]"
        return f"[{done}/{total}]"

    return _COOKIE.sub(counted, title_line)


def has_statistics_cookie(heading: Heading) -> bool:
    """A cookie org keeps counting from the children's keywords (not a checkbox count)."""
    data = (heading.get_property("_COOKIE_DATA") or "").lower()
    return "checkbox" not in data.split() and _COOKIE.search(heading.title) is not None


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text` (UTF-8, no newline translation) or leave it untouched.

    A temporary file in the same directory is written, fsynced and renamed over the target,
    then the directory is fsynced so the rename itself survives a crash.
    """
    path = Path(path)
    directory = path.parent
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    fd, temp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def set_state(path: str | Path, task_id: str, keyword: str) -> Plan:
    """Set one task's keyword in the plan file and return the plan as re-read from disk.

    A plan without a `#+TODO:` line gets one first when `keyword` is a state org would not
    know there. The parent's statistics cookies are counted again. The edit is confirmed
    before writing (the new text parses with that task in `keyword`) and after (the file
    reads back byte for byte). Callers running tasks in parallel must serialise calls on one
    file.
    """
    path = Path(path)
    plan = load_plan(path)
    text = state_edited(plan, task_id, keyword)
    if text == plan.text:
        return plan
    write_atomically(path, text)
    reread = load_plan(path)
    if reread.text != text:
        raise PlanEditError(f"{path}: the file changed under us while `{task_id}` was written")
    return reread


def state_edited(plan: Plan, task_id: str, keyword: str) -> str:
    """The plan's text with one task's keyword set (`set_state`'s edit, on no file): a
    `#+TODO:` line added first when org would not know `keyword`, the parent's statistics
    cookies counted again, the result confirmed to parse with that task in `keyword`."""
    path = plan.path
    task = plan.get(task_id)
    states = plan.active_states + plan.done_states
    if not plan.declares_keywords:
        states = tuple(DEFAULT_TODO_LINE.replace("|", " ").split())
    if keyword not in states:
        raise PlanEditError(f"`{keyword}` is not a state of {path} (states: {', '.join(states)})")
    if task.keyword == keyword:
        return plan.text
    text, shift = plan.text, 0
    if needs_todo_line(plan, keyword):
        text, shift = insert_todo_line(text), 1
    text = replace_keyword(text, task.line + shift, task.keyword, keyword)
    text = _recount_parent(plan, text, task, keyword, shift)
    edited = parse_plan(text, path)
    if edited.get(task_id).keyword != keyword:
        raise PlanEditError(f"{path}:{task.line}: the edit would not read back as `{keyword}`")
    return text


def parent_of(plan: Plan, heading: Heading) -> Heading | None:
    """The heading directly above `heading`, or None for a top-level one."""
    for candidate in plan.walk():
        if any(child is heading for child in candidate.children):
            return candidate
    return None


def recount_cookies(
    text: str, parent: Heading, states: Mapping[int, str | None], done: tuple[str, ...], shift: int
) -> str:
    """`text` with `parent`'s statistics cookies counted over its direct children, each child
    in the state `states` gives by its (original) line, else its keyword."""
    if not has_statistics_cookie(parent):
        return text
    total = finished = 0
    for child in parent.children:
        keyword = states.get(child.line, child.keyword)
        if keyword is not None:
            total += 1
            finished += keyword in done
    start, end = _line_span(text, parent.line + shift)
    line = text[start:end]
    return text[:start] + statistics_cookies(line, finished, total) + text[end:]


def _recount_parent(plan: Plan, text: str, task: Heading, keyword: str, shift: int) -> str:
    parent = parent_of(plan, task)
    if parent is None:
        return text
    done = plan.done_states if plan.declares_keywords else ("DONE", "FAILED", "PARTIAL")
    return recount_cookies(text, parent, {task.line: keyword}, done, shift)
