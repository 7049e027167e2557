"""The sandbox shell's grammar: text → `Script`, or a `ShellSyntaxError` naming the construct.

It owns the grammar (pipes, lists, `!`, variables and the `${…}` forms, `$?`, `$(…)` and
backticks, `$((…))`, quotes, escapes, comments, globs, redirections, here-documents,
if/for/while/until/case, groups, `[[ … ]]`) and rejects everything else by name, saying what
to write instead. The nodes it builds live in `groundskeeper.sandbox.tree` (and are
re-exported here). It does not expand or run anything; `groundskeeper.sandbox.shell` does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

from groundskeeper.errors import GroundskeeperError
from groundskeeper.sandbox.tree import (
    XARGS_VALUED,
    AndOr,
    Arith,
    ArithCommand,
    Assignment,
    Case,
    CaseArm,
    Command,
    CommandSub,
    Compound,
    CondBinary,
    CondExpr,
    Conditional,
    CondLogic,
    CondNot,
    CondWord,
    For,
    Group,
    If,
    Lit,
    Loop,
    Param,
    ParamOp,
    Part,
    Pipeline,
    Redirect,
    Script,
    SimpleCommand,
    Word,
    command_names,
    simple_commands,
    xargs_command,
)

__all__ = [
    "MAX_NESTING",
    "XARGS_VALUED",
    "AndOr",
    "Arith",
    "ArithCommand",
    "Assignment",
    "Case",
    "CaseArm",
    "Command",
    "CommandSub",
    "Compound",
    "CondBinary",
    "CondExpr",
    "CondLogic",
    "CondNot",
    "CondWord",
    "Conditional",
    "For",
    "Group",
    "If",
    "Lit",
    "Loop",
    "Param",
    "ParamOp",
    "Part",
    "Pipeline",
    "Redirect",
    "Script",
    "ShellSyntaxError",
    "SimpleCommand",
    "Word",
    "command_names",
    "parse",
    "simple_commands",
    "xargs_command",
]

_Node = TypeVar("_Node")


class ShellSyntaxError(GroundskeeperError):
    """Command text outside the sandbox grammar; `line` and `column` are 1-based."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(f"line {line}, column {column}: {message}")
        self.message = message
        self.line = line
        self.column = column


# ---- what is refused, and why --------------------------------------------------------------

_FUNCTIONS = (
    "function definitions are not supported in the sandbox shell; repeat the commands or use "
    "a for loop"
)
_BACKGROUND = (
    "background jobs '&' are not supported in the sandbox shell; run the command in the "
    "foreground (drop the '&')"
)

# Words that may not stand as a command's name where they were found: closers out of place,
# constructs the sandbox refuses, and openers after an assignment (`X=1 if …`).
_RESERVED = {
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
    "function": _FUNCTIONS,
    "time": "'time' is not supported in the sandbox shell; run the command without it",
    "coproc": "'coproc' is not supported in the sandbox shell; use a pipeline",
    "eval": "'eval' is not supported in the sandbox shell; write the command directly",
}

_METACHARS = frozenset(" \t\n;&|<>()")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_BRACE_EXPANSION = re.compile(r"\{[^{}\s]*(,|\.\.)[^{}\s]*\}")
_REDIRECT = re.compile(r"(\d*)(>>|>&|>|<)")
_DUP_TARGET = re.compile(r"[0-9]+|-")
# A reserved word is one only when a metacharacter (or the end) follows it.
_KEYWORD = re.compile(
    r"(?:if|then|elif|else|fi|for|in|while|until|do|done|case|esac|\{|\}|\[\[|\]\])"
    r"(?=[ \t\n;&|<>()]|\Z)"
)
_KEYWORD_START = frozenset("ifwuc{[")  # first characters of the words that open a compound
_COMPOUND_START = _KEYWORD_START | {"("}
_PARAM_OP = re.compile(r":-|:=|:\+|:\?|##|%%|[-=+?#%/^,@]")
_REMATCH = re.compile(r"BASH_REMATCH\[([0-9]+)\]")
_COND_BINARY = re.compile(r"(==|=~|!=|=|-eq|-ne|-lt|-le|-gt|-ge)(?=[ \t\n]|\Z)")
_COND_UNARY = frozenset({"-n", "-z", "-e", "-a", "-f", "-d", "-s", "-r", "-w", "-x", "-L", "-h"})

# The lexer steps over runs of characters with these patterns rather than one character at a
# time: lint parses every check of a plan, and per-character Python calls made that its cost.
_BLANKS = re.compile(r"(?:[ \t]+|\\\n|#[^\n]*)*")  # spaces, continuations, comments; no newline
_LINEBREAKS = re.compile(r"(?:[ \t\n]+|\\\n|#[^\n]*)*")  # the same and newlines
_PLAIN = re.compile(r"[^ \t\n;&|<>()\\'\"`$]+")  # unquoted characters that mean only themselves
_QUOTED_PLAIN = re.compile(r"[^\"\\`$]+")  # the same inside double quotes
_HEREDOC_PLAIN = re.compile(r"[^\\`$]+")  # the same in a here-document's body
# A whole word of such characters (possessive: what ends it must be a metacharacter or the end,
# never a quote, `\\` or `$` that would continue the word), then the blanks after it.
_PLAIN_WORD = re.compile(r"([^ \t\n;&|<>()\\'\"`$]++)(?![\\'\"`$])(?:[ \t]+|\\\n|#[^\n]*)*")
_ENDS_COMMAND = frozenset(("", "\n", ";", "|", ")"))
_ENDS_BANG = frozenset(("", " ", "\t", "\n"))  # a `!` before one of these negates a pipeline
_QUOTED_ESCAPES = frozenset(('"', "\\", "$", "`", "\n"))
_HEREDOC_ESCAPES = frozenset(("\\", "$", "`", "\n"))
# `$(…)` inside `$(…)`: the parser, the interpreter and lint each recurse once per level.
MAX_NESTING = 32


def parse(text: str) -> Script:
    """Parse a command line (or several lines); raise ShellSyntaxError outside the grammar."""
    parser = _Parser(text)
    script = parser.script(closing=None)
    parser.no_heredoc_left()
    return script


class _Parser:
    """Recursive descent over `text`; `pos` is the offset of the next character to read.

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

    # -- lists
    #
    # Each grammar method below is entered with `pos` past blanks and returns with `pos` past
    # blanks again, so none of them skips blanks on entry or after calling another.

    def script(
        self,
        closing: str | None,
        stops: frozenset[str] = frozenset(),
        case_arm: bool = False,
    ) -> Script:
        """A list of and-or lists up to `closing`, a reserved word in `stops` in command
        position, or (in a case arm) `;;`."""
        text = self.text
        end = self.end
        items: list[AndOr] = []
        self.skip_linebreaks()
        while self.pos < end and text[self.pos] != closing:
            if stops and text[self.pos] in "tedf}]" and self.keyword() in stops:
                return Script(tuple(items))
            if case_arm and text.startswith((";;", ";&"), self.pos):
                return Script(tuple(items))
            items.append(self.and_or())
            if self.pos >= end:
                break
            char = text[self.pos]
            if char == closing:
                break
            if stops and char in "tedf}]" and self.keyword() in stops:
                return Script(tuple(items))  # after a compound command: `{ if a; then b; fi }`
            if char == ";":
                if text.startswith((";;", ";&"), self.pos):
                    if case_arm:
                        return Script(tuple(items))
                    raise self.error(
                        "';;' ends a case arm and stands only in 'case … esac'; use ';'"
                    )
                self.pos += 1
            elif char == "\n":
                self.pos += 1
                if self.pending:
                    self.read_heredocs()
            else:
                raise self.unexpected()
            self.skip_linebreaks()
        if closing is None and not stops and not case_arm and self.pos < end:
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
                raise self.error("'! !' (double negation) is not supported; drop both '!'")
        # most commands are simple ones that no compound's first character starts
        starts = _COMPOUND_START
        char = text[self.pos : self.pos + 1]
        commands = [self.command() if char in starts else self.simple_command()]
        while True:
            pair = text[self.pos : self.pos + 2]
            if pair == "|&":
                raise self.error("'|&' is not supported; use '2>&1 |'")
            if pair[:1] == "|" and pair != "||":
                self.pos += 1
                self.skip_linebreaks()
                char = text[self.pos : self.pos + 1]
                commands.append(self.command() if char in starts else self.simple_command())
            else:
                return Pipeline(tuple(commands), negated)

    def unexpected(self) -> ShellSyntaxError:
        text, pos = self.text, self.pos
        if pos >= self.end:
            return self.error("unexpected end of input: a command is missing")
        char = text[pos]
        pair = text[pos : pos + 2]
        word = self.keyword()
        if word in _RESERVED:
            return self.error(_RESERVED[word])
        if pair == "&&" or pair == "||" or char in ";|":
            token = pair if pair[1:] == char else char
            return self.error(f"unexpected '{token}': a command is missing before it")
        if char == "&":
            return self.error(_BACKGROUND)
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

    # -- commands

    def command(self) -> Command:
        text = self.text
        start = self.pos
        char = text[start : start + 1]
        opener = None
        if char in _KEYWORD_START:
            opener = self.keyword()
        if char == "(" or (opener is not None and opener in _OPENERS):
            self.deeper()
            try:
                return self.compound(start, opener)
            finally:
                self.depth -= 1
        return self.simple_command()

    def deeper(self) -> None:
        """One level more of nesting (`$(…)`, compound commands, `[[ ( … ) ]]`): the parser,
        the interpreter and lint each recurse once per level."""
        if self.depth == MAX_NESTING:
            raise self.error(
                f"commands nested too deeply (limit {MAX_NESTING} levels of $(…), groups, "
                "loops and ifs); split the line"
            )
        self.depth += 1

    def compound(self, start: int, opener: str | None) -> Compound:
        text = self.text
        if opener is None:
            if text.startswith("((", start):
                self.pos += 2
                expr = self.arith_text(start)
                self.skip_blanks()
                return ArithCommand(expr, self.trailing_redirects(), start)
            self.pos += 1
            body = self.script(closing=")")
            if not text.startswith(")", self.pos):
                raise self.error("'(' has no matching ')': write '( COMMANDS )'", start)
            self.pos += 1
            self.skip_blanks()
            self.nonempty(body, "'( )'", start)
            return Group(body, True, self.trailing_redirects(), start)
        self.pos += len(opener)
        self.skip_blanks()
        return _OPENERS[opener](self, start)

    def nonempty(self, body: Script, where: str, offset: int) -> None:
        if not body.items:
            raise self.error(f"{where} needs at least one command (':' does nothing)", offset)

    def trailing_redirects(self) -> tuple[Redirect, ...]:
        """Redirections after a compound command's closing word (`done > f`)."""
        text = self.text
        redirects: list[Redirect] = []
        while True:
            char = text[self.pos : self.pos + 1]
            if char == "<" or char == ">" or char.isdecimal():
                redirect = self.redirect()
                if redirect is not None:
                    redirects.append(redirect)
                    self.skip_blanks()
                    continue
            # a closing word may follow a compound command at once: `{ { a; } }`
            if char not in _ENDS_COMMAND and char != "&" and self.keyword() not in _CLOSERS:
                raise self.error(
                    f"unexpected {char!r} after a compound command: end it with ';' or a "
                    "newline first"
                )
            return tuple(redirects)

    def if_clause(self, start: int) -> If:
        clauses: list[tuple[Script, Script]] = []
        otherwise: Script | None = None
        opener = start
        while True:
            condition = self.script(None, stops=_CLOSERS)
            self.nonempty(condition, "'if'", opener)
            self.expect("then", "'if' without 'then': write 'if A; then B; fi'", opener)
            body = self.script(None, stops=_CLOSERS)
            self.nonempty(body, "'then'", opener)
            clauses.append((condition, body))
            word = self.keyword()
            if word == "elif":
                opener = self.pos
                self.pos += 4
                self.skip_blanks()
                continue
            if word == "else":
                opener = self.pos
                self.pos += 4
                otherwise = self.script(None, stops=_CLOSERS)
                self.nonempty(otherwise, "'else'", opener)
            self.expect("fi", "'if' without 'fi': end it with '; fi'", start)
            return If(tuple(clauses), otherwise, self.trailing_redirects(), start)

    def for_clause(self, start: int) -> For:
        text = self.text
        if text.startswith("((", self.pos):
            raise self.error(
                "C-style 'for ((…))' is not supported; write 'for i in $(seq 1 N); do …; done'"
            )
        match = _NAME.match(text, self.pos)
        if match is None or text[match.end() : match.end() + 1] not in _ENDS_NAME:
            raise self.error("'for' needs a variable name: write 'for NAME in WORDS; do …; done'")
        name = match.group()
        self.pos = match.end()
        self.skip_blanks()
        words: list[Word] = []
        if text.startswith(";", self.pos):
            self.pos += 1
        self.skip_linebreaks()
        if self.keyword() == "in":
            self.pos += 2
            self.skip_blanks()
            while True:
                char = text[self.pos : self.pos + 1]
                if char == ";" or char == "\n":
                    self.pos += 1
                    if char == "\n" and self.pending:
                        self.read_heredocs()
                    break
                if char == "" or char in _METACHARS:
                    raise self.error(
                        "the word list of 'for' ends with ';' or a newline: "
                        "write 'for NAME in WORDS; do …; done'"
                    )
                words.append(self.word(allow_empty=False))
                self.skip_blanks()
            self.skip_linebreaks()
        self.expect("do", "'for' without 'do': write 'for NAME in WORDS; do …; done'", start)
        body = self.script(None, stops=_CLOSERS)
        self.nonempty(body, "'do'", start)
        self.expect("done", "'for' without 'done': end the loop with '; done'", start)
        return For(name, tuple(words), body, self.trailing_redirects(), start)

    def while_clause(self, start: int) -> Loop:
        until = self.text.startswith("until", start)
        shown = "until" if until else "while"
        condition = self.script(None, stops=_CLOSERS)
        self.nonempty(condition, f"'{shown}'", start)
        self.expect("do", f"'{shown}' without 'do': write '{shown} A; do B; done'", start)
        body = self.script(None, stops=_CLOSERS)
        self.nonempty(body, "'do'", start)
        self.expect("done", f"'{shown}' without 'done': end the loop with '; done'", start)
        return Loop(condition, body, until, self.trailing_redirects(), start)

    def case_clause(self, start: int) -> Case:
        text = self.text
        char = text[self.pos : self.pos + 1]
        if char == "" or char in _METACHARS:
            raise self.error("'case' needs a word: write 'case WORD in PATTERN) …;; esac'")
        subject = self.word(allow_empty=False)
        self.skip_linebreaks()
        self.expect("in", "'case WORD' without 'in': write 'case WORD in PATTERN) …;; esac'", start)
        self.skip_linebreaks()
        arms: list[CaseArm] = []
        while self.keyword() != "esac":
            if self.pos >= self.end:
                raise self.error("'case' without 'esac': end it with 'esac'", start)
            if text.startswith("(", self.pos):
                self.pos += 1
                self.skip_blanks()
            patterns: list[Word] = []
            while True:
                char = text[self.pos : self.pos + 1]
                if char == "" or char in _METACHARS:
                    raise self.error("a case pattern is missing: write 'PATTERN) COMMANDS ;;'")
                patterns.append(self.word(allow_empty=False))
                self.skip_blanks()
                char = text[self.pos : self.pos + 1]
                if char == "|":
                    self.pos += 1
                    self.skip_blanks()
                    continue
                if char == ")":
                    self.pos += 1
                    break
                raise self.error("a case pattern ends with ')': write 'PATTERN) COMMANDS ;;'")
            body = self.script(None, stops=_CLOSERS, case_arm=True)
            arms.append(CaseArm(tuple(patterns), body))
            if text.startswith(";;&", self.pos) or text.startswith(";&", self.pos):
                raise self.error("';&' and ';;&' are not supported; end each arm with ';;'")
            if text.startswith(";;", self.pos):
                self.pos += 2
                self.skip_linebreaks()
            elif self.keyword() != "esac":
                raise self.error("'case' without 'esac': end it with 'esac'", start)
        self.pos += 4
        self.skip_blanks()
        return Case(subject, tuple(arms), self.trailing_redirects(), start)

    def brace_group(self, start: int) -> Group:
        body = self.script(None, stops=_CLOSERS)
        self.nonempty(body, "'{ }'", start)
        self.expect("}", "'{' has no matching '}': end the group with '; }'", start)
        return Group(body, False, self.trailing_redirects(), start)

    # -- [[ … ]]

    def conditional(self, start: int) -> Conditional:
        expr = self.cond_or(start)
        if not self.text.startswith("]]", self.pos):
            raise self.error(self.cond_unexpected(start))
        self.pos += 2
        self.skip_blanks()
        return Conditional(expr, self.trailing_redirects(), start)

    def cond_unexpected(self, start: int) -> str:
        if self.pos >= self.end:
            return "'[[' has no matching ']]': end the test with ' ]]'"
        token = self.text[self.pos : self.pos + 2].strip() or self.text[self.pos]
        if token.startswith("(") and self.text[self.pos - 1 : self.pos] in (
            "@",
            "!",
            "+",
            "*",
            "?",
        ):
            return (
                "extended globs like @(a|b) are not supported; write `case WORD in a|b) …;; "
                "esac` or use =~"
            )
        return (
            f"unexpected {token!r} in '[[ … ]]': it takes -n -z = == != < > =~ -eq -ne -lt "
            "-le -gt -ge, file tests -e -f -d -s -r -w -x -L, !, &&, || and ( )"
        )

    def cond_skip(self) -> None:
        self.skip_linebreaks()

    def cond_or(self, start: int) -> CondExpr:
        left = self.cond_and(start)
        while self.text.startswith("||", self.pos):
            self.pos += 2
            left = CondLogic("||", left, self.cond_and(start))
        return left

    def cond_and(self, start: int) -> CondExpr:
        left = self.cond_not(start)
        while self.text.startswith("&&", self.pos):
            self.pos += 2
            left = CondLogic("&&", left, self.cond_not(start))
        return left

    def cond_not(self, start: int) -> CondExpr:
        self.cond_skip()
        text = self.text
        if text.startswith("!", self.pos) and text[self.pos + 1 : self.pos + 2] in _ENDS_BANG:
            self.pos += 1
            self.deeper()
            inner = self.cond_not(start)
            self.depth -= 1
            return CondNot(inner)
        return self.cond_primary(start)

    def cond_primary(self, start: int) -> CondExpr:
        text = self.text
        char = text[self.pos : self.pos + 1]
        if char == "(":
            self.pos += 1
            self.deeper()
            inner = self.cond_or(start)
            self.depth -= 1
            self.cond_skip()
            if not text.startswith(")", self.pos):
                raise self.error(self.cond_unexpected(start))
            self.pos += 1
            self.cond_skip()
            return inner
        if char == "" or char in _METACHARS or text.startswith("]]", self.pos):
            raise self.error(self.cond_unexpected(start))
        first = self.word(allow_empty=False)
        self.cond_skip()
        literal = first.literal() if len(first.parts) == 1 else None
        char = text[self.pos : self.pos + 1]
        if (
            literal in _COND_UNARY
            and not first.parts[0].quoted
            and not text.startswith("]]", self.pos)
            and char not in ("", "&", "|", ")")
            and _COND_BINARY.match(text, self.pos) is None
        ):
            operand = self.word(allow_empty=False)
            self.cond_skip()
            return CondWord(literal or "-n", operand)
        if char == "<" or char == ">":
            op = char
            self.pos += 1
        else:
            match = _COND_BINARY.match(text, self.pos)
            if match is None:
                following = re.match(r"-(nt|ot|ef)(?=[ \t\n]|\Z)", text[self.pos :])
                if following is not None:
                    raise self.error(
                        f"'{following.group()}' is not supported in '[[ … ]]'; compare "
                        "'stat -c %Y' times or 'realpath' names instead"
                    )
                return CondWord("-n", first)
            op = match.group()
            self.pos = match.end()
        self.cond_skip()
        char = text[self.pos : self.pos + 1]
        if char == "" or text.startswith("]]", self.pos) or (char in _METACHARS and op != "=~"):
            raise self.error(f"'{op}' in '[[ … ]]' needs a word after it")
        right = self.regex_word() if op == "=~" else self.word(allow_empty=False)
        self.cond_skip()
        return CondBinary("==" if op == "=" else op, first, right)

    def regex_word(self) -> Word:
        """The right side of `=~`: parentheses and `|` belong to the regex; a blank at
        depth 0 ends it. Quoted parts match literally."""
        text = self.text
        start = pos = self.pos
        parts: list[Part] = []
        plain: list[str] = []
        depth = 0
        while True:
            char = text[pos : pos + 1]
            if char == "" or (depth == 0 and char in " \t\n"):
                break
            if char == "(":
                depth += 1
            elif char == ")":
                if depth == 0:
                    break
                depth -= 1
            if char in "\\'\"`" or (char == "$" and _expands(text, pos)):
                if plain:
                    parts.append(Lit("".join(plain), False))
                    plain.clear()
                self.pos = pos
                parts.extend(self.word_piece(char, quoted=False))
                pos = self.pos
                continue
            plain.append(char)
            pos += 1
        if plain:
            parts.append(Lit("".join(plain), False))
        self.pos = pos
        if not parts:
            raise self.error("'=~' needs a regular expression after it")
        return Word(tuple(parts), start)

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
                            raise self.error(_FUNCTIONS, pos)
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
                raise self.error(_BACKGROUND)
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
                        raise self.error(
                            "arrays 'NAME=(…)' are not supported in the sandbox shell; keep the "
                            "items in a string and loop over it with 'for'"
                        )
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
                    raise self.error(_FUNCTIONS, pos)
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
            fd = int(digits) if digits else 0
            if fd != 0:
                raise self.error("a here-document feeds stdin only; write '<<' without a number")
            return self.heredoc(start, after + 1)
        if op == "<" and following in ("&", ">"):
            raise self.error(f"'<{following}' redirections are not supported; use '<' or '>'")
        if following == "(":
            raise self.error(
                "process substitution '<(…)' / '>(…)' is not supported; write the output to a "
                "file first"
            )
        if op == ">" and following == "|":
            raise self.error("'>|' is not supported; use '>'")
        fd = int(digits) if digits else (0 if op == "<" else 1)
        if fd > 2:
            raise self.error(
                f"file descriptor {fd} is not supported; only 0, 1 and 2 exist (use 2> or 2>&1)"
            )
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

    # -- here-documents and here-strings

    def heredoc(self, start: int, after: int) -> Redirect:
        """`<<<WORD`, or `<<[-]DELIM` whose body is read at the next newline."""
        text = self.text
        if text.startswith("<", after):
            self.pos = after + 1
            self.skip_blanks()
            char = text[self.pos : self.pos + 1]
            if char == "" or char in _METACHARS:
                raise self.error("a word is missing after '<<<'")
            return Redirect(0, "<<<", self.word(allow_empty=False), None, start)
        strip = text.startswith("-", after)
        self.pos = after + strip
        self.skip_blanks()
        char = text[self.pos : self.pos + 1]
        if char == "" or char in _METACHARS:
            raise self.error(
                "a delimiter is missing after '<<': write '<<EOF', then the lines, then 'EOF'"
            )
        delimiter = self.word(allow_empty=False)
        literal = delimiter.literal()
        if literal is None or not literal:
            raise self.error(
                "a here-document's delimiter must be a plain word, as in <<'EOF'", start
            )
        quoted = any(isinstance(part, Lit) and part.quoted for part in delimiter.parts)
        redirect = Redirect(0, "<<", None, None, start)
        self.pending.append((redirect, literal, strip, quoted))
        return redirect

    def read_heredocs(self) -> None:
        """The bodies of the pending here-documents, from `pos` (just after a newline)."""
        text = self.text
        pending, self.pending = self.pending, []
        for redirect, delimiter, strip, literal in pending:
            lines: list[str] = []
            body_start = self.pos
            while True:
                if self.pos >= self.end:
                    raise self.error(
                        f"here-document '{delimiter}' is not closed: end it with a line "
                        f"'{delimiter}'",
                        redirect.offset,
                    )
                newline = text.find("\n", self.pos)
                line_end = self.end if newline < 0 else newline
                line = text[self.pos : line_end]
                self.pos = min(line_end + 1, self.end)
                if strip:
                    line = line.lstrip("\t")
                if line == delimiter:
                    break
                lines.append(line + "\n")
            body = "".join(lines)
            if literal:
                word = Word((Lit(body, True),), body_start)
            else:
                word = self.sub_parse(body, body_start, _Parser.heredoc_word)
            # The one node finished after it is made: its body follows the command's line.
            object.__setattr__(redirect, "target", word)

    def no_heredoc_left(self) -> None:
        if self.pending:
            redirect, delimiter, _, _ = self.pending[0]
            raise self.error(
                f"here-document '{delimiter}' is not closed: its lines start on the next line "
                f"and end with a line '{delimiter}'",
                redirect.offset,
            )

    def heredoc_word(self) -> Word:
        parts: list[Part] = [Lit("", True)]
        parts.extend(self.quoted_run(closing=None))
        return Word(tuple(parts), 0)

    def sub_parse(self, inner: str, offset: int, method: Callable[[_Parser], _Node]) -> _Node:
        """Parse text taken out of this text (a here-document's body, a backtick's command);
        an error is placed at its line in the whole text."""
        parser = _Parser(inner, self.depth + 1)
        try:
            return method(parser)
        except ShellSyntaxError as error:
            line = self.text.count("\n", 0, offset) + error.line
            column = error.column
            if error.line == 1:
                column += offset - (self.text.rfind("\n", 0, offset) + 1)
            raise ShellSyntaxError(error.message, line, column) from None

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
            if char == "\\" and text[pos + 1 : pos + 2] == "\n":
                pos += 2
                continue
            if plain:
                parts.append(self.unquoted(plain, start))
            self.pos = pos
            parts.extend(self.word_piece(char, quoted=False))
            pos = self.pos
        self.pos = pos
        if plain:
            parts.append(self.unquoted(plain, start))
        if not parts and not allow_empty:
            raise self.unexpected()
        return Word(tuple(parts), start)

    def word_piece(self, char: str, *, quoted: bool) -> list[Part]:
        """The quoted or expanded piece at `pos` that starts with `char` (`\\`, `'`, `"`,
        a backtick or `$`); `pos` moves past it."""
        text = self.text
        pos = self.pos
        if char == "\\":
            escaped = text[pos + 1 : pos + 2]
            if escaped == "":
                raise self.error("a backslash at the end of input escapes nothing")
            self.pos = pos + 2
            return [Lit(escaped, True)]
        if char == "'":
            end = text.find("'", pos + 1)
            if end < 0:
                raise self.error("unterminated single quote")
            self.pos = end + 1
            return [Lit(text[pos + 1 : end], True)]
        if char == '"':
            return self.double_quoted()
        if char == "`":
            return [self.backtick(quoted)]
        return [self.dollar(quoted=quoted)]

    def unquoted(self, plain: list[str], start: int) -> Lit:
        """The unquoted text gathered so far as one Lit (and `plain` emptied)."""
        text = plain[0] if len(plain) == 1 else "".join(plain)
        plain.clear()
        if "{" in text and _BRACE_EXPANSION.search(text):
            raise self.error(
                "brace expansion '{a,b}' is not supported; write the words out, or use "
                "'for x in a b' or '$(seq 1 N)'",
                start,
            )
        return Lit(text, False)

    def double_quoted(self) -> list[Part]:
        opening = self.pos
        self.pos += 1
        parts: list[Part] = [Lit("", True)]  # keeps "" a (empty) word
        parts.extend(self.quoted_run(closing='"', opening=opening))
        return parts

    def quoted_run(self, closing: str | None, opening: int = 0) -> list[Part]:
        """Text as inside double quotes up to `closing` (past it), or to the end of the text
        as in a here-document's body (where `"` is an ordinary character)."""
        text = self.text
        pos = self.pos
        heredoc = closing is None
        plain_run = _HEREDOC_PLAIN if heredoc else _QUOTED_PLAIN
        escapes = _HEREDOC_ESCAPES if heredoc else _QUOTED_ESCAPES
        parts: list[Part] = []
        literal: list[str] = []
        while True:
            match = plain_run.match(text, pos)
            if match is not None:
                literal.append(match.group())
                pos = match.end()
            char = text[pos : pos + 1]
            if char == "":
                if heredoc:
                    break
                raise self.error("unterminated double quote", opening)
            if char == closing:
                pos += 1
                break
            if char == "\\":
                escaped = text[pos + 1 : pos + 2]
                if escaped in escapes and escaped:
                    if escaped != "\n":
                        literal.append(escaped)
                    pos += 2
                else:
                    literal.append(char)
                    pos += 1
                continue
            if literal:
                parts.append(Lit("".join(literal), True))
                literal.clear()
            self.pos = pos
            parts.append(self.backtick(True) if char == "`" else self.dollar(quoted=True))
            pos = self.pos
        self.pos = pos
        if literal:
            parts.append(Lit("".join(literal), True))
        return parts

    def backtick(self, quoted: bool) -> CommandSub:
        """`` `…` ``: the same as `$(…)`; inside it `\\$`, `` \\` `` and `\\\\` (and `\\"`
        within double quotes) stand for the character."""
        text = self.text
        start = self.pos
        pos = start + 1
        inner: list[str] = []
        escapes = '$`\\"' if quoted else "$`\\"
        while True:
            char = text[pos : pos + 1]
            if char == "":
                raise self.error("unterminated backtick: a closing '`' is missing", start)
            if char == "`":
                break
            if char == "\\" and text[pos + 1 : pos + 2] in escapes and text[pos + 1 : pos + 2]:
                inner.append(text[pos + 1])
                pos += 2
                continue
            inner.append(char)
            pos += 1
        if self.depth == MAX_NESTING:
            raise self.error(f"'$(…)' nested too deeply (limit {MAX_NESTING})", start)
        script = self.sub_parse("".join(inner), start + 1, _Parser.whole_script)
        self.pos = pos + 1
        return CommandSub(script, quoted)

    def whole_script(self) -> Script:
        script = self.script(closing=None)
        self.no_heredoc_left()
        return script

    def dollar(self, *, quoted: bool) -> Part:
        text = self.text
        start = self.pos
        after = text[start + 1 : start + 2]
        if text.startswith("$((", start):
            self.pos += 3
            return Arith(self.arith_text(start), quoted)
        if after == "[":
            raise self.error("'$[…]' is not supported; write $((…))")
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
            return self.parameter(start, quoted)
        if after == "?":
            self.pos += 2
            return Param("?", quoted)
        match = _NAME.match(text, start + 1)
        if match is not None:
            self.pos = match.end()
            return Param(match.group(0), quoted)
        if after and (after.isdigit() or after in "@*#$!-"):
            raise self.error(
                f"special parameter '${after}' is not supported; only $? is (the sandbox has "
                "no positional parameters or process ids)"
            )
        if after == "'" and not quoted:
            raise self.error("$'…' quoting is not supported; use '…' or \"…\"")
        if after == '"' and not quoted:
            raise self.error('$"…" quoting is not supported; use "…"')
        # A lone `$` (before a space, a slash, the end…) is an ordinary character, as in bash.
        self.pos += 1
        return Lit("$", True)

    def parameter(self, start: int, quoted: bool) -> Part:
        """`${…}`: a name, `${#NAME}`, `${BASH_REMATCH[N]}`, or a name with an operator."""
        text = self.text
        pos = start + 2
        close = text.find("}", pos)
        if close < 0:
            raise self.error("unterminated '${': a '}' is missing")
        if text.startswith("#", pos) and text[pos + 1 : pos + 2] != "}":
            match = _NAME.match(text, pos + 1)
            if match is None or text[match.end() : match.end() + 1] != "}":
                raise self.error(
                    f"'${{{text[pos:close]}}}' is not supported: write ${{#NAME}} for a length"
                )
            self.pos = match.end() + 1
            return ParamOp(match.group(), "len", None, quoted)
        rematch = _REMATCH.match(text, pos)
        if rematch is not None and text.startswith("}", rematch.end()):
            self.pos = rematch.end() + 1
            index = rematch.group(1)
            return Param("BASH_REMATCH" if index == "0" else f"BASH_REMATCH[{int(index)}]", quoted)
        match = _NAME.match(text, pos)
        if match is None:
            if text.startswith("?}", pos):
                self.pos = pos + 2
                return Param("?", quoted)
            raise self.error(self.parameter_refusal(text[pos:close]))
        name = match.group()
        pos = match.end()
        if text.startswith("}", pos):
            self.pos = pos + 1
            return Param(name, quoted)
        op_match = _PARAM_OP.match(text, pos)
        op = op_match.group() if op_match is not None else ""
        if op_match is None or op in (":?", "?", "/", "^", ",", "@"):
            raise self.error(self.parameter_refusal(text[start + 2 : close]))
        self.pos = op_match.end()
        arg = self.brace_word(quoted)
        return ParamOp(name, op, arg, quoted)

    def parameter_refusal(self, inner: str) -> str:
        return (
            f"'${{{inner}}}' is not supported: the sandbox has ${{NAME}} ${{#NAME}} "
            "${NAME:-x} ${NAME-x} ${NAME:=x} ${NAME=x} ${NAME:+x} ${NAME+x} ${NAME#p} "
            "${NAME##p} ${NAME%p} ${NAME%%p}; for other edits pipe through sed or cut"
        )

    def brace_word(self, quoted: bool) -> Word:
        """The word after a `${NAME op` up to its `}`: blanks are part of it."""
        text = self.text
        start = pos = self.pos
        parts: list[Part] = []
        plain: list[str] = []
        while True:
            char = text[pos : pos + 1]
            if char == "":
                raise self.error("unterminated '${': a '}' is missing", start)
            if char == "}":
                pos += 1
                break
            if quoted and char == "'":
                plain.append(char)
                pos += 1
                continue
            if char in "\\'\"`$":
                if quoted and char == "\\" and text[pos + 1 : pos + 2] not in '$`"\\}':
                    plain.append(char)
                    pos += 1
                    continue
                if plain:
                    parts.append(Lit("".join(plain), quoted))
                    plain.clear()
                self.pos = pos
                if quoted and char == '"':
                    self.pos += 1
                    parts.extend(self.quoted_run(closing='"', opening=pos))
                else:
                    parts.extend(self.word_piece(char, quoted=quoted))
                pos = self.pos
                continue
            plain.append(char)
            pos += 1
        self.pos = pos
        if plain:
            parts.append(Lit("".join(plain), quoted))
        return Word(tuple(parts), start)

    def arith_text(self, start: int) -> Word:
        """The expression of `$((…))` or `((…))` up to its `))`: `$` expansions and
        backticks are parts; every other character is literal text."""
        text = self.text
        pos = self.pos
        parts: list[Part] = []
        literal: list[str] = []
        depth = 0
        while True:
            char = text[pos : pos + 1]
            if char == "":
                raise self.error("unterminated '$((': a '))' is missing", start)
            if char == ")" and depth == 0:
                if not text.startswith("))", pos):
                    raise self.error(
                        "'((' closed by a single ')': end arithmetic with '))', or write "
                        "'$( (' with a space for a subshell",
                        start,
                    )
                pos += 2
                break
            if char == "(":
                depth += 1
            elif char == ")":
                depth -= 1
            if char == "$" or char == "`":
                if literal:
                    parts.append(Lit("".join(literal), True))
                    literal.clear()
                self.pos = pos
                parts.append(self.backtick(True) if char == "`" else self.dollar(quoted=True))
                pos = self.pos
                continue
            literal.append(char)
            pos += 1
        self.pos = pos
        if literal:
            parts.append(Lit("".join(literal), True))
        return Word(tuple(parts), start)


def _expands(text: str, pos: int) -> bool:
    """Whether the `$` at pos starts an expansion (in a regex, a lone `$` is an anchor)."""
    after = text[pos + 1 : pos + 2]
    return after in ("(", "{", "?") or (bool(after) and (after.isalpha() or after == "_"))


_ENDS_NAME = frozenset(("", " ", "\t", "\n", ";"))
# A compound command's list ends at any closing word; the command then checks it is its own.
_CLOSERS = frozenset({"then", "elif", "else", "fi", "do", "done", "esac", "}"})
_OPENERS: dict[str, Callable[[_Parser, int], Compound]] = {
    "if": _Parser.if_clause,
    "for": _Parser.for_clause,
    "while": _Parser.while_clause,
    "until": _Parser.while_clause,
    "case": _Parser.case_clause,
    "{": _Parser.brace_group,
    "[[": _Parser.conditional,
}
