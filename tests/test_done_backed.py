"""DONE is backed by the record: a DONE headline the ledger does not back is re-verified
before anything is skipped, and `groundskeeper audit` names every such headline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from groundskeeper.cli import main
from tests.test_cli_run import HEAD, keywords, resume, setup, states, steps, task

DONE_WORK = "workers:\n  a: [{tool: write_file, input: {path: a.txt, content: a}}, {say: DONE}]\n"


def audit(plan: Path) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(main, ["audit", str(plan), "--json"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


def hand_edit(plan: Path, old: str, new: str) -> None:
    plan.write_text(plan.read_text().replace(old, new, 1))


def test_a_hand_written_done_without_the_work_goes_back_to_todo_and_is_worked(
    tmp_path: Path,
) -> None:
    plan, script = setup(tmp_path, task("A", "a", "grep -q a a.txt"), DONE_WORK)
    hand_edit(plan, "* TODO A", "* DONE A")
    code, found = audit(plan)
    assert code == 1
    assert [(f["code"], f["task_id"], f["line"]) for f in found["findings"]] == [
        ("unbacked-done", "a", 2)
    ]
    result, doc = resume(plan, script)
    assert result.exit_code == 0, doc
    assert states(doc) == {"a": ("DONE", 1, True)}
    assert (tmp_path / "a.txt").read_text() == "a"  # the worker did run
    starts = [(s["task_id"], s["kind"]) for s in steps(plan, "task-start")]
    assert starts == [("a", "reverify"), ("a", "leaf")]
    assert [(s["from"], s["to"]) for s in steps(plan, "state")] == [
        ("DONE", "TODO"),
        ("TODO", "DONE"),
    ]
    assert audit(plan) == (0, {**audit(plan)[1], "ok": True})


def test_a_hand_written_done_whose_check_passes_is_kept_as_reverified(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("A", "a", "grep -q a a.txt"),
        "workers:\n  a: [{tool: write_file, input: {path: ran.txt, content: x}}, {say: DONE}]\n",
    )
    (tmp_path / "a.txt").write_text("a")
    hand_edit(plan, "* TODO A", "* DONE A")
    result, doc = resume(plan, script)
    assert result.exit_code == 0
    (only,) = doc["tasks"]
    assert (only["state"], only["verified"]) == ("DONE", True)
    assert only["reason"].startswith("re-verified: the DONE headline had no sealed record")
    assert not (tmp_path / "ran.txt").exists()  # no worker was needed
    assert audit(plan)[0] == 0


def test_a_backed_done_is_skipped_without_running_anything(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, task("A", "a", "grep -q a a.txt"), DONE_WORK)
    first, _ = resume(plan, script)
    assert first.exit_code == 0
    second, doc = resume(plan, script)
    assert second.exit_code == 0 and states(doc) == {"a": ("DONE", 0, None)}
    runs = [s["run_id"] for s in steps(plan, "run-start")]
    assert len(runs) == 2
    assert [c for c in steps(plan, "check") if c["run_id"] == runs[1]] == []


def test_a_done_sealed_for_another_check_is_reverified(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, task("A", "a", "grep -q a a.txt"), DONE_WORK)
    assert resume(plan, script)[0].exit_code == 0
    hand_edit(plan, "grep -q a a.txt", "grep -q zzz a.txt")  # the check changed by hand
    code, found = audit(plan)
    assert code == 1 and "another check" in found["findings"][0]["message"]
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    assert states(doc)["a"][0] == "FAILED"
    assert steps(plan, "task-start")[1]["kind"] == "reverify"


def test_a_done_without_check_or_record_is_only_unverified(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, task("A", "a"), "workers:\n  a: [{say: DONE}]\n")
    hand_edit(plan, "* TODO A", "* DONE A")
    result, doc = resume(plan, script)
    assert result.exit_code == 0
    (only,) = doc["tasks"]
    assert (only["state"], only["verified"], only["reason"]) == (
        "DONE",
        False,
        "unverified (no record)",
    )
    required, doc = resume(plan, script, "--require-checks")
    assert required.exit_code == 1
    (only,) = doc["tasks"]
    assert (only["state"], only["reason"]) == ("FAILED", "no acceptance check (--require-checks)")
    assert keywords(plan) == {"a": "FAILED"}


def test_a_hand_written_done_parent_is_rolled_up_again(tmp_path: Path) -> None:
    body = "* DONE Parent\n  :PROPERTIES:\n  :ID: parent\n  :END:\n" + task(
        "A", "a", "grep -q a a.txt", 2
    )
    plan, script = setup(tmp_path, body, "workers:\n  a: [{say: DONE}]\n")
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    assert states(doc)["a"][0] == "FAILED"
    assert states(doc)["parent"][0] == "PARTIAL"
    assert keywords(plan) == {"parent": "PARTIAL", "a": "FAILED"}


def test_audit_names_a_run_killed_before_its_end(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, task("A", "a", "grep -q a a.txt"), DONE_WORK)
    assert resume(plan, script)[0].exit_code == 0
    ledger = tmp_path / ".groundskeeper" / "plan.org" / "_steps.jsonl"
    from groundskeeper.record.keys import ensure_signing_key
    from groundskeeper.record.ledger import Ledger

    killed = Ledger(ledger.parent, ensure_signing_key().key, "20260101T000000Z-deadbeef")
    killed.record("run-start", {"run_id": "20260101T000000Z-deadbeef", "plan": str(plan)})
    code, found = audit(plan)
    assert code == 1
    assert found["unfinished_runs"] == ["20260101T000000Z-deadbeef"]
    assert [f["code"] for f in found["findings"]] == ["unfinished-run"]


def test_audit_of_a_plan_that_never_ran(tmp_path: Path) -> None:
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD + task("A", "a", "true"))
    assert audit(plan)[1]["ok"] is True


def test_a_row_left_pending_for_an_unsealed_done_gives_way_to_the_reverified_one(
    tmp_path: Path,
) -> None:
    """A run killed after writing DONE into the plan but before sealing it leaves a pending
    telemetry row; the next run re-verifies that DONE and records it once, not twice."""
    import sqlite3

    from groundskeeper.record.telemetry import Telemetry

    plan, script = setup(tmp_path, task("A", "a", "grep -q a a.txt"), DONE_WORK)
    (tmp_path / "a.txt").write_text("a")
    hand_edit(plan, "* TODO A", "* DONE A")
    with Telemetry.for_plan(plan) as t:  # what the killed run had recorded, not committed
        t.record_verdict(run_id="killed", task_id="a", idx=0, title="A", state="DONE",
                         output="", attempt=1, verified=True, reason=None, duration_ms=1,
                         committed=False)  # fmt: skip
    result, _ = resume(plan, script)
    assert result.exit_code == 0
    rows = sqlite3.connect(tmp_path / ".groundskeeper" / "plan.org" / "_telemetry.db").execute(
        "SELECT run_id, task_id, state, attempt FROM task_events"
    )
    (row,) = list(rows)
    assert row[1:] == ("a", "DONE", 0) and row[0] != "killed"
