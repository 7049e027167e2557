"""Rung 1: does the plan cohere? `validate` and `validate_outline` turn a `Plan` into diagnostics.

It owns the plan rules: W001–W004 (data flow inside `:workflow:` subtrees), W005–W007 (a
`js` block marked `:validate workflow`, judged by `sandbox.script_validation` in the
zero-tool QuickJS sandbox), T001–T014 (tasks and their acceptance checks), T015–T020
(contracts and evidence), J001–J006 (the `:judge:` and `:judge-files:` properties), G001–G004
(gates), I001–I003 (invariants and `:contexts:`, from `plan.invariants`) and O001–O008 (where
the text and org's reading of it part ways, as `plan.org` noted while reading). Task
properties come from the compiled spec (`plan.spec`), never from the heading. It runs nothing
natively: checks are judged with the sandbox's own parser and command registry, the very
ones the runtime uses.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

from groundskeeper.diagnostics import Diagnostic
from groundskeeper.plan.invariants import invariant_diagnostics
from groundskeeper.plan.lint_checks import Finding, judge_check, negated_file
from groundskeeper.plan.lint_names import property_name_diagnostics
from groundskeeper.plan.lint_properties import (
    contract_diagnostics,
    gate_diagnostics,
    judge_diagnostics,
    protection_diagnostics,
)
from groundskeeper.plan.lint_workflows import COMPONENT, script_diagnostics, workflow_diagnostics
from groundskeeper.plan.org import DEFAULT_TODO_LINE, Heading, Plan, ReadingNote
from groundskeeper.plan.spec import PlanSpec, TaskSpec, compile_plan

if TYPE_CHECKING:
    pass

__all__ = ["validate", "validate_outline"]


def validate(plan: Plan) -> list[Diagnostic]:
    """Every rule but T001, as diagnostics in document order (an empty list: the plan coheres)."""
    enabled = gc.isenabled()
    gc.disable()  # the rules allocate many short-lived, acyclic objects; collections only cost
    try:
        spec = compile_plan(plan)
        found = [
            *_reading_diagnostics(plan),
            *_task_diagnostics(spec),
            *workflow_diagnostics(plan),
            *script_diagnostics(plan),
            *protection_diagnostics(spec),
            *contract_diagnostics(spec),
            *judge_diagnostics(spec),
            *invariant_diagnostics(plan),
            *gate_diagnostics(spec),
            *property_name_diagnostics(plan),
        ]
        if not plan.tasks() and not any(COMPONENT in h.tags for h in plan.walk()):
            message = "the plan has neither tasks nor workflow components: nothing to run"
            found.append(Diagnostic("warning", "outline", message, None, "T013"))
    finally:
        if enabled:
            gc.enable()
    return _in_document_order(found)


def validate_outline(plan: Plan) -> list[Diagnostic]:
    """`validate` plus T001, the author loop's rule: at least one task in an active state."""
    found = validate(plan)
    active = set(plan.active_states)
    if not any(task.keyword in active for task in plan.tasks()):
        states = ", ".join(plan.active_states) or "none declared"
        message = f"outline has no heading in an active task state ({states})"
        found = [d for d in found if d.code != "T013"]  # the error says it for an outline
        found.insert(0, Diagnostic("error", "outline", message, None, "T001"))
    return found


def _in_document_order(found: list[Diagnostic]) -> list[Diagnostic]:
    # stable: several findings on one line keep the order the rules were written in
    return sorted(found, key=lambda d: 0 if d.line is None else d.line)


# --- org's reading ----------------------------------------------------------------------------

_SHOWN_LINES = 10
_RUN_STATES = ("NEXT", "FAILED", "PARTIAL")  # ours, unknown to org without a #+TODO: line


def _reading_diagnostics(plan: Plan) -> Iterator[Diagnostic]:
    for note in plan.notes:
        yield _note_diagnostic(note)
    if not plan.declares_keywords:
        for heading in plan.walk():
            word = heading.title.split(None, 1)[:1]
            if heading.keyword is None and word and word[0] in _RUN_STATES:
                message = (
                    f"`{word[0]}` is not a TODO keyword here: the plan has no #+TODO: line, so"
                    f" org (and groundskeeper) read a plain heading titled `{heading.title}`;"
                    f" add `#+TODO: {DEFAULT_TODO_LINE}` at the top"
                )
                yield Diagnostic("warning", heading.title, message, heading.line, "O006")
    yield from _commented_subtrees(plan)
    yield from _setup_files(plan)


_SETUPFILE = re.compile(r"[ \t]*#\+(?:SETUPFILE|INCLUDE):", re.IGNORECASE)


def _setup_files(plan: Plan) -> Iterator[Diagnostic]:
    """O009: a `#+SETUPFILE:` or `#+INCLUDE:` line, which org reads another file through
    (its `#+TODO:` keywords, its headings) and groundskeeper does not: a task whose keyword
    only that file declares would be a plain heading, never run, and a parent could roll up
    DONE without it (adversary-28b O1). An error, never a silent difference."""
    for number, line in enumerate(plan.text.splitlines(), start=1):
        if _SETUPFILE.match(line):
            word = line.strip().split(":", 1)[0]
            message = (
                f"`{word}:` is not read: org takes keywords and headings from that file, and"
                " groundskeeper reads this file alone, so its tasks could go unrun; copy what"
                " it declares (its `#+TODO:` line, its headings) into the plan"
            )
            yield Diagnostic("error", "plan", message, number, "O009")


def _note_diagnostic(note: ReadingNote) -> Diagnostic:
    line = note.line
    if note.kind == "mixed-line-endings":
        crlf = note.text.split(", ")
        shown = ", ".join(crlf[:_SHOWN_LINES]) + (", …" if len(crlf) > _SHOWN_LINES else "")
        message = (
            f"mixed line endings: line(s) {shown} end in CRLF, the others in LF; Emacs reads"
            " such a file as Unix text, a stray CR ending those lines. Save it with one kind"
        )
        return Diagnostic("error", "plan", message, line, "O001")
    if note.kind == "headline-in-block":
        message = (
            f"this `*` line at column 0 is a headline to org and ends the `#+begin_{note.text}`"
            f" block of line {note.other}, which is then no block at all; inside a block,"
            " escape it as `,*`"
        )
        return Diagnostic("error", "block", message, line, "O002")
    if note.kind == "unterminated-block":
        if note.is_check:
            message = (
                "check block has no `#+end_src` before the next headline: org reads it as"
                " text, so the task would have no check; close it with `#+end_src`"
            )
            return Diagnostic("error", "block", message, line, "O003")
        message = (
            f"`#+begin_{note.text}` has no `#+end_{note.text}` before the next headline: org"
            " reads it as plain text"
        )
        return Diagnostic("warning", "block", message, line, "O004")
    if note.kind == "unread-property":
        message = (
            f"`:{note.text}:` is in drawer-like text (line {note.other}) that is not the"
            " heading's property drawer, so org and groundskeeper do not read it; a property"
            " drawer counts only directly after the headline (or its planning line)"
        )
        return Diagnostic("warning", "property", message, line, "O005")
    if note.kind == "keyword-without-title":
        message = (
            f"`{note.text}` with no title: org's parser (and groundskeeper) read a plain"
            f" heading titled `{note.text}`, while org's agenda reads a task; give it a title"
        )
    elif note.kind == "priority-without-space":
        message = (
            f"`{note.text}` with no space after it: read as a priority cookie (as org's parser"
            " does; other org commands read it as part of the title); add a space"
        )
    else:
        message = (
            f"`{note.text}` starts with COMMENT: org's parser comments the heading out (its"
            " title the rest of the word), other org commands do not; groundskeeper follows"
            " the parser. Put a space after COMMENT, or reword the title"
        )
    return Diagnostic("warning", "headline", message, line, "O007")


def _commented_subtrees(plan: Plan) -> Iterator[Diagnostic]:
    stack = [(root, False) for root in reversed(plan.roots)]
    while stack:
        heading, inside = stack.pop()
        if heading.commented and not inside:
            skipped = [h for h in _subtree(heading) if h.keyword is not None]
            if skipped:
                message = (
                    f"COMMENT subtree: {len(skipped)} task(s) skipped, as org skips them"
                    " (not run, not written)"
                )
                yield Diagnostic("info", heading.title, message, heading.line, "O008")
        stack.extend((child, heading.commented) for child in reversed(heading.children))


def _subtree(heading: Heading) -> Iterator[Heading]:
    stack = [heading]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


# --- tasks and checks --------------------------------------------------------------------------


def _task_diagnostics(spec: PlanSpec) -> Iterator[Diagnostic]:
    plan = spec.plan
    active = set(plan.active_states)
    first_line: dict[str, int] = {}
    judged: dict[tuple[str, str], list[Finding]] = {}
    for heading in plan.walk():
        if heading.ordered and not heading.child_tasks:
            message = ":ORDERED: on a heading with no child tasks"
            yield Diagnostic("warning", heading.title, message, heading.line, "T008")
        if not heading.is_task:
            continue
        task_id = heading.task_id
        wrong = spec.of(heading).max_attempts_problem
        if wrong is not None:
            yield Diagnostic("error", heading.title, wrong, heading.line, "T011")
        seen = first_line.setdefault(task_id, heading.line)
        if seen != heading.line:
            message = f"duplicate task id `{task_id}` (also at line {seen})"
            yield Diagnostic("error", heading.title, message, heading.line, "T007")
        check = heading.check
        yield from _unrun_blocks(heading)
        if check is None:
            checked = spec.of(heading).checked  # a `pytest` contract is a check
            if heading.keyword in active and not heading.child_tasks and not checked:
                message = "task has no acceptance check: DONE will rest on the worker's word"
                yield Diagnostic("warning", heading.title, message, heading.line, "T002")
            continue
        key = (check.language, check.text)
        findings = judged.get(key)
        if findings is None:
            # the same check text on many tasks is judged once
            findings = judged[key] = judge_check(check)
        for level, code, message, offset in findings:
            if code == "T029" and _kept(spec.of(heading), negated_file(check)):
                continue  # the worker can neither empty nor remove it
            line = check.line if offset is None else check.line + offset
            yield Diagnostic(level, heading.title, message, line, code)
        yield from _chosen_by_a_listing(spec.of(heading), check.line)


def _chosen_by_a_listing(task: TaskSpec, line: int) -> Iterator[Diagnostic]:
    """T033: the check chooses the file it reads by listing a directory the worker may write
    (`K=$(ls keys | head -n 1)`): a file the worker adds there can become the answer key.
    The run refuses a pass that read such a file (`plan.listed.listed_directories`)."""
    from groundskeeper.plan.listed import listed_directories

    for directory in listed_directories(task):
        if _kept(task, f"{directory}/") or _kept(task, f"{directory}/*"):
            continue
        message = (
            f"the check chooses which file to read by listing `{directory}/`, which the worker"
            f" may write: a file it adds there that sorts first becomes what the check reads;"
            f" name the file (`{directory}/NAME`), or `:protect: {directory}/`"
        )
        yield Diagnostic("warning", task.heading.title, message, line, "T033")


def _kept(task: TaskSpec, file: str | None) -> bool:
    """Whether the task's worker can neither change nor remove `file`: protected (and not
    made writable) or hidden."""
    from groundskeeper.path_patterns import covers

    if file is None:
        return False
    protected = covers(task.protect, file) and not covers(task.writable, file)
    return protected or covers(task.hide, file)


def _unrun_blocks(heading: Heading) -> Iterator[Diagnostic]:
    """T023: a `:check` block that never runs — a second one (only the first is the task's
    check), or any under a `:done-when:` (which comes first)."""
    blocks = [b for b in heading.blocks if b.is_check]
    check = heading.check
    for block in blocks:
        if check is not None and check.source == "block" and check.line == block.line:
            continue
        why = (
            "the task's `:done-when:` is its check"
            if check is not None and check.source == "done-when"
            else f"only the first `:check` block (line {blocks[0].line}) is the task's check"
        )
        message = (
            f"this `:check` block never runs: {why}; merge its lines into the one check, or"
            " drop `:check` from its header"
        )
        yield Diagnostic("error", heading.title, message, block.line, "T023")


# (level, code, message, line offset from the check's line or None for the check's line)
