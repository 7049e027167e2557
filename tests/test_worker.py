"""The worker loop and its tools: confinement, the fence, errors as tool results, limits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from groundskeeper.acceptance.check import SealedCheck
from groundskeeper.acceptance.toolbox import Toolbox
from groundskeeper.models.model import AssistantTurn, ModelRequest
from groundskeeper.models.scripted import ScriptedModel
from groundskeeper.plan.org import Check
from groundskeeper.sandbox import DiskQuota
from groundskeeper.sandbox import fence as fences
from groundskeeper.supervisor.worker import (
    TOOL_SPECS,
    ToolCallRecord,
    WorkerSession,
    WorkerTask,
    claims_done,
    load_worker_prompt,
    render_worker_prompt,
)


@pytest.fixture
def box(tmp_path: Path) -> Toolbox:
    work = tmp_path / "work"
    work.mkdir()
    (work / "plan.org").write_text("* TODO x\n")
    return Toolbox(work, work / "plan.org")


def test_paths_stay_inside_the_workdir(box: Toolbox, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("top secret")
    os.symlink(tmp_path / "secret.txt", box.workdir / "link.txt")
    os.symlink(tmp_path, box.workdir / "up")
    for tool, args, why in [
        ("read_file", {"path": "/etc/passwd"}, "is absolute"),
        ("read_file", {"path": "../secret.txt"}, "uses `..`"),
        ("read_file", {"path": "a/../../secret.txt"}, "uses `..`"),
        ("read_file", {"path": "link.txt"}, "leads outside"),
        ("write_file", {"path": "up/evil.txt", "content": "x"}, "leads outside"),
        ("list_files", {"path": "up"}, "leads outside"),
        ("read_file", {"path": "~/x"}, "is absolute"),
    ]:
        outcome = box.call(tool, args)
        assert outcome.is_error and outcome.status == "refused", (tool, args)
        assert why in outcome.text, outcome.text
    assert not (tmp_path / "evil.txt").exists()


def test_the_running_plan_is_refused_and_said_so(box: Toolbox) -> None:
    os.symlink("plan.org", box.workdir / "innocent.org")
    with fences.enforced(fences.for_plan(box.plan_path, box.workdir / ".groundskeeper")):
        for path in ["plan.org", "./plan.org", "innocent.org"]:
            outcome = box.call("write_file", {"path": path, "content": "* DONE x\n"})
            assert outcome.is_error, path
            assert "plan file of the running plan" in outcome.text, outcome.text
        assert not box.call("write_file", {"path": "sub/plan.org", "content": "x"}).is_error
    assert (box.workdir / "plan.org").read_text() == "* TODO x\n"
    # no run, no fence: the plan is an ordinary file again
    assert not box.call("write_file", {"path": "plan.org", "content": "* TODO y\n"}).is_error


def test_file_tools_work(box: Toolbox) -> None:
    written = box.call("write_file", {"path": "scratch/a.txt", "content": "héllo\n"})
    assert (written.is_error, written.text) == (False, "wrote 7 bytes to scratch/a.txt")
    assert box.call("read_file", {"path": "scratch/a.txt"}).text == "héllo\n"
    assert box.call("list_files", {}).text == "plan.org\nscratch/"
    assert box.call("list_files", {"path": "scratch"}).text == "a.txt"


def test_tool_errors_come_back_as_errors(box: Toolbox) -> None:
    assert box.call("read_file", {"path": "missing.txt"}).is_error
    assert box.call("read_file", {"path": 3}).text == "refused: `path` must be a string"
    assert box.call("write_file", {"path": "a"}).text == "refused: `content` must be a string"
    assert box.call("rm", {"path": "a"}).text.startswith("unknown tool `rm`")
    assert box.call("sh", ["not", "a", "dict"]).text == "tool input must be a JSON object"
    assert box.call("list_files", {"path": "plan.org"}).text == "`plan.org` is not a folder"


def test_sh_runs_in_the_sandbox_read_write(box: Toolbox) -> None:
    ok = box.call("sh", {"cmd": "echo hi > out.txt; cat out.txt"})
    assert (ok.is_error, ok.status) == (False, "exit 0")
    assert "--- stdout ---\nhi\n" in ok.text
    assert (box.workdir / "out.txt").read_text() == "hi\n"
    missing = box.call("sh", {"cmd": "frobnicate"})
    assert missing.is_error and missing.status == "exit 127"
    assert "command not found (not in the sandbox)" in missing.text


class Recorder:
    """A model that answers from a list and keeps every request it got."""

    def __init__(self, turns: list[AssistantTurn]) -> None:
        self.turns = turns
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        return "recorder"

    def respond(self, request: ModelRequest) -> AssistantTurn:
        self.requests.append(request)
        return (
            self.turns.pop(0)
            if self.turns
            else AssistantTurn(({"type": "text", "text": ""},), "end_turn")
        )


def tool(name: str, args: dict[str, object], n: int = 1) -> AssistantTurn:
    return AssistantTurn(
        ({"type": "tool_use", "id": f"t{n}", "name": name, "input": args},), "tool_use"
    )


def text(words: str, stop: str = "end_turn") -> AssistantTurn:
    return AssistantTurn(({"type": "text", "text": words},), stop)


def task(check: str | None = "test -s out.txt") -> WorkerTask:
    sealed = SealedCheck.seal(Check(check, "sh", 3, "done-when")) if check else None
    return WorkerTask("write-out", "Write out", "Write out.txt.", sealed)


def test_loop_sends_tool_results_back_and_ends_on_the_claim(box: Toolbox) -> None:
    model = Recorder(
        [tool("write_file", {"path": "plan.org", "content": "forged"}), text("DONE: ok")]
    )
    calls: list[ToolCallRecord] = []
    session = WorkerSession(model, task(), box, on_tool_call=calls.append)
    with fences.enforced(fences.for_plan(box.plan_path, box.workdir / ".groundskeeper")):
        outcome = session.attempt()
    assert (outcome.claim, outcome.stop, outcome.turns, outcome.claims_done) == (
        "DONE: ok",
        "end_turn",
        2,
        True,
    )
    result = model.requests[1].messages[-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "t1"
    assert result["is_error"] is True
    assert "plan file of the running plan" in result["content"][0]["text"]
    assert [(c.tool, c.status, c.is_error) for c in calls] == [("write_file", "refused", True)]
    assert model.requests[0].tools == TOOL_SPECS
    assert model.requests[0].task_id == "write-out"


def test_turn_limit_ends_the_attempt_without_a_claim(box: Toolbox) -> None:
    model = Recorder([tool("list_files", {}, n) for n in range(10)])
    outcome = WorkerSession(model, task(), box, max_turns=3).attempt()
    assert (outcome.stop, outcome.turns, outcome.claims_done) == ("max_turns", 3, False)
    assert len(model.requests) == 3


def test_feedback_continues_the_conversation(box: Toolbox) -> None:
    model = Recorder([text("DONE"), text("DONE again")])
    session = WorkerSession(model, task(), box)
    session.attempt()
    session.attempt("your work did not pass its acceptance check: test -s out.txt → status 1")
    messages = model.requests[1].messages
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[2]["content"][0]["text"].startswith("your work did not pass")


def test_feedback_after_a_turn_limit_folds_into_the_pending_user_turn(box: Toolbox) -> None:
    model = Recorder([tool("list_files", {}, 1), text("DONE")])
    session = WorkerSession(model, task(), box, max_turns=1)
    session.attempt()
    session.attempt("feedback")
    roles = [m["role"] for m in model.requests[1].messages]
    assert roles == ["user", "assistant", "user"]  # roles still alternate
    last = model.requests[1].messages[-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text"]


def test_pause_turn_is_resumed(box: Toolbox) -> None:
    model = Recorder([text("thinking", "pause_turn"), text("DONE")])
    outcome = WorkerSession(model, task(), box).attempt()
    assert (outcome.claim, outcome.turns) == ("DONE", 2)


def test_scripted_worker_runs_through_the_same_loop(box: Toolbox) -> None:
    model = ScriptedModel.from_yaml(
        "workers:\n  write-out:\n"
        "    - {tool: write_file, input: {path: out.txt, content: hi}}\n"
        "    - {say: 'DONE: wrote it'}\n"
    )
    outcome = WorkerSession(model, task(), box).attempt()
    assert outcome.claim == "DONE: wrote it"
    assert (box.workdir / "out.txt").read_text() == "hi"


def test_prompt_tells_task_and_check_but_no_sentinel() -> None:
    template = load_worker_prompt()
    assert "{{check}}" in template
    prompt = render_worker_prompt(task())
    assert "Title: Write out" in prompt and "test -s out.txt" in prompt
    assert "#+begin_src sh :check" in prompt
    assert "__WB_CHECK_OK" not in prompt and "{{" not in prompt
    assert "no acceptance check" in render_worker_prompt(task(None))


def test_claims_done() -> None:
    assert claims_done("DONE") and claims_done("DONE: x") and claims_done("**DONE** x")
    assert (
        not claims_done("FAILED: no")
        and not claims_done("I am DONE")
        and not claims_done("DONEish")
    )


def test_write_file_counts_against_the_disk_quota_shared_with_sh(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    quota = DiskQuota(1024 * 1024)
    box = Toolbox(work, work / "plan.org", quota=quota)
    shell_write = box.call("sh", {"cmd": "seq 1 100000 > a.txt"})  # 588,895 bytes
    assert (shell_write.is_error, quota.used) == (False, 588_895)
    written = box.call("write_file", {"path": "b.txt", "content": "x" * 400_000})
    assert (written.is_error, quota.used) == (False, 988_895)
    refused = box.call("write_file", {"path": "c.txt", "content": "é" * 40_000})  # 80,000 bytes
    assert (refused.is_error, refused.status) == (True, "refused")
    assert refused.text == "refused: disk quota of 1 MiB exceeded (this run's writes, in total)"
    assert not (work / "c.txt").exists()
    assert quota.used == 988_895
    too_much = box.call("sh", {"cmd": "seq 1 100000 > d.txt"})
    assert too_much.is_error and "stopped by the sandbox: disk" in too_much.text
    assert "disk quota of 1 MiB exceeded by 'seq'" in too_much.text
