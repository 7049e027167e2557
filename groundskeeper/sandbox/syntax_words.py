"""The sandbox shell's words: quotes, escapes and the `$` forms, read into a `Word`'s parts.

It owns the parser's word layer (`$NAME`, `${…}`, `$?`, `$(…)`, backticks, `$((…))`, bodies
of here-documents); it reads no command (`syntax_compound`, `syntax`) and expands nothing.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Self, TypeVar

from groundskeeper.sandbox.syntax_scanner import (
    MAX_NESTING,
    METACHARS,
    NAME,
    Scanner,
    ShellSyntaxError,
)
from groundskeeper.sandbox.tree import (
    Arith,
    CommandSub,
    Lit,
    Param,
    ParamOp,
    Part,
    Script,
    Word,
)

__all__ = ["WordParser"]

_Node = TypeVar("_Node")

_BRACE_EXPANSION = re.compile(r"\{[^{}\s]*(,|\.\.)[^{}\s]*\}")
_PARAM_OP = re.compile(r":-|:=|:\+|:\?|##|%%|[-=+?#%/^,@]")
_PATTERN_OPS = frozenset({"#", "##", "%", "%%"})
_REMATCH = re.compile(r"BASH_REMATCH\[([0-9]+)\]")
# Runs of characters read in one step (see `syntax_scanner`: per-character calls were lint's cost).
_PLAIN = re.compile(r"[^ \t\n;&|<>()\\'\"`$]+")  # unquoted characters that mean only themselves
_QUOTED_PLAIN = re.compile(r"[^\"\\`$]+")  # the same inside double quotes
_HEREDOC_PLAIN = re.compile(r"[^\\`$]+")  # the same in a here-document's body
_QUOTED_ESCAPES = frozenset(('"', "\\", "$", "`", "\n"))
_HEREDOC_ESCAPES = frozenset(("\\", "$", "`", "\n"))


class WordParser(Scanner):
    """The parser's word layer: each method reads the piece at `pos` and moves past it."""

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
            if char == "" or char in METACHARS:
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
        script = self.sub_parse("".join(inner), start + 1, WordParser.whole_script)
        self.pos = pos + 1
        return CommandSub(script, quoted)

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
        match = NAME.match(text, start + 1)
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
            match = NAME.match(text, pos + 1)
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
        match = NAME.match(text, pos)
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
        # The pattern of `#` `##` `%` `%%` is read as outside double quotes even within them
        # (as bash reads it): its bare `*`, `?` and `[…]` match, its quoted parts are literal.
        arg = self.brace_word(quoted and op not in _PATTERN_OPS)
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

    # -- text parsed apart from this text

    def whole_script(self) -> Script:
        script = self.script(closing=None)
        self.no_heredoc_left()
        return script

    def heredoc_word(self) -> Word:
        parts: list[Part] = [Lit("", True)]
        parts.extend(self.quoted_run(closing=None))
        return Word(tuple(parts), 0)

    def sub_parse(self, inner: str, offset: int, method: Callable[[Self], _Node]) -> _Node:
        """Parse text taken out of this text (a here-document's body, a backtick's command);
        an error is placed at its line in the whole text."""
        parser = type(self)(inner, self.depth + 1)
        try:
            return method(parser)
        except ShellSyntaxError as error:
            line = self.text.count("\n", 0, offset) + error.line
            column = error.column
            if error.line == 1:
                column += offset - (self.text.rfind("\n", 0, offset) + 1)
            raise ShellSyntaxError(error.message, line, column) from None
