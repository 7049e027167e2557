"""A ledger the witness says was rolled back backs nothing (ledger/SPEC.md §12): `audit`
reports it (exit 1); `resume`, `run` and `check --write` refuse to seal a run on it (exit 2,
the witness entry and the way out named). And the audit's smaller truths: a crashed run
followed by a finished one is history, a plan put back to TODO under a sealed DONE is a
finding, and an altered line is not "covers 36 lines but the file has 36"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from groundskeeper.cli import main
from groundskeeper.record.keys import load_signing_key
from groundskeeper.record.ledger import Ledger, _forget_writers
from tests.test_cli_run import control, keywords, resume, setup, task

WORK = "workers:\n  a: [{tool: write_file, input: {path: a.txt, content: a}}, {say: DONE}]\n"


def audit(plan: Path) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(main, ["audit", str(plan), "--json"])
    return result.exit_code, json.loads(result.stdout)


def finished(tmp_path: Path) -> tuple[Path, Path]:
    plan, script = setup(tmp_path, task("A", "a", "grep -qx a a.txt"), WORK)
    assert resume(plan, script)[0].exit_code == 0
    assert keywords(plan) == {"a": "DONE"}
    return plan, script


def rolled_back(tmp_path: Path) -> tuple[Path, Path]:
    """A DONE, then a sealed FAILED (`check --write`), then the older ledger, checkpoint and
    plan put back: the pair verifies clean by itself and says DONE."""
    plan, script = finished(tmp_path)
    aside = tmp_path / "aside"
    aside.mkdir()
    for path in (plan, control(plan) / "_steps.jsonl", control(plan) / "_steps.checkpoint"):
        shutil.copy(path, aside / path.name)
    (tmp_path / "a.txt").write_text("b\n")
    assert CliRunner().invoke(main, ["check", str(plan), "--write"]).exit_code == 1
    assert keywords(plan) == {"a": "FAILED"}
    for name in ("_steps.jsonl", "_steps.checkpoint"):
        shutil.copy(aside / name, control(plan) / name)
    shutil.copy(aside / plan.name, plan)
    _forget_writers()  # as a new process would start
    return plan, script


def test_audit_reports_a_rolled_back_ledger(tmp_path: Path) -> None:
    plan, _ = rolled_back(tmp_path)
    code, document = audit(plan)
    assert (code, document["ok"], document["ledger_ok"]) == (1, False, False)
    messages = [f["message"] for f in document["findings"]]  # type: ignore[attr-defined]
    assert len(messages) == 1 and messages[0].startswith("rollback: the witness "), messages


def test_no_run_is_sealed_on_a_rolled_back_ledger(tmp_path: Path) -> None:
    plan, script = rolled_back(tmp_path)
    lines = (control(plan) / "_steps.jsonl").read_bytes()
    for argv in (
        ["resume", str(plan), "--model", f"scripted:{script}"],
        ["check", str(plan), "--write"],
    ):
        result = CliRunner().invoke(main, argv)
        assert result.exit_code == 2, (argv, result.output)
        assert "rolled back: lines it saw are gone" in result.stderr, result.stderr
        assert "move the witness entry " in result.stderr
        assert "Traceback" not in result.output
        assert (control(plan) / "_steps.jsonl").read_bytes() == lines  # nothing appended
    assert keywords(plan) == {"a": "DONE"}
    # the way out it names: this copy is the one to keep, its witness entry moved aside
    entry = next(Path(p) for p in result.stderr.split() if p.endswith(".checkpoint"))
    entry.rename(entry.with_suffix(".aside"))
    _forget_writers()
    result = CliRunner().invoke(main, ["check", str(plan), "--write"])
    assert result.exit_code == 1 and keywords(plan) == {"a": "FAILED"}  # b.txt is on disk


def test_an_unfinished_run_followed_by_a_finished_one_is_history(tmp_path: Path) -> None:
    plan, script = finished(tmp_path)
    crashed = "20261128T000000Z-crashed0"  # a run killed after its run-start
    Ledger(control(plan), load_signing_key().key, crashed).record(
        "run-start", {"run_id": crashed, "plan": str(plan)}
    )
    code, document = audit(plan)
    assert code == 1
    [found] = document["findings"]  # type: ignore[misc]
    assert found["code"] == "unfinished-run" and "(it was killed)" not in found["message"]
    assert "a full disk" in found["message"]
    plan.write_text(plan.read_text().replace("* DONE A", "* TODO A"))  # ask for a redo
    assert resume(plan, script)[0].exit_code == 0
    code, document = audit(plan)
    assert (code, document["findings"], document["superseded_runs"]) == (0, [], [crashed])


def test_a_plan_put_back_to_todo_under_a_sealed_done_is_a_finding(tmp_path: Path) -> None:
    plan, _ = finished(tmp_path)
    plan.write_text(plan.read_text().replace("* DONE A", "* TODO A"))
    code, document = audit(plan)
    assert code == 1
    assert [(f["code"], f["task_id"]) for f in document["findings"]] == [  # type: ignore[attr-defined]
        ("state-mismatch", "a")
    ]
    assert "the ledger sealed it DONE" in document["findings"][0]["message"]  # type: ignore[index]


def test_an_altered_line_is_named_as_one(tmp_path: Path) -> None:
    plan, script = finished(tmp_path)
    ledger = control(plan) / "_steps.jsonl"
    lines = ledger.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace('"seq":2', '"seq":2 ', 1).replace('"seq":2 ', '"seq":2', 1)
    obj = json.loads(lines[1])
    obj["ts"] = "2000-01-01T00:00:00.000Z" if obj["ts"] != "2000-01-01T00:00:00.000Z" else "x"
    lines[1] = json.dumps(obj, separators=(",", ":"), sort_keys=True, ensure_ascii=False) + "\n"
    ledger.write_text("".join(lines))
    _forget_writers()
    plan.write_text(plan.read_text().replace("* DONE A", "* TODO A"))
    result = CliRunner().invoke(main, ["resume", str(plan), "--model", f"scripted:{script}"])
    assert result.exit_code != 0
    assert "covers 1" not in result.output
    assert "the root differs: a line was altered; line 2 fails: bad-signature" in result.output
