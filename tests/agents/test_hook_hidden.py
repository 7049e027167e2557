"""Hidden inputs (`:hide:`, `#+HIDE:`) under the hook: sealed with the plan, so a change by the
agent is caught as a protected input's is, and never shown — not in a block reason, not in
what the hook seals (the ledger lies in the agent's reach), not through the MCP server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from groundskeeper.agents.mcp_server import build_server
from groundskeeper.record.keys import create_signing_key
from tests.agents.gated import call_hook, ledger_steps, stop_event

#: What the held-out file holds: no answer, reason or sealed text of the hook may contain it.
ANSWER = "the-held-out-answer-7f3a"

HIDDEN_PLAN = """\
#+TODO: TODO | DONE FAILED
* TODO Compute the answer
  :PROPERTIES:
  :ID: answer
  :hide: tests/expected.txt
  :done-when: diff out.txt tests/expected.txt
  :END:
"""


@pytest.fixture
def hidden(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "tests").mkdir(parents=True)
    (root / "plan.org").write_text(HIDDEN_PLAN, encoding="utf-8")
    (root / "tests" / "expected.txt").write_text(ANSWER + "\n", encoding="utf-8")
    create_signing_key()
    run = call_hook("claude-code", stop_event(root, hook_event_name="SessionStart"))
    assert run.status == 0, run.stderr
    return root


def test_a_hidden_input_changed_by_the_agent_blocks_as_a_plan_change(hidden: Path) -> None:
    # the lie: make the answer key agree with the work instead of the work with the key
    (hidden / "out.txt").write_text("7\n")
    (hidden / "tests" / "expected.txt").write_text("7\n")
    run = call_hook("claude-code", stop_event(hidden))
    assert "the plan changed since the session started" in (run.blocked or ""), run
    assert "the hidden input `tests/expected.txt` was changed" in (run.blocked or "")


def test_a_hidden_input_removed_or_made_blocks(hidden: Path) -> None:
    (hidden / "tests" / "expected.txt").unlink()
    run = call_hook("claude-code", stop_event(hidden))
    assert "the hidden input `tests/expected.txt` was changed" in (run.blocked or ""), run


def test_the_work_done_against_the_hidden_input_is_allowed(hidden: Path) -> None:
    (hidden / "out.txt").write_text(ANSWER + "\n")
    run = call_hook("claude-code", stop_event(hidden))
    assert run.status == 0 and run.blocked is None, run


def test_a_block_never_shows_what_the_hidden_input_holds(hidden: Path) -> None:
    (hidden / "out.txt").write_text("a guess\n")
    run = call_hook("claude-code", stop_event(hidden))
    reason = run.blocked or ""
    assert "diff out.txt tests/expected.txt" in reason, run
    # pass or fail and nothing else: not the output, not the code, not the status
    assert "→ failed (the rest is not shown: this run hides inputs" in reason, run
    assert "nonzero_status" not in reason and "status 1" not in reason, run
    assert ANSWER not in run.stdout + run.stderr
    # nor in what the hook sealed: the ledger is in the agent's reach
    assert ANSWER not in (hidden / ".groundskeeper" / "plan.org" / "_steps.jsonl").read_text()


def test_a_block_for_a_changed_hidden_input_names_it_without_its_content(hidden: Path) -> None:
    (hidden / "tests" / "expected.txt").write_text(ANSWER + " and more\n")
    run = call_hook("claude-code", stop_event(hidden))
    assert "tests/expected.txt" in (run.blocked or "")
    assert ANSWER not in run.stdout + run.stderr


def test_the_mcp_server_names_hidden_inputs_and_never_shows_them(hidden: Path) -> None:
    (hidden / "out.txt").write_text("a guess\n")

    async def go() -> tuple[object, object]:
        async with Client(build_server(hidden / "plan.org")) as client:
            task = await client.call_tool("get_task", {"task_id": "answer"})
            check = await client.call_tool("run_check", {"task_id": "answer"})
            return task.structured_content, check.structured_content

    task, check = anyio.run(go)
    assert isinstance(task, dict) and task["hidden"] == ["tests/expected.txt"]
    assert isinstance(check, dict) and check["verdict"] == "FAIL"
    assert ANSWER not in json.dumps(check)
    # pass or fail only (`check.told`): no code, no status, no output
    assert check["code"] is None
    assert check["reason"].startswith("failed (the rest is not shown: this run hides inputs")
    assert "status" not in check["reason"].split("(")[0]
    assert ANSWER not in json.dumps([b for _, b in ledger_steps(hidden)])


def test_setup_denies_reading_a_hidden_input_and_editing_an_expected_file(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from groundskeeper.cli import main

    root = tmp_path / "work"
    (root / "tests").mkdir(parents=True)
    (root / "plan.org").write_text(
        HIDDEN_PLAN + "* TODO Copy\n  :PROPERTIES:\n  :ID: copy\n"
        "  :done-when: cmp copy.txt golden.txt\n  :END:\n"
    )
    (root / "tests" / "expected.txt").write_text(ANSWER + "\n")
    (root / "golden.txt").write_text("gold\n")
    result = CliRunner().invoke(
        main, ["agent", "setup", "claude-code", "--plan", str(root / "plan.org"), "--json"]
    )
    assert result.exit_code == 0, result.output
    settings = json.loads((root / ".groundskeeper" / "plan.org" / "claude-code.settings.json")
                          .read_text())  # fmt: skip
    deny = settings["permissions"]["deny"]
    hidden, golden = f"/{root / 'tests' / 'expected.txt'}", f"/{root / 'golden.txt'}"
    assert [r for r in deny if hidden in r] == [f"{t}({hidden})" for t in ("Read", "Edit", "Write")]
    assert [r for r in deny if golden in r] == [f"Edit({golden})", f"Write({golden})"]
    sealed = json.loads(result.stdout)["sealed"]
    assert [p["path"] for p in sealed["hidden"]] == ["tests/expected.txt"]
    assert [p["path"] for p in sealed["protected"]] == ["golden.txt"]


@pytest.mark.parametrize(
    "alias",
    [
        lambda w: (w / "out.txt").symlink_to("tests/expected.txt"),
        lambda w: (w / "out.txt").symlink_to(w / "tests" / "expected.txt"),
        lambda w: (w / "view").symlink_to("tests", target_is_directory=True),
        lambda w: (w / "out.txt").hardlink_to(w / "tests" / "expected.txt"),
    ],
    ids=["relative-symlink", "absolute-symlink", "directory-symlink", "hard-link"],
)
def test_a_second_name_for_a_hidden_input_blocks(hidden: Path, alias: Any) -> None:
    # no read of the answer is needed to make one, and the check would follow it
    alias(hidden)
    if not (hidden / "out.txt").exists():
        (hidden / "out.txt").write_text("a guess\n")
    run = call_hook("claude-code", stop_event(hidden))
    assert "a hidden input is reachable by another name" in (run.blocked or ""), run
    assert ANSWER not in run.stdout + run.stderr


def test_the_mcp_run_check_refuses_a_link_to_a_hidden_input(hidden: Path) -> None:
    (hidden / "out.txt").symlink_to("tests/expected.txt")

    async def go() -> object:
        async with Client(build_server(hidden / "plan.org")) as client:
            return (await client.call_tool("run_check", {"task_id": "answer"})).structured_content

    check = anyio.run(go)
    assert isinstance(check, dict) and (check["verdict"], check["code"]) == ("FAIL", "hidden_alias")
