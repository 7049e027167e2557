"""Adversarial worker tools and loop: no path, name or turn shape gets past confinement, the
fence (control plane absent, plan read-only), or the rule that only a finished turn saying
DONE is a claim."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from groundskeeper.acceptance.toolbox import READ_LIMIT, WRITE_LIMIT, Toolbox
from groundskeeper.models.model import AssistantTurn, ModelRequest
from groundskeeper.record.control import ControlDir
from groundskeeper.sandbox import fence as fences
from groundskeeper.supervisor.worker import WorkerSession, WorkerTask

PLAN = "* TODO x\n"


@pytest.fixture
def box(tmp_path: Path) -> Iterator[Toolbox]:
    work = tmp_path / "work"
    work.mkdir()
    (work / "plan.org").write_text(PLAN)
    control = ControlDir.for_plan(work / "plan.org").ensure()
    control.ledger.write_text("ledger\n")
    with fences.enforced(fences.for_plan(work / "plan.org", control.root)):
        yield Toolbox(work, work / "plan.org")


def write(box: Toolbox, path: str, content: str = "forged\n") -> Any:
    return box.call("write_file", {"path": path, "content": content})


# --- the running plan is read-only; the control plane is absent --------------------------


@pytest.mark.parametrize(
    "path", ["plan.org", "PLAN.ORG", "Plan.org", "plan.org/", "./plan.org", ".//plan.org"]
)
def test_the_plan_is_read_only_by_every_spelling(box: Toolbox, path: str) -> None:
    outcome = write(box, path)
    assert outcome.is_error, (path, outcome.text)
    assert (box.workdir / "plan.org").read_text() == PLAN
    if path in ("plan.org", "./plan.org"):
        assert outcome.status == "refused" and "plan file" in outcome.text
        assert box.call("read_file", {"path": path}).text == PLAN  # reading is fine


def test_a_file_named_like_the_plan_elsewhere_is_the_workers(box: Toolbox) -> None:
    assert not write(box, "drafts/plan.org").is_error
    assert not write(box, "_steps.jsonl").is_error  # no longer a control file's name here
    assert (box.workdir / "drafts" / "plan.org").read_text() == "forged\n"


@pytest.mark.parametrize(
    "path",
    [
        ".groundskeeper",
        ".groundskeeper/plan.org/_steps.jsonl",
        "./.groundskeeper/plan.org/_steps.jsonl",
        ".GROUNDSKEEPER/plan.org/_steps.jsonl",
        "sub/../.groundskeeper/plan.org/_steps.jsonl",
        "link/_steps.jsonl",
        "link",
    ],
)
def test_the_control_directory_is_absent_by_every_spelling(box: Toolbox, path: str) -> None:
    (box.workdir / "sub").mkdir()
    os.symlink(".groundskeeper/plan.org", box.workdir / "link")
    for outcome in (
        write(box, path),
        box.call("read_file", {"path": path}),
        box.call("list_files", {"path": path}),
    ):
        assert outcome.is_error, (path, outcome.text)
        assert (
            "No such file" in outcome.text
            or "not a folder" in outcome.text
            or ("`..`" in outcome.text)
        ), outcome.text
    assert ".groundskeeper" not in box.call("list_files", {}).text
    assert (box.workdir / ".groundskeeper" / "plan.org" / "_steps.jsonl").read_text() == "ledger\n"


def test_a_hard_link_to_the_plan_is_refused(box: Toolbox) -> None:
    os.link(box.workdir / "plan.org", box.workdir / "notes.org")
    outcome = write(box, "notes.org")
    assert (outcome.is_error, outcome.status) == (True, "refused"), outcome.text
    assert "link to the plan file" in outcome.text
    assert (box.workdir / "plan.org").read_text() == PLAN


def test_the_home_is_absent_when_it_lies_in_the_workdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "work"
    home = work / ".config" / "groundskeeper"
    home.mkdir(parents=True)
    (home / "signing_key.pem").write_text("secret")
    monkeypatch.setenv("GROUNDSKEEPER_HOME", str(home))
    box = Toolbox(work, work / "plan.org")
    for path in (".config/groundskeeper/signing_key.pem", ".config/groundskeeper"):
        assert box.call("read_file", {"path": path}).is_error
        assert "No such file" in box.call("read_file", {"path": path}).text
    assert box.call("list_files", {"path": ".config"}).text == "(empty)"
    assert write(box, ".config/groundskeeper/x").is_error
    assert not (home / "x").exists()


# --- odd paths are errors, never exceptions --------------------------------------------------


@pytest.mark.parametrize("path", ["a\x00b", "\x00", "x" * 5000, "d/" * 3000 + "f"])
@pytest.mark.parametrize("tool", ["read_file", "write_file", "list_files"])
def test_odd_paths_are_error_outcomes(box: Toolbox, tool: str, path: str) -> None:
    outcome = box.call(tool, {"path": path, "content": "x"})
    assert outcome.is_error and outcome.status in {"error", "refused"}, outcome.text


@pytest.mark.parametrize("path", [".", "./", "", "sub/.."])
def test_the_workdir_itself_is_not_a_file(box: Toolbox, path: str) -> None:
    assert write(box, path).is_error
    assert box.call("read_file", {"path": path}).is_error


def test_symlink_swapped_in_after_the_check_is_not_followed(
    box: Toolbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race: a path is judged inside, then a directory on it becomes a symlink outside
    (another worker's `mv`) before the file is opened. The open must not follow it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("outside secret")
    (box.workdir / "d").mkdir()
    (box.workdir / "d" / "f.txt").write_text("inside")
    judged = Toolbox.resolve

    def racing(self: Toolbox, raw: str, *, changing: bool = False) -> Path:
        target = judged(self, raw, changing=changing)
        if (box.workdir / "d").is_dir() and not (box.workdir / "d").is_symlink():
            (box.workdir / "d" / "f.txt").unlink()
            (box.workdir / "d").rmdir()
            os.symlink(outside, box.workdir / "d")
        return target

    monkeypatch.setattr(Toolbox, "resolve", racing)
    read = box.call("read_file", {"path": "d/f.txt"})
    assert read.is_error and "outside secret" not in read.text, read.text
    written = write(box, "d/f.txt", "overwritten")
    assert written.is_error, written.text
    assert (outside / "f.txt").read_text() == "outside secret"


def test_a_final_symlink_swapped_in_is_not_followed_for_writing(
    box: Toolbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    judged = Toolbox.resolve

    def racing(self: Toolbox, raw: str, *, changing: bool = False) -> Path:
        target = judged(self, raw, changing=changing)
        if not (box.workdir / "out.txt").is_symlink():
            os.symlink(victim, box.workdir / "out.txt")
        return target

    monkeypatch.setattr(Toolbox, "resolve", racing)
    assert write(box, "out.txt", "overwritten").is_error
    assert victim.read_text() == "keep me"


def test_inside_symlinks_still_work(box: Toolbox) -> None:
    (box.workdir / "real").mkdir()
    (box.workdir / "real" / "a.txt").write_text("hello")
    os.symlink("real", box.workdir / "alias")
    assert box.call("read_file", {"path": "alias/a.txt"}).text == "hello"
    assert not write(box, "alias/b.txt", "b").is_error
    assert (box.workdir / "real" / "b.txt").read_text() == "b"


def test_the_sandbox_has_no_way_to_make_a_symlink(box: Toolbox) -> None:
    outcome = box.call("sh", {"cmd": "ln -s / root"})
    assert outcome.is_error and "exit status 127" in outcome.text
    assert not (box.workdir / "root").exists()


# --- sizes and content ---------------------------------------------------------------------


def test_huge_write_is_refused_and_writes_nothing(box: Toolbox) -> None:
    outcome = write(box, "big.txt", "x" * (WRITE_LIMIT + 1))
    assert outcome.status == "refused"
    assert not (box.workdir / "big.txt").exists()


def test_unencodable_content_leaves_the_old_file_intact(box: Toolbox) -> None:
    (box.workdir / "keep.txt").write_text("old content")
    outcome = write(box, "keep.txt", "half \ud800 surrogate")
    assert outcome.is_error
    assert (box.workdir / "keep.txt").read_text() == "old content"


def test_binary_content_roundtrips_as_text(box: Toolbox) -> None:
    outcome = write(box, "nul.bin", "a\x00b\x01")
    assert not outcome.is_error
    assert (box.workdir / "nul.bin").read_bytes() == b"a\x00b\x01"


def test_reading_a_huge_or_binary_file_is_bounded(box: Toolbox) -> None:
    (box.workdir / "huge.bin").write_bytes(b"\xff\xfe" * (READ_LIMIT * 5))
    outcome = box.call("read_file", {"path": "huge.bin"})
    assert not outcome.is_error
    assert len(outcome.text) < READ_LIMIT + 200
    assert outcome.text.endswith(f"(truncated at {READ_LIMIT} bytes)")


# --- the loop: only a finished turn that says DONE is a claim ---------------------------------


class Replay:
    name = "replay"

    def __init__(self, turns: list[AssistantTurn]) -> None:
        self.turns = turns

    def respond(self, request: ModelRequest) -> AssistantTurn:
        if self.turns:
            return self.turns.pop(0)
        return AssistantTurn(({"type": "text", "text": "DONE"},), "end_turn")


def text(words: str, stop: str) -> AssistantTurn:
    return AssistantTurn(({"type": "text", "text": words},), stop)


TASK = WorkerTask("t", "T", "", None)


@pytest.mark.parametrize("stop", ["refusal", "max_tokens", "tool_use", "", "weird", "max_turns"])
def test_done_in_an_unfinished_turn_is_not_a_claim(box: Toolbox, stop: str) -> None:
    outcome = WorkerSession(Replay([text("DONE: all good", stop)]), TASK, box).attempt()
    assert outcome.claims_done is False, stop


@pytest.mark.parametrize("stop", ["end_turn", "stop_sequence"])
def test_done_in_a_finished_turn_is_a_claim(box: Toolbox, stop: str) -> None:
    outcome = WorkerSession(Replay([text("DONE: all good", stop)]), TASK, box).attempt()
    assert outcome.claims_done is True


def test_pause_turns_forever_end_at_the_turn_limit_without_a_claim(box: Toolbox) -> None:
    model = Replay([text("DONE", "pause_turn") for _ in range(10)])
    outcome = WorkerSession(model, TASK, box, max_turns=4).attempt()
    assert (outcome.stop, outcome.claims_done) == ("max_turns", False)


@pytest.mark.parametrize(
    "block",
    [
        {"type": "tool_use", "id": "x", "name": "write_file", "input": "not a dict"},
        {"type": "tool_use", "id": "x", "name": None, "input": {}},
        {"type": "tool_use", "id": "x", "name": ["sh"], "input": {"cmd": "true"}},
        {"type": "tool_use", "name": "sh"},
        {"type": "tool_use", "id": "x", "name": "write_file", "input": {"path": ["a"]}},
        {"type": "tool_use", "id": "x", "name": "read_file", "input": {1: "a", "path": "b"}},
        {"type": "tool_use", "id": "x", "name": "read_file", "input": {"path": float("nan")}},
        {"type": "tool_use", "id": "x", "name": "write_file", "input": {"path": "\ud800"}},
    ],
)
def test_malformed_tool_use_is_an_error_result_not_a_crash(
    box: Toolbox, block: dict[str, Any]
) -> None:
    seen: list[ModelRequest] = []

    class Once(Replay):
        def respond(self, request: ModelRequest) -> AssistantTurn:
            seen.append(request)
            return super().respond(request)

    model = Once([AssistantTurn((block,), "tool_use"), text("FAILED: gave up", "end_turn")])
    outcome = WorkerSession(model, TASK, box).attempt()
    assert outcome.claims_done is False
    result = seen[1].messages[-1]["content"][0]
    assert (result["type"], result["is_error"]) == ("tool_result", True)


def test_text_and_tool_use_in_one_turn_is_not_a_claim(box: Toolbox) -> None:
    mixed = AssistantTurn(
        (
            {"type": "text", "text": "DONE"},
            {"type": "tool_use", "id": "a", "name": "list_files", "input": {}},
        ),
        "tool_use",
    )
    outcome = WorkerSession(Replay([mixed, text("FAILED", "end_turn")]), TASK, box).attempt()
    assert (outcome.claim, outcome.claims_done) == ("FAILED", False)


def test_a_model_that_raises_is_not_a_claim(box: Toolbox) -> None:
    class Broken:
        name = "broken"

        def respond(self, request: ModelRequest) -> AssistantTurn:
            raise RuntimeError("network down")

    with pytest.raises(RuntimeError):
        WorkerSession(Broken(), TASK, box).attempt()


def test_a_question_or_a_longer_word_is_not_a_claim() -> None:
    from groundskeeper.supervisor.worker import claims_done

    assert not claims_done("DONE? I could not finish")
    assert not claims_done("DONE_ish")
    assert not claims_done("DONEs")
    assert not claims_done("")
    assert claims_done("DONE.") and claims_done("**DONE**: wrote it") and claims_done("DONE\n")
