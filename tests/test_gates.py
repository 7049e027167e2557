"""Human approval per task (`:gate: approval`) through the CLI: `groundskeeper run`, `approve
--task`, `run --resume` and `resume`, with the scripted model (and the Messages API stub where
the worker's request must be read).

Failure paths first: a gate with no answer is never DONE, an answer for changed artifacts or
for another interrupt is refused, abort is FAILED; then approve and revise. The ledger
verifies after every run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from groundskeeper.cli import main
from groundskeeper.cli.approval import gate_answer_path
from groundskeeper.record.control import ControlDir
from groundskeeper.record.ledger import read_steps
from tests.messages_stub import MessagesStub

PLAN = (
    "#+TITLE: gated\n"
    "* TODO Write the report\n"
    "  :PROPERTIES:\n"
    "  :ID: report\n"
    "  :gate: approval\n"
    "  :done-when: grep -q ok report.txt\n"
    "  :END:\n"
    "  Write report.txt saying ok.\n"
    "* TODO Write other\n"
    "  :PROPERTIES:\n"
    "  :ID: other\n"
    "  :done-when: grep -qx fine other.txt\n"
    "  :END:\n"
    "  Write other.txt holding fine.\n"
)
REPORT = [
    {"tool": "write_file", "input": {"path": "report.txt", "content": "ok v1\n"}},
    {"say": "DONE"},
]
OTHER = [
    {"tool": "write_file", "input": {"path": "other.txt", "content": "fine\n"}},
    {"say": "DONE"},
]


def _script(tmp_path: Path, plan: str = PLAN, workers: dict[str, Any] | None = None) -> str:
    path = tmp_path / "mission.yaml"
    workers = workers or {"report": REPORT, "other": OTHER}
    path.write_text(yaml.safe_dump({"author": [plan], "workers": workers}))
    return f"scripted:{path}"


def _cli(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _steps(work: Path) -> list[tuple[str, dict[str, Any]]]:
    ledger = work / ".groundskeeper" / "plan.org" / "_steps.jsonl"
    return [(obj["step"], obj["body"]) for _, obj in read_steps(ledger) if obj is not None]


def _verified(work: Path) -> None:
    result = _cli("ledger", "verify", str(work), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ok"] is True


def _states(doc: dict[str, Any]) -> dict[str, str]:
    return {t["id"]: t["state"] for t in doc["tasks"]}


def _waiting_run(tmp_path: Path, **script: Any) -> tuple[Path, dict[str, Any]]:
    work = tmp_path / "work"
    result = _cli("run", "report", "--model", _script(tmp_path, **script), "--dir", str(work),
                  "--json")  # fmt: skip
    assert result.exit_code == 3, result.output
    doc = json.loads(result.stdout)
    assert doc["outcome"] == "waiting"
    return work, doc


def _resume(work: Path) -> tuple[int, dict[str, Any] | None]:
    result = _cli("run", "--resume", str(work), "--json")
    return result.exit_code, json.loads(result.stdout) if result.stdout.strip() else None


def _gate_of(doc: dict[str, Any]) -> dict[str, Any]:
    [gate] = doc["waiting"]["gates"]
    return dict(gate)


def test_a_gated_task_waits_while_the_rest_of_the_plan_finishes(tmp_path: Path) -> None:
    work, doc = _waiting_run(tmp_path)
    assert _states(doc) == {"report": "WAITING", "other": "DONE"}
    plan = (work / "plan.org").read_text()
    assert "* TODO Write the report" in plan and "* DONE Write other" in plan
    gate = _gate_of(doc)
    sha = gate["files"][0]["sha256"]
    assert (gate["task_id"], gate["files"]) == ("report", [{"path": "report.txt", "sha256": sha}])
    assert gate["command"].startswith(f"groundskeeper approve {work} --task report")
    sealed = [b for s, b in _steps(work) if s == "gate"]
    assert [(b["task_id"], b["gate_id"], b["artifacts_sha256"]) for b in sealed] == [
        ("report", gate["gate_id"], gate["artifacts_sha256"])
    ]
    # no answer: resuming keeps it waiting, never DONE
    code, again = _resume(work)
    assert code == 3 and again is not None and _states(again)["report"] == "WAITING"
    assert "* TODO Write the report" in (work / "plan.org").read_text()
    _verified(work)


def test_resume_of_the_plan_without_the_graph_keeps_the_gate_waiting(tmp_path: Path) -> None:
    work, _ = _waiting_run(tmp_path)
    result = _cli("resume", str(work / "plan.org"), "--model", _script(tmp_path), "--json")
    assert result.exit_code == 3, result.output
    doc = json.loads(result.stdout)
    assert _states(doc) == {"report": "WAITING", "other": "DONE"}
    assert [g["task_id"] for g in doc["waiting"]] == ["report"]
    assert "⏸ WAITING report (verified, attempts 0) — waiting for approval" in result.stderr
    assert "1 task(s) wait at their approval gates" in result.stderr
    assert "* TODO Write the report" in (work / "plan.org").read_text()
    # the worker was not asked again: the work waits for a person, it is not redone
    starts = [b for s, b in _steps(work) if s == "claim" and b["task_id"] == "report"]
    assert len(starts) == 1
    _verified(work)


def test_an_answer_for_changed_artifacts_is_refused_and_the_task_gated_again(
    tmp_path: Path,
) -> None:
    work, doc = _waiting_run(tmp_path)
    first = _gate_of(doc)
    assert _cli("approve", str(work), "--task", "report", "--yes").exit_code == 0
    (work / "report.txt").write_text("ok, but edited after the person looked\n")
    code, again = _resume(work)
    assert code == 3 and again is not None
    assert _states(again)["report"] == "WAITING"
    assert "* TODO Write the report" in (work / "plan.org").read_text()
    second = _gate_of(again)
    assert second["gate_id"] != first["gate_id"]
    assert second["artifacts_sha256"] != first["artifacts_sha256"]
    [decision] = [b for s, b in _steps(work) if s == "gate-decision"]
    assert (decision["decision"], decision["applied"]) == ("yes", False)
    assert decision["refused"] == "stale: the artifacts changed since the gate opened"
    # the person looks again at what is there now, and approves that
    assert _cli("approve", str(work), "--task", "report", "--yes").exit_code == 0
    code, done = _resume(work)
    assert code == 0 and done is not None and _states(done) == {"report": "DONE", "other": "DONE"}
    _verified(work)


def test_an_answer_for_another_interrupt_is_refused(tmp_path: Path) -> None:
    work, _ = _waiting_run(tmp_path)
    control = ControlDir.for_plan(work / "plan.org")
    assert _cli("approve", str(work), "--task", "report", "--yes").exit_code == 0
    old = gate_answer_path(control, "report").read_text()
    (work / "report.txt").write_text("ok v2\n")
    assert _resume(work)[0] == 3  # consumed, refused as stale, gated again
    gate_answer_path(control, "report").write_text(old)  # the old answer, replayed
    result = _cli("run", "--resume", str(work))
    assert result.exit_code == 2
    assert "stale approval refused for task report" in result.stderr
    assert "* TODO Write the report" in (work / "plan.org").read_text()
    assert [b["applied"] for s, b in _steps(work) if s == "gate-decision"] == [False]


def test_an_answer_bound_to_the_interrupt_but_another_gate_is_refused(tmp_path: Path) -> None:
    work, doc = _waiting_run(tmp_path)
    control = ControlDir.for_plan(work / "plan.org")
    assert _cli("approve", str(work), "--task", "report", "--yes").exit_code == 0
    path = gate_answer_path(control, "report")
    forged = json.loads(path.read_text())
    forged["artifacts_sha256"] = "0" * 64  # artifacts the gate never showed
    path.write_text(json.dumps(forged))
    code, again = _resume(work)
    assert code == 3 and again is not None and _states(again)["report"] == "WAITING"
    [decision] = [b for s, b in _steps(work) if s == "gate-decision"]
    assert decision["applied"] is False
    assert decision["refused"] == "stale: it answers another gate (artifacts_sha256 differs)"
    assert _gate_of(again)["gate_id"] != _gate_of(doc)["gate_id"]


def test_abort_is_failed_and_sealed_before_it_is_written(tmp_path: Path) -> None:
    work, _ = _waiting_run(tmp_path)
    assert _cli("approve", str(work), "--task", "report", "--no").exit_code == 0
    code, doc = _resume(work)
    assert code == 1 and doc is not None
    assert _states(doc) == {"report": "FAILED", "other": "DONE"}
    [report] = [t for t in doc["tasks"] if t["id"] == "report"]
    assert report["reason"].startswith("aborted at its approval gate (groundskeeper approve")
    assert "* FAILED Write the report" in (work / "plan.org").read_text()
    steps = _steps(work)
    decided = next(i for i, (s, b) in enumerate(steps) if s == "gate-decision")
    failed = next(i for i, (s, b) in enumerate(steps)
                  if s == "state" and (b["task_id"], b["to"]) == ("report", "FAILED"))  # fmt: skip
    assert decided < failed and steps[decided][1]["applied"] is True
    _verified(work)


def test_approve_is_done_and_sealed_before_it_is_written(tmp_path: Path) -> None:
    work, doc = _waiting_run(tmp_path)
    gate = _gate_of(doc)
    answered = _cli("approve", str(work), "--task", "report", "--yes", "--json")
    assert answered.exit_code == 0, answered.output
    answer = json.loads(answered.stdout)
    assert (answer["gate_id"], answer["interrupt_id"]) == (gate["gate_id"], gate["interrupt_id"])
    code, done = _resume(work)
    assert code == 0 and done is not None
    assert _states(done) == {"report": "DONE", "other": "DONE"}
    assert "* DONE Write the report" in (work / "plan.org").read_text()
    steps = _steps(work)
    decided = next(i for i, (s, b) in enumerate(steps) if s == "gate-decision")
    made_done = next(i for i, (s, b) in enumerate(steps)
                     if s == "state" and (b["task_id"], b["to"]) == ("report", "DONE"))  # fmt: skip
    assert decided < made_done
    body = steps[decided][1]
    assert (body["gate_id"], body["interrupt_id"], body["decision"], body["applied"]) == (
        gate["gate_id"], gate["interrupt_id"], "yes", True,
    )  # fmt: skip
    # a consumed answer cannot be given twice: nothing waits any more
    assert _cli("approve", str(work), "--task", "report", "--yes").exit_code == 2
    _verified(work)


def test_revise_sends_the_note_to_the_worker_and_gates_again(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    plan = PLAN.split("* TODO Write other")[0]
    author = tmp_path / "author.yaml"
    author.write_text(yaml.safe_dump({"author": [plan], "workers": {}}))
    stub = messages_stub.worker
    stub.reply_tool_use("write_file", {"path": "report.txt", "content": "ok v1\n"})
    stub.reply_text("DONE: wrote report.txt")
    work = tmp_path / "work"
    result = _cli("run", "report", "--model", "anthropic:claude-stub-1", "--author-model",
                  f"scripted:{author}", "--dir", str(work), "--json")  # fmt: skip
    assert result.exit_code == 3, result.output
    first = _gate_of(json.loads(result.stdout))
    asked = len(messages_stub.requests)
    note = "Cite the source of the number in the second line."
    assert _cli("approve", str(work), "--task", "report", "--revise", note).exit_code == 0
    stub.reply_tool_use("write_file", {"path": "source.txt", "content": "x, page 2\n"})
    stub.reply_text("DONE: added source.txt")
    code, again = _resume(work)
    assert code == 3 and again is not None, again
    revised = messages_stub.requests[asked]
    last = revised.body["messages"][-1]
    said = " ".join(b.get("text", "") for b in last["content"] if isinstance(b, dict))
    assert last["role"] == "user" and note in said and "asked for changes" in said
    second = _gate_of(again)
    assert second["gate_id"] != first["gate_id"]
    # still bound to what the person saw, and to what the revision added
    assert [f["path"] for f in second["files"]] == ["report.txt", "source.txt"]
    assert second["files"][0] == first["files"][0]
    decision = next(b for s, b in _steps(work) if s == "gate-decision")
    assert (decision["decision"], decision["note"], decision["applied"]) == ("revise", note, True)
    assert _cli("approve", str(work), "--task", "report", "--yes").exit_code == 0
    code, done = _resume(work)
    assert code == 0 and done is not None and _states(done) == {"report": "DONE"}
    assert (work / "source.txt").read_text() == "x, page 2\n"
    _verified(work)


def test_approve_refuses_what_it_cannot_bind(tmp_path: Path) -> None:
    work, _ = _waiting_run(tmp_path)
    unknown = _cli("approve", str(work), "--task", "nope", "--yes")
    assert unknown.exit_code == 2 and "tasks waiting: report" in unknown.stderr
    plan_gate = _cli("approve", str(work), "--yes")
    assert plan_gate.exit_code == 2 and "pass --task ID" in plan_gate.stderr
    no_task = _cli("approve", str(work), "--revise", "more")
    assert no_task.exit_code == 2 and "--revise answers a task's gate" in no_task.stderr
    both = _cli("approve", str(work), "--task", "report", "--yes", "--revise", "x")
    assert both.exit_code == 2
    assert not gate_answer_path(ControlDir.for_plan(work / "plan.org"), "report").exists()


def test_lint_names_a_bad_gate(tmp_path: Path) -> None:
    plan = tmp_path / "plan.org"
    plan.write_text(
        "* TODO Parent\n  :PROPERTIES:\n  :gate: approval\n  :END:\n"
        "** TODO Child\n   :PROPERTIES:\n   :gate: maybe\n   :gate-files: ../x.txt\n"
        "   :done-when: test -s x.txt\n   :END:\n"
        "* TODO Loose\n  :PROPERTIES:\n  :gate-files: y.txt\n  :done-when: test -s y.txt\n"
        "  :END:\n"
    )
    result = _cli("lint", str(plan), "--json")
    assert result.exit_code == 1
    codes = sorted((d["code"], d["line"]) for d in json.loads(result.stdout) if d["code"][0] == "G")
    assert codes == [("G001", 5), ("G002", 5), ("G003", 1), ("G004", 11)]


def _plan_run(tmp_path: Path, plan: str, workers: dict[str, Any]) -> tuple[Path, str]:
    path = tmp_path / "plan.org"
    path.write_text(plan)
    script = tmp_path / "workers.yaml"
    script.write_text(yaml.safe_dump({"workers": workers}))
    return path, f"scripted:{script}"


def test_a_hand_written_done_on_a_gated_task_is_not_taken(tmp_path: Path) -> None:
    plan, model = _plan_run(tmp_path, PLAN, {"report": REPORT, "other": OTHER})
    assert _cli("resume", str(plan), "--model", model).exit_code == 3
    plan.write_text(plan.read_text().replace("* TODO Write the report", "* DONE Write the report"))
    result = _cli("resume", str(plan), "--model", model, "--json")
    assert result.exit_code == 3, result.output
    assert _states(json.loads(result.stdout))["report"] == "WAITING"
    assert "* TODO Write the report" in plan.read_text()


def test_check_write_never_promotes_a_gated_task(tmp_path: Path) -> None:
    lazy = [{"say": "DONE"}]
    gated = PLAN.replace("  :gate: approval\n", "  :gate: approval\n  :max-attempts: 1\n")
    plan, model = _plan_run(tmp_path, gated, {"report": lazy, "other": OTHER})
    assert _cli("resume", str(plan), "--model", model).exit_code == 1
    assert "* FAILED Write the report" in plan.read_text()
    (tmp_path / "report.txt").write_text("ok\n")  # fixed by hand: its check passes now
    result = _cli("check", str(plan), "--write", "--json")
    assert result.exit_code == 0, result.output
    assert "* FAILED Write the report" in plan.read_text()


def test_an_eval_case_with_an_approval_must_name_a_decision(tmp_path: Path) -> None:
    from groundskeeper.evals import EvalCaseError, load_suite

    case = tmp_path / "suite" / "gate" / "bad"
    case.mkdir(parents=True)
    (case / "plan.org").write_text(PLAN)
    (case / "agents.yaml").write_text("workers: {}\n")
    expect = {"kind": "fake", "category": "c", "task": "report", "must_not_be": "DONE",
              "approve": {"task": "report", "answer": "maybe"}}  # fmt: skip
    (case / "expect.json").write_text(json.dumps(expect))
    with pytest.raises(EvalCaseError, match='"approve" needs "task" and "answer"'):
        load_suite([tmp_path / "suite"])
    expect["approve"] = {"task": "report", "answer": "yes", "then_write": {"../x": "y"}}
    (case / "expect.json").write_text(json.dumps(expect))
    with pytest.raises(EvalCaseError, match='"then_write" maps relative paths'):
        load_suite([tmp_path / "suite"])


def test_ordered_siblings_after_a_waiting_task_do_not_start(tmp_path: Path) -> None:
    ordered = (
        "#+TODO: TODO NEXT | DONE FAILED PARTIAL\n"
        "* TODO Release\n  :PROPERTIES:\n  :ORDERED: t\n  :END:\n"
        + PLAN.split("\n", 1)[1].replace("* TODO", "** TODO")
    )
    plan, model = _plan_run(tmp_path, ordered, {"report": REPORT, "other": OTHER})
    result = _cli("resume", str(plan), "--model", model, "--json")
    doc = json.loads(result.stdout)
    assert [(t["title"], t["state"]) for t in doc["tasks"]] == [
        ("Release", "PARTIAL"), ("Write the report", "WAITING"), ("Write other", "TODO"),
    ]  # fmt: skip
    assert not (tmp_path / "other.txt").exists()
    assert result.exit_code == 3


def test_a_gated_task_without_a_check_waits_on_the_workers_word(tmp_path: Path) -> None:
    unchecked = PLAN.replace("  :done-when: grep -q ok report.txt\n", "")
    plan, model = _plan_run(tmp_path, unchecked, {"report": REPORT, "other": OTHER})
    result = _cli("resume", str(plan), "--model", model, "--json")
    assert result.exit_code == 3, result.output
    doc = json.loads(result.stdout)
    [report] = [t for t in doc["tasks"] if t["id"] == "report"]
    assert (report["state"], report["verified"]) == ("WAITING", False)
    [gate] = doc["waiting"]
    assert (gate["check_sha256"], [f["path"] for f in gate["files"]]) == (None, ["report.txt"])


class _Terminal:
    """A terminal's stdin for the gate prompt: typed lines, one per readline."""

    def __init__(self, *lines: str) -> None:
        self.lines = list(lines)
        self.closed = False

    def isatty(self) -> bool:
        return True

    def readline(self) -> str:
        return self.lines.pop(0) + "\n" if self.lines else ""


def test_the_terminal_prompt_answers_a_gate_bound_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import select
    import sys

    from groundskeeper.cli import approval
    from groundskeeper.cli.progress import Progress

    control = ControlDir.for_plan(tmp_path / "plan.org")
    control.ensure()
    files = [{"path": "report.txt", "sha256": "b" * 64}]
    value = {"kind": "gate", "task_id": "report", "title": "Write the report", "gate_id": "g1",
             "artifacts_sha256": "a" * 64, "files": files}  # fmt: skip
    terminal = _Terminal("maybe", "r", "say where the number comes from")
    monkeypatch.setattr(sys, "stdin", terminal)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    monkeypatch.setattr(select, "select", lambda r, w, x, t: (r, [], []))
    with Progress(live=False) as progress:
        answer = approval.await_gate_answer(control, "i1", value, progress)
    assert answer is not None
    assert {k: answer[k] for k in ("interrupt_id", "task_id", "gate_id", "artifacts_sha256",
                                   "decision", "note", "by")} == {
        "interrupt_id": "i1", "task_id": "report", "gate_id": "g1", "artifacts_sha256": "a" * 64,
        "decision": "revise", "note": "say where the number comes from", "by": "terminal",
    }  # fmt: skip
    assert terminal.lines == []


def test_an_aborted_task_is_not_worked_on_again_while_another_is_revised(tmp_path: Path) -> None:
    both = PLAN.replace("  :ID: other\n", "  :ID: other\n  :gate: approval\n")
    work, doc = _waiting_run(tmp_path, plan=both)
    assert sorted(g["task_id"] for g in doc["waiting"]["gates"]) == ["other", "report"]
    assert _cli("approve", str(work), "--task", "report", "--no").exit_code == 0
    assert _cli("approve", str(work), "--task", "other", "--revise", "one more line").exit_code == 0
    code, again = _resume(work)
    assert code == 3 and again is not None
    assert _states(again) == {"report": "FAILED", "other": "WAITING"}
    assert _cli("approve", str(work), "--task", "other", "--yes").exit_code == 0
    code, done = _resume(work)  # a third execute: the aborted task stays FAILED, unworked
    assert code == 1 and done is not None
    assert _states(done) == {"report": "FAILED", "other": "DONE"}
    claims = [b["task_id"] for s, b in _steps(work) if s == "claim"]
    assert (claims.count("report"), claims.count("other")) == (1, 2)
    assert "* FAILED Write the report" in (work / "plan.org").read_text()
    _verified(work)


def test_a_revise_note_survives_a_model_that_went_away(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    plan = PLAN.split("* TODO Write other")[0]
    author = tmp_path / "author.yaml"
    author.write_text(yaml.safe_dump({"author": [plan], "workers": {}}))
    stub = messages_stub.worker
    stub.reply_tool_use("write_file", {"path": "report.txt", "content": "ok v1\n"})
    stub.reply_text("DONE: wrote report.txt")
    work = tmp_path / "work"
    result = _cli("run", "report", "--model", "anthropic:claude-stub-1", "--author-model",
                  f"scripted:{author}", "--dir", str(work), "--json")  # fmt: skip
    assert result.exit_code == 3, result.output
    note = "Name the source."
    assert _cli("approve", str(work), "--task", "report", "--revise", note).exit_code == 0
    for _ in range(3):  # the first call and the SDK's two retries
        stub.reply_status(529, headers={"retry-after-ms": "1"})
    code, down = _resume(work)
    assert code == 1 and down is not None and down["model_unavailable"], down
    assert "* TODO Write the report" in (work / "plan.org").read_text()
    asked = len(messages_stub.requests)
    stub.reply_tool_use("write_file", {"path": "source.txt", "content": "x\n"})
    stub.reply_text("DONE: named the source")
    code, again = _resume(work)
    assert code == 3 and again is not None, again
    last = messages_stub.requests[asked].body["messages"][-1]
    said = " ".join(b.get("text", "") for b in last["content"] if isinstance(b, dict))
    assert note in said
    assert [b["applied"] for s, b in _steps(work) if s == "gate-decision"] == [True]
    _verified(work)


def _judged_plan(tmp_path: Path, verdict: str) -> tuple[Path, str]:
    judged = (
        "#+TODO: TODO NEXT | DONE FAILED PARTIAL\n* TODO Write the report\n  :PROPERTIES:\n"
        "  :ID: report\n  :gate: approval\n  :max-attempts: 1\n"
        "  :done-when: grep -q ok report.txt\n  :judge: The report says ok.\n"
        "  :judge-files: report.txt\n  :END:\n"
    )
    plan, model = _plan_run(tmp_path, judged, {"report": REPORT})
    script = yaml.safe_load(Path(model.split(":", 1)[1]).read_text())
    script["judges"] = {"report": [{"verdict": verdict, "reasons": ["r"]}]}
    Path(model.split(":", 1)[1]).write_text(yaml.safe_dump(script))
    return plan, model


def test_a_judge_failure_ends_a_gated_task_before_its_gate(tmp_path: Path) -> None:
    plan, model = _judged_plan(tmp_path, "fail")
    result = _cli("resume", str(plan), "--model", model, "--json")
    assert result.exit_code == 1, result.output
    assert _states(json.loads(result.stdout)) == {"report": "FAILED"}
    assert json.loads(result.stdout)["waiting"] == []


def test_a_gated_task_waits_only_after_its_judge_passes(tmp_path: Path) -> None:
    plan, model = _judged_plan(tmp_path, "pass")
    result = _cli("resume", str(plan), "--model", model, "--json")
    assert result.exit_code == 3, result.output
    assert _states(json.loads(result.stdout)) == {"report": "WAITING"}
