"""No path through `groundskeeper hook` lets a stop through unchecked: every failure of
groundskeeper's own blocks, in the form the agent honours (Claude Code: exit 2, reason on
stderr; never exit 1, never a timeout)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from groundskeeper.record.keys import create_signing_key
from tests.agents.gated import HookRun, call_hook, do_the_work, ledger_steps, stop_event


def keyed() -> None:
    create_signing_key()


def assert_blocked(run: HookRun, *needles: str) -> None:
    reason = run.blocked
    assert reason is not None, (run.status, run.stdout, run.stderr)
    for needle in needles:
        assert needle in reason, reason


def test_no_plan_blocks(tmp_path: Path) -> None:
    keyed()
    run = call_hook("claude-code", stop_event(tmp_path))
    assert_blocked(run, "(no-plan)", "no plan in")


def test_a_named_plan_that_is_gone_blocks(work: Path) -> None:
    keyed()
    run = call_hook("claude-code", stop_event(work), "--plan", str(work / "missing.org"))
    assert_blocked(run, "(no-plan)", "missing.org")


def test_no_signing_key_blocks_even_when_the_checks_pass(work: Path) -> None:
    do_the_work(work)
    run = call_hook("claude-code", stop_event(work))
    assert_blocked(run, "(key)", "cannot sign")


def test_an_unreadable_key_blocks(work: Path, groundskeeper_home: Path) -> None:
    keyed()
    do_the_work(work)
    key = groundskeeper_home / "signing_key.pem"
    key.write_text("not a key\n")
    os.chmod(key, 0o600)
    run = call_hook("claude-code", stop_event(work))
    assert_blocked(run, "(key)", "not an unencrypted PKCS#8 PEM key")


def test_a_damaged_ledger_blocks(work: Path) -> None:
    keyed()
    first = call_hook("claude-code", stop_event(work))
    assert first.blocked  # sealed a block: the ledger exists now
    ledger = work / ".groundskeeper" / "plan.org" / "_steps.jsonl"
    text = ledger.read_text()
    ledger.write_text(text.replace('"verdict":"FAIL"', '"verdict":"PASS"', 1))
    do_the_work(work)
    run = call_hook("claude-code", stop_event(work))
    assert_blocked(run, "(ledger)", "does not verify")


def test_a_line_changed_under_the_verified_prefix_blocks(work: Path) -> None:
    # the second call verifies only the lines after the prefix the first left: a line inside
    # that prefix changed afterwards is found all the same (the prefix is bound to its bytes)
    keyed()
    assert call_hook("claude-code", stop_event(work)).blocked
    assert call_hook("claude-code", stop_event(work)).blocked
    control = work / ".groundskeeper" / "plan.org"
    covered = json.loads((control / "_steps.verified").read_bytes())["bytes"]
    ledger = control / "_steps.jsonl"
    data = ledger.read_bytes()
    at = data.index(b'"verdict":"FAIL"')
    assert at < covered
    ledger.write_bytes(data[:at] + b'"verdict":"PASS"' + data[at + 16 :])
    do_the_work(work)
    assert_blocked(call_hook("claude-code", stop_event(work)), "(ledger)", "does not verify")


def test_a_verified_prefix_forged_over_a_changed_ledger_blocks(work: Path) -> None:
    # a prefix written for the changed bytes, signed by any key but the plan's, is not used
    import base64
    import hashlib

    from groundskeeper.record.keys import SigningKey
    from groundskeeper.record.signed_file import canonical as _canonical

    keyed()
    assert call_hook("claude-code", stop_event(work)).blocked
    assert call_hook("claude-code", stop_event(work)).blocked
    control = work / ".groundskeeper" / "plan.org"
    ledger = control / "_steps.jsonl"
    data = ledger.read_bytes().replace(b'"verdict":"FAIL"', b'"verdict":"PASS"', 1)
    ledger.write_bytes(data)
    prefix = json.loads((control / "_steps.verified").read_bytes())
    del prefix["sig"]
    assert data.index(b'"verdict":"PASS"') < prefix["bytes"]  # the change is under the prefix
    prefix["sha256"] = hashlib.sha256(data[: prefix["bytes"]]).hexdigest()
    forger = SigningKey.from_seed(bytes(32))
    sig = forger.sign(b"groundskeeper verified prefix v1\n" + _canonical(prefix))
    prefix["sig"] = base64.b64encode(sig).decode()
    (control / "_steps.verified").write_bytes(_canonical(prefix) + b"\n")
    do_the_work(work)
    assert_blocked(call_hook("claude-code", stop_event(work)), "(ledger)", "does not verify")


def test_a_checkpoint_left_behind_by_a_killed_hook_is_a_crash_not_damage(work: Path) -> None:
    # a hook killed between its append and its checkpoint leaves every line verifying and the
    # checkpoint behind them: the next stop is judged on its checks, as `resume` would go on
    keyed()
    control = work / ".groundskeeper" / "plan.org"
    assert call_hook("claude-code", stop_event(work)).blocked
    behind = (control / "_steps.checkpoint").read_bytes()
    assert call_hook("claude-code", stop_event(work)).blocked
    (control / "_steps.checkpoint").write_bytes(behind)
    do_the_work(work)
    run = call_hook("claude-code", stop_event(work))
    assert run.blocked is None, (run.stdout, run.stderr)
    # but lines cut away behind the checkpoint still block
    lines = (control / "_steps.jsonl").read_bytes().splitlines(keepends=True)
    (control / "_steps.jsonl").write_bytes(b"".join(lines[:-3]))
    assert_blocked(call_hook("claude-code", stop_event(work)), "(ledger)", "cut short")


def test_a_deleted_ledger_blocks(work: Path) -> None:
    keyed()
    assert call_hook("claude-code", stop_event(work)).blocked
    control = work / ".groundskeeper" / "plan.org"
    for name in ("_steps.jsonl", "_steps.checkpoint"):
        (control / name).unlink()
    do_the_work(work)
    run = call_hook("claude-code", stop_event(work))
    assert_blocked(run, "(ledger)", "it was deleted")


def test_a_replaced_ledger_blocks(work: Path, tmp_path: Path) -> None:
    keyed()
    assert call_hook("claude-code", stop_event(work)).blocked
    # a fresh ledger of another plan, signed with the same key, moved into place
    other = tmp_path / "other"
    other.mkdir()
    (other / "plan.org").write_text((work / "plan.org").read_text())
    do_the_work(other)
    assert call_hook("claude-code", stop_event(other)).blocked is None
    control = work / ".groundskeeper" / "plan.org"
    for name in ("_steps.jsonl", "_steps.checkpoint"):
        (control / name).write_bytes((other / ".groundskeeper" / "plan.org" / name).read_bytes())
    do_the_work(work)
    run = call_hook("claude-code", stop_event(work))
    assert_blocked(run, "(ledger)", "replaced")


def test_a_sandbox_error_blocks(work: Path) -> None:
    keyed()
    do_the_work(work)
    # a check the sandbox cannot run: an unknown command is its own named failure
    plan = work / "plan.org"
    plan.write_text(plan.read_text().replace("grep -qx 1 COUNT", "curl -s example.org"))
    run = call_hook("claude-code", stop_event(work))
    assert_blocked(run, "unknown_command", "`curl`")


def test_the_budget_spent_blocks_before_the_agent_times_out(work: Path) -> None:
    keyed()
    do_the_work(work)
    plan = work / "plan.org"
    plan.write_text(plan.read_text().replace("grep -qx 1 COUNT", "sleep 8"))
    run = call_hook("claude-code", stop_event(work), "--budget", "1.5")
    assert_blocked(run, "(timeout)", "budget of 1.5 s")


def test_input_that_is_not_json_blocks(work: Path) -> None:
    keyed()
    run = call_hook("claude-code", b"{not json")
    assert_blocked(run, "(error)", "not JSON")


def test_an_event_it_does_not_gate_blocks(work: Path) -> None:
    keyed()
    run = call_hook("claude-code", stop_event(work, hook_event_name="PreCompact"))
    assert_blocked(run, "does not gate", "PreCompact")


def test_a_config_change_is_refused(work: Path) -> None:
    keyed()
    event = {
        **stop_event(work),
        "hook_event_name": "ConfigChange",
        "source": "project_settings",
        "file_path": str(work / ".claude" / "settings.json"),
    }
    run = call_hook("claude-code", event)
    assert run.status == 2  # ConfigChange reads no JSON decision: exit 2 only
    assert_blocked(run, "settings")


def test_a_task_completed_is_blocked_by_exit_2_without_the_words_that_fail_open(
    work: Path,
) -> None:
    # Claude Code 2.1.332 lets a stop through when an exit-2 hook's stderr says "No such file"
    keyed()
    event = {**stop_event(work), "hook_event_name": "TaskCompleted", "task_id": "1",
             "task_subject": "notes"}  # fmt: skip
    run = call_hook("claude-code", event)
    assert run.status == 2 and "grep -q shipped NOTES.md" in run.stderr
    assert "no such file" not in run.stderr.lower() and "not found (ENOENT)" in run.stderr
    assert "not found (ENOENT) or directory" not in run.stderr


def test_a_stop_is_blocked_in_json_whatever_the_check_printed(work: Path) -> None:
    keyed()
    run = call_hook("claude-code", stop_event(work))
    assert run.status == 0 and json.loads(run.stdout)["decision"] == "block"
    assert "No such file or directory" in json.loads(run.stdout)["reason"]


def test_stop_hook_active_is_not_trusted(work: Path) -> None:
    keyed()
    run = call_hook("claude-code", stop_event(work, stop_hook_active=True))
    assert_blocked(run, "not done", "notes")


def test_failures_of_its_own_are_bounded_too(work: Path) -> None:
    # no key: every call blocks; after --max-blocks the turn ends, told as NOT confirmed
    runs = [call_hook("claude-code", stop_event(work), "--max-blocks", "2") for _ in range(2)]
    assert runs[0].blocked
    assert runs[1].status == 0 and runs[1].blocked is None
    answer = json.loads(runs[1].stdout)
    assert answer["continue"] is False
    assert "nothing confirmed" in answer["stopReason"]


def test_a_blocked_stop_is_sealed_with_the_claim_and_each_check(work: Path) -> None:
    keyed()
    run = call_hook("claude-code", stop_event(work))
    assert_blocked(run, "notes", "grep -q shipped NOTES.md", "nonzero_status")
    steps = ledger_steps(work)
    kinds = [s for s, _ in steps]
    assert kinds[:2] == ["run-start", "run-end"]  # the plan as sealed at the first call
    assert steps[0][1]["kind"] == "hook-seal"
    hook_run = kinds[2:]
    assert hook_run == ["run-start", "claim", "check", "check", "hook-decision", "run-end"]
    decision = steps[-2][1]
    assert (decision["decision"], decision["blocks"], decision["session_id"]) == ("block", 1, "s-1")
    assert steps[3][1]["excerpt"] == "All done: the notes are written."


# An exception outside the decision's own guard (here: the first rendering of the answer
# fails) reaches `FailClosedCommand`, which must still answer with the agent's block, in the
# form the event honours: a traceback's exit 1 lets every agent stop.
BROKEN_ANSWER = """\
import sys
from groundskeeper.agents import dialects
real = dialects.Dialect.answer
calls = []
def answer(self, decision, event_name=None):
    calls.append(decision.outcome)
    if len(calls) == 1:
        raise RuntimeError("the answer broke")
    return real(self, decision, event_name)
dialects.Dialect.answer = answer
from groundskeeper.cli import main
main(["hook", *sys.argv[1:]])
"""


def call_broken_hook(agent: str, event: dict[str, object], *args: str) -> HookRun:
    proc = subprocess.run(
        [sys.executable, "-c", BROKEN_ANSWER, agent, *args],
        input=json.dumps(event).encode(),
        capture_output=True,
        timeout=60,
    )
    return HookRun(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


def test_an_exception_after_the_options_are_read_is_a_block_not_exit_1(work: Path) -> None:
    keyed()
    do_the_work(work)  # the decision itself is "allow": only the failure can block
    run = call_broken_hook("claude-code", stop_event(work))
    assert run.status != 1, run.stderr
    assert_blocked(run, "could not confirm this stop (error)", "the answer broke")
    assert "Traceback" not in run.stderr


def test_that_exception_on_a_task_completed_blocks_by_exit_2(work: Path) -> None:
    # TaskCompleted reads no JSON: a JSON block there would let the task through
    keyed()
    do_the_work(work)
    event = {**stop_event(work), "hook_event_name": "TaskCompleted", "task_id": "1",
             "task_subject": "notes"}  # fmt: skip
    run = call_broken_hook("claude-code", event)
    assert (run.status, run.stdout) == (2, ""), (run.status, run.stdout, run.stderr)
    assert "could not confirm this stop (error)" in run.stderr


def test_that_exception_is_a_block_in_each_agents_form(work: Path) -> None:
    keyed()
    do_the_work(work)
    gemini = call_broken_hook("gemini", stop_event(work, hook_event_name="AfterAgent"))
    assert (gemini.status, gemini.json["decision"]) == (0, "deny")
    cursor = call_broken_hook("cursor", stop_event(work, hook_event_name="stop"))
    assert cursor.status == 0 and "(error)" in cursor.json["followup_message"]


def test_that_exception_through_the_command_line_agent_setup_writes_blocks_too(work: Path) -> None:
    # `python -m groundskeeper hook …` is answered without click (cli.hook_run): the same
    # guard holds there
    keyed()
    do_the_work(work)
    script = BROKEN_ANSWER.replace(
        'from groundskeeper.cli import main\nmain(["hook", *sys.argv[1:]])',
        "from groundskeeper.cli.hook_run import answer_from_argv\n"
        'answer_from_argv(["hook", *sys.argv[1:]])\nraise SystemExit(1)',
    )
    assert script != BROKEN_ANSWER
    event = {**stop_event(work), "hook_event_name": "TaskCompleted", "task_subject": "notes"}
    proc = subprocess.run(
        [sys.executable, "-c", script, "claude-code"],
        input=json.dumps(event).encode(),
        capture_output=True,
        timeout=60,
    )
    assert (proc.returncode, proc.stdout) == (2, b""), proc
    assert b"could not confirm this stop (error)" in proc.stderr


HOOK_ARGVS = [
    ["hook", "claude-code"],
    ["hook", "codex", "--plan", "p.org", "--max-blocks", "3", "--require-seal"],
    ["hook", "--plan=p.org", "gemini", "--budget", "1.5", "--workdir", "w", "--record-tool"],
    ["hook", "cursor", "--task", "t-1", "--max-blocks=1000", "--budget=86400"],
    ["hook", "claude-code", "--plan", "a.org", "--plan", "b.org"],  # the last one counts
]
LEFT_TO_CLICK = [
    ["hook", "claude-code", "--help"],
    ["hook", "nobody"],
    ["hook", "claude-code", "--max-blocks", "0"],
    ["hook", "claude-code", "--max-blocks", "x"],
    ["hook", "claude-code", "--budget", "nan"],
    ["hook", "claude-code", "--budget", "0"],
    ["hook", "claude-code", "--plan"],
    ["hook", "claude-code", "--unknown"],
    ["hook", "claude-code", "extra"],
    ["hook", "claude-code", "--require-seal=yes"],
    ["lint", "plan.org"],
    [],
]


def test_the_quick_reader_of_the_hooks_command_line_agrees_with_click() -> None:
    from dataclasses import astuple

    from groundskeeper.cli.hook_cmd import hook
    from groundskeeper.cli.hook_run import HookArgs, parse_argv

    for argv in HOOK_ARGVS:
        quick = parse_argv(argv)
        params = hook.make_context("hook", argv[1:]).params
        assert quick is not None, argv
        assert astuple(quick) == astuple(HookArgs(**params)), argv
    for argv in LEFT_TO_CLICK:
        assert parse_argv(argv) is None, argv
    # every option click knows, the quick reader knows
    names = {o for p in hook.params for o in p.opts if o.startswith("--")}
    from groundskeeper.cli import hook_run

    assert names == hook_run._VALUED | hook_run._FLAGS


def test_a_dependency_that_will_not_import_is_named_in_the_block(work: Path) -> None:
    # the gate's modules are imported inside the guard: one that fails (here cryptography,
    # with no site directory on the path) is the block's reason, named as it failed
    keyed()
    do_the_work(work)
    repo = str(Path(__file__).resolve().parents[2])
    script = (
        f"import sys; sys.path[:] = [{repo!r}, *(p for p in sys.path if 'site-' not in p)]\n"
        "from groundskeeper.cli.hook_run import answer_from_argv\n"
        'answer_from_argv(["hook", *sys.argv[1:]])\nraise SystemExit(1)'
    )
    proc = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script, "claude-code", "--event", "Stop"],
        input=json.dumps(stop_event(work)).encode(),
        capture_output=True,
        timeout=60,
        cwd=work,
    )
    assert (proc.returncode, proc.stdout) == (2, b""), proc
    assert b"could not confirm this stop (error): ModuleNotFoundError: No module named" in (
        proc.stderr
    ), proc.stderr
