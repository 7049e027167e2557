"""A goal run stopped at a bad moment keeps what it sealed: an approval sealed as applied is
honoured by the resumed run (once, while the approved files are unchanged); a lost or damaged
graph checkpoint is rebuilt from the sealed plan or refused by name, never re-authored."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from groundskeeper.cli import main
from groundskeeper.record.ledger import read_steps

# the check sleeps while a `slow` file exists: long enough to kill the run inside the check
# that applies the approval, instant otherwise
PLAN = (
    "#+TITLE: gated\n"
    "* TODO Write the report\n"
    "  :PROPERTIES:\n"
    "  :ID: report\n"
    "  :gate: approval\n"
    "  :done-when: if test -f slow; then sleep 30; fi; grep -q ok report.txt\n"
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


def _script(tmp_path: Path) -> str:
    path = tmp_path / "mission.yaml"
    path.write_text(
        yaml.safe_dump({"author": [PLAN], "workers": {"report": REPORT, "other": OTHER}})
    )
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


def _waiting(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    result = _cli("run", "report", "--model", _script(tmp_path), "--dir", str(work), "--json")
    assert result.exit_code == 3, result.output
    assert _states(json.loads(result.stdout)) == {"report": "WAITING", "other": "DONE"}
    return work


def _resume(work: Path) -> tuple[int, dict[str, Any] | None]:
    result = _cli("run", "--resume", str(work), "--json")
    return result.exit_code, json.loads(result.stdout) if result.stdout.strip() else None


def _stop_after_the_approval_is_sealed(work: Path, sig: signal.Signals) -> None:
    """`run --resume` in a process of its own, stopped by `sig` inside the check that applies
    the sealed approval (the `slow` file holds it there)."""
    (work / "slow").write_text("")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    entry = (
        "import signal; signal.signal(signal.SIGINT, signal.default_int_handler);"
        " from groundskeeper.cli import main; main()"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", entry, "run", "--resume", str(work)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any(s == "gate-decision" for s, _ in _steps(work)):
                break
            time.sleep(0.05)
        else:
            pytest.fail("the resumed run never sealed the approval")
        time.sleep(0.5)  # inside the approved task's check now
    finally:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    (work / "slow").unlink()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT], ids=["kill-9", "ctrl-c"])
def test_an_approval_sealed_before_a_kill_is_honoured_on_resume(
    tmp_path: Path, sig: signal.Signals
) -> None:
    work = _waiting(tmp_path)
    assert _cli("approve", str(work), "--task", "report", "--yes").exit_code == 0
    _stop_after_the_approval_is_sealed(work, sig)
    [sealed] = [b for s, b in _steps(work) if s == "gate-decision"]
    assert (sealed["decision"], sealed["applied"]) == ("yes", True)
    assert "* TODO Write the report" in (work / "plan.org").read_text()
    claims = [b for s, b in _steps(work) if s == "claim" and b["task_id"] == "report"]

    code, doc = _resume(work)
    assert code == 0 and doc is not None, doc
    assert _states(doc) == {"report": "DONE", "other": "DONE"}
    assert "* DONE Write the report" in (work / "plan.org").read_text()
    steps = _steps(work)
    # sealed once, applied once: no second decision, no new gate, the worker not asked again
    assert [b["applied"] for s, b in steps if s == "gate-decision"] == [True]
    assert [b["gate_id"] for s, b in steps if s == "gate"] == [sealed["gate_id"]]
    assert [b for s, b in steps if s == "claim" and b["task_id"] == "report"] == claims
    _verified(work)
    # taken: a further resume has nothing to apply and nothing waits
    code, again = _resume(work)
    assert code == 0 and again is not None and _states(again)["report"] == "DONE"
    assert [s for s, _ in _steps(work)].count("gate-decision") == 1


def test_resume_of_the_plan_honours_an_approval_the_ledger_sealed(tmp_path: Path) -> None:
    # `resume PLAN` never answers a gate, but an answer already sealed as applied is the
    # ledger's, not the graph's: it is taken, not the worker asked again
    work = _waiting(tmp_path)
    assert _cli("approve", str(work), "--task", "report", "--yes").exit_code == 0
    _stop_after_the_approval_is_sealed(work, signal.SIGKILL)
    result = _cli("resume", str(work / "plan.org"), "--model", _script(tmp_path), "--json")
    assert result.exit_code == 0, result.output
    assert _states(json.loads(result.stdout)) == {"report": "DONE", "other": "DONE"}
    steps = _steps(work)
    assert [b["applied"] for s, b in steps if s == "gate-decision"] == [True]
    assert len([b for s, b in steps if s == "claim" and b["task_id"] == "report"]) == 1
    _verified(work)


def test_a_sealed_approval_survives_a_lost_graph_checkpoint_too(tmp_path: Path) -> None:
    work = _waiting(tmp_path)
    assert _cli("approve", str(work), "--task", "report", "--yes").exit_code == 0
    _stop_after_the_approval_is_sealed(work, signal.SIGKILL)
    (work / ".groundskeeper" / "plan.org" / "_graph.db").unlink()
    code, doc = _resume(work)
    assert code == 0 and doc is not None, doc
    assert _states(doc) == {"report": "DONE", "other": "DONE"}
    assert [s for s, _ in _steps(work)].count("author-call") == 1
    assert [b["applied"] for s, b in _steps(work) if s == "gate-decision"] == [True]
    _verified(work)


def test_a_sealed_approval_is_not_honoured_once_the_files_changed(tmp_path: Path) -> None:
    work = _waiting(tmp_path)
    assert _cli("approve", str(work), "--task", "report", "--yes").exit_code == 0
    _stop_after_the_approval_is_sealed(work, signal.SIGKILL)
    (work / "report.txt").write_text("ok, but not what the person approved\n")
    code, doc = _resume(work)
    assert code == 3 and doc is not None, doc
    assert _states(doc)["report"] == "WAITING"
    [task] = [t for t in doc["tasks"] if t["id"] == "report"]
    assert task["reason"].startswith(
        "answer refused (stale: the artifacts changed since the person approved them);"
        " waiting for approval (gate "
    )
    assert "* TODO Write the report" in (work / "plan.org").read_text()
    gates = [b["gate_id"] for s, b in _steps(work) if s == "gate"]
    assert len(gates) == 2 and gates[0] != gates[1]
    _verified(work)


# -- the graph checkpoint lost or damaged: the sealed plan goes on, the author is not asked --


def _authored(work: Path) -> int:
    return [s for s, _ in _steps(work)].count("author-call")


def test_a_lost_graph_checkpoint_continues_the_sealed_plan(tmp_path: Path) -> None:
    work = _waiting(tmp_path)
    graph = work / ".groundskeeper" / "plan.org" / "_graph.db"
    graph.unlink()
    # nothing to answer until the run is rebuilt: said, with the command that rebuilds it
    refused = _cli("approve", str(work), "--task", "report", "--yes")
    assert refused.exit_code == 2
    assert f"run `groundskeeper run --resume {work}` first" in refused.stderr
    authored = _authored(work)
    result = _cli("run", "--resume", str(work), "--json")
    assert result.exit_code == 3, result.output
    assert "Traceback" not in result.output
    assert "continuing the plan" in result.stderr and "sealed in the ledger" in result.stderr
    doc = json.loads(result.stdout)
    assert _states(doc) == {"report": "WAITING", "other": "DONE"}
    assert _authored(work) == authored  # the author was not asked again
    claims = [b for s, b in _steps(work) if s == "claim" and b["task_id"] == "report"]
    assert len(claims) == 1  # nor the worker: the work waits for a person
    # the rebuilt run's gate can be answered, and the answer applies
    assert _cli("approve", str(work), "--task", "report", "--yes").exit_code == 0
    code, done = _resume(work)
    assert code == 0 and done is not None, done
    assert _states(done) == {"report": "DONE", "other": "DONE"}
    assert _authored(work) == authored
    _verified(work)


def test_a_damaged_graph_checkpoint_is_named_with_the_way_on(tmp_path: Path) -> None:
    work = _waiting(tmp_path)
    graph = work / ".groundskeeper" / "plan.org" / "_graph.db"
    with graph.open("r+b") as handle:
        handle.truncate(5000)
    for args in (("run", "--resume", str(work)), ("approve", str(work), "--task", "report",
                                                  "--yes")):  # fmt: skip
        result = _cli(*args)
        assert result.exit_code == 2, result.output
        assert "Traceback" not in result.output
        said = f"groundskeeper: error: {graph}: unreadable graph checkpoint ("
        assert result.stderr.startswith(said)
        assert f"move it aside (`mv {graph} {graph}.damaged`)" in result.stderr
    authored = _authored(work)
    graph.rename(graph.with_name("_graph.db.damaged"))  # the way on, as it was named
    code, doc = _resume(work)
    assert code == 3 and doc is not None and _states(doc)["report"] == "WAITING"
    assert _authored(work) == authored
    _verified(work)


def test_a_plan_file_the_ledger_never_sealed_is_refused_when_the_graph_is_lost(
    tmp_path: Path,
) -> None:
    work = _waiting(tmp_path)
    control = work / ".groundskeeper" / "plan.org"
    (control / "_graph.db").unlink()
    (control / "_steps.jsonl").rename(tmp_path / "aside.jsonl")
    (control / "_steps.checkpoint").rename(tmp_path / "aside.checkpoint")
    result = _cli("run", "--resume", str(work))
    assert result.exit_code == 2, result.output
    assert "its ledger seals no plan" in result.stderr
    assert f"continue it with `groundskeeper resume {work / 'plan.org'}`" in result.stderr
