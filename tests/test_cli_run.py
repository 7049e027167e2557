"""`groundskeeper resume` and `groundskeeper check`, end to end through the CLI."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from groundskeeper.cli import main
from groundskeeper.plan.org import load_plan
from groundskeeper.record.ledger import read_steps

HEAD = "#+TODO: TODO NEXT | DONE FAILED PARTIAL\n"


def task(title: str, task_id: str, check: str | None = None, level: int = 1, **props: str) -> str:
    pad = " " * (level + 1)
    lines = [f"{'*' * level} TODO {title}", f"{pad}:PROPERTIES:", f"{pad}:ID: {task_id}"]
    if check is not None:
        lines.append(f"{pad}:done-when: {check}")
    lines += [f"{pad}:{k.replace('_', '-')}: {v}" for k, v in props.items()]
    lines.append(f"{pad}:END:")
    return "\n".join(lines) + "\n"


def setup(tmp_path: Path, plan: str, script: str) -> tuple[Path, Path]:
    plan_path = tmp_path / "plan.org"
    plan_path.write_text(HEAD + plan)
    script_path = tmp_path / "workers.yaml"
    script_path.write_text(script)
    return plan_path, script_path


def resume(plan: Path, script: Path, *extra: str) -> tuple[Result, dict[str, Any]]:
    result = CliRunner().invoke(
        main, ["resume", str(plan), "--model", f"scripted:{script}", "--json", *extra]
    )
    assert result.exit_code in (0, 1), (result.exit_code, result.output, result.stderr)
    return result, json.loads(result.stdout)


def run_workers(
    plan: Path, workers: dict[str, list[dict[str, Any]]], *extra: str
) -> dict[str, dict[str, Any]]:
    """`resume PLAN --json` with `workers` (task id → its scripted calls) written beside the
    plan as its script: the report's rows by task id (by title for a task without one)."""
    script = plan.parent / "w.yaml"
    script.write_text(json.dumps({"workers": workers}))
    _, doc = resume(plan, script, *extra)
    return {row["id"] or row["title"]: row for row in doc["tasks"]}


def states(document: dict[str, Any]) -> dict[str, tuple[str, int, bool | None]]:
    return {t["id"]: (t["state"], t["attempts"], t["verified"]) for t in document["tasks"]}


def keywords(plan: Path) -> dict[str, str | None]:
    return {t.task_id: t.keyword for t in load_plan(plan).tasks()}


def control(plan: Path) -> Path:
    """The plan's control directory (`groundskeeper.record.control`)."""
    return plan.parent / ".groundskeeper" / plan.name


def telemetry(plan: Path) -> list[tuple[str, str, int]]:
    conn = sqlite3.connect(control(plan) / "_telemetry.db")
    return conn.execute("SELECT task_id, state, attempt FROM task_events ORDER BY rowid").fetchall()


def steps(plan: Path, step: str) -> list[dict[str, Any]]:
    return [obj["body"] for _, obj in read_steps(control(plan) / "_steps.jsonl")
            if obj is not None and obj.get("step") == step]  # fmt: skip


def test_honest_done_and_lying_failed_in_one_plan(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("Honest", "honest", "grep -q hello a.txt") + task("Liar", "liar", "grep -q hi b.txt"),
        """workers:
  honest:
    - {tool: write_file, input: {path: a.txt, content: "hello\\n"}}
    - say: DONE
  liar:
    - say: "DONE: wrote b.txt, trust me"
""",
    )
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    assert set(doc) == {"run_id", "ok", "diagnostics", "tasks", "plan_edits", "usage",
                        "model_unavailable", "judge_unavailable", "attempt_cap",
                        "continue_with", "waiting", "interrupted"}  # fmt: skip
    assert doc["usage"]["calls"] == 4 and doc["usage"]["input_tokens"] == 0  # scripted: zeros
    assert (doc["model_unavailable"], doc["continue_with"]) == (None, None)
    assert doc["ok"] is False and doc["diagnostics"] == []
    honest, liar = doc["tasks"]
    assert honest == {"id": "honest", "title": "Honest", "line": 2, "state": "DONE",
                      "attempts": 1, "verified": True, "reason": None, "stop": None,
                      "lies": []}  # fmt: skip
    assert (liar["state"], liar["attempts"], liar["verified"]) == ("FAILED", 2, True)
    assert liar["stop"] == "max-attempts"  # the default limit ended it, not the breaker
    assert liar["reason"].startswith("nonzero_status: check line 1: `grep -q hi b.txt`")
    assert keywords(plan) == {"honest": "DONE", "liar": "FAILED"}
    assert sorted(telemetry(plan)) == [("honest", "DONE", 1), ("liar", "FAILED", 2)]
    assert "▶ honest" in result.stderr and "✘ FAILED liar" in result.stderr
    # sealed in the ledger: one run-start with both checks' hashes, every check verdict
    (start,) = steps(plan, "run-start")
    assert [c["task_id"] for c in start["checks"]] == ["honest", "liar"]
    sweep = [
        (c["task_id"], c["verdict"]) for c in steps(plan, "check") if c.get("phase") == "sweep"
    ]
    # the final sweep: what became DONE is kept without a run, since no worker acted after
    # its verdict (the liar never made a tool call)
    assert sweep == []
    (kept,) = steps(plan, "untouched")
    honest_check = start["checks"][0]["check_sha256"]
    assert kept == {"run_id": doc["run_id"], "phase": "sweep",
                    "reason": "no worker acted since its verdict",
                    "tasks": [{"task_id": "honest", "check_sha256": honest_check}]}  # fmt: skip
    assert [(c["task_id"], c["verdict"]) for c in steps(plan, "check") if "phase" not in c] in (
        [("honest", "PASS"), ("liar", "FAIL"), ("liar", "FAIL")],
        [("liar", "FAIL"), ("honest", "PASS"), ("liar", "FAIL")],
        [("liar", "FAIL"), ("liar", "FAIL"), ("honest", "PASS")],
    )


def test_human_output_is_a_task_table_of_titles(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("Draft the summary", "draft") + "* TODO Same\n",
        "workers:\n  '*': [{say: DONE}]\n",
    )
    result = CliRunner().invoke(main, ["resume", str(plan), "--model", f"scripted:{script}"])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["STATE", "TRIES", "CHECK", "TASK", "REASON"]
    # the title a person wrote; the id too when it is not the title
    assert lines[1].split() == ["DONE", "1", "unverified", "Draft", "the", "summary", "[draft]"]
    assert lines[2].split() == ["DONE", "1", "unverified", "Same"]
    assert len(lines) == 3


ORDERED = (
    """* TODO Parent
  :PROPERTIES:
  :ID: parent
  :ORDERED: t
  :END:
"""
    + task("First", "first", "grep -q x missing.txt", 2)
    + task("Second", "second", "grep -q x s.txt", 2)
)


def test_ordered_stops_after_a_failure(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        ORDERED,
        """workers:
  first: [{say: DONE}]
  second:
    - {tool: write_file, input: {path: s.txt, content: "x\\n"}}
    - say: DONE
""",
    )
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    assert states(doc) == {
        "parent": ("PARTIAL", 0, None),
        "first": ("FAILED", 2, True),
        "second": ("TODO", 0, None),
    }
    assert keywords(plan) == {"parent": "PARTIAL", "first": "FAILED", "second": "TODO"}
    assert not (tmp_path / "s.txt").exists()  # the second worker never ran
    assert "second" not in {s["task_id"] for s in steps(plan, "task-start")}
    assert "▶ second" not in result.stderr


def test_roll_up_to_done_and_parent_check(tmp_path: Path) -> None:
    parent = """* TODO Parent
  :PROPERTIES:
  :ID: parent
  :done-when: grep -q a a.txt && grep -q b b.txt
  :END:
"""
    script = """workers:
  a: [{tool: write_file, input: {path: a.txt, content: a}}, {say: DONE}]
  b: [{tool: write_file, input: {path: b.txt, content: b}}, {say: DONE}]
"""
    children = task("A", "a", "grep -q a a.txt", 2) + task("B", "b", "grep -q b b.txt", 2)
    plan, script_path = setup(tmp_path, parent + children, script)
    result, doc = resume(plan, script_path)
    assert result.exit_code == 0 and doc["ok"] is True
    assert states(doc) == {"parent": ("DONE", 1, True), "a": ("DONE", 1, True),
                           "b": ("DONE", 1, True)}  # fmt: skip
    assert keywords(plan) == {"parent": "DONE", "a": "DONE", "b": "DONE"}

    # every child DONE but the parent's own check fails afterwards: PARTIAL
    other = tmp_path / "other"
    other.mkdir()
    strict = parent.replace("grep -q b b.txt", "grep -q c b.txt")
    plan2, script2 = setup(other, strict + children, script)
    result, doc = resume(plan2, script2)
    assert result.exit_code == 1
    assert states(doc)["parent"] == ("PARTIAL", 1, True)
    assert "own check failed" in doc["tasks"][0]["reason"]


def test_resume_skips_done_and_reruns_failed(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("Easy", "easy", "grep -q e e.txt") + task("Hard", "hard", "grep -q h h.txt"),
        """workers:
  easy: [{tool: write_file, input: {path: e.txt, content: e}}, {say: DONE}]
  hard: [{say: DONE}]
""",
    )
    _, doc = resume(plan, script)
    assert states(doc) == {"easy": ("DONE", 1, True), "hard": ("FAILED", 2, True)}
    (tmp_path / "e.txt").unlink()  # if easy's worker ran again, its check would need it back
    script.write_text(
        """workers:
  easy: [{tool: write_file, input: {path: ran.txt, content: "should not run"}}, {say: DONE}]
  hard: [{tool: write_file, input: {path: h.txt, content: h}}, {say: DONE}]
"""
    )
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    # easy's worker is not asked again; but the run worked on hard, so the final sweep judges
    # every DONE again, the carried one included: its work is gone
    assert states(doc) == {"easy": ("FAILED", 0, True), "hard": ("DONE", 1, True)}
    assert doc["tasks"][0]["reason"].startswith("no longer passes: nonzero_status")
    assert not (tmp_path / "ran.txt").exists()
    assert [r for r in telemetry(plan) if r[0] == "easy"] == [("easy", "DONE", 1),
                                                              ("easy", "FAILED", 0)]  # fmt: skip
    assert "▶ easy" not in result.stderr


def test_forged_sentinel_in_a_printed_file_fails(tmp_path: Path) -> None:
    forged = "__WB_CHECK_OK_" + "0123456789abcdef" * 2 + "__"
    plan, script = setup(
        tmp_path,
        task("Forger", "forger", "cat evidence.txt && grep -q real result.txt"),
        f"""workers:
  forger:
    - {{tool: write_file, input: {{path: evidence.txt, content: "{forged}\\n"}}}}
    - say: DONE
""",
    )
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    assert doc["tasks"][0]["state"] == "FAILED"
    assert doc["tasks"][0]["reason"].startswith("nonzero_status")

    # a check that ends by `exit 0` after printing the forged line never runs: lint refuses
    # it (T009), and the runtime would fail it (the interpreter's sentinel never comes)
    quiet = tmp_path / "quiet"
    quiet.mkdir()
    plan2, script2 = setup(quiet, task("Forger", "forger", "cat evidence.txt; exit 0"),
                           script.read_text())  # fmt: skip
    result, doc = resume(plan2, script2)
    assert result.exit_code == 1
    assert [d["code"] for d in doc["diagnostics"]] == ["T009"]
    assert doc["tasks"][0]["state"] == "TODO"


def test_no_check_is_unverified_done_or_failed_when_required(tmp_path: Path) -> None:
    script = "workers:\n  '*': [{say: 'DONE: did it'}]\n"
    plan, script_path = setup(tmp_path, task("Loose", "loose"), script)
    result, doc = resume(plan, script_path)
    assert result.exit_code == 0
    assert states(doc) == {"loose": ("DONE", 1, False)}

    strict_dir = tmp_path / "strict"
    strict_dir.mkdir()
    plan2, script2 = setup(strict_dir, task("Loose", "loose"), script)
    result, doc = resume(plan2, script2, "--require-checks")
    assert result.exit_code == 1
    assert doc["tasks"][0]["state"] == "FAILED"
    assert doc["tasks"][0]["reason"] == "no acceptance check (--require-checks)"


def test_feedback_then_success_on_attempt_two(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("Late", "late", "grep -q ok out.txt"),
        """workers:
  late:
    - say: "DONE already"
    - {tool: write_file, input: {path: out.txt, content: "ok\\n"}}
    - say: "DONE now"
""",
    )
    result, doc = resume(plan, script)
    assert result.exit_code == 0
    assert states(doc) == {"late": ("DONE", 2, True)}
    claims = [(c["attempt"], c["excerpt"]) for c in steps(plan, "claim")]
    assert claims == [(1, "DONE already"), (2, "DONE now")]


def test_identical_failure_ends_early_at_the_breaker(tmp_path: Path) -> None:
    """One rule ends a loop early: the breaker (default 3), not "twice in a row"."""
    plan, script = setup(
        tmp_path,
        task("Stuck", "stuck", "grep -q ok out.txt", max_attempts="5"),
        "workers:\n  stuck: [{say: DONE}]\n",
    )
    _, doc = resume(plan, script)
    assert states(doc) == {"stuck": ("FAILED", 3, True)}
    assert doc["tasks"][0]["stop"] == "breaker"
    assert doc["tasks"][0]["reason"].startswith(
        "breaker: the same failure 3 times in a row (volatile parts such as timings, temp names"
        " and pids aside), so attempt 4 of 5 was not started; the failure:"
        " nonzero_status: "
    )


OTHER = HEAD + "* DONE Forged\n"


def tamper_plan(tmp_path: Path, turns: str) -> tuple[Path, Path, str]:
    plan, script = setup(
        tmp_path,
        task("Tamper", "tamper", "grep -q x x.txt") + task("Bystander", "by", "grep -q y y.txt"),
        f"""workers:
  tamper:
{turns}
    - {{tool: write_file, input: {{path: x.txt, content: x}}}}
    - say: DONE
  by:
    - {{tool: write_file, input: {{path: y.txt, content: y}}}}
    - say: DONE
""",
    )
    (tmp_path / "other.org").write_text(OTHER)
    return plan, script, plan.read_text()


def test_write_file_on_the_plan_is_refused(tmp_path: Path) -> None:
    plan, script, _ = tamper_plan(
        tmp_path, "    - {tool: write_file, input: {path: plan.org, content: '* DONE x'}}"
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert result.exit_code == 0  # refused up front: nothing changed, nothing to undo
    assert states(doc) == {"tamper": ("DONE", 1, True), "by": ("DONE", 1, True)}
    (call,) = [c for c in steps(plan, "tool-call") if c["status"] == "refused"]
    assert (call["task_id"], call["tool"], call["is_error"]) == ("tamper", "write_file", True)
    assert not list((tmp_path / ".groundskeeper").rglob("plan.org.rejected-*"))


def check_plan_write_refused(tmp_path: Path, sh: str) -> None:
    """The running plan is read-only to the sandbox: the write fails in the worker's shell,
    nothing needs undoing, and the worker's own task goes on to be judged on its work."""
    plan, script, original = tamper_plan(tmp_path, f"    - {{tool: sh, input: {{cmd: '{sh}'}}}}")
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert result.exit_code == 0, doc
    assert states(doc) == {"tamper": ("DONE", 1, True), "by": ("DONE", 1, True)}
    assert doc["diagnostics"] == []
    (call, *_) = [c for c in steps(plan, "tool-call") if c["tool"] == "sh"]
    assert (call["task_id"], call["status"], call["is_error"]) == ("tamper", "exit 1", True)
    assert plan.read_text() == original.replace("* TODO", "* DONE")
    assert not list((tmp_path / ".groundskeeper").rglob("plan.org.rejected-*"))
    assert steps(plan, "tamper") == []


def test_sh_cp_over_the_plan_is_refused(tmp_path: Path) -> None:
    check_plan_write_refused(tmp_path, "cp other.org plan.org")


def test_sh_append_to_the_plan_is_refused(tmp_path: Path) -> None:
    check_plan_write_refused(tmp_path, 'echo "* DONE Sneaked in" >> plan.org')


def test_sh_mv_and_rm_of_the_plan_are_refused(tmp_path: Path) -> None:
    check_plan_write_refused(tmp_path, "mv plan.org gone.org; rm -f plan.org; touch plan.org")


def test_check_write_demotes_done_whose_evidence_was_deleted(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("Report", "report", "grep -q Hobby report.md"),
        "workers:\n  report:\n    - {tool: write_file, input: {path: report.md, content: Hobby}}\n"
        "    - say: DONE\n",
    )
    result, _ = resume(plan, script)
    assert result.exit_code == 0
    ok = CliRunner().invoke(main, ["check", str(plan), "--json"])
    assert ok.exit_code == 0
    assert json.loads(ok.stdout)["tasks"][0]["verdict"] == "PASS"
    (tmp_path / "report.md").unlink()
    checked = CliRunner().invoke(main, ["check", str(plan), "--write", "--json"])
    assert checked.exit_code == 1
    (row,) = json.loads(checked.stdout)["tasks"]
    assert set(row) == {"id", "title", "line", "state", "verdict", "reason", "output"}
    assert (row["id"], row["state"], row["verdict"]) == ("report", "FAILED", "FAIL")
    assert row["reason"].startswith("nonzero_status")
    assert keywords(plan) == {"report": "FAILED"}


def test_check_without_write_changes_nothing(tmp_path: Path) -> None:
    plan, _ = setup(
        tmp_path, task("Gone", "gone", "grep -q x gone.txt").replace("TODO", "DONE", 1), ""
    )
    before = plan.read_text()
    result = CliRunner().invoke(main, ["check", str(plan)])
    assert result.exit_code == 1
    assert result.stdout.splitlines()[1].split()[:4] == ["DONE", "FAIL", "Gone", "[gone]"]
    assert plan.read_text() == before


def test_lint_errors_refuse_to_start(tmp_path: Path) -> None:
    script_text = "workers:\n  bad: [{tool: write_file, input: {path: ran, content: x}}]\n"
    plan, script = setup(tmp_path, task("Bad", "bad", "frobnicate out.txt"), script_text)
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    assert doc["ok"] is False
    assert [d["code"] for d in doc["diagnostics"]] == ["T004"]
    assert doc["tasks"][0]["state"] == "TODO"
    assert not (tmp_path / "ran").exists()
    human = CliRunner().invoke(main, ["resume", str(plan), "--model", f"scripted:{script}"])
    assert human.exit_code == 1 and "[T004]" in human.stdout


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, task("A", "a"), "workers:\n  a: [{tool: rm}]\n")
    cases = [
        (["resume", str(tmp_path / "nope.org"), "--model", f"scripted:{script}"], "no such file"),
        (["resume", str(plan), "--model", f"scripted:{script}"], "unknown tool 'rm'"),
        (["resume", str(plan), "--model", "anthropic:claude"], "ANTHROPIC_API_KEY is not set"),
        (["resume", str(plan)], "no worker model"),
        (["resume", str(plan), "--model", "x:y", "--max-parallel", "0"], "0 is not in the range"),
        (["resume", str(plan), "--model", "x:y", "--workdir", str(tmp_path / "no")], "not a dir"),
        (["check", str(tmp_path / "nope.org")], "no such file"),
    ]
    for args, message in cases:
        result = CliRunner().invoke(main, args, env={"GROUNDSKEEPER_MODEL": ""})
        assert result.exit_code == 2, (args, result.output)
        assert message in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr


def test_model_from_environment_and_plan_default(tmp_path: Path) -> None:
    _, script = setup(tmp_path, task("A", "a"), "workers:\n  a: [{say: DONE}]\n")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = CliRunner().invoke(main, ["resume", "--json"],
                                    env={"GROUNDSKEEPER_MODEL": f"scripted:{script}"})  # fmt: skip
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["tasks"][0]["state"] == "DONE"


def test_workdir_isolates_workers_and_checks(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    plan, script = setup(
        tmp_path,
        task("W", "w", "grep -q w w.txt"),
        "workers:\n  w: [{tool: write_file, input: {path: w.txt, content: w}}, {say: DONE}]\n",
    )
    result, _ = resume(plan, script, "--workdir", str(work))
    assert result.exit_code == 0
    assert (work / "w.txt").exists() and not (tmp_path / "w.txt").exists()


SLOW = "".join(task(f"Slow {n}", f"slow{n}", f"grep -q ok out{n}.txt", 2) for n in range(6))


def test_sigkill_mid_run_then_resume(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        "* TODO Batch\n  :PROPERTIES:\n  :ID: batch\n  :ORDERED: t\n  :END:\n" + SLOW,
        "workers:\n"
        + "".join(
            f"  slow{n}:\n    - {{tool: sh, input: {{cmd: 'sleep 0.4'}}}}\n"
            f"    - {{tool: write_file, input: {{path: out{n}.txt, content: ok}}}}\n"
            "    - say: DONE\n"
            for n in range(6)
        ),
    )
    original = plan.read_text()
    entry = "from groundskeeper.cli import main; main()"
    command = [sys.executable, "-c", entry, "resume", str(plan), "--model", f"scripted:{script}"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def started() -> list[str]:
        if not (control(tmp_path / "plan.org") / "_steps.jsonl").exists():
            return []
        return [s["task_id"] for s in steps(plan, "task-start")]

    def second_verdict_written() -> bool:
        # verdicts reach the plan from a writer thread while the next task already runs
        return keywords(plan).get("slow1") == "DONE"

    # kill while the third task's worker is inside its 0.4 s sleep, two verdicts written
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not ("slow2" in started() and second_verdict_written()):
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert process.returncode == -signal.SIGKILL
    killed = keywords(plan)
    assert [killed[f"slow{n}"] for n in range(6)] == ["DONE", "DONE"] + ["TODO"] * 4, killed
    assert started() == ["slow0", "slow1", "slow2"]  # slow2 was in flight
    sleeps = [c["status"] for c in steps(plan, "tool-call") if c["tool"] == "sh"]
    assert sleeps == ["exit 0", "exit 0"]  # the sandbox's sleep really slept, and worked

    result = CliRunner().invoke(
        main, ["resume", str(plan), "--model", f"scripted:{script}", "--json"]
    )
    assert result.exit_code == 0, result.stderr
    # the plan parses, every task is DONE, and only keywords ever changed
    assert set(keywords(plan).values()) == {"DONE"}
    assert plan.read_text() == original.replace("* TODO ", "* DONE ")  # `**` headings too
    rows = telemetry(plan)
    assert len(rows) == len({(task_id, state) for task_id, state, _ in rows})  # no duplicate
    assert sorted(task_id for task_id, state, _ in rows) == [
        "batch",
        *(f"slow{n}" for n in range(6)),
    ]
    assert {state for _, state, _ in rows} == {"DONE"}
    # the killed run and the resumed one form one chain that verifies
    verified = CliRunner().invoke(main, ["ledger", "verify", str(tmp_path), "--json"])
    assert verified.exit_code == 0, verified.stdout
    assert json.loads(verified.stdout)["runs"] == 2


def test_dock_task_fails_closed_on_a_non_conforming_artifact(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("Build", "build", "grep -q . comp.wasm", dock="comp.wasm"),
        "workers:\n  build:\n    - {tool: write_file, input: {path: comp.wasm, content: junk}}\n"
        "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    (row,) = doc["tasks"]
    assert (row["state"], row["verified"]) == ("FAILED", True)
    assert row["reason"].startswith("conformance: `comp.wasm` did not dock")
    assert not (control(tmp_path / "plan.org") / "components" / "comp.wasm").exists()
    docked = [(d["component"], d["ok"]) for d in steps(plan, "dock")]
    assert docked == [("comp.wasm", False), ("comp.wasm", False)]
    docks = sqlite3.connect(control(tmp_path / "plan.org") / "_telemetry.db").execute(
        "SELECT ok FROM dock_events"
    )
    assert [r[0] for r in docks] == [0, 0]  # both attempts were refused


# --- sealing is not optional: a ledger that cannot be written stops the run -------------------


def ledger_bytes(plan: Path) -> bytes:
    return (control(plan) / "_steps.jsonl").read_bytes()


def test_there_is_no_way_to_run_unsealed(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, task("A", "a"), "workers:\n  a: [{say: DONE}]\n")
    result = CliRunner().invoke(
        main, ["resume", str(plan), "--model", f"scripted:{script}", "--no-ledger"]
    )
    assert result.exit_code == 2
    assert "No such option '--no-ledger'" in result.stderr
    assert keywords(plan) == {"a": "TODO"}
    assert "--no-ledger" not in CliRunner().invoke(main, ["resume", "--help"]).stdout


def test_a_damaged_ledger_refuses_to_start(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("A", "a", "grep -q a a.txt"),
        "workers:\n  a: [{tool: write_file, input: {path: a.txt, content: a}}, {say: DONE}]\n",
    )
    ledger = control(tmp_path / "plan.org") / "_steps.jsonl"
    ledger.parent.mkdir(parents=True)
    ledger.write_text('{"v": 1}\n')  # a line, but no checkpoint
    before = plan.read_text()
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    assert doc["ok"] is False
    (diagnostic,) = doc["diagnostics"]
    assert (diagnostic["code"], diagnostic["scope"]) == ("R004", "ledger")
    assert diagnostic["message"].startswith("the run could not be sealed, so it did not start:")
    assert "its checkpoint is missing" in diagnostic["message"]
    assert states(doc) == {"a": ("TODO", 0, None)}
    assert plan.read_text() == before
    assert not (tmp_path / "a.txt").exists()  # no worker ran
    assert ledger_bytes(plan) == b'{"v": 1}\n'  # nothing appended after the damage
    assert telemetry(plan) == []
    human = CliRunner().invoke(main, ["resume", str(plan), "--model", f"scripted:{script}"])
    assert human.exit_code == 1 and "[R004]" in human.stdout


def test_a_checkpoint_signed_by_an_untrusted_key_refuses_to_start(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("A", "a") + task("B", "b"),
        "workers:\n  a: [{say: DONE}]\n  b: [{say: FAILED}]\n",
    )
    first, _ = resume(plan, script)  # sealed under the fixture's key; b FAILED
    assert first.exit_code == 1
    sealed = ledger_bytes(plan)
    # another user, another key: a fresh process, as a person would run it
    entry = "from groundskeeper.cli import main; main()"
    done = subprocess.run(
        [sys.executable, "-c", entry, "resume", str(plan), "--model", f"scripted:{script}",
         "--json"],
        capture_output=True, text=True, check=False,
        env={**os.environ, "GROUNDSKEEPER_HOME": str(tmp_path / "stranger")},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    (diagnostic,) = doc["diagnostics"]
    assert diagnostic["code"] == "R004"
    assert "not signed by a trusted key" in diagnostic["message"]
    assert keywords(plan) == {"a": "DONE", "b": "FAILED"}  # b was not re-run
    assert ledger_bytes(plan) == sealed


def test_a_worker_cannot_reach_the_ledger_by_any_path(tmp_path: Path) -> None:
    """Appending to the ledger used to break the chain (R004) from inside the sandbox; the
    control directory is now absent to workers, so every spelling misses and the run ends
    with a ledger that verifies."""
    vandal = [
        'echo "{}" >> .groundskeeper/plan.org/_steps.jsonl',
        'echo "{}" >> ./.GroundSkeeper/plan.org/_steps.jsonl',
        'cd sub && echo "{}" >> ../.groundskeeper/plan.org/_steps.jsonl',
        "rm -rf .groundskeeper",
        "mv .groundskeeper elsewhere",
        'ls -a | grep -q groundskeeper && echo "SEEN"',
        "cat .groundskeeper/*/_steps.jsonl",
        'echo "{}" >> _steps.jsonl',
    ]
    calls = "".join(f"    - {{tool: sh, input: {{cmd: '{c}'}}}}\n" for c in vandal)
    plan, script = setup(
        tmp_path,
        task("Vandal", "vandal", "grep -q v v.txt") + task("Later", "later", "grep -q l l.txt"),
        f"""workers:
  vandal:
{calls}    - {{tool: write_file, input: {{path: v.txt, content: v}}}}
    - say: DONE
  later: [{{tool: write_file, input: {{path: l.txt, content: l}}}}, {{say: DONE}}]
""",
    )
    (tmp_path / "sub").mkdir()
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert result.exit_code == 0, doc
    assert states(doc) == {"vandal": ("DONE", 1, True), "later": ("DONE", 1, True)}
    statuses = [c["status"] for c in steps(plan, "tool-call") if c["tool"] == "sh"]
    # `rm -rf` of an absent name succeeds, as in bash; the directory is still there
    assert statuses == ["exit 1"] * 3 + ["exit 0"] + ["exit 1"] * 3 + ["exit 0"]
    assert (tmp_path / "_steps.jsonl").read_text() == "{}\n"  # only a file of the work
    verified = CliRunner().invoke(main, ["ledger", "verify", str(plan), "--json"])
    assert verified.exit_code == 0, verified.output
    assert json.loads(verified.stdout)["ok"] is True


def test_disk_quota_bounds_the_run_and_takes_sizes(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("Write", "w", "grep -qx 100000 a.txt"),
        "workers:\n  w:\n    - {tool: sh, input: {cmd: 'seq 1 100000 > a.txt'}}\n    - say: DONE\n",
    )
    _, document = resume(plan, script, "--disk-quota", "512K")
    assert states(document)["w"][0] == "FAILED"
    assert (tmp_path / "a.txt").stat().st_size == 512 * 1024  # cut at the quota
    (tmp_path / "a.txt").unlink()
    plan.write_text(HEAD + task("Write", "w", "grep -qx 100000 a.txt"))
    _, document = resume(plan, script, "--disk-quota", "1M")
    assert states(document)["w"][:2] == ("DONE", 1)


def test_disk_quota_refuses_what_is_not_a_size(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, task("Write", "w", "grep -qx 100000 a.txt"), "workers: {}\n")
    for bad in ("lots", "0", "-1M", "1.5G", "1T", ""):
        result = CliRunner().invoke(
            main, ["resume", str(plan), "--model", f"scripted:{script}", "--disk-quota", bad]
        )
        assert result.exit_code == 2, (bad, result.output)
        assert "is not a size" in result.stderr, (bad, result.stderr)
        assert "Traceback" not in result.stderr
