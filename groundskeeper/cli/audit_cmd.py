"""`groundskeeper audit PLAN`: does the signed record back what the plan's headlines claim?

The record is read by `groundskeeper.record.backing`, the ledger verified by `ledger_verify`; this
module picks the plan and its ledger, prints the findings and the exit code.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from groundskeeper.cli.output import EXIT_FINDINGS, EXIT_OK, emit_json, fail_usage, narrate
from groundskeeper.cli.params import trusted_key_option
from groundskeeper.errors import GroundskeeperError


@dataclass(frozen=True, slots=True)
class AuditFinding:
    code: str
    task_id: str | None
    line: int | None
    message: str

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "task_id": self.task_id, "line": self.line,
                "message": self.message}  # fmt: skip


@click.command("audit")
@click.argument("plan", required=False, type=click.Path(path_type=Path))
@trusted_key_option(" (OpenSSH)")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help='Print {"ok", "plan", "ledger", "ledger_ok", "findings": [{"code", "task_id", '
    '"line", "message"}], "unfinished_runs", "superseded_runs"} on stdout (superseded: unfinished, '
    "but a later run sealed its end).",
)
def audit(plan: Path | None, key_files: tuple[Path, ...], as_json: bool) -> None:
    """Which headlines does the signed ledger not back? Offline; changes nothing.

    A DONE headline counts only when the plan's ledger holds a sealed DONE for that task,
    judged with the check the plan has now. Reported, each with its line:

    \b
      unbacked-done    DONE in the plan, no sealed DONE for it (or one for another
                       check): hand-edited, or written by something other than a run
      state-mismatch   a finished state the ledger does not show for that task, or
                       an open one (TODO) where it sealed a verdict: DONE (an older
                       plan put back) or FAILED (never written: a #+TODO line without it)
      unfinished-run   a run that started and never sealed its end (killed, or
                       stopped unable to seal: a full disk) and no later run sealed one
      failed-now-passes  FAILED in the plan (the breaker), but its check passed since
                       (a later session's stop): the headline is stale
      unrecorded-change  the latest run stopped (killed, SIGTERM) while a worker's
                       call ran, and the workdir holds files its start and its sealed
                       calls do not explain: the next resume holds them against the
                       tasks in flight (`--accept-changes` takes them as they are)
      refused-session  a session `agent run` refused (the plan or the record changed
                       during it), with no `agent seal` since: the seal may be its own
      ledger           the ledger itself does not verify (see `ledger verify`), with
                       the witness: a ledger rolled back or forked backs nothing

    The next `groundskeeper resume` re-verifies every unbacked DONE before it skips it.
    Exit 0 when the record backs every headline, 1 on findings, 2 for an unreadable plan.

    \b
    Example:
      groundskeeper audit plans/pricing/plan.org
    """
    from groundskeeper.cli.ledger_cmd import trusted_or_exit
    from groundskeeper.cli.run_cmd import _plan_path
    from groundskeeper.plan.org import load_plan
    from groundskeeper.record.backing import read_record
    from groundskeeper.record.control import ControlDir, RunLock
    from groundskeeper.record.ledger import read_steps, verify_ledger
    from groundskeeper.record.witness import Witness

    path = _plan_path(plan)
    try:
        loaded = load_plan(path)
    except GroundskeeperError as exc:
        fail_usage(str(exc))
    keys = trusted_or_exit(key_files)
    control = ControlDir.for_plan(path)
    findings: list[AuditFinding] = []
    ledger_ok = False
    steps: list[tuple[str, str, dict[str, Any]]] = []
    if control.ledger.exists():
        try:
            # with the witness (read only: audit never advances it): a ledger rolled back or
            # forked verifies clean by its own files, and backs nothing (SPEC §12)
            report = verify_ledger(control.ledger, keys, witness=Witness())
            ledger_ok = report.ok
            steps = [
                (str(obj.get("run", "")), str(obj.get("step")), obj["body"])
                for _, obj in read_steps(control.ledger)
                if obj is not None and isinstance(obj.get("body"), dict)
            ]
        except GroundskeeperError as exc:
            fail_usage(str(exc))
        for bad in report.findings:
            where = f"line {bad.line}: " if bad.line is not None else ""
            message = f"{where}{bad.code}: {bad.reason}"
            findings.append(AuditFinding("ledger", None, None, message))
    record = read_record(steps)
    done_states = set(loaded.done_states)
    from groundskeeper.plan.spec import compile_plan

    spec = compile_plan(loaded)
    for task in loaded.tasks():
        keyword = task.keyword or ""
        sha = _check_sha(task)
        sealed = record.tasks.get(task.task_id)
        rules = spec.of(task).verdict_sha256
        if keyword == "DONE" and not record.backs_done(task.task_id, sha, rules):
            why = (
                "no sealed DONE for it"
                if sealed is None or sealed.state != "DONE"
                else "its sealed DONE was judged with another check"
                if sealed.check_sha256 != sha
                else "its sealed DONE was judged under other rules (a gate, judge, dock,"
                " contract or evidence added or changed since)"
            )
            message = f"`{task.title}` is DONE in the plan, but {why}"
            findings.append(AuditFinding("unbacked-done", task.task_id, task.line, message))
        elif keyword in done_states and sealed is not None and sealed.state != keyword:
            message = f"`{task.title}` is {keyword} in the plan; the ledger says {sealed.state}"
            findings.append(AuditFinding("state-mismatch", task.task_id, task.line, message))
        elif keyword not in done_states and sealed is not None and sealed.state == "DONE":
            # an older plan put back (a restore, a sync) undoes sealed work silently: the next
            # run redoes it. Set to TODO by hand to ask for a redo, it clears with that run
            message = (
                f"`{task.title}` is {keyword or 'without a keyword'} in the plan; the ledger"
                " sealed it DONE (an older copy of the plan put back? the next run redoes it)"
            )
            findings.append(AuditFinding("state-mismatch", task.task_id, task.line, message))
        elif (
            keyword not in done_states
            and sealed is not None
            and sealed.state != keyword
            and sealed.state not in loaded.active_states
        ):
            # a sealed verdict (the breaker's FAILED) the headline never showed: never
            # written (the plan's keywords lack it), or the headline set back by hand
            known = sealed.state in loaded.done_states or not loaded.declares_keywords
            how = (
                "set back by hand, or never written? the next run judges it again"
                if known
                else f"the plan's #+TODO line has no {sealed.state}, so it was never written"
            )
            message = (
                f"`{task.title}` is {keyword or 'without a keyword'} in the plan; the ledger"
                f" sealed it {sealed.state} ({how})"
            )
            findings.append(AuditFinding("state-mismatch", task.task_id, task.line, message))
    passed = _passed_since_failed(steps)
    from groundskeeper.record.backing import read_record

    record = read_record(steps)
    for task in loaded.tasks():
        if task.keyword == "FAILED" and task.task_id in passed:
            how = (
                # `check --write` promotes on a check alone (adversary-19 F7)
                "`check --write` does not promote a task judged on more than its check"
                " (contracts, evidence, a judge, a gate or a dock): set its headline back to"
                f" TODO and `groundskeeper resume {path}` judges it whole"
                if spec.of(task).judged_beyond_check
                # nor one whose FAILED was not its own check's (adversary-28 O1: red-first
                # under --require-red, tampering, a refused dock, a limit)
                else "`check --write` does not promote a task whose FAILED was not its check's"
                " own failure (a red-first run, tampering, a refused dock or a limit): set its"
                f" headline back to TODO and `groundskeeper resume {path}` judges it whole"
                if not record.promotable(task.task_id)
                else f"`groundskeeper check {path} --write` judges it again and writes it"
            )
            message = (
                f"`{task.title}` is FAILED in the plan, but its check passed after it was"
                f" sealed FAILED (run {passed[task.task_id]}): the headline is stale; {how}"
            )
            findings.append(AuditFinding("failed-now-passes", task.task_id, task.line, message))
    from groundskeeper.agents.seal import refusals_in_force

    for refused in refusals_in_force([(step, body) for _, step, body in steps]):
        message = (
            f"`agent run` refused {refused}; the seal in force may be that session's own, and"
            " no session is launched on it until you accept it (`groundskeeper agent seal`)"
        )
        findings.append(AuditFinding("refused-session", None, None, message))
    # the last run is still going when someone holds the plan: not "killed"
    running = record.runs[-1] if record.runs and RunLock.held(control) else None
    unfinished = record.unfinished(current=running)
    # a run that never sealed its end is a finding until a later run seals one: then it is
    # history (the later run judged the plan again; each headline is checked above)
    last_ended = max((i for i, r in enumerate(record.runs) if r in record.ended), default=-1)
    history = [r for r in unfinished if record.runs.index(r) < last_ended]
    for run in unfinished:
        if run in history:
            continue
        message = (
            f"run {run} started and never sealed its run-end (killed, or stopped where it"
            " could not seal one: a full disk, a ledger it could not write)"
        )
        findings.append(AuditFinding("unfinished-run", None, None, message))
    findings += _unrecorded_changes(path, control, record)
    ok = ledger_ok and not findings if control.ledger.exists() else not findings
    if as_json:
        emit_json({
            "ok": ok,
            "plan": str(path),
            "ledger": str(control.ledger),
            "ledger_ok": ledger_ok,
            "findings": [f.to_json() for f in findings],
            "unfinished_runs": unfinished,
            "superseded_runs": history,
        })  # fmt: skip
    else:
        for found in findings:
            where = f"{path}:{found.line}" if found.line is not None else str(path)
            click.echo(f"{where}: {found.code}: {found.message}")
        for run in history:
            narrate(f"note: run {run} never sealed its run-end; a later run sealed its own")
        if not control.ledger.exists():
            narrate(f"{path}: no ledger yet ({control.ledger}); nothing has been sealed")
        narrate(
            f"{'ok' if ok else 'not backed'}: {len(findings)} finding(s) in {path}"
            f" against {control.ledger}"
        )
    sys.exit(EXIT_OK if ok else EXIT_FINDINGS)


def _passed_since_failed(steps: list[tuple[str, str, dict[str, Any]]]) -> dict[str, str]:
    """Each task sealed FAILED whose latest check since then passed (a later session's stop,
    `agent run`'s judgment): task id → the run that passed it."""
    failed: set[str] = set()
    passed: dict[str, str] = {}
    for run, step, body in steps:
        task = body.get("task_id")
        if not isinstance(task, str):
            continue
        if step == "state":
            passed.pop(task, None)
            if body.get("to") == "FAILED":
                failed.add(task)
            else:
                failed.discard(task)
        elif step == "check" and task in failed:
            if body.get("verdict") == "PASS":
                passed[task] = run
            else:
                passed.pop(task, None)
    return passed


def _check_sha(task: Any) -> str | None:
    from groundskeeper.acceptance.check import SealedCheck

    return SealedCheck.seal(task.check).sha256 if task.check is not None else None


def _unrecorded_changes(path: Path, control: Any, record: Any) -> list[AuditFinding]:
    """The files the latest run's stopped call changed that no sealed line lists
    (`run_paths.unaccounted` on its sealed start snapshot), when it stopped with tasks in
    flight (adversary-13 F3): one finding naming them, or none."""
    import os

    from groundskeeper.supervisor.run_paths import (
        SNAPSHOTS_DIR,
        Snapshots,
        snapshot_hashes,
        unaccounted,
    )

    if not record.runs or not record.in_flight:
        return []
    run = record.runs[-1]
    digest = record.snapshots.get(run)
    if digest is None:
        return []
    workdir = Path(record.workdirs.get(run) or path.resolve().parent)
    snapshot = Snapshots(control.path / SNAPSHOTS_DIR).read(digest)
    plan = os.path.relpath(path.resolve(), workdir.resolve())
    made, changed = unaccounted(workdir, None, snapshot, record.last_wrote, [plan])
    listed = sorted({*made, *changed})
    if not listed:
        return []
    shown = ", ".join(f"`{p}`" for p in listed[:10]) + (" …" if len(listed) > 10 else "")
    lost = " (the run-start snapshot is gone, so every file counts)" if snapshot is None else ""
    hashed = snapshot_hashes(snapshot)
    stuck = [p for p in changed if p not in hashed]
    held = (
        f"; putting back {', '.join(f'`{p}`' for p in stuck[:10])}"
        f"{' …' if len(stuck) > 10 else ''} does not free {'it' if len(stuck) == 1 else 'them'}"
        " (the snapshot holds only size and time there): once right, resume with"
        " `--accept-changes`"
        if stuck
        else ""
    )
    message = (
        f"run {run} stopped while task(s) {', '.join(record.in_flight)} worked, and"
        f" {len(listed)} file(s) changed since its start that no sealed call explains: {shown}"
        f"{lost};"
        " the next resume holds them against those tasks (put them back — remove the ones the"
        " call made — or resume with `--accept-changes` to take them as they are)"
        f"{held}"
    )
    return [AuditFinding("unrecorded-change", None, None, message)]
