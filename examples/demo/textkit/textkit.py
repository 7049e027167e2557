"""A small pure-Python library: the sample project whose own tests groundskeeper runs in its
sandbox (`make demo`, tests/sandbox/test_cpython_suite.py, benchmarks/python_check.py)."""

from __future__ import annotations

import re


def slugify(text: str) -> str:
    """Lower-case words joined by single hyphens: `Hello, World!` → `hello-world`."""
    words = re.findall(r"[a-z]+", text.lower())
    return "-".join(words)


def word_count(text: str) -> dict[str, int]:
    """How often each lower-cased word occurs."""
    counts: dict[str, int] = {}
    for word in re.findall(r"[a-z']+", text.lower()):
        counts[word] = counts.get(word, 0) + 1
    return counts


def wrap(text: str, width: int) -> list[str]:
    """Greedy line wrapping at spaces; a word longer than `width` stands alone."""
    if width < 1:
        raise ValueError("width must be at least 1")
    lines: list[str] = []
    line = ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(line)
    return lines


def initials(name: str) -> str:
    """`Ada King Lovelace` → `A.K.L.`"""
    return "".join(part[0].upper() + "." for part in name.split())


def is_palindrome(text: str) -> bool:
    """Letters and digits only, case ignored."""
    kept = [c.lower() for c in text if c.isalnum()]
    return kept == kept[::-1]
