"""Rung 2: is DONE earned? Runs a task's sealed acceptance check in the sandbox.

It owns sealing a check (`SealedCheck`, with its hash), the secret sentinel, splitting a
multi-line check into the lines that must each pass, and naming every way a check fails. A
failing check is a `CheckResult` value, never an exception. It does not decide task states.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol

from groundskeeper.fastclass import fastclass
from groundskeeper.logs import Logger
from groundskeeper.plan.org import (
    Check,
    Plan,
    PlanEditError,
    unsupported_check_headers,
    unsupported_check_language,
)
from groundskeeper.plan.spec import TaskSpec, compile_plan

if TYPE_CHECKING:  # the sandbox loads when a check runs, not when this module is imported
    from groundskeeper.sandbox.quota import DiskQuota
    from groundskeeper.sandbox.read_set import ReadSet
    from groundskeeper.sandbox.result import ShellResult

log = Logger(__name__)

Verdict = Literal["PASS", "FAIL", "NO_CHECK"]

#: How much of a check's output a result keeps (the full text is only hashed).
OUTPUT_LIMIT = 4000

DEFAULT_CHECK_TIMEOUT = 10.0
#: The default deadline of a check that runs a test runner (pytest, unittest): CPython runs
#: about six times slower in the sandbox than natively, so a suite of a few hundred tests
#: passes 10 s on a busy machine (adversary-18 F11). A task's `:timeout:` still decides.
TEST_RUNNER_TIMEOUT = 60.0


class Shell(Protocol):
    """What runs a command line: `groundskeeper.sandbox.run`, or a fake in tests.

    A check is run with `errexit=True` and a fresh `sentinel`, which the shell prints on a
    line of its own only when the script ends with status 0."""

    def __call__(
        self,
        cmdline: str,
        *,
        workdir: str | Path,
        read_only: bool = ...,
        timeout: float = ...,
        errexit: bool = ...,
        sentinel: str | None = ...,
    ) -> ShellResult: ...


class SandboxShell:
    """The real sandbox as a `Shell` (imported late: wasmtime is only loaded when a command
    runs); with a `quota`, every command line it runs counts against that one disk quota. A
    check it runs has its read set recorded (`sandbox.read_set`); a stand-in's never has."""

    def __init__(self, quota: DiskQuota | None = None) -> None:
        self.quota = quota

    def __call__(
        self,
        cmdline: str,
        *,
        workdir: str | Path,
        read_only: bool = False,
        timeout: float = 10.0,
        errexit: bool = False,
        sentinel: str | None = None,
    ) -> ShellResult:
        from groundskeeper.sandbox import run

        return run(
            cmdline,
            workdir=workdir,
            read_only=read_only,
            timeout=timeout,
            quota=self.quota,
            errexit=errexit,
            sentinel=sentinel,
        )


def sandbox_shell(quota: DiskQuota | None = None) -> Shell:
    """The real sandbox (`SandboxShell`)."""
    return SandboxShell(quota)


def sha256_text(text: str, *, keep_surrogates: bool = False) -> str:
    """The SHA-256 of `text` encoded as UTF-8, in hex; a lone surrogate raises
    UnicodeEncodeError. With `keep_surrogates` it is encoded as it is (`surrogatepass`): the
    output store writes a worker's commands and what they printed that way, and reading back
    re-hashes the stored bytes, so their hash must be taken over the same bytes."""
    errors = "surrogatepass" if keep_surrogates else "strict"
    return hashlib.sha256(text.encode("utf-8", errors=errors)).hexdigest()


@fastclass(frozen=True, slots=True)
class SealedCheck:
    """A check as read at run start. Its hash covers the language and the exact text, and
    the deadline the task gives it when it sets one (`:timeout:`): a verdict reached under
    another deadline is another check's."""

    text: str
    language: str
    line: int
    source: str
    timeout: float | None = None
    ignored: tuple[str, ...] = ()  # header arguments nothing honours (`Check.ignored`)

    @classmethod
    def seal(cls, check: Check) -> SealedCheck:
        return cls(
            check.text, check.language, check.line, check.source, check.timeout, check.ignored
        )

    @property
    def sha256(self) -> str:
        deadline = "" if self.timeout is None else f"\n:timeout: {self.timeout!r}"
        ignored = "".join(f"\n:ignored: {h}" for h in self.ignored)
        return sha256_text(f"{self.language}\n{self.text}{deadline}{ignored}")

    def lines(self) -> list[tuple[int, str]]:
        """The logical lines that must each pass, with their 1-based line in the check.

        Blank lines and lines starting with `#` are skipped; a line ending in an odd number
        of backslashes continues on the next one (joined without the backslash-newline, as
        sh does). A `:done-when:` property is one line.
        """
        logical: list[tuple[int, str]] = []
        pending = ""
        start = 0
        for number, raw in enumerate(self.text.splitlines(), start=1):
            if not pending:
                start = number
                if not raw.strip() or raw.lstrip().startswith("#"):
                    continue
            trailing = len(raw) - len(raw.rstrip("\\"))
            if trailing % 2 == 1:
                pending += raw[:-1]
                continue
            logical.append((start, (pending + raw).strip()))
            pending = ""
        if pending.strip():
            logical.append((start, pending.strip()))
        return logical


@fastclass(frozen=True, slots=True)
class CheckResult:
    """The verdict of one check run. `code` is stable; `reason` is written for a person."""

    verdict: Verdict
    code: str  # "" on PASS / NO_CHECK, else one of FAILURE_CODES
    reason: str
    output: str
    check_sha256: str | None
    output_sha256: str
    duration_ms: int
    failed_line: int | None = None
    # a pass's read set (`sandbox.read_set`): what it rested on; None: it cannot be told
    reads: tuple[tuple[str, ...], ...] | None = None
    reused: bool = False  # judged by its read set, unchanged since its verdict: not run
    # every workdir file the run opened for reading (pass or fail; `ReadSet.read_files`):
    # None when it cannot be told (a stand-in shell, too many files, not run)
    read: tuple[str, ...] | None = None
    # every symbolic link the run's paths went through (path, target; `ReadSet.passed_links`):
    # None when it cannot be told (a stand-in shell, too many links, not run)
    links: tuple[tuple[str, str], ...] | None = None
    # every workdir folder the run listed or tried to list (`ReadSet.listed_folders`): None
    # when it cannot be told (a stand-in shell, too many folders, not run)
    folders: tuple[str, ...] | None = None

    @property
    def passed(self) -> bool:
        return self.verdict == "PASS"


FAILURE_CODES: frozenset[str] = frozenset(
    {
        "nonzero_status",
        "negated_error",
        "host-memory",
        "disk",
        "loop-steps",
        "fan-out",
        "interrupted",
        "protected_input_changed",
        "unknown_command",
        "parse_error",
        "trap",
        "deadline",
        "fuel",
        "memory",
        "output",
        "missing_sentinel",
        "unsupported_language",
        "empty_check",
        "sandbox_error",
    }
)


#: A check that could not finish for a reason outside the work (wall-clock deadline on a busy
#: machine, an interrupt, the sandbox itself failing) is no evidence either way: it never
#: makes DONE, and it never takes back a DONE earned before (`demoted_state`).
INCONCLUSIVE_CODES: frozenset[str] = frozenset({"deadline", "interrupted", "sandbox_error"})


#: Said in place of what a check or a suite printed, in a run that hides inputs from workers:
#: a check reads them, and so may anything it runs, the worker's own code included.
WITHHELD = (
    "its output is not shown: this run hides inputs from workers, and what a check prints"
    " could show them"
)


#: Said in place of a failure's detail in a run that hides inputs.
NOT_TOLD = (
    "failed (the rest is not shown: this run hides inputs from workers, and a failure's message,"
    " its status or what was printed could carry them; the record keeps it all)"
)


def told(detail: str, *, hides: bool, seen: bool = False) -> str:
    """The one way a failure's detail reaches a worker (or a gated agent, over the hook or
    MCP). In a run that hides inputs, a detail built from anything but what the worker may see
    (`seen`: its own tool calls, or a judge that read under the worker's fence) is reduced to
    "failed": a contract's message can quote a hidden schema, and an exit status, the failing
    line or the kind of failure are values the worker's own code, run by a check that reads a
    hidden file, can choose. Pass or fail is the one bit that must go back."""
    return NOT_TOLD if hides and not seen else detail


def check_feedback(check: SealedCheck, detail: str, *, hides: bool, seen: bool = False) -> str:
    """What a worker (or a gated agent) is told when its work fails `check` (`told`)."""
    shown = told(detail, hides=hides, seen=seen)
    return f"your work did not pass its acceptance check: {check.text.strip()} → {shown}"


def new_sentinel() -> str:
    # os.urandom is what `secrets.token_hex` draws from; `secrets` costs a cold start `random`
    return f"__WB_CHECK_OK_{os.urandom(16).hex()}__"


def no_check() -> CheckResult:
    return CheckResult("NO_CHECK", "", "the task has no acceptance check", "", None, "", 0)


def check_deadline(check: SealedCheck, timeout: float = DEFAULT_CHECK_TIMEOUT) -> float:
    """The deadline `check` runs under: the task's own (`:timeout:`) when it sets one, else
    `timeout`, raised to `TEST_RUNNER_TIMEOUT` for a check that runs a test runner."""
    if check.timeout is not None:
        return check.timeout
    from groundskeeper.plan.org import check_language
    from groundskeeper.plan.test_paths import runs_test_runner

    if runs_test_runner(check_language(check.language), check.text):
        return max(timeout, TEST_RUNNER_TIMEOUT)
    return timeout


def run_check(
    check: SealedCheck | None,
    workdir: Path,
    *,
    shell: Shell | None = None,
    timeout: float = DEFAULT_CHECK_TIMEOUT,
) -> CheckResult:
    """Run `check` read-only in `workdir` as one script under errexit; PASS only when it ends
    with status 0 *and* the interpreter's fresh sentinel is the last line of stdout.

    The script's lines share one shell session (variables and `cd` carry over); the first
    command that fails stops it and is named by its line. Never raises for a failing check.
    """
    if check is None:
        return no_check()
    digest = check.sha256
    timeout = check_deadline(check, timeout)

    read: tuple[str, ...] | None = None

    def fail(code: str, reason: str, output: str, ms: int, line: int | None) -> CheckResult:
        return CheckResult(
            "FAIL", code, reason, _clip(output), digest, sha256_text(output), ms, line,
            read=read,
        )  # fmt: skip

    unsupported = unsupported_check_language(check.language)  # any other is FAILED, never
    if unsupported is not None:  # guessed at
        return fail("unsupported_language", unsupported, "", 0, None)
    ignored = unsupported_check_headers(check.ignored)  # a `:dir` or `:var` it would ignore
    if ignored is not None:
        return fail("unsupported_header", ignored, "", 0, None)
    if not check.lines():
        return fail("empty_check", "the check has no command to run", "", 0, None)
    run = shell if shell is not None else sandbox_shell()
    sentinel = new_sentinel()
    recorder: ReadSet | None = None
    try:
        with contextlib.ExitStack() as stack:
            if isinstance(run, SandboxShell):
                from groundskeeper.sandbox import read_set

                recorder = stack.enter_context(read_set.recording(workdir))
            result = run(
                check.text,
                workdir=workdir,
                read_only=True,
                timeout=timeout,
                errexit=True,
                sentinel=sentinel,
            )
        from groundskeeper.sandbox.result import ShellResult

        if not isinstance(result, ShellResult):
            raise TypeError(f"the shell answered {type(result).__name__}, not a ShellResult")
    except Exception as exc:  # fail closed: whatever breaks in the sandbox is a FAIL
        log.warning("the sandbox failed on a check", exc_info=True)
        why = f"the sandbox could not run the check: {_first_line(exc)}"
        return fail("sandbox_error", why, "", 0, None)
    ms = int(result.duration_ms)
    read = recorder.read_files() if recorder is not None else None
    confirmed, shown = _split_sentinel(result.stdout, sentinel)
    output = _join(shown, result.stderr)
    failure = _classify(result, confirmed, check.text)
    if failure is not None:
        code, reason, line = failure
        return fail(code, reason, output, ms, line)
    reads = _reads(recorder, workdir)
    links = recorder.passed_links() if recorder is not None else None
    folders = recorder.listed_folders() if recorder is not None else None
    return CheckResult(
        "PASS", "", "", _clip(output), digest, sha256_text(output), ms, None, reads, read=read,
        links=links, folders=folders,
    )  # fmt: skip


def _reads(recorder: ReadSet | None, workdir: Path) -> tuple[tuple[str, ...], ...] | None:
    """A pass's read set, when every fact it names holds still as the run ends (a file changed
    while the check read it, or by its reading — an access time shown — leaves none)."""
    if recorder is None:
        return None
    from groundskeeper.sandbox import inputs

    facts = recorder.facts()
    if facts is None or not recorder.steady():
        return None
    if not inputs.unchanged(recorder.root, facts, real=True, hashed=False):
        return None
    return facts


def _split_sentinel(stdout: str, sentinel: str) -> tuple[bool, str]:
    """(was the sentinel the exact last line of stdout, the output without it).

    The interpreter prints it, on a line of its own, after everything the script printed and
    only when the script succeeded; anything else (a sentinel elsewhere, glued to other text)
    is not a confirmation. The sentinel never appears in what is returned: that output goes
    back to the worker and into the ledger.
    """
    tail = sentinel + "\n"
    confirmed = stdout == tail or stdout.endswith("\n" + tail)
    shown = stdout[: -len(tail)] if confirmed else stdout
    shown = shown[:-1] if shown.endswith("\n") else shown
    return confirmed, shown.replace(sentinel, "<sentinel>")


def _unknown_commands(text: str, result: ShellResult) -> list[str]:
    """Commands the check names (or ran) that the sandbox does not have, in order.

    Static, with the parser and registry lint's T004 uses, so an unknown command fails the
    check even where `||`, `!` or `$(…)` would hide its 127; plus the interpreter's own record
    of what it could not run (`$CMD`), never text a command could print.
    """
    from groundskeeper.sandbox.registry import COMMANDS
    from groundskeeper.sandbox.syntax import ShellSyntaxError, command_names, parse

    missing: list[str] = []
    with contextlib.suppress(ShellSyntaxError):  # the run itself reports a syntax error
        missing += [n for n in command_names(parse(text)) if n not in COMMANDS]
    missing += list(result.missing)
    return list(dict.fromkeys(missing))


_LIMITS = {
    # said to whoever reads it that the limit may be the plan's, not the work's (adv24 H2):
    # CPython in the sandbox runs several times slower than natively
    "deadline": (
        "ran past its deadline (its time limit, the task's `:timeout:`; python3 runs here"
        " several times slower than natively: if the work is right but slow in the sandbox,"
        " the plan's author raises `:timeout:`)"
    ),
    "fuel": "ran out of fuel (too much work)",
    "memory": "hit the memory limit",
    "output": "printed more than the output limit",
    "trap": "crashed in the sandbox (trap)",
    "host-memory": "made the shell itself hold too much (host memory limit)",
    "disk": "hit the run's disk quota",
    "loop-steps": "ran more loop iterations than the loop step limit",
    "fan-out": "started more commands through xargs or find -exec than the fan-out limit",
    "interrupted": "was interrupted (SIGINT or SIGTERM): not a verdict on the work",
}


def _classify(
    result: ShellResult, confirmed: bool, text: str
) -> tuple[str, str, int | None] | None:
    lines = text.split("\n")

    def shown(line: int | None) -> str:
        if line is None or not 1 <= line <= len(lines):
            return "the check"
        return f"check line {line}: `{lines[line - 1].strip()}`"

    if result.fault == "syntax":
        first = result.stderr.strip().splitlines()[0] if result.stderr.strip() else ""
        return "parse_error", f"the check is not valid sandbox shell syntax ({first})", None
    if result.fault is not None:
        why = _LIMITS.get(result.fault, result.fault)
        return result.fault, f"{shown(result.failed_line)} {why}", result.failed_line
    missing = _unknown_commands(text, result)
    if missing:
        names = ", ".join(f"`{n}`" for n in missing)
        return (
            "unknown_command",
            f"the check uses {names}, which the sandbox does not have (command not found)",
            result.failed_line,
        )
    if result.negated_error is not None:  # a negation read an error: not a "no"
        why = f"{shown(result.failed_line)}: {result.negated_error}"
        return "negated_error", why, result.failed_line
    if result.status != 0:
        where = shown(result.failed_line)
        return (
            "nonzero_status",
            f"{where} exited with status {result.status}",
            result.failed_line,
        )
    if not confirmed:
        return (
            "missing_sentinel",
            "the check exited 0 but the sandbox did not confirm its success (no sentinel"
            " line at the end of its output): an `exit` ends a check before its confirmation;"
            " end the check with the command that must succeed",
            None,
        )
    return None


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


def _join(stdout: str, stderr: str) -> str:
    if stdout and stderr:
        return stdout.rstrip("\n") + "\n" + stderr
    return stdout or stderr


def _clip(text: str) -> str:
    if len(text) <= OUTPUT_LIMIT:
        return text
    return text[:OUTPUT_LIMIT] + f"\n… ({len(text) - OUTPUT_LIMIT} more characters)"


# --- checking a whole plan (`groundskeeper check`) ---------------------------------------------


@fastclass(frozen=True, slots=True)
class TaskCheck:
    """One task's check verdict, and its state after an optional write-back."""

    id: str
    title: str
    line: int
    state: str
    result: CheckResult

    def to_json(self) -> dict[str, object]:
        return {
            "id": self.id,
            "title": self.title,
            "line": self.line,
            "state": self.state,
            "verdict": self.result.verdict,
            "reason": (f"{self.result.code}: {self.result.reason}" if self.result.code else None),
            "output": self.result.output,
        }


def check_plan(
    plan: Plan,
    workdir: Path,
    *,
    shell: Shell | None = None,
    max_parallel: int = 4,
    timeout: float = DEFAULT_CHECK_TIMEOUT,
) -> list[TaskCheck]:
    """Run every task's check (no workers), in parallel, reported in document order."""
    tasks = list(compile_plan(plan))
    run = shell if shell is not None else sandbox_shell()

    def one(task: TaskSpec) -> CheckResult:
        sealed = SealedCheck.seal(task.check) if task.check is not None else None
        return run_check(sealed, workdir, shell=run, timeout=timeout)

    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(1, max_parallel)) as pool:
        results = list(pool.map(one, tasks))
    return [
        TaskCheck(t.task_id, t.title, t.heading.line, t.heading.keyword or "", r)
        for t, r in zip(tasks, results, strict=True)
    ]


def demoted_state(
    task: TaskCheck, leaf: bool, promotable: Callable[[str], bool] | None = None
) -> str:
    """What `check --write` makes of a task: DONE that fails → FAILED (not when the check
    could not finish: `INCONCLUSIVE_CODES`, the DONE stays and the failure is sealed as its
    check); a FAILED leaf that passes → DONE, only if `promotable(id)` (the record shows it
    FAILED on its own check, not for tampering, a refused dock or a limit); everything else
    keeps its state."""
    if task.state == "DONE" and task.result.verdict == "FAIL":
        return "DONE" if task.result.code in INCONCLUSIVE_CODES else "FAILED"
    if (
        leaf
        and task.state == "FAILED"
        and task.result.verdict == "PASS"
        and promotable is not None
        and promotable(task.id)
    ):
        return "DONE"
    return task.state


def write_check_verdicts(
    plan: Plan,
    checks: list[TaskCheck],
    *,
    promotable: Callable[[str], bool] | None = None,
    before_write: Callable[[list[tuple[TaskCheck, str]], bool], None] | None = None,
) -> list[TaskCheck]:
    """Write `demoted_state` into each headline with one atomic write; return the new states.

    The parent rule holds: a DONE parent over a child that is not DONE becomes PARTIAL.
    `before_write` gets the changes (task, new state), and whether the `#+TODO:` line is
    inserted, before the plan is written (the CLI seals them there). Refuses
    (PlanEditError) if the file changed since it was read.
    """
    from groundskeeper.plan.edit import (
        insert_todo_line,
        needs_todo_line,
        replace_keyword,
        write_atomically,
    )

    if plan.path is None:
        raise PlanEditError("the plan was not read from a file")
    headings = plan.tasks()
    new_states = {
        h: demoted_state(t, leaf=not h.child_tasks, promotable=promotable)
        for h, t in zip(headings, checks, strict=True)
    }
    for heading in reversed(headings):  # children before their parents
        children = [c for c in heading.child_tasks if c in new_states]
        if new_states[heading] == "DONE" and any(new_states[c] != "DONE" for c in children):
            new_states[heading] = "PARTIAL"
    text, shift = plan.text, 0
    if any(new_states[h] != t.state and needs_todo_line(plan, new_states[h])
           for h, t in zip(headings, checks, strict=True)):  # fmt: skip
        text, shift = insert_todo_line(text), 1  # org reads PARTIAL only with a #+TODO: line
    updated: list[TaskCheck] = []
    changes: list[tuple[TaskCheck, str]] = []
    for heading, task in zip(headings, checks, strict=True):
        new = new_states[heading]
        if new != task.state:
            text = replace_keyword(text, heading.line + shift, task.state, new)
            changes.append((task, new))
        updated.append(TaskCheck(task.id, task.title, task.line, new, task.result))
    if text != plan.text:
        if plan.path.read_text(encoding="utf-8") != plan.text:
            raise PlanEditError(f"{plan.path}: changed while its checks ran; run check again")
        if before_write is not None:
            before_write(changes, bool(shift))
        write_atomically(plan.path, text)
    return updated
