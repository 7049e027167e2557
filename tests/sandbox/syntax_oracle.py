"""The sandbox parser as it was before its lexer read runs of characters: a test oracle only.

`groundskeeper.sandbox.syntax` must parse every text exactly as this character-at-a-time
version did (the same tree, or the same error at the same line and column);
`test_syntax.py` checks that with hypothesis. It shares the product's tree and messages.
"""

from __future__ import annotations

import re

from groundskeeper.sandbox.syntax import (
    AndOr,
    Assignment,
    CommandSub,
    Lit,
    Param,
    Part,
    Pipeline,
    Redirect,
    Script,
    ShellSyntaxError,
    SimpleCommand,
    Word,
)
from groundskeeper.sandbox.syntax_scanner import RESERVED as _RESERVED

_METACHARS = frozenset(" \t\n;&|<>()")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_BRACE_EXPANSION = re.compile(r"\{[^{}\s]*(,|\.\.)[^{}\s]*\}")


def parse(text: str) -> Script:
    """Parse as the character-at-a-time parser did."""
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
                words: list[tuple[int, Word, bool]] = []
                words += [(a.offset, a.value, False) for a in command.assignments]
                words += [(w.offset, w, i == 0) for i, w in enumerate(command.words)]
                words += [(r.offset, r.target, False) for r in command.redirects if r.target]
                for _, word, is_name in sorted(words, key=lambda item: item[0]):
                    if is_name:
                        literal = word.literal()
                        if literal is not None:
                            names.append(literal)
                    for part in word.parts:
                        if isinstance(part, CommandSub):
                            _collect_names(part.script, names)


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    # -- positions and errors

    def error(self, message: str, offset: int | None = None) -> ShellSyntaxError:
        at = self.pos if offset is None else offset
        line = self.text.count("\n", 0, at) + 1
        column = at - (self.text.rfind("\n", 0, at) + 1) + 1
        return ShellSyntaxError(message, line, column)

    def peek(self, ahead: int = 0) -> str:
        at = self.pos + ahead
        return self.text[at] if at < len(self.text) else ""

    def startswith(self, token: str) -> bool:
        return self.text.startswith(token, self.pos)

    def skip_blanks(self) -> None:
        """Spaces, tabs, line continuations and comments; never newlines."""
        while True:
            char = self.peek()
            if char in (" ", "\t"):
                self.pos += 1
            elif self.startswith("\\\n"):
                self.pos += 2
            elif char == "#":
                end = self.text.find("\n", self.pos)
                self.pos = len(self.text) if end < 0 else end
            else:
                return

    def skip_linebreaks(self) -> None:
        while True:
            self.skip_blanks()
            if self.peek() == "\n":
                self.pos += 1
            else:
                return

    # -- lists

    def at_end(self, closing: str | None) -> bool:
        return self.pos >= len(self.text) or (closing is not None and self.peek() == closing)

    def script(self, closing: str | None) -> Script:
        items: list[AndOr] = []
        self.skip_linebreaks()
        while not self.at_end(closing):
            items.append(self.and_or())
            self.skip_blanks()
            if self.at_end(closing):
                break
            char = self.peek()
            if char == ";":
                if self.startswith(";;"):
                    raise self.error("';;' (case) is not supported in the sandbox shell")
                self.pos += 1
            elif char == "\n":
                self.pos += 1
            else:
                raise self.unexpected()
            self.skip_linebreaks()
        if closing is None and self.pos < len(self.text):
            raise self.unexpected()
        return Script(tuple(items))

    def and_or(self) -> AndOr:
        first = self.pipeline()
        rest: list[tuple[str, Pipeline]] = []
        while True:
            self.skip_blanks()
            if self.startswith("&&") or self.startswith("||"):
                operator = self.text[self.pos : self.pos + 2]
                self.pos += 2
                self.skip_linebreaks()
                rest.append((operator, self.pipeline()))
            else:
                return AndOr(first, tuple(rest))

    def pipeline(self) -> Pipeline:
        self.skip_blanks()
        negated = False
        if self.peek() == "!" and (self.peek(1) in (" ", "\t", "\n", "")):
            negated = True
            self.pos += 1
            self.skip_blanks()
            if self.peek() == "!" and self.peek(1) in (" ", "\t", "\n", ""):
                raise self.error("'! !' (double negation) is not supported")
        commands = [self.simple_command()]
        while True:
            self.skip_blanks()
            if self.startswith("|&"):
                raise self.error("'|&' is not supported; use '2>&1 |'")
            if self.peek() == "|" and not self.startswith("||"):
                self.pos += 1
                self.skip_linebreaks()
                commands.append(self.simple_command())
            else:
                return Pipeline(tuple(commands), negated)

    def unexpected(self) -> ShellSyntaxError:
        if self.pos >= len(self.text):
            return self.error("unexpected end of input: a command is missing")
        char = self.peek()
        if self.startswith("&&") or self.startswith("||") or char in ";|":
            token = self.text[self.pos : self.pos + 2] if self.peek(1) == char else char
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
        self.skip_blanks()
        start = self.pos
        assignments: list[Assignment] = []
        words: list[Word] = []
        redirects: list[Redirect] = []
        while True:
            self.skip_blanks()
            char = self.peek()
            if char == "" or char in "\n;|)":
                break
            if char == "&":
                if self.startswith("&&"):
                    break
                if self.startswith("&>"):
                    raise self.error("'&>' is not supported; use '> FILE 2>&1'")
                raise self.error("background jobs '&' are not supported in the sandbox shell")
            if char == "(":
                raise self.unexpected()
            redirect = self.redirect()
            if redirect is not None:
                redirects.append(redirect)
                continue
            offset = self.pos
            if not words:
                match = _ASSIGNMENT.match(self.text, self.pos)
                if match is not None:
                    self.pos = match.end()
                    if self.peek() == "(":
                        raise self.error("arrays 'NAME=(…)' are not supported in the sandbox shell")
                    value = self.word(allow_empty=True)
                    assignments.append(Assignment(match.group(1), value, offset))
                    continue
            word = self.word(allow_empty=False)
            if not words:
                literal = word.literal()
                plain = all(isinstance(p, Lit) and not p.quoted for p in word.parts)
                if literal is not None and plain and literal in _RESERVED:
                    raise self.error(_RESERVED[literal], offset)
                if self.peek() == "(":
                    raise self.error(
                        "function definitions are not supported in the sandbox shell", offset
                    )
            words.append(word)
        if not (assignments or words or redirects):
            raise self.unexpected()
        return SimpleCommand(tuple(assignments), tuple(words), tuple(redirects), start)

    def redirect(self) -> Redirect | None:
        start = self.pos
        match = re.compile(r"(\d*)(>>|>&|>|<)").match(self.text, self.pos)
        if match is None:
            return None
        digits, op = match.group(1), match.group(2)
        after = match.end()
        rest = self.text[after : after + 2]
        if op == "<" and rest[:1] == "<":
            raise self.error("here-documents and here-strings ('<<', '<<<') are not supported")
        if op == "<" and rest[:1] in ("&", ">"):
            raise self.error(f"'<{rest[:1]}' redirections are not supported")
        if rest[:1] == "(":
            raise self.error("process substitution '<(…)' / '>(…)' is not supported")
        if op == ">" and rest[:1] == "|":
            raise self.error("'>|' is not supported; use '>'")
        fd = int(digits) if digits else (0 if op == "<" else 1)
        if fd > 2:
            raise self.error(f"file descriptor {fd} is not supported; only 0, 1 and 2 exist")
        self.pos = after
        if op == ">&":
            target_match = re.compile(r"[0-9]+|-").match(self.text, self.pos)
            if target_match is None or target_match.group(0) not in ("1", "2"):
                raise self.error(f"'{digits}>&' must be followed by 1 or 2 (as in 2>&1)")
            self.pos = target_match.end()
            if self.peek() and self.peek() not in _METACHARS:
                raise self.error(f"'{digits}>&' must be followed by 1 or 2 (as in 2>&1)")
            return Redirect(fd, ">&", None, int(target_match.group(0)), start)
        self.skip_blanks()
        char = self.peek()
        if char == "" or char in _METACHARS:
            raise self.error(f"a file name is missing after '{digits}{op}'")
        return Redirect(fd, op, self.word(allow_empty=False), None, start)

    # -- words

    def word(self, *, allow_empty: bool) -> Word:
        start = self.pos
        parts: list[Part] = []
        literal: list[str] = []

        def flush() -> None:
            if literal:
                text = "".join(literal)
                if _BRACE_EXPANSION.search(text):
                    raise self.error("brace expansion '{a,b}' is not supported", start)
                parts.append(Lit(text, quoted=False))
                literal.clear()

        if self.peek() == "~":
            raise self.error("tilde expansion '~' is not supported; use a relative path")
        while True:
            char = self.peek()
            if char == "" or char in _METACHARS:
                break
            if char == "\\":
                if self.peek(1) == "\n":
                    self.pos += 2
                    continue
                if self.peek(1) == "":
                    raise self.error("a backslash at the end of input escapes nothing")
                flush()
                parts.append(Lit(self.peek(1), quoted=True))
                self.pos += 2
            elif char == "'":
                flush()
                end = self.text.find("'", self.pos + 1)
                if end < 0:
                    raise self.error("unterminated single quote")
                parts.append(Lit(self.text[self.pos + 1 : end], quoted=True))
                self.pos = end + 1
            elif char == '"':
                flush()
                parts.extend(self.double_quoted())
            elif char == "`":
                raise self.error("backticks are not supported; use $(…)")
            elif char == "$":
                flush()
                parts.append(self.dollar(quoted=False))
            else:
                literal.append(char)
                self.pos += 1
        flush()
        if not parts and not allow_empty:
            raise self.unexpected()
        return Word(tuple(parts), start)

    def double_quoted(self) -> list[Part]:
        opening = self.pos
        self.pos += 1
        parts: list[Part] = [Lit("", quoted=True)]  # keeps "" a (empty) word
        literal: list[str] = []
        while True:
            char = self.peek()
            if char == "":
                raise self.error("unterminated double quote", opening)
            if char == '"':
                self.pos += 1
                break
            if char == "\\" and self.peek(1) in ('"', "\\", "$", "`", "\n"):
                if self.peek(1) != "\n":
                    literal.append(self.peek(1))
                self.pos += 2
            elif char == "`":
                raise self.error("backticks are not supported; use $(…)")
            elif char == "$":
                if literal:
                    parts.append(Lit("".join(literal), quoted=True))
                    literal.clear()
                parts.append(self.dollar(quoted=True))
            else:
                literal.append(char)
                self.pos += 1
        if literal:
            parts.append(Lit("".join(literal), quoted=True))
        return parts

    def dollar(self, *, quoted: bool) -> Part:
        start = self.pos
        after = self.peek(1)
        if self.startswith("$(("):
            raise self.error("arithmetic '$((…))' is not supported; use 'expr'")
        if after == "(":
            self.pos += 2
            script = self.script(closing=")")
            if self.peek() != ")":
                raise self.error("unterminated '$(': a ')' is missing", start)
            self.pos += 1
            return CommandSub(script, quoted)
        if after == "{":
            end = self.text.find("}", self.pos)
            if end < 0:
                raise self.error("unterminated '${': a '}' is missing")
            inner = self.text[self.pos + 2 : end]
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
        match = _NAME.match(self.text, self.pos + 1)
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
        return Lit("$", quoted=True)
