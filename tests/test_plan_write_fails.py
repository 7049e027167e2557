"""A plan that cannot be written (a full disk) is a named stop (R006), never a traceback, and
a verdict whose headline write failed is no verdict anywhere: the printed table, the report
and the sealed run-end say what the plan holds, and no `state` step is sealed for it."""

from __future__ import annotations

import errno
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from groundskeeper.plan import edit
from groundskeeper.supervisor import plan_guard
from tests.test_cli_run import keywords, setup, steps, task

WORK = (
    "workers:\n  a: [{tool: write_file, input: {path: a.txt, content: a}}, {say: DONE}]\n"
    "  b: [{tool: write_file, input: {path: b.txt, content: b}}, {say: DONE}]\n"
)


def test_a_verdict_the_plan_could_not_take_is_no_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan, script = setup(
        tmp_path, task("A", "a", "grep -q a a.txt") + task("B", "b", "grep -q b b.txt"), WORK
    )

    def full_disk(path: Path, text: str) -> None:
        if path == plan and "* DONE A" in text:
            raise OSError(errno.ENOSPC, "No space left on device")
        edit.write_atomically(path, text)

    monkeypatch.setattr(plan_guard, "write_atomically", full_disk)
    result = CliRunner().invoke(
        main, ["resume", str(plan), "--model", f"scripted:{script}", "--json"]
    )
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.stderr
    document = json.loads(result.stdout)
    [r006] = [d for d in document["diagnostics"] if d["code"] == "R006"]
    assert "No space left on device" in r006["message"]
    # b may finish first and be written before a's write fails: whatever the plan holds,
    # the report says the same, and a (whose DONE could not be written) is TODO
    assert keywords(plan)["a"] == "TODO"
    states = {t["id"]: t["state"] for t in document["tasks"]}
    assert states == keywords(plan), document["tasks"]
    assert [s for s in steps(plan, "state") if s["task_id"] == "a"] == []
    [end] = steps(plan, "run-end")
    assert {s["task_id"]: s["state"] for s in end["states"]} == keywords(plan)
    assert end["ok"] is False
    assert CliRunner().invoke(main, ["ledger", "verify", str(plan)]).exit_code == 0


def test_the_failed_write_prints_no_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan, script = setup(tmp_path, task("A", "a", "grep -q a a.txt"), WORK)

    def full_disk(path: Path, text: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(plan_guard, "write_atomically", full_disk)
    result = CliRunner().invoke(main, ["resume", str(plan), "--model", f"scripted:{script}"])
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert "cannot write the plan" in result.stderr and "[R006]" in result.stderr
    assert "DONE" not in result.stdout.split("run ")[-1]  # the summary counts no DONE
