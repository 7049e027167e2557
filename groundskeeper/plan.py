"""The plan model: an org-mode plan file read into a typed, frozen tree, and in-place state edits.

It owns reading (`load_plan`, `parse_plan`, on top of orgparse, made block-aware) and the one
write a run makes to a plan: a headline's keyword (`replace_keyword`, `set_state`). It does not
judge a plan (that is `groundskeeper.lint`) and never runs anything.
"""

from __future__ import annotations

import gc
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Literal

import orgparse
from orgparse.date import TIMESTAMP_RE
from orgparse.node import (
    OrgEnv,
    OrgNode,
    parse_comment,
    parse_heading_level,
    parse_heading_priority,
    parse_heading_tags,
    parse_heading_todos,
    parse_property,
    parse_seq_todo,
)

from groundskeeper.errors import GroundskeeperError, UsageError
from groundskeeper.regular_file import NotARegularFileError, read_regular_file

__all__ = [
    "DEFAULT_TODO_LINE",
    "Check",
    "Heading",
    "Plan",
    "PlanEditError",
    "PlanReadError",
    "SourceBlock",
    "TaskNotFound",
    "load_plan",
    "parse_plan",
    "replace_keyword",
    "set_state",
    "write_atomically",
]

DEFAULT_TODO_LINE = "TODO NEXT | DONE FAILED PARTIAL"
_DEFAULT_ACTIVE = ("TODO", "NEXT")
_DEFAULT_DONE = ("DONE", "FAILED", "PARTIAL")


class PlanReadError(UsageError):
    """The plan file cannot be read as text: missing, a directory, binary, not UTF-8."""


class PlanEditError(GroundskeeperError, ValueError):
    """A keyword edit that does not fit the text (wrong line, wrong keyword, unknown state)."""


class TaskNotFound(GroundskeeperError, KeyError):
    """No task (or more than one) answers to the id asked for."""

    def __str__(self) -> str:
        # KeyError would repr() its argument; the message is already written for a person.
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class SourceBlock:
    """One `#+begin_src … #+end_src` block in a heading's own section."""

    language: str
    header_args: tuple[str, ...]
    is_check: bool
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    body: str
    line: int


@dataclass(frozen=True)
class Check:
    """A task's acceptance check, chosen by DESIGN's precedence (`:done-when:` first)."""

    text: str
    language: str
    line: int
    source: Literal["done-when", "block"]


@dataclass(frozen=True, eq=False)
class Heading:
    """One org heading. Equality is identity: two headings are the same only if they are one."""

    level: int
    title: str
    keyword: str | None
    tags: tuple[str, ...]
    all_tags: tuple[str, ...]
    properties: Mapping[str, str]
    body: str
    line: int
    children: tuple[Heading, ...] = field(repr=False)
    blocks: tuple[SourceBlock, ...]
    path: tuple[str, ...]
    # lower-cased property name -> 1-based line of that property inside the drawer
    property_lines: Mapping[str, int] = field(default_factory=dict, repr=False)
    # derived once at construction (children exist by then): the tree is read far more than built
    task_id: str = field(init=False)
    check: Check | None = field(init=False)
    child_tasks: tuple[Heading, ...] = field(init=False, repr=False)
    ordered: bool = field(init=False)

    def __init__(
        self,
        level: int,
        title: str,
        keyword: str | None,
        tags: tuple[str, ...],
        all_tags: tuple[str, ...],
        properties: Mapping[str, str],
        body: str,
        line: int,
        children: tuple[Heading, ...],
        blocks: tuple[SourceBlock, ...],
        path: tuple[str, ...],
        property_lines: Mapping[str, int] | None = None,
    ) -> None:
        explicit_id = done_when = ordered = None
        for key, value in properties.items():
            lowered = key.lower()  # org property names are case-insensitive
            if lowered == "id" and explicit_id is None:
                explicit_id = value
            elif lowered == "done-when" and done_when is None:
                done_when = value
            elif lowered == "ordered" and ordered is None:
                ordered = value
        if property_lines is None:
            property_lines = {}
        # DESIGN's precedence: :done-when:, else the first `:check` block of the own section
        check = None
        if done_when is not None:
            at = property_lines.get("done-when", line)
            check = Check(text=done_when, language="sh", line=at, source="done-when")
        else:
            for block in blocks:
                if block.is_check:
                    check = Check(block.body, block.language, block.line, "block")
                    break
        nearest: list[Heading] = []
        for child in children:
            if child.keyword is not None:
                nearest.append(child)
            else:
                nearest.extend(child.child_tasks)  # grouping headings are looked into
        # Frozen fields filled through the instance dict, once: a plan has a heading per task,
        # and the generated __init__'s object.__setattr__ per field was a tenth of a lint.
        fields = self.__dict__
        fields["level"] = level
        fields["title"] = title
        fields["keyword"] = keyword
        fields["tags"] = tags
        fields["all_tags"] = all_tags
        fields["properties"] = properties
        fields["body"] = body
        fields["line"] = line
        fields["children"] = children
        fields["blocks"] = blocks
        fields["path"] = path
        fields["property_lines"] = property_lines
        fields["task_id"] = explicit_id or "/".join(path)
        fields["check"] = check
        fields["child_tasks"] = tuple(nearest)
        # any value but nil reads as true in org
        fields["ordered"] = ordered is not None and ordered.strip() not in ("", "nil")

    def get_property(self, name: str) -> str | None:
        """A property's value, matching the name case-insensitively as org does."""
        value = self.properties.get(name)
        if value is not None:
            return value
        lowered = name.lower()
        for key, value in self.properties.items():
            if key.lower() == lowered:
                return value
        return None

    @property
    def is_task(self) -> bool:
        return self.keyword is not None


@dataclass(frozen=True, eq=False)
class Plan:
    """A parsed plan file. `text` is the exact text read, every byte kept."""

    path: Path | None
    text: str
    title: str | None
    active_states: tuple[str, ...]
    done_states: tuple[str, ...]
    roots: tuple[Heading, ...]

    def walk(self) -> Iterator[Heading]:
        """Every heading, in document order."""
        stack = list(reversed(self.roots))
        while stack:
            heading = stack.pop()
            yield heading
            stack.extend(reversed(heading.children))

    @cached_property
    def _tasks(self) -> tuple[Heading, ...]:
        return tuple(h for h in self.walk() if h.is_task)

    def tasks(self) -> list[Heading]:
        """Headings with a TODO keyword, in document order."""
        return list(self._tasks)

    @cached_property
    def _tasks_by_id(self) -> dict[str, list[Heading]]:
        index: dict[str, list[Heading]] = {}
        for task in self._tasks:
            index.setdefault(task.task_id, []).append(task)
        return index

    def get(self, task_id: str) -> Heading:
        """The one task with this id; `TaskNotFound` (a KeyError) when none or several have it."""
        found = self._tasks_by_id.get(task_id)
        where = f" in {self.path}" if self.path else ""
        if not found:
            raise TaskNotFound(f"no task with id `{task_id}`{where}")
        if len(found) > 1:
            lines = ", ".join(str(h.line) for h in found)
            raise TaskNotFound(f"task id `{task_id}` is ambiguous{where}: lines {lines}")
        return found[0]


# --- reading -----------------------------------------------------------------------------------

_HEADLINE = re.compile(r"\*+ ")  # orgparse's own headline test: stars, then a space
_PROPERTY_KEY = re.compile(r"\s*:(.*?):")


def load_plan(path: str | Path) -> Plan:
    """Read and parse a plan file; `PlanReadError` names the file (and line) when it cannot."""
    path = Path(path)
    if not path.exists():
        raise PlanReadError(f"{path}: no such file; give the path of an org-mode plan (.org)")
    if path.is_dir():
        raise PlanReadError(f"{path}: is a directory, not a plan file; give the .org file in it")
    try:
        data = read_regular_file(path)
    except NotARegularFileError:
        raise PlanReadError(
            f"{path}: not a regular file (a FIFO, socket or device); give the plan's .org file"
        ) from None
    except OSError as exc:
        raise PlanReadError(f"{path}: cannot be read ({exc.strerror or exc})") from exc
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise PlanReadError(
            f"{path}:{line}: binary file (NUL byte on line {line}), not an org-mode plan"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise PlanReadError(
            f"{path}:{line}: not valid UTF-8 (byte 0x{data[exc.start]:02x} on line {line});"
            " save the plan as UTF-8"
        ) from exc
    return parse_plan(text, path)


def _split_lines(text: str) -> list[str]:
    """Lines as an editor numbers them: split on LF only, a CR before it dropped."""
    lines = text.split("\n")
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _block_name(stripped: str, prefix: str) -> str | None:
    """`src` for `#+begin_src …` (prefix `#+begin_`), case-insensitively; None otherwise."""
    if stripped[: len(prefix)].lower() != prefix:
        return None
    rest = stripped[len(prefix) :]
    name = rest.split(None, 1)[0] if rest.strip() else ""
    return name.lower() or None


def _parse_src_header(stripped: str, body: str, line: int) -> SourceBlock:
    tokens = stripped.split()[1:]
    language = tokens[0] if tokens and not tokens[0].startswith(":") else ""
    args = tuple(tokens[1:] if language else tokens)
    inputs: list[str] = []
    outputs: list[str] = []
    target: list[str] | None = None
    for token in args:
        if token.startswith(":"):
            target = inputs if token == ":in" else outputs if token == ":out" else None
        elif target is not None:
            target.extend(part for part in (p.strip() for p in token.split(",")) if part)
    return SourceBlock(
        language=language,
        header_args=args,
        is_check=":check" in args,
        inputs=tuple(inputs),
        outputs=tuple(outputs),
        body=body,
        line=line,
    )


def _unescape(line: str) -> str:
    # org escapes `*` and `#+` at the start of a block line with a comma
    stripped = line.lstrip()
    if stripped.startswith((",*", ",#+")):
        cut = len(line) - len(stripped)
        return line[:cut] + stripped[1:]
    return line


@dataclass
class _Section:
    """What the line scan learns about one headline's section (0-based line indexes)."""

    start: int
    fed_at: int  # where its headline is in the lines shown to orgparse
    blocks: list[SourceBlock] = field(default_factory=list)
    drawer: tuple[int, int] | None = None  # first and last line of the property drawer


def _scan(lines: list[str]) -> tuple[list[int], dict[int, _Section], list[tuple[int, int]]]:
    """One pass over the lines: which to show orgparse, each section's blocks and drawer, and
    the `#+` lines shown (each with its section's start line, -1 before the first headline).

    orgparse sees only what it is used for here (headlines, `#+` keywords, property drawers):
    lines inside blocks must not reach it (it would read `* x` there as a headline), and body
    lines it would only scan for timestamps we do not use.
    """
    last_end: dict[str, int] = {}
    for i, line in enumerate(lines):
        if "#+" in line:
            name = _block_name(line.lstrip(), "#+end_")
            if name:
                last_end[name] = i

    fed: list[int] = []
    sections: dict[int, _Section] = {}
    keyword_lines: list[tuple[int, int]] = []
    section: _Section | None = None
    drawer_state = 0  # 0 looking for the drawer, 1 inside it, 2 done with it
    i = 0
    count = len(lines)
    while i < count:
        line = lines[i]
        if line.startswith("*") and _HEADLINE.match(line):
            section = _Section(start=i, fed_at=len(fed))
            sections[i] = section
            drawer_state = 0
            fed.append(i)
        elif "#+" in line and line.lstrip().startswith("#+"):
            stripped = line.lstrip()
            name = _block_name(stripped, "#+begin_")
            if name is not None and last_end.get(name, -1) > i:
                # a block: skip to its end; org has no block without a matching end line
                end = i + 1
                while _block_name(lines[end].lstrip(), "#+end_") != name:
                    end += 1
                if name == "src" and section is not None:
                    body = "\n".join(_unescape(x) for x in lines[i + 1 : end])
                    section.blocks.append(_parse_src_header(stripped, body, i + 1))
                i = end + 1
                continue
            fed.append(i)
            keyword_lines.append((i, -1 if section is None else section.start))
        elif section is not None and drawer_state < 2:
            if drawer_state == 0 and ":PROPERTIES:" in line:
                drawer_state = 1
                section.drawer = (i, i)
                fed.append(i)
            elif drawer_state == 1 and section.drawer is not None:
                fed.append(i)
                section.drawer = (section.drawer[0], i)
                if ":END:" in line:
                    drawer_state = 2
        i += 1
    return fed, sections, keyword_lines


def _own_tags(headline: str, tags: set[str]) -> tuple[str, ...]:
    if not tags:
        return ()
    last = headline.rstrip().rsplit(None, 1)[-1]
    ordered = tuple(t for t in last.split(":") if t)
    # orgparse read the tags; the headline only gives their order
    return ordered if set(ordered) == tags else tuple(sorted(tags))


def _body(lines: list[str], start: int, end: int, drawer: tuple[int, int] | None) -> str:
    if drawer is None:
        kept = lines[start + 1 : end]
    else:
        kept = lines[start + 1 : drawer[0]] + lines[drawer[1] + 1 : end]
    lo, hi = 0, len(kept)
    while lo < hi and not kept[lo].strip():
        lo += 1
    while hi > lo and not kept[hi - 1].strip():
        hi -= 1
    return "\n".join(kept[lo:hi])


def _property_lines(lines: list[str], drawer: tuple[int, int] | None) -> dict[str, int]:
    found: dict[str, int] = {}
    if drawer is None:
        return found
    for i in range(drawer[0] + 1, drawer[1]):
        match = _PROPERTY_KEY.match(lines[i])
        if match:
            found.setdefault(match.group(1).lower(), i + 1)
    return found


# `Heading`'s arguments before `children`, and after it
_Before = tuple[int, str, str | None, tuple[str, ...], tuple[str, ...], Mapping[str, str], str, int]
_After = tuple[tuple[SourceBlock, ...], tuple[str, ...], Mapping[str, int]]


@dataclass(slots=True)
class _Open:
    """A heading whose children are still being read."""

    level: int
    all_tags: tuple[str, ...]
    path: tuple[str, ...]
    before: _Before
    after: _After
    children: list[Heading]

    def build(self) -> Heading:
        return Heading(*self.before, tuple(self.children), *self.after)


def parse_plan(text: str, path: Path | None = None) -> Plan:
    """Parse plan text into a `Plan`. Line numbers are 1-based and count LF-terminated lines."""
    enabled = gc.isenabled()
    # a parse allocates one object graph that lives on; collecting while it grows only
    # re-traverses it (on 100k tasks that made the parse super-linear)
    gc.disable()
    try:
        return _parse(text, path)
    finally:
        if enabled:
            gc.enable()


# What orgparse tells about one headline: its line (0-based), level, raw title, keyword, own
# tags (unordered, as orgparse gives them) and properties.
_Headline = tuple[int, int, str, str | None, set[str], dict[str, str]]

# Every date orgparse reads (timestamps, SCHEDULED/DEADLINE/CLOSED, CLOCK, repeated tasks)
# opens with a bracket before a digit; a line without one gives its date parsers nothing.
_DATE_LIKE = re.compile(r"[<\[]\d")


def _parse(text: str, path: Path | None, *, full_loader: bool = False) -> Plan:
    lines = _split_lines(text)
    fed, sections, keyword_lines = _scan(lines)
    filename = str(path) if path is not None else "<string>"
    env = OrgEnv(todos=list(_DEFAULT_ACTIVE), dones=list(_DEFAULT_DONE), filename=filename)
    try:
        read = None
        if not full_loader and not (_DATE_LIKE.search(text) and _may_hold_dates(lines, fed)):
            read = _read_directly(lines, fed, sections, keyword_lines, env)
        if read is None:
            env = OrgEnv(todos=list(_DEFAULT_ACTIVE), dones=list(_DEFAULT_DONE), filename=filename)
            read = _read_with_loader(lines, fed, env)
    except (ValueError, RuntimeError) as exc:
        # orgparse rejects a few property values outright (e.g. an unreadable :Effort:)
        raise PlanReadError(f"{filename}: orgparse cannot read this plan: {exc}") from exc
    headlines, titles = read

    active = tuple(env.todo_keys)
    done = tuple(env.done_keys)
    if active and not done:
        # org: without `|`, the last keyword is the done state
        active, done = active[:-1], active[-1:]
    title = " ".join(titles) if titles else None

    # headings are frozen, so they are built bottom-up: a heading is closed (constructed) when
    # the next headline at its level or above arrives; one pass, a stack as deep as the tree.
    stack: list[_Open] = []
    roots: list[Heading] = []

    def close() -> None:
        done = stack.pop()
        (stack[-1].children if stack else roots).append(done.build())

    for n, (start, level, title_text, keyword, tags, properties) in enumerate(headlines):
        while stack and stack[-1].level >= level:
            close()
        end = headlines[n + 1][0] if n + 1 < len(headlines) else len(lines)
        section = sections[start]
        own = _own_tags(lines[start], tags)
        parent = stack[-1] if stack else None
        inherited = parent.all_tags if parent else ()
        all_tags = inherited + tuple(t for t in own if t not in inherited) if own else inherited
        titles_path = (*parent.path, title_text) if parent else (title_text,)
        before: _Before = (
            level,
            title_text,
            keyword,
            own,
            all_tags,
            properties,
            _body(lines, start, end, section.drawer),
            start + 1,
        )
        after: _After = (
            tuple(section.blocks),
            titles_path,
            _property_lines(lines, section.drawer),
        )
        stack.append(_Open(level, all_tags, titles_path, before, after, []))
    while stack:
        close()
    return Plan(
        path=path,
        text=text,
        title=title,
        active_states=active,
        done_states=done,
        roots=tuple(roots),
    )


def _read_with_loader(
    lines: list[str], fed: list[int], env: OrgEnv
) -> tuple[list[_Headline], list[str]]:
    """The fed lines through orgparse's loader: its node tree, read into plain values."""
    root = orgparse.loadi((lines[i] for i in fed), filename=env.filename, env=env)
    headlines: list[_Headline] = [
        (
            fed[node.linenumber - 1],
            node.level,
            node.get_heading(format="raw"),
            node.todo,
            node.shallow_tags,
            {str(k): str(v) for k, v in node.properties.items()},
        )
        for node in root.env.nodes[1:]
        if isinstance(node, OrgNode)
    ]
    titles: list[str] = root.get_file_property_list("TITLE")
    # orgparse's nodes and their env point at each other: left alone, that whole tree waits
    # for the cyclic collector (one pass over every node, paid by whoever allocates next).
    # Cutting the env's list frees it by reference counting as this function returns.
    env.nodes.clear()
    return headlines, titles


def _may_hold_dates(lines: list[str], fed: list[int]) -> bool:
    """Whether one of orgparse's date parsers could read something in the lines it is shown."""
    for i in fed:
        line = lines[i]
        if _HEADLINE.match(line):
            # a headline's title is only searched for timestamps: ask that very pattern
            if TIMESTAMP_RE.search(line):
                return True
        elif _DATE_LIKE.search(line):
            return True
    return False


def _read_directly(
    lines: list[str],
    fed: list[int],
    sections: Mapping[int, _Section],
    keyword_lines: list[tuple[int, int]],
    env: OrgEnv,
) -> tuple[list[_Headline], list[str]]:
    """What `_read_with_loader` reads, from orgparse's own line parsers without its node tree.

    The loader builds a node per headline and shows every line to its date parsers (for
    timestamps, clocks, SCHEDULED…), whose results are not used here: that was most of a
    lint's time. These are the loader's steps for the rest, in its order, with its functions.
    The caller takes the loader when a shown line holds a date (`_may_hold_dates`): the loader
    may then take a line away from a property drawer, or refuse an impossible date.
    """
    # first the `#+` lines of every chunk (the lines before the first headline, then one
    # chunk per headline), as the loader reads them all before any headline
    by_chunk: dict[int, dict[str, list[str]]] = {}
    for i, owner in keyword_lines:
        parsed = parse_comment(lines[i])
        if parsed:
            key, values = parsed
            by_chunk.setdefault(owner, {}).setdefault(key.upper(), []).extend(values)
    titles: list[str] = []
    for owner, special in by_chunk.items():
        if owner == -1:
            titles = special.get("TITLE", [])
        for todo_key in ("TODO", "SEQ_TODO", "TYP_TODO"):
            for value in special.get(todo_key, ()):
                # orgparse leaves these two unannotated
                env.add_todo_keys(*parse_seq_todo(value))  # type: ignore[no-untyped-call]

    keywords = env.all_todo_keys
    headlines: list[_Headline] = []
    ordered = list(sections.values())
    for n, section in enumerate(ordered):
        start = section.start
        star_split = parse_heading_level(lines[start])
        assert star_split is not None  # `_scan`'s headline test is orgparse's (stars, a space)
        heading, level = star_split
        # orgparse's tag pattern, searched from the start of the heading, tries every
        # position of a padded headline; only the last word and the blanks before it can
        # hold tags, so it is shown just those (the same match, the same title)
        head = heading.rsplit(None, 1)
        cut = len(head[0]) if len(head) == 2 else 0
        rest, tags = parse_heading_tags(heading[cut:])
        heading = heading[:cut] + rest
        heading, keyword = parse_heading_todos(heading, keywords)
        heading, _priority = parse_heading_priority(heading)  # type: ignore[no-untyped-call]
        properties: dict[str, str] = {}
        if section.drawer is not None:
            # the loader's drawer: from the first shown line with `:PROPERTIES:` to the next
            # with `:END:`, whichever kind of line they are. Without a drawer of ours the
            # loader is shown only `#+` lines here, and those never read as properties.
            stop = ordered[n + 1].fed_at if n + 1 < len(ordered) else len(fed)
            inside = False
            for at in range(section.fed_at + 1, stop):
                line = lines[fed[at]]
                if inside:
                    if ":END:" in line:
                        break
                    name, raw = parse_property(line)
                    if name is not None and raw is not None:
                        properties[name] = str(raw)
                elif ":PROPERTIES:" in line:
                    inside = True
        headlines.append((start, level, heading, keyword, set(tags), properties))
    return headlines, titles


# --- writing -----------------------------------------------------------------------------------

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

    The edit is confirmed before writing (the new text parses with that task in `keyword`) and
    after (the file reads back byte for byte). Callers running tasks in parallel must serialise
    calls on one file.
    """
    path = Path(path)
    plan = load_plan(path)
    task = plan.get(task_id)
    states = plan.active_states + plan.done_states
    if keyword not in states:
        raise PlanEditError(f"`{keyword}` is not a state of {path} (states: {', '.join(states)})")
    if task.keyword == keyword:
        return plan
    text = replace_keyword(plan.text, task.line, task.keyword, keyword)
    edited = parse_plan(text, path)
    if edited.get(task_id).keyword != keyword:
        raise PlanEditError(f"{path}:{task.line}: the edit would not read back as `{keyword}`")
    write_atomically(path, text)
    reread = load_plan(path)
    if reread.text != text:
        raise PlanEditError(f"{path}: the file changed under us while `{task_id}` was written")
    return reread
