"""File-level settings a plan states in `#+KEYWORD: value` lines before its first headline
(`#+REQUIRE_RED:`, `#+PROTECT:`). Org reads such lines as in-buffer settings; the plan model
(`groundskeeper.plan.org`) owns everything else about the file.
"""

from __future__ import annotations

import re

_KEYWORD = re.compile(r"^#\+([A-Za-z_][A-Za-z0-9_-]*):[ \t]*(.*?)[ \t]*$")


def file_keywords(text: str, name: str) -> list[str]:
    """The values of every `#+NAME:` line before the first headline, in order."""
    wanted = name.casefold()
    found: list[str] = []
    for line in text.splitlines():
        if line.startswith("*"):
            break
        match = _KEYWORD.match(line.lstrip())
        if match is not None and match.group(1).casefold() == wanted:
            found.append(match.group(2))
    return found


def file_flag(text: str, name: str) -> bool:
    """`#+NAME: t` (org's true; also `yes`, `true`) before the first headline."""
    return any(v.casefold() in ("t", "yes", "true") for v in file_keywords(text, name))
