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
    '"line", "message"}], "unfinished_runs"} on stdout.',
)
def audit(plan: Path | None, key_files: tuple[Path, ...], as_json: bool) -> None:
    """Which headlines does the signed ledger not back? Offline; changes nothing.

    A DONE headline counts only when the plan's ledger holds a sealed DONE for that task,
    judged with the check the plan has now. Reported, each with its line:

    \b
      unbacked-done    DONE in the plan, no sealed DONE for it (or one for another
                       check): hand-edited, or written by something other than a run
      state-mismatch   a finished state the ledger does not show for that task
      unfinished-run   a run that started and never sealed its end (killed)
      ledger           the ledger itself does not verify (see `ledger verify`)

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
            report = verify_ledger(control.ledger, keys)
            ledger_ok = report.ok
            steps = [
                (str(obj.get("run", "")), str(obj.get("step")), obj["body"])
                for _, obj in read_steps(control.ledger)
                if obj is not None and isinstance(obj.get("body"), dict)
            ]
        except GroundskeeperError as exc:
            fail_usage(str(exc))
        for bad in report.findings:
            message = f"line {bad.line}: {bad.code}: {bad.reason}"
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
    # the last run is still going when someone holds the plan: not "killed"
    running = record.runs[-1] if record.runs and RunLock.held(control) else None
    unfinished = record.unfinished(current=running)
    for run in unfinished:
        message = f"run {run} started and never sealed its run-end (it was killed)"
        findings.append(AuditFinding("unfinished-run", None, None, message))
    ok = ledger_ok and not findings if control.ledger.exists() else not findings
    if as_json:
        emit_json({
            "ok": ok,
            "plan": str(path),
            "ledger": str(control.ledger),
            "ledger_ok": ledger_ok,
            "findings": [f.to_json() for f in findings],
            "unfinished_runs": unfinished,
        })  # fmt: skip
    else:
        for found in findings:
            where = f"{path}:{found.line}" if found.line is not None else str(path)
            click.echo(f"{where}: {found.code}: {found.message}")
        if not control.ledger.exists():
            narrate(f"{path}: no ledger yet ({control.ledger}); nothing has been sealed")
        narrate(
            f"{'ok' if ok else 'not backed'}: {len(findings)} finding(s) in {path}"
            f" against {control.ledger}"
        )
    sys.exit(EXIT_OK if ok else EXIT_FINDINGS)


def _check_sha(task: Any) -> str | None:
    from groundskeeper.acceptance.check import SealedCheck

    return SealedCheck.seal(task.check).sha256 if task.check is not None else None
