"""The sandbox shell's compound commands parsed: if, for, while/until, case, groups, `[[ … ]]`.

It owns their grammar (`((…))` too), the redirections after their closing word and the
expressions of `[[ … ]]`; the lists inside them and simple commands are `syntax`'s.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from groundskeeper.sandbox.syntax_scanner import ENDS_BANG, ENDS_COMMAND, METACHARS, NAME
from groundskeeper.sandbox.syntax_words import WordParser
from groundskeeper.sandbox.tree import (
    ArithCommand,
    Case,
    CaseArm,
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
    Part,
    Redirect,
    Script,
    Word,
)

__all__ = ["OPENERS", "CompoundParser"]

_COND_BINARY = re.compile(r"(==|=~|!=|=|-eq|-ne|-lt|-le|-gt|-ge)(?=[ \t\n]|\Z)")
_COND_UNARY = frozenset({"-n", "-z", "-e", "-a", "-f", "-d", "-s", "-r", "-w", "-x", "-L", "-h"})


class CompoundParser(WordParser):
    """The parser's compound-command layer: each method is entered past the opening word."""

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
        return OPENERS[opener](self, start)

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
            if char not in ENDS_COMMAND and char != "&" and self.keyword() not in _CLOSERS:
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
        match = NAME.match(text, self.pos)
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
                if char == "" or char in METACHARS:
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
        if char == "" or char in METACHARS:
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
                if char == "" or char in METACHARS:
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
        if text.startswith("!", self.pos) and text[self.pos + 1 : self.pos + 2] in ENDS_BANG:
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
        if char == "" or char in METACHARS or text.startswith("]]", self.pos):
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
        if char == "" or text.startswith("]]", self.pos) or (char in METACHARS and op != "=~"):
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


def _expands(text: str, pos: int) -> bool:
    """Whether the `$` at pos starts an expansion (in a regex, a lone `$` is an anchor)."""
    after = text[pos + 1 : pos + 2]
    return after in ("(", "{", "?") or (bool(after) and (after.isalpha() or after == "_"))


_ENDS_NAME = frozenset(("", " ", "\t", "\n", ";"))
# A compound command's list ends at any closing word; the command then checks it is its own.
_CLOSERS = frozenset({"then", "elif", "else", "fi", "do", "done", "esac", "}"})
OPENERS: dict[str, Callable[[CompoundParser, int], Compound]] = {
    "if": CompoundParser.if_clause,
    "for": CompoundParser.for_clause,
    "while": CompoundParser.while_clause,
    "until": CompoundParser.while_clause,
    "case": CompoundParser.case_clause,
    "{": CompoundParser.brace_group,
    "[[": CompoundParser.conditional,
}
