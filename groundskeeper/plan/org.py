"""The plan model: an org-mode plan file read into a typed, frozen tree.

It owns reading (`load_plan`, `parse_plan`: org 9.5's own definitions, Emacs the reference).
It does not write a plan (`plan.edit` does), judge it (`plan.lint`) or run anything.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator, Mapping
from functools import cached_property
from pathlib import Path
from typing import Literal

from groundskeeper.errors import GroundskeeperError, UsageError
from groundskeeper.fastclass import fastclass, field
from groundskeeper.regular_file import NotARegularFileError, read_regular_file

__all__ = [
    "CHECK_LANGUAGE",
    "DEFAULT_TODO_LINE",
    "VERDICT_STATES",
    "Check",
    "Heading",
    "Plan",
    "PlanEditError",
    "PlanReadError",
    "ReadingNote",
    "SourceBlock",
    "TaskNotFound",
    "check_language",
    "ignored_headers",
    "load_plan",
    "parse_plan",
    "unsupported_check_headers",
    "unsupported_check_language",
]

# The keyword line a run inserts when a plan has none and a verdict org would not know
DEFAULT_TODO_LINE = "TODO NEXT | DONE FAILED PARTIAL"
#: The done states groundskeeper's own verdicts write; any other after `|` (`CANCELLED`) is
#: the author's: finished, never run again.
VERDICT_STATES = ("DONE", "FAILED", "PARTIAL")


class PlanReadError(UsageError):
    """The plan file cannot be read as text: missing, a directory, binary, not UTF-8."""


class PlanEditError(GroundskeeperError, ValueError):
    """A keyword edit that does not fit the text (wrong line, wrong keyword, unknown state)."""


class TaskNotFound(GroundskeeperError, KeyError):
    """No task (or more than one) answers to the id asked for."""

    def __str__(self) -> str:
        # KeyError would repr() its argument; the message is already written for a person.
        return str(self.args[0]) if self.args else ""


@fastclass(frozen=True)
class SourceBlock:
    """One `#+begin_src … #+end_src` block in a heading's own section."""

    language: str
    header_args: tuple[str, ...]
    is_check: bool
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    body: str
    line: int


#: the longest deadline a task may give its check (`:timeout:`), in seconds
MAX_CHECK_TIMEOUT = 3600.0


def check_timeout(raw: str | None) -> float | None:
    """`:timeout:`'s seconds (a number > 0 and ≤ `MAX_CHECK_TIMEOUT`); None when unset or
    not such a number (lint's T011 and the runner's R002 refuse the plan then)."""
    if raw is None:
        return None
    try:
        seconds = float(raw.strip())
    except ValueError:
        return None
    return seconds if 0 < seconds <= MAX_CHECK_TIMEOUT else None


#: The one language a check runs in: the sandbox's shell (docs/shell.md), which reads as bash.
CHECK_LANGUAGE = "sh"
#: A check block's languages that name it: `sh`, and org-babel's `shell` (its generic shell
#: block) and `bash` — the sandbox's shell is tested against bash, and what it does not
#: take is a syntax error (lint T003), never read otherwise.
_SHELL_SPELLINGS = frozenset({"sh", "shell", "bash"})


def check_language(language: str) -> str:
    """The language a check block written in `language` runs in: `CHECK_LANGUAGE` for each
    spelling of the sandbox's shell, else the block's own (which nothing runs). A `Check`
    holds this reading, so lint (T006), the run and `groundskeeper check` read it one way."""
    return CHECK_LANGUAGE if language in _SHELL_SPELLINGS else language


def unsupported_check_language(language: str) -> str | None:
    """Why a check in `language` cannot run, or None when the sandbox's shell runs it: the
    one message of lint's T006 and of a check's `unsupported_language` failure."""
    if check_language(language) == CHECK_LANGUAGE:
        return None
    return (
        f"check language `{language or '(none)'}` has no sandboxed interpreter; write the"
        " check as `#+begin_src sh :check` (`shell` and `bash` read the same) or a"
        " `:done-when:` command"
    )


#: Header arguments of a check block that do not change what it runs or how: org's display,
#: export and tangling options. Any other (`:dir`, `:var`, `:cmdline`, `:stdin`, `:session`,
#: `:prologue`, `:noweb`, `:eval`, …) would be silently ignored by the sandbox's shell.
_NEUTRAL_HEADERS = frozenset(
    {":check", ":results", ":exports", ":cache", ":wrap", ":comments", ":padline", ":tangle",
     ":mkdirp", ":hlines", ":colnames", ":rownames", ":in", ":out"}
)  # fmt: skip


def ignored_headers(args: tuple[str, ...]) -> tuple[str, ...]:
    """Each header argument among a block's `args` (with its values) that would change how
    an org-babel block runs and that the sandbox does not honour: `(":dir public",)`."""
    found: list[list[str]] = []
    current: list[str] | None = None  # the header being read and its values, when ignored
    for token in args:
        if token.startswith(":"):
            current = None if token in _NEUTRAL_HEADERS else [token]
            if current is not None:
                found.append(current)
        elif current is not None:
            current.append(token)
    return tuple(" ".join(header) for header in found)


def unsupported_check_headers(ignored: tuple[str, ...]) -> str | None:
    """Why a check block with header arguments nothing honours cannot run, or None: the one
    message of lint's T038 and of a check's `unsupported_header` failure."""
    if not ignored:
        return None
    named = ", ".join(f"`{h}`" for h in ignored)
    return (
        f"the check block's header argument {named} is not supported: the sandbox's shell"
        " runs the block from the workdir with no variables set, so it would be ignored;"
        " say it in the check itself (`cd public && …`, `want=3; …`)"
    )


@fastclass(frozen=True)
class Check:
    """A task's acceptance check, chosen by DESIGN's precedence (`:done-when:` first), and
    its deadline in seconds when the task sets one (`:timeout:`)."""

    text: str
    language: str
    line: int
    source: Literal["done-when", "block"]
    timeout: float | None = None
    #: the block's header arguments that would change how it runs, which nothing honours
    #: (`unsupported_check_headers`): `:dir public`, `:var want=3`
    ignored: tuple[str, ...] = ()


@fastclass(frozen=True, eq=False)
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
    priority: str | None = None  # the letter of a `[#A]` cookie
    commented: bool = False  # a `COMMENT` headline or below one: org leaves it out
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
        priority: str | None = None,
        commented: bool = False,
    ) -> None:
        explicit_id = done_when = ordered = deadline = None
        for key, value in properties.items():
            lowered = key.lower()  # org property names are case-insensitive
            if lowered == "id" and explicit_id is None:
                explicit_id = value
            elif lowered == "done-when" and done_when is None:
                done_when = value
            elif lowered == "ordered" and ordered is None:
                ordered = value
            elif lowered == "timeout" and deadline is None:
                deadline = value
        if property_lines is None:
            property_lines = {}
        # DESIGN's precedence: :done-when:, else the first `:check` block of the own section
        check = None
        if done_when is not None:
            at = property_lines.get("done-when", line)
            check = Check(done_when, CHECK_LANGUAGE, at, "done-when", check_timeout(deadline))
        else:
            for block in blocks:
                if block.is_check:
                    language = check_language(block.language)
                    timeout = check_timeout(deadline)
                    ignored = ignored_headers(block.header_args)
                    check = Check(block.body, language, block.line, "block", timeout, ignored)
                    break
        nearest: list[Heading] = []
        for child in children:
            if child.is_task:
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
        fields["priority"] = priority
        fields["commented"] = commented
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
        """A heading with a TODO keyword, not commented out."""
        return self.keyword is not None and not self.commented


@fastclass(frozen=True, eq=False)
class Plan:
    """A parsed plan file. `text` is the exact text read, every byte kept."""

    path: Path | None
    text: str
    title: str | None
    active_states: tuple[str, ...]
    done_states: tuple[str, ...]
    roots: tuple[Heading, ...]
    declares_keywords: bool = True  # a `#+TODO:`-like line: else org's TODO | DONE
    notes: tuple[ReadingNote, ...] = ()

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

    @cached_property
    def lines(self) -> tuple[str, ...]:
        """The text's lines as org numbers them (`lines[n - 1]` is line n)."""
        return tuple(_split_lines(self.text)[0])

    def property_parts(self, heading: Heading, name: str) -> list[tuple[int, str]]:
        """Each line of a property kept apart, as (1-based line, value): the `:NAME:` line org
        reads first, then every `:NAME+:` line after it. Org joins them with a space, which
        would run two `:contract:` lines into one; this keeps them separate."""
        lowered = name.lower()
        first = heading.property_lines.get(lowered)
        if first is None:
            return []
        lines = self.lines
        own = _PROPERTY.match(lines[first - 1])
        parts = [(first, (own.group(2) if own is not None else None) or "")]
        for i in range(first, len(lines)):
            if _DRAWER_END.match(lines[i]):
                break
            match = _PROPERTY.match(lines[i])
            if match is not None and match.group(1).lower() == lowered + "+":
                parts.append((i + 1, match.group(2) or ""))
        return parts

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

# Org's own definitions (org 9.5, org.el and org-element.el), for the pieces read here.
_HEADLINE = re.compile(r"\*+ ")  # org-outline-regexp, at column 0
_PLANNING = re.compile(r"[ \t]*(?:CLOSED|DEADLINE|SCHEDULED):")  # org-planning-line-re
_DRAWER_OPEN = re.compile(r"[ \t]*:PROPERTIES:[ \t]*\Z", re.IGNORECASE)
_DRAWER_LINE = re.compile(r"[ \t]*:\S+:(?: .*)?[ \t]*\Z", re.IGNORECASE)
_DRAWER_END = re.compile(r"[ \t]*:END:[ \t]*\Z", re.IGNORECASE)
# org-re-property with ALLOW-NULL: an empty value is the empty string
_PROPERTY = re.compile(r"[ \t]*:(\S+):(?:\Z|[ \t]+(.*?))[ \t]*\Z")
_BEGIN = re.compile(r"#\+begin_(\S+)", re.IGNORECASE)
_KEYWORD_LINE = re.compile(r"#\+(\S+?):[ \t]*(.*?)[ \t]*\Z")
_PRIORITY = re.compile(r"\[#.\][ \t]*")
_TAGS = re.compile(r"[ \t]+(:[\w@#%:]+:)[ \t]*\Z")  # [[:alnum:]_@#%:] in Emacs
_COOKIE_IN_TITLE = re.compile(r"[ \t]*\[\d*(?:%|/\d*)\][ \t]*")
_KEYWORD_KEY = re.compile(r"(.*?)(?:\([^!@/]?.*?\))?\Z")  # `WAIT(w@/!)` is WAIT
_COMMENT = "COMMENT"
_TODO_KEYS = ("TODO", "SEQ_TODO", "TYP_TODO")

NoteKind = Literal[
    "mixed-line-endings",
    "headline-in-block",
    "unterminated-block",
    "unread-property",
    "keyword-without-title",
    "priority-without-space",
    "comment-prefix",
]


@fastclass(frozen=True)
class ReadingNote:
    """Something org reads differently from what the text seems to say (lint words it).

    `line` is 1-based; `other` is a second line when there is one (the block a headline ends,
    the property's drawer); `text` is the detail (block name, property name, lines)."""

    kind: NoteKind
    line: int
    text: str = ""
    other: int | None = None
    is_check: bool = False


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


def _split_lines(text: str) -> tuple[list[str], list[int]]:
    """Lines as Emacs numbers them, and the 1-based lines ending in CRLF when LF ones exist too.

    A file whose every line ends in CRLF is read as DOS text (the CRs dropped); a file mixing
    the two is read as Unix text, as Emacs does, the CRs staying part of their lines."""
    lines = text.split("\n")
    if lines and lines[0].startswith("\ufeff"):
        lines[0] = lines[0][1:]
    crlf = text.count("\r\n")
    if not crlf:
        return lines, []
    if crlf == len(lines) - 1:
        return [line[:-1] if line.endswith("\r") else line for line in lines], []
    mixed = [n + 1 for n, line in enumerate(lines[:-1]) if line.endswith("\r")]
    return lines, mixed


def _unescape(line: str) -> str:
    # org escapes `*`, `,*`, `#+` and `,#+` at the start of a block line with a comma
    stripped = line.lstrip()
    if stripped.startswith((",*", ",#+", ",,*", ",,#+")):
        cut = len(line) - len(stripped)
        return line[:cut] + stripped[1:]
    return line


def _remove_indentation(lines: list[str]) -> str:
    """A block's text as org runs it (`org-remove-indentation`): the indentation its non-blank
    lines share is removed, tabs first expanded to columns of 8 (org untabifies the block)."""
    shared = min(
        (len(x) - len(x.lstrip(" \t")) for x in (y.expandtabs(8) for y in lines) if x.strip()),
        default=0,
    )
    if not shared:
        return "\n".join(lines)
    return "\n".join(x.expandtabs(8)[shared:] for x in lines)


def _parse_src_header(stripped: str, lines: list[str], line: int) -> SourceBlock:
    tokens = stripped.split()[1:]
    language = tokens[0] if tokens and not tokens[0].startswith(":") else ""
    args = tuple(tokens[1:] if language else tokens)
    # `-i` keeps the block's indentation, as org's switch does
    body = "\n".join(lines) if "-i" in args else _remove_indentation(lines)
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


def _is_end(line: str, name: str) -> bool:
    return line.strip(" \t").lower() == "#+end_" + name


@fastclass
class _Section:
    """What the line scan learns about one headline's section (0-based line indexes)."""

    start: int
    end: int
    blocks: list[SourceBlock] = field(default_factory=list)
    drawer: tuple[int, int] | None = None  # the `:PROPERTIES:` and `:END:` lines


def _scan_section(
    lines: list[str],
    section: _Section | None,
    start: int,
    end: int,
    keywords: list[tuple[str, str]],
    notes: list[ReadingNote],
) -> None:
    """Blocks, `#+` keywords and drawer-like text of lines[start:end], as org-element reads
    them: a block ends only inside its section (a headline always ends it), a property drawer
    counts only directly after the headline (or its planning line)."""
    i = start
    if section is not None:
        i = start + 1
        if i < end and _PLANNING.match(lines[i]):
            i += 1
        if i < end and _DRAWER_OPEN.match(lines[i]):
            k = i + 1
            while k < end and _DRAWER_LINE.match(lines[k]) and not _DRAWER_END.match(lines[k]):
                k += 1
            if k < end and _DRAWER_END.match(lines[k]):
                section.drawer = (i, k)
                i = k + 1
    while i < end:
        line = lines[i]
        stripped = line.lstrip(" \t")
        first = stripped[:1]
        if first == "#" and stripped[1:2] == "+":
            begin = _BEGIN.match(stripped)
            if begin is not None:
                name = begin.group(1).lower()
                k = i + 1
                while k < end and not _is_end(lines[k], name):
                    k += 1
                if k < end:
                    if name == "src" and section is not None:
                        body = [_unescape(x) for x in lines[i + 1 : k]]
                        section.blocks.append(_parse_src_header(stripped, body, i + 1))
                    i = k + 1
                    continue
                _unterminated(lines, i, end, name, stripped, notes)
            else:
                keyword = _KEYWORD_LINE.match(stripped)
                if keyword is not None:
                    keywords.append((keyword.group(1).upper(), keyword.group(2)))
        elif first == ":" and _DRAWER_OPEN.match(line):
            _unread_drawer(lines, i, end, notes)
        i += 1


def _unterminated(
    lines: list[str], at: int, end: int, name: str, header: str, notes: list[ReadingNote]
) -> None:
    """A `#+begin_NAME` with no end in its section: org reads it as text. When its end comes
    after a headline, that headline (a `*` at column 0) is what ended it."""
    is_check = name == "src" and ":check" in header.split()[1:]
    for k in range(end, len(lines)):
        if _is_end(lines[k], name):
            notes.append(ReadingNote("headline-in-block", end + 1, name, at + 1, is_check))
            return
    notes.append(ReadingNote("unterminated-block", at + 1, name, None, is_check))


def _unread_drawer(lines: list[str], at: int, end: int, notes: list[ReadingNote]) -> None:
    for k in range(at + 1, end):
        if _DRAWER_END.match(lines[k]):
            return
        match = _PROPERTY.match(lines[k])
        if match and match.group(1).lower().rstrip("+") in ("id", "done-when"):
            notes.append(ReadingNote("unread-property", k + 1, match.group(1), at + 1))


def _todo_keywords(keywords: list[tuple[str, str]]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Org's keyword sets: each `#+TODO:`-like line a sequence (`#+TYP_TODO:` ones first);
    after `|` the done states, or without `|` the last word."""
    lines = [v for k, v in keywords if k == "TYP_TODO"]
    lines += [v for k, v in keywords if k in ("TODO", "SEQ_TODO")]
    every: list[str] = []
    done: list[str] = []
    for value in lines:
        words = value.split()
        names = [_KEYWORD_KEY.match(w).group(1) for w in words if w != "|"]  # type: ignore[union-attr]
        if "|" in words:
            after = words[words.index("|") + 1 :]
            done += [_KEYWORD_KEY.match(w).group(1) for w in after if w != "|"]  # type: ignore[union-attr]
        elif names:
            done.append(names[-1])
        every += names
    if every and not done:
        done = every[-1:]
    active = tuple(dict.fromkeys(k for k in every if k not in done))
    return active, tuple(dict.fromkeys(done))


# What a headline line holds, as org-element-headline-parser reads it
_HeadlineParts = tuple[int, str | None, str | None, bool, str, tuple[str, ...]]


def _parse_headline(
    line: str, keywords: frozenset[str], number: int, notes: list[ReadingNote]
) -> _HeadlineParts:
    """Level, keyword, priority, commented, title and own tags of one headline line."""
    stars = len(line) - len(line.lstrip("*"))
    pos = stars
    size = len(line)
    while pos < size and line[pos] in " \t":
        pos += 1
    keyword = None
    space = line.find(" ", pos)
    if space > pos and line[pos:space] in keywords:
        keyword = line[pos:space]
        pos = space + 1
        while pos < size and line[pos] in " \t":
            pos += 1
    elif line[pos:].rstrip(" \t\r") in keywords:
        notes.append(ReadingNote("keyword-without-title", number, line[pos:].strip()))
    priority = None
    match = _PRIORITY.match(line, pos)
    if match is not None:
        priority = line[pos + 2]
        if match.end() == pos + 4 and pos + 4 < size and line[pos + 4] not in "\r":
            notes.append(ReadingNote("priority-without-space", number, line[pos : pos + 4]))
        pos = match.end()
    commented = line.startswith(_COMMENT, pos)
    if commented:
        after = line[pos + len(_COMMENT) : pos + len(_COMMENT) + 1]
        if after not in ("", " ", "\t", "\r"):
            notes.append(ReadingNote("comment-prefix", number, line[pos:].split()[0]))
        pos += len(_COMMENT)
    title_start = pos
    if keyword is None and priority is None and not commented:
        while title_start > stars and line[title_start - 1] in " \t":
            title_start -= 1  # a headline like `* :tag:`
    tags: tuple[str, ...] = ()
    title_end = size
    found = _TAGS.search(line, title_start)
    if found is not None:
        # org's search is leftward-first: the blanks before the tags all belong to them
        title_end = found.start()
        while title_end > title_start and line[title_end - 1] in " \t":
            title_end -= 1
        words = found.group(1).split(":")
        tags = tuple(words[1:-1])  # org-split-string keeps inner empty strings only
    title = line[title_start:title_end].strip(" \t\n\r")
    return stars, keyword, priority, commented, title, tags


def _properties(
    lines: list[str], drawer: tuple[int, int] | None
) -> tuple[dict[str, str], dict[str, int]]:
    """The drawer's properties as org-entry-get reads them: the first line of a name (any
    case) is its value, and `NAME+` lines append to it; with each name's first line."""
    values: dict[str, str] = {}
    found: dict[str, int] = {}
    if drawer is None:
        return values, found
    by_lower: dict[str, str] = {}
    for i in range(drawer[0] + 1, drawer[1]):
        match = _PROPERTY.match(lines[i])
        if match is None:
            continue
        name, value = match.group(1), match.group(2) or ""
        lowered = name.lower()
        if lowered.endswith("+") and len(name) > 1:
            base = by_lower.get(lowered[:-1])
            if base is not None:
                values[base] = f"{values[base]} {value}" if values[base] else value
                continue
        if lowered not in by_lower:
            by_lower[lowered] = name
            values[name] = value
            found[lowered] = i + 1
    return values, found


def _id_title(title: str) -> str:
    """The title as a task path knows it: statistics cookies left out (org rewrites them)."""
    if "[" not in title:
        return title
    return _COOKIE_IN_TITLE.sub(" ", title).strip(" \t")


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


# `Heading`'s arguments before `children`, and after it
_Before = tuple[int, str, str | None, tuple[str, ...], tuple[str, ...], Mapping[str, str], str, int]
_After = tuple[tuple[SourceBlock, ...], tuple[str, ...], Mapping[str, int], str | None, bool]


@fastclass(slots=True)
class _Open:
    """A heading whose children are still being read."""

    level: int
    all_tags: tuple[str, ...]
    path: tuple[str, ...]
    commented: bool
    before: _Before
    after: _After
    children: list[Heading]

    def build(self) -> Heading:
        return Heading(*self.before, tuple(self.children), *self.after)


def parse_plan(text: str, path: Path | None = None) -> Plan:
    """Parse plan text into a `Plan`, as org 9.5 reads it. Line numbers are 1-based, as Emacs
    numbers them (LF-terminated lines)."""
    enabled = gc.isenabled()
    # a parse allocates one object graph that lives on; collecting while it grows only
    # re-traverses it (on 100k tasks that made the parse super-linear)
    gc.disable()
    try:
        return _parse(text, path)
    finally:
        if enabled:
            gc.enable()


def _parse(text: str, path: Path | None) -> Plan:
    lines, mixed = _split_lines(text)
    notes: list[ReadingNote] = []
    if mixed:
        notes.append(ReadingNote("mixed-line-endings", mixed[0], ", ".join(map(str, mixed))))
    starts = [i for i, line in enumerate(lines) if line[:1] == "*" and _HEADLINE.match(line)]
    keyword_lines: list[tuple[str, str]] = []
    preamble: list[tuple[str, str]] = []
    _scan_section(lines, None, 0, starts[0] if starts else len(lines), preamble, notes)
    sections: list[_Section] = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        section = _Section(start, end)
        _scan_section(lines, section, start, end, keyword_lines, notes)
        sections.append(section)
    keyword_lines = preamble + keyword_lines
    declared = any(key in _TODO_KEYS for key, _ in keyword_lines)
    if declared:
        active, done = _todo_keywords(keyword_lines)
    else:
        active, done = ("TODO",), ("DONE",)  # org's own default, without a #+TODO: line
    keywords = frozenset(active + done)
    titles = [value for key, value in preamble if key == "TITLE"]
    title = " ".join(titles) if titles else None

    # headings are frozen, so they are built bottom-up: a heading is closed (constructed) when
    # the next headline at its level or above arrives; one pass, a stack as deep as the tree.
    stack: list[_Open] = []
    roots: list[Heading] = []

    def close() -> None:
        done = stack.pop()
        (stack[-1].children if stack else roots).append(done.build())

    for section in sections:
        start = section.start
        level, keyword, priority, own_comment, title_text, own = _parse_headline(
            lines[start], keywords, start + 1, notes
        )
        while stack and stack[-1].level >= level:
            close()
        parent = stack[-1] if stack else None
        inherited = parent.all_tags if parent else ()
        all_tags = inherited + tuple(t for t in own if t not in inherited) if own else inherited
        step = _id_title(title_text)
        titles_path = (*parent.path, step) if parent else (step,)
        commented = own_comment or (parent is not None and parent.commented)
        properties, property_lines = _properties(lines, section.drawer)
        before: _Before = (
            level,
            title_text,
            keyword,
            own,
            all_tags,
            properties,
            _body(lines, start, section.end, section.drawer),
            start + 1,
        )
        after: _After = (tuple(section.blocks), titles_path, property_lines, priority, commented)
        stack.append(_Open(level, all_tags, titles_path, commented, before, after, []))
    while stack:
        close()
    notes.sort(key=lambda note: note.line)
    return Plan(
        path=path,
        text=text,
        title=title,
        active_states=active,
        done_states=done,
        roots=tuple(roots),
        declares_keywords=declared,
        notes=tuple(notes),
    )
