"""The sandbox shell's grammar: text → `Script`, or a `ShellSyntaxError` naming the construct.

It owns the small grammar of DESIGN.md (pipes, lists, `!`, variables, `$?`, `$(…)`, quotes,
escapes, comments, globs, redirections) and rejects everything else by name. It does not
expand or run anything; `groundskeeper.sandbox.shell` does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TypeVar, dataclass_transform

from groundskeeper.errors import GroundskeeperError

_Node = TypeVar("_Node")


class ShellSyntaxError(GroundskeeperError):
    """Command text outside the sandbox grammar; `line` and `column` are 1-based."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"line {line}, column {column}: {message}")
        self.message = message
        self.line = line
        self.column = column


# ---- the tree -----------------------------------------------------------------------------


@dataclass_transform(frozen_default=True)
def _tree_node(cls: type[_Node]) -> type[_Node]:
    """A tree node: a dataclass the type checker holds frozen, built with plain slot stores.

    Lint parses every check of a plan, and a frozen dataclass's `object.__setattr__` per field
    was most of the cost of building a tree. The tree is never changed after parsing and
    `mypy --strict` refuses any assignment to a field; equal trees compare and hash equal.
    """
    return dataclass(slots=True, unsafe_hash=True)(cls)


@_tree_node
class Lit:
    """Literal text; `quoted` text is neither field-split nor globbed."""

    text: str
    quoted: bool


@_tree_node
class Param:
    """`$NAME`, `${NAME}` or `$?`."""

    name: str
    quoted: bool


@_tree_node
class CommandSub:
    """`$(…)`: its stdout, trailing newlines removed."""

    script: Script
    quoted: bool


Part = Lit | Param | CommandSub


@_tree_node
class Word:
    parts: tuple[Part, ...]
    offset: int

    def literal(self) -> str | None:
        """The word's text when it has no expansions at all (quotes removed), else None."""
        if all(isinstance(p, Lit) for p in self.parts):
            return "".join(p.text for p in self.parts if isinstance(p, Lit))
        return None

    def has_glob(self) -> bool:
        return any(
            isinstance(p, Lit) and not p.quoted and any(c in p.text for c in "*?[")
            for p in self.parts
        )


@_tree_node
class Assignment:
    name: str
    value: Word
    offset: int


@_tree_node
class Redirect:
    """`fd op target`: op is `>`, `>>` or `<` with a target word, or `>&` with `dup_fd`."""

    fd: int
    op: str
    target: Word | None
    dup_fd: int | None
    offset: int


@_tree_node
class SimpleCommand:
    assignments: tuple[Assignment, ...]
    words: tuple[Word, ...]
    redirects: tuple[Redirect, ...]
    offset: int


@_tree_node
class Pipeline:
    commands: tuple[SimpleCommand, ...]
    negated: bool


@_tree_node
class AndOr:
    """`first (&& | ||) …`: `rest` pairs each operator with the pipeline after it."""

    first: Pipeline
    rest: tuple[tuple[str, Pipeline], ...]


@_tree_node
class Script:
    items: tuple[AndOr, ...]


# ---- what is refused, and why --------------------------------------------------------------

_RESERVED = {
    "if": "'if' is not supported: the sandbox shell has no if/then/fi; use && and ||",
    "then": "'then' is not supported: the sandbox shell has no if/then/fi; use && and ||",
    "else": "'else' is not supported: the sandbox shell has no if/then/fi; use && and ||",
    "elif": "'elif' is not supported: the sandbox shell has no if/then/fi; use && and ||",
    "fi": "'fi' is not supported: the sandbox shell has no if/then/fi; use && and ||",
    "for": "'for' loops are not supported in the sandbox shell",
    "while": "'while' loops are not supported in the sandbox shell",
    "until": "'until' loops are not supported in the sandbox shell",
    "do": "'do' (loops) is not supported in the sandbox shell",
    "done": "'done' (loops) is not supported in the sandbox shell",
    "case": "'case' is not supported in the sandbox shell",
    "esac": "'esac' (case) is not supported in the sandbox shell",
    "select": "'select' is not supported in the sandbox shell",
    "function": "function definitions are not supported in the sandbox shell",
    "time": "'time' is not supported in the sandbox shell",
    "coproc": "'coproc' is not supported in the sandbox shell",
    "{": "command groups '{ …; }' are not supported in the sandbox shell",
    "}": "command groups '{ …; }' are not supported in the sandbox shell",
    "[[": "'[[ … ]]' is not supported; use 'test' or '[ … ]'",
    "]]": "'[[ … ]]' is not supported; use 'test' or '[ … ]'",
}

_METACHARS = frozenset(" \t\n;&|<>()")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_BRACE_EXPANSION = re.compile(r"\{[^{}\s]*(,|\.\.)[^{}\s]*\}")
_REDIRECT = re.compile(r"(\d*)(>>|>&|>|<)")
_DUP_TARGET = re.compile(r"[0-9]+|-")

# The lexer steps over runs of characters with these patterns rather than one character at a
# time: lint parses every check of a plan, and per-character Python calls made that its cost.
_BLANKS = re.compile(r"(?:[ \t]+|\\\n|#[^\n]*)*")  # spaces, continuations, comments; no newline
_LINEBREAKS = re.compile(r"(?:[ \t\n]+|\\\n|#[^\n]*)*")  # the same and newlines
_PLAIN = re.compile(r"[^ \t\n;&|<>()\\'\"`$]+")  # unquoted characters that mean only themselves
_QUOTED_PLAIN = re.compile(r"[^\"\\`$]+")  # the same inside double quotes
# A whole word of such characters (possessive: what ends it must be a metacharacter or the end,
# never a quote, `\\` or `$` that would continue the word), then the blanks after it.
_PLAIN_WORD = re.compile(r"([^ \t\n;&|<>()\\'\"`$]++)(?![\\'\"`$])(?:[ \t]+|\\\n|#[^\n]*)*")
_ENDS_COMMAND = frozenset(("", "\n", ";", "|", ")"))
_ENDS_BANG = frozenset(("", " ", "\t", "\n"))  # a `!` before one of these negates a pipeline
_QUOTED_ESCAPES = frozenset(('"', "\\", "$", "`", "\n"))
# `$(…)` inside `$(…)`: the parser, the interpreter and lint each recurse once per level.
MAX_NESTING = 32


def parse(text: str) -> Script:
    """Parse a command line (or several lines); raise ShellSyntaxError outside the grammar."""
    return _Parser(text).script(closing=None)


def command_names(script: Script) -> list[str]:
    """Literal command names of every simple command, `$(…)` included, in source order."""
    names: list[str] = []
    _collect_names(script, names)
    return names


def _collect_names(script: Script, names: list[str]) -> None:
    for and_or in script.items:
        for pipeline in (and_or.first, *(p for _, p in and_or.rest)):
            for command in pipeline.commands:
                if command.redirects and any(
                    type(part) is CommandSub
                    for redirect in command.redirects
                    if redirect.target is not None
                    for part in redirect.target.parts
                ):
                    # a redirection may stand anywhere, even before the assignments
                    words: list[tuple[int, Word, bool]] = []
                    words += [(a.offset, a.value, False) for a in command.assignments]
                    words += [(w.offset, w, i == 0) for i, w in enumerate(command.words)]
                    words += [(r.offset, r.target, False) for r in command.redirects if r.target]
                    words.sort(key=_offset)
                    for _, word, is_name in words:
                        _collect_word(word, is_name, names)
                    continue
                # assignments are only read before the first word: already in source order,
                # and a redirection whose target has no `$(…)` gives no name wherever it stands
                for assignment in command.assignments:
                    _collect_word(assignment.value, False, names)
                is_name = True
                for word in command.words:
                    parts = word.parts
                    if len(parts) == 1 and type(parts[0]) is Lit:  # the usual plain word
                        if is_name:
                            names.append(parts[0].text)
                    else:
                        _collect_word(word, is_name, names)
                    is_name = False


def _collect_word(word: Word, is_name: bool, names: list[str]) -> None:
    if is_name:
        literal = word.literal()
        if literal is not None:
            names.append(literal)
    for part in word.parts:
        if isinstance(part, CommandSub):
            _collect_names(part.script, names)


def _offset(item: tuple[int, Word, bool]) -> int:
    return item[0]


class _Parser:
    """Recursive descent over `text`; `pos` is the offset of the next character to read.

    Nodes are built with positional arguments (`Lit(text, quoted)`): keywords cost a tenth
    of a node's construction, and lint builds a tree for every check of a plan.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.end = len(text)
        self.depth = 0  # `$(` open around `pos`

    # -- positions and errors

    def error(self, message: str, offset: int | None = None) -> ShellSyntaxError:
        at = self.pos if offset is None else offset
        line = self.text.count("\n", 0, at) + 1
        column = at - (self.text.rfind("\n", 0, at) + 1) + 1
        return ShellSyntaxError(message, line, column)

    def skip_blanks(self) -> None:
        """Spaces, tabs, line continuations and comments; never newlines."""
        match = _BLANKS.match(self.text, self.pos)
        assert match is not None  # the pattern matches the empty string
        self.pos = match.end()

    def skip_linebreaks(self) -> None:
        match = _LINEBREAKS.match(self.text, self.pos)
        assert match is not None  # the pattern matches the empty string
        self.pos = match.end()

    # -- lists
    #
    # Each grammar method below is entered with `pos` past blanks and returns with `pos` past
    # blanks again, so none of them skips blanks on entry or after calling another.

    def script(self, closing: str | None) -> Script:
        text = self.text
        end = self.end
        items: list[AndOr] = []
        self.skip_linebreaks()
        while self.pos < end and text[self.pos] != closing:
            items.append(self.and_or())
            if self.pos >= end:
                break
            char = text[self.pos]
            if char == closing:
                break
            if char == ";":
                if text.startswith(";;", self.pos):
                    raise self.error("';;' (case) is not supported in the sandbox shell")
                self.pos += 1
            elif char == "\n":
                self.pos += 1
            else:
                raise self.unexpected()
            self.skip_linebreaks()
        if closing is None and self.pos < end:
            raise self.unexpected()
        return Script(tuple(items))

    def and_or(self) -> AndOr:
        text = self.text
        first = self.pipeline()
        rest: list[tuple[str, Pipeline]] = []
        while True:
            operator = text[self.pos : self.pos + 2]
            if operator == "&&" or operator == "||":
                self.pos += 2
                self.skip_linebreaks()
                rest.append((operator, self.pipeline()))
            else:
                return AndOr(first, tuple(rest))

    def pipeline(self) -> Pipeline:
        text = self.text
        negated = False
        pos = self.pos
        if text[pos : pos + 1] == "!" and text[pos + 1 : pos + 2] in _ENDS_BANG:
            negated = True
            self.pos += 1
            self.skip_blanks()
            pos = self.pos
            if text[pos : pos + 1] == "!" and text[pos + 1 : pos + 2] in _ENDS_BANG:
                raise self.error("'! !' (double negation) is not supported")
        commands = [self.simple_command()]
        while True:
            pair = text[self.pos : self.pos + 2]
            if pair == "|&":
                raise self.error("'|&' is not supported; use '2>&1 |'")
            if pair[:1] == "|" and pair != "||":
                self.pos += 1
                self.skip_linebreaks()
                commands.append(self.simple_command())
            else:
                return Pipeline(tuple(commands), negated)

    def unexpected(self) -> ShellSyntaxError:
        text, pos = self.text, self.pos
        if pos >= self.end:
            return self.error("unexpected end of input: a command is missing")
        char = text[pos]
        pair = text[pos : pos + 2]
        if pair == "&&" or pair == "||" or char in ";|":
            token = pair if pair[1:] == char else char
            return self.error(f"unexpected '{token}': a command is missing before it")
        if char == "&":
            return self.error("background jobs '&' are not supported in the sandbox shell")
        if char == "(":
            return self.error(
                "'(' is not supported: subshells, arrays and function definitions are "
                "outside the sandbox grammar"
            )
        if char == ")":
            return self.error("unexpected ')'")
        if char == "\n":
            return self.error("unexpected end of line: a command is missing")
        return self.error(f"unexpected {char!r}")

    # -- simple commands

    def simple_command(self) -> SimpleCommand:
        text = self.text
        start = self.pos
        assignments: list[Assignment] = []
        words: list[Word] = []
        redirects: list[Redirect] = []
        while True:
            pos = self.pos
            plain = _PLAIN_WORD.match(text, pos)
            if plain is not None:
                # The common case, read in one step: a word of plain characters that is not an
                # assignment, a redirection's fd (`2>`) nor a candidate for the tilde and
                # brace errors. Anything else takes the general path below.
                literal = plain.group(1)
                after = plain.end(1)
                if not (
                    (not words and "=" in literal)
                    or "{" in literal
                    or literal[0] == "~"
                    or (literal.isdecimal() and text[after : after + 1] in ("<", ">"))
                ):
                    if not words:
                        if literal in _RESERVED:
                            raise self.error(_RESERVED[literal], pos)
                        if text.startswith("(", after):
                            raise self.error(
                                "function definitions are not supported in the sandbox shell",
                                pos,
                            )
                    words.append(Word((Lit(literal, False),), pos))
                    self.pos = plain.end()
                    continue
            char = text[pos : pos + 1]
            if char in _ENDS_COMMAND:
                break
            if char == "&":
                if text.startswith("&&", pos):
                    break
                if text.startswith("&>", pos):
                    raise self.error("'&>' is not supported; use '> FILE 2>&1'")
                raise self.error("background jobs '&' are not supported in the sandbox shell")
            if char == "(":
                raise self.unexpected()
            # only a digit (any Unicode decimal, as the pattern's \d), `<` or `>` starts one
            if char == "<" or char == ">" or char.isdecimal():
                redirect = self.redirect()
                if redirect is not None:
                    redirects.append(redirect)
                    self.skip_blanks()
                    continue
            if not words:
                match = _ASSIGNMENT.match(text, pos)
                if match is not None:
                    self.pos = match.end()
                    if text.startswith("(", self.pos):
                        raise self.error("arrays 'NAME=(…)' are not supported in the sandbox shell")
                    value = self.word(allow_empty=True)
                    assignments.append(Assignment(match.group(1), value, pos))
                    self.skip_blanks()
                    continue
            word = self.word(allow_empty=False)
            if not words:
                # a plain word is one unquoted Lit: unquoted text is only ever cut by a part
                # that is quoted or an expansion
                parts = word.parts
                first = parts[0]
                if (
                    len(parts) == 1
                    and isinstance(first, Lit)
                    and not first.quoted
                    and first.text in _RESERVED
                ):
                    raise self.error(_RESERVED[first.text], pos)
                if text.startswith("(", self.pos):
                    raise self.error(
                        "function definitions are not supported in the sandbox shell", pos
                    )
            words.append(word)
            self.skip_blanks()
        if not (assignments or words or redirects):
            raise self.unexpected()
        return SimpleCommand(tuple(assignments), tuple(words), tuple(redirects), start)

    def redirect(self) -> Redirect | None:
        text = self.text
        start = self.pos
        match = _REDIRECT.match(text, start)
        if match is None:
            return None
        digits, op = match.group(1), match.group(2)
        after = match.end()
        following = text[after : after + 1]
        if op == "<" and following == "<":
            raise self.error("here-documents and here-strings ('<<', '<<<') are not supported")
        if op == "<" and following in ("&", ">"):
            raise self.error(f"'<{following}' redirections are not supported")
        if following == "(":
            raise self.error("process substitution '<(…)' / '>(…)' is not supported")
        if op == ">" and following == "|":
            raise self.error("'>|' is not supported; use '>'")
        fd = int(digits) if digits else (0 if op == "<" else 1)
        if fd > 2:
            raise self.error(f"file descriptor {fd} is not supported; only 0, 1 and 2 exist")
        self.pos = after
        if op == ">&":
            target_match = _DUP_TARGET.match(text, after)
            if target_match is None or target_match.group(0) not in ("1", "2"):
                raise self.error(f"'{digits}>&' must be followed by 1 or 2 (as in 2>&1)")
            self.pos = target_match.end()
            char = text[self.pos : self.pos + 1]
            if char and char not in _METACHARS:
                raise self.error(f"'{digits}>&' must be followed by 1 or 2 (as in 2>&1)")
            return Redirect(fd, ">&", None, int(target_match.group(0)), start)
        self.skip_blanks()
        char = text[self.pos : self.pos + 1]
        if char == "" or char in _METACHARS:
            raise self.error(f"a file name is missing after '{digits}{op}'")
        return Redirect(fd, op, self.word(allow_empty=False), None, start)

    # -- words

    def word(self, *, allow_empty: bool) -> Word:
        text = self.text
        start = pos = self.pos
        parts: list[Part] = []
        plain: list[str] = []  # unquoted text not yet closed into a Lit

        if text.startswith("~", pos):
            raise self.error("tilde expansion '~' is not supported; use a relative path")
        while True:
            match = _PLAIN.match(text, pos)
            if match is not None:
                plain.append(match.group())
                pos = match.end()
            char = text[pos : pos + 1]
            if char == "" or char in _METACHARS:
                break
            if char == "\\":
                escaped = text[pos + 1 : pos + 2]
                if escaped == "\n":
                    pos += 2
                    continue
                if escaped == "":
                    self.pos = pos
                    raise self.error("a backslash at the end of input escapes nothing")
                if plain:
                    parts.append(self.unquoted(plain, start))
                parts.append(Lit(escaped, True))
                pos += 2
            elif char == "'":
                if plain:
                    parts.append(self.unquoted(plain, start))
                end = text.find("'", pos + 1)
                if end < 0:
                    self.pos = pos
                    raise self.error("unterminated single quote")
                parts.append(Lit(text[pos + 1 : end], True))
                pos = end + 1
            elif char == '"':
                if plain:
                    parts.append(self.unquoted(plain, start))
                self.pos = pos
                parts.extend(self.double_quoted())
                pos = self.pos
            elif char == "`":
                self.pos = pos
                raise self.error("backticks are not supported; use $(…)")
            else:  # `$`, the one character left that _PLAIN stops at
                if plain:
                    parts.append(self.unquoted(plain, start))
                self.pos = pos
                parts.append(self.dollar(quoted=False))
                pos = self.pos
        self.pos = pos
        if plain:
            parts.append(self.unquoted(plain, start))
        if not parts and not allow_empty:
            raise self.unexpected()
        return Word(tuple(parts), start)

    def unquoted(self, plain: list[str], start: int) -> Lit:
        """The unquoted text gathered so far as one Lit (and `plain` emptied)."""
        text = plain[0] if len(plain) == 1 else "".join(plain)
        plain.clear()
        if "{" in text and _BRACE_EXPANSION.search(text):
            raise self.error("brace expansion '{a,b}' is not supported", start)
        return Lit(text, False)

    def double_quoted(self) -> list[Part]:
        text = self.text
        opening = self.pos
        pos = opening + 1
        parts: list[Part] = [Lit("", True)]  # keeps "" a (empty) word
        literal: list[str] = []
        while True:
            match = _QUOTED_PLAIN.match(text, pos)
            if match is not None:
                literal.append(match.group())
                pos = match.end()
            char = text[pos : pos + 1]
            if char == "":
                raise self.error("unterminated double quote", opening)
            if char == '"':
                pos += 1
                break
            if char == "\\":
                escaped = text[pos + 1 : pos + 2]
                if escaped in _QUOTED_ESCAPES:
                    if escaped != "\n":
                        literal.append(escaped)
                    pos += 2
                else:
                    literal.append(char)
                    pos += 1
            elif char == "`":
                self.pos = pos
                raise self.error("backticks are not supported; use $(…)")
            else:  # `$`
                if literal:
                    parts.append(Lit("".join(literal), True))
                    literal.clear()
                self.pos = pos
                parts.append(self.dollar(quoted=True))
                pos = self.pos
        self.pos = pos
        if literal:
            parts.append(Lit("".join(literal), True))
        return parts

    def dollar(self, *, quoted: bool) -> Part:
        text = self.text
        start = self.pos
        after = text[start + 1 : start + 2]
        if text.startswith("$((", start):
            raise self.error("arithmetic '$((…))' is not supported; use 'expr'")
        if after == "(":
            if self.depth == MAX_NESTING:
                raise self.error(f"'$(…)' nested too deeply (limit {MAX_NESTING})")
            self.pos += 2
            self.depth += 1
            script = self.script(closing=")")
            self.depth -= 1
            if not text.startswith(")", self.pos):
                raise self.error("unterminated '$(': a ')' is missing", start)
            self.pos += 1
            return CommandSub(script, quoted)
        if after == "{":
            end = text.find("}", start)
            if end < 0:
                raise self.error("unterminated '${': a '}' is missing")
            inner = text[start + 2 : end]
            if not (_NAME.fullmatch(inner) or inner == "?"):
                raise self.error(
                    f"'${{{inner}}}' is not supported: only ${{NAME}} and ${{?}} are "
                    "(no defaults, lengths or substitutions)"
                )
            self.pos = end + 1
            return Param(inner, quoted)
        if after == "?":
            self.pos += 2
            return Param("?", quoted)
        match = _NAME.match(text, start + 1)
        if match is not None:
            self.pos = match.end()
            return Param(match.group(0), quoted)
        if after and (after.isdigit() or after in "@*#$!-"):
            raise self.error(f"special parameter '${after}' is not supported; only $? is")
        if after == "'" and not quoted:
            raise self.error("$'…' quoting is not supported; use '…' or \"…\"")
        if after == '"' and not quoted:
            raise self.error('$"…" quoting is not supported; use "…"')
        # A lone `$` (before a space, a slash, the end…) is an ordinary character, as in bash.
        self.pos += 1
        return Lit("$", True)
