"""The one reading of a plan's path patterns: `:protect:`, `#+PROTECT:`, `:hide:`, `#+HIDE:`,
`:writable:`, `:judge-files:`, `:gate-files:`, contract paths, lint's T014, the fence and
gates all ask `covers` here. It owns the glob semantics; it does not know what a covered
path means (protected, hidden, shown to the judge) or where the workdir is.

The semantics are gitignore's, as `pathspec` implements them (docs/plans.md, "Path patterns"):
`*` and `?` stay inside one name, `**` crosses directories, a pattern names a path relative to
the working directory and covers everything under it when it names a directory (`tests`,
`tests/`, `tests/*` all cover `tests/a/b.txt`), a pattern without a `/` before its end
matches at any depth (`*.txt`, `expected.txt`), a leading `/` anchors it to the working
directory. Two differences, both towards covering more: letters match in either case (a
file system that folds case opens `Tests/Expected.TXT` as `tests/expected.txt`), and a
leading `./` is dropped. A pattern that can never name a path inside the working directory
(absolute, `..`, `~`, a negation `!…`, empty) covers nothing and `pattern_problem` says why;
lint makes that an error, so no run relies on it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported when patterns are compiled: ~25 ms a process need not pay
    from pathspec import GitIgnoreSpec

__all__ = ["PathPatterns", "covering", "covers", "naming", "normal_path", "pattern_problem"]


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` cannot name a path inside the working directory, or None."""
    if not pattern.strip():
        return "an empty pattern names nothing"
    if pattern.startswith("!"):
        return (
            f"`{pattern}`: negations are not supported; list what to cover"
            " (or use `:writable:` to let workers change an expected file)"
        )
    if pattern.startswith("~"):
        return f"`{pattern}` is absolute; paths are relative to the working directory"
    if ".." in pattern.split("/"):
        return f"`{pattern}` uses `..`; paths stay inside the working directory"
    if '"' in pattern or "'" in pattern:
        return (
            f"`{pattern}` holds a quote left unclosed: quote a name with spaces whole"
            ' (`"golden output.txt"`) or escape its spaces (`golden\\ output.txt`)'
        )
    from pathspec import GitIgnoreSpec

    try:
        GitIgnoreSpec.from_lines([pattern.casefold()])
    except ValueError as exc:  # what the run would refuse, said by lint first
        return f"`{pattern}` is not a pattern: {exc}"
    return None


def _usable(pattern: str) -> str | None:
    """The pattern as pathspec reads it, or None when it covers nothing."""
    if pattern_problem(pattern) is not None:
        return None
    while pattern.startswith("./"):
        pattern = pattern[2:]
    if not pattern or pattern in (".", "/"):
        return None
    return pattern.casefold()


@functools.lru_cache(maxsize=1024)
def _compiled(patterns: tuple[str, ...]) -> tuple[GitIgnoreSpec | None, GitIgnoreSpec | None]:
    """(the patterns that match any path, those that match directories only: `…/`)."""
    usable = [p for p in map(_usable, patterns) if p is not None]
    if not usable:
        return None, None
    from pathspec import GitIgnoreSpec

    anything = [p for p in usable if not p.endswith("/")]
    directories = [p for p in usable if p.endswith("/")]
    return (
        GitIgnoreSpec.from_lines(anything) if anything else None,
        GitIgnoreSpec.from_lines(directories) if directories else None,
    )


def normal_path(relative: str) -> str | None:
    """`relative` as a pattern is matched against: `/`-separated, no `.` or empty names;
    None for a path that leaves the working directory (or is the directory itself)."""
    if relative.startswith("/"):
        return None
    parts: list[str] = []
    for part in relative.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
            continue
        parts.append(part)
    return "/".join(parts) or None


class PathPatterns:
    """A set of patterns; a path is covered when any of them matches it or a directory above
    it. Compiled once per distinct tuple of patterns."""

    __slots__ = ("_directories", "_paths", "patterns")

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(dict.fromkeys(patterns))
        self._paths, self._directories = _compiled(self.patterns)

    def __bool__(self) -> bool:
        return self._paths is not None or self._directories is not None

    def __repr__(self) -> str:
        return f"PathPatterns({list(self.patterns)!r})"

    def covers(self, relative: str, *, is_dir: bool = False) -> bool:
        """Whether `relative` (a path inside the working directory; `is_dir` when it names a
        directory, so that `tests/` covers the directory itself) is covered."""
        path = normal_path(relative)
        if path is None:
            return False
        folded = path.casefold()
        if self._paths is not None and (
            self._paths.match_file(folded) or (is_dir and self._paths.match_file(folded + "/"))
        ):
            return True
        if self._directories is None:
            return False
        # a `…/` pattern matches directories only: the path itself when it is one, else the
        # directory it is in (pathspec covers what lies under a matched directory)
        directory = folded if is_dir else folded.rpartition("/")[0]
        return bool(directory) and self._directories.match_file(directory + "/")


def covers(patterns: Iterable[str], relative: str, *, is_dir: bool = False) -> bool:
    """Whether any of `patterns` covers `relative`: the one glob rule every path property
    and the fence use."""
    return PathPatterns(patterns).covers(relative, is_dir=is_dir)


def covering(patterns: Iterable[str], relative: str, *, is_dir: bool = False) -> str | None:
    """The first of `patterns` that covers `relative`, as `covers` reads it, or None: what a
    refusal names and lint (T032) quotes."""
    return next((p for p in patterns if covers((p,), relative, is_dir=is_dir)), None)


def naming(path: str) -> str:
    """The pattern that names the one workdir file `path` and no other, as the run's advice
    spells it (`add :writable: …`): a name without a `/` of its own matches at any depth
    (gitignore's rule: `expected.txt` covers `tests/expected.txt` too), so it is anchored
    (`/expected.txt`); a path with one is anchored already (adversary-17 F14)."""
    return path if "/" in path.strip("/") else "/" + path.lstrip("/")
