"""A DONE this run decided is kept without being judged again only while nothing has acted on
the workdir since its verdict began (`supervisor.activity`): any worker's tool call after it,
or one under way when it began, and the final sweep judges it again."""

from __future__ import annotations

import threading
from pathlib import Path

from groundskeeper.supervisor.activity import Activity
from tests.test_cli_run import keywords, resume, setup, steps, task


def test_a_mark_taken_while_an_action_is_under_way_keeps_nothing() -> None:
    activity = Activity()
    entered, leave = threading.Event(), threading.Event()

    def act() -> None:
        with activity.acting():
            entered.set()
            leave.wait(5)

    worker = threading.Thread(target=act)
    worker.start()
    entered.wait(5)
    mark = activity.mark()  # a verdict beginning while a sibling's call is under way
    leave.set()
    worker.join(5)
    assert mark is None
    assert activity.untouched_since(mark) is False
    assert activity.untouched_since(activity.mark()) is True  # quiet now


def test_any_action_after_a_mark_ends_it_and_a_quiet_one_keeps_it() -> None:
    activity = Activity()
    mark = activity.mark()
    assert activity.untouched_since(mark) is True
    with activity.acting():
        assert activity.untouched_since(mark) is False  # under way
    assert activity.untouched_since(mark) is False  # ended: still counted
    assert activity.untouched_since(None) is False


def test_a_siblings_tool_call_after_a_verdict_has_the_sweep_run_its_check_again(
    tmp_path: Path,
) -> None:
    """Even a call that only reads: the sweep does not tell a harmless action from another."""
    plan, script = setup(
        tmp_path,
        task("First", "first", "grep -qx a a.txt") + task("Second", "second", "grep -qx b b.txt"),
        """workers:
  first: [{tool: write_file, input: {path: a.txt, content: a}}, {say: DONE}]
  second:
    - {tool: write_file, input: {path: b.txt, content: b}}
    - {tool: read_file, input: {path: a.txt}}
    - say: DONE
""",
    )
    result, _ = resume(plan, script, "--max-parallel", "1")
    assert result.exit_code == 0, result.output
    assert keywords(plan) == {"first": "DONE", "second": "DONE"}
    swept = [(c["task_id"], c["verdict"]) for c in steps(plan, "check")
             if c.get("phase") == "sweep"]  # fmt: skip
    assert swept == [("first", "PASS")]
    (kept,) = steps(plan, "untouched")
    assert [row["task_id"] for row in kept["tasks"]] == ["second"]
    assert (kept["phase"], kept["reason"]) == ("sweep", "no worker acted since its verdict")
    # the line kept sits after the last tool call of the run: a reviewer can see no worker
    # acted between the verdict's check and it
    order = [name for name, _ in _named_steps(plan)]
    last_call = max(i for i, name in enumerate(order) if name == "tool-call")
    assert order.index("untouched") > last_call


def _named_steps(plan: Path) -> list[tuple[str, dict[str, object]]]:
    from groundskeeper.record.ledger import read_steps
    from tests.test_cli_run import control

    return [(obj["step"], obj["body"]) for _, obj in read_steps(control(plan) / "_steps.jsonl")
            if obj is not None]  # fmt: skip


def test_the_report_names_the_dones_kept_without_a_run() -> None:
    from groundskeeper.review.timeline import summarize_step

    body = {"phase": "sweep", "reason": "no worker acted since its verdict",
            "tasks": [{"task_id": "a", "check_sha256": None}, {"task_id": "b"}]}  # fmt: skip
    said, verdict = summarize_step("untouched", body, False)
    assert (said, verdict) == ("kept (sweep) · a, b · no worker acted since its verdict", "PASS")
