"""`groundskeeper run "GOAL"` and `groundskeeper approve` with the scripted model, end to end."""

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

GOOD = (
    "#+TITLE: greet\n"
    "* TODO Greet\n"
    "  :PROPERTIES:\n"
    "  :ID: greet\n"
    "  :done-when: grep -qx hi out.txt\n"
    "  :END:\n"
    "  Write out.txt holding hi.\n"
)
NO_CHECK = "* TODO Greet\n  :PROPERTIES:\n  :ID: greet\n  :END:\n"
CANNOT_FAIL = "* TODO Greet\n  :PROPERTIES:\n  :ID: greet\n  :done-when: true\n  :END:\n"
HONEST = [
    {"tool": "write_file", "input": {"path": "out.txt", "content": "hi\n"}},
    {"say": "DONE"},
]


def _script(tmp_path: Path, author: list[str], workers: dict[str, Any] | None = None) -> str:
    path = tmp_path / "mission.yaml"
    path.write_text(yaml.safe_dump({"author": author, "workers": workers or {"greet": HONEST}}))
    return f"scripted:{path}"


def _run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def _steps(work: Path) -> list[tuple[str, dict[str, Any]]]:
    ledger = work / ".groundskeeper" / "plan.org" / "_steps.jsonl"
    lines = [json.loads(line) for line in ledger.read_text().splitlines() if line.strip()]
    return [(line["step"], line["body"]) for line in lines]


def _verify(work: Path) -> None:
    result = _run("ledger", "verify", str(work), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ok"] is True


def test_a_valid_first_outline_is_sealed_written_and_run(tmp_path: Path) -> None:
    work = tmp_path / "work"
    result = _run("run", "say hi", "--model", _script(tmp_path, [GOOD]), "--dir", str(work),
                  "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["outcome"] == "ran" and doc["ok"] is True
    assert [o["ok"] for o in doc["outlines"]] == [True]
    assert [(t["id"], t["state"], t["verified"]) for t in doc["tasks"]] == [("greet", "DONE", True)]
    assert (work / "plan.org").read_text() == GOOD.replace("* TODO Greet", "* DONE Greet")
    steps = [s for s, _ in _steps(work)]
    assert steps[:5] == ["run-start", "author-call", "outline-check", "plan-sealed", "run-end"]
    assert steps[5] == "run-start" and steps[-1] == "run-end"
    _verify(work)


def test_an_invalid_outline_gets_one_retry_carrying_the_exact_diagnostics(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    result = _run("run", "say hi", "--model", _script(tmp_path, [CANNOT_FAIL, GOOD]),
                  "--dir", str(work), "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [o["ok"] for o in doc["outlines"]] == [False, True]
    assert [d["code"] for d in doc["outlines"][0]["diagnostics"]] == ["T005"]
    bodies = dict((s, b) for s, b in _steps(work) if s == "outline-retry")
    assert bodies["outline-retry"]["message"] == (
        "Your previous outline was invalid:\n"
        "plan.org:4: error: Greet: check cannot fail: `true` [T005]\n"
        "Emit a corrected org outline only."
    )
    _verify(work)


def test_two_invalid_outlines_end_the_run_before_anything_runs(tmp_path: Path) -> None:
    work = tmp_path / "work"
    result = _run("run", "say hi", "--model", _script(tmp_path, [CANNOT_FAIL, NO_CHECK]),
                  "--dir", str(work), "--require-checks")  # fmt: skip
    assert result.exit_code == 1
    assert "[T005]" in result.stderr and "[A001]" in result.stderr
    assert not (work / "plan.org").exists()
    assert not (work / "out.txt").exists()
    assert (work / "plan.outline-1.org").read_text() == CANNOT_FAIL
    assert (work / "plan.outline-2.org").read_text() == NO_CHECK
    assert not (work / "plan.outline-3.org").exists()
    steps = _steps(work)
    assert [s for s, _ in steps].count("author-call") == 2  # the first outline and one retry
    assert [s for s, _ in steps].count("run-start") == 1  # the goal run only: no plan run
    assert steps[-1][0] == "run-end" and steps[-1][1]["outcome"] == "invalid"
    _verify(work)


def test_a_fenced_outline_with_prose_around_it_is_reduced_to_the_outline(tmp_path: Path) -> None:
    work = tmp_path / "work"
    reply = f"Here is your plan:\n\n```org\n{GOOD}```\n\nGood luck!\n"
    result = _run("run", "say hi", "--model", _script(tmp_path, [reply]), "--dir", str(work))
    assert result.exit_code == 0, result.output
    assert "Good luck" not in (work / "plan.org").read_text()
    sealed = dict(_steps(work))["plan-sealed"]
    import hashlib

    assert sealed["plan_sha256"] == hashlib.sha256(GOOD.encode()).hexdigest()


def test_a_lying_worker_is_caught_and_fed_back(tmp_path: Path) -> None:
    work = tmp_path / "work"
    liar = [{"say": "DONE"}, *HONEST]
    result = _run("run", "say hi", "--model", _script(tmp_path, [GOOD], {"greet": liar}),
                  "--dir", str(work), "--json")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tasks"][0]["attempts"] == 2
    assert "did not pass its check" in result.stderr


def test_a_non_empty_directory_is_refused_naming_the_fix(tmp_path: Path) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "notes.txt").write_text("mine\n")
    result = _run("run", "x", "--model", _script(tmp_path, [GOOD]), "--dir",
                  str(tmp_path / "work"))  # fmt: skip
    assert result.exit_code == 2
    assert "is not empty" in result.stderr and "--resume" in result.stderr
    assert (tmp_path / "work" / "notes.txt").read_text() == "mine\n"


def test_goal_and_resume_together_or_neither_are_usage_errors(tmp_path: Path) -> None:
    assert _run("run").exit_code == 2
    assert _run("run", "x", "--resume", str(tmp_path)).exit_code == 2


def test_resume_of_a_directory_without_a_mission_names_the_commands(tmp_path: Path) -> None:
    result = _run("run", "--resume", str(tmp_path))
    assert result.exit_code == 2
    assert 'groundskeeper run "GOAL"' in result.stderr


def test_the_default_directory_is_named_from_the_goal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    script = _script(tmp_path, [GOOD, GOOD])
    assert _run("run", "Say hi, please!", "--model", script).exit_code == 0
    assert (tmp_path / "say-hi-please" / "plan.org").is_file()
    assert _run("run", "Say hi, please!", "--model", script).exit_code == 0
    assert (tmp_path / "say-hi-please-2" / "plan.org").is_file()


# -- approval -----------------------------------------------------------------------------------


def _wait_for_approval(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    work = tmp_path / "work"
    result = _run("run", "say hi", "--model", _script(tmp_path, [GOOD]), "--dir", str(work),
                  "--approve", "--json")  # fmt: skip
    assert result.exit_code == 3, result.output
    doc = json.loads(result.stdout)
    assert doc["outcome"] == "waiting"
    assert not (work / "plan.org").exists()  # nothing sealed, nothing run
    return work, doc["waiting"]


def test_approval_yes_runs_the_plan_and_is_sealed_before_it(tmp_path: Path) -> None:
    work, waiting = _wait_for_approval(tmp_path)
    answer = _run("approve", str(work), "--yes", "--json")
    assert answer.exit_code == 0, answer.output
    assert json.loads(answer.stdout)["interrupt_id"] == waiting["interrupt_id"]
    result = _run("run", "--resume", str(work), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["tasks"][0]["state"] == "DONE"
    steps = [s for s, _ in _steps(work)]
    assert steps.index("approval") < steps.index("plan-sealed")
    approval = dict(_steps(work))["approval"]
    assert approval["decision"] == "yes"
    assert approval["interrupt_id"] == waiting["interrupt_id"]
    assert approval["plan_sha256"] == waiting["plan_sha256"]
    _verify(work)


def test_approval_no_runs_nothing(tmp_path: Path) -> None:
    work, _ = _wait_for_approval(tmp_path)
    assert _run("approve", str(work), "--no").exit_code == 0
    result = _run("run", "--resume", str(work), "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout)["outcome"] == "rejected"
    assert not (work / "plan.org").exists() and not (work / "out.txt").exists()
    assert dict(_steps(work))["approval"]["decision"] == "no"
    _verify(work)


def test_a_stale_approval_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    work, _ = _wait_for_approval(tmp_path)
    assert _run("approve", str(work), "--yes").exit_code == 0
    answer_file = work / ".groundskeeper" / "plan.org" / "approval.json"
    answer = json.loads(answer_file.read_text())
    answer["interrupt_id"] = "0" * 32  # an answer to another interrupt, replayed here
    answer_file.write_text(json.dumps(answer))
    result = _run("run", "--resume", str(work))
    assert result.exit_code == 2
    assert "stale approval refused" in result.stderr
    assert not (work / "plan.org").exists()
    assert "approval" not in [s for s, _ in _steps(work)]
    _verify(work)


def test_an_approval_for_another_plan_is_refused(tmp_path: Path) -> None:
    work, _ = _wait_for_approval(tmp_path)
    assert _run("approve", str(work), "--yes").exit_code == 0
    answer_file = work / ".groundskeeper" / "plan.org" / "approval.json"
    answer = json.loads(answer_file.read_text())
    answer["plan_sha256"] = "f" * 64
    answer_file.write_text(json.dumps(answer))
    result = _run("run", "--resume", str(work))
    assert result.exit_code == 2 and "stale approval refused" in result.stderr
    assert not (work / "plan.org").exists()


def test_approve_when_nothing_waits_is_refused(tmp_path: Path) -> None:
    work = tmp_path / "work"
    assert _run("run", "say hi", "--model", _script(tmp_path, [GOOD]), "--dir",
                str(work)).exit_code == 0  # fmt: skip
    result = _run("approve", str(work), "--yes")
    assert result.exit_code == 2 and "no approval is waiting" in result.stderr


def test_a_consumed_approval_cannot_be_replayed(tmp_path: Path) -> None:
    work, _ = _wait_for_approval(tmp_path)
    assert _run("approve", str(work), "--yes").exit_code == 0
    answer_file = work / ".groundskeeper" / "plan.org" / "approval.json"
    kept = answer_file.read_text()
    assert _run("run", "--resume", str(work)).exit_code == 0
    assert not answer_file.exists()  # consumed
    answer_file.write_text(kept)  # replayed after the fact
    assert _run("approve", str(work), "--no").exit_code == 2  # nothing waits any more
    assert [s for s, _ in _steps(work)].count("approval") == 1


# -- a killed run continues without calling the author again -----------------------------------


def test_a_run_killed_during_execute_resumes_without_the_author(tmp_path: Path) -> None:
    work = tmp_path / "work"
    slow = [
        # holds the run in execute until the kill (polled every 0.1 s); the resumed attempt
        # sleeps again, so no longer than that needs
        {"tool": "sh", "input": {"cmd": "sleep 10"}},
        *HONEST,
    ]
    script = _script(tmp_path, [CANNOT_FAIL, GOOD], {"greet": slow})
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    entry = "from groundskeeper.cli import main; main()"
    proc = subprocess.Popen(
        [sys.executable, "-c", entry, "run", "say hi", "--model", script, "--dir", str(work)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if (work / "plan.org").exists() and any(
                s == "tool-call" or s == "task-start" for s, _ in _steps(work)
            ):
                break
            time.sleep(0.1)
        else:
            pytest.fail("the run never reached execute")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    authored = [s for s, _ in _steps(work)].count("author-call")
    assert authored == 2
    result = _run("run", "--resume", str(work), "--json")
    assert result.exit_code == 0, result.output
    assert [s for s, _ in _steps(work)].count("author-call") == authored
    assert json.loads(result.stdout)["tasks"][0]["state"] == "DONE"
    _verify(work)
