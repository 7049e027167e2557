"""The runner as a library: sealed checks, recorded steps, parallel bounds, the plan guard."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from groundskeeper.acceptance.check import sha256_text
from groundskeeper.cli import main
from groundskeeper.models.model import AssistantTurn, ModelRequest
from groundskeeper.models.scripted import ScriptedModel
from groundskeeper.plan.org import load_plan
from groundskeeper.record.ledger import LedgerError, canonical_json
from groundskeeper.supervisor.runner import (
    MemoryRecorder,
    PlanGuard,
    Runner,
    RunOptions,
    RunReport,
    preflight,
)
from groundskeeper.supervisor.sealing import RunSeal

HEAD = "#+TODO: TODO NEXT | DONE FAILED PARTIAL\n"


def leaf(n: int, check: str = "grep -q ok marker") -> str:
    return f"* TODO Task {n}\n  :PROPERTIES:\n  :ID: t{n}\n  :done-when: {check}\n  :END:\n"


def write_plan(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "plan.org"
    path.write_text(HEAD + body)
    (tmp_path / "marker").write_text("ok\n")
    return path


class OutsideWriter:
    """A worker whose model process writes the plan from outside the sandbox (the fence
    keeps the sandbox's own writes off it), then claims DONE."""

    name = "outside-writer"

    def __init__(self, path: Path, forged: str) -> None:
        self.path, self.forged = path, forged

    def respond(self, request: ModelRequest) -> AssistantTurn:
        if request.task_id == "t0" and self.forged:
            self.path.write_text(self.forged)
            self.forged = ""
        return AssistantTurn(({"type": "text", "text": "DONE"},), "end_turn")


def test_checks_are_sealed_at_start(tmp_path: Path) -> None:
    """A plan rewritten mid-run (another task's check changed) does not change what runs."""
    path = write_plan(tmp_path, leaf(0) + leaf(1, "grep -q never marker"))
    forged = HEAD + leaf(0) + leaf(1, "grep -q ok marker")
    model = OutsideWriter(path, forged)
    recorder = MemoryRecorder()
    options = RunOptions(max_parallel=1)
    report = Runner(load_plan(path), model=model, recorder=recorder, options=options).run()
    states = {t.id: (t.state, t.reason or "") for t in report.tasks}
    assert states["t0"][0] == "FAILED" and states["t0"][1].startswith("tampering")
    assert "blame cannot be placed" in states["t0"][1]
    assert states["t1"][0] == "FAILED" and "grep -q never marker" in states["t1"][1]
    sealed = {c["task_id"]: c["check_sha256"] for c in recorder.of("run-start")[0]["checks"]}
    ran = [c for c in recorder.of("check") if c["task_id"] == "t1"]
    assert {c["check_sha256"] for c in ran} == {sealed["t1"]}
    assert "grep -q never marker" in path.read_text()  # the runner's version is back
    rejected = tmp_path / ".groundskeeper" / "plan.org" / "rejected" / "plan.org.rejected-1"
    assert rejected.read_text() == forged


def test_every_step_is_recorded_without_floats(tmp_path: Path) -> None:
    path = write_plan(tmp_path, leaf(0))
    model = ScriptedModel.from_yaml("workers:\n  t0:\n    - {tool: list_files}\n    - say: DONE\n")
    recorder = MemoryRecorder()
    report = Runner(load_plan(path), model=model, recorder=recorder).run()
    assert report.ok
    names = [name for name, _ in recorder.steps]
    # the state step is sealed by the plan's writer thread, so the sweep's check may precede it
    # run-start, then the red-first check (before any worker), then the work
    assert names[:8] == ["run-start", "check", "task-start", "model-call", "tool-call",
                         "model-call", "claim", "check"]  # fmt: skip
    # the sweep keeps the DONE without a run: no worker acted after its verdict
    assert sorted(names[8:-1]) == ["state", "untouched"] and names[-1] == "run-end"

    def no_floats(value: object) -> bool:
        if isinstance(value, dict):
            return all(no_floats(v) for v in value.values())
        if isinstance(value, list):
            return all(no_floats(v) for v in value)
        return not isinstance(value, float)

    assert all(no_floats(body) for _, body in recorder.steps)
    [state] = recorder.of("state")
    rules = state.pop("verdict_sha256")  # the digest of the rules that decided it
    assert isinstance(rules, str) and len(rules) == 64
    assert state == {"run_id": report.run_id, "task_id": "t0", "from": "TODO", "to": "DONE"}


class SlowModel:
    """Says DONE after a pause, counting how many tasks are inside it at once."""

    def __init__(self) -> None:
        self.inside = 0
        self.most = 0
        self.lock = threading.Lock()

    @property
    def name(self) -> str:
        return "slow"

    def respond(self, request: ModelRequest) -> AssistantTurn:
        with self.lock:
            self.inside += 1
            self.most = max(self.most, self.inside)
        time.sleep(0.05)
        with self.lock:
            self.inside -= 1
        return AssistantTurn(({"type": "text", "text": "DONE"},), "end_turn")


def test_parallel_siblings_are_bounded_by_max_parallel(tmp_path: Path) -> None:
    path = write_plan(tmp_path, "".join(leaf(n) for n in range(8)))
    model = SlowModel()
    report = Runner(load_plan(path), model=model, options=RunOptions(max_parallel=3)).run()
    assert report.ok
    assert model.most == 3


def test_preflight_needs_verdict_states_and_sane_attempts(tmp_path: Path) -> None:
    path = tmp_path / "plan.org"
    path.write_text(
        "#+TODO: TODO | DONE\n* TODO A\n  :PROPERTIES:\n  :max-attempts: zero\n  :END:\n"
    )
    codes = [d.code for d in preflight(load_plan(path))]
    assert codes == ["R001", "R002"]
    report = Runner(load_plan(path), model=SlowModel()).run(lint=lambda plan: [])
    assert (report.started, report.ok) == (False, False)
    assert path.read_text().startswith("#+TODO: TODO | DONE\n* TODO A")


def test_plan_guard_keeps_foreign_versions_and_restores(tmp_path: Path) -> None:
    path = tmp_path / "plan.org"
    path.write_text("* TODO a\n")
    guard = PlanGuard(path, "* TODO a\n")
    guard.start()
    assert guard.verify() == []
    path.write_text("forged 1\n")
    (first,) = guard.verify()
    assert first.rejected_path == tmp_path / "plan.org.rejected-1"
    assert path.read_text() == "* TODO a\n"
    path.unlink()
    (gone,) = guard.verify()
    assert gone.rejected_path is None and "deleted" in gone.describe()
    assert path.read_text() == "* TODO a\n"
    done: list[str] = []
    path.write_text("forged 2\n")
    guard.submit("* DONE a\n", lambda: done.append("written"))
    found = guard.close()
    assert [t.rejected_path for t in found] == [tmp_path / "plan.org.rejected-2"]
    assert (tmp_path / "plan.org.rejected-2").read_text() == "forged 2\n"
    assert path.read_text() == "* DONE a\n" and done == ["written"]


class BreakingRecorder(MemoryRecorder):
    """A ledger that takes steps until the first `step` of the kind named, then refuses."""

    def __init__(self, breaks_at: str, after: int = 0) -> None:
        super().__init__()
        self.breaks_at = breaks_at
        self.after = after  # steps of that kind taken first
        self.refused: list[str] = []

    def record(self, step: str, body: Mapping[str, Any]) -> None:
        if step == self.breaks_at and self.after > 0:
            self.after -= 1
        elif step == self.breaks_at or self.refused:
            self.refused.append(step)
            raise LedgerError(f"refusing to append a {step} step: the disk is on fire")
        super().record(step, body)


def run_breaking(
    tmp_path: Path, breaks_at: str, after: int = 0
) -> tuple[RunReport, BreakingRecorder, Path]:
    path = write_plan(tmp_path, leaf(0) + leaf(1) + leaf(2))
    model = ScriptedModel.from_yaml("workers:\n  '*': [{say: DONE}]\n")
    recorder = BreakingRecorder(breaks_at, after)
    options = RunOptions(max_parallel=1)
    report = Runner(load_plan(path), model=model, recorder=recorder, options=options).run()
    return report, recorder, path


def test_a_refused_run_start_never_starts(tmp_path: Path) -> None:
    report, recorder, path = run_breaking(tmp_path, "run-start")
    assert (report.started, report.ok) == (False, False)
    (diagnostic,) = report.diagnostics
    assert diagnostic.code == "R004"
    assert diagnostic.message == (
        "the run could not be sealed, so it did not start: the `run-start` step could not be"
        " sealed: refusing to append a run-start step: the disk is on fire"
    )
    assert recorder.refused == ["run-start"] and recorder.steps == []
    assert [t.state for t in report.tasks] == ["TODO", "TODO", "TODO"]
    assert path.read_text() == HEAD + leaf(0) + leaf(1) + leaf(2)


def test_an_unsealed_red_first_check_stops_the_run_before_any_work(tmp_path: Path) -> None:
    report, recorder, path = run_breaking(tmp_path, "check")
    assert (report.started, report.ok) == (True, False)
    assert [d.code for d in report.diagnostics] == ["R004"]
    assert [(t.state, t.attempts) for t in report.tasks] == [("TODO", 0)] * 3
    assert [name for name, _ in recorder.steps] == ["run-start"]
    assert "* DONE" not in path.read_text()


def test_an_unsealed_check_verdict_is_never_written(tmp_path: Path) -> None:
    report, recorder, path = run_breaking(tmp_path, "check", after=3)  # past red-first
    assert (report.started, report.ok) == (True, False)
    assert [d.code for d in report.diagnostics if d.code != "R007"] == ["R004"]
    assert "the `check` step could not be sealed" in report.diagnostics[-1].message
    # t0's check passed, but its verdict could not be sealed: not DONE, and nothing after
    assert [(t.state, t.attempts) for t in report.tasks] == [("TODO", 0), ("TODO", 0), ("TODO", 0)]
    assert (
        report.tasks[0].reason == "no verdict: the run could not seal its steps and stopped (R004)"
    )
    assert "* DONE" not in path.read_text()
    assert recorder.refused == ["check"]  # later steps never reached the recorder
    assert [name for name, _ in recorder.steps] == [
        "run-start", "check", "check", "check", "task-start", "model-call", "claim",
    ]  # fmt: skip


def test_an_unsealed_state_step_stops_the_run(tmp_path: Path) -> None:
    report, recorder, path = run_breaking(tmp_path, "state")
    codes = [d.code for d in report.diagnostics if d.code != "R007"]  # the marker pre-exists
    assert report.ok is False and codes == ["R004"]
    assert "the `state` step could not be sealed" in report.diagnostics[-1].message
    assert recorder.refused == ["state"]
    # State steps follow the plan write (group commit), so verdicts already taken when the
    # first one fails stay written; each of them has a sealed PASS, and no task started after.
    started = [b["task_id"] for b in recorder.of("task-start")]
    # a worker's checks only: red-first passes for every task here (the marker pre-exists),
    # started or not, so counting it made this test depend on how far the run got
    passed = {
        b["task_id"]
        for b in recorder.of("check")
        if b["verdict"] == "PASS" and b.get("phase") is None
    }
    done = {t.id for t in report.tasks if t.state == "DONE"}
    assert started == ["t0", "t1", "t2"][: len(started)] and "t0" in done
    assert done <= passed and passed <= set(started)
    # a task whose check passed while the failure was on its way to the scheduler: no verdict
    untaken = {t.id: t.reason for t in report.tasks if t.id in passed - done}
    assert all(r is not None and r.endswith("(R004)") for r in untaken.values()), untaken
    assert path.read_text().count("* DONE") == len(done)
    assert "run-end" not in [name for name, _ in recorder.steps]


def test_run_start_seals_a_digest_when_the_checks_cannot_fit_a_line() -> None:
    small, large = MemoryRecorder(), MemoryRecorder()
    options = {"plan": "p.org", "plan_text": "x", "model": "m", "workdir": "w",
               "max_parallel": 1, "require_checks": False}  # fmt: skip
    few = [("t0", "a" * 64), ("t1", None)]
    many = [(f"t{n}", f"{n:064x}") for n in range(700)]  # ~65 KiB of hashes: over a line
    RunSeal(small, "run-1").run_start(checks=few, **options)  # type: ignore[arg-type]
    RunSeal(large, "run-2").run_start(checks=many, **options)  # type: ignore[arg-type]
    (inline,) = small.of("run-start")
    assert inline["checks"] == [{"task_id": "t0", "check_sha256": "a" * 64},
                                {"task_id": "t1", "check_sha256": None}]  # fmt: skip
    assert inline["checks_count"] == 2
    assert inline["checks_sha256"] == sha256_text(canonical_json(inline["checks"]))
    (digest,) = large.of("run-start")
    assert digest["checks"] is None and digest["checks_count"] == 700
    listed = [{"task_id": t, "check_sha256": sha} for t, sha in many]
    assert digest["checks_sha256"] == sha256_text(canonical_json(listed))


def test_one_disk_quota_bounds_every_task_of_a_run(tmp_path: Path) -> None:
    path = write_plan(tmp_path, leaf(0, "test -s a.txt") + leaf(1, "test -s b.txt"))
    script = (
        "workers:\n"
        "  t0:\n    - {tool: sh, input: {cmd: 'seq 1 100000 > a.txt'}}\n    - say: DONE\n"
        f"  t1:\n    - {{tool: write_file, input: {{path: b.txt, content: {'x' * 500_000}}}}}\n"
        "    - say: DONE\n"
    )

    def run(disk_quota: int) -> tuple[dict[str, str], list[str]]:
        for name in ("a.txt", "b.txt"):
            (tmp_path / name).unlink(missing_ok=True)
        path.write_text(HEAD + leaf(0, "test -s a.txt") + leaf(1, "test -s b.txt"))
        recorder = MemoryRecorder()
        options = RunOptions(max_parallel=1, disk_quota=disk_quota)
        model = ScriptedModel.from_yaml(script)
        report = Runner(load_plan(path), model=model, recorder=recorder, options=options).run()
        calls = [c["status"] for c in recorder.of("tool-call")]
        return {t.id: t.state for t in report.tasks}, calls

    assert RunOptions().disk_quota == 1024 * 1024 * 1024
    assert run(RunOptions().disk_quota) == ({"t0": "DONE", "t1": "DONE"}, ["exit 0", "ok"])
    states, calls = run(1024 * 1024)  # 588,895 bytes by sh, then 500,000 by write_file
    assert states == {"t0": "DONE", "t1": "FAILED"}
    assert calls[:2] == ["exit 0", "refused"]


# --- org compatibility of the write-back ------------------------------------------------------


def test_a_verdict_org_would_not_know_inserts_the_todo_line_once_sealed(tmp_path: Path) -> None:
    path = tmp_path / "plan.org"
    original = (
        "\ufeff* TODO Release [0/2]\r\n** TODO a\r\n   :PROPERTIES:\r\n"
        "   :done-when: test -e nothing\r\n   :END:\r\n** TODO b\r\n   :PROPERTIES:\r\n"
        "   :done-when: test -e plan.org\r\n   :END:\r\n"
    )
    path.write_bytes(original.encode())
    recorder = MemoryRecorder()
    model = ScriptedModel.from_yaml('workers:\n  "*":\n    - say: DONE\n')
    report = Runner(load_plan(path), model=model, recorder=recorder).run()
    expected = "\ufeff#+TODO: TODO NEXT | DONE FAILED PARTIAL\r\n" + original.replace(
        "\ufeff", ""
    ).replace("* TODO Release [0/2]", "* PARTIAL Release [2/2]").replace(
        "** TODO a", "** FAILED a"
    ).replace("** TODO b", "** DONE b")
    assert path.read_bytes().decode() == expected
    (edit,) = recorder.of("plan-edit")
    assert (edit["line"], edit["text"]) == (1, "#+TODO: TODO NEXT | DONE FAILED PARTIAL")
    # sealed just before the state step of the verdict that needed it
    names = [name for name, _ in recorder.steps]
    after_edit = recorder.steps[names.index("plan-edit") + 1]
    assert after_edit[0] == "state" and after_edit[1]["to"] in ("FAILED", "PARTIAL")
    assert report.to_json()["plan_edits"] == [
        "inserted line 1: #+TODO: TODO NEXT | DONE FAILED PARTIAL"
    ]
    assert [t.line for t in report.tasks] == [2, 3, 7]
    assert load_plan(path).get("Release/a").keyword == "FAILED"


def test_done_alone_needs_no_todo_line(tmp_path: Path) -> None:
    path = tmp_path / "plan.org"
    path.write_text("* TODO a\n  :PROPERTIES:\n  :done-when: test -e plan.org\n  :END:\n")
    recorder = MemoryRecorder()
    model = ScriptedModel.from_yaml('workers:\n  "*":\n    - say: DONE\n')
    report = Runner(load_plan(path), model=model, recorder=recorder).run()
    assert report.ok and report.plan_edits == ()
    assert path.read_text().startswith("* DONE a\n")
    assert recorder.of("plan-edit") == []


def _closed_child(tmp_path: Path, plan: str) -> list[tuple[str, str, str | None]]:
    path = tmp_path / "plan.org"
    path.write_text("#+TODO: TODO | DONE FAILED PARTIAL CANCELLED\n" + plan)
    model = ScriptedModel.from_yaml('workers:\n  "*":\n    - say: DONE\n')
    report = Runner(load_plan(path), model=model, recorder=MemoryRecorder()).run()
    return [(t.id, t.state, t.reason) for t in report.tasks]


K = "** TODO k\n   :PROPERTIES:\n   :done-when: test -e plan.org\n   :END:\n"


def test_a_custom_done_state_is_never_run_and_its_parent_is_judged_on_the_others(
    tmp_path: Path,
) -> None:
    """A child the user closed (CANCELLED) is finished: the parent is DONE over its other
    children, as org counts it and as the hook reads it (adversary-21 F12: PARTIAL here,
    while the hook let the stop through)."""
    path = tmp_path / "plan.org"
    path.write_text("#+TODO: TODO | DONE FAILED PARTIAL CANCELLED\n* TODO P\n** CANCELLED c\n" + K)
    recorder = MemoryRecorder()
    model = ScriptedModel.from_yaml('workers:\n  "*":\n    - say: DONE\n')
    report = Runner(load_plan(path), model=model, recorder=recorder).run()
    assert [(t.id, t.state) for t in report.tasks] == [
        ("P", "DONE"), ("P/c", "CANCELLED"), ("P/k", "DONE"),
    ]  # fmt: skip
    assert [b["task_id"] for b in recorder.of("task-start")] == ["P/k", "P"]  # c never runs


def test_a_parent_whose_children_are_all_closed_is_not_done(tmp_path: Path) -> None:
    found = _closed_child(tmp_path, "* TODO P\n** CANCELLED c\n** CANCELLED d\n")
    assert found[0] == (
        "P", "PARTIAL", "no child task is DONE: every one was closed without work (c, d)"
    )  # fmt: skip


def test_a_closed_step_of_an_ordered_parent_lets_the_next_start(tmp_path: Path) -> None:
    plan = "* TODO P\n  :PROPERTIES:\n  :ORDERED: t\n  :END:\n** CANCELLED c\n" + K
    assert [(i, s) for i, s, _ in _closed_child(tmp_path, plan)] == [
        ("P", "DONE"), ("P/c", "CANCELLED"), ("P/k", "DONE"),
    ]  # fmt: skip


def test_a_failed_child_still_keeps_its_parent_from_done(tmp_path: Path) -> None:
    plan = (
        "* TODO P\n** CANCELLED c\n** TODO f\n   :PROPERTIES:\n   :done-when: test -e nx\n"
        "   :max-attempts: 1\n   :END:\n"
    )
    found = _closed_child(tmp_path, plan)
    assert found[0] == ("P", "PARTIAL", "not every child task is DONE: f")


def test_a_flat_plan_needs_no_partial_and_a_parent_does(tmp_path: Path) -> None:
    # adversary-21 F1: only a parent can be PARTIAL; a flat plan whose #+TODO: line ends
    # `| DONE FAILED` (what `agent setup` H002 asks for) runs, and lint reads it as the run does
    flat = tmp_path / "flat.org"
    flat.write_text("#+TODO: TODO | DONE FAILED\n* TODO A\n* TODO B\n")
    assert [d.code for d in preflight(load_plan(flat))] == []
    parent = tmp_path / "parent.org"
    parent.write_text("#+TODO: TODO | DONE FAILED\n* TODO P\n** TODO A\n")
    (problem,) = preflight(load_plan(parent))
    assert (problem.code, problem.message) == (
        "R001",
        "the #+TODO line has no PARTIAL after `|`; the runner writes DONE and FAILED verdicts,"
        " and PARTIAL for a parent task (e.g. `#+TODO: TODO NEXT | DONE FAILED PARTIAL`)",
    )
    linted = CliRunner().invoke(main, ["lint", str(parent), "--json"])
    assert [d["code"] for d in json.loads(linted.stdout) if d["level"] == "error"] == ["R001"]
    assert linted.exit_code == 1
    flat_lint = CliRunner().invoke(main, ["lint", str(flat), "--json"])
    assert [d for d in json.loads(flat_lint.stdout) if d["code"] == "R001"] == []


def test_a_closed_child_s_check_is_not_judged_at_the_roll_up(tmp_path: Path) -> None:
    """Its work was never done, by the user's choice: judging its check again there would
    turn CANCELLED into FAILED."""
    plan = "* TODO P\n** CANCELLED c\n   :PROPERTIES:\n   :done-when: test -e never\n   :END:\n" + K
    assert [(i, s) for i, s, _ in _closed_child(tmp_path, plan)] == [
        ("P", "DONE"), ("P/c", "CANCELLED"), ("P/k", "DONE"),
    ]  # fmt: skip
