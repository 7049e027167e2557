"""The red-first record of each `pytest` contract's suite: taken once per task before any
worker runs (beside red-first), kept in the control directory so a resumed run compares with
the same record, and handed to the task's contracts stage. It owns when and where; running
and judging the suite is `acceptance.suite`'s.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Set
from pathlib import Path
from typing import TYPE_CHECKING

from groundskeeper.plan.contract_syntax import suite_args, verifying

if TYPE_CHECKING:
    from groundskeeper.acceptance.check import CheckResult
    from groundskeeper.plan.contract_syntax import Contract
    from groundskeeper.plan.spec import PlanSpec, TaskSpec
    from groundskeeper.supervisor.task_run import TaskRun

logger = logging.getLogger(__name__)

BASELINES_FILE = "_suite_baselines.json"


def take_baselines(
    tasks: Iterable[TaskRun],
    workdir: Path,
    control: Path,
    started: Set[str],
    accept_changes: bool = False,
) -> None:
    """Set each task's `baselines`: read back for a task a worker already started and for a
    carried DONE, taken now (on the untouched workdir) for the others. A suite that cannot
    be run now has none, and its contract then fails closed (C018) naming why.

    `accept_changes` (`resume --accept-changes`: the workdir's files taken as they are now):
    every task's suite is recorded again now, carried DONEs and started tasks included, so a
    test a person added since the red-first run is no new test (adversary-20 F6). A DONE is
    then judged on that record, every test of it passing; `--require-red` still asks for the
    red observation sealed in the task's history."""
    tasks = list(tasks)
    suited = [t for t in tasks if _suites(t)]
    if not suited:
        return  # no suite to run or read back (and `acceptance.suite` not imported)
    from groundskeeper.acceptance.suite import Baseline, SuiteRefused, run_suite
    from groundskeeper.plan.expected import configuration_kept

    path = control / BASELINES_FILE
    stored = _read(path)
    # a DONE carried from an earlier run is judged again against the record its task kept
    # (the final sweep, a roll-up); none kept: its suite fails closed there (C018)
    for task in suited:
        if task.start_state == "DONE" and not accept_changes:
            kept = stored.get(task.heading.task_id, {})
            for contract in _suites(task):
                if contract.text in kept:
                    task.baselines[contract.text] = Baseline.from_json(kept[contract.text])
    pending = [t for t in suited if t.start_state != "DONE" or accept_changes]
    if not pending:
        return
    # pytest's configuration the run keeps from every worker: the suite's own, as protected
    kept_configuration = configuration_kept([t.spec for t in tasks], workdir)
    changed = False
    for task in pending:
        suites = _suites(task)
        task_id = task.heading.task_id
        kept = stored.setdefault(task_id, {})
        for contract in suites:
            if task_id in started and not accept_changes:
                if contract.text in kept:
                    task.baselines[contract.text] = Baseline.from_json(kept[contract.text])
                continue
            try:
                record = run_suite(
                    workdir,
                    suite_args(contract.args)[0],
                    protect=task.spec.protect + kept_configuration,
                )
            except SuiteRefused as refused:
                logger.warning("%s: no red-first record of `%s`: %s", task_id, contract.text,
                               refused.message)  # fmt: skip
                kept.pop(contract.text, None)
                changed = True
                continue
            baseline = Baseline.of(record)
            task.baselines[contract.text] = baseline
            kept[contract.text] = baseline.to_json()
            changed = True
    if changed:
        _write(path, stored)


def _suites(task: TaskRun) -> list[Contract]:
    return [c for c in task.contracts if c.kind == "pytest"]


def suite_verdict(
    task: TaskSpec, spec: PlanSpec, workdir: Path, control: Path, plan_path: Path
) -> CheckResult | None:
    """`check`'s verdict on a task whose acceptance check is its hard `pytest` contract(s):
    each suite run again, read-only, and judged against the red-first record its task kept
    (none kept: C018, fail closed) by the contract's own judge, under the plan's readings a
    run gives it (tests a task may add, remove or rename; a red test left to a later task of
    an ORDERED sequence), as the final sweep judges it. None: no such contract."""
    suites = [c for c in verifying(task.contracts) if c.kind == "pytest"]
    if not suites:
        return None
    from groundskeeper.acceptance.attempt_record import AttemptRecord
    from groundskeeper.acceptance.check import CheckResult, sha256_text
    from groundskeeper.acceptance.contracts import ContractContext, judge_contracts
    from groundskeeper.acceptance.protect import matched_files
    from groundskeeper.acceptance.suite import Baseline
    from groundskeeper.acceptance.toolbox import Toolbox
    from groundskeeper.plan.expected import configuration_kept
    from groundskeeper.plan.suite_paths import later_in_order, left_to_later, suite_tests_asked

    tasks = list(spec)
    kept = _read(control / BASELINES_FILE).get(task.task_id, {})
    free, removed, renamed, new = suite_tests_asked(tasks)
    later = later_in_order(spec).get(task.task_id)
    context = ContractContext(
        Toolbox(workdir, plan_path),
        AttemptRecord(()),
        workdir=workdir,
        baselines={text: Baseline.from_json(b) for text, b in kept.items()},
        protect=task.protect + configuration_kept(tasks, workdir),
        hidden=tuple(matched_files(workdir, task.hide)) if task.hide else (),
        added=tuple(dict.fromkeys(p for ps in free.values() for p in ps)),
        new_tests=tuple(dict.fromkeys(p for ps in new.values() for p in ps)),
        removed=tuple(dict.fromkeys(p for ps in removed.values() for p in ps)),
        renamed=tuple(dict.fromkeys(r for rs in renamed.values() for r in rs)),
        left_to=(lambda test: left_to_later(task, later, test)) if later else None,
    )  # fmt: skip
    said: list[str] = []
    for verdict in judge_contracts(suites, context):
        if verdict.code is not None:
            message, _, output = verdict.message.partition("\n")
            reason = f"`{verdict.contract.text}`: {message}"
            if verdict.code == "C022" and "not collected before any work" in message:
                reason += (
                    " (tests added since the red-first run: when a person added them, `resume"
                    " --accept-changes` records the suite again as it is now)"
                )
            return CheckResult("FAIL", verdict.code, reason, output, None, sha256_text(output), 0)
        said.append(verdict.message)
    return CheckResult("PASS", "", "; ".join(said), "", None, sha256_text(""), 0)


def _read(path: Path) -> dict[str, dict[str, dict[str, list[str]]]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write(path: Path, data: object) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(data, sort_keys=True))
    os.replace(temporary, path)
