"""What backs a DONE across runs (issue 28 item 4, issue 27): the whole verdict it got, in the
workdir it was earned in. A DONE sealed before the plan gained a gate, judge, dock, contract or
evidence is judged again under the rules it has now; a DONE earned in another workdir is
judged again in this one, even when no task runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from tests.test_cli_run import keywords, setup, steps, task

WORK = (
    "workers:\n"
    "  a: [{tool: write_file, input: {path: a.txt, content: a}}, {say: DONE}]\n"
    "judges:\n"
    '  "*":\n'
    "    - {verdict: fail, reasons: [not a haiku]}\n"
    "    - {verdict: fail, reasons: [not a haiku]}\n"
)


def run(plan: Path, script: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(
        main, ["resume", str(plan), "--model", f"scripted:{script}", "--json", *extra]
    )
    assert result.exit_code in (0, 1, 3), (result.exit_code, result.output)
    return result.exit_code, json.loads(result.stdout)


def audit(plan: Path) -> tuple[int, list[str]]:
    result = CliRunner().invoke(main, ["audit", str(plan), "--json"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, [f["message"] for f in json.loads(result.stdout)["findings"]]


def add_rule(plan: Path, rule: str) -> None:
    text = plan.read_text()
    plan.write_text(text.replace("  :ID: a\n", f"  :ID: a\n  {rule}\n", 1))


def worker_calls(plan: Path, run_id: str) -> int:
    return sum(1 for s in steps(plan, "model-call") if s["run_id"] == run_id)


RULES = {
    # a rule added after the DONE → what the task ends as once it is judged under it
    "gate": (":gate: approval", "WAITING"),
    "judge": (":judge: a.txt must hold a haiku.\n  :judge-files: a.txt", "FAILED"),
    "dock": (":dock: comp/missing.wat", "FAILED"),
    "contract": (":contract: json-schema schema.json a.txt", "FAILED"),
    "evidence": (":evidence: found:str", "FAILED"),
}


@pytest.mark.parametrize("kind", sorted(RULES))
def test_a_done_sealed_before_a_rule_was_added_is_judged_under_it(
    tmp_path: Path, kind: str
) -> None:
    plan, script = setup(tmp_path, task("A", "a", "grep -q a a.txt"), WORK)
    (tmp_path / "schema.json").write_text('{"type": "object"}')
    code, _ = run(plan, script)
    assert code == 0 and keywords(plan) == {"a": "DONE"}
    rule, ends = RULES[kind]
    add_rule(plan, rule)
    assert audit(plan) == (
        1,
        [
            "`A` is DONE in the plan, but its sealed DONE was judged under other rules (a gate,"
            " judge, dock, contract or evidence added or changed since)"
        ],
    )
    code, doc = run(plan, script)
    [second] = [s["run_id"] for s in steps(plan, "run-start")][1:]
    assert [t["state"] for t in doc["tasks"]] == [ends], doc
    assert worker_calls(plan, second) >= 1  # worked on again: its DONE was not carried
    reasons = [t["reason"] for t in doc["tasks"]]
    assert code != 0, reasons


def test_a_done_sealed_under_the_rules_it_still_has_is_carried(tmp_path: Path) -> None:
    # the honest twin: the contract was there when the DONE was given, and still is
    plan, script = setup(
        tmp_path,
        task("A", "a", "grep -q a a.txt", contract="json-schema schema.json b.json"),
        "workers:\n  a:\n    - {tool: write_file, input: {path: a.txt, content: a}}\n"
        "    - {tool: write_file, input: {path: b.json, content: '{}'}}\n    - {say: DONE}\n",
    )
    (tmp_path / "schema.json").write_text('{"type": "object"}')
    assert run(plan, script)[0] == 0 and keywords(plan) == {"a": "DONE"}
    assert audit(plan) == (0, [])
    code, doc = run(plan, script)
    assert code == 0 and keywords(plan) == {"a": "DONE"}
    second = [s["run_id"] for s in steps(plan, "run-start")][1]
    assert worker_calls(plan, second) == 0
    assert [t["attempts"] for t in doc["tasks"]] == [0]


def test_a_changed_contract_is_a_rule_changed(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("A", "a", "grep -q a a.txt", contract="non-empty a.txt"),
        "workers:\n  a: [{tool: write_file, input: {path: a.txt, content: a}}, {say: DONE}]\n",
    )
    assert run(plan, script)[0] == 0
    (tmp_path / "schema.json").write_text('{"type": "object"}')
    plan.write_text(plan.read_text().replace("non-empty a.txt", "json-schema schema.json a.txt"))
    code, _ = run(plan, script)
    assert code == 1 and keywords(plan) == {"a": "FAILED"}


THREE = "workers:\n  a: [{tool: write_file, input: {path: a.txt, content: a}}, {say: DONE}]\n"


def test_a_done_earned_in_another_workdir_is_judged_again_in_this_one(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, task("A", "a", "grep -q a a.txt"), THREE)
    (tmp_path / "w1").mkdir()
    (tmp_path / "w2").mkdir()
    assert run(plan, script, "--workdir", str(tmp_path / "w1"))[0] == 0
    assert (tmp_path / "w1" / "a.txt").exists()
    code, doc = run(plan, script, "--workdir", str(tmp_path / "w2"))
    # no task started, yet the sweep judged the carried DONE over the empty workdir
    second = [s["run_id"] for s in steps(plan, "run-start")][1]
    sweep = [s for s in steps(plan, "check") if s["run_id"] == second]
    assert [(s["phase"], s["verdict"]) for s in sweep] == [("sweep", "FAIL")]
    assert worker_calls(plan, second) == 0
    assert code == 1 and keywords(plan) == {"a": "FAILED"}, doc


def test_a_done_carried_in_its_own_workdir_runs_nothing(tmp_path: Path) -> None:
    # the honest twin: the same workdir again — no sweep, no check, no worker
    plan, script = setup(tmp_path, task("A", "a", "grep -q a a.txt"), THREE)
    (tmp_path / "w1").mkdir()
    assert run(plan, script, "--workdir", str(tmp_path / "w1"))[0] == 0
    code, _ = run(plan, script, "--workdir", str(tmp_path / "w1"))
    second = [s["run_id"] for s in steps(plan, "run-start")][1]
    assert [s for s in steps(plan, "check") if s["run_id"] == second] == []
    assert code == 0 and keywords(plan) == {"a": "DONE"}


def test_a_copied_control_directory_carries_no_done_to_a_folder_without_the_work(
    tmp_path: Path,
) -> None:
    plan, script = setup(tmp_path / "src" if (tmp_path / "src").mkdir() is None else tmp_path,
                         task("A", "a", "grep -q a a.txt"), THREE)  # fmt: skip
    assert run(plan, script)[0] == 0
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(plan, copy / "plan.org")
    shutil.copy(script, copy / "workers.yaml")
    shutil.copytree(plan.parent / ".groundskeeper", copy / ".groundskeeper")
    code, _ = run(copy / "plan.org", copy / "workers.yaml")
    assert code == 1 and keywords(copy / "plan.org") == {"a": "FAILED"}


PRE = (
    "workers:\n  p: [{say: DONE}]\n"
    "  q: [{tool: write_file, input: {path: q.txt, content: q}}, {say: DONE}]\n"
)


def refused_red(tmp_path: Path) -> tuple[Path, Path]:
    """A plan whose task `p` was FAILED by --require-red (its check passed before any work)."""
    plan, script = setup(
        tmp_path, task("Pre", "p", "grep -qx old x.txt") + task("Q", "q", "grep -q q q.txt"), PRE
    )
    (tmp_path / "x.txt").write_text("old\n")
    assert run(plan, script, "--require-red")[0] == 1
    assert keywords(plan) == {"p": "FAILED", "q": "DONE"}
    return plan, script


def refused(plan: Path, script: Path, *extra: str) -> str:
    result = CliRunner().invoke(
        main, ["resume", str(plan), "--model", f"scripted:{script}", *extra]
    )
    assert result.exit_code == 2, result.output
    return result.stderr


def test_a_plan_whose_ledger_was_deleted_is_refused_not_started_fresh(tmp_path: Path) -> None:
    plan, script = refused_red(tmp_path)
    shutil.rmtree(tmp_path / ".groundskeeper")
    said = refused(plan, script)
    assert "its headlines show verdicts of earlier runs (FAILED `Pre`)" in said
    assert "`--forget-record`" in said
    assert keywords(plan) == {"p": "FAILED", "q": "DONE"}  # nothing ran
    ledger = tmp_path / ".groundskeeper" / "plan.org" / "_steps.jsonl"
    assert not ledger.exists() or not steps(plan, "run-start")


def test_forget_record_starts_over_and_is_sealed(tmp_path: Path) -> None:
    plan, script = refused_red(tmp_path)
    shutil.rmtree(tmp_path / ".groundskeeper")
    code, _ = run(plan, script, "--forget-record")
    [start] = steps(plan, "run-start")
    assert start["forget_record"] is True
    assert code == 0 and keywords(plan) == {"p": "DONE", "q": "DONE"}  # told to forget


def test_a_renamed_plan_is_refused(tmp_path: Path) -> None:
    plan, script = refused_red(tmp_path)
    renamed = tmp_path / "main.org"
    plan.rename(renamed)
    assert "FAILED `Pre`" in refused(renamed, script)


def test_the_r004_advice_leads_to_the_refusal_not_to_a_fresh_start(tmp_path: Path) -> None:
    plan, script = refused_red(tmp_path)
    control = tmp_path / ".groundskeeper" / "plan.org"
    ledger = control / "_steps.jsonl"
    ledger.write_bytes(ledger.read_bytes()[:-40])  # a checkpointed line cut short
    result = CliRunner().invoke(main, ["resume", str(plan), "--model", f"scripted:{script}"])
    assert "[R004]" in result.output and "--forget-record" in result.output, result.output
    (tmp_path / "aside").mkdir()
    (control / "_steps.jsonl").rename(tmp_path / "aside" / "_steps.jsonl")
    (control / "_steps.index").unlink(missing_ok=True)
    assert "FAILED `Pre`" in refused(plan, script)


def test_a_fresh_plan_and_a_kept_record_run_as_ever(tmp_path: Path) -> None:
    # the honest twins: a never-run plan starts; a plan with its record resumes (p stays
    # FAILED: the rule is remembered), neither asks for --forget-record
    plan, script = refused_red(tmp_path)
    code, _ = run(plan, script)
    assert code == 1 and keywords(plan) == {"p": "FAILED", "q": "DONE"}
    assert "forget_record" not in steps(plan, "run-start")[-1]
