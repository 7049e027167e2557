"""The pipeline of an attempt's verdict: stages run in the order registered, each result's
steps are sealed as its stage returns, the first result that does not pass decides, and the
members of a joint all run and fail as one."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from groundskeeper.acceptance.gates import GateOpened
from groundskeeper.plan.org import load_plan
from groundskeeper.plan.spec import compile_plan
from groundskeeper.supervisor.pipeline import (
    AttemptContext,
    Joint,
    Pipeline,
    StageResult,
    Status,
)
from groundskeeper.supervisor.run_books import RunBooks
from groundskeeper.supervisor.sealing import MemoryRecorder, RunSeal
from groundskeeper.supervisor.stages import claim_failure
from groundskeeper.supervisor.task_run import task_runs

PLAN = "#+TODO: TODO | DONE FAILED PARTIAL\n* TODO Write it\n  :PROPERTIES:\n  :ID: t\n  :END:\n"


@dataclass(frozen=True)
class Noted:
    """A step that seals one `note` step with the stage's name."""

    said: str

    def record(self, books: RunBooks, task_id: str, attempt: int) -> None:
        books.seal.record("note", {"task_id": task_id, "attempt": attempt, "said": self.said})


@dataclass
class Scripted:
    """A stage that answers as told, and notes what it saw already sealed when it ran."""

    name: str
    status: Status = "pass"
    verified: bool | None = None
    output: str | None = None
    problems: tuple[str, ...] = ()
    rows: tuple[Mapping[str, Any], ...] = ()
    gate: GateOpened | None = None
    recorder: MemoryRecorder | None = None
    saw: list[list[str]] = field(default_factory=list)

    def judge(self, context: AttemptContext) -> StageResult:
        if self.recorder is not None:
            self.saw.append([body["said"] for body in self.recorder.of("note")])
        feedback = f"{self.name} said no" if self.status == "fail" else None
        return StageResult(self.name, self.status, f"{self.name}: {self.status}", feedback,
                           f"{self.name}\nfailure", self.verified, self.output,
                           (Noted(self.name),), self.problems, self.rows, self.gate,
                           self.problems)  # fmt: skip


class Telemetry:
    def __init__(self) -> None:
        self.commits: list[tuple[str, int, list[Mapping[str, Any]]]] = []

    def record_contract_events(
        self, run_id: str, task_id: str, attempt: int, rows: Sequence[Mapping[str, Any]]
    ) -> None:
        self.commits.append((task_id, attempt, list(rows)))


def context(tmp_path: Path, attempt: int = 2) -> AttemptContext:
    path = tmp_path / "plan.org"
    path.write_text(PLAN)
    plan = load_plan(path)
    (task,) = task_runs(compile_plan(plan), "auto").values()
    return AttemptContext(task, attempt)


def books() -> tuple[RunBooks, MemoryRecorder, Telemetry]:
    recorder, telemetry = MemoryRecorder(), Telemetry()
    return RunBooks(RunSeal(recorder, "run-1"), telemetry, "run-1"), recorder, telemetry  # type: ignore[arg-type]


def notes(recorder: MemoryRecorder) -> list[tuple[str, str, int]]:
    return [(b["said"], b["task_id"], b["attempt"]) for b in recorder.of("note")]


def test_stages_run_in_order_and_the_first_failure_decides(tmp_path: Path) -> None:
    kept, recorder, _ = books()
    later = Scripted("later")
    pipeline = Pipeline(kept, [Scripted("first", verified=True, output="out"),
                               Scripted("second", "fail"), later])  # fmt: skip
    verdict = pipeline.judge(context(tmp_path))
    assert (verdict.kind, verdict.stage, verdict.reason) == ("FAILED", "second", "second: fail")
    assert (verdict.feedback, verdict.failure) == ("second said no", "second\nfailure")
    assert (verdict.verified, verdict.output) == (True, "out")  # carried from `first`
    assert notes(recorder) == [("first", "t", 2), ("second", "t", 2)]
    assert later.saw == []  # never judged


def test_each_result_is_sealed_before_the_next_stage_runs(tmp_path: Path) -> None:
    kept, recorder, _ = books()
    stages = [Scripted(name, recorder=recorder) for name in ("a", "b", "c")]
    verdict = Pipeline(kept, stages).judge(context(tmp_path))
    assert (verdict.kind, verdict.stage, verdict.reason) == ("DONE", None, None)
    assert [s.saw for s in stages] == [[[]], [["a"]], [["a", "b"]]]


def test_a_registered_stage_runs_after_the_others(tmp_path: Path) -> None:
    kept, recorder, _ = books()
    pipeline = Pipeline(kept, [Scripted("check", verified=False, output="claim")])
    pipeline.register(Scripted("new", "fail"))
    verdict = pipeline.judge(context(tmp_path))
    assert (verdict.stage, verdict.verified, verdict.output) == ("new", False, "claim")
    assert [n for n, _, _ in notes(recorder)] == ["check", "new"]


def test_waiting_and_unavailable_stop_the_pipeline(tmp_path: Path) -> None:
    kept, recorder, _ = books()
    gate = GateOpened("t", "Write it", "g1", None, (), "sha")
    waits = Pipeline(kept, [Scripted("gate", "wait", verified=True, gate=gate), Scripted("dock")])
    verdict = waits.judge(context(tmp_path))
    assert (verdict.kind, verdict.stage, verdict.gate, verdict.feedback) == (
        "WAITING", "gate", gate, None)  # fmt: skip
    down = Pipeline(kept, [Scripted("judge", "unavailable"), Scripted("dock")])
    assert down.judge(context(tmp_path)).kind == "UNAVAILABLE"
    assert [n for n, _, _ in notes(recorder)] == ["gate", "judge"]


def test_a_joint_judges_every_member_and_fails_as_one(tmp_path: Path) -> None:
    kept, recorder, telemetry = books()
    evidence = Scripted("evidence", "fail", problems=("e1", "e2"), rows=({"kind": "evidence"},))
    contracts = Scripted("contracts", "fail", problems=("c1",), rows=({"kind": "contract"},),
                         recorder=recorder)  # fmt: skip
    check = Scripted("check")
    claim = Joint("claim", (evidence, contracts), claim_failure)
    verdict = Pipeline(kept, [claim, check]).judge(context(tmp_path, attempt=1))
    assert contracts.saw == [["evidence"]]  # judged after the first member's steps were sealed
    assert check.saw == []
    assert (verdict.kind, verdict.stage, verdict.verified) == ("FAILED", "claim", True)
    assert verdict.reason == "e1 (and 2 more)"
    assert verdict.feedback == (
        "your claim did not hold against the record of this attempt:\n- e1\n- e2\n- c1"
    )
    assert verdict.failure == f"claim\n{verdict.feedback}"
    assert verdict.output == ""
    assert telemetry.commits == [("t", 1, [{"kind": "evidence"}, {"kind": "contract"}])]


def test_a_joint_whose_members_pass_passes(tmp_path: Path) -> None:
    kept, recorder, telemetry = books()
    claim = Joint("claim", (Scripted("evidence"), Scripted("contracts")), claim_failure)
    verdict = Pipeline(kept, [claim, Scripted("check", verified=True)]).judge(context(tmp_path))
    assert (verdict.kind, verdict.verified) == ("DONE", True)
    assert [n for n, _, _ in notes(recorder)] == ["evidence", "contracts", "check"]
    assert telemetry.commits == []  # no rows, no commit
