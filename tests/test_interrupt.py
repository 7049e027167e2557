"""Ctrl-C is an answer (issue 27): SIGINT (or SIGTERM) in the middle of a long sandbox command
ends the run within half a second, seals an interrupted run-end naming the tasks in flight,
leaves every task resumable and prints the command that continues; a second one exits at once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from tests.messages_stub import MessagesStub
from tests.test_cli_run import HEAD, control, keywords, steps, task

SCRIPT = """workers:
  slow:
    - {tool: sh, input: {cmd: 'sleep 20'}}
    - {tool: write_file, input: {path: slow.txt, content: ok}}
    - say: DONE
  quick:
    - {tool: write_file, input: {path: quick.txt, content: ok}}
    - say: DONE
"""
RESUMED = """workers:
  slow:
    - {tool: write_file, input: {path: slow.txt, content: ok}}
    - say: DONE
  quick:
    - {tool: write_file, input: {path: quick.txt, content: ok}}
    - say: DONE
"""


def _start(tmp_path: Path) -> tuple[Path, subprocess.Popen[bytes], list[str]]:
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD + task("Quick", "quick", "grep -qx ok quick.txt")
                    + task("Slow", "slow", "grep -qx ok slow.txt"))  # fmt: skip
    script = tmp_path / "workers.yaml"
    script.write_text(SCRIPT)
    args = ["resume", str(plan), "--model", f"scripted:{script}", "--max-parallel", "1"]
    process = subprocess.Popen(
        [sys.executable, "-c", "from groundskeeper.cli import main; main()", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    return plan, process, args


def _wait_for_sleep(plan: Path, process: subprocess.Popen[bytes]) -> None:
    """Until the slow task's `sleep 20` runs: its model-call is sealed before the tool runs."""
    deadline = time.monotonic() + 60
    ledger = control(plan) / "_steps.jsonl"
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read() if process.stderr else b""
        started = ledger.exists() and b'"task_id":"slow"' in ledger.read_bytes()
        if started and any(s.get("task_id") == "slow" for s in steps(plan, "model-call")):
            time.sleep(0.3)  # the tool call is under way
            return
        time.sleep(0.05)
    pytest.fail("the slow task never started its sandbox command")


def _stop(process: subprocess.Popen[bytes], sig: signal.Signals) -> str:
    """Send `sig` and wait: the process ends with 130 within 5 s, exit included, with no
    traceback and no click "Aborted!"; its stderr."""
    sent = time.monotonic()
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=30)
    took = time.monotonic() - sent
    text = stderr.decode()
    assert process.returncode == 130, text
    assert took < 5, took  # the process, exit included; the run itself: its own test
    assert "Traceback" not in text and "Aborted!" not in text
    return text


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_mid_command_ends_the_run_promptly_and_resume_finishes(
    tmp_path: Path, sig: signal.Signals
) -> None:
    plan, process, args = _start(tmp_path)
    _wait_for_sleep(plan, process)
    text = _stop(process, sig)
    assert f"continue with: groundskeeper resume {plan}" in text
    [end] = steps(plan, "run-end")
    assert (end["ok"], end["interrupted"], end["in_flight"]) == (False, sig.name, ["slow"])
    assert keywords(plan) == {"quick": "DONE", "slow": "TODO"}  # resumable, not FAILED
    assert not any(s["to"] == "FAILED" for s in steps(plan, "state"))
    verified = CliRunner().invoke(main, ["ledger", "verify", str(plan), "--json"])
    assert verified.exit_code == 0, verified.output
    (tmp_path / "workers.yaml").write_text(RESUMED)
    final = CliRunner().invoke(main, [*args, "--json"])
    assert final.exit_code == 0, final.output
    assert json.loads(final.stdout)["interrupted"] is None
    assert keywords(plan) == {"quick": "DONE", "slow": "DONE"}


def test_the_run_ends_within_half_a_second_of_the_signal(tmp_path: Path) -> None:
    """Timed from inside: the run-end's own timestamp against the moment of the signal."""
    plan, process, _ = _start(tmp_path)
    _wait_for_sleep(plan, process)
    os.kill(process.pid, signal.SIGINT)
    sent = time.time()
    process.communicate(timeout=30)
    ledger = (control(plan) / "_steps.jsonl").read_bytes().splitlines()
    end = json.loads(ledger[-1])
    assert end["step"] == "run-end"
    sealed = time.mktime(time.strptime(end["ts"][:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone
    sealed += int(end["ts"][20:23]) / 1000
    assert sealed - sent < 0.5, sealed - sent


def test_a_second_signal_exits_at_once(tmp_path: Path) -> None:
    plan, process, _ = _start(tmp_path)
    _wait_for_sleep(plan, process)
    process.send_signal(signal.SIGINT)
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130
    text = stderr.decode()
    assert "Traceback" not in text
    assert f"continue with: groundskeeper resume {plan}" in text


RED_SCRIPT = """workers:
  slow:
    - {tool: write_file, input: {path: README.md, content: "Install\\nUsage\\n"}}
    - {tool: sh, input: {cmd: 'sleep 20'}}
    - {tool: write_file, input: {path: slow.txt, content: ok}}
    - say: DONE
  usage:
    - say: DONE
"""
RED_RESUMED = """workers:
  slow:
    - {tool: write_file, input: {path: slow.txt, content: ok}}
    - say: DONE
  usage:
    - say: DONE
"""


def test_a_check_seen_red_before_an_interruption_is_not_asked_red_again(tmp_path: Path) -> None:
    # usage's check was red before any work; the slow task then wrote the README for it (as
    # an ordinary worker would) and the run was interrupted before usage started: the resumed
    # run must not ask red-first again (it passes now) and refuse the task as red-less
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD + "#+REQUIRE_RED: t\n" + task("Slow", "slow", "grep -qx ok slow.txt")
                    + task("Usage", "usage", "grep -q Usage README.md"))  # fmt: skip
    script = tmp_path / "workers.yaml"
    script.write_text(RED_SCRIPT)
    args = ["resume", str(plan), "--model", f"scripted:{script}", "--max-parallel", "1"]
    process = subprocess.Popen(
        [sys.executable, "-c", "from groundskeeper.cli import main; main()", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _wait_for_sleep(plan, process)
    process.kill()  # SIGKILL: no run-end
    process.communicate(timeout=30)
    assert sorted(s["task_id"] for s in steps(plan, "check") if s.get("phase") == "red-first") == [
        "slow",
        "usage",
    ]
    script.write_text(RED_RESUMED)
    result = CliRunner().invoke(main, [*args, "--json"])
    assert keywords(plan) == {"slow": "DONE", "usage": "DONE"}, result.stdout
    assert result.exit_code == 0


IDLE_SCRIPT = """workers:
  pre:
    - say: DONE
"""


def _interrupted_in_red_first(tmp_path: Path, sig: signal.Signals) -> list[str]:
    """A run under --require-red stopped by `sig` while its red-first check runs: the check
    (a sleep, then a test that already passes) is cut short and sealed `interrupted`."""
    plan = tmp_path / "plan.org"
    slow = "import os, time; os.path.exists('slow') and time.sleep(20)"
    check = f'python3 -c "{slow}" && grep -qx old x.txt'
    (tmp_path / "slow").write_text("")
    plan.write_text(HEAD + task("Pre-passing", "pre", check))
    (tmp_path / "x.txt").write_text("old\n")
    script = tmp_path / "workers.yaml"
    script.write_text(IDLE_SCRIPT)
    args = ["resume", str(plan), "--model", f"scripted:{script}", "--require-red"]
    process = subprocess.Popen(
        [sys.executable, "-c", "from groundskeeper.cli import main; main()", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    ledger = control(plan) / "_steps.jsonl"
    deadline = time.monotonic() + 60
    while not (ledger.exists() and b'"step":"run-start"' in ledger.read_bytes()):
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(1.5)  # the red-first check's sleep is under way
    process.send_signal(sig)
    _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr.decode()
    [red] = [s for s in steps(plan, "check") if s.get("phase") == "red-first"]
    assert (red["verdict"], red["reason"]) == ("FAIL", "interrupted")
    (tmp_path / "slow").unlink()  # the resumed check runs to its verdict
    return args


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_red_first_check_is_no_red_observation(
    tmp_path: Path, sig: signal.Signals
) -> None:
    # cut short, the check saw nothing: the resumed run asks red-first again, the check passes
    # before any work, and --require-red refuses the task (the do-nothing worker never runs)
    args = _interrupted_in_red_first(tmp_path, sig)
    plan = tmp_path / "plan.org"
    result = CliRunner().invoke(main, [*args, "--json"])
    assert result.exit_code == 1, result.output
    assert keywords(plan) == {"pre": "FAILED"}
    reds = [s for s in steps(plan, "check") if s.get("phase") == "red-first"]
    assert [(s["verdict"], s["reason"]) for s in reds] == [("FAIL", "interrupted"), ("PASS", None)]
    assert not steps(plan, "model-call")
    [verdict] = json.loads(result.stdout)["tasks"]
    assert verdict["reason"] == "red-first: passes before any work"


GOAL_PLAN = (
    "#+TITLE: goal\n"
    + """* TODO Slow
  :PROPERTIES:
  :ID: slow
  :done-when: grep -qx ok slow.txt
  :END:
  Write slow.txt holding ok.
"""
)


def _goal_script(tmp_path: Path, worker: str) -> Path:
    path = tmp_path / "mission.yaml"
    path.write_text(
        "author:\n  - |\n" + "".join(f"    {line}\n" for line in GOAL_PLAN.splitlines()) + worker
    )
    return path


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_goal_run_stopped_mid_command_seals_its_end_and_run_resume_finishes(
    tmp_path: Path, sig: signal.Signals
) -> None:
    # `groundskeeper run` answers a signal as `resume` does: no "Aborted!", the plan run's end
    # sealed as interrupted, exit 130, the command that continues; `run --resume` finishes
    slow = "workers:\n  slow:\n    - {tool: sh, input: {cmd: 'sleep 20'}}\n    - say: DONE\n"
    script = _goal_script(tmp_path, slow)
    work = tmp_path / "work"
    args = ["run", "slow", "--model", f"scripted:{script}", "--dir", str(work)]
    process = subprocess.Popen(
        [sys.executable, "-c", "from groundskeeper.cli import main; main()", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _wait_for_sleep(work / "plan.org", process)
    text = _stop(process, sig)
    assert f"continue with: groundskeeper run --resume {work}" in text
    plan = work / "plan.org"
    # the goal run ended at execute ("sealed"); the plan run it started is the interrupted one
    goal_end, plan_end = steps(plan, "run-end")
    assert goal_end["outcome"] == "sealed"
    assert (plan_end["interrupted"], plan_end["in_flight"]) == (sig.name, ["slow"])
    assert keywords(plan) == {"slow": "TODO"}
    verified = CliRunner().invoke(main, ["ledger", "verify", str(work), "--json"])
    assert verified.exit_code == 0, verified.output
    done = "workers:\n  slow:\n    - {tool: write_file, input: {path: slow.txt, content: ok}}\n"
    _goal_script(tmp_path, done + "    - say: DONE\n")
    final = CliRunner().invoke(main, ["run", "--resume", str(work), "--json"])
    assert final.exit_code == 0, final.output
    assert keywords(plan) == {"slow": "DONE"}
    assert len(steps(plan, "author-call")) == 1
    verified = CliRunner().invoke(main, ["ledger", "verify", str(work), "--json"])
    assert verified.exit_code == 0, verified.output


def test_a_goal_run_stopped_while_the_author_writes_keeps_nothing_half_done(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    # a stop outside any plan run (the author's call is slow): the answer is the same, nothing
    # half-done is recorded (the goal run seals its first step once the author has answered),
    # and `run --resume` asks the author again
    messages_stub.author.reply_text("```org\n" + GOAL_PLAN + "```\n", delay=20)
    work = tmp_path / "work"
    args = ["run", "slow", "--model", "anthropic:claude-stub-1", "--dir", str(work)]
    process = subprocess.Popen(
        [sys.executable, "-c", "from groundskeeper.cli import main; main()", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not messages_stub.requests:
        assert process.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    text = stderr.decode()
    assert (process.returncode, time.monotonic() - sent < 5) == (130, True), text
    assert "Traceback" not in text and "Aborted!" not in text
    assert f"continue with: groundskeeper run --resume {work}" in text
    assert "groundskeeper: stopped by SIGINT; every task is left resumable" in text
    plan = work / "plan.org"
    assert not plan.exists() and not (control(plan) / "_steps.jsonl").exists()
    messages_stub.author.reply_text("```org\n" + GOAL_PLAN + "```\n")
    messages_stub.worker.reply_tool_use("write_file", {"path": "slow.txt", "content": "ok\n"})
    messages_stub.worker.reply_text("DONE")
    final = CliRunner().invoke(main, ["run", "--resume", str(work), "--json"])
    assert final.exit_code == 0, final.output
    assert keywords(plan) == {"slow": "DONE"}
    assert len(steps(plan, "author-call")) == 1
    verified = CliRunner().invoke(main, ["ledger", "verify", str(work), "--json"])
    assert verified.exit_code == 0, verified.output
