"""A verdict asserted again is judged again: a child at its parent's roll-up and every DONE at
the final sweep go through the same stages that made it DONE — contracts on the files as they
are, the check, a judge's artifacts (judged again when they changed), an approved gate's files
(changed: the gate opens again) — and the sweep covers DONEs carried from earlier runs.

Each class: the fake an accomplice makes, and its honest twin."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

from groundskeeper.cli import main
from tests.test_cli_run import keywords, resume, setup, steps, task

SCHEMA = {"type": "object", "required": ["ok"], "properties": {"ok": {"type": "boolean"}}}


def _write(path: str, content: str) -> dict[str, Any]:
    return {"tool": "write_file", "input": {"path": path, "content": content}}


def _script(workers: dict[str, Any], **more: Any) -> str:
    return yaml.safe_dump({"workers": workers, **more})


def _by_id(doc: dict[str, Any], task_id: str) -> dict[str, Any]:
    return next(t for t in doc["tasks"] if t["id"] == task_id)


# -- contracts on the files, again at the sweep -------------------------------------------------

REPORT = task("Report", "a", "grep -q '\"ok\"' out/report.json",
              contract="json-schema schema.json out/report.json") + task(
    "Other", "b", "grep -qx b b.txt"
)  # fmt: skip


def _report_run(tmp_path: Path, accomplice: list[dict[str, Any]]) -> dict[str, Any]:
    workers = {"a": [_write("out/report.json", '{"ok": true}'), {"say": "DONE"}],
               "b": [_write("b.txt", "b\n"), *accomplice, {"say": "DONE"}]}  # fmt: skip
    plan, script = setup(tmp_path, REPORT, _script(workers))
    (tmp_path / "schema.json").write_text(json.dumps(SCHEMA))
    _, doc = resume(plan, script, "--max-parallel", "1")
    return doc


def test_a_contract_broken_after_its_task_was_done_fails_the_sweep(tmp_path: Path) -> None:
    # the check still passes ("ok" is there); only the schema sees the value is no boolean
    doc = _report_run(tmp_path, [_write("out/report.json", '{"ok": "yes"}')])
    a = _by_id(doc, "a")
    assert a["state"] == "FAILED"
    assert a["reason"].startswith("no longer holds: C005: json-schema schema.json out/report.json")
    assert _by_id(doc, "b")["state"] == "DONE"
    swept = [s for s in steps(tmp_path / "plan.org", "contract") if s["attempt"] == 0]
    assert [(s["task_id"], s["verdicts"][0]["ok"]) for s in swept] == [("a", False)]


def test_a_contract_that_still_holds_keeps_its_done(tmp_path: Path) -> None:
    doc = _report_run(tmp_path, [])
    assert {t["id"]: t["state"] for t in doc["tasks"]} == {"a": "DONE", "b": "DONE"}


# -- the judge's artifacts, again at the sweep --------------------------------------------------

JUDGED = task("Summary", "a", "grep -q Hobby summary.md", judge="One line per tier.",
              judge_files="summary.md") + task("Other", "b", "grep -qx b b.txt")  # fmt: skip


def _judged_run(
    tmp_path: Path, accomplice: list[dict[str, Any]], answers: list[dict[str, Any]]
) -> dict[str, Any]:
    workers = {"a": [_write("summary.md", "Hobby: $0\nPro: $150\n"), {"say": "DONE"}],
               "b": [_write("b.txt", "b\n"), *accomplice, {"say": "DONE"}]}  # fmt: skip
    plan, script = setup(tmp_path, JUDGED, _script(workers, judges={"a": answers}))
    _, doc = resume(plan, script, "--max-parallel", "1")
    return doc


def test_judged_work_changed_after_its_verdict_is_judged_again(tmp_path: Path) -> None:
    rewrite = [_write("summary.md", "Hobby: free forever\nEnterprise: call us\n")]
    answers = [{"verdict": "pass", "reasons": ["fine"]},
               {"verdict": "fail", "reasons": ["Enterprise is invented"]}]  # fmt: skip
    doc = _judged_run(tmp_path, rewrite, answers)
    a = _by_id(doc, "a")
    assert a["state"] == "FAILED"
    assert a["reason"].startswith("judged work changed since its verdict (summary.md): ")
    assert "Enterprise is invented" in a["reason"]
    judged = [(s["attempt"], s["verdict"]) for s in steps(tmp_path / "plan.org", "judge")]
    assert judged == [(1, "pass"), (0, "fail")]


def test_judged_work_unchanged_is_not_judged_again(tmp_path: Path) -> None:
    answers = [{"verdict": "pass", "reasons": ["fine"]}, {"verdict": "fail", "reasons": ["no"]}]
    doc = _judged_run(tmp_path, [], answers)
    assert _by_id(doc, "a")["state"] == "DONE"
    assert [s["verdict"] for s in steps(tmp_path / "plan.org", "judge")] == ["pass"]


def test_judged_work_changed_and_judged_good_again_stays_done(tmp_path: Path) -> None:
    rewrite = [_write("summary.md", "Hobby: $0\nPro: $150\nTeam: $500\n")]
    answers = [{"verdict": "pass", "reasons": ["fine"]}, {"verdict": "pass", "reasons": ["ok"]}]
    doc = _judged_run(tmp_path, rewrite, answers)
    assert _by_id(doc, "a")["state"] == "DONE"


# -- a parent's contracts at its roll-up --------------------------------------------------------

PARENT = (
    "* TODO Both\n  :PROPERTIES:\n  :ID: both\n  :contract: non-empty summary.md\n  :END:\n"
    + task("First", "first", "grep -qx a a.txt", 2)
    + task("Second", "second", "grep -qx b b.txt", 2)
)


def test_a_parents_contract_is_judged_at_its_roll_up(tmp_path: Path) -> None:
    workers = {"first": [_write("a.txt", "a\n"), {"say": "DONE"}],
               "second": [_write("b.txt", "b\n"), {"say": "DONE"}]}  # fmt: skip
    plan, script = setup(tmp_path, PARENT, _script(workers))
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    both = _by_id(doc, "both")
    assert both["state"] == "PARTIAL"
    assert both["reason"].startswith(
        "every child is DONE but the task's own contracts do not hold: C001: non-empty summary.md"
    )


def test_a_parents_contract_met_by_a_child_lets_it_roll_up(tmp_path: Path) -> None:
    workers = {"first": [_write("a.txt", "a\n"), {"say": "DONE"}],
               "second": [_write("b.txt", "b\n"), _write("summary.md", "both\n"),
                          {"say": "DONE"}]}  # fmt: skip
    plan, script = setup(tmp_path, PARENT, _script(workers))
    result, doc = resume(plan, script)
    assert result.exit_code == 0, doc
    assert keywords(plan) == {"both": "DONE", "first": "DONE", "second": "DONE"}


def test_a_record_based_rule_on_a_parent_is_a_lint_error(tmp_path: Path) -> None:
    body = PARENT.replace(":contract: non-empty summary.md", ":contract: changed summary.md\n"
                          "  :evidence: done:bool")  # fmt: skip
    plan, _ = setup(tmp_path, body, "")
    result = CliRunner().invoke(main, ["lint", str(plan), "--json"])
    assert result.exit_code == 1
    found = [(d["code"], d["level"], d["message"][:40]) for d in json.loads(result.stdout)]
    assert found == [("T020", "error", "contract `changed summary.md` on a paren"),
                     ("T020", "error", ":evidence: on a parent task: evidence is")]  # fmt: skip


# -- the sweep covers DONEs carried from an earlier run -----------------------------------------

CARRIED = task("First", "first", "grep -qx a a.txt") + task("Second", "second", "grep -qx b b.txt")


def _carried_runs(tmp_path: Path, later: list[dict[str, Any]]) -> dict[str, Any]:
    first = {"first": [_write("a.txt", "a\n"), {"say": "DONE"}], "second": [{"say": "DONE"}]}
    plan, script = setup(tmp_path, CARRIED, _script(first))
    _, doc = resume(plan, script, "--max-parallel", "1")
    assert keywords(plan) == {"first": "DONE", "second": "FAILED"}
    script.write_text(_script({"second": [_write("b.txt", "b\n"), *later, {"say": "DONE"}]}))
    _, doc = resume(plan, script)
    return doc


def test_an_accomplice_in_a_later_run_undoing_a_carried_done_is_caught(tmp_path: Path) -> None:
    doc = _carried_runs(tmp_path, [_write("a.txt", "gone\n")])
    first = _by_id(doc, "first")
    assert first["state"] == "FAILED"
    assert first["reason"].startswith("no longer passes: nonzero_status: check line 1")
    assert keywords(tmp_path / "plan.org") == {"first": "FAILED", "second": "DONE"}


def test_a_carried_done_whose_work_stands_stays_done(tmp_path: Path) -> None:
    doc = _carried_runs(tmp_path, [])
    assert {t["id"]: t["state"] for t in doc["tasks"]} == {"first": "DONE", "second": "DONE"}
    last = steps(tmp_path / "plan.org", "run-start")[-1]["run_id"]
    sweep = [c["task_id"] for c in steps(tmp_path / "plan.org", "check")
             if c.get("phase") == "sweep" and c["run_id"] == last]  # fmt: skip
    # the carried DONE is judged again too: its check run, or its read set found unchanged;
    # the one this run decided is kept if nothing acted on the workdir after its verdict
    sweep += [row["task_id"] for kind in ("inputs-unchanged", "untouched")
              for s in steps(tmp_path / "plan.org", kind)
              if s["run_id"] == last for row in s["tasks"]]  # fmt: skip
    assert sorted(sweep) == ["first", "second"]


# -- an approved gate's files, again at the sweep -----------------------------------------------

GATED = (
    "#+TITLE: gated\n"
    "* TODO Write the report\n  :PROPERTIES:\n  :ID: report\n  :gate: approval\n"
    "  :gate-files: report.txt\n  :done-when: grep -q ok report.txt\n  :END:\n"
    "* TODO Later\n  :PROPERTIES:\n  :ID: later\n  :done-when: grep -qx l l.txt\n  :END:\n"
)


def _approved_then_resumed(tmp_path: Path, edit: str | None) -> dict[str, Any]:
    mission = tmp_path / "mission.yaml"
    workers = {"report": [_write("report.txt", "ok v1\n"), {"say": "DONE"}],
               "later": [{"say": "DONE"}]}  # fmt: skip
    mission.write_text(yaml.safe_dump({"author": [GATED], "workers": workers}))
    work = tmp_path / "work"
    cli = CliRunner()
    first = cli.invoke(main, ["run", "report", "--model", f"scripted:{mission}", "--dir",
                              str(work), "--json"])  # fmt: skip
    assert first.exit_code == 3, first.output  # `report` waits (`later` FAILED)
    assert cli.invoke(main, ["approve", str(work), "--task", "report", "--yes"]).exit_code == 0
    cli.invoke(main, ["run", "--resume", str(work), "--json"])
    assert keywords(work / "plan.org")["report"] == "DONE"
    if edit is not None:
        (work / "report.txt").write_text(edit)  # after the person looked: the check still passes
    last = cli.invoke(main, ["resume", str(work / "plan.org"), "--model", f"scripted:{mission}",
                             "--json"])  # fmt: skip
    assert last.exit_code in (1, 3), last.output
    return dict(json.loads(last.stdout))


def test_approved_work_changed_after_its_approval_opens_the_gate_again(tmp_path: Path) -> None:
    doc = _approved_then_resumed(tmp_path, "ok, and everything else was rewritten\n")
    report = _by_id(doc, "report")
    assert report["state"] == "WAITING"
    assert report["reason"].startswith(
        "approved work changed since its approval (report.txt): waiting for approval again"
    )
    assert keywords(tmp_path / "work" / "plan.org")["report"] == "TODO"
    gates = [b for b in steps(tmp_path / "work" / "plan.org", "gate")]
    assert len(gates) == 2 and gates[-1]["files"][0]["path"] == "report.txt"


def test_approved_work_unchanged_stays_done(tmp_path: Path) -> None:
    doc = _approved_then_resumed(tmp_path, None)
    assert _by_id(doc, "report")["state"] == "DONE"
    assert len(steps(tmp_path / "work" / "plan.org", "gate")) == 1
