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

from groundskeeper.plan.contract_syntax import suite_args

if TYPE_CHECKING:
    from groundskeeper.plan.contract_syntax import Contract
    from groundskeeper.supervisor.task_run import TaskRun

logger = logging.getLogger(__name__)

BASELINES_FILE = "_suite_baselines.json"


def take_baselines(
    tasks: Iterable[TaskRun], workdir: Path, control: Path, started: Set[str]
) -> None:
    """Set each pending task's `baselines`: read back for a task a worker already started,
    taken now (on the untouched workdir) for the others. A suite that cannot be run now has
    none, and its contract then fails closed (C018) naming why."""
    tasks = list(tasks)
    pending = [t for t in tasks if t.start_state != "DONE" and _suites(t)]
    if not pending:
        return  # no suite to run or read back (and `acceptance.suite` not imported)
    from groundskeeper.acceptance.suite import Baseline, SuiteRefused, run_suite
    from groundskeeper.plan.expected import configuration_kept

    # pytest's configuration the run keeps from every worker: the suite's own, as protected
    kept_configuration = configuration_kept([t.spec for t in tasks], workdir)
    path = control / BASELINES_FILE
    stored = _read(path)
    changed = False
    for task in pending:
        suites = _suites(task)
        task_id = task.heading.task_id
        kept = stored.setdefault(task_id, {})
        for contract in suites:
            if task_id in started:
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
