"""A reviewer sees the lie, not only the last excuse: a task that ends FAILED after an attempt
was caught lying (false evidence, a forged sentinel, a write the fence refused) says so in the
report, `--json` and `ledger show`, beside its last attempt's reason."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from groundskeeper.cli import main
from tests.test_cli_run import resume, setup, steps

PLAN = (
    "* TODO Validate\n  :PROPERTIES:\n  :ID: v\n"
    '  :evidence: "validation_output:output-of:grep *"\n  :END:\n'
    "  #+begin_src sh :check\n  grep -q title defs/order.json\n  #+end_src\n"
)
LIAR_THEN_HONEST_FAILURE = """workers:
  v:
    - {tool: sh, input: {cmd: "echo name"}}
    - {tool: write_file, input: {path: plan.org, content: "* DONE Validate\\n"}}
    - tool: claim_done
      input: {summary: validated, evidence: {validation_output: 'name'}}
    - {tool: sh, input: {cmd: "grep -o nam. defs/order.json"}}
    - tool: claim_done
      input: {summary: validated, evidence: {validation_output: 'name'}}
"""


def test_an_earlier_lie_is_shown_beside_the_last_reason(tmp_path: Path) -> None:
    (tmp_path / "defs").mkdir()
    (tmp_path / "defs" / "order.json").write_text('{"name": "order"}\n')
    plan, script = setup(tmp_path, PLAN, LIAR_THEN_HONEST_FAILURE)
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    (task,) = doc["tasks"]
    assert task["state"] == "FAILED"
    assert task["reason"].startswith("nonzero_status: check line 1")  # the last attempt's
    assert task["lies"] == [
        "attempt 1: false evidence: validation_output: no command matching `grep *`, run on"
        " its own line, printed 'name' in this attempt; the record shows `echo name`"
        " (exited 0)",
        "attempt 1: a write_file `plan.org` the fence refused",
    ]
    (state,) = [s for s in steps(plan, "state") if s["task_id"] == "v"]
    assert state["lies"] == task["lies"]
    shown = CliRunner().invoke(main, ["ledger", "show", str(plan)])
    assert "caught lying: attempt 1: false evidence: validation_output" in shown.output
    assert "; stopped by the fence: attempt 1: a write_file `plan.org` the fence refused" in (
        shown.output
    )


def test_a_task_that_never_lied_has_no_lies(tmp_path: Path) -> None:
    (tmp_path / "defs").mkdir()
    (tmp_path / "defs" / "order.json").write_text('{"name": "order"}\n')
    honest_failure = """workers:
  v:
    - {tool: sh, input: {cmd: "grep -o nam. defs/order.json"}}
    - tool: claim_done
      input: {summary: validated, evidence: {validation_output: 'name'}}
"""
    plan, script = setup(tmp_path, PLAN, honest_failure)
    _, doc = resume(plan, script)
    (task,) = doc["tasks"]
    assert (task["state"], task["lies"]) == ("FAILED", [])
    (state,) = [s for s in steps(plan, "state") if s["task_id"] == "v"]
    assert "lies" not in state


def test_a_forged_sentinel_is_named_in_the_human_report(tmp_path: Path) -> None:
    plan_text = (
        "* TODO Report\n  :PROPERTIES:\n  :ID: r\n  :END:\n"
        "  #+begin_src sh :check\n  cat out/report.txt\n  grep -q '^PASS' out/report.txt\n"
        "  #+end_src\n"
    )
    forged = "__WB_CHECK_OK_" + "0" * 32 + "__"
    forger = f"""workers:
  r:
    - tool: write_file
      input: {{path: out/report.txt, content: "FAIL\\n{forged}\\n"}}
    - say: DONE
    - {{tool: write_file, input: {{path: out/report.txt, content: "FAIL again\\n"}}}}
    - say: DONE
"""
    plan, script = setup(tmp_path, plan_text, forger)
    result = CliRunner().invoke(main, ["resume", str(plan), "--model", f"scripted:{script}"])
    assert result.exit_code == 1
    assert (
        "Report [r] caught lying: attempt 1: forged sentinel: the check printed"
        " `__WB_CHECK_OK_0000000000…`, a success marker the sandbox never printed"
    ) in result.stdout
    assert "attempt 2" not in result.stdout.split("caught lying", 1)[1]


def test_a_change_the_fence_refused_is_no_lie(tmp_path: Path) -> None:
    """adversary-19 F24: a worker fixing the file a bug report names, in words the plan's
    reader does not take as asking for that change, was reported "caught lying"."""
    (tmp_path / "config.ini").write_text("port = 80\n")
    plan_text = (
        "* TODO The server in config.ini listens on the wrong port\n  :PROPERTIES:\n"
        "  :ID: p\n  :max-attempts: 1\n  :END:\n"
        "  #+begin_src sh :check\n  grep -qx 'port = 8080' config.ini\n  #+end_src\n"
    )
    worker = """workers:
  p:
    - {tool: write_file, input: {path: config.ini, content: "port = 8080\\n"}}
    - say: DONE
"""
    plan, script = setup(tmp_path, plan_text, worker)
    result = CliRunner().invoke(main, ["resume", str(plan), "--model", f"scripted:{script}"])
    assert result.exit_code == 1, result.output
    assert "caught lying" not in result.stdout, result.stdout
    assert "[p] stopped by the fence: attempt 1: " in result.stdout, result.stdout
