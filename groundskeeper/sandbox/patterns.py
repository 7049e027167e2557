"""Shell patterns as Python regexes: globs (case, `[[ == ]]`, `${X#p}`) and `=~`'s POSIX EREs.

It owns the translation only; matching and what a match means belong to the interpreter.
Python's engine is leftmost-first where POSIX is leftmost-longest: an alternation whose
earlier branch is a prefix of a later one can capture less than bash does.
"""

from __future__ import annotations

import re

from groundskeeper.sandbox.confine import _translate

_CLASSES = {
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "alnum": "a-zA-Z0-9",
    "upper": "A-Z",
    "lower": "a-z",
    "space": r" \t\n\r\f\v",
    "blank": r" \t",
    "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
    "xdigit": "0-9A-Fa-f",
    "word": "a-zA-Z0-9_",
    "cntrl": r"\x00-\x1f\x7f",
    "print": r"\x20-\x7e",
    "graph": r"\x21-\x7e",
}


def pattern_regex(pattern: list[tuple[str, bool]]) -> str:
    """A glob of (char, active) pairs as a regex for `re.fullmatch` with DOTALL: `*` and `?`
    match any character, `/` included (unlike a path glob)."""
    return _translate(pattern)


def posix_ere(text: str) -> str:
    """A POSIX extended regular expression as a Python regex of the same meaning."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "\\" and i + 1 < len(text):
            out.append(text[i : i + 2])
            i += 2
            continue
        if char == "[":
            end, bracket = _bracket(text, i)
            if bracket is not None:
                out.append(bracket)
                i = end + 1
                continue
            out.append(r"\[")
        elif char == "(" and text.startswith("?", i + 1):
            out.append(r"(\?")  # `(?` has no meaning in an ERE; Python would read an extension
            i += 2
            continue
        else:
            out.append(char)
        i += 1
    return "".join(out)


def _bracket(text: str, start: int) -> tuple[int, str | None]:
    """`[…]` at start: (index of its `]`, Python class), or (start, None) if unclosed."""
    i = start + 1
    negate = text.startswith("^", i)
    i += negate
    members: list[str] = []
    first = True
    while i < len(text):
        char = text[i]
        if char == "]" and not first:
            return i, "[" + ("^" if negate else "") + "".join(members) + "]"
        if text.startswith("[:", i):
            close = text.find(":]", i + 2)
            name = text[i + 2 : close] if close > 0 else ""
            if name in _CLASSES:
                members.append(_CLASSES[name])
                i = close + 2
                first = False
                continue
        if char == "-" and not first and i + 1 < len(text) and text[i + 1] != "]":
            members.append("-")
        else:
            members.append(re.escape(char))
        first = False
        i += 1
    return start, None
