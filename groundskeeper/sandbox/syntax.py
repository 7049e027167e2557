"""The sandbox shell's grammar: text → `Script`, or a `ShellSyntaxError` naming the construct.

It owns `parse` and the grammar's list level (lists, pipelines, `!`, simple commands,
redirections, here-documents), built on `syntax_scanner` (positions, refusals), `syntax_words`
(quotes, the `$` forms) and `syntax_compound` (if/for/while/until/case, groups, `[[ … ]]`);
whatever is outside the grammar is refused by name, saying what to write instead. The nodes
live in `tree` (re-exported here). It does not expand or run anything; `shell` does.
"""

from __future__ import annotations

import re

from groundskeeper.sandbox.syntax_compound import OPENERS, CompoundParser
from groundskeeper.sandbox.syntax_scanner import (
    BACKGROUND,
    ENDS_BANG,
    ENDS_COMMAND,
    FUNCTIONS,
    MAX_NESTING,
    METACHARS,
    RESERVED,
    ShellSyntaxError,
)
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

_ASSIGNMENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)=")
_REDIRECT = re.compile(r"(\d*)(>>|>&|>|<)")
_DUP_TARGET = re.compile(r"[0-9]+|-")
_KEYWORD_START = frozenset("ifwuc{[")  # first characters of the words that open a compound
_COMPOUND_START = _KEYWORD_START | {"("}
# A whole word of characters that mean only themselves (possessive: what ends it must be a
# metacharacter or the end, never a quote, `\\` or `$` that would continue the word), then the
# blanks after it: the common case of a command's word, read in one step.
_PLAIN_WORD = re.compile(r"([^ \t\n;&|<>()\\'\"`$]++)(?![\\'\"`$])(?:[ \t]+|\\\n|#[^\n]*)*")


def parse(text: str) -> Script:
    """Parse a command line (or several lines); raise ShellSyntaxError outside the grammar."""
    parser = _Parser(text)
    script = parser.script(closing=None)
    parser.no_heredoc_left()
    return script


class _Parser(CompoundParser):
    """The parser's top layer, and the whole parser: lists, pipelines, simple commands,
    redirections and here-documents, on the words and compound commands below it."""

    # -- lists

    def script(
        self,
        closing: str | None,
        stops: frozenset[str] = frozenset(),
        case_arm: bool = False,
    ) -> Script:
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
        if text[pos : pos + 1] == "!" and text[pos + 1 : pos + 2] in ENDS_BANG:
            negated = True
            self.pos += 1
            self.skip_blanks()
            pos = self.pos
            if text[pos : pos + 1] == "!" and text[pos + 1 : pos + 2] in ENDS_BANG:
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

    # -- commands

    def command(self) -> Command:
        text = self.text
        start = self.pos
        char = text[start : start + 1]
        opener = None
        if char in _KEYWORD_START:
            opener = self.keyword()
        if char == "(" or (opener is not None and opener in OPENERS):
            self.deeper()
            try:
                return self.compound(start, opener)
            finally:
                self.depth -= 1
        return self.simple_command()

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
                        if literal in RESERVED:
                            raise self.error(RESERVED[literal], pos)
                        if text.startswith("(", after):
                            raise self.error(FUNCTIONS, pos)
                    words.append(Word((Lit(literal, False),), pos))
                    self.pos = plain.end()
                    continue
            char = text[pos : pos + 1]
            if char in ENDS_COMMAND:
                break
            if char == "&":
                if text.startswith("&&", pos):
                    break
                if text.startswith("&>", pos):
                    raise self.error("'&>' is not supported; use '> FILE 2>&1'")
                raise self.error(BACKGROUND)
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
                    and first.text in RESERVED
                ):
                    raise self.error(RESERVED[first.text], pos)
                if text.startswith("(", self.pos):
                    raise self.error(FUNCTIONS, pos)
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
                "process substitution '<(…)' / '>(…)' is not supported; pipe the command into"
                " the other, which reads '-' as stdin: `sort out.txt | diff - expected.txt`"
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
            if char and char not in METACHARS:
                raise self.error(f"'{digits}>&' must be followed by 1 or 2 (as in 2>&1)")
            return Redirect(fd, ">&", None, int(target_match.group(0)), start)
        self.skip_blanks()
        char = text[self.pos : self.pos + 1]
        if char == "" or char in METACHARS:
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
            if char == "" or char in METACHARS:
                raise self.error("a word is missing after '<<<'")
            return Redirect(0, "<<<", self.word(allow_empty=False), None, start)
        strip = text.startswith("-", after)
        self.pos = after + strip
        self.skip_blanks()
        char = text[self.pos : self.pos + 1]
        if char == "" or char in METACHARS:
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
