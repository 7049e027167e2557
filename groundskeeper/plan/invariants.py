"""Invariants: what must hold for all of a plan's work (`#+INVARIANT:`) and for its named
contexts (`#+CONTEXT: NAME: text`), chosen per task by `:contexts:`.

It owns reading them, which ones a task sees, how a worker is told them (a section of its
system prompt) and the lint rules I001–I003. The runner renders and seals them; nothing here
checks that work keeps them (that stays the checks', contracts' and judge's business).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

from groundskeeper.fastclass import fastclass
from groundskeeper.plan.org import Heading, Plan

if TYPE_CHECKING:
    from groundskeeper.diagnostics import Diagnostic

__all__ = [
    "Invariant",
    "PlanInvariants",
    "invariant_diagnostics",
    "read_invariants",
    "render_invariants",
]

_KEYWORD = re.compile(r"[ \t]*#\+(INVARIANT|CONTEXT):[ \t]*(.*?)[ \t]*\Z", re.IGNORECASE)
_CONTEXT = re.compile(r"([A-Za-z][A-Za-z0-9_-]*)[ \t]*:[ \t]*(.*)\Z")
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*\Z")
_BEGIN = re.compile(r"[ \t]*#\+begin_(\S+)", re.IGNORECASE)
_SEPARATOR = re.compile(r"[\s,]+")
# whether a plan says anything this module reads: most do not, and lint reads large plans
_MENTIONED = re.compile(r"^[ \t]*#\+(?:INVARIANT|CONTEXT):", re.IGNORECASE | re.MULTILINE)
_SELECTS = re.compile(r"^[ \t]*:contexts:", re.IGNORECASE | re.MULTILINE)


@fastclass(frozen=True, slots=True)
class Invariant:
    """One invariant as the plan states it: plan-level (`context` None) or a context's."""

    context: str | None
    text: str
    line: int

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()

    def to_json(self) -> dict[str, object]:
        """What the ledger seals of it (the text itself is in the sealed plan)."""
        return {"context": self.context, "line": self.line, "sha256": self.sha256}


@fastclass(frozen=True, slots=True)
class _Problem:
    line: int
    code: str
    message: str


@fastclass(frozen=True, slots=True)
class PlanInvariants:
    """A plan's invariants: the plan-level ones, and each named context's, in file order."""

    plan_level: tuple[Invariant, ...]
    contexts: Mapping[str, tuple[Invariant, ...]]
    problems: tuple[_Problem, ...] = ()

    def selected(self, names: Sequence[str] | None) -> tuple[Invariant, ...]:
        """The plan-level invariants, then those of `names` (None: every context), in the
        order the plan states them; a name the plan does not define adds nothing (lint I001
        refuses such a plan before any run)."""
        wanted = set(self.contexts) if names is None else set(names)
        chosen = [i for name, found in self.contexts.items() if name in wanted for i in found]
        return self.plan_level + tuple(sorted(chosen, key=lambda i: i.line))

    def for_tasks(self, plan: Plan) -> dict[Heading, tuple[Invariant, ...]]:
        """Every task's invariants, by its own or nearest ancestor's `:contexts:`."""
        if not self.plan_level and not self.contexts:
            return {}
        return {h: self.selected(names) for h, (names, _) in _contexts_by_heading(plan).items()}


def read_invariants(plan: Plan) -> PlanInvariants:
    """The `#+INVARIANT:` and `#+CONTEXT:` lines before the first headline, as org reads
    in-buffer settings there; such a line further down is read by nothing (lint I003)."""
    if _MENTIONED.search(plan.text) is None:
        return PlanInvariants((), {})
    plan_level: list[Invariant] = []
    contexts: dict[str, list[Invariant]] = {}
    problems: list[_Problem] = []
    block: str | None = None
    headline_seen = False
    for number, line in enumerate(plan.lines, start=1):
        if block is not None:
            if line.strip(" \t").lower() == "#+end_" + block:
                block = None
            continue
        if line.startswith("*") and re.match(r"\*+ ", line):
            headline_seen = True
            continue
        begin = _BEGIN.match(line)
        if begin is not None:
            block = begin.group(1).lower()
            continue
        match = _KEYWORD.match(line)
        if match is None:
            continue
        keyword, value = match.group(1).upper(), match.group(2)
        if headline_seen:
            problems.append(_Problem(number, "I003", (
                f"`#+{keyword}:` after the first headline is read by nothing; move it above"
                " the first headline"
            )))  # fmt: skip
            continue
        if keyword == "INVARIANT":
            if not value:
                problems.append(_Problem(number, "I002", "`#+INVARIANT:` states nothing"))
            else:
                plan_level.append(Invariant(None, value, number))
            continue
        context = _CONTEXT.match(value)
        if context is None or not context.group(2).strip():
            problems.append(_Problem(number, "I002", (
                f"`#+CONTEXT: {value}` is not `NAME: invariant text` (a name of letters,"
                " digits, `_` and `-`, a colon, then what must hold)"
            )))  # fmt: skip
            continue
        name, text = context.group(1), context.group(2).strip()
        contexts.setdefault(name, []).append(Invariant(name, text, number))
    return PlanInvariants(
        tuple(plan_level), {k: tuple(v) for k, v in contexts.items()}, tuple(problems)
    )


def _contexts_by_heading(
    plan: Plan,
) -> dict[Heading, tuple[tuple[str, ...] | None, Heading | None]]:
    """Each task's selected context names (None: all) and the heading whose `:contexts:`
    chose them (the task itself or its nearest ancestor with one; None when none has)."""
    found: dict[Heading, tuple[tuple[str, ...] | None, Heading | None]] = {}

    def visit(heading: Heading, inherited: tuple[tuple[str, ...] | None, Heading | None]) -> None:
        raw = heading.get_property("contexts")
        own = inherited if raw is None else (tuple(_names(raw)), heading)
        if heading.is_task:
            found[heading] = own
        for child in heading.children:
            visit(child, own)

    for root in plan.roots:
        visit(root, (None, None))
    return found


def _names(raw: str) -> list[str]:
    return [name for name in _SEPARATOR.split(raw.strip()) if name]


def invariant_diagnostics(plan: Plan) -> Iterator[Diagnostic]:
    """I001: a `:contexts:` name the plan does not define; I002: a malformed `#+INVARIANT:`
    or `#+CONTEXT:` line; I003: one after the first headline, where nothing reads it."""
    from groundskeeper.diagnostics import Diagnostic  # lint's: a hook's cold start skips it

    invariants = read_invariants(plan)
    if not invariants.problems and _SELECTS.search(plan.text) is None:
        return
    for problem in invariants.problems:
        yield Diagnostic("error", "outline", problem.message, problem.line, problem.code)
    known = sorted(invariants.contexts)
    said: set[Heading] = set()
    for _, source in _contexts_by_heading(plan).values():
        if source is None or source in said:
            continue
        said.add(source)
        raw = source.get_property("contexts") or ""
        line = source.property_lines.get("contexts", source.line)
        for name in _names(raw):
            if name in invariants.contexts:
                continue
            defined = ", ".join(known) if known else "none (no `#+CONTEXT:` line)"
            shape = "" if _NAME.match(name) else " (not even a context name)"
            message = (
                f":contexts: names `{name}`{shape}, which the plan does not define; its"
                f" contexts: {defined}. Add `#+CONTEXT: {name}: …` above the first headline or"
                " correct the name"
            )
            yield Diagnostic("error", source.title, message, line, "I001")


def render_invariants(invariants: Sequence[Invariant]) -> str:
    """The worker prompt's invariants section: plan-level ones, then each context's."""
    if not invariants:
        return "The plan states none."
    lines = [
        "These hold for all work in this plan: nothing you do may break them, whatever else"
        " the task says."
    ]
    plan_level = [i for i in invariants if i.context is None]
    lines.extend(f"- {i.text}" for i in plan_level)
    seen: list[str] = []
    for invariant in invariants:
        if invariant.context is not None and invariant.context not in seen:
            seen.append(invariant.context)
    for name in seen:
        lines.append(f"\nIn the context `{name}`:")
        lines.extend(f"- {i.text}" for i in invariants if i.context == name)
    return "\n".join(lines)
