"""Glob patterns matched against whole strings: `case`, `[[ == ]]`, `${X#p}` and the like.

It owns matching a pattern of (char, active) pairs in bounded time; what a match means
belongs to the interpreter. (`=~`'s EREs are matched inside the sandbox, by box.wasm.)
"""

from __future__ import annotations

import re
from collections.abc import Callable

from groundskeeper.sandbox.confine import _bracket, _translate


class Glob:
    """A glob pattern (case, `[[ == ]]`, `${X#p}`) ready to match whole strings.

    With at most one `*` the regex engine matches it (in linear time: there is nothing to
    backtrack into); with more, a matcher that remembers only the last `*` does, in time
    proportional to pattern × text, where a regex could take exponential time."""

    def __init__(self, pattern: list[tuple[str, bool]]) -> None:
        stars = sum(1 for char, active in pattern if active and char == "*")
        self.regex = re.compile(_translate(pattern), re.DOTALL) if stars <= 1 else None
        self.tokens = _tokens(pattern) if stars > 1 else []

    def matches(self, text: str, tick: Callable[[], None]) -> bool:
        """Whether all of `text` matches; `tick` is called now and then (a deadline)."""
        if self.regex is not None:
            return self.regex.fullmatch(text) is not None
        tokens = self.tokens
        t = s = 0
        star, resume = -1, 0
        steps = 0
        while s < len(text):
            steps += 1
            if not steps & 0xFFFF:
                tick()
            token = tokens[t] if t < len(tokens) else None
            if token is not None and token != _STAR and _one(token, text[s]):
                t += 1
                s += 1
            elif token == _STAR:
                star, resume = t, s
                t += 1
            elif star >= 0:  # let the last `*` take one more character, and try again
                t = star + 1
                resume += 1
                s = resume
            else:
                return False
        while t < len(tokens) and tokens[t] == _STAR:
            t += 1
        return t == len(tokens)


_STAR = "*"
_ANY = "?"
# A token: _STAR, _ANY, a one-character string to match exactly, or a compiled class.
_Token = str | re.Pattern[str]


def trimmed(text: str, op: str, glob: Glob, tick: Callable[[], None]) -> str:
    """`${X#p}`, `${X##p}`, `${X%p}`, `${X%%p}` (`op`) of `text`: the shortest (`#`, `%`)
    or longest (`##`, `%%`) prefix or suffix `glob` matches removed; `text` when none does.
    The shell's expansion, and the reading of a check's compared files (`plan.compared`)."""
    sizes = range(len(text), -1, -1) if op in ("##", "%%") else range(len(text) + 1)
    for size in sizes:
        tick()
        if op[0] == "#" and glob.matches(text[:size], tick):
            return text[size:]
        if op[0] == "%" and glob.matches(text[len(text) - size :], tick):
            return text[: len(text) - size]
    return text


def _one(token: _Token, char: str) -> bool:
    if isinstance(token, re.Pattern):
        return token.fullmatch(char) is not None
    return token == _ANY or token[1:] == char


def _tokens(pattern: list[tuple[str, bool]]) -> list[_Token]:
    tokens: list[_Token] = []
    index = 0
    while index < len(pattern):
        char, active = pattern[index]
        if active and char == "*":
            if not tokens or tokens[-1] != _STAR:  # `**` is `*`
                tokens.append(_STAR)
        elif active and char == "?":
            tokens.append(_ANY)
        elif active and char == "[":
            end, bracket = _bracket(pattern, index)
            if bracket is None:
                tokens.append("=" + char)
            else:
                tokens.append(re.compile(bracket, re.DOTALL))
                index = end
        else:
            tokens.append("=" + char)  # a literal: "=" and the character (never "*" or "?")
        index += 1
    return tokens
