"""`check --write` is a sealed, honest writer: a run of its own in the ledger and telemetry,
one at a time per plan, never promoting a FAILED the record does not show as its check's."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from tests.test_cli_run import control, keywords, resume, setup, steps, task


def check_write(plan: Path) -> tuple[int, list[dict[str, Any]]]:
    result = CliRunner().invoke(main, ["check", str(plan), "--write", "--json"])
    assert result.exit_code in (0, 1), (result.exit_code, result.output)
    return result.exit_code, json.loads(result.stdout)["tasks"]


def verified(plan: Path) -> None:
    result = CliRunner().invoke(main, ["ledger", "verify", str(plan), "--json"])
    assert result.exit_code == 0, result.output


WORK = "workers:\n  a: [{tool: write_file, input: {path: a.txt, content: a}}, {say: DONE}]\n"


def test_its_changes_are_a_sealed_run(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, task("A", "a", "grep -q a a.txt"), WORK)
    assert resume(plan, script)[0].exit_code == 0
    (tmp_path / "a.txt").unlink()
    code, rows = check_write(plan)
    assert code == 1 and [(r["id"], r["state"]) for r in rows] == [("a", "FAILED")]
    runs = steps(plan, "run-start")
    assert [r["model"] for r in runs] == ["scripted:" + str(script), "check --write"]
    second = runs[1]["run_id"]
    assert [
        (c["task_id"], c["verdict"]) for c in steps(plan, "check") if c["run_id"] == second
    ] == [("a", "FAIL")]
    assert [(s["from"], s["to"]) for s in steps(plan, "state") if s["run_id"] == second] == [
        ("DONE", "FAILED")
    ]
    (end,) = [e for e in steps(plan, "run-end") if e["run_id"] == second]
    assert end["states"] == [{"task_id": "a", "state": "FAILED"}]
    rows_db = sqlite3.connect(control(plan) / "_telemetry.db").execute(
        "SELECT run_id, task_id, state FROM task_events ORDER BY rowid"
    )
    assert list(rows_db)[-1] == (second, "a", "FAILED")
    verified(plan)


def test_a_failed_check_fixed_by_hand_is_promoted(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path, task("A", "a", "grep -q a a.txt"), "workers:\n  a: [{say: DONE}]\n"
    )
    assert resume(plan, script)[0].exit_code == 1
    assert keywords(plan) == {"a": "FAILED"}
    (tmp_path / "a.txt").write_text("a")
    code, rows = check_write(plan)
    assert code == 0 and rows[0]["state"] == "DONE"
    assert keywords(plan) == {"a": "DONE"}
    audit = CliRunner().invoke(main, ["audit", str(plan), "--json"])
    assert json.loads(audit.stdout)["findings"] == []  # the promotion is backed


def test_a_failed_without_a_record_is_not_promoted(tmp_path: Path) -> None:
    plan, _ = setup(tmp_path, task("A", "a", "grep -q a a.txt").replace("TODO", "FAILED"), "")
    (tmp_path / "a.txt").write_text("a")
    code, rows = check_write(plan)
    assert code == 0 and rows[0]["state"] == "FAILED"
    assert keywords(plan) == {"a": "FAILED"}


def test_a_refused_dock_is_not_promoted(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("Build", "build", "grep -q . comp.wasm", dock="comp.wasm"),
        "workers:\n  build:\n    - {tool: write_file, input: {path: comp.wasm, content: junk}}\n"
        "    - say: DONE\n",
    )
    assert resume(plan, script)[0].exit_code == 1
    code, rows = check_write(plan)  # its check passes: the junk file is not empty
    assert (code, rows[0]["verdict"], rows[0]["state"]) == (0, "PASS", "FAILED")
    assert keywords(plan) == {"build": "FAILED"}


def test_a_dock_task_that_failed_its_check_is_not_promoted_undocked(tmp_path: Path) -> None:
    """The fake: the check fails first (no component yet); the file appears by hand and only
    the check is run again. The task's DONE needs its component docked, which a check is not."""
    plan, script = setup(
        tmp_path,
        task("Build", "build", "grep -q . comp.wasm", dock="comp.wasm"),
        "workers:\n  build: [{say: DONE}]\n",
    )
    assert resume(plan, script)[0].exit_code == 1
    assert keywords(plan) == {"build": "FAILED"}
    (tmp_path / "comp.wasm").write_text("junk")
    code, rows = check_write(plan)
    assert (code, rows[0]["verdict"], rows[0]["state"]) == (0, "PASS", "FAILED")
    assert keywords(plan) == {"build": "FAILED"}


def test_the_parent_rule_holds(tmp_path: Path) -> None:
    body = (
        "* TODO Parent\n  :PROPERTIES:\n  :ID: parent\n  :END:\n"
        + task("A", "a", "grep -q a a.txt", 2)
        + task("B", "b", "grep -q b b.txt", 2)
    )
    script_text = (
        "workers:\n  a: [{tool: write_file, input: {path: a.txt, content: a}}, {say: DONE}]\n"
        "  b: [{tool: write_file, input: {path: b.txt, content: b}}, {say: DONE}]\n"
    )
    plan, script = setup(tmp_path, body, script_text)
    assert resume(plan, script)[0].exit_code == 0
    (tmp_path / "b.txt").unlink()
    code, _ = check_write(plan)
    assert code == 1
    assert keywords(plan) == {"parent": "PARTIAL", "a": "DONE", "b": "FAILED"}
    verified(plan)


def test_it_waits_for_no_one_while_a_run_holds_the_plan(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("Slow", "slow", "grep -q s s.txt"),
        "workers:\n  slow:\n    - {tool: sh, input: {cmd: 'sleep 8'}}\n"
        "    - {tool: write_file, input: {path: s.txt, content: s}}\n    - say: DONE\n",
    )
    holder = start_resume(plan, script)
    try:
        wait_for_lock(plan)
        before = snapshot(plan)
        for argv in (["check", str(plan), "--write"],
                     ["resume", str(plan), "--model", f"scripted:{script}"]):  # fmt: skip
            result = CliRunner().invoke(main, argv)
            assert result.exit_code == 2, result.output
            assert f"is in use by another run (pid {holder.pid}, started " in result.stderr
            assert "resume" in result.stderr  # the holder's command
            assert snapshot(plan) == before  # no file, no ledger line
    finally:
        assert holder.wait(timeout=60) == 0, holder.stderr.read() if holder.stderr else ""
    assert keywords(plan) == {"slow": "DONE"}
    assert len(steps(plan, "run-start")) == 1
    verified(plan)


def start_resume(plan: Path, script: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", "from groundskeeper.cli import main; main()", "resume",
         str(plan), "--model", f"scripted:{script}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=dict(os.environ),
    )  # fmt: skip


def wait_for_lock(plan: Path) -> None:
    lock = control(plan) / "run.lock"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if lock.exists() and lock.read_text() and (control(plan) / "_steps.jsonl").exists():
            return
        time.sleep(0.05)
    raise AssertionError("the first run never took the lock")


def snapshot(plan: Path) -> dict[str, bytes]:
    files = [plan, *sorted(p for p in control(plan).rglob("*") if p.is_file())]
    # the holder writes its ledger (and the checkpoint's temp file) and telemetry meanwhile:
    # those are compared by their run-starts below, not byte for byte
    return {
        str(p): p.read_bytes()
        for p in files
        if not p.name.startswith(("_steps.", "_telemetry.db-")) and p.name != "run.lock"
    } | {"steps": b"%d" % len(steps(plan, "run-start"))}


def test_a_verdict_org_would_not_read_inserts_the_todo_line_sealed(tmp_path: Path) -> None:
    """No #+TODO: line: org knows only TODO and DONE, so demoting a DONE to FAILED inserts
    the default line first, sealed as a plan-edit step before the plan is written."""
    plan = tmp_path / "plan.org"
    plan.write_text(task("A", "a", "grep -q a a.txt").replace("TODO", "DONE", 1))
    code, rows = check_write(plan)
    assert code == 1 and rows[0]["state"] == "FAILED"
    text = plan.read_text()
    assert text.startswith("#+TODO: TODO NEXT | DONE FAILED PARTIAL\n* FAILED A\n")
    (edit,) = steps(plan, "plan-edit")
    assert (edit["line"], edit["text"]) == (1, "#+TODO: TODO NEXT | DONE FAILED PARTIAL")
    verified(plan)


def test_a_failed_task_with_contracts_is_not_promoted_by_its_check_alone(tmp_path: Path) -> None:
    """Its contracts held on the claim and its check failed; fixed by hand later, the check
    passes, but a contract (here `changed`) is judged only on a worker's claim: it stays."""
    script = "workers:\n  a: [{tool: write_file, input: {path: a.txt, content: b}}, {say: DONE}]\n"
    plan, script_path = setup(
        tmp_path, task("A", "a", "grep -q a a.txt", max_attempts="1", contract="changed a.txt"),
        script,
    )  # fmt: skip
    assert resume(plan, script_path)[0].exit_code == 1
    assert keywords(plan) == {"a": "FAILED"}
    (tmp_path / "a.txt").write_text("a")
    code, rows = check_write(plan)
    assert code == 0 and rows[0]["state"] == "FAILED" and keywords(plan) == {"a": "FAILED"}
    verified(plan)


def test_a_check_that_cannot_finish_takes_no_done_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from groundskeeper.acceptance import check as check_module

    # the check sleeps while a `slow` file exists: past a one-second deadline
    slow = "if test -f slow; then sleep 30; fi; grep -q a a.txt"
    plan, script = setup(tmp_path, task("A", "a", slow), WORK)
    assert resume(plan, script)[0].exit_code == 0 and keywords(plan) == {"a": "DONE"}
    monkeypatch.setitem(check_module.check_plan.__kwdefaults__, "timeout", 1.0)
    (tmp_path / "slow").write_text("")
    result = CliRunner().invoke(main, ["check", str(plan), "--write", "--json"])
    assert result.exit_code == 1, result.output  # the check did not pass: said, not hidden
    [row] = json.loads(result.stdout)["tasks"]
    assert (row["state"], row["verdict"]) == ("DONE", "FAIL")
    assert row["reason"].startswith("deadline: the check ran past its deadline (its time limit")
    assert "the plan's author raises `:timeout:`" in row["reason"]
    assert "a: kept DONE: its check could not finish" in result.stderr
    assert keywords(plan) == {"a": "DONE"}
    last = steps(plan, "run-start")[-1]["run_id"]
    assert [(c["verdict"], c["reason"]) for c in steps(plan, "check") if c["run_id"] == last] == [
        ("FAIL", "deadline")
    ]
    assert [s for s in steps(plan, "state") if s["run_id"] == last] == []
    audit = CliRunner().invoke(main, ["audit", str(plan), "--json"])
    assert json.loads(audit.stdout)["findings"] == []  # the DONE is still the record's
    # a check that can finish judges again; a real failure still demotes
    (tmp_path / "slow").unlink()
    (tmp_path / "a.txt").write_text("b")
    code, rows = check_write(plan)
    assert code == 1 and rows[0]["state"] == "FAILED" and keywords(plan) == {"a": "FAILED"}
    verified(plan)


def test_a_check_passing_in_another_folder_does_not_promote(tmp_path: Path) -> None:
    """adversary-19 F21: `check --write --workdir ELSEWHERE` sealed a DONE over another
    folder's files, audit-clean, the work missing from the plan's own folder."""
    plan, script = setup(
        tmp_path, task("A", "a", "grep -q a a.txt"), "workers:\n  a: [{say: DONE}]\n"
    )
    assert resume(plan, script)[0].exit_code == 1
    other = tmp_path / "other"
    other.mkdir()
    (other / "a.txt").write_text("a")
    result = CliRunner().invoke(
        main, ["check", str(plan), "--write", "--workdir", str(other), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tasks"][0]["state"] == "FAILED"
    assert keywords(plan) == {"a": "FAILED"}
    assert f"a: not promoted to DONE: its FAILED was sealed in {tmp_path.resolve()}" in (
        result.stderr
    ), result.stderr
    # the same folder, spelled another way, is the same folder
    (tmp_path / "a.txt").write_text("a")
    result = CliRunner().invoke(
        main, ["check", str(plan), "--write", "--workdir", f"{other}/..", "--json"]
    )
    assert json.loads(result.stdout)["tasks"][0]["state"] == "DONE", result.output


SCHEMA = '{"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}'


def _schema_plan(tmp_path: Path, soft: str = "") -> Path:
    (tmp_path / "schema.json").write_text(SCHEMA)
    plan, script = setup(
        tmp_path,
        task("Write out.json", "t", "test -s out.json", contract="json-schema schema.json out.json")
        + (f"  :contract+: {soft}\n" if soft else ""),
        "workers:\n  t:\n    - {tool: write_file, input: {path: out.json, content: '{\"n\": 1}'}}\n"
        "    - say: DONE\n",
    )  # fmt: skip
    if soft:  # the property line goes inside the drawer
        text = plan.read_text().replace(f"  :END:\n  :contract+: {soft}\n",
                                        f"  :contract+: {soft}\n  :END:\n")  # fmt: skip
        plan.write_text(text)
    assert resume(plan, script)[0].exit_code == 0
    assert keywords(plan) == {"t": "DONE"}
    return plan


def test_check_judges_file_contracts_again(tmp_path: Path) -> None:
    """adversary-19 F12: `check` answered DONE PASS for a file its json-schema contract no
    longer admits; a CI job built on it missed every contract regression."""
    plan = _schema_plan(tmp_path)
    (tmp_path / "out.json").write_text('{"n": "one"}')
    result = CliRunner().invoke(main, ["check", str(plan), "--json"])
    assert result.exit_code == 1, result.output
    (row,) = json.loads(result.stdout)["tasks"]
    assert row["verdict"] == "FAIL", row
    assert row["reason"].startswith("C005: json-schema schema.json out.json: "), row
    code, rows = check_write(plan)
    assert (code, rows[0]["state"], keywords(plan)) == (1, "FAILED", {"t": "FAILED"})
    verified(plan)


def test_check_passes_when_the_contracts_still_hold(tmp_path: Path) -> None:
    plan = _schema_plan(tmp_path, soft="soft non-empty notes.md")  # a soft one fails: a warning
    result = CliRunner().invoke(main, ["check", str(plan), "--json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["tasks"]
    assert row["verdict"] == "PASS", row


# ---- adversary-28 F1: a check passing on another task's change is no ground for DONE -------

TOTAL = (
    task("Write the total", "total", None, max_attempts="1", hide="tools/total.py")
    + "  Write the sum of the numbers in data/nums.txt into out/total.txt.\n"
    + "  #+begin_src sh :check\n  test -s out/total.txt\n"
    + '  test "$(cat out/total.txt)" -eq "$(python3 tools/total.py data/nums.txt)"\n'
    + "  #+end_src\n"
    + task("Write the notes", "notes", "grep -q totals out/notes.md", max_attempts="1")
    + "  Write out/notes.md: one line saying what the totals are for.\n"
)


def _totals(tmp_path: Path, notes: str) -> Path:
    (tmp_path / "data").mkdir()
    (tmp_path / "out").mkdir()
    (tmp_path / "tools").mkdir()
    (tmp_path / "data" / "nums.txt").write_text("3\n4\n5\n")
    (tmp_path / "tools" / "total.py").write_text(
        "import sys\nprint(sum(int(n) for n in open(sys.argv[1]) if n.strip()))\n"
    )
    worker = (
        "workers:\n  total:\n    - {tool: sh, input: {cmd: 'echo 0 > out/total.txt'}}\n"
        "    - say: DONE\n  notes:\n"
        "    - {tool: sh, input: {cmd: \"echo 'totals for the report' > out/notes.md"
        + notes
        + '"}}\n'
        "    - say: DONE\n"
    )
    plan, script = setup(tmp_path, TOTAL, worker)
    assert resume(plan, script, "--max-parallel", "1")[0].exit_code == 1
    assert keywords(plan) == {"total": "FAILED", "notes": "DONE"}
    return plan


def test_a_check_passing_on_an_input_another_task_changed_is_not_promoted(
    tmp_path: Path,
) -> None:
    plan = _totals(tmp_path, " && : > data/nums.txt")  # the sibling empties the data
    code, rows = check_write(plan)
    assert {r["id"]: r["state"] for r in rows} == {"total": "FAILED", "notes": "DONE"}
    assert keywords(plan)["total"] == "FAILED"
    assert code == 0  # every check passes; the FAILED is kept, not promoted
    said = CliRunner().invoke(main, ["check", str(plan), "--write"])
    assert (
        "total: not promoted to DONE: its check passes now on files another task's worker"
        " changed or made (data/nums.txt)" in said.stderr
    ), said.stderr
    verified(plan)


def test_a_check_passing_on_the_work_fixed_by_hand_beside_a_sibling_is_promoted(
    tmp_path: Path,
) -> None:
    plan = _totals(tmp_path, "")
    (tmp_path / "out" / "total.txt").write_text("12\n")  # the user fixes it by hand
    code, rows = check_write(plan)
    assert {r["id"]: r["state"] for r in rows} == {"total": "DONE", "notes": "DONE"}
    assert code == 0
