"""Lint of property names (P001, P002): a property spelt close to one of groundskeeper's own
names is almost always that name misspelt, and then the protection, check or contract the
author meant does not exist. Org reads any name, so nothing else would say so.
"""

from __future__ import annotations

from collections.abc import Iterator

from groundskeeper.diagnostics import Diagnostic
from groundskeeper.plan.org import Heading, Plan

# The task properties groundskeeper reads (a trailing `+` continues one: `:contract+:`).
OWN_PROPERTIES = (
    "id",
    "done-when",
    "protect",
    "hide",
    "writable",
    "contract",
    "evidence",
    "judge",
    "judge-files",
    "gate",
    "gate-files",
    "dock",
    "max-attempts",
    "timeout",
    "contexts",
)

# Names org itself gives a meaning (its special and inherited properties, and what its
# exporters and agenda read): never reported, however close to one of ours.
_ORG_PROPERTIES = frozenset(
    {
        "custom_id", "category", "ordered", "effort", "cookie_data", "logging", "archive",
        "visibility", "columns", "noblocking", "style", "alltags", "blocked", "clocksum",
        "clocksum_t", "closed", "deadline", "file", "item", "priority", "scheduled", "tags",
        "timestamp", "timestamp_ia", "todo", "location", "summary", "unnumbered", "created",
        "header-args", "export_file_name", "export_title", "export_options", "log_into_drawer",
        "appt_warntime", "attach_dir", "dir", "data", "date", "name", "note", "notes", "type",
        "owner", "state", "status", "url", "link", "source", "author", "email", "ref",
    }
)  # fmt: skip

# The names that carry a task's check: a misspelt one on a task with no other check is an
# error (the task would run on the worker's word), not a warning.
_CHECK_NAMES = frozenset({"done-when"})


def _distance(a: str, b: str, limit: int) -> int:
    """The optimal-string-alignment edit distance (a transposition counts once), or
    `limit + 1` as soon as it is certain to exceed `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] | None = None
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cost = 0 if ca == cb else 1
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + cost)
            if before is not None and i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        before, row = row, current
    return row[-1]


def _allowed(known: str) -> int:
    # short names are close to too many words: `:gate:` is one letter from `:date:`
    return 0 if len(known) <= 3 else 1 if len(known) <= 5 else 2


def intended_property(name: str) -> str | None:
    """The own property `name` is a misspelling of, or None (an own name, org's, or far from
    all of them). Compared case-insensitively, as org compares names; `_` reads as `-`."""
    lowered = name.lower().rstrip("+")
    if lowered in OWN_PROPERTIES or lowered in _ORG_PROPERTIES:
        return None
    spelt = lowered.replace("_", "-")
    if spelt in OWN_PROPERTIES:
        return spelt
    best: tuple[int, str] | None = None
    for known in OWN_PROPERTIES:
        limit = _allowed(known)
        if limit == 0:
            continue
        found = _distance(spelt, known, limit)
        if found <= limit and (best is None or found < best[0]):
            best = (found, known)
    return None if best is None else best[1]


def property_name_diagnostics(plan: Plan) -> Iterator[Diagnostic]:
    """P001 (warning): a property name close to one of groundskeeper's own; P002 (error): the
    same for the check property on a task that has no check, which would be DONE on the
    worker's word."""
    for heading in plan.walk():
        for name, line in _property_names(heading):
            intended = intended_property(name)
            if intended is None:
                continue
            if intended in _CHECK_NAMES and heading.check is None:
                message = (
                    f"`:{name}:` is not a property groundskeeper reads; did you mean"
                    f" `:{intended}:`? As written the task has no acceptance check, and DONE"
                    " would rest on the worker's word"
                )
                yield Diagnostic("error", heading.title, message, line, "P002")
                continue
            message = (
                f"`:{name}:` is not a property groundskeeper reads, so it does nothing; did"
                f" you mean `:{intended}:`?"
            )
            yield Diagnostic("warning", heading.title, message, line, "P001")


def _property_names(heading: Heading) -> Iterator[tuple[str, int]]:
    for name in heading.properties:
        yield name, heading.property_lines.get(name.lower(), heading.line)
