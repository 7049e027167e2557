"""Lint of one acceptance check's script (T003–T012): whether it can fail and can pass, and
what it leaves unsupported or weak (which files it compares against is `plan.compared`'s).
It judges the text with the sandbox's own parser and option table; it never runs it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, TypeGuard

from groundskeeper.plan.org import CHECK_LANGUAGE as CHECK_LANGUAGE  # read here by others
from groundskeeper.plan.org import Check, unsupported_check_headers, unsupported_check_language

if TYPE_CHECKING:
    from groundskeeper.diagnostics import Level
    from groundskeeper.sandbox.syntax import AndOr, Pipeline, Script, SimpleCommand, Word
    from groundskeeper.sandbox.tree import Command, Redirect

_SHOWN_CHECK = 80  # characters of a check quoted back in a message


# (level, code, message, line offset from the check's line or None for the check's line)
Finding = tuple["Level", str, str, int | None]  # `diagnostics` is lint's: a hook skips it


# Shells and `source`: the sandbox's interpreter runs the check's own text only, never a
# script file (`sh run.sh` is 127 there, as any unknown name).
_SCRIPT_RUNNERS = frozenset({"sh", "bash", "dash", "ksh", "zsh", "source", "."})


def judge_check(check: Check) -> list[Finding]:
    unsupported = unsupported_check_language(check.language)
    if unsupported is not None:
        return [("error", "T006", unsupported, None)]
    ignored = unsupported_check_headers(check.ignored)
    if ignored is not None:
        return [("error", "T038", ignored, None)]
    if not check.text.strip():
        return [("error", "T003", "check does not parse: the check is empty", None)]

    from groundskeeper.sandbox import COMMANDS, ShellSyntaxError, command_names, parse
    from groundskeeper.sandbox.registry import ABSENT_ADVICE, closest_command

    try:
        script = parse(check.text)
    except ShellSyntaxError as exc:
        # a block's text starts on the line after `#+begin_src`; a property is one line
        offset = exc.line if check.source == "block" else None
        message = f"check does not parse: {exc.message} (column {exc.column})"
        return [("error", "T003", message, offset)]
    findings: list[Finding] = []
    for name in dict.fromkeys(command_names(script)):
        if name not in COMMANDS:
            message = f"check uses `{name}`, which the sandbox does not have"
            closest = closest_command(name)
            if name in _SCRIPT_RUNNERS:
                message += (
                    ": the sandbox runs no shell but the check's own, so no script file;"
                    " write the commands in the check itself (or run a Python program:"
                    " `python3 FILE`)"
                )
            elif name in ABSENT_ADVICE:
                message += f"; {ABSENT_ADVICE[name]}"
            elif closest is not None:
                message += f"; did you mean `{closest}`?"
            elif "/" in name:
                message += (
                    ": a check cannot run a workdir file as a command; run a Python program"
                    " with `python3 FILE`"
                )
            findings.append(("error", "T004", message, None))
    findings.extend(_unlaunchable(script))
    for name, option, advice in dict.fromkeys(_unsupported_options(script)):
        message = f"check uses `{name} {option}`, which the sandbox does not support; {advice}"
        findings.append(("error", "T012", message, None))
    for what, instead in dict.fromkeys(_awk_refusals(script)):
        message = f"check uses `awk` with {what}, which the sandbox does not support; {instead}"
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
    elif not _sets_pipefail(script):
        findings.extend(_dropped_statuses(script, check))
    weak = _weakness(script)
    if weak is not None and can_fail:
        findings.append(("warning", "T010", f"check is weak: `{shown}` {weak}", None))
    findings.extend(_guess_lists(script, check))
    findings.extend(_negated_on_a_file(script, check))
    findings.extend(_source_spelling(script, check))
    findings.extend(_looks_strict(script, check))
    findings.extend(_text_as_pattern(script, check))
    findings.extend(_text_as_program(script, check))
    return findings


def _line(check: Check, offset: int) -> int | None:
    """A finding's line offset from the check's line, for a node at `offset` in its text."""
    return check.text.count("\n", 0, offset) + 1 if check.source == "block" else None


def _looks_strict(script: Script, check: Check) -> Iterator[Finding]:
    """Checks that look strict but are not: T021, a failure errexit ignores on the left of
    `&&` in a line that is not the last; T026, a negated command there, never a failure;
    T022, `find -exec … \\;`, whose status ignores the command's; T024, a write (a
    redirection to a file, `tee FILE`), which fails in a read-only check."""
    from groundskeeper.sandbox.syntax import SimpleCommand

    for item in script.items[:-1]:
        ops = [op for op, _ in item.rest]
        first = item.first.commands[0]
        if not ops and item.first.negated:
            negated = _shown(check.text[first.offset :].split("\n", 1)[0].strip())
            message = (
                f"`! {negated}` can never fail the check: under errexit a negated command's"
                " status is ignored on a line that is not the check's last; write"
                f" `! {negated} || exit 1`, which fails at this line"
            )
            yield ("error", "T026", message, _line(check, first.offset))
        if "&&" in ops and "||" not in ops:
            left = _command_text(check.text, first.offset, item)
            message = (
                f"under errexit a failure of `{left}` is ignored: it is on the left of `&&` on"
                " a line that is not the check's last, so the check goes on past it; put each"
                " command on a line of its own (each must then succeed), or make this the last"
                " line"
            )
            yield ("warning", "T021", message, _line(check, first.offset))
    for command in _simple_commands(script):
        words = [w.literal() for w in command.words]
        if words and words[0] == "find" and "-exec" in words:
            after = words[words.index("-exec") :]
            if ";" in after and "+" not in after:
                message = (
                    "`find … -exec CMD {} \\;` exits 0 whatever CMD returns, so the check"
                    " cannot fail on it; write `-exec CMD {} +` or `find … | xargs CMD`, which"
                    " pass CMD's failure on"
                )
                yield ("warning", "T022", message, _line(check, command.offset))
        for redirect in command.redirects if isinstance(command, SimpleCommand) else ():
            target = redirect.target.literal() if redirect.target is not None else None
            if redirect.op in (">", ">>") and target != "/dev/null":
                shown = target if target is not None else "a file"
                message = (
                    f"the check writes `{shown}` (`{redirect.op}`), but a check runs read-only,"
                    " so the write fails; pass the output on with a pipe instead (`cmd | grep"
                    " -q …`), which writes nothing"
                )
                yield ("error", "T024", message, _line(check, redirect.offset))
        if words and words[0] == "tee" and any(w and not w.startswith("-") for w in words[1:]):
            message = (
                "the check writes with `tee`, but a check runs read-only, so the write fails;"
                " drop `tee` and pass the output on with a pipe, which writes nothing"
            )
            yield ("error", "T024", message, _line(check, command.offset))


def _command_text(text: str, offset: int, item: AndOr) -> str:
    """The text of the `&&` list's first command, as written (up to its `&&`)."""
    end = text.find("&&", offset)
    return _shown(text[offset : end if end >= 0 else len(text)].strip())


def _shown(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    joined = "; ".join(lines)
    return joined if len(joined) <= _SHOWN_CHECK else joined[: _SHOWN_CHECK - 1] + "…"


# What a check can do is decided on the parsed script with the runtime's semantics: one script
# under errexit (`set -e`), an `exit` ending it before its success is confirmed. Each list
# (`a && b || c`) ends one of four ways: T (status 0), F (failed, but the script goes on: a
# failure before its final pipeline, or a negated final pipeline), E (its final pipeline
# failed, or an `exit N` with a literal N ≠ 0 ran: the script stops failing) or X (an `exit`
# that could pass ran: `exit 0`, a bare `exit`, `exit $VAR`).
_OK = frozenset({"T"})
_FAIL = frozenset({"F"})
_EITHER = frozenset({"T", "F"})
_EXIT = frozenset({"X"})
_STOP = frozenset({"E"})  # `exit N`, N ≠ 0: the check fails there


#: whether the check turns `pipefail` on (`set -o pipefail`, `set -euo pipefail`): then a
#: pipeline fails when any of its stages does, not only its last
_PIPEFAIL: ContextVar[bool] = ContextVar("pipefail", default=False)


def _sets_pipefail(script: Script) -> bool:
    """Whether any `set` in the check names pipefail (the sandbox never turns it off)."""
    for command in _simple_commands(script):
        words = [w.literal() for w in command.words]
        if words and words[0] == "set" and "pipefail" in words[1:]:
            return True
    return False


def _verdicts(script: Script) -> tuple[bool, bool, bool]:
    """(can the check pass, can it fail, can an `exit` be reached)."""
    token = _PIPEFAIL.set(_sets_pipefail(script))
    try:
        return _verdicts_under(script)
    finally:
        _PIPEFAIL.reset(token)


def _verdicts_under(script: Script) -> tuple[bool, bool, bool]:
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


def _and_or_ends(item: AndOr, errexit: bool = True) -> frozenset[str]:
    ended: set[str] = set()
    # outcomes of the pipeline that ran last; errexit is off inside a pipeline that is not
    # the list's last (`(X) || true`: X's failure is the subshell's status, not a stop)
    pipelines = (item.first, *(p for _, p in item.rest))
    running = _pipeline_outcomes(item.first, errexit and len(pipelines) == 1)
    previous = item.first
    for index, (operator, pipeline) in enumerate(item.rest):
        following: set[str] = set()
        deciding = errexit and index == len(item.rest) - 1
        for outcome in running:
            if outcome in ("X", "E"):  # an `exit` ran: nothing after it in the list runs
                ended.add(outcome)
            elif (operator == "&&") == (outcome == "T"):
                if operator == "||" and _complements(previous, pipeline):
                    following |= _OK  # `P || ! P`, `test -z W || test -n W`: P failed
                else:
                    following |= _pipeline_outcomes(pipeline, deciding)
            else:
                ended.add(outcome)  # the list ends before its final pipeline: no errexit
        running = frozenset(following)
        previous = pipeline
    final = item.rest[-1][1] if item.rest else item.first
    for outcome in running:
        stops = errexit and outcome == "F" and not final.negated
        ended.add("E" if stops else outcome)
    return frozenset(ended)


def _body_ends(script: Script, errexit: bool = True) -> frozenset[str]:
    """How a nested list (a compound command's body or condition) can end: T or F (its last
    status; F without stopping the script), E (errexit or `exit N` stopped the script) or
    X (an `exit` that could pass). Conditions run without errexit, as in the runtime."""
    ended: set[str] = set()
    items = script.items
    for index, item in enumerate(items):
        ends = _and_or_ends(item, errexit)
        ended |= ends & {"E", "X"}
        going = ends - {"E", "X"}
        if not going:
            return frozenset(ended)
        if index == len(items) - 1:
            ended |= going
    return frozenset(ended) if items else _OK


def _compound_outcomes(command: object, alone: bool, errexit: bool | None = None) -> frozenset[str]:
    """A compound command's outcomes, from what its bodies can do: an `if` without `else`
    (or a `case` no arm matches, or a loop that runs no more) ends with status 0, and a body
    that cannot fail makes a command that cannot fail. `alone`: the whole pipeline, so an
    `exit` inside ends the script; in a longer pipeline it ends only its own stage."""
    from groundskeeper.sandbox.tree import Case, For, Group, If, Loop

    if errexit is None:
        errexit = alone  # a stage of a longer pipeline runs without errexit
    found: set[str] = set()
    if isinstance(command, If):
        reaches_else = True
        for condition, body in command.clauses:
            tested = _body_ends(condition, errexit=False)
            found |= tested & {"E", "X"}
            if "T" in tested:
                found |= _body_ends(body, errexit)
            reaches_else = "F" in tested
            if not reaches_else:
                break
        if reaches_else:
            found |= _body_ends(command.otherwise, errexit) if command.otherwise else _OK
    elif isinstance(command, For):
        found |= _OK | _body_ends(command.body, errexit)  # no words: no iteration, status 0
    elif isinstance(command, Loop):
        tested = _body_ends(command.condition, errexit=False)
        found |= (tested & {"E", "X"}) | _OK | _body_ends(command.body, errexit)
    elif isinstance(command, Case):
        found |= _OK  # no arm matched
        for arm in command.arms:
            found |= _body_ends(arm.body, errexit)
    elif isinstance(command, Group):
        inner = _body_ends(command.body, errexit)
        if command.subshell and "X" in inner:  # `exit` ends the subshell: its status
            inner = (inner - {"X"}) | _EITHER
        if command.subshell and "E" in inner:  # so does a failing `exit N` or errexit
            inner = (inner - {"E"}) | _FAIL
        found |= inner
    else:
        return _EITHER  # [[ … ]], (( … )): either way
    if not _harmless_redirects(getattr(command, "redirects", ())):
        found |= _EITHER  # a redirection can fail on its own
    if not alone and found & {"X", "E"}:
        found = (found - {"X", "E"}) | _EITHER  # the stage ends, with a status
    return frozenset(found)


def _pipeline_outcomes(pipeline: Pipeline, errexit: bool = True) -> frozenset[str]:
    # a pipeline's status is its last command's (no pipefail); `exit` ends the script only
    # when it is the whole pipeline (in a pipeline it ends its own stage); `errexit` False:
    # the pipeline is not its list's last, so errexit is off inside it
    commands = pipeline.commands
    last = commands[-1] if commands else None
    if not _is_simple(last):
        alone = len(commands) == 1
        outcomes = _compound_outcomes(last, alone=alone, errexit=alone and errexit)
    elif len(commands) == 1 and _is_exit(last):
        # `exit N` with a literal N that is not 0 (mod 256) fails the check where it stands;
        # `exit 0`, a bare `exit` (the last status) and `exit $VAR` could end it as a pass
        return _STOP if _failing_status(last) else _EXIT
    else:
        outcomes = _command_outcomes(last)
    if _PIPEFAIL.get() and len(commands) > 1:  # any stage's failure is the pipeline's
        for stage in commands[:-1]:
            ran = (
                _command_outcomes(stage) if _is_simple(stage) else _compound_outcomes(stage, False)
            )
            if ran & {"F", "E"}:
                outcomes = outcomes | {"F"}
    if not pipeline.negated:
        return outcomes
    return frozenset({"F" if o == "T" else "T" if o == "F" else o for o in outcomes})


#: filters that, given no file to read, only pass their standard input on (or count or sort
#: it): the last stage of `grep -q x f | cat` makes a pipeline that cannot fail
_STDIN_FILTERS = frozenset(
    {"cat", "tee", "sort", "uniq", "wc", "head", "tail", "tr", "cut", "rev", "nl", "base64"}
)


def _reads_stdin_only(command: SimpleCommand) -> bool:
    """Whether the filter reads its standard input alone (or `/dev/null`): every word is a
    constant, no operand names a file (`tr`'s are its sets), no check mode (`sort -c`)."""
    from groundskeeper.sandbox.command_options import parse_options

    name = command.words[0].literal()
    words = [w.literal() for w in command.words[1:]]
    if name is None or None in words:
        return False
    if name == "sort" and any(w in ("-c", "-C", "--check") for w in words):
        return False  # `sort -c` fails on unsorted input
    parsed = parse_options(name, words)
    if parsed is None or parsed.refused:
        return False
    if name == "tr":
        return True
    return all(words[i] in ("-", "/dev/null") for i in parsed.operands)


def _is_exit(command: SimpleCommand) -> bool:
    return bool(command.words) and command.words[0].literal() == "exit"


def _failing_status(command: SimpleCommand) -> bool:
    if len(command.words) != 2:
        return False
    status = command.words[1].literal()
    return (
        status is not None
        and re.fullmatch(r"[+-]?[0-9]+", status) is not None
        and (int(status) & 0xFF != 0)
    )


def _command_outcomes(command: SimpleCommand) -> frozenset[str]:
    if not _harmless_redirects(command.redirects):
        return _EITHER  # a redirection can fail on its own (missing file, read-only workdir)
    if not command.words:
        # bare assignments succeed unless a `$(…)` in them can fail
        return _assigned_outcomes(command)
    name = command.words[0].literal()
    if name in ("true", ":", "echo", "continue", "break", "set", "pwd"):
        return _OK
    if name in _STDIN_FILTERS and _reads_stdin_only(command):
        return _OK  # a filter of its standard input alone: nothing there can fail it
    if name == "false" or name == "exit":
        return _FAIL  # `exit` inside a pipeline: its stage's status
    return _constant_outcome(command)


def _assigned_outcomes(command: SimpleCommand) -> frozenset[str]:
    """Bare assignments' outcomes: the status of the last `$(…)` in them (`X=$(grep … ||
    true)` cannot fail), 0 without one."""
    from groundskeeper.sandbox.syntax import CommandSub

    outcomes = _OK
    for assignment in command.assignments:
        for part in assignment.value.parts:
            if isinstance(part, CommandSub):
                ends = _body_ends(part.script, errexit=False)
                outcomes = (ends - {"E", "X"}) | (_FAIL if "E" in ends else frozenset())
                outcomes |= _EITHER if "X" in ends else frozenset()
    return frozenset(outcomes)


def _harmless_redirects(redirects: tuple[Redirect, ...]) -> bool:
    """Whether no redirection can fail: each goes to or comes from `/dev/null`, or copies
    or closes a descriptor (`2>&1`, `>&2`)."""
    for redirect in redirects:
        if redirect.target is None:
            continue  # `>&N`: a copy of a descriptor the check has
        target = redirect.target.literal()
        if target == "/dev/null" or (redirect.op.endswith("&") and target in ("-", "1", "2")):
            continue
        return False
    return True


#: `test` operators on two operands, with the Python test of their (constant) values
_TEST_BINARY: dict[str, Callable[[str, str], bool]] = {
    "=": lambda a, b: a == b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "-eq": lambda a, b: int(a) == int(b),
    "-ne": lambda a, b: int(a) != int(b),
    "-lt": lambda a, b: int(a) < int(b),
    "-le": lambda a, b: int(a) <= int(b),
    "-gt": lambda a, b: int(a) > int(b),
    "-ge": lambda a, b: int(a) >= int(b),
}

#: pairs of `test` operators, one true exactly when the other is false (on strings: an
#: integer test of a word that is not a number is an error, both ways)
_TEST_OPPOSITES = {"-z": "-n", "-n": "-z", "=": "!=", "==": "!=", "!=": "="}


def _constant_outcome(command: SimpleCommand) -> frozenset[str]:
    """The outcome of a command whose words are all constants and that reads nothing the
    worker can change: a `test` of constants, `expr 1`, `seq 3`, `printf ''`, `cd .`, `ls`,
    `python3 -c pass` — the same every run, so on the right of `||` it decides alone.
    Anything else: either way."""
    words = [w.literal() for w in command.words]
    if None in words:
        return _EITHER
    name, *args = [w for w in words if w is not None]
    if name in ("test", "["):
        if name == "[":
            if args[-1:] != ["]"]:
                return _EITHER
            args = args[:-1]
        held = _constant_test(args)
        return _EITHER if held is None else _OK if held else _FAIL
    if name == "expr" and len(args) == 1:
        return _FAIL if args[0] in ("", "0") else _OK
    if name == "seq" and args and all(re.fullmatch(r"-?[0-9]+", a) for a in args):
        return _OK
    if name == "printf" and args and "%" not in args[0].replace("%%", "").replace("%s", ""):
        return _OK
    if name == "cd" and args == ["."]:
        return _OK
    if name == "ls" and all(a == "." or (a.startswith("-") and a != "-") for a in args):
        return _OK  # it lists the working directory, which is there
    if name in _PROGRAMS and len(args) == 2 and args[0] == "-c" and _does_nothing(args[1]):
        return _OK
    return _EITHER


def _constant_test(args: list[str]) -> bool | None:
    """The value of `test ARGS` when every operand is a constant and no file is tested;
    None when it depends on anything else (or is not one of these forms)."""
    negate = False
    if args[:1] == ["!"] and (
        len(args) in (2, 4) or (len(args) == 3 and args[1] not in _TEST_BINARY)
    ):
        negate, args = True, args[1:]
    value: bool | None = None
    if len(args) == 1:
        value = args[0] != ""
    elif len(args) == 2 and args[0] in ("-n", "-z"):
        value = (args[1] != "") == (args[0] == "-n")
    elif len(args) == 3 and args[1] in _TEST_BINARY:
        try:
            value = _TEST_BINARY[args[1]](args[0], args[2])
        except ValueError:
            return None  # `test a -eq 1` is an error, status 2
    return None if value is None else value != negate


def _does_nothing(code: str) -> bool:
    """Whether a `python3 -c` program only passes: `pass`, constants, `print` of constants,
    `import sys`, `sys.exit(0)` — it ends with status 0 whatever the workdir holds."""
    import ast

    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False

    def harmless(node: ast.stmt) -> bool:
        if isinstance(node, ast.Pass):
            return True
        if isinstance(node, ast.Import):
            return all(a.name == "sys" and a.asname is None for a in node.names)
        if not isinstance(node, ast.Expr):
            return False
        value = node.value
        if isinstance(value, ast.Constant):
            return True
        if not isinstance(value, ast.Call) or value.keywords:
            return False
        called = ast.unparse(value.func)
        constants = all(isinstance(a, ast.Constant) for a in value.args)
        if called == "print":
            return constants
        exits = called in ("sys.exit", "exit", "quit")
        return exits and (not value.args or (constants and value.args[0].value in (0, None)))  # type: ignore[attr-defined]

    return all(harmless(statement) for statement in tree.body)


def _complements(first: Pipeline, second: Pipeline) -> bool:
    """Whether `second` succeeds exactly when `first` fails: one `test` with the opposite
    string operator on the same operands (`test -z "$X" || test -n "$X"`). (Not `P || ! P`:
    an error of P, a missing file, fails the check both ways in the sandbox.)"""
    if first.negated or second.negated:
        return False
    one, other = _test_parts(first), _test_parts(second)
    if one is None or other is None or len(one) != len(other):
        return False
    if len(one) == 2:
        (op1, w1), (op2, w2) = one, other
        return _TEST_OPPOSITES.get(str(op1)) == op2 and w1 == w2
    if len(one) == 3:
        return _TEST_OPPOSITES.get(str(one[1])) == other[1] and (one[0], one[2]) == (
            other[0],
            other[2],
        )
    return False


def _test_parts(pipeline: Pipeline) -> tuple[object, ...] | None:
    """A lone `test`/`[ ]` command's operands (operators as text, words as shapes), or None."""
    if len(pipeline.commands) != 1:
        return None
    command = pipeline.commands[0]
    if not _is_simple(command) or not command.words or command.redirects:
        return None
    name = command.words[0].literal()
    words = list(command.words[1:])
    if name == "[":
        if not words or words[-1].literal() != "]":
            return None
        words = words[:-1]
    elif name != "test":
        return None
    operator_at = 0 if len(words) == 2 else 1 if len(words) == 3 else None
    if operator_at is None:
        return None
    return tuple(w.literal() if i == operator_at else _shape(w) for i, w in enumerate(words))


def _shape(node: object) -> object:
    """A node of the parsed script without where it stands (its offsets): two nodes with
    the same shape are the same text, up to spacing."""
    if isinstance(node, tuple):
        return tuple(_shape(n) for n in node)
    names = getattr(type(node), "__match_args__", None)
    if names is None:
        return node
    return (type(node).__name__, *(_shape(getattr(node, n)) for n in names if n != "offset"))


# What to write instead of an option the sandbox's command lacks, where more can be said than
# the options it has (`groundskeeper.sandbox.command_options`, the one table of what each
# command accepts, held equal to box.wasm by its tests).
_ADVICE: dict[str, str] = {
    "grep -P": "use -E (POSIX extended regular expressions)",
    "grep -f": "name each pattern with -e PATTERN",
    "diff -r": "compare the files one by one (`for f in …; do diff out/$f gold/$f; done`)",
    "diff --recursive": "compare the files one by one (`for f in …; do diff out/$f gold/$f; done`)",
    "find -execdir": "use `-exec CMD {} \\;` (names are relative to the starting point)",
    "find -ok": "use `-exec CMD {} \\;` (nobody is there to answer)",
    "find -okdir": "use `-exec CMD {} \\;` (nobody is there to answer)",
    "find -mmin": "compare with a reference file: `find … -newer STAMP`",
    "find -mtime": "compare with a reference file: `find … -newer STAMP`",
}

# Options the sandbox has that a check cannot use: it runs read-only.
_READ_ONLY_OPTIONS: dict[str, dict[str, str]] = {
    "sed": {
        "-i": "a check runs read-only, so `sed -i` fails there; compare `sed … FILE` with"
        " what you expect"
    },
    "find": {"-delete": "a check only reads"},
}


#: `test` operators the sandbox's `test` cannot answer: WASI shows no permission bits,
#: owners or shell state (`box/cmd_test.c`). `-x` is there, but true for directories alone
#: (adv24b F3, F6: `test -x deploy.sh` never passed, `test ! -x config.sh` always did).
_TEST_UNANSWERED = {
    "-x": "WASI shows no permission bits, so the sandbox's `test -x` is true for directories"
    " alone; write `[[ -x FILE ]]`, which the shell answers from the file's own mode",
    **{
        op: "WASI shows no owners, set-id bits or shell state; test what the work holds"
        for op in ("-g", "-u", "-k", "-O", "-G", "-N", "-R", "-v")
    },
}


def _unsupported_options(script: Script) -> Iterator[tuple[str, str, str]]:
    """(command, the option or value as written, what to write instead) for each option a
    check gives a sandbox command that the command does not take, or cannot use in a
    read-only check."""
    from groundskeeper.sandbox.command_options import parse_options, supported_options

    for command in _simple_commands(script):
        name = command.words[0].literal() if command.words else None
        if name is None:
            continue
        words = [w.literal() for w in command.words[1:]]
        parsed = parse_options(name, words)
        if parsed is not None:
            for option, advice in parsed.refused:
                said = advice or _ADVICE.get(f"{name} {option}", "")
                has = f"the sandbox's `{name}` takes {supported_options(name)}"
                yield name, option, f"{said}; {has}" if said else has
        if name in ("test", "["):
            for at, word in enumerate(words):
                before = words[at - 1] if at else None
                if word in _TEST_UNANSWERED and before not in ("=", "==", "!="):
                    yield name, word, _TEST_UNANSWERED[word]
        table = _READ_ONLY_OPTIONS.get(name, {})
        for word in words:
            flags = [word] if word and (word.startswith("--") or name == "find") else []
            if word and word.startswith("-") and not word.startswith("--") and name != "find":
                flags = [f"-{c}" for c in word[1:2]]  # `-i.bak` is `-i`
            for flag in flags:
                if flag in table:
                    yield name, flag, table[flag]


#: What the sandbox's awk refuses as it parses a program (`box/awk_parse.c`, `refuse`): the
#: feature, what to write instead, and how it is spelt once strings, regular expressions
#: and parenthesized groups are read past (adversary-21 F16: lint passed them, and the run
#: failed the honest work with status 2).
_AWK_REFUSED = (
    ("system()", "awk cannot run commands; run them in the check's command line",
     re.compile(r"\bsystem\s*\(")),
    ("getline < FILE", "name the file as an operand and read it with getline or NR==FNR",
     re.compile(r"\bgetline(?:\s+[A-Za-z_]\w*)?\s*<")),
    ("CMD | getline", "awk cannot run commands; pipe the command's output into awk",
     re.compile(r"(?<!\|)\|\s*getline\b")),
    ("print | CMD", "awk cannot run commands; pipe awk's output instead",
     re.compile(r"\bprintf?\b[^;{}\n]*?(?<![|])\|(?![|])")),
    ("output redirection (> FILE, >> FILE)",
     "awk writes to standard output only; redirect the whole command instead",
     re.compile(r"\bprintf?\b[^;{}\n]*?>")),
)  # fmt: skip
_AWK_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_AWK_REGEX = re.compile(r"(^|[(,;~!&|{}\n]|\bif|\bwhile)(\s*)/(?:[^/\\\n]|\\.)+/")
_AWK_GROUP = re.compile(r"\([^()]*\)")


def _awk_refusals(script: Script) -> Iterator[tuple[str, str]]:
    """(feature, what to write instead) for each form an awk program of the check uses that
    the sandbox's awk refuses (its first program operand; `-f FILE` is read at run time)."""
    for command in _simple_commands(script):
        words = [w.literal() for w in command.words]
        if not words or words[0] != "awk":
            continue
        rest = iter(words[1:])
        program = None
        for word in rest:
            if word is None:
                break
            if word in ("-F", "-v"):
                next(rest, None)
                continue
            if word == "-f" or word.startswith("-f"):
                break
            if word.startswith(("-F", "-v")) or word == "--":
                continue
            program = word
            break
        if program is None:
            continue
        text = _AWK_REGEX.sub(r"\1\2//", _AWK_STRING.sub('""', program))
        grouped = text
        while (flat := _AWK_GROUP.sub("()", grouped)) != grouped:
            grouped = flat
        for what, instead, pattern in _AWK_REFUSED:
            target = text if what in ("system()", "getline < FILE") else grouped
            if what == "CMD | getline":
                target = text
            if pattern.search(target):
                yield what, instead


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
    counted = _file_count(command)
    if counted is not None:
        return counted
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


#: How a count of files is compared with a number (`test N -eq 5`): at least, or exactly.
_COUNT_TESTS = frozenset({"-eq", "-ge", "-gt"})


def _file_count(command: SimpleCommand) -> str | None:
    """What `test $(ls DIR/*.csv | wc -l) -eq 5` (or `find … | wc -l`, in `[ … ]`) accepts:
    any files of those names, empty placeholders too (adv24 F7) — or None when the command
    is not such a count."""
    from groundskeeper.sandbox.syntax import CommandSub, Lit

    words = command.words
    name = words[0].literal() if words else None
    if name == "[" and words[-1].literal() == "]":
        words = words[:-1]
    elif name != "test":
        return None
    if command.redirects or len(words) != 4 or words[2].literal() not in _COUNT_TESTS:
        return None
    counted, number = words[1], words[3]
    # the substitution alone, quoted or not (a quote opens with an empty literal)
    parts = [p for p in counted.parts if not (isinstance(p, Lit) and not p.text)]
    if number.literal() in (None, "0") or len(parts) != 1:
        return None  # (no file left: `-eq 0` asks for none, which no placeholder meets)
    (part,) = parts
    if not isinstance(part, CommandSub) or len(part.script.items) != 1:
        return None
    item = part.script.items[0]
    commands = item.first.commands
    if item.rest or len(commands) < 2:
        return None
    first, last = commands[0], commands[-1]
    if not (_is_simple(first) and _is_simple(last)):
        return None
    if not first.words or first.words[0].literal() not in ("ls", "find"):
        return None
    if [w.literal() for w in last.words] != ["wc", "-l"]:
        return None
    return "counts files by their names, so empty placeholder files pass"


def _is_simple(command: object) -> TypeGuard[SimpleCommand]:
    # every simple command has `assignments` and no compound does (the sandbox's tree is
    # imported only when a check is judged, and this runs once a pipeline)
    return hasattr(command, "assignments")


def _has_substitution(word: Word) -> bool:
    from groundskeeper.sandbox.syntax import CommandSub

    return any(isinstance(part, CommandSub) for part in word.parts)


def _unlaunchable(script: Script) -> Iterator[Finding]:
    """T004 for a command the sandbox has but the command starting it cannot start
    (`xargs python3`, `find … -exec python3 {} +`, `env python3 …`): `registry.LAUNCHERS`,
    the table the interpreter refuses by. A name the sandbox lacks is T004 already."""
    from groundskeeper.sandbox.registry import BUILTINS, COMMANDS, launch_refusal
    from groundskeeper.sandbox.tree import launched_commands

    seen: set[tuple[str, str]] = set()
    for launcher, name, _ in launched_commands(script):
        if (launcher, name) in seen or name not in COMMANDS:
            continue
        seen.add((launcher, name))
        if launch_refusal(launcher, name) is None:
            continue
        if launcher == "env":
            why = f"the sandbox's `env` runs no command; write `VAR=value {name} …` instead"
        elif name in BUILTINS:
            why = f"`{name}` is a shell builtin, and only the sandbox's box commands can run there"
        else:
            why = (
                f"`{launcher}` starts only the sandbox's box commands, and `{name}` is not one;"
                f" run `{name}` directly, or once a name in a `for` loop"
            )
        message = f"check runs `{name}` through `{launcher}`, which cannot start it: {why}"
        yield ("error", "T004", message, None)


#: commands that run a program, whose status is its verdict (a test runner, a script): in a
#: pipeline before a filter of their output, that status is dropped without `pipefail`
_PROGRAMS = frozenset({"python3", "python", "micropython"})


def _dropped_statuses(script: Script, check: Check) -> Iterator[Finding]:
    """T005: a pipeline whose status decides (a list's, an `if`'s or a loop's — not one in
    `$(…)`) with a program before its last stage: `python3 -m pytest -q tests | grep -q
    passed` passes when the tests fail, since without `set -o pipefail` a pipeline's status
    is its last stage's."""
    from groundskeeper.plan.programs import compares_its_input

    for pipeline in _deciding_pipelines(script):
        if compares_its_input(pipeline.commands[-1]):
            continue
        for stage in pipeline.commands[:-1]:
            if not _is_simple(stage) or not stage.words:
                continue
            name = stage.words[0].literal()
            if name not in _PROGRAMS:
                continue
            program = _shown(_source(check.text, stage.offset, pipeline))
            if _whole_line_match(pipeline.commands[-1]):
                message = (
                    f"check ignores the status of `{program}`: without `set -o pipefail` a"
                    " pipeline's status is its last stage's, so a run that prints the line the"
                    " check looks for and then fails still passes; add `set -o pipefail` as"
                    " the check's first line"
                )
                yield ("warning", "T041", message, _line(check, stage.offset))
                break
            message = (
                f"check cannot fail on `{program}`: its status is dropped, since without"
                " `set -o pipefail` a pipeline's status is its last stage's, so its failure"
                " passes whenever the stages after it succeed; add `set -o pipefail` as the"
                " check's first line"
            )
            yield ("error", "T005", message, _line(check, stage.offset))
            break


def _whole_line_match(command: object) -> bool:
    """Whether a pipeline's last stage asks its input for one whole line written in the check
    (`grep -qx 'Hi Ann'`, `grep -qxF …`): a program before it can still fail the check by
    printing anything else, so dropping its status is a weakness (T041), not a check that
    cannot fail (adversary-21 F8)."""
    from groundskeeper.sandbox.command_options import parse_options

    if not _is_simple(command) or not command.words or command.words[0].literal() != "grep":
        return False
    words = [w.literal() for w in command.words[1:]]
    parsed = parse_options("grep", words)
    if parsed is None or parsed.refused or None in words:
        return False
    flags = {option for option, _ in parsed.options}
    if not flags & {"-x", "--line-regexp"} or flags & (_GREP_NOT_A_MATCH - {"-x", "--line-regexp"}):
        return False
    patterns = [v for o, v in parsed.options if o == "-e"] or [
        words[i] for i in parsed.operands[:1]
    ]
    files = parsed.operands[0 if any(o == "-e" for o, _ in parsed.options) else 1 :]
    return len(patterns) == 1 and bool(patterns[0]) and not files


def _source(text: str, offset: int, pipeline: Pipeline) -> str:
    """The text of a pipeline's stage at `offset`, up to its `|`."""
    end = text.find("|", offset)
    return text[offset : end if end >= 0 else len(text)].strip()


def _deciding_pipelines(script: Script) -> Iterator[Pipeline]:
    """Every pipeline whose status decides something — a list's, an `if`'s or a loop's, in
    compound commands' bodies too — and none inside a word's `$(…)`."""
    from groundskeeper.sandbox.tree import Case, For, Group, If, Loop

    for item in script.items:
        for pipeline in (item.first, *(p for _, p in item.rest)):
            yield pipeline
            for command in pipeline.commands:
                inner: list[Script] = []
                if isinstance(command, If):
                    inner = [s for clause in command.clauses for s in clause]
                    inner += [command.otherwise] if command.otherwise is not None else []
                elif isinstance(command, Loop):
                    inner = [command.condition, command.body]
                elif isinstance(command, For | Group):
                    inner = [command.body]
                elif isinstance(command, Case):
                    inner = [arm.body for arm in command.arms]
                for body in inner:
                    yield from _deciding_pipelines(body)


def _prohibitions(script: Script) -> set[int]:
    """The ids of the pipelines whose success fails the check — a prohibition, not an
    answer: an `if`'s condition whose branch ends in `exit N` (N not 0) or `false`
    (`if grep -q "$(printf '\\r')" f; then exit 1; fi`), and `A && exit 1`."""
    from groundskeeper.sandbox.tree import If

    def fails(pipeline: Pipeline) -> bool:
        command = pipeline.commands[-1]
        if not _is_simple(command) or not command.words or pipeline.negated:
            return False
        words = [w.literal() for w in command.words]
        if words[0] == "false":
            return True
        return words[0] == "exit" and len(words) == 2 and words[1] not in (None, "0")

    def ends_failing(body: Script) -> bool:
        if not body.items:
            return False
        last = body.items[-1]
        return fails(last.rest[-1][1] if last.rest else last.first)

    found: set[int] = set()
    for pipeline in _deciding_pipelines(script):
        for command in pipeline.commands:
            if isinstance(command, If):
                for condition, body in command.clauses:
                    if ends_failing(body):
                        found.update(id(i.first) for i in condition.items if not i.rest)
    for item in script.items:
        if len(item.rest) == 1 and item.rest[0][0] == "&&" and fails(item.rest[0][1]):
            found.add(id(item.first))
    return found


#: grep options that make it decide on something else than "some line matches"
_GREP_NOT_A_MATCH = frozenset({"-v", "-c", "-l", "-L", "-o", "-m"})
_GREP_WHOLE_LINE = frozenset({"-x", "--line-regexp"})


def _guess_lists(script: Script, check: Check) -> Iterator[Finding]:
    """T010: `grep -q "$(cat KEY)" out.txt`, `grep -qF "$X" out.txt` or `grep -q 4711
    out.txt` whose status decides, without `-x` or a `^…$` pattern: a line holding the
    answer anywhere passes, so an output listing every candidate does. With them, an answer
    the check does not spell (`grep -qxF "$(cat held/code.txt)" out.txt`) is still found on
    one line of a file listing every candidate one per line (adversary-21 F21), unless the
    check counts the file's lines (`wc -l`)."""
    from groundskeeper.sandbox.command_options import parse_options

    forbidding = _prohibitions(script)
    counted = any(
        w.literal() == "wc" for c in _every_command(script) if _is_simple(c) for w in c.words[:1]
    )
    for pipeline in _deciding_pipelines(script):
        command = pipeline.commands[-1]
        if not _is_simple(command) or len(command.words) < 2:
            continue
        if command.words[0].literal() != "grep" or pipeline.negated:
            continue
        if id(pipeline) in forbidding:
            continue  # its match fails the check: no answer to list candidates of
        args = command.words[1:]
        parsed = parse_options("grep", [w.literal() for w in args])
        if parsed is None or parsed.refused:
            continue
        flags = {option for option, _ in parsed.options}
        if flags & _GREP_NOT_A_MATCH:
            continue
        given = [_word_of(args, value) for option, value in parsed.options if option == "-e"]
        patterns: list[Word | None] = given or [args[i] for i in parsed.operands[:1]]
        pattern = patterns[0] if len(patterns) == 1 else None
        if pattern is None:
            continue
        literal = pattern.literal()
        written = _shown(check.text[command.offset :].split("\n", 1)[0].strip())
        files = [args[i].literal() for i in parsed.operands[0 if given else 1 :]]
        if flags & _GREP_WHOLE_LINE or (literal is None and _anchored(pattern)):
            if literal is not None or counted or len(files) != 1 or files[0] is None:
                continue
            message = (
                f"check is weak: `{written}` finds the answer on one line of {files[0]}, so a"
                " file listing every candidate, one per line, passes; compare the whole file:"
                f' `test "$(cat {files[0]})" = "$(cat KEY)"`, or count its lines as well'
                f' (`test "$(wc -l < {files[0]})" -eq 1`)'
            )
            yield ("warning", "T010", message, _line(check, command.offset))
            continue
        guessable = (literal is not None and re.fullmatch(r"[0-9]+", literal) is not None) or (
            literal is None
        )
        if not guessable:
            continue
        message = (
            f"check is weak: `{written}` passes for any line that holds the answer somewhere,"
            " so an output listing every candidate passes; compare the whole output:"
            ' `test "$(cat FILE)" = "$(cat KEY)"`'
        )
        yield ("warning", "T010", message, _line(check, command.offset))


def _text_as_pattern(script: Script, check: Check) -> Iterator[Finding]:
    """T037 (adversary-18 F10): the text of a file — a `$(…)`, or a variable assigned
    one — used as a PATTERN: a grep regex without `-F` (`grep -qx "$(cat out.txt)" KEY`),
    the right side of `[[ == ]]`, `!=` or `=~` unquoted (a glob, a regex), a `case` arm's
    pattern unquoted, an awk program or a `-v` variable awk matches with `~`. When that
    text is the work's, `.*` or `*` matches any key, hidden or not; the literal comparison
    is as short. (A `for` variable from a list of words is the author's: not counted.)"""
    names = _text_variables(script)
    for command in _every_command(script):
        how = _pattern_use(command, names)
        if how is None:
            continue
        written = _shown(check.text[command.offset :].split("\n", 1)[0].strip())
        message = (
            f"the text of a file is used as a pattern: `{written}` {how}, so a worker whose"
            " output is `.*` (a regex) or `*` (a glob) matches any key; compare the texts"
            ' literally: `grep -qxF "$(cat out.txt)" KEY`, quote the right side (`[[ "$A" =='
            ' "$B" ]]`, `case … in "$B")`), or `test "$(cat out.txt)" = "$(cat KEY)"`'
        )
        yield ("warning", "T037", message, _line(check, command.offset))


def _text_variables(script: Script) -> frozenset[str]:
    """The variables the check assigns a file's text (`E=$(cat F)`): read as that text."""
    from groundskeeper.sandbox.tree import simple_commands

    return frozenset(
        a.name
        for command in simple_commands(script)
        for a in command.assignments
        if _has_text(a.value, frozenset(), quoted=True)
    )


def _text_as_program(script: Script, check: Check) -> Iterator[Finding]:
    """T040 (adversary-21 F22): the text of a file — a `$(…)`, or a variable assigned one —
    spliced into the program `python3 -c` runs: an output that names one of the program's
    own variables (`k`, the key it read) or is any expression the program then evaluates
    passes. The shell's own `[[ -eq ]]` and `[ … ]` refuse such text at run time; a
    program cannot. Read the file in the program instead."""
    names = _text_variables(script)
    for command in _every_command(script):
        if not _is_simple(command) or not command.words:
            continue
        if command.words[0].literal() not in ("python3", "python"):
            continue
        args = command.words[1:]
        code = next((args[i + 1] for i, w in enumerate(args[:-1]) if w.literal() == "-c"), None)
        if code is None or not _has_text(code, names, quoted=True):
            continue
        written = _shown(check.text[command.offset :].split("\n", 1)[0].strip())
        message = (
            f"the text of a file is put into the program `{written}` runs, which reads it as"
            " code: an output that is one of the program's own names (the key it read) or"
            " any expression passes; read the file in the program instead:"
            " `float(open('out.txt').read())`"
        )
        yield ("warning", "T040", message, _line(check, command.offset))


def _pattern_use(command: Command, names: frozenset[str]) -> str | None:
    """How `command` uses a file's text as a pattern (`_text_as_pattern`), or None."""
    from groundskeeper.sandbox.tree import Case, Conditional

    if isinstance(command, Conditional):
        for op, right in _cond_binaries(command.expr):
            if op in ("==", "!=", "=", "=~") and _has_text(right, names, quoted=False):
                kind = "a regex" if op == "=~" else "a glob"
                return f"matches with `{op}` against an unquoted right side, which is {kind}"
        return None
    if isinstance(command, Case):
        for arm in command.arms:
            if any(_has_text(p, names, quoted=False) for p in arm.patterns):
                return "matches with a `case` pattern unquoted, which is a glob"
        return None
    if not _is_simple(command) or not command.words:
        return None
    name = command.words[0].literal()
    args = command.words[1:]
    if name == "grep":
        return _grep_pattern_use(args, names)
    if name == "awk":
        return _awk_pattern_use(args, names)
    return None


def _grep_pattern_use(args: tuple[Word, ...], names: frozenset[str]) -> str | None:
    from groundskeeper.sandbox.command_options import parse_options

    parsed = parse_options("grep", [w.literal() for w in args])
    if parsed is None or any(option == "-F" for option, _ in parsed.options):
        return None
    given = [_word_of(args, value) for option, value in parsed.options if option == "-e"]
    patterns = given or [args[i] for i in parsed.operands[:1]]
    if any(p is not None and _has_text(p, names, quoted=True) for p in patterns):
        return "gives grep its pattern, a regex (no `-F`)"
    return None


def _awk_pattern_use(args: tuple[Word, ...], names: frozenset[str]) -> str | None:
    variables: list[str] = []
    index = 0
    while index < len(args):
        written = args[index].literal()
        if written in ("-v", "-F") and index + 1 < len(args):
            if written == "-v":
                variables += _awk_variable(args[index + 1], names)
            index += 2
            continue
        if written is not None and written.startswith("-v") and len(written) > 2:
            index += 1
            continue
        if written is not None and written.startswith("-F") and len(written) > 2:
            index += 1
            continue
        if written is None and args[index].parts and _awk_assignment(args[index]):
            variables += _awk_variable(args[index], names)
            index += 1
            continue
        break
    if index >= len(args):
        return None
    program = args[index]
    if _has_text(program, names, quoted=True):
        return "puts it in awk's program, where it is code and a regex"
    text = program.literal() or ""
    for variable in variables:
        if re.search(rf"~\s*{re.escape(variable)}\b|match\([^,]*,\s*{re.escape(variable)}\b", text):
            return f"gives awk the variable `{variable}`, which the program matches as a regex"
    return None


def _awk_assignment(word: Word) -> bool:
    from groundskeeper.sandbox.syntax import Lit

    first = word.parts[0]
    return isinstance(first, Lit) and re.match(r"[A-Za-z_]\w*=", first.text) is not None


def _awk_variable(word: Word, names: frozenset[str]) -> list[str]:
    """The name a `-v NAME=VALUE` word sets, when its value holds a file's text."""
    from groundskeeper.sandbox.syntax import Lit

    first = word.parts[0] if word.parts else None
    if not isinstance(first, Lit):
        return []
    found = re.match(r"([A-Za-z_]\w*)=", first.text)
    if found is None or not _has_text(word, names, quoted=True):
        return []
    return [found.group(1)]


def _has_text(word: Word, names: frozenset[str], *, quoted: bool) -> bool:
    """Whether `word` holds a command's output (`$(cat F)`, `$(< F)`) or a variable in
    `names` (assigned one); with `quoted` False, only an unquoted one (a pattern's quoted
    part is literal). A `$(…)` that only prints its own words (`$(printf '\\r')`) holds the
    author's text, not a file's."""
    from groundskeeper.sandbox.tree import CommandSub, Param, ParamOp, simple_commands

    for part in word.parts:
        if not quoted and getattr(part, "quoted", False):
            continue
        if isinstance(part, CommandSub):
            commands = list(simple_commands(part.script))
            if not commands or any(
                not c.words or c.words[0].literal() not in ("printf", "echo") for c in commands
            ):
                return True
        if isinstance(part, Param | ParamOp) and part.name in names:
            return True
    return False


def _cond_binaries(expr: object) -> Iterator[tuple[str, Word]]:
    from groundskeeper.sandbox.tree import CondBinary, CondLogic, CondNot

    if isinstance(expr, CondBinary):
        yield expr.op, expr.right
    elif isinstance(expr, CondNot):
        yield from _cond_binaries(expr.inner)
    elif isinstance(expr, CondLogic):
        yield from _cond_binaries(expr.left)
        yield from _cond_binaries(expr.right)


def _every_command(script: Script) -> Iterator[Command]:
    """Every command of the script, compound ones too, at any depth (bodies, `$(…)`)."""
    from groundskeeper.sandbox.tree import Case, CommandSub, For, Group, If, Loop

    for item in script.items:
        for pipeline in (item.first, *(p for _, p in item.rest)):
            for command in pipeline.commands:
                yield command
                inner: list[Script] = []
                if _is_simple(command):
                    words = (*command.words, *(a.value for a in command.assignments))
                    inner += [p.script for w in words for p in w.parts if isinstance(p, CommandSub)]
                elif isinstance(command, If):
                    inner += [s for clause in command.clauses for s in clause]
                    inner += [command.otherwise] if command.otherwise is not None else []
                elif isinstance(command, Loop):
                    inner += [command.condition, command.body]
                elif isinstance(command, For | Group):
                    inner.append(command.body)
                elif isinstance(command, Case):
                    inner += [arm.body for arm in command.arms]
                for body in inner:
                    yield from _every_command(body)


def _word_of(args: tuple[Word, ...], value: str | None) -> Word | None:
    """The word an option's value came from (`-e "$X"`), when it is a word of its own."""
    for index, word in enumerate(args[:-1]):
        written = word.literal() or ""
        if written.startswith("-") and not written.startswith("--") and written.endswith("e"):
            following = args[index + 1]
            if following.literal() == value:
                return following
    return None


def _anchored(word: Word) -> bool:
    """Whether a pattern word begins with a literal `^` and ends with a literal `$`."""
    from groundskeeper.sandbox.syntax import Lit

    parts = [p for p in word.parts if not (isinstance(p, Lit) and not p.text)]
    if not parts:
        return False
    first, last = parts[0], parts[-1]
    return (
        isinstance(first, Lit)
        and first.text.startswith("^")
        and isinstance(last, Lit)
        and last.text.endswith("$")
    )


def _negated_on_a_file(script: Script, check: Check) -> Iterator[Finding]:
    """T029: the check's last decision is a negated command on a file (`! grep -q ERROR
    build.log`), which passes when the file says nothing: emptied, or removed where the
    sandbox cannot tell the command's error from a "no" (`registry.ERROR_STATUS`)."""
    from groundskeeper.sandbox.registry import ERROR_STATUS

    found = _negated_file(script)
    if found is None:
        empty = _empty_on_a_missing_file(script)
        if empty is not None:
            file, command = empty
            written = _shown(check.text[command.offset :].split("\n", 1)[0].strip())
            message = (
                f"the check ends on `{written}`, which asks for an empty result of reading"
                f" `{file}` and gets one when `{file}` is missing (the reader's error is lost"
                f" in the `$(…)` or the pipeline): a worker that removes it, or never writes"
                f" it, passes; say that it must be there first — `test -f {file} && …` — or"
                " protect it"
            )
            yield ("warning", "T029", message, _line(check, command.offset))
        return
    file, name, command = found
    written = _shown(check.text[command.offset :].split("\n", 1)[0].strip())
    how = (
        f"empties it passes (one that removes it fails the check: `{name}` says that is an error)"
        if name in ERROR_STATUS
        else f'empties or removes it passes (`{name}`\'s error reads as a "no")'
    )
    message = (
        f"the check ends on `! {written}`, which passes when `{file}` holds nothing to"
        f" find: a worker that {how}; say that it must be there and hold something first —"
        f" `test -s {file} && ! {written}` (`test -f {file} && …` when it may be empty) —"
        " or protect it"
    )
    yield ("warning", "T029", message, _line(check, command.offset))


#: what a program's source file is named: a negated grep of one reads its spelling, not what
#: it does
_SOURCE_SUFFIXES = (".py", ".js", ".mjs", ".cjs", ".ts", ".sh", ".rb", ".go", ".rs", ".c", ".java")


def _source_spelling(script: Script, check: Check) -> Iterator[Finding]:
    """T036: a negated `grep` of a program's source (`! grep -q 4711 solve.py || exit 1`, the
    "no hard-coded answer" guard) asks how the source is spelt, not what the program does:
    `print(4700 + 11)`, a `# coding:` declaration or a file it reads spell the same answer
    otherwise, and pass (adversary-18 F14)."""

    for pipeline in _deciding_pipelines(script):
        if not pipeline.negated or len(pipeline.commands) != 1:
            continue
        command = pipeline.commands[0]
        if not _is_simple(command) or not command.words:
            continue
        words = [w.literal() for w in command.words]
        files = _files_read("grep", words[1:]) if words[0] == "grep" else None
        sources = [w for w in files or () if w and w.endswith(_SOURCE_SUFFIXES)]
        if not sources or _spells_no_value(words[1:]):
            continue
        written = _shown(check.text[command.offset :].split("\n", 1)[0].strip())
        message = (
            f"`! {written}` asks how `{sources[0]}` is spelt, not what it does: the same"
            " value written another way (`4700 + 11`, a `# coding:` declaration, a file it"
            " reads) passes it; judge the program's output on inputs the worker cannot see"
            " (`:hide:` them), or have a judge read the code (`:judge:`)"
        )
        yield ("warning", "T036", message, _line(check, command.offset))


def _spells_no_value(args: list[str | None]) -> bool:
    """Whether a grep's one literal pattern holds no letter or digit outside its bracket
    expressions and escapes (`[[:space:]]+$`, `\t`): a rule on the source's form (trailing
    whitespace, tabs), not a guard against an answer spelt in it (adversary-21 F5)."""
    from groundskeeper.sandbox.command_options import parse_options

    parsed = parse_options("grep", args)
    if parsed is None or parsed.refused:
        return False
    given = [value for option, value in parsed.options if option == "-e"]
    patterns = given or [args[i] for i in parsed.operands[:1]]
    if len(patterns) != 1 or not isinstance(patterns[0], str):
        return False
    bare = re.sub(r"\[\^?\]?(?:\[:[a-z]+:\]|[^\]])*\]|\\.", "", patterns[0])
    return re.search(r"[A-Za-z0-9]", bare) is None


def negated_file(check: Check) -> str | None:
    """The file T029 warns of in `check` (its last decision a negated command on a file the
    check does not say must be there), or None: lint leaves it be when the task protects it."""
    from groundskeeper.sandbox import ShellSyntaxError, parse

    try:
        script = parse(check.text)
    except ShellSyntaxError:
        return None
    found = _negated_file(script)
    if found is not None:
        return found[0]
    empty = _empty_on_a_missing_file(script)
    return empty[0] if empty is not None else None


def _empty_on_a_missing_file(script: Script) -> tuple[str, SimpleCommand] | None:
    """(the file, the deciding command) when the check's last decision asks for nothing read
    from a file the check does not say must be there — `test -z "$(uniq -d F)"`, `[ "$(uniq
    -d F | wc -l)" -eq 0 ]`, `uniq -d F | wc -l | grep -qx 0` (no pipefail): a missing file
    reads as nothing, so those pass on it."""
    if not script.items:
        return None
    last = script.items[-1]
    final = last.rest[-1][1] if last.rest else last.first
    if final.negated or not final.commands or not _is_simple(final.commands[-1]):
        return None
    command = final.commands[-1]
    guarded = _asserted_files(script)
    files: list[str | None] = []
    if len(final.commands) > 1 and not _PIPEFAIL.get() and not _sets_pipefail(script):
        if _asks_zero(command) and _counts(final.commands[1:-1]):
            files = _read_files(final.commands[0])
    elif len(final.commands) == 1:
        files = _tested_empty(command)
    shown = final.commands[0] if _is_simple(final.commands[0]) else command  # the whole line
    for file in files:
        if file is not None and file not in ("-", "/dev/null") and file not in guarded:
            return file, shown
    return None


def _asks_zero(command: SimpleCommand) -> bool:
    """`grep -qx 0`, `grep -q '^0$'`: a final stage that passes only on a count of 0."""
    from groundskeeper.sandbox.command_options import parse_options

    words = [w.literal() for w in command.words]
    if not words or words[0] != "grep" or None in words[1:]:
        return False
    parsed = parse_options("grep", words[1:])
    if parsed is None or len(parsed.operands) != 1:
        return False
    pattern = words[1 + parsed.operands[0]]
    whole = any(o in ("-x", "--line-regexp") for o, _ in parsed.options)
    return (whole and pattern == "0") or pattern in ("^0$", "^ *0$", "^[[:space:]]*0$")


def _counts(stages: tuple[object, ...]) -> bool:
    """Whether a `wc` counts what the earlier stages passed on (so nothing counts 0)."""
    return any(_is_simple(s) and s.words and s.words[0].literal() == "wc" for s in stages)


def _read_files(command: object) -> list[str | None]:
    """The files a simple command reads (its file operands: not grep's pattern, not awk's
    or jq's program); none when its options are unknown."""
    from groundskeeper.sandbox.command_options import parse_options

    if not _is_simple(command) or not command.words:
        return []
    words = [w.literal() for w in command.words]
    name = words[0]
    if name is None or name in ("test", "[", "echo", "printf", "expr", "seq"):
        return []
    if name in _PROGRAM_FIRST:
        return _program_files(name, words[1:])
    parsed = parse_options(name, words[1:])
    if parsed is None:
        return []
    operands = list(parsed.operands)
    if name == "grep" and not any(option == "-e" for option, _ in parsed.options):
        operands = operands[1:]  # the first is the pattern
    return [words[1 + i] for i in operands]


def _tested_empty(command: SimpleCommand) -> list[str | None]:
    """The files read in `$(…)` by `test -z "$(…)"`, `test "$(…)" = ""`, or — a count —
    `test "$(… | wc -l)" -eq 0` / `= 0`: a missing file passes each."""
    from groundskeeper.sandbox.syntax import CommandSub

    words = list(command.words)
    if not words or words[0].literal() not in ("test", "["):
        return []
    if words[0].literal() == "[":
        if words[-1].literal() != "]":
            return []
        words = words[:-1]
    args = words[1:]
    substituted: Word | None = None
    count = False
    if len(args) == 2 and args[0].literal() == "-z":
        substituted = args[1]
    elif len(args) == 3 and args[1].literal() in ("=", "==", "-eq"):
        other = args[2].literal()
        substituted = args[0]
        if other == "" and args[1].literal() != "-eq":
            count = False
        elif other == "0":
            count = True
        else:
            return []
    if substituted is None:
        return []
    files: list[str | None] = []
    for part in substituted.parts:
        if not isinstance(part, CommandSub):
            continue
        for item in part.script.items:
            for pipeline in (item.first, *(p for _, p in item.rest)):
                if count and not _counts(pipeline.commands[1:]):
                    continue
                stages = pipeline.commands if not count else pipeline.commands[:1]
                for stage in stages:
                    files += _read_files(stage)
    return files


def _negated_file(script: Script) -> tuple[str, str, SimpleCommand] | None:
    """(the file, the command's name, the command) of a final negated command on a file."""

    if not script.items:
        return None
    last = script.items[-1]
    final = last.rest[-1][1] if last.rest else last.first
    if not final.negated or len(final.commands) != 1:
        return None
    command = final.commands[0]
    if not _is_simple(command) or not command.words:
        return None
    words = [w.literal() for w in command.words]
    name = words[0]
    if name is None or name in ("test", "["):
        return None
    if name in _PROGRAM_FIRST:
        files = _program_files(name, words[1:])
    else:
        read = _files_read(name, words[1:])
        if read is None:
            return None
        files = read
    guarded = _asserted_files(script)
    for file in files:
        if file is not None and file not in ("-", "/dev/null") and file not in guarded:
            return file, name, command
    return None


def _files_read(name: str, args: list[str | None]) -> list[str | None] | None:
    """The file operands of `name ARGS` by the sandbox's option table (for `grep`, without
    its pattern unless `-e` gave it), or None when the table does not know the command."""
    from groundskeeper.sandbox.command_options import parse_options

    parsed = parse_options(name, args)
    if parsed is None:
        return None
    operands = list(parsed.operands)
    if name == "grep" and not any(option == "-e" for option, _ in parsed.options):
        operands = operands[1:]  # the first is the pattern
    return [args[i] for i in operands]


#: commands whose first operand is a program (awk's, jq's filter) and the rest files, with
#: the options that take the next word (or, for jq, the next two)
_PROGRAM_FIRST: dict[str, dict[str, int]] = {
    "awk": {"-F": 1, "-v": 1, "-f": 1},
    "jq": {"--arg": 2, "--argjson": 2, "--slurpfile": 2, "--rawfile": 2, "-f": 1},
}


def _program_files(name: str, words: list[str | None]) -> list[str | None]:
    """The files `awk`/`jq` read: the operands after the program (none from `-f`), without
    awk's `NAME=VALUE` assignments."""
    takes = _PROGRAM_FIRST[name]
    operands: list[str | None] = []
    index, from_file = 0, False
    while index < len(words):
        word = words[index]
        index += 1
        if word is not None and word.startswith("-") and word != "-" and not operands:
            from_file = from_file or word == "-f"
            index += takes.get(word, 0)
            continue
        operands.append(word)
    files = operands if from_file else operands[1:]
    if name == "awk":
        files = [f for f in files if f is None or not re.fullmatch(r"[A-Za-z_]\w*=.*", f)]
    return files


def _asserted_files(script: Script) -> set[str]:
    """The files the check has already said must be there: named by a `test -e/-f/-s/-r F`
    or `[ -f F ]` anywhere, or read by a command that is not negated on an earlier line
    (`grep -q '5 passed' F`, `cat F`: under errexit each must succeed first)."""
    from groundskeeper.sandbox.syntax import Script as Body

    named: set[str] = set()
    for command in _simple_commands(script):
        words = [w.literal() for w in command.words]
        if words and words[0] == "[" and words[-1:] == ["]"]:
            words = ["test", *words[1:-1]]
        if len(words) == 3 and words[0] == "test" and words[1] in ("-e", "-f", "-s", "-r"):
            file = words[2]
            if file is not None:
                named.add(file)
    for item in script.items[:-1]:
        if item.first.negated or item.rest:
            continue
        for command in _simple_commands(Body((item,))):
            named.update(w for w in (x.literal() for x in command.words[1:]) if w is not None)
    return named
