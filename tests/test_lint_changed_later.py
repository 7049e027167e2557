"""Adversary-21 F10: a later task asked to amend what an earlier task's check reads ("Append a
row `total,5` to out/report.csv" after "Write out/report.csv …", checked by its line count).
The run lets the asked change through, and the earlier DONE is judged again on the final
files at its parent's roll-up and the final sweep, where its check no longer holds. Lint
says so before the run (T042), naming both tasks and the file."""

from __future__ import annotations

from pathlib import Path

from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import load_plan
from tests.test_cli_run import HEAD, task

ROWS = task("Write out/report.csv: a header line `item,qty`, then the rows of data/sales.csv",
            "rows", 'test "$(wc -l < out/report.csv)" -eq 3', level=2)  # fmt: skip
TOTAL = task("Append a row `total,N` to out/report.csv, N the sum of the qty column", "total",
             'test "$(tail -n 1 out/report.csv)" = "total,5"', level=2)  # fmt: skip
ROWS_TITLE = "Write out/report.csv: a header line `item,qty`, then the rows of data/sales.csv"
REPORT = "* TODO Report\n  :PROPERTIES:\n  :ID: report\n  :ORDERED: t\n  :END:\n"


def _found(root: Path, body: str) -> list[tuple[str, str, str]]:
    (root / "data").mkdir()
    (root / "data" / "sales.csv").write_text("a,2\nb,3\n")
    plan = root / "plan.org"
    plan.write_text(HEAD + body)
    return [(d.level, d.scope, d.message) for d in validate(load_plan(plan)) if d.code == "T042"]


def test_a_later_task_asked_to_change_what_an_earlier_check_reads_is_warned(
    tmp_path: Path,
) -> None:
    ((level, scope, message),) = _found(tmp_path, REPORT + ROWS + TOTAL)
    assert (level, scope) == ("warning", ROWS_TITLE)
    assert message == (
        "the check of task rows reads `out/report.csv`, which the text of task total, later in"
        " the plan, asks to change: rows is judged again on the final files (at its parent's"
        " roll-up and the run's final sweep), so its check must also hold after total's"
        " change, or rows fails then"
    )


def test_only_the_check_that_runs_before_the_change_is_warned(tmp_path: Path) -> None:
    # rows' check sees total's change first; total's is judged again after rows rewrote it
    found = _found(tmp_path, REPORT + TOTAL + ROWS)
    assert [m.split(",", 1)[0] for _, _, m in found] == [
        "the check of task total reads `out/report.csv`"
    ]


def test_a_later_task_that_does_not_ask_to_change_it_is_not(tmp_path: Path) -> None:
    other = task("Write out/summary.txt from out/report.csv", "sum", "test -s out/summary.txt",
                 level=2)  # fmt: skip
    assert _found(tmp_path, REPORT + ROWS + other) == []


def test_the_roll_up_names_the_later_task_not_an_undoing(tmp_path: Path) -> None:
    import json

    from tests.test_cli_run import resume

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "sales.csv").write_text("a,2\nb,3\n")
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD + REPORT + ROWS + TOTAL)
    rows = "mkdir -p out && { echo item,qty; cat data/sales.csv; } > out/report.csv"
    total = "echo total,5 >> out/report.csv"
    script = tmp_path / "w.yaml"
    script.write_text(
        "workers:\n"
        f"  rows: [{{tool: sh, input: {{cmd: {json.dumps(rows)}}}}}, {{say: DONE}}]\n"
        f"  total: [{{tool: sh, input: {{cmd: {json.dumps(total)}}}}}, {{say: DONE}}]\n"
    )
    _, doc = resume(plan, script)
    states = {t["id"]: (t["state"], t["reason"]) for t in doc["tasks"]}
    assert states["report"] == (
        "PARTIAL",
        "a child's check no longer holds after a later task's asked change: " + ROWS_TITLE,
    ), states
    assert states["rows"][0] == "FAILED"
    assert str(states["rows"][1]).endswith(
        "; task total, later in the plan, was asked to change `out/report.csv`, which this"
        " check reads: both checks must hold on the final files (lint T042)"
    ), states
