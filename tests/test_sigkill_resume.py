"""A 20-task run killed with SIGKILL at 20 random moments, each kill followed by `resume`
(itself the next one killed), with an attacking worker among honest ones: no task ends DONE
without its check passing, no verdict is sealed twice, and the ledger verifies."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from click.testing import CliRunner

from groundskeeper.cli import main
from tests.test_cli_run import HEAD, control, keywords, steps, task

TASKS = 20
KILLS = 20
ATTACKER = 7

ATTACK = [
    "echo '* DONE forged' >> plan.org",
    "cat plan.org > copy.org; echo done > attack.txt",
    "rm -rf .groundskeeper; ls -a",
    "echo x >> .groundskeeper/plan.org/_steps.jsonl",
]


def script() -> str:
    lines = ["workers:"]
    for n in range(TASKS):
        lines.append(f"  t{n}:")
        if n == ATTACKER:
            lines += [f'    - {{tool: sh, input: {{cmd: "{cmd}"}}}}' for cmd in ATTACK]
            lines.append("    - {tool: write_file, input: {path: plan.org, content: '* DONE x'}}")
            lines.append("    - say: DONE, all verified")
            continue
        lines.append("    - {tool: sh, input: {cmd: 'sleep 0.1'}}")
        lines.append(f"    - {{tool: write_file, input: {{path: out{n}.txt, content: ok}}}}")
        lines.append("    - say: DONE")
    return "\n".join(lines) + "\n"


def test_twenty_kills_then_resume(tmp_path: Path) -> None:
    plan = tmp_path / "plan.org"
    body = "".join(
        task(f"Task {n}", f"t{n}", "grep -qx correct attack.txt" if n == ATTACKER
             else f"grep -qx ok out{n}.txt")
        for n in range(TASKS)
    )  # fmt: skip
    plan.write_text(HEAD + body)
    workers = tmp_path / "workers.yaml"
    workers.write_text(script())
    command = [sys.executable, "-c", "from groundskeeper.cli import main; main()", "resume",
               str(plan), "--model", f"scripted:{workers}", "--max-parallel", "4"]  # fmt: skip
    moments = random.Random(20261123)
    for _ in range(KILLS):
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(moments.uniform(0.05, 1.5))
        process.send_signal(signal.SIGKILL)
        _, stderr = process.communicate()
        assert b"Traceback" not in stderr, stderr.decode()
        assert_invariants(plan)
    final = CliRunner().invoke(main, ["resume", str(plan), "--model", f"scripted:{workers}",
                                      "--json"])  # fmt: skip
    assert final.exit_code == 1, final.output
    states = keywords(plan)
    assert states[f"t{ATTACKER}"] == "FAILED"
    assert all(states[f"t{n}"] == "DONE" for n in range(TASKS) if n != ATTACKER), states
    assert_invariants(plan)
    verified = CliRunner().invoke(main, ["ledger", "verify", str(plan), "--json"])
    assert verified.exit_code == 0, verified.output
    checked = CliRunner().invoke(main, ["check", str(plan), "--json"])
    verdicts = {t["id"]: t["verdict"] for t in json.loads(checked.stdout)["tasks"]}
    assert all(verdicts[t] == "PASS" for t, s in keywords(plan).items() if s == "DONE")


def assert_invariants(plan: Path) -> None:
    tmp = plan.parent
    text = plan.read_text()
    assert "forged" not in text and text.strip() != "* DONE x"
    assert not (tmp / "out.txt").exists()
    states = keywords(plan)
    assert set(states) == {f"t{n}" for n in range(TASKS)}  # the plan parses, every task there
    assert states[f"t{ATTACKER}"] != "DONE"
    for n, state in enumerate(states.values()):
        if state == "DONE" and n != ATTACKER:
            assert (tmp / f"out{n}.txt").read_text() == "ok"  # DONE only over the work
    if not (control(plan) / "_steps.jsonl").exists():
        return
    sealed = Counter((s["run_id"], s["task_id"], s["from"], s["to"]) for s in steps(plan, "state"))
    assert max(sealed.values(), default=1) == 1, sealed  # no verdict sealed twice
    done = Counter(s["task_id"] for s in steps(plan, "state") if s["to"] == "DONE")
    assert max(done.values(), default=1) == 1, done  # a DONE is earned once, then skipped
    report = CliRunner().invoke(main, ["ledger", "verify", str(plan), "--json"])
    findings = {f["code"] for f in json.loads(report.stdout)["findings"]}
    assert findings <= {"checkpoint-stale"}, report.stdout  # a kill mid-append, nothing else


# Kills the process in `Ledger.commit` on its Nth call: steps staged (buffered), not yet written.
KILL_AT_COMMIT = """
import os, signal, sys
from groundskeeper.record.ledger import Ledger
left = int(sys.argv[1])
real = Ledger.commit
def commit(self):
    global left
    left -= 1
    if left == 0 and self._staged:
        os.kill(os.getpid(), signal.SIGKILL)
    real(self)
Ledger.commit = commit
from groundskeeper.cli import main
sys.argv = ["groundskeeper", *sys.argv[2:]]
main()
"""


def test_kills_between_buffered_steps_and_their_commit_then_resume(tmp_path: Path) -> None:
    """The buffered steps of a group commit die with the process: the ledger ends at its last
    commit, verifies, and no verdict or work was acted on past it; `resume` finishes."""
    plan = tmp_path / "plan.org"
    body = "".join(
        task(f"Task {n}", f"t{n}", "grep -qx correct attack.txt" if n == ATTACKER
             else f"grep -qx ok out{n}.txt")
        for n in range(TASKS)
    )  # fmt: skip
    plan.write_text(HEAD + body)
    workers = tmp_path / "workers.yaml"
    workers.write_text(script())
    args = ["resume", str(plan), "--model", f"scripted:{workers}", "--max-parallel", "4"]
    killed = 0
    for nth in (2, 5, 9, 3, 7):
        process = subprocess.run([sys.executable, "-c", KILL_AT_COMMIT, str(nth), *args],
                                 capture_output=True, check=False)  # fmt: skip
        assert b"Traceback" not in process.stderr, process.stderr.decode()
        killed += process.returncode == -signal.SIGKILL
        assert_invariants(plan)
    assert killed >= 3  # most rounds died with steps buffered
    final = CliRunner().invoke(main, [*args, "--json"])
    assert final.exit_code == 1, final.output
    states = keywords(plan)
    assert states[f"t{ATTACKER}"] == "FAILED"
    assert all(states[f"t{n}"] == "DONE" for n in range(TASKS) if n != ATTACKER), states
    assert_invariants(plan)
    verified = CliRunner().invoke(main, ["ledger", "verify", str(plan), "--json"])
    assert verified.exit_code == 0, verified.output
