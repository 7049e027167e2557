"""`groundskeeper resume` and `groundskeeper check`: rung 2 at the terminal.

The work happens in `supervisor.runner` and `acceptance.check`; this module parses
options, wires the model, ledger and telemetry, narrates progress and prints the answer.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from groundskeeper.cli.many_plans import forwarded, plan_options, run_many
from groundskeeper.cli.output import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_WAITING,
    emit_json,
    fail_usage,
    narrate,
)
from groundskeeper.cli.params import ByteSize
from groundskeeper.errors import GroundskeeperError
from groundskeeper.record.backing import HasHistory

if TYPE_CHECKING:
    from groundskeeper.acceptance.check import CheckResult, TaskCheck
    from groundskeeper.models.model import Model, UsageTotals
    from groundskeeper.plan.org import Plan
    from groundskeeper.plan.spec import TaskSpec
    from groundskeeper.record.backing import Record
    from groundskeeper.record.control import ControlDir, RunLock
    from groundskeeper.record.telemetry import Telemetry
    from groundskeeper.supervisor.runner import RunEvent, StepRecorder

MODEL_HELP = (
    "The worker model: `scripted:FILE` replays a YAML script offline; `anthropic:MODEL` is"
    " Claude through the Anthropic API (needs ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL is"
    " honoured). Default: $GROUNDSKEEPER_MODEL."
)
RETRIES_HELP = (
    "How many times the Anthropic client retries a call that failed with 408, 409, 429, 5xx"
    " or 529 (overloaded), with backoff, honouring `retry-after`. [env:"
    " GROUNDSKEEPER_MODEL_RETRIES; default: 2]"
)
JUDGE_MODEL_HELP = (
    "The model that judges tasks with a `:judge:` property, after their check passes:"
    " `anthropic:MODEL` or `scripted:FILE` (its `judges:`). Loaded only for a plan with a"
    " judged task. Default: $GROUNDSKEEPER_JUDGE_MODEL, else the worker's script for a"
    " `scripted:` worker, else anthropic:claude-haiku-4-5."
)
JUDGE_PROFILE_HELP = (
    "What a judge's API error (after its retries) means: `fast` — a recorded warning, the"
    " check's pass stands; `auto` — the task is not DONE and stays resumable; `safe` — as"
    " auto, and the run starts no further task; `strict` — as safe, and every task with a"
    " check is judged (against its title and description when it has no `:judge:`)."
    " [env: GROUNDSKEEPER_JUDGE_PROFILE]"
)


def judge_options(command: Any) -> Any:
    """`--judge-model` and `--judge-profile`, shared by `resume` and `run`."""
    command = click.option(
        "--judge-profile",
        type=click.Choice(["fast", "auto", "safe", "strict"]),
        default="auto",
        show_default=True,
        envvar="GROUNDSKEEPER_JUDGE_PROFILE",
        help=JUDGE_PROFILE_HELP,
    )(command)
    return click.option(
        "--judge-model", "judge_spec", envvar="GROUNDSKEEPER_JUDGE_MODEL", help=JUDGE_MODEL_HELP
    )(command)


def attempt_options(command: Any) -> Any:
    """`--max-turns`, `--breaker` and `--max-total-attempts`, shared by `resume` and `run`."""
    from groundskeeper.acceptance.loops import DEFAULT_BREAKER
    from groundskeeper.supervisor.worker import DEFAULT_MAX_TURNS

    command = click.option(
        "--max-total-attempts",
        type=click.IntRange(min=1),
        metavar="N",
        help=MAX_TOTAL_ATTEMPTS_HELP,
    )(command)
    command = click.option(
        "--breaker",
        type=click.IntRange(min=2),
        default=DEFAULT_BREAKER,
        show_default=True,
        metavar="N",
        help=BREAKER_HELP,
    )(command)
    return click.option(
        "--max-turns",
        type=click.IntRange(min=1),
        default=DEFAULT_MAX_TURNS,
        show_default=True,
        help="Model turns a worker gets per attempt.",
    )(command)


def load_judge(
    plan: Plan, judge_spec: str | None, worker_spec: str, profile: str,
    retries: int | None = None, timeout: float | None = None,
) -> Model | None:  # fmt: skip
    """The judge model a plan needs (None when no task is judged); ModelUnavailableError
    (a usage error) when it cannot be used, before anything runs."""
    from groundskeeper.acceptance.criteria import judge_model_spec
    from groundskeeper.models import load_model
    from groundskeeper.plan.spec import compile_plan

    spec = judge_model_spec(compile_plan(plan), judge_spec, worker_spec, profile)
    if spec is None:
        return None
    return load_model(spec, retries=retries, timeout=timeout)


BREAKER_HELP = (
    "End a task's fix loop when the same failure comes back N times in a row, its volatile"
    " parts (timings, temp names, hashes, line numbers, pids) aside: the task is FAILED with"
    " reason `breaker: …`. It matters when `:max-attempts:` is larger than N."
)
MAX_TOTAL_ATTEMPTS_HELP = (
    "Start at most N worker attempts in this run, over all tasks; past it nothing more starts"
    " and the tasks left keep their state, resumable (reason `attempt-cap: …`) [I010]."
    "  [default: no cap]"
)
TIMEOUT_HELP = (
    "Seconds one request to the Anthropic API may take (each retry gets as long). [env:"
    " GROUNDSKEEPER_MODEL_TIMEOUT; default: 300]"
)


def _plan_path(plan: Path | None) -> Path:
    path = plan if plan is not None else Path("plan.org")
    if path.is_dir():
        path = path / "plan.org"
    return path


def _workdir(workdir: Path | None) -> Path | None:
    if workdir is not None and not workdir.is_dir():
        fail_usage(f"--workdir {workdir}: not a directory; create it or pass an existing one")
    return workdir


@click.command("resume")
@click.argument("plans", nargs=-1, type=click.Path(path_type=Path))
@click.option("--model", "model_spec", envvar="GROUNDSKEEPER_MODEL", help=MODEL_HELP)
@click.option(
    "--model-retries",
    type=click.IntRange(min=0),
    envvar="GROUNDSKEEPER_MODEL_RETRIES",
    help=RETRIES_HELP,
)
@click.option(
    "--model-timeout",
    type=click.FloatRange(min=0, min_open=True, max=86400),
    envvar="GROUNDSKEEPER_MODEL_TIMEOUT",
    help=TIMEOUT_HELP,
)
@click.option(
    "--workdir",
    type=click.Path(path_type=Path),
    help="The folder workers and checks see (default: the plan's folder).",
)
@click.option(
    "--max-parallel",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="How many tasks run at once (ORDERED siblings always run one by one).",
)
@click.option(
    "--require-checks",
    is_flag=True,
    help="A task without an acceptance check is FAILED instead of DONE (unverified).",
)
@click.option(
    "--require-red",
    is_flag=True,
    help="A task whose check already passes before any work is FAILED"
    " (`red-first: passes before any work`); without it, a warning [R007]. The plan can ask"
    " for it with `#+REQUIRE_RED: t`.",
)
@click.option(
    "--forget-record",
    is_flag=True,
    help="Start over a plan whose headlines show earlier verdicts (FAILED, PARTIAL) but whose"
    " ledger is gone, without them; sealed in the new ledger's run-start. Without it such a"
    " run is refused (exit 2): the lost record held those verdicts and the rules behind them.",
)
@click.option(
    "--accept-changes",
    is_flag=True,
    help="Take the workdir's files as they are now: a protected or checked file an earlier"
    " run's worker changed, not entitled to, is no longer held against the plan (without it"
    " every later run fails the tasks relying on it until it is restored), and each pytest"
    " contract's suite is recorded again as it is (a test added by hand since is no new"
    " test). Sealed in this run's run-start.",
)
@attempt_options
@click.option(
    "--disk-quota",
    type=ByteSize(),
    default="1G",
    show_default=True,
    help="Bytes the run's commands and tools may write in total (512M, 1G or plain bytes);"
    " past it a write fails, naming the quota.",
)
@judge_options
@plan_options
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
@click.pass_context
def resume(
    ctx: click.Context,
    plans: tuple[Path, ...],
    model_spec: str | None,
    model_retries: int | None,
    model_timeout: float | None,
    workdir: Path | None,
    max_parallel: int,
    require_checks: bool,
    require_red: bool,
    forget_record: bool,
    accept_changes: bool,
    max_turns: int,
    breaker: int,
    max_total_attempts: int | None,
    disk_quota: int,
    judge_spec: str | None,
    judge_profile: str,
    jobs: int,
    backend: str,
    address: str | None,
    as_json: bool,
) -> None:
    """Run a plan, or continue it: DONE tasks are skipped, the rest get workers.

    A task becomes DONE only when its acceptance check passes in the sandbox; a failed check
    goes back to the worker as feedback for another attempt (`:max-attempts:`, default 2).
    Each verdict is written into the plan's headline as soon as it is known, with a row in
    _telemetry.db; every step is sealed in the signed ledger _steps.jsonl. If the ledger
    cannot be written (damaged, or its checkpoint signed by a key you do not trust), the run
    does not start, or stops, with a diagnostic [R004]: it never goes on unsealed.

    If the model stays unavailable after its retries (the API down, overloaded, a timeout),
    the run stops calling it: the unfinished tasks keep their state, never DONE, and the same
    command continues them later [R008]. Every model call's tokens and latency are sealed in
    the ledger and kept in _telemetry.db (table model_calls); the totals end the report.

    A task with `:judge:` is judged after its check passes, by a separate model with fresh
    context (--judge-model): a `fail` goes back to the worker like a failed check; a judge
    that cannot be reached keeps the task from DONE, resumable, unless --judge-profile fast.

    A fix loop ends at `:max-attempts:`, or earlier when the same failure comes back
    --breaker times in a row (`breaker: …`); --max-total-attempts caps the attempts of the
    whole run, leaving the tasks it did not reach resumable [I010]. The JSON report's `stop`
    names which ended each task: max-attempts, breaker or attempt-cap.

    Given several plans, each runs as its own `groundskeeper resume` process (its own lock,
    ledger and checkpoint), --jobs at a time, or as Ray tasks with --backend ray (no engine
    retries: run the same command again to continue what did not finish); the report has a
    line per plan and --json one document holding every plan's report. docs/scale.md.

    \b
    Examples:
      groundskeeper resume plan.org --model scripted:workers.yaml
      groundskeeper resume a/plan.org b/plan.org c/plan.org --jobs 3 --json
      GROUNDSKEEPER_MODEL=scripted:w.yaml groundskeeper resume --json
      ANTHROPIC_API_KEY=… groundskeeper resume plan.org --model anthropic:claude-sonnet-4-5

    Ctrl-C (SIGINT), or SIGTERM from a process manager, stops the run at once: its sandbox
    commands end, the tasks in flight keep their state, the run's end is sealed as
    interrupted [R009] and the command that continues it is printed (exit 130); a second
    Ctrl-C exits without sealing the end.

    Exit 0 when every task is DONE, 1 otherwise (or when the plan does not pass
    `groundskeeper lint`), 2 for an unreadable plan, a bad script or bad options (an
    `anthropic:` model without ANTHROPIC_API_KEY included), 3 when tasks wait at their
    approval gates (`:gate: approval`; reported WAITING, never DONE) and none FAILED: only a
    goal run (`groundskeeper run`, answered with `groundskeeper approve DIR --task ID`) answers
    a gate.
    """
    from groundskeeper.models import load_model
    from groundskeeper.plan.lint import validate
    from groundskeeper.plan.org import load_plan
    from groundskeeper.supervisor.runner import Runner, RunOptions

    if len(plans) > 1 or backend == "ray":
        if workdir is not None:
            fail_usage("--workdir names one plan's folder; with several plans drop it")
        run_many(
            [(str(p), ["resume", str(p), *forwarded(ctx, frozenset({"plans"}))]) for p in plans]
            or [("plan.org", ["resume", "plan.org", *forwarded(ctx, frozenset({"plans"}))])],
            jobs=jobs,
            backend=backend,
            address=address,
            as_json=as_json,
        )
    path = _plan_path(plans[0] if plans else None)
    workdir = _workdir(workdir)
    if not model_spec:
        fail_usage(
            "no worker model: pass --model scripted:FILE (or set GROUNDSKEEPER_MODEL);"
            " docs/plans.md describes the script format"
        )
    try:
        loaded = load_plan(path)
        model = load_model(model_spec, retries=model_retries, timeout=model_timeout)
        judge = load_judge(loaded, judge_spec, model_spec, judge_profile, model_retries,
                           model_timeout)  # fmt: skip
    except GroundskeeperError as exc:
        fail_usage(str(exc))
    options = RunOptions(
        max_parallel=max_parallel,
        require_checks=require_checks,
        require_red=require_red,
        forget_record=forget_record,
        accept_changes=accept_changes,
        max_turns=max_turns,
        disk_quota=disk_quota,
        judge_profile=judge_profile,
        breaker=breaker,
        max_total_attempts=max_total_attempts,
    )
    from groundskeeper.supervisor.runner import new_run_id

    def narrate_event(event: RunEvent) -> None:
        narrate(event_line(event))

    from groundskeeper.cli.interrupts import EXIT_INTERRUPTED, interruptible

    same: list[tuple[str, Path | bool | str | None]] = [
        ("--workdir", workdir), ("--require-checks", require_checks),
        ("--require-red", require_red), ("--judge-model", judge_spec),
        ("--judge-profile", judge_profile if judge_profile != "auto" else None),
    ]  # fmt: skip
    again = _continue_command(path, model_spec, same)
    run_id = new_run_id()
    with plan_lock(path) as lock:
        recorder = open_ledger(lock.control, run_id)
        telemetry = open_telemetry(lock.control)
        try:
            runner = Runner(
                loaded,
                model=model,
                workdir=workdir,
                options=options,
                recorder=recorder,
                telemetry=telemetry,
                on_event=narrate_event,
                run_id=run_id,
                run_lock=lock,
                judge_model=judge,
            )
            with interruptible(runner.interrupt, again):
                report = runner.run(lint=validate)
        except GroundskeeperError as exc:
            fail_usage(str(exc))
        finally:
            telemetry.close()
    resumable = (
        report.model_unavailable is not None
        or report.judge_unavailable is not None
        or report.attempt_cap is not None
        or report.interrupted is not None
    )
    if as_json:
        document = report.to_json()
        document["continue_with"] = again if resumable else None
        emit_json(document)
    else:
        # refused: the diagnostics are the answer; during a run they are commentary
        for diagnostic in report.diagnostics:
            click.echo(diagnostic.format(str(path)), err=report.started)
        if report.started:
            print_table(
                ("STATE", "TRIES", "CHECK", "TASK", "REASON"),
                [
                    (
                        t.state,
                        str(t.attempts),
                        verified_word(t.verified),
                        task_name(t.title, t.id),
                        t.reason or "",
                    )
                    for t in report.tasks
                ],
            )
            from groundskeeper.review.timeline import caught_label

            for t in report.tasks:
                for lie in t.lies:  # a reviewer sees the lie, not only the last excuse
                    click.echo(f"  {task_name(t.title, t.id)} {caught_label(lie)}: {lie}")
            states = [t.state for t in report.tasks]
            counts = ", ".join(f"{states.count(s)} {s}" for s in sorted(set(states)))
            narrate(f"run {report.run_id}: {len(states)} tasks — {counts}")
            narrate(usage_line(report.usage))
    if resumable:
        why = (report.model_unavailable or report.judge_unavailable or report.attempt_cap
               or f"interrupted by {report.interrupted}")  # fmt: skip
        narrate(f"{why}\ncontinue with: {again}")
    if report.interrupted is not None:
        sys.exit(EXIT_INTERRUPTED)
    if report.waiting:
        narrate(
            f"{len(report.waiting)} task(s) wait at their approval gates (`:gate: approval`);"
            " `resume` never answers them: a goal run (`groundskeeper run`) asks a person"
        )
        if not any(t.state == "FAILED" for t in report.tasks):
            sys.exit(EXIT_WAITING)
    sys.exit(EXIT_OK if report.ok else EXIT_FINDINGS)


def usage_line(usage: UsageTotals) -> str:
    return (
        f"model: {usage.calls} calls, {usage.input_tokens} input tokens ({usage.cache_read_tokens}"
        f" read from the cache, {usage.cache_write_tokens} written to it), {usage.output_tokens}"
        f" output tokens, {usage.latency_ms / 1000:.1f} s waiting"
    )


def _continue_command(
    plan: Path, model_spec: str, options: list[tuple[str, Path | bool | str | None]]
) -> str:
    """The command that continues this run, as a person can paste it: the same plan, model
    and the options that change what a verdict means or where the work is."""
    words = ["groundskeeper", "resume", str(plan), "--model", model_spec]
    for name, value in options:
        if isinstance(value, Path | str):
            words += [name, str(value)]
        elif value is True:
            words.append(name)
    return shlex.join(words)


def event_line(event: RunEvent) -> str:
    """One run event as a line of narration."""
    if event.kind == "task-start":
        return f"▶ {event.task_id}"
    if event.kind == "attempt-failed" and re.search(r"\bJ01\d: ", event.reason or ""):
        return (f"✘ {event.task_id}: attempt {event.attempts} passed its check but not its"
                f" judge — {event.reason}; feeding that back for another attempt")  # fmt: skip
    if event.kind == "attempt-failed":
        return (f"✘ {event.task_id}: attempt {event.attempts} did not pass its check"
                f" — {event.reason}; feeding that back for another attempt")  # fmt: skip
    if event.kind == "tamper":
        return f"! tampering: {event.reason}"
    if event.kind == "plan-edit":
        return f"✎ {event.reason}"
    check = verified_word(event.verified)
    why = f" — {event.reason}" if event.reason else ""
    if event.state == "WAITING":
        return f"⏸ WAITING {event.task_id} ({check}, attempts {event.attempts}){why}"
    return (f"{'✔' if event.state == 'DONE' else '✘'} {event.state} {event.task_id}"
            f" ({check}, attempts {event.attempts}){why}")  # fmt: skip


@contextmanager
def plan_lock(plan_path: Path) -> Iterator[RunLock]:
    """Hold the plan for this command (exit 2 naming the holder if another run has it),
    with an earlier version's control files moved into the control directory first."""
    from groundskeeper.record.control import ControlDir, RunLock

    control = ControlDir.for_plan(plan_path)
    try:
        lock = RunLock(control).acquire()
    except GroundskeeperError as exc:
        fail_usage(str(exc))
    try:
        try:
            moved = control.migrate()
        except (GroundskeeperError, OSError) as exc:
            fail_usage(f"cannot move the earlier control files into {control.path}: {exc}")
        if moved:
            narrate(f"moved {', '.join(moved)} into {control.path} (the control directory)")
        from groundskeeper.record.ledger import witness_refusal

        rolled_back = witness_refusal(control.path)
        if rolled_back is not None:  # a run must not seal over a record that lost lines
            fail_usage(rolled_back)
        yield lock
    finally:
        lock.release()


def open_ledger(control: ControlDir, run_id: str) -> StepRecorder:
    from groundskeeper.record.keys import ensure_signing_key
    from groundskeeper.record.ledger import Ledger

    try:
        loaded = ensure_signing_key()
    except GroundskeeperError as exc:
        fail_usage(str(exc))
    if loaded.created:
        narrate(f"created a signing key: {loaded.private_path} (public: {loaded.public_path})")
    return Ledger(control.path, loaded.key, run_id)


def open_telemetry(control: ControlDir) -> Telemetry:
    """The plan's telemetry database; one that cannot be opened (corrupt, foreign, read-only)
    is a usage error before anything runs, never a traceback."""
    from groundskeeper.record.telemetry import Telemetry

    try:
        return Telemetry(control.telemetry)
    except Exception as exc:  # sqlite3 and OS errors alike: nothing has run yet
        fail_usage(
            f"cannot open the telemetry database {control.telemetry}: {exc}; move it aside"
            " (it is only a record; the ledger is the evidence) and run again"
        )


def task_name(title: str, task_id: str) -> str:
    """A task as a person reads it: its title, and its id in brackets when that differs."""
    return title if task_id == title else f"{title} [{task_id}]"


def verified_word(value: bool | None) -> str:
    return {True: "verified", False: "unverified", None: "-"}[value]


def print_table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    """Columns padded to fit; the last one (the reason) runs free."""
    last = len(header) - 1
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(last)]
    lines = []
    for row in [header, *rows]:
        cells = [row[i].ljust(widths[i]) for i in range(last)]
        lines.append("  ".join([*cells, row[last]]).rstrip())
    click.echo("\n".join(lines))  # one write for the table (a long plan's has a line a task)


@click.command("check")
@click.argument("plan", required=False, type=click.Path(path_type=Path))
@click.option(
    "--workdir",
    type=click.Path(path_type=Path),
    help="The folder the checks see (default: the plan's folder).",
)
@click.option(
    "--write",
    is_flag=True,
    help="Write the verdicts into the headlines, as a sealed run of its own: a DONE task whose"
    " check fails becomes FAILED (its parents PARTIAL), unless the check could not finish (its"
    " deadline, an interrupt, the sandbox failing: no evidence, the DONE stays); a FAILED task"
    " whose check passes becomes DONE only if the ledger shows it failed on its own check.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
def check(plan: Path | None, workdir: Path | None, write: bool, as_json: bool) -> None:
    """Is DONE still earned? Run every task's acceptance check, no workers.

    Each check runs read-only in the sandbox; the verdict is PASS, FAIL (with a named
    reason) or NO_CHECK. A task's hard contracts judged on files (json-schema, non-empty,
    format, markdown-sections, workflow-script) are judged again on the files as they are:
    one that no longer holds fails the task with its code. Exit 0 when no check fails, 1
    when one does, 2 for an unreadable plan or a plan another run holds.

    With --write the changes are a run of their own: sealed in the plan's ledger (each check
    and each state change), recorded in telemetry, one run at a time per plan. A FAILED task
    is never promoted when the ledger shows it failed for tampering, a refused dock or a
    limit, when the ledger has no FAILED verdict for it at all, or in another workdir than
    the one it failed in.

    \b
    Example:
      groundskeeper check plan.org --write    demote DONE tasks whose evidence is gone
    """
    from groundskeeper.acceptance.check import check_plan
    from groundskeeper.plan.org import load_plan

    path = _plan_path(plan)
    workdir = _workdir(workdir)
    root = (workdir or path.parent).resolve()
    if write:
        with plan_lock(path) as lock:
            results = _check_and_write(path, root, lock.control)
    else:
        try:
            loaded = load_plan(path)
            results = _with_suites(loaded, check_plan(loaded, root), root, path)
        except GroundskeeperError as exc:
            fail_usage(str(exc))
    if as_json:
        emit_json({"tasks": [r.to_json() for r in results]})
    else:
        print_table(
            ("STATE", "VERDICT", "TASK", "REASON"),
            [
                (r.state, r.result.verdict, task_name(r.title, r.id), r.result.reason)
                for r in results
            ],
        )
    failed = any(r.result.verdict == "FAIL" for r in results)
    sys.exit(EXIT_FINDINGS if failed else EXIT_OK)


def _with_suites(plan: Plan, results: list[TaskCheck], root: Path, path: Path) -> list[TaskCheck]:
    """`check`'s results with each task whose acceptance check is its hard `pytest` contract
    judged by its suite (run again against its red-first record), not left at NO_CHECK; and
    a pass failed by a hard contract judged on the files as they are (`_file_contracts`)."""
    from dataclasses import replace

    from groundskeeper.plan.spec import compile_plan
    from groundskeeper.record.control import ControlDir
    from groundskeeper.supervisor.suite_baselines import suite_verdict

    compiled = compile_plan(plan)
    by_id = {spec.task_id: spec for spec in compiled}
    control = ControlDir.for_plan(path).path
    judged: list[TaskCheck] = []
    for result in results:
        spec = by_id.get(result.id)
        verdict = None
        if result.result.verdict == "NO_CHECK" and spec is not None:
            verdict = suite_verdict(spec, compiled, root, control, path)
        if spec is not None and (verdict or result.result).verdict != "FAIL":
            verdict = _file_contracts(spec, root, path) or verdict
        judged.append(result if verdict is None else replace(result, result=verdict))
    return judged


def _file_contracts(spec: TaskSpec, root: Path, path: Path) -> CheckResult | None:
    """The first hard failure of the task's contracts judged on the files as they are (a
    json-schema, non-empty, format, markdown-sections or workflow-script contract), as a
    failed check: a verdict asserted again is judged again (adversary-19 F12). None: they
    hold, or the task has none."""
    from groundskeeper.plan.contract_syntax import judged_on_files

    contracts = [c for c in spec.contracts if judged_on_files(c) and not c.soft]
    if not contracts:
        return None
    from groundskeeper.acceptance.attempt_record import AttemptRecord
    from groundskeeper.acceptance.check import CheckResult, sha256_text
    from groundskeeper.acceptance.contracts import ContractContext, judge_contracts
    from groundskeeper.acceptance.toolbox import Toolbox

    context = ContractContext(Toolbox(root, path), AttemptRecord(()), workdir=root,
                              protect=spec.protect)  # fmt: skip
    for verdict in judge_contracts(contracts, context):
        if verdict.hard_failure:
            why = f"{verdict.contract.text}: {verdict.message}"  # the code said apart
            return CheckResult("FAIL", verdict.code or "C090", why, "", None,
                               sha256_text(""), 0)  # fmt: skip
    return None


def _check_and_write(path: Path, root: Path, control: ControlDir) -> list[TaskCheck]:
    """`check --write` under the plan's lock: checks, then run-start and each check sealed,
    then the plan written, then the state changes sealed and recorded, then run-end."""
    from groundskeeper.acceptance.check import (
        INCONCLUSIVE_CODES,
        check_plan,
        write_check_verdicts,
    )
    from groundskeeper.plan.org import load_plan
    from groundskeeper.plan.spec import compile_plan
    from groundskeeper.record.backing import read_record
    from groundskeeper.supervisor.runner import new_run_id
    from groundskeeper.supervisor.sealing import RunSeal, SealingError

    run_id = new_run_id()
    ledger = open_ledger(control, run_id)
    telemetry = open_telemetry(control)
    try:
        loaded = load_plan(path)
        results = _with_suites(loaded, check_plan(loaded, root), root, path)
        record = read_record(ledger.history() if isinstance(ledger, HasHistory) else ())
        seal = RunSeal(ledger, run_id)
        seal.run_start(
            plan=str(path),
            plan_text=loaded.text,
            checks=[(r.id, r.result.check_sha256) for r in results],
            model="check --write",
            workdir=str(root),
            max_parallel=1,
            require_checks=False,
        )
        for result in results:
            if result.result.verdict != "NO_CHECK":
                seal.check(result.id, 0, result.result)
        index = {r.id: i for i, r in enumerate(results)}
        rules = {t.task_id: t.verdict_sha256 for t in compile_plan(loaded)}

        def sealed(changes: list[tuple[TaskCheck, str]], inserted: bool) -> None:
            if inserted:  # the one change beyond a keyword, sealed before it is made
                from groundskeeper.plan.edit import TODO_LINE

                seal.plan_edit(1, TODO_LINE, "a verdict org reads only with a #+TODO: line")
                narrate(f"inserted `{TODO_LINE}` as line 1 of {path}")
            for task, new in changes:
                seal.state(task.id, task.state, new, rules=rules.get(task.id))
                why = f"{task.result.code}: {task.result.reason}" if task.result.code else None
                telemetry.record_verdict(
                    run_id=run_id, task_id=task.id, idx=index[task.id], title=task.title,
                    state=new, output=task.result.output, attempt=0,
                    verified=task.result.verdict != "NO_CHECK", reason=why,
                    duration_ms=task.result.duration_ms,
                )  # fmt: skip
            if seal.failure is not None:
                raise SealingError(seal.failure)

        # a task with contracts or evidence is judged on a worker's claim, a gated one by a
        # person and a docking one by conformance, never by its check alone: `check --write`
        # does not promote it
        claimed = {t.task_id for t in compile_plan(loaded) if t.judged_beyond_check}

        def promotable(task_id: str) -> bool:
            if task_id in claimed or not record.promotable(task_id):
                return False
            # a check passing in another folder says nothing of the work where the task
            # failed (adversary-19 F21): promoted only in the workdir its FAILED was sealed in
            failed_in = record.tasks[task_id].workdir
            if failed_in != str(root):
                narrate(
                    f"{task_id}: not promoted to DONE: its FAILED was sealed in"
                    f" {failed_in or 'a workdir its run did not name'}, and this check ran in"
                    f" {root}: resume with `--workdir {root}` to judge it there"
                )
                return False
            # a protected input that differs from what the record sealed as the task's work
            # started is no ground for DONE: a sibling may have rewritten its checker
            from groundskeeper.acceptance.protect import input_sha256

            sealed_inputs = record.protected.get(task_id, {})
            moved = [p for p, h in sealed_inputs.items() if input_sha256(root, p) != h]
            if moved:
                narrate(
                    f"{task_id}: not promoted to DONE: protected input changed since the record"
                    f" sealed it: {', '.join(sorted(moved))}"
                )
                return False
            others = _others_work(record, task_id, results[index[task_id]].result)
            if others:
                narrate(
                    f"{task_id}: not promoted to DONE: its check passes now on files another"
                    f" task's worker changed or made ({', '.join(others[:5])}"
                    f"{' …' if len(others) > 5 else ''}), which may be what it rests on"
                    " (adversary-28 F1); resume the plan, which judges that work"
                )
            return not others

        updated = write_check_verdicts(loaded, results, promotable=promotable, before_write=sealed)
        for kept in updated:
            if kept.state == "DONE" and kept.result.code in INCONCLUSIVE_CODES:
                narrate(
                    f"{kept.id}: kept DONE: its check could not finish ({kept.result.reason}),"
                    " which says nothing of the work; sealed as its check. Run `groundskeeper"
                    " check --write` again to judge it"
                )
        seal.run_end(
            not any(r.result.verdict == "FAIL" for r in updated),
            [(r.id, r.state) for r in updated],
            0,
        )
    except GroundskeeperError as exc:
        fail_usage(str(exc))
    finally:
        telemetry.close()
    return updated


def _others_work(record: Record, task_id: str, result: CheckResult) -> list[str]:
    """The files another task's workers changed or made (in any run of the plan's record)
    that this passing check read, or made in a folder it listed; all of them when what it
    read cannot be told. A check passing on a sibling's change is no ground for promoting
    the task (adversary-28 F1: the sibling emptied the data the task's check sums)."""
    touched = {p for p, tasks in record.wrote.items() if any(t != task_id for t in tasks)}
    touched |= {p for p, maker in record.made.items() if maker != task_id}
    if result.read is None or result.folders is None:
        return sorted(touched)
    read, folders = set(result.read), set(result.folders)
    return sorted(p for p in touched if p in read or p.rpartition("/")[0] in folders)
