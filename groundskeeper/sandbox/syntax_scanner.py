"""The ground the sandbox shell's parser stands on: where it is in the text, what it refuses.

It owns `ShellSyntaxError`, the refusals naming what to write instead, the character classes,
the nesting limit and `Scanner`; it reads no word or command (the layers built on it do).
"""

from __future__ import annotations

import re

from groundskeeper.errors import GroundskeeperError
from groundskeeper.sandbox.tree import Redirect, Script

__all__ = [
    "BACKGROUND",
    "ENDS_BANG",
    "ENDS_COMMAND",
    "FUNCTIONS",
    "MAX_NESTING",
    "METACHARS",
    "NAME",
    "RESERVED",
    "Scanner",
    "ShellSyntaxError",
]


class ShellSyntaxError(GroundskeeperError):
    """Command text outside the sandbox grammar; `line` and `column` are 1-based."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"line {line}, column {column}: {message}")
        self.message = message
        self.line = line
        self.column = column


# ---- what is refused, and why --------------------------------------------------------------

FUNCTIONS = (
    "function definitions are not supported in the sandbox shell; repeat the commands or use "
    "a for loop"
)
BACKGROUND = (
    "background jobs '&' are not supported in the sandbox shell; run the command in the "
    "foreground (drop the '&')"
)

# Words that may not stand as a command's name where they were found: closers out of place,
# constructs the sandbox refuses, and openers after an assignment (`X=1 if …`).
RESERVED = {
    "then": "unexpected 'then': write 'if COMMANDS; then COMMANDS; fi'",
    "elif": "unexpected 'elif': write 'if A; then B; elif C; then D; fi'",
    "else": "unexpected 'else': write 'if A; then B; else C; fi'",
    "fi": "unexpected 'fi': it closes an 'if … then' that is not open",
    "do": "unexpected 'do': write 'for NAME in WORDS; do COMMANDS; done' or 'while A; do B; done'",
    "done": "unexpected 'done': it closes a 'do' that is not open",
    "esac": "unexpected 'esac': it closes a 'case WORD in' that is not open",
    "}": "unexpected '}': it closes a '{' that is not open; write '{ COMMANDS; }'",
    "]]": "unexpected ']]': it closes a '[[' that is not open",
    "if": "'if' must start a command: put it before any 'NAME=value'",
    "for": "'for' must start a command: put it before any 'NAME=value'",
    "while": "'while' must start a command: put it before any 'NAME=value'",
    "until": "'until' must start a command: put it before any 'NAME=value'",
    "case": "'case' must start a command: put it before any 'NAME=value'",
    "{": "'{' must start a command: put it before any 'NAME=value'",
    "[[": "'[[' must start a command: put it before any 'NAME=value'",
    "select": "'select' is not supported in the sandbox shell; use a for loop",
    "function": FUNCTIONS,
    "time": "'time' is not supported in the sandbox shell; run the command without it",
    "coproc": "'coproc' is not supported in the sandbox shell; use a pipeline",
    "eval": "'eval' is not supported in the sandbox shell; write the command directly",
}

METACHARS = frozenset(" \t\n;&|<>()")
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a variable's name
ENDS_COMMAND = frozenset(("", "\n", ";", "|", ")"))
ENDS_BANG = frozenset(("", " ", "\t", "\n"))  # a `!` before one of these negates a pipeline
# A reserved word is one only when a metacharacter (or the end) follows it.
_KEYWORD = re.compile(
    r"(?:if|then|elif|else|fi|for|in|while|until|do|done|case|esac|\{|\}|\[\[|\]\])"
    r"(?=[ \t\n;&|<>()]|\Z)"
)
# The parser steps over runs of characters with these patterns rather than one character at a
# time: lint parses every check of a plan, and per-character Python calls made that its cost.
_BLANKS = re.compile(r"(?:[ \t]+|\\\n|#[^\n]*)*")  # spaces, continuations, comments; no newline
_LINEBREAKS = re.compile(r"(?:[ \t\n]+|\\\n|#[^\n]*)*")  # the same and newlines
# `$(…)` inside `$(…)`: the parser, the interpreter and lint each recurse once per level.
MAX_NESTING = 32


class Scanner:
    """Recursive descent over `text`; `pos` is the offset of the next character to read.

    The grammar is built on this in layers, each a subclass of the one before: words
    (`syntax_words.WordParser`), compound commands (`syntax_compound.CompoundParser`), lists
    and simple commands (`syntax._Parser`). A layer reaches the ones above it through the
    methods declared at the end of this class.

    Nodes are built with positional arguments (`Lit(text, quoted)`): keywords cost a tenth
    of a node's construction, and lint builds a tree for every check of a plan.
    """

    def __init__(self, text: str, depth: int = 0) -> None:
        self.text = text
        self.pos = 0
        self.end = len(text)
        self.depth = depth  # `$(` open around `pos`
        # here-documents whose bodies start after the next newline: (redirect, delimiter,
        # strip leading tabs, body is literal)
        self.pending: list[tuple[Redirect, str, bool, bool]] = []

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
        if self.pending:
            newline = self.text.find("\n", self.pos, match.end())
            if newline >= 0:
                self.pos = newline + 1
                self.read_heredocs()
                self.skip_linebreaks()
                return
        self.pos = match.end()

    def keyword(self) -> str | None:
        """The reserved word at `pos`, if one is there."""
        match = _KEYWORD.match(self.text, self.pos)
        return match.group() if match is not None else None

    def expect(self, word: str, message: str, offset: int) -> None:
        if self.keyword() != word:
            raise self.error(message, offset if self.pos >= self.end else None)
        self.pos += len(word)
        self.skip_blanks()

    def unexpected(self) -> ShellSyntaxError:
        text, pos = self.text, self.pos
        if pos >= self.end:
            return self.error("unexpected end of input: a command is missing")
        char = text[pos]
        pair = text[pos : pos + 2]
        word = self.keyword()
        if word in RESERVED:
            return self.error(RESERVED[word])
        if pair == "&&" or pair == "||" or char in ";|":
            token = pair if pair[1:] == char else char
            return self.error(f"unexpected '{token}': a command is missing before it")
        if char == "&":
            return self.error(BACKGROUND)
        if char == "(":
            return self.error(
                "unexpected '(': a subshell '( … )' stands only where a command starts, and "
                "arrays and function definitions are not supported"
            )
        if char == ")":
            return self.error("unexpected ')'")
        if char == "\n":
            return self.error("unexpected end of line: a command is missing")
        return self.error(f"unexpected {char!r}")

    def deeper(self) -> None:
        """One level more of nesting (`$(…)`, compound commands, `[[ ( … ) ]]`): the parser,
        the interpreter and lint each recurse once per level."""
        if self.depth == MAX_NESTING:
            raise self.error(
                f"commands nested too deeply (limit {MAX_NESTING} levels of $(…), groups, "
                "loops and ifs); split the line"
            )
        self.depth += 1

    def nonempty(self, body: Script, where: str, offset: int) -> None:
        if not body.items:
            raise self.error(f"{where} needs at least one command (':' does nothing)", offset)

    def no_heredoc_left(self) -> None:
        if self.pending:
            redirect, delimiter, _, _ = self.pending[0]
            raise self.error(
                f"here-document '{delimiter}' is not closed: its lines start on the next line "
                f"and end with a line '{delimiter}'",
                redirect.offset,
            )

    # -- what the layers above define (in `syntax._Parser`)

    def script(
        self,
        closing: str | None,
        stops: frozenset[str] = frozenset(),
        case_arm: bool = False,
    ) -> Script:
        """A list of and-or lists up to `closing`, a reserved word in `stops` in command
        position, or (in a case arm) `;;`."""
        raise NotImplementedError

    def redirect(self) -> Redirect | None:
        """The redirection at `pos`, or None when the text there is not one."""
        raise NotImplementedError

    def read_heredocs(self) -> None:
        """The bodies of the pending here-documents, from `pos` (just after a newline)."""
        raise NotImplementedError
