"""Lint of a task's acceptance properties, read from the compiled spec: protected inputs
(T014), contracts and evidence (T015–T019), the judge (J001–J006) and gates (G001–G004).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from groundskeeper.diagnostics import Diagnostic
from groundskeeper.path_patterns import covers, pattern_problem
from groundskeeper.plan.contract_syntax import SHAPES, Contract, suite_args
from groundskeeper.plan.expected import compared_by
from groundskeeper.plan.properties import GATE_KINDS, command_matches
from groundskeeper.plan.spec import PlanSpec, TaskSpec

if TYPE_CHECKING:
    pass


def protection_diagnostics(spec: PlanSpec) -> Iterator[Diagnostic]:
    """T014: a check compares against a file that exists and that its worker can read, so
    it could copy the expectation instead of meeting it (a run protects such a file from
    change on its own, unless `:writable:` frees it); F001: a path pattern naming nothing
    inside the workdir; F003: a hidden `:judge-files:` path."""
    yield from _pattern_diagnostics(spec)
    yield from _hidden_judge_files(spec)
    if spec.plan.path is None:
        return
    base = spec.plan.path.parent
    for task in spec:
        check = task.check
        if check is None:
            continue
        for name in compared_by(check.language, check.text):
            if not (base / name).is_file() or covers(task.hide, name):
                continue
            message = (
                f"check compares against `{name}`, a file the worker can read — it could copy"
                f" it; hide it with `:hide: {name}` on the task (or `#+HIDE: {name}` for the"
                " file)"
            )
            if covers(task.writable, name) and not covers(task.protect, name):
                message += "; `:writable:` lets the worker rewrite it, too"
            yield Diagnostic("warning", task.heading.title, message, check.line, "T014")


def _hidden_judge_files(spec: PlanSpec) -> Iterator[Diagnostic]:
    """F003: a `:judge-files:` path a hidden pattern covers: the judge never sees it."""
    hide = tuple(dict.fromkeys(p for task in spec for p in task.hide))
    if not hide:
        return
    for task in spec:
        for path in task.judge_files:
            if covers(hide, path):
                line = task.heading.property_lines.get("judge-files", task.heading.line)
                message = (
                    f":judge-files: `{path}` is hidden (`:hide:`); the judge never sees a hidden"
                    " input, so it is left out"
                )
                yield Diagnostic("warning", task.heading.title, message, line, "F003")


def _pattern_diagnostics(spec: PlanSpec) -> Iterator[Diagnostic]:
    """F001: a path pattern that can name nothing inside the workdir (`..`, `~`, `!…`), said
    once per pattern, where it is first inherited or written."""
    told: set[tuple[str, str]] = set()
    for task in spec:
        for name, patterns in (
            ("protect", task.protect),
            ("hide", task.hide),
            ("writable", task.writable),
        ):
            for pattern in patterns:
                problem = pattern_problem(pattern)
                if problem is None or (name, pattern) in told:
                    continue
                told.add((name, pattern))
                line = task.heading.property_lines.get(name, task.heading.line)
                message = f":{name}: path pattern {problem}"
                yield Diagnostic("error", task.heading.title, message, line, "F001")


# Commands that print what they are given: a pattern that lets one of them through lets a
# worker make its own evidence (`echo`, or `cat` of a file it wrote).
_SELF_MADE = ("echo x", "printf x", "cat x", "head x", "tail x", "sed p x", "true", ":")


def _self_made(pattern: str) -> str | None:
    return next((c.split()[0] for c in _SELF_MADE if command_matches(pattern, c)), None)


def contract_diagnostics(spec: PlanSpec) -> Iterator[Diagnostic]:
    """T015: a `:contract:` line that cannot be read (unknown type, wrong arity, a bad format
    name); T016: a contract's schema that does not exist; T017: an `:evidence:` line that
    cannot be read; T018: a `ran` or `output-of` pattern that a command printing its own
    arguments matches; T019: a `pytest` suite with no held-out test."""
    plan = spec.plan
    base = plan.path.parent if plan.path is not None else None
    for task in spec:
        heading = task.heading
        if task.contracts or task.contract_problems:
            for problem in task.contract_problems:
                line = problem.line or heading.line
                yield Diagnostic("error", heading.title, problem.message, line, "T015")
            for contract in task.contracts:
                loose = _self_made(contract.args[0]) if contract.kind == "ran" else None
                if loose is not None:
                    message = (
                        f"contract `{contract.text}`: the pattern lets `{loose}` count; name"
                        " the command that must have run (e.g. `ran 'pytest *'`)"
                    )
                    yield Diagnostic("warning", heading.title, message, contract.line, "T018")
                if contract.kind == "pytest" and not contract.soft:
                    yield from _readable_suite(task, contract)
                for schema in SHAPES[contract.kind].schemas(contract.args):
                    if base is not None and not (base / schema).is_file():
                        message = (
                            f"contract `{contract.text}`: its schema `{schema}` does not exist"
                            " (paths are relative to the plan's folder)"
                        )
                        yield Diagnostic("error", heading.title, message, contract.line, "T016")
        if task.evidence or task.evidence_problems:
            line = heading.property_lines.get("evidence", heading.line)
            for message in task.evidence_problems:
                yield Diagnostic("error", heading.title, f":evidence: {message}", line, "T017")
            for field in task.evidence:
                loose = _self_made(field.pattern) if field.pattern else None
                if loose is not None:
                    message = (
                        f":evidence: `{field.spec}`: the pattern lets `{loose}` print the quote,"
                        " so the worker could make its own evidence; name the command that"
                        " reads the work"
                    )
                    yield Diagnostic("warning", heading.title, message, line, "T018")


def _readable_suite(task: TaskSpec, contract: Contract) -> Iterator[Diagnostic]:
    """T019 (info): a `pytest` suite none of whose tests is hidden. The worker reads every
    input the tests give, and code that special-cases them passes (ImpossibleBench's and
    EvilGenie's agents did); held-out tests catch that."""
    try:
        path = suite_args(contract.args)[0]
    except ValueError:
        return  # T015 says so
    if any(_in_suite(pattern, path) for pattern in task.hide):
        return
    message = (
        f"contract `{contract.text}`: the worker can read every test it runs, so code that"
        " special-cases their inputs passes; hold some out with `:hide: PATH` (a test file"
        f" under {path.rstrip('/')}/: the contract still runs it, the worker never sees it)"
    )
    yield Diagnostic("info", task.title, message, contract.line or task.heading.line, "T019")


def _in_suite(pattern: str, suite: str) -> bool:
    """Whether a hidden pattern can cover a file of the suite at `suite` (read from its text:
    a pattern with no `/` before its end, or starting with `**`, matches at any depth)."""
    pattern = pattern.lstrip("/")
    if "/" not in pattern.rstrip("/") or pattern.startswith("**") or suite == ".":
        return True
    return pattern.rstrip("/") == suite or pattern.startswith(suite.rstrip("/") + "/")


def judge_diagnostics(spec: PlanSpec) -> Iterator[Diagnostic]:
    """J001: a `:judge:` on a task without an acceptance check (a judge only adds a failure
    to a passing check, never stands in for one); J002: an empty `:judge:`; J005: a `:judge:`
    on a parent task (only leaves have a worker to judge); J003: a
    `:judge-files:` path that is absolute or uses `..`; J004: `:judge-files:` without a
    `:judge:` (nothing would read them); J006: a `:judge:` without `:judge-files:` (the judge
    then sees only what the worker chose to write with `write_file`)."""
    for task in spec:
        heading, criteria = task.heading, task.judge
        line = heading.property_lines.get("judge", heading.line)
        if criteria is not None and not criteria.strip():
            message = ":judge: is empty; state the criteria in plain words (`:judge: …`)"
            yield Diagnostic("error", heading.title, message, line, "J002")
        elif criteria is not None and heading.child_tasks:
            message = (
                ":judge: on a parent task: the judge reviews one worker's work after its check;"
                " put :judge: on the child tasks that do the work"
            )
            yield Diagnostic("error", heading.title, message, line, "J005")
        elif criteria is not None and heading.check is None:
            message = (
                ":judge: on a task without an acceptance check: the judge runs only after a"
                " check passes, never instead of one; add `:done-when:` or a `:check` block"
            )
            yield Diagnostic("error", heading.title, message, line, "J001")
        if not task.judge_files_given:
            if criteria is not None and criteria.strip() and heading.check is not None:
                message = (
                    ":judge: without :judge-files:: the judge sees only the files the worker"
                    " wrote with write_file, which the worker chooses; name the deliverables"
                    " (`:judge-files: PATH …`)"
                )
                if not heading.child_tasks:
                    yield Diagnostic("warning", heading.title, message, line, "J006")
            continue
        files_line = heading.property_lines.get("judge-files", heading.line)
        for problem in task.judge_file_problems:
            yield Diagnostic("error", heading.title, f":judge-files: {problem}", files_line, "J003")
        if criteria is None:
            message = ":judge-files: without :judge:: no judge reads them; add `:judge: …`"
            yield Diagnostic("warning", heading.title, message, files_line, "J004")


def gate_diagnostics(spec: PlanSpec) -> list[Diagnostic]:
    """G001 an unknown gate kind; G002 a `:gate-files:` path that leaves the workdir; G003 a
    gate on a task with subtasks (a gate waits on one worker's work); G004 `:gate-files:`
    without a gate."""
    found: list[Diagnostic] = []
    for spec_task in spec:
        task, raw = spec_task.heading, spec_task.gate
        if raw is not None and raw.strip() not in GATE_KINDS:
            message = f":gate: `{raw.strip()}` is not a gate kind; the one kind is `approval`"
            found.append(Diagnostic("error", task.title, message, task.line, "G001"))
        for path in spec_task.gate_files or ():
            pure = PurePosixPath(path)
            if pure.is_absolute() or ".." in pure.parts:
                message = f":gate-files: `{path}` leaves the workdir; name paths inside it"
                found.append(Diagnostic("error", task.title, message, task.line, "G002"))
        if raw is not None and task.child_tasks:
            message = (
                ":gate: is for a task a worker does; put it on the subtasks that need a"
                " person's approval"
            )
            found.append(Diagnostic("error", task.title, message, task.line, "G003"))
        if raw is None and spec_task.gate_files is not None:
            message = ":gate-files: without `:gate: approval` binds nothing"
            found.append(Diagnostic("warning", task.title, message, task.line, "G004"))
    return found
