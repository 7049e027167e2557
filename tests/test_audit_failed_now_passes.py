"""adversary-19 F7: `audit` said of a FAILED task whose check passed later that `check
--write` "judges it again and writes it" — but `check --write` never promotes a task judged
on more than its check (a contract, evidence, a judge, a gate, a dock), so the advice never
held and audit kept giving it. Now it names the way that does: back to TODO, then `resume`.
A task with a check alone keeps the `check --write` advice, which does hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from tests.test_cli_run import resume, setup, task


def _cli(*argv: str) -> tuple[int, Any]:
    result = CliRunner().invoke(main, [*argv, "--json"])
    assert result.exit_code in (0, 1), result.output
    return result.exit_code, json.loads(result.stdout)


@pytest.mark.parametrize("contract", [True, False])
def test_the_advice_for_a_failed_task_that_passes_now(tmp_path: Path, contract: bool) -> None:
    props = {"contract": "non-empty config.txt"} if contract else {}
    plan, script = setup(
        tmp_path,
        task("Set the port", "cfg", "grep -q 8080 config.txt", max_attempts="1", **props),
        "workers:\n  cfg:\n    - {tool: write_file, input: {path: config.txt, content: '80'}}\n"
        "    - say: DONE\n",
    )
    _, doc = resume(plan, script)
    assert doc["tasks"][0]["state"] == "FAILED"
    (tmp_path / "config.txt").write_text("8080\n")  # fixed by hand
    status, _ = _cli("check", str(plan), "--write")  # seals the passing check
    assert status == 0
    status, found = _cli("audit", str(plan))
    stale = [f["message"] for f in found["findings"] if f["code"] == "failed-now-passes"]
    if not contract:  # promoted on its check: nothing stale is left to advise on
        assert (status, stale) == (0, []), found
        assert "* DONE Set the port" in plan.read_text()
        return
    assert "* FAILED Set the port" in plan.read_text()
    assert stale == [
        "`Set the port` is FAILED in the plan, but its check passed after it was sealed FAILED"
        f" (run {stale[0].split('(run ')[1].split(')')[0]}): the"
        " headline is stale; `check --write` does not promote a task judged on more than its"
        " check (contracts, evidence, a judge, a gate or a dock): set its headline back to"
        f" TODO and `groundskeeper resume {plan}` judges it whole"
    ], stale


def test_a_red_first_failure_is_advised_a_resume_not_check_write(tmp_path: Path) -> None:
    # adversary-28 O1: under --require-red, a check that passed before any work fails the
    # task at red-first; `check --write` rightly keeps it FAILED, and audit must not send
    # the user back to it
    (tmp_path / "config.txt").write_text("8080\n")
    plan, script = setup(
        tmp_path,
        task("Set the port", "cfg", "grep -q 8080 config.txt", max_attempts="1"),
        "workers:\n  cfg:\n    - say: DONE\n",
    )
    _, doc = resume(plan, script, "--require-red")
    assert doc["tasks"][0]["state"] == "FAILED"
    status, _ = _cli("check", str(plan), "--write")
    assert status == 0 and "* FAILED Set the port" in plan.read_text()
    status, found = _cli("audit", str(plan))
    stale = [f["message"] for f in found["findings"] if f["code"] == "failed-now-passes"]
    assert (
        status == 1
        and len(stale) == 1
        and stale[0].endswith(
            "the headline is stale; `check --write` does not promote a task whose FAILED was not"
            " its check's own failure (a red-first run, tampering, a refused dock or a limit): set"
            f" its headline back to TODO and `groundskeeper resume {plan}` judges it whole"
        )
    ), stale
