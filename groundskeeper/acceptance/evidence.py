"""Evidence checked against the record: the judgement of the `evidence` a worker's
`claim_done` carries against the task's `:evidence:` fields (read by `plan.properties`) —
missing fields, mistyped ones, and `output-of` quotes the record does not show a command
printing.

Rule for `output-of:PATTERN` (so evidence cannot be self-made): the quoted text must appear in
what one `sh` call of this attempt printed (stdout or stderr, read back from the output store
by the hash the ledger sealed — or, for a line `CMD > FILE`, what FILE held right after the
call, read back and sealed by the toolbox), where that call's whole line is a single command
whose text matches PATTERN (a glob) and which answered (`answered`: exited 0, or 1 where the
sandbox's table of statuses says 1 is a "no", as grep's), and the quote is not part of the
command's own text. `echo`/`printf` of the quote, a quote from a command that failed, and a
quote printed by some other command all fail with `false evidence: …`.

And what produced the quote must not be the worker's: the quote is self-made when the
command's program (`plan.programs`: a script an interpreter ran, a module, a workdir file run
as a command) was written by the task's worker before the command ran (this attempt's tool
calls before it, in the record's order, renames included, or an earlier attempt), or when a
file that holds the quote was written by this attempt before the command ran. A file written
after it (a report saved with `cmd > report.txt`) is not. What the record cannot place (a
call's writes not journalled, a program it cannot read from the line) refuses the quote with
the reason. It does not judge contracts.

And the quote is evidence only about the files as they end: a command's output speaks of the
files it read as they were when it ran. The inputs of the quoted run are the workdir files the
sandbox saw it open for reading (sealed with the call as `read`, each with what it held right
after it) and the paths its line names (operands, `< FILE`, its programs; a folder covering
what is under it). When one of them
holds something else at the verdict (written by a later call of the attempt, renamed over, or
changed by another worker of the run meanwhile), or a later call of the attempt wrote one of
the named paths and its content cannot be compared, the quote is stale: `evidence from a run
whose input changed afterwards: FILE`. Only the last run of the pattern counts, so running it
again after the change is the way out. What the record cannot tell (what the run read was too
much to seal, a later call's writes not journalled) refuses the quote when the attempt changed
anything after it. A file the command printed into (`cmd > report.txt`) is no input: the quote
is judged on what the record kept of it right after the call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from groundskeeper.acceptance.attempt_record import (
    AttemptRecord,
    ShCall,
    chain_commands,
    stdout_file,
)
from groundskeeper.plan.programs import command_programs
from groundskeeper.plan.properties import OUTPUT_OF, EvidenceField, command_matches

__all__ = ["CODES", "EvidenceVerdict", "Written", "judge_evidence"]

CODES: dict[str, str] = {
    "E001": "a declared evidence field is missing",
    "E002": "an evidence field has the wrong type",
    "E003": "false evidence: the record does not show a command printing the quoted output",
}


@dataclass(frozen=True, slots=True)
class EvidenceVerdict:
    field: EvidenceField
    code: str | None  # None: the field holds
    message: str

    @property
    def ok(self) -> bool:
        return self.code is None

    @property
    def reason(self) -> str:
        """As a task's reason: `false evidence: <field> …`, `missing evidence: <field> …`."""
        lead = {"E001": "missing evidence", "E002": "wrong evidence", "E003": "false evidence"}
        return f"{lead.get(self.code or '', 'evidence')}: {self.field.name}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "field": self.field.name,
            "type": self.field.type,
            "pattern": self.field.pattern,
            "ok": self.ok,
            "code": self.code,
            "message": self.message,
        }


_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "bool": (bool,),
    "int": (int,),
    "str": (str,),
    "list": (list,),
    "object": (dict,),
    OUTPUT_OF: (str,),
}


def _type_name(value: object) -> str:
    names = {bool: "bool", int: "int", float: "number", str: "str", list: "list", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


@dataclass(frozen=True, slots=True)
class Written:
    """What the task's worker wrote, beyond the order the record gives: `texts`, what each
    file the judgement may ask about holds now (None: it cannot be read; a path not there is
    absent); `stamped`, every file this attempt changed by any means, from the workdir's
    stamps around it (None: they could not be taken, or judged offline: then a call whose
    writes are not in the record refuses every quote); `earlier`, what the task's earlier
    attempts wrote (None: not all of it could be told); `others`, what the other workers of
    the run wrote so far (an accomplice sibling's plant; None: not all of it could be told);
    `real`, a workdir path as the sandbox's journal names it (links resolved; None: outside
    the workdir)."""

    texts: Mapping[str, str | None] = field(default_factory=dict)
    stamped: frozenset[str] | None = None
    earlier: frozenset[str] | None = frozenset()
    real: Callable[[str], str | None] = field(default=lambda path: path)
    others: frozenset[str] | None = frozenset()
    # what a workdir file holds at the verdict, as an `sh` call's `read` was sealed
    # (`attempt_record.input_digests`); None: judged offline, by the record's writes alone
    now: Callable[[str], str | None] | None = None
    # what other tasks' workers wrote in the plan's earlier runs (adversary-28 F8: a sibling
    # planted the quote in the data one run, and the task quoted it the next)
    earlier_others: frozenset[str] = frozenset()
    # whether the task's text asks its worker to change a file (`plan.expected`): a module a
    # quoted program imports that the worker rewrote is the program's, unless asked for
    asked: Callable[[str], bool] = field(default=lambda path: False)


def judge_evidence(
    fields: Iterable[EvidenceField],
    evidence: Mapping[str, Any] | None,
    record: AttemptRecord,
    written: Written | None = None,
) -> list[EvidenceVerdict]:
    """Each declared field's verdict; `evidence` None is a bare final text (no evidence).
    Judged offline (no `written`), only the record's own journal of writes is asked."""
    written = Written() if written is None else written
    verdicts: list[EvidenceVerdict] = []
    for declared in fields:
        if evidence is None or declared.name not in evidence:
            how = (
                "the claim was a bare final message; claim with claim_done {summary, evidence}"
                if evidence is None
                else "the claim's evidence has no such field"
            )
            verdicts.append(EvidenceVerdict(declared, "E001", how))
            continue
        value = evidence[declared.name]
        wanted = _PYTHON_TYPES[declared.type]
        is_bool = isinstance(value, bool)
        if not isinstance(value, wanted) or (declared.type == "int" and is_bool):
            shown = "str (the quoted output)" if declared.type == OUTPUT_OF else declared.type
            message = f"must be {shown}, not {_type_name(value)}"
            verdicts.append(EvidenceVerdict(declared, "E002", message))
            continue
        if declared.type == OUTPUT_OF:
            assert declared.pattern is not None and isinstance(value, str)
            verdict, call = _quoted(declared, value, record)
            if call is not None:
                verdict = (
                    _self_made(declared, value, call, record, written)
                    or _stale(declared, call, record, written)
                    or verdict
                )
            verdicts.append(verdict)
            continue
        verdicts.append(EvidenceVerdict(declared, None, f"a {declared.type}"))
    return verdicts


def _short(cmd: str) -> str:
    return cmd if len(cmd) <= 120 else cmd[:120] + "…"


_NOT_EVIDENCE = "its output is the worker's own words, not evidence"


def _self_made(
    declared: EvidenceField, quote: str, call: ShCall, record: AttemptRecord, written: Written
) -> EvidenceVerdict | None:
    """Whether what printed the quote was the worker's: the command's program, or a file
    holding the quote, written before the command ran (by the record's order of writes)."""
    cmd = _short(call.cmd or "")
    before: dict[str, int] = {}  # a path the attempt wrote before the call: the last call that did
    after: set[str] = set()  # written by the call itself or a later one
    blind: list[tuple[int, str]] = []  # calls before it whose writes are not in the record
    own: tuple[str, ...] | None = ()
    shown = {c.index: _short(c.cmd or "") for c in record.sh_calls()}
    for index, tool, paths in record.writes():
        if index < call.index and paths is None:
            blind.append((index, f" (`{shown[index]}`)" if index in shown else f" ({tool})"))
        elif index < call.index:
            before.update(dict.fromkeys(paths or (), index))
        elif paths is not None:
            after.update(paths)
        if index == call.index:
            own = paths

    def refuse(message: str) -> EvidenceVerdict:
        return EvidenceVerdict(declared, "E003", message)

    programs = command_programs(call.cmd or "")
    if isinstance(programs, str):
        return refuse(f"{programs}, so what printed the quote cannot be told")
    stamped = written.stamped
    for program in programs:
        for named in program.paths:
            path = written.real(named)
            what = f"`{named}`, the program of `{cmd}`,"
            if path is None:
                return refuse(f"{what} is not a workdir path the record can place")
            if path in before:
                return refuse(
                    f"{what} was written by this task's worker (tool call {before[path]}) before"
                    f" it printed the quote: {_NOT_EVIDENCE}"
                )
            if written.earlier is None or path in written.earlier:
                which = "what an earlier attempt wrote could not all be told, and it may be"
                if written.earlier is not None:
                    which = "was written by an earlier attempt of this task:"
                return refuse(f"{what} {which} {_NOT_EVIDENCE}")
            if written.others is None or path in written.others:
                which = "what the run's other workers wrote could not all be told, and it may be"
                if written.others is not None:
                    which = "was written by another worker of this run:"
                return refuse(f"{what} {which} {_NOT_EVIDENCE}")
            if (own is None and len(programs) > 1) or (own is not None and path in own):
                return refuse(
                    f"{what} was written by the same call that printed the quote: which came"
                    " first cannot be told"
                )
            if blind and (stamped is None or path in stamped):
                index, said = blind[0]
                return refuse(
                    f"what tool call {index}{said} wrote is not in the record, and {what}"
                    " changed in this attempt: whether the worker wrote it before the quote was"
                    " printed cannot be told"
                )
    library = _library_rewritten(call, before, written)
    if library is not None:
        return refuse(library)
    return _quote_in_a_file(declared, quote, call, before, after, blind, written)


_TEST_RUNNER = re.compile(r"(?<![\w.-])(pytest|unittest)(?![\w.-])")


def _library_rewritten(call: ShCall, before: Mapping[str, int], written: Written) -> str | None:
    """A file the quoted run read that its line does not name (nor a folder it names
    covers), which this attempt (or an earlier one) wrote before the command ran and the task
    does not ask for: a module its program imports, or data it reads by its own choice (a
    schema, a config), so what it printed is the worker's (adversary-28 F7: a protected
    `validate.py` importing the `rules.py` the worker gutted; adversary-28b F4: the schema
    it reads loosened). Not under a test runner (`pytest`, `unittest`): the modules the
    tests import are the code under test, the work."""
    if _TEST_RUNNER.search(call.cmd or ""):
        return None
    named = _named_inputs(call.cmd or "", written)
    operands = set() if isinstance(named, str) else named
    earlier = written.earlier or frozenset()
    for path in sorted(call.read or ()):
        if written.asked(path):
            continue
        if any(path == o or path.startswith(o.rstrip("/") + "/") for o in operands):
            continue  # what its line gives it to read (`python3 lint.py src`): its data
        when = (
            f"this task's worker (tool call {before[path]})"
            if path in before
            else "an earlier attempt of this task"
            if path in earlier
            else None
        )
        if when is not None:
            what = "a module" if path.endswith(".py") else "a file"
            how = "ran" if path.endswith(".py") else "read without its line naming it"
            return (
                f"`{path}`, {what} `{_short(call.cmd or '')}` {how}, was written by {when}"
                f" before it printed the quote, and the task does not ask for it:"
                f" {_NOT_EVIDENCE}"
            )
    return None


def _stale(
    declared: EvidenceField, call: ShCall, record: AttemptRecord, written: Written
) -> EvidenceVerdict | None:
    """Whether a file the quoted run read changed after it (before the verdict): then what
    it printed is evidence about files that are no longer there as they were."""
    cmd = _short(call.cmd or "")
    later: dict[str, int] = {}  # a path a later call of the attempt wrote: the first that did
    blind: int | None = None  # the first later call whose writes are not in the record
    for index, _tool, paths in record.writes():
        if index <= call.index:
            continue
        if paths is None:
            blind = index if blind is None else blind
        else:
            for path in paths:
                later.setdefault(path, index)

    def stale(path: str, how: str) -> EvidenceVerdict:
        return EvidenceVerdict(declared, "E003", (
            f"evidence from a run whose input changed afterwards: `{path}` ({how} after"
            f" `{cmd}` ran, tool call {call.index}); the quote speaks of what it held then:"
            " run the command again on the files as they are, and quote that run"
        ))  # fmt: skip

    if call.read_known and call.read is None and (later or blind is not None):
        return EvidenceVerdict(declared, "E003", (
            f"`{cmd}` (tool call {call.index}) read more files than the record seals, and this"
            " attempt changed files after it: whether its input changed cannot be told"
        ))  # fmt: skip
    sealed = call.read or {}
    for path in sorted(sealed):
        if written.now is not None:
            if written.now(path) != sealed[path]:
                where = (
                    f"written by tool call {later[path]}"
                    if path in later
                    else "changed by another worker of this run"
                    if path in (written.others or ())
                    else "changed"
                )
                return stale(path, f"it holds something else now: {where}")
        elif path in later:
            return stale(path, f"written by tool call {later[path]}")
    named = _named_inputs(call.cmd or "", written)
    if isinstance(named, str):
        return EvidenceVerdict(declared, "E003", named)
    for path in sorted(named - set(sealed)):
        if path in later:
            return stale(path, f"written by tool call {later[path]}")
        # a folder it names covers what is under it (adversary-28 F3: a failing test copied
        # aside and removed before `python3 -m pytest -q tests`, and put back after it)
        under = sorted(p for p in later if p.startswith(path.rstrip("/") + "/"))
        if under:
            return stale(under[0], f"under `{path}`, which it names, written by tool call"
                                   f" {later[under[0]]}")  # fmt: skip
        if blind is not None:
            return EvidenceVerdict(declared, "E003", (
                f"what tool call {blind} wrote is not in the record, and `{path}` is an input"
                f" of `{cmd}`, which printed the quote before it: whether it changed afterwards"
                " cannot be told"
            ))  # fmt: skip
    return None


def _named_inputs(cmd: str, written: Written) -> set[str] | str:
    """The workdir paths the command's line names as what it reads: its words that are not
    options (operands, `< FILE`) and its programs, as `written.real` places them. A word
    outside the workdir is no workdir input. The file its stdout went to is not an input."""
    import shlex

    try:
        words = shlex.split(cmd)
    except ValueError:
        return f"`{_short(cmd)}` cannot be split into words to tell what it read"
    out = stdout_file(cmd)
    found: set[str] = set()
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word in (">", ">>", "2>", "&>"):
            skip = True  # the file it writes
            continue
        word = word.removeprefix("<")
        if not word or word.startswith(("-", ">", "2>", "&")) or "=" in word.split("/")[0]:
            continue
        path = written.real(word)
        if path is not None and path != out:
            found.add(path)
    programs = command_programs(cmd)
    if not isinstance(programs, str):
        for program in programs:
            for named in program.paths:
                path = written.real(named)
                if path is not None:
                    found.add(path)
    return found


def _quote_in_a_file(
    declared: EvidenceField,
    quote: str,
    call: ShCall,
    before: Mapping[str, int],
    after: set[str],
    blind: list[tuple[int, str]],
    written: Written,
) -> EvidenceVerdict | None:
    """A file the attempt wrote before the command ran that holds the quote: a command
    printing it back prints the worker's own words. A file changed in the attempt that the
    record's journal does not place (another writer, a call with no journal) counts as
    written before."""
    cmd = _short(call.cmd or "")
    stamped = written.stamped
    if blind and stamped is None:
        index, said = blind[0]
        return EvidenceVerdict(declared, "E003", (
            f"what tool call {index}{said} wrote is not in the record, and what this attempt"
            " changed could not be told (too many files): no quote can hold"
        ))  # fmt: skip
    placed = set(before) | after
    unplaced = {p for p in stamped or () if p not in placed or (blind and p not in before)}
    planted = _planted(declared, quote, cmd, before, after, written)
    if planted is not None:
        return planted
    for path in sorted(set(before) | unplaced):
        if path not in written.texts:  # absent now
            if path in before and path in after:
                return EvidenceVerdict(declared, "E003", (
                    f"`{path}`, which this attempt wrote before `{cmd}` ran (tool call"
                    f" {before[path]}), was removed after it: what it held cannot be told"
                ))  # fmt: skip
            continue  # absent when the command ran
        text = written.texts[path]
        if text is not None and quote not in text:
            continue
        how = "cannot be read to tell" if text is None else "holds the quote"
        when = (
            f"which this attempt wrote before `{cmd}` ran (tool call {before[path]})"
            if path in before
            else "which changed in this attempt at a time the record does not show"
        )
        message = (
            f"`{path}`, {when}, {how}: a command printing it back prints the worker's own"
            " words, not evidence"
        )
        return EvidenceVerdict(declared, "E003", message)
    return None


def _planted(
    declared: EvidenceField,
    quote: str,
    cmd: str,
    before: Mapping[str, int],
    after: set[str],
    written: Written,
) -> EvidenceVerdict | None:
    """A path there before the command ran whose NAME holds the quote (`ls` prints it back),
    made by this attempt, an earlier one of the task, another worker of the run, or another
    task's worker in an earlier run; or a file holding the quote that an earlier attempt or
    another worker (of this run or an earlier one) wrote (and this attempt did not write
    again after the command: then it is judged as this attempt's)."""
    earlier = written.earlier or frozenset()
    others = written.others or frozenset()
    for path in sorted(set(before) | earlier | others | written.earlier_others):
        if path not in written.texts:
            continue  # absent now (one removed after the command: `_quote_in_a_file`)
        who = (
            f"this attempt (tool call {before[path]})"
            if path in before
            else "an earlier attempt of this task"
            if path in earlier
            else "another worker of this run"
            if path in others
            else "another task's worker in an earlier run of the plan"
        )
        if quote in path:
            return EvidenceVerdict(declared, "E003", (
                f"`{path}`, whose name holds the quote, was made by {who} before `{cmd}` ran: a"
                " command listing it prints the worker's own words, not evidence"
            ))  # fmt: skip
        if path in before or path in after:
            continue  # this attempt's own writes: judged by `_quote_in_a_file`
        text = written.texts.get(path)
        if text is not None and quote not in text:
            continue
        how = "cannot be read to tell" if text is None else "holds the quote"
        return EvidenceVerdict(declared, "E003", (
            f"`{path}`, which {who} wrote before `{cmd}` ran, {how}: a command printing it"
            " back prints a worker's own words, not evidence"
        ))  # fmt: skip
    return None


def _quoted(
    declared: EvidenceField, quote: str, record: AttemptRecord
) -> tuple[EvidenceVerdict, ShCall | None]:
    """The last `sh` call of the attempt whose one command matches the pattern decides: it
    must have exited 0 and printed the quote, and not have it in its own text. The call is
    given with a verdict that holds."""
    pattern = declared.pattern or ""
    shown = quote if len(quote) <= 80 else quote[:80] + "…"
    if not quote.strip():
        verdict = EvidenceVerdict(declared, "E002", "must quote some output, not an empty string")
        return verdict, None
    seen: list[str] = []
    ran: list[str] = []
    matched = 0
    for call in reversed(list(record.sh_calls())):
        if call.cmd is None:
            continue
        status = "was stopped" if call.exit_status is None else f"exited {call.exit_status}"
        ran.append(f"`{_short(call.cmd)}` ({status})")
        commands = chain_commands(call.cmd)
        if commands is None or len(commands) != 1 or not command_matches(pattern, commands[0]):
            continue
        matched = sum(
            1
            for other in record.sh_calls()
            if other.cmd is not None
            and (found := chain_commands(other.cmd)) is not None
            and len(found) == 1
            and command_matches(pattern, found[0])
        )
        printed = [record.text(call.stdout_sha256), record.text(call.stderr_sha256)]
        went = ""
        if call.stdout_file is not None:  # `cmd > FILE`: what it printed is what FILE held
            path, digest = call.stdout_file
            printed.append(record.text(digest))
            went = f" (its output went to `{path}`" + (
                ", which the record kept)" if printed[-1] is not None else ", unread)"
            )
        if all(p is None for p in printed):
            seen.append(f"`{_short(call.cmd)}` (its output is not in the record)")
            continue
        if not any(p is not None and quote in p for p in printed):
            seen.append(f"`{_short(call.cmd)}` ({status}) did not print it{went}")
        elif _in_own_text(quote, call.cmd):
            seen.append(f"`{_short(call.cmd)}` has the quote in its own text: that is not evidence")
        elif not answered(commands[0], call.exit_status):
            seen.append(f"`{_short(call.cmd)}` printed it but {status}")
        else:
            into = f" into `{call.stdout_file[0]}`" if call.stdout_file is not None else ""
            no = f', {status}: a "no", not an error' if call.exit_status else ""
            said = f"printed by `{_short(call.cmd)}`{into}{no} (tool call {call.index})"
            return EvidenceVerdict(declared, None, said), call
        break  # the last run decides: an earlier one's output is stale
    if seen:
        earlier = matched - 1
        more = f" (the last of {matched} runs of the pattern, which decides)" if earlier else ""
        message = f"the record contradicts {shown!r}: {seen[0]}{more}"
    else:
        shows = "; ".join(ran[:3][::-1]) if ran else "no command at all"
        message = (
            f"no command matching `{pattern}`, run on its own line, printed {shown!r} in this"
            f" attempt; the record shows {shows}"
        )
    return EvidenceVerdict(declared, "E003", message), None


_GREP = frozenset({"grep", "egrep", "fgrep"})


def answered(command: str, status: int | None) -> bool:
    """Whether a run of `command` (its words, as `chain_commands` gives them) that exited
    `status` answered, and so printed its answer: 0, or a status below the first error of
    the sandbox's one table of such statuses (`registry.ERROR_STATUS`) — grep's 1 ("no
    line matched": `grep -c ERROR log` prints `0`), diff's and cmp's 1 ("they differ": what
    they printed is the difference), expr's 1 (a null or zero result). A status the table does
    not call a "no" (an error, a stop, any other command's non-zero) did not answer."""
    from groundskeeper.sandbox.registry import ERROR_STATUS

    if status == 0:
        return True
    if status is None or status < 0:
        return False
    name = command.split(" ", 1)[0]
    errors = ERROR_STATUS.get(name)
    return errors is not None and status < errors.start


def _in_own_text(quote: str, cmd: str) -> bool:
    """Whether the command's own text holds the quote. grep's pattern is left out: grep
    prints lines of what it reads, so a line equal to its pattern came from the file (whose
    writer `_self_made` asks about)."""
    import shlex

    try:
        words = shlex.split(cmd)
    except ValueError:
        return quote in cmd
    if words and words[0] in _GREP:
        for i, word in enumerate(words[1:], start=1):
            if word == "-e" and i + 1 < len(words):
                del words[i : i + 2]
                break
            if not word.startswith("-"):
                del words[i]
                break
        return any(quote in word for word in words)
    return quote in cmd
