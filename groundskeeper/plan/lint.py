"""Rung 1: does the plan cohere? `validate` and `validate_outline` turn a `Plan` into diagnostics.

It owns the plan rules: W001–W004 (data flow inside `:workflow:` subtrees), W005–W007 (a
`js` block marked `:validate workflow`, judged by `sandbox.script_validation` in the
zero-tool QuickJS sandbox), T001–T014 (tasks and their acceptance checks), T015–T018
(contracts and evidence), J001–J006 (the `:judge:` and `:judge-files:` properties), G001–G004
(gates), I001–I003 (invariants and `:contexts:`, from `plan.invariants`) and O001–O008 (where
the text and org's reading of it part ways, as `plan.org` noted while reading). Task
properties come from the compiled spec (`plan.spec`), never from the heading. It runs nothing
natively: checks are judged with the sandbox's own parser and command registry, the very
ones the runtime uses.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, TypeGuard

from groundskeeper.diagnostics import Diagnostic, Level
from groundskeeper.plan.contract_syntax import SHAPES
from groundskeeper.plan.invariants import invariant_diagnostics
from groundskeeper.plan.org import DEFAULT_TODO_LINE, Check, Heading, Plan, ReadingNote
from groundskeeper.plan.properties import GATE_KINDS, command_matches, covers
from groundskeeper.plan.spec import PlanSpec, compile_plan

if TYPE_CHECKING:
    from groundskeeper.sandbox.script_validation import ScriptIssue
    from groundskeeper.sandbox.syntax import AndOr, Pipeline, Script, SimpleCommand, Word

__all__ = ["validate", "validate_outline"]

_WORKFLOW = "workflow"
_COMPONENT = "component"
_CHECK_LANGUAGE = "sh"
_SHOWN_CHECK = 80  # characters of a check quoted back in a message


def validate(plan: Plan) -> list[Diagnostic]:
    """Every rule but T001, as diagnostics in document order (an empty list: the plan coheres)."""
    enabled = gc.isenabled()
    gc.disable()  # the rules allocate many short-lived, acyclic objects; collections only cost
    try:
        spec = compile_plan(plan)
        found = [
            *_reading_diagnostics(plan),
            *_task_diagnostics(spec),
            *_workflow_diagnostics(plan),
            *_script_diagnostics(plan),
            *_protection_diagnostics(spec),
            *_contract_diagnostics(spec),
            *_judge_diagnostics(spec),
            *invariant_diagnostics(plan),
            *_gate_diagnostics(spec),
        ]
        if not plan.tasks() and not any(_COMPONENT in h.tags for h in plan.walk()):
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
    judged: dict[tuple[str, str], list[_Finding]] = {}
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
        if check is None:
            if heading.keyword in active and not heading.child_tasks:
                message = "task has no acceptance check: DONE will rest on the worker's word"
                yield Diagnostic("warning", heading.title, message, heading.line, "T002")
            continue
        key = (check.language, check.text)
        findings = judged.get(key)
        if findings is None:
            # the same check text on many tasks is judged once
            findings = judged[key] = _judge_check(check)
        for level, code, message, offset in findings:
            line = check.line if offset is None else check.line + offset
            yield Diagnostic(level, heading.title, message, line, code)


# (level, code, message, line offset from the check's line or None for the check's line)
_Finding = tuple[Level, str, str, int | None]


def _judge_check(check: Check) -> list[_Finding]:
    if check.language != _CHECK_LANGUAGE:
        shown = check.language or "(none)"
        return [("error", "T006", f"check language `{shown}` has no sandboxed interpreter", None)]
    if not check.text.strip():
        return [("error", "T003", "check does not parse: the check is empty", None)]

    from groundskeeper.sandbox import COMMANDS, ShellSyntaxError, command_names, parse
    from groundskeeper.sandbox.registry import closest_command

    try:
        script = parse(check.text)
    except ShellSyntaxError as exc:
        # a block's text starts on the line after `#+begin_src`; a property is one line
        offset = exc.line if check.source == "block" else None
        message = f"check does not parse: {exc.message} (column {exc.column})"
        return [("error", "T003", message, offset)]
    findings: list[_Finding] = []
    for name in dict.fromkeys(command_names(script)):
        if name not in COMMANDS:
            message = f"check uses `{name}`, which the sandbox does not have"
            closest = closest_command(name)
            if closest is not None:
                message += f"; did you mean `{closest}`?"
            findings.append(("error", "T004", message, None))
    for name, option, advice in _unsupported_options(script):
        message = f"check uses `{name} {option}`, which the sandbox does not support; {advice}"
        findings.append(("error", "T012", message, None))
    can_pass, can_fail, exits = _verdicts(script)
    shown = _shown(check.text)
    if exits:
        message = (
            f"an `exit` ends the check before its success is confirmed, so that path always"
            f" fails: `{shown}`; end the check with the command that must succeed"
        )
        findings.append(("error", "T009", message, None))
    elif not can_pass:
        findings.append(("error", "T009", f"check can never pass: `{shown}`", None))
    if not can_fail:
        findings.append(("error", "T005", f"check cannot fail: `{shown}`", None))
    weak = _weakness(script)
    if weak is not None and can_fail:
        findings.append(("warning", "T010", f"check is weak: `{shown}` {weak}", None))
    return findings


def _shown(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    joined = "; ".join(lines)
    return joined if len(joined) <= _SHOWN_CHECK else joined[: _SHOWN_CHECK - 1] + "…"


# What a check can do is decided on the parsed script with the runtime's semantics: one script
# under errexit (`set -e`), an `exit` ending it before its success is confirmed. Each list
# (`a && b || c`) ends one of four ways: T (status 0), F (failed, but the script goes on: a
# failure before its final pipeline, or a negated final pipeline), E (its final pipeline
# failed: errexit stops the script) or X (an `exit` ran).
_OK = frozenset({"T"})
_FAIL = frozenset({"F"})
_EITHER = frozenset({"T", "F"})
_EXIT = frozenset({"X"})


def _verdicts(script: Script) -> tuple[bool, bool, bool]:
    """(can the check pass, can it fail, can an `exit` be reached)."""
    can_pass, can_fail, exits = True, False, False
    items = script.items
    for index, item in enumerate(items):
        ends = _and_or_ends(item)
        last = index == len(items) - 1
        exits = exits or "X" in ends
        if ends & {"X", "E"} or (last and "F" in ends):
            can_fail = True
        if not ends - {"X", "E"} or (last and "T" not in ends):
            can_pass = False
    return can_pass, can_fail, exits


def _and_or_ends(item: AndOr) -> frozenset[str]:
    ended: set[str] = set()
    running = _pipeline_outcomes(item.first)  # outcomes of the pipeline that ran last
    for operator, pipeline in item.rest:
        following: set[str] = set()
        for outcome in running:
            if outcome == "X":
                ended.add("X")
            elif (operator == "&&") == (outcome == "T"):
                following |= _pipeline_outcomes(pipeline)
            else:
                ended.add(outcome)  # the list ends before its final pipeline: no errexit
        running = frozenset(following)
    final = item.rest[-1][1] if item.rest else item.first
    for outcome in running:
        ended.add("E" if outcome == "F" and not final.negated else outcome)
    return frozenset(ended)


def _pipeline_outcomes(pipeline: Pipeline) -> frozenset[str]:
    # a pipeline's status is its last command's (no pipefail); `exit` ends the script only
    # when it is the whole pipeline (in a pipeline it ends its own stage)
    commands = pipeline.commands
    last = commands[-1] if commands else None
    if not _is_simple(last):
        outcomes = _EITHER  # a compound command (if, loops, groups, [[ ]]) may end either way
    elif len(commands) == 1 and _is_exit(last):
        return _EXIT
    else:
        outcomes = _command_outcomes(last)
    if not pipeline.negated:
        return outcomes
    return frozenset({"F" if o == "T" else "T" for o in outcomes})


def _is_exit(command: SimpleCommand) -> bool:
    return bool(command.words) and command.words[0].literal() == "exit"


def _command_outcomes(command: SimpleCommand) -> frozenset[str]:
    if command.redirects:
        return _EITHER  # a redirection can fail on its own (missing file, read-only workdir)
    if not command.words:
        # bare assignments succeed unless a `$(…)` in them can fail
        return _EITHER if any(_has_substitution(a.value) for a in command.assignments) else _OK
    name = command.words[0].literal()
    if name in ("true", ":", "echo"):
        return _OK
    if name == "false" or name == "exit":
        return _FAIL  # `exit` inside a pipeline: its stage's status
    return _EITHER


# Options a check may write that the sandbox's commands do not have, with what to write.
_UNSUPPORTED_OPTIONS: dict[str, dict[str, str]] = {
    "grep": {"-P": "use -E (POSIX extended regular expressions)"},
    "sed": {
        "-i": "a check runs read-only, so `sed -i` fails there; compare `sed … FILE` with"
        " what you expect"
    },
    "find": {
        "-execdir": "use `-exec CMD {} \\;` (names are relative to the starting point)",
        "-ok": "use `-exec CMD {} \\;` (nobody is there to answer)",
        "-okdir": "use `-exec CMD {} \\;` (nobody is there to answer)",
        "-delete": "a check only reads",
    },
}


def _unsupported_options(script: Script) -> Iterator[tuple[str, str, str]]:
    for command in _simple_commands(script):
        name = command.words[0].literal() if command.words else None
        table = _UNSUPPORTED_OPTIONS.get(name or "")
        if not table:
            continue
        for word in command.words[1:]:
            literal = word.literal() or ""
            flags = [literal] if literal.startswith("--") or name == "find" else []
            if literal.startswith("-") and not literal.startswith("--") and name != "find":
                flags = [f"-{c}" for c in literal[1:]]  # `-qP` is `-q -P`
            for flag in flags:
                if flag in table:
                    yield name or "", flag, table[flag]


def _simple_commands(script: Script) -> Iterator[SimpleCommand]:
    from groundskeeper.sandbox.syntax import simple_commands

    return simple_commands(script)


def _weakness(script: Script) -> str | None:
    """What a check made only of existence tests would accept, or None when it tests more."""
    accepts: list[str] = []
    for item in script.items:
        if item.rest or item.first.negated or len(item.first.commands) != 1:
            return None
        command = item.first.commands[0]
        found = _weak_command(command) if _is_simple(command) else None
        if found is None:
            return None
        accepts.append(found)
    if not accepts:
        return None
    return (
        f"— it {accepts[0]}; test what the work must contain instead, e.g."
        " `grep -q 'expected text' FILE` or `test $(wc -l < FILE) -ge 3`"
    )


_WEAK_TESTS = {
    "-e": "passes for an empty placeholder file",
    "-f": "passes for an empty placeholder file",
    "-d": "passes for an empty directory",
    "-s": "passes for any non-empty file, whatever it holds",
}


def _weak_command(command: SimpleCommand) -> str | None:
    words = [w.literal() for w in command.words]
    if command.redirects or not words or None in words:
        return None
    name, *args = [w for w in words if w is not None]
    if name == "[" and args[-1:] == ["]"]:
        name, args = "test", args[:-1]
    if name == "test" and len(args) == 2 and args[0] in _WEAK_TESTS:
        return _WEAK_TESTS[args[0]]
    if name == "grep" and "." in args and all(a in ("-q", ".", "-s") or not a.startswith("-")
                                              for a in args):  # fmt: skip
        pattern_at = args.index(".")
        if len([a for a in args[pattern_at + 1 :] if not a.startswith("-")]) <= 1:
            return "passes for any file with one character in it"
    return None


def _is_simple(command: object) -> TypeGuard[SimpleCommand]:
    # every simple command has `assignments` and no compound does (the sandbox's tree is
    # imported only when a check is judged, and this runs once a pipeline)
    return hasattr(command, "assignments")


def _has_substitution(word: Word) -> bool:
    from groundskeeper.sandbox.syntax import CommandSub

    return any(isinstance(part, CommandSub) for part in word.parts)


# --- protected inputs --------------------------------------------------------------------------

# Commands whose file operands a check compares against (the expected side of a comparison).
_COMPARERS = {"diff", "cmp", "comm"}
_FILE_AFTER = {
    "sha256sum": "-c",
    "sha512sum": "-c",
    "sha1sum": "-c",
    "md5sum": "-c",
    "grep": "-f",
}


def _protection_diagnostics(spec: PlanSpec) -> Iterator[Diagnostic]:
    """T014: a check compares against a file that exists and is not protected, so a worker
    could rewrite the expectation instead of meeting it."""
    if spec.plan.path is None:
        return
    from groundskeeper.sandbox import ShellSyntaxError, parse

    base = spec.plan.path.parent
    for task in spec:
        heading, patterns, check = task.heading, task.protect, task.check
        if check is None or check.language != _CHECK_LANGUAGE:
            continue
        try:
            script = parse(check.text)
        except ShellSyntaxError:
            continue  # T003 says so
        for name in dict.fromkeys(_compared_files(script)):
            if (base / name).is_file() and not covers(patterns, name):
                message = (
                    f"check compares against `{name}`, which workers could rewrite; protect it"
                    f" with `:protect: {name}` on the task (or `#+PROTECT: {name}` for the file)"
                )
                yield Diagnostic("warning", heading.title, message, check.line, "T014")


# Commands that print what they are given: a pattern that lets one of them through lets a
# worker make its own evidence (`echo`, or `cat` of a file it wrote).
_SELF_MADE = ("echo x", "printf x", "cat x", "head x", "tail x", "sed p x", "true", ":")


def _self_made(pattern: str) -> str | None:
    return next((c.split()[0] for c in _SELF_MADE if command_matches(pattern, c)), None)


def _contract_diagnostics(spec: PlanSpec) -> Iterator[Diagnostic]:
    """T015: a `:contract:` line that cannot be read (unknown type, wrong arity, a bad format
    name); T016: a contract's schema that does not exist; T017: an `:evidence:` line that
    cannot be read; T018: a `ran` or `output-of` pattern that a command printing its own
    arguments matches."""
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


def _judge_diagnostics(spec: PlanSpec) -> Iterator[Diagnostic]:
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


def _gate_diagnostics(spec: PlanSpec) -> list[Diagnostic]:
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


def _compared_files(script: Script) -> Iterator[str]:
    from groundskeeper.sandbox.syntax import CommandSub

    for command in _simple_commands(script):
        words = [w.literal() for w in command.words]
        name = words[0] if words else None
        if name in _COMPARERS:
            yield from (w for w in words[1:] if w and not w.startswith("-"))
        flag = _FILE_AFTER.get(name or "")
        if flag is not None:
            for index, given in enumerate(words[1:-1], start=1):
                # `-f FILE`, or the flag last in a cluster (`-qf FILE`)
                if given and given.startswith("-") and not given.startswith("--"):
                    after = words[index + 1]
                    if given.endswith(flag[1]) and after:
                        yield after
        if name in ("test", "["):  # test "$(cat expected.txt)" = …
            for word in command.words[1:]:
                for part in word.parts:
                    if isinstance(part, CommandSub):
                        for inner in _simple_commands(part.script):
                            got = [w.literal() for w in inner.words]
                            if got and got[0] == "cat":
                                yield from (g for g in got[1:] if g and not g.startswith("-"))


# --- workflows ---------------------------------------------------------------------------------


@dataclass
class _Workflow:
    heading: Heading
    components: list[Heading] = field(default_factory=list)


def _workflows(plan: Plan) -> list[_Workflow]:
    """Each `:workflow:` heading with its components (own tag), nearest workflow owning each."""
    found: list[_Workflow] = []
    stack: list[tuple[Heading, _Workflow | None]] = [(h, None) for h in reversed(plan.roots)]
    while stack:
        heading, owner = stack.pop()
        if owner is not None and _COMPONENT in heading.tags:
            owner.components.append(heading)
        inner = owner
        if _WORKFLOW in heading.tags:
            inner = _Workflow(heading)
            found.append(inner)
        stack.extend((child, inner) for child in reversed(heading.children))
    return found


def _declared(component: Heading) -> tuple[list[str], list[str]]:
    """A component's `:in` and `:out` values over its source blocks, first mention first."""
    inputs: dict[str, None] = {}
    outputs: dict[str, None] = {}
    for block in component.blocks:
        if block.language:
            inputs.update(dict.fromkeys(block.inputs))
            outputs.update(dict.fromkeys(block.outputs))
    return list(inputs), list(outputs)


def _workflow_diagnostics(plan: Plan) -> Iterator[Diagnostic]:
    for workflow in _workflows(plan):
        yield from _workflow_rules(workflow)


def _workflow_rules(workflow: _Workflow) -> Iterator[Diagnostic]:
    components = workflow.components
    producers: dict[str, list[int]] = {}
    declared_flow = [_declared(c) for c in components]
    inputs = [flow[0] for flow in declared_flow]
    outputs = [flow[1] for flow in declared_flow]
    for index, declared in enumerate(outputs):
        for value in declared:
            producers.setdefault(value, []).append(index)

    names: dict[str, Heading] = {}
    for index, component in enumerate(components):
        title = component.title
        if title in names:
            message = f"duplicate component name `{title}` in workflow `{workflow.heading.title}`"
            yield Diagnostic("error", title, message, component.line, "W004")
        names.setdefault(title, component)
        if not any(block.language for block in component.blocks):
            message = "component has no source block / language"
            yield Diagnostic("error", title, message, component.line, "W001")
        for value in inputs[index]:
            if value not in producers:
                message = f"input `{value}` has no upstream producer"
                yield Diagnostic("error", title, message, component.line, "W002")

    successors: list[list[int]] = [[] for _ in components]
    for consumer, declared in enumerate(inputs):
        for value in declared:
            for producer in producers.get(value, ()):
                successors[producer].append(consumer)
    for cycle in _cycles(successors):
        start = components[cycle[0]]
        path = " → ".join(components[i].title for i in (*cycle, cycle[0]))
        yield Diagnostic(
            "error", start.title, f"components form a cycle: {path}", start.line, "W003"
        )


_VALIDATE = ":validate"
_VALIDATORS = ("workflow",)
_SCRIPT_LANGUAGES = ("js", "javascript")


def _script_diagnostics(plan: Plan) -> Iterator[Diagnostic]:
    """W005 (error) and W006 (warning): what script validation finds in a block marked
    `:validate workflow`, on the plan line it points at; W007: a `:validate` lint cannot honour
    (another validator, or a block that is not JavaScript), so nothing goes unchecked quietly."""
    for heading in plan.walk():
        for block in heading.blocks:
            args = block.header_args
            if _VALIDATE not in args:
                continue
            at = args.index(_VALIDATE)
            wanted = args[at + 1] if at + 1 < len(args) else ""
            title = heading.title
            if wanted not in _VALIDATORS:
                shown = f"`{wanted}`" if wanted and not wanted.startswith(":") else "nothing"
                message = f"`:validate` names {shown}; the validator lint knows is `workflow`"
                yield Diagnostic("error", title, message, block.line, "W007")
            elif block.language.lower() not in _SCRIPT_LANGUAGES:
                shown = block.language or "no language"
                message = f"`:validate workflow` is for `js` blocks; this block is {shown}"
                yield Diagnostic("error", title, message, block.line, "W007")
            else:
                yield from _validated_script(title, block.body, block.line)


def _validated_script(title: str, body: str, begin_line: int) -> Iterator[Diagnostic]:
    from groundskeeper.sandbox import SandboxError
    from groundskeeper.sandbox.script_validation import validate_script

    try:
        verdict = validate_script(body)
    except SandboxError as error:  # fail closed: a script nobody could judge is not valid
        message = f"workflow script could not be validated: {error}"
        yield Diagnostic("error", title, message, begin_line, "W005")
        return
    findings: list[tuple[Level, str, ScriptIssue]] = [
        *(("error", "W005", issue) for issue in verdict.errors),
        *(("warning", "W006", issue) for issue in verdict.warnings),
    ]
    for level, code, issue in findings:
        # the script's line 1 is the line after `#+begin_src`
        line = begin_line + issue.line if issue.line is not None else begin_line
        message = f"workflow script: {issue.message} ({issue.code})"
        yield Diagnostic(level, title, message, line, code)


def _cycles(successors: list[list[int]]) -> list[list[int]]:
    """One shortest cycle per strongly connected component that has one (Tarjan, iterative)."""
    count = len(successors)
    index_of = [-1] * count
    low = [0] * count
    on_stack = [False] * count
    stack: list[int] = []
    groups: list[list[int]] = []
    counter = 0
    for root in range(count):
        if index_of[root] != -1:
            continue
        work: list[tuple[int, int]] = [(root, 0)]
        while work:
            node, edge = work.pop()
            if edge == 0:
                index_of[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack[node] = True
            if edge < len(successors[node]):
                work.append((node, edge + 1))
                nxt = successors[node][edge]
                if index_of[nxt] == -1:
                    work.append((nxt, 0))
                elif on_stack[nxt]:
                    low[node] = min(low[node], index_of[nxt])
                continue
            if low[node] == index_of[node]:
                group: list[int] = []
                while True:
                    member = stack.pop()
                    on_stack[member] = False
                    group.append(member)
                    if member == node:
                        break
                groups.append(group)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])

    cycles: list[list[int]] = []
    for group in groups:
        start = min(group)
        members = set(group)
        if len(group) == 1 and start not in successors[start]:
            continue
        cycles.append(_shortest_cycle(start, members, successors))
    return sorted(cycles, key=lambda cycle: cycle[0])


def _shortest_cycle(start: int, members: set[int], successors: list[list[int]]) -> list[int]:
    came_from: dict[int, int] = {}
    frontier = [start]
    while frontier:
        following: list[int] = []
        for node in frontier:
            for nxt in successors[node]:
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return path[::-1]
                if nxt in members and nxt not in came_from:
                    came_from[nxt] = node
                    following.append(nxt)
        frontier = following
    return [start]  # unreachable: every member of a cycle group reaches its start
