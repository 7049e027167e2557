"""Group commit at decision points (issue 27, ledger/SPEC.md §9): a run's steps are staged and
made durable together before anything acts on them. The failure paths first: a commit that
fails leaves the plan unwritten, sends no feedback and runs no tool the reply asked for."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from groundskeeper.models.model import AssistantTurn, ModelRequest
from groundskeeper.models.scripted import ScriptedModel
from groundskeeper.plan.org import load_plan
from groundskeeper.record.ledger import Ledger, LedgerError, read_steps, verify_ledger
from groundskeeper.record.telemetry import Telemetry
from groundskeeper.supervisor.runner import PlanGuard, Runner, RunOptions
from tests.test_ledger import KEY
from tests.test_runner import HEAD, leaf, write_plan


class StagingRecorder:
    """A recorder with group commit, in memory: staged steps become `steps` at `commit`; the
    commit numbered `fail_at` (1-based) and every later one fail, as a full disk would."""

    def __init__(self, fail_at: int | None = None) -> None:
        self.steps: list[tuple[str, dict[str, Any]]] = []
        self.staged: list[tuple[str, dict[str, Any]]] = []
        self.commits = 0
        self.fail_at = fail_at
        self._lock = threading.Lock()

    def record(self, step: str, body: Mapping[str, Any]) -> None:
        self.stage(step, body)
        self.commit()

    def stage(self, step: str, body: Mapping[str, Any]) -> None:
        with self._lock:
            self.staged.append((step, dict(body)))

    def commit(self) -> None:
        with self._lock:
            if not self.staged:
                return
            self.commits += 1
            if self.fail_at is not None and self.commits >= self.fail_at:
                raise LedgerError("cannot write the ledger: No space left on device")
            self.steps += self.staged
            self.staged = []

    def names(self) -> list[str]:
        return [step for step, _ in self.steps]


class CountingModel:
    """The scripted model, counting the requests it was sent."""

    def __init__(self, script: str, recorder: StagingRecorder) -> None:
        self.inner = ScriptedModel.from_yaml(script)
        self.requests: list[ModelRequest] = []
        self.recorder = recorder
        self.pending: list[int] = []  # steps staged, not yet durable, as each request went out

    @property
    def name(self) -> str:
        return self.inner.name

    def respond(self, request: ModelRequest) -> AssistantTurn:
        self.requests.append(request)
        self.pending.append(len(self.recorder.staged))
        return self.inner.respond(request)


def _run(path: Path, script: str, recorder: StagingRecorder) -> tuple[Any, CountingModel]:
    model = CountingModel(script, recorder)
    options = RunOptions(max_parallel=1)
    report = Runner(load_plan(path), model=model, recorder=recorder, options=options).run()
    return report, model


def test_a_failed_commit_before_the_plan_write_leaves_the_plan_unwritten(tmp_path: Path) -> None:
    path = write_plan(tmp_path, leaf(0) + leaf(1))
    recorder = StagingRecorder(fail_at=2)  # run-start commits; the first verdict's does not
    report, _ = _run(path, "workers:\n  '*': [{say: DONE}]\n", recorder)
    assert path.read_text() == HEAD + leaf(0) + leaf(1)  # no headline changed
    assert "R004" in {d.code for d in report.diagnostics}
    assert "R006" not in {d.code for d in report.diagnostics}
    assert not report.ok
    assert recorder.names() == ["run-start"]  # nothing staged after it became durable


def test_a_failed_commit_before_feedback_sends_no_feedback(tmp_path: Path) -> None:
    path = write_plan(tmp_path, leaf(0, "grep -q done answer.txt"))
    script = "workers:\n  t0: [{say: DONE}, {say: DONE}]\n"
    recorder = StagingRecorder(fail_at=2)
    report, model = _run(path, script, recorder)
    assert len(model.requests) == 1  # the failed attempt's feedback never went out
    assert keywords_of(path) == ["TODO"]
    assert "R004" in {d.code for d in report.diagnostics}


def test_a_failed_commit_before_tools_run_runs_none(tmp_path: Path) -> None:
    path = write_plan(tmp_path, leaf(0, "grep -q done answer.txt"))
    script = (
        "workers:\n  t0:\n"
        "    - {tool: write_file, input: {path: answer.txt, content: done}}\n"
        "    - say: DONE\n"
    )
    recorder = StagingRecorder(fail_at=2)
    _run(path, script, recorder)
    assert not (tmp_path / "answer.txt").exists()  # the model-call was never durable
    assert keywords_of(path) == ["TODO"]


def test_every_decision_sees_its_steps_durable(tmp_path: Path) -> None:
    """The happy path: feedback and tool results go out, and verdicts reach the plan, only
    after a commit; each commit carries several steps (one flush for all of them)."""
    path = write_plan(tmp_path, leaf(0, "grep -q done answer.txt") + leaf(1))
    script = (
        "workers:\n  t0:\n    - say: DONE\n"
        "    - {tool: write_file, input: {path: answer.txt, content: done}}\n"
        "    - say: DONE\n  t1: [{say: DONE}]\n"
    )
    recorder = StagingRecorder()
    report, model = _run(path, script, recorder)
    assert report.ok, report.tasks
    assert len(model.requests) == 4
    # the feedback (2nd) and the tool result (3rd) went out with nothing left undurable; the
    # first request of an attempt without feedback carries nothing a worker did
    assert model.pending[1:3] == [0, 0] and model.pending[0] > 0
    assert recorder.staged == []
    assert recorder.names()[0] == "run-start" and recorder.names()[-1] == "run-end"
    assert recorder.commits < len(recorder.steps) / 2


class TelemetryWatch:
    """Telemetry whose verdict commits note which tasks' `state` steps were durable then."""

    def __init__(self, path: Path, recorder: StagingRecorder) -> None:
        self.telemetry = Telemetry.for_plan(path)
        self.recorder = recorder
        self.commits: list[tuple[list[str], list[str]]] = []  # (rows' tasks, durable states)
        commit_verdicts = self.telemetry.commit_verdicts

        def watched(rowids: Any) -> None:
            with self.telemetry._lock:
                tasks = [
                    row[0]
                    for r in rowids
                    for row in self.telemetry.conn.execute(
                        "SELECT task_id FROM task_events WHERE rowid = ?", (r,)
                    )
                ]
            durable = [b["task_id"] for step, b in recorder.steps if step == "state"]
            self.commits.append((tasks, durable))
            commit_verdicts(rowids)

        self.telemetry.commit_verdicts = watched  # type: ignore[method-assign]

    def committed(self) -> list[tuple[str, int]]:
        with self.telemetry._lock:
            rows = self.telemetry.conn.execute(
                "SELECT task_id, committed FROM task_events ORDER BY rowid"
            ).fetchall()
        return [(task, committed) for task, committed in rows]


def _run_with_telemetry(path: Path, recorder: StagingRecorder) -> tuple[Any, TelemetryWatch]:
    watch = TelemetryWatch(path, recorder)
    model = ScriptedModel.from_yaml("workers:\n  '*': [{say: DONE}]\n")
    options = RunOptions(max_parallel=1)
    with watch.telemetry:
        report = Runner(
            load_plan(path), model=model, recorder=recorder, options=options,
            telemetry=watch.telemetry,
        ).run()  # fmt: skip
        committed = watch.committed()
    watch.committed = lambda: committed  # type: ignore[method-assign]
    return report, watch


def test_a_failed_commit_after_the_plan_write_leaves_the_rows_pending(tmp_path: Path) -> None:
    """The commit that makes a written verdict's `state` step durable fails: its telemetry
    row stays pending (the next run's reconcile settles it), the run stops fail-closed."""
    path = write_plan(tmp_path, leaf(0))
    recorder = StagingRecorder(fail_at=3)  # run-start; before the plan write; after it
    report, watch = _run_with_telemetry(path, recorder)
    assert keywords_of(path) == ["DONE"]  # written before the failing commit
    assert "R004" in {d.code for d in report.diagnostics}
    assert watch.commits == []
    assert watch.committed() == [("t0", 0)]
    assert [b["task_id"] for step, b in recorder.steps if step == "state"] == []


def test_a_verdict_row_is_committed_only_beside_its_durable_state(tmp_path: Path) -> None:
    path = write_plan(tmp_path, "".join(leaf(n) for n in range(5)))
    recorder = StagingRecorder()
    report, watch = _run_with_telemetry(path, recorder)
    assert report.ok, report.tasks
    assert watch.committed() == [(f"t{n}", 1) for n in range(5)]
    assert sorted(t for tasks, _ in watch.commits for t in tasks) == [f"t{n}" for n in range(5)]
    for tasks, durable in watch.commits:
        assert set(tasks) <= set(durable), (tasks, durable)


def test_verdicts_coalesced_into_one_plan_write_settle_once(tmp_path: Path) -> None:
    """A plan write carrying several verdicts runs each one's `written` callback, then their
    shared `settled` callback once (one ledger commit for all their `state` steps)."""
    path = tmp_path / "plan.org"
    path.write_text("v0\n")
    held, release = threading.Event(), threading.Event()
    log: list[str] = []

    def hold() -> None:
        if not held.is_set():  # the first write waits, so the next three pile up behind it
            held.set()
            release.wait(10)

    def settle() -> None:
        log.append("settled")

    guard = PlanGuard(path, "v0\n", hold=hold)
    guard.start()
    guard.submit("v1\n", lambda: log.append("w1"), settled=settle)
    assert held.wait(10)
    for n in (2, 3, 4):
        guard.submit(f"v{n}\n", lambda n=n: log.append(f"w{n}"), settled=settle)
    guard.submit("v5\n", lambda: log.append("w5"))  # a verdict with nothing to settle
    release.set()
    assert guard.close() == []
    assert path.read_text() == "v5\n"
    assert log == ["w1", "settled", "w2", "w3", "w4", "w5", "settled"]


def keywords_of(path: Path) -> list[str | None]:
    return [t.keyword for t in load_plan(path).tasks()]


# --- the ledger's own staging -------------------------------------------------------------


def test_staged_steps_are_not_on_disk_until_the_commit(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path, KEY, "run-a", trusted=[])
    with pytest.raises(LedgerError, match="first step must be a recorded run-start"):
        ledger.stage("task-start", {"task_id": "t"})
    ledger.record("run-start", {})
    before = (tmp_path / "_steps.jsonl").read_bytes()
    ledger.stage("task-start", {"task_id": "t"})
    ledger.stage("check", {"task_id": "t"})
    assert (tmp_path / "_steps.jsonl").read_bytes() == before
    ledger.commit()
    assert [obj["step"] for _, obj in read_steps(tmp_path / "_steps.jsonl") if obj] == [
        "run-start",
        "task-start",
        "check",
    ]
    assert verify_ledger(tmp_path, [KEY.public]).ok


def test_a_recorded_step_carries_the_staged_ones_before_it(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path, KEY, "run-a", trusted=[])
    ledger.record("run-start", {})
    ledger.stage("task-start", {"task_id": "t"})
    appended = ledger.record("run-end", {"ok": True})
    assert appended.seq == 3 and appended.head.size == 3
    ledger.commit()  # nothing left: a no-op
    assert verify_ledger(tmp_path, [KEY.public]).lines == 3


def test_a_staged_step_that_cannot_be_written_fails_its_commit(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path, KEY, "run-a", trusted=[])
    ledger.record("run-start", {})
    ledger.stage("tool-call", {"text": "x" * 70_000})
    with pytest.raises(LedgerError, match="exceeds 65536"):
        ledger.commit()


def test_a_body_outside_the_subset_is_refused_when_staged() -> None:
    ledger = Ledger(Path("/nonexistent"), KEY, "run-a", trusted=[])
    ledger._started = True
    with pytest.raises(LedgerError):
        ledger.stage("check", {"x": 1.5})


KILL_BEFORE_COMMIT = """
import os, signal, sys
from pathlib import Path
from groundskeeper.record.ledger import Ledger
from groundskeeper.record.keys import SigningKey
import hashlib
key = SigningKey.from_seed(hashlib.sha256(b"groundskeeper test key A").digest())
ledger = Ledger(Path(sys.argv[1]), key, sys.argv[2], trusted=[])
ledger.record("run-start", {})
ledger.stage("task-start", {"task_id": "t"})
ledger.stage("check", {"task_id": "t", "verdict": "PASS"})
os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_kill_between_staged_steps_and_their_commit_leaves_a_ledger_that_verifies(
    tmp_path: Path,
) -> None:
    for run in ("run-a", "run-b"):
        killed = subprocess.run([sys.executable, "-c", KILL_BEFORE_COMMIT, str(tmp_path), run],
                                capture_output=True, check=False)  # fmt: skip
        assert killed.returncode == -signal.SIGKILL, killed.stderr
    report = verify_ledger(tmp_path, [KEY.public])
    assert report.ok and report.lines == 2  # both run-starts; the staged steps never were
    steps = [json.loads(raw)["step"] for raw in (tmp_path / "_steps.jsonl").read_bytes().split()]
    assert steps == ["run-start", "run-start"]
