"""A carried DONE judged again by its check's read set (issue 27, resume): the sweep trusts a
sealed pass without running it only while every input it read holds still; any change the
check could see — one byte, a new name in a listed directory, a name that was absent, a link's
target, an mtime — runs it again, and what reads the clock is never trusted."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from groundskeeper.acceptance.check import CheckResult, SealedCheck, run_check
from groundskeeper.record.backing import RecordReader
from groundskeeper.sandbox import inputs, read_set
from groundskeeper.supervisor.run_checks import RunChecks
from tests.test_cli_run import keywords, resume, setup, steps, task


def judged(workdir: Path, text: str) -> CheckResult:
    return run_check(SealedCheck(text, "sh", 1, "test"), workdir)


#: the task's verdict digest (`TaskSpec.verdict_sha256`) its DONE was sealed under
RULES = "0" * 64


def sealed_reader(task: str, result: CheckResult) -> RecordReader:
    """The record a run leaves after this pass made the task DONE (the check step's body as
    `sealing` writes it)."""
    assert result.reads is not None
    reader = RecordReader()
    reader.feed("r1", "run-start", {})
    reader.feed("r1", "task-start", {"task_id": task, "check_sha256": result.check_sha256})
    body = {
        "task_id": task,
        "check_sha256": result.check_sha256,
        "verdict": "PASS",
        "reads": {
            "sha256": read_set.digest(result.reads),
            "version": read_set.sandbox_version(),
            "facts": [list(f) for f in result.reads],
        },
    }
    reader.feed("r1", "check", body)
    state = {"task_id": task, "from": "TODO", "to": "DONE", "verdict_sha256": RULES}
    reader.feed("r1", "state", state)
    reader.feed("r1", "run-end", {})
    return reader


def reused(workdir: Path, text: str, reader: RecordReader) -> CheckResult | None:
    checks = RunChecks(workdir, None, 10.0, None)  # type: ignore[arg-type]
    return checks.reused("t1", SealedCheck(text, "sh", 1, "test"), reader.record, RULES)


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "out.txt").write_text("hello\n")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "a.txt").write_text("a\n")
    return tmp_path


def test_one_byte_changed_runs_it_again_and_it_fails(work: Path) -> None:
    check = "grep -q hello out.txt"
    first = judged(work, check)
    assert first.passed and first.reads is not None
    reader = sealed_reader("t1", first)
    (work / "out.txt").write_text("hellO\n")  # same size, one byte
    assert reused(work, check, reader) is None
    assert judged(work, check).code == "nonzero_status"


def test_inputs_unchanged_is_judged_without_a_run_and_says_so(work: Path) -> None:
    check = "grep -q hello out.txt && test -s d/a.txt"
    first = judged(work, check)
    reader = sealed_reader("t1", first)
    again = reused(work, check, reader)
    assert again is not None
    assert (again.verdict, again.reason, again.reused) == (
        "PASS",
        "inputs unchanged since its verdict",
        True,
    )
    assert again.reads == first.reads


def test_a_sealed_set_altered_or_of_another_sandbox_is_not_trusted(work: Path) -> None:
    check = "grep -q hello out.txt"
    reader = sealed_reader("t1", judged(work, check))
    sealed = dict(reader.record.reads["t1"])
    reader.record.reads["t1"] = {**sealed, "facts": sealed["facts"][:-1]}  # digest no longer
    assert reused(work, check, reader) is None
    reader.record.reads["t1"] = {**sealed, "version": "0" * 64}
    assert reused(work, check, reader) is None
    reader.record.reads["t1"] = sealed
    assert reused(work, check + " ", reader) is None  # another check text


def test_a_name_created_in_a_listed_directory_runs_it_again(work: Path) -> None:
    for check in ("test $(ls d | wc -l) -eq 1", "cat d/* | grep -q a"):
        first = judged(work, check)
        assert first.passed, check
        reader = sealed_reader("t1", first)
        assert reused(work, check, reader) is not None
        (work / "d" / "b.txt").write_text("a\n")
        assert reused(work, check, reader) is None, check
        (work / "d" / "b.txt").unlink()


def test_a_name_found_absent_then_present_runs_it_again(work: Path) -> None:
    for check in ("test ! -e gone.txt", "[[ ! -e gone.txt ]]", "! cat gone.txt"):
        first = judged(work, check)
        assert first.passed, check
        reader = sealed_reader("t1", first)
        (work / "gone.txt").write_text("")
        assert reused(work, check, reader) is None, check
        (work / "gone.txt").unlink()


def test_a_link_swapped_to_a_target_with_the_same_bytes_runs_it_again(work: Path) -> None:
    (work / "copy.txt").write_text("hello\n")
    os.symlink("out.txt", work / "link")
    for check in ("grep -q hello link", "grep -q hello < link"):
        first = judged(work, check)
        reader = sealed_reader("t1", first)
        (work / "link").unlink()
        os.symlink("copy.txt", work / "link")
        assert reused(work, check, reader) is None, check
        (work / "link").unlink()
        os.symlink("out.txt", work / "link")


def test_an_mtime_only_change_runs_a_check_that_compares_times_again(work: Path) -> None:
    os.utime(work / "out.txt", ns=(10**18, 10**18))
    os.utime(work / "d" / "a.txt", ns=(2 * 10**18, 2 * 10**18))
    for check in ("test d/a.txt -nt out.txt", 'test -n "$(find d -newer out.txt)"'):
        first = judged(work, check)
        assert first.passed, check
        reader = sealed_reader("t1", first)
        os.utime(work / "out.txt", ns=(3 * 10**18, 3 * 10**18))  # bytes as they were
        assert reused(work, check, reader) is None, check
        assert not judged(work, check).passed
        os.utime(work / "out.txt", ns=(10**18, 10**18))


@pytest.mark.parametrize(
    "check",
    ["date", 'test -n "$(date +%s)"', "sleep 0.01", "python3 -c 'print(1)'"],
)
def test_what_reads_the_clock_or_runs_another_module_has_no_read_set(
    work: Path, check: str
) -> None:
    result = judged(work, check)
    assert result.passed, result.reason
    assert result.reads is None


def test_a_stand_in_shell_has_no_read_set(work: Path) -> None:
    from groundskeeper.sandbox import run

    result = run_check(SealedCheck("true", "sh", 1, "t"), work, shell=run)
    assert result.passed and result.reads is None


def test_a_failing_check_step_forgets_the_read_set(work: Path) -> None:
    check = "grep -q hello out.txt"
    reader = sealed_reader("t1", judged(work, check))
    body = {"task_id": "t1", "check_sha256": judged(work, check).check_sha256,
            "verdict": "FAIL", "reason": "nonzero_status"}  # fmt: skip
    reader.feed("r2", "run-start", {})
    reader.feed("r2", "check", body)
    assert "t1" not in reader.record.reads
    again = RecordReader.from_json(reader.to_json())
    assert again.record.reads == reader.record.reads


# -- through the CLI: the final sweep of a resumed run ----------------------------------------


def _carried(tmp_path: Path, first_check: str, later: list[dict[str, Any]]) -> dict[str, Any]:
    """Run 1 makes `first` DONE (it writes out/a.txt) and fails `second`; run 2 works on
    `second` only, whose worker does `later` too. The report of run 2."""
    plan_text = task("First", "first", first_check) + task("Second", "second", "grep -qx b b.txt")
    first = {"first": [_write("out/a.txt", "a\n"), {"say": "DONE"}], "second": [{"say": "DONE"}]}
    plan, script = setup(tmp_path, plan_text, yaml.safe_dump({"workers": first}))
    resume(plan, script, "--max-parallel", "1")
    assert keywords(plan) == {"first": "DONE", "second": "FAILED"}
    again = {"second": [_write("b.txt", "b\n"), *later, {"say": "DONE"}]}
    script.write_text(yaml.safe_dump({"workers": again}))
    _, doc = resume(plan, script)
    return doc


def _swept(tmp_path: Path, task_id: str) -> dict[str, Any]:
    last = steps(tmp_path / "plan.org", "run-start")[-1]["run_id"]
    return next(c for c in steps(tmp_path / "plan.org", "check")
                if c.get("phase") == "sweep" and c["run_id"] == last
                and c["task_id"] == task_id)  # fmt: skip


def _write(path: str, content: str) -> dict[str, Any]:
    return {"tool": "write_file", "input": {"path": path, "content": content}}


def _unchanged(tmp_path: Path) -> list[dict[str, Any]]:
    last = steps(tmp_path / "plan.org", "run-start")[-1]["run_id"]
    return [row for s in steps(tmp_path / "plan.org", "inputs-unchanged")
            if s["run_id"] == last for row in s["tasks"]]  # fmt: skip


def test_a_carried_done_whose_inputs_stand_is_judged_by_them_and_the_record_says_so(
    tmp_path: Path,
) -> None:
    doc = _carried(tmp_path, "grep -qx a out/a.txt", [_write("other/c.txt", "c\n")])
    assert {t["id"]: t["state"] for t in doc["tasks"]} == {"first": "DONE", "second": "DONE"}
    verdict = next(c for c in steps(tmp_path / "plan.org", "check")
                   if c["task_id"] == "first" and c["verdict"] == "PASS")  # fmt: skip
    reads = verdict["reads"]
    assert reads["version"] == read_set.sandbox_version()
    assert ["bytes", "out/a.txt", hashlib.sha256(b"a\n").hexdigest()] in reads["facts"]
    [line] = [s for s in steps(tmp_path / "plan.org", "inputs-unchanged")]
    assert (line["phase"], line["reason"]) == ("sweep", "inputs unchanged since its verdict")
    assert line["tasks"] == [{"task_id": "first", "check_sha256": verdict["check_sha256"],
                              "reads_sha256": reads["sha256"]}]  # fmt: skip
    assert "first" not in [c["task_id"] for c in steps(tmp_path / "plan.org", "check")
                           if c["run_id"] == line["run_id"]]  # fmt: skip
    # made DONE in this run, after its worker's last tool call: kept as untouched
    kept = [row["task_id"] for u in steps(tmp_path / "plan.org", "untouched")
            if u["run_id"] == line["run_id"] for row in u["tasks"]]  # fmt: skip
    assert kept == ["second"]


def test_a_later_task_changing_one_byte_a_carried_check_reads_demotes_it(tmp_path: Path) -> None:
    doc = _carried(tmp_path, "grep -qx a out/a.txt", [_write("out/a.txt", "A\n")])
    first = next(t for t in doc["tasks"] if t["id"] == "first")
    assert first["state"] == "FAILED"
    assert first["reason"].startswith("no longer passes: nonzero_status")
    assert "reused" not in _swept(tmp_path, "first")
    assert _unchanged(tmp_path) == []


def test_a_later_task_adding_a_name_a_carried_check_listed_demotes_it(tmp_path: Path) -> None:
    check = "test $(ls out | wc -l) -eq 1"
    doc = _carried(tmp_path, check, [_write("out/b.txt", "b\n")])
    first = next(t for t in doc["tasks"] if t["id"] == "first")
    assert first["state"] == "FAILED"
    assert "reused" not in _swept(tmp_path, "first")
    assert _unchanged(tmp_path) == []


def test_a_carried_check_that_reads_the_clock_is_always_run(tmp_path: Path) -> None:
    doc = _carried(tmp_path, 'grep -qx a out/a.txt && test -n "$(date)"', [])
    assert {t["id"]: t["state"] for t in doc["tasks"]} == {"first": "DONE", "second": "DONE"}
    swept = _swept(tmp_path, "first")
    assert "reused" not in swept and "reads" not in swept
    assert _unchanged(tmp_path) == []


def test_a_file_written_and_put_back_while_the_check_read_it_leaves_no_read_set(
    work: Path,
) -> None:
    """Hashed as it was opened, then rewritten with the same bytes before the run ends: what
    the command read in between cannot be told, so the pass has no read set."""
    from groundskeeper.sandbox import run

    with read_set.recording(work) as reads:
        run("read line < out.txt", workdir=work, read_only=True)  # no stat shown
        assert reads.facts() is not None and reads.steady()
        (work / "out.txt").write_text("hello\n")  # the same bytes, written again
    assert inputs.unchanged(work, reads.facts() or ())  # the bytes alone would say so
    assert not reads.steady()


def test_a_carried_listing_check_whose_directory_stands_is_not_run(tmp_path: Path) -> None:
    doc = _carried(tmp_path, "test $(ls out | wc -l) -eq 1", [_write("b2.txt", "b\n")])
    assert {t["id"]: t["state"] for t in doc["tasks"]} == {"first": "DONE", "second": "DONE"}
    assert [row["task_id"] for row in _unchanged(tmp_path)] == ["first"]


def test_many_unchanged_tasks_with_long_ids_are_sealed_in_lines_that_fit() -> None:
    from groundskeeper.record.ledger_format import MAX_LINE_BYTES
    from groundskeeper.supervisor.sealing import RunSeal

    class Kept:
        def __init__(self) -> None:
            self.lines: list[tuple[str, dict[str, Any]]] = []

        def record(self, step: str, body: dict[str, Any]) -> None:
            self.lines.append((step, body))

    kept = Kept()
    seal = RunSeal.__new__(RunSeal)
    seal.record = kept.record  # type: ignore[method-assign]
    judged = [(f"{'long title / ' * 30}{i}", "a" * 64, "b" * 64) for i in range(500)]
    seal.inputs_unchanged(judged)
    assert [len(b["tasks"]) for _, b in kept.lines][:1] != [500]
    assert sum(len(b["tasks"]) for _, b in kept.lines) == 500
    assert [r["task_id"] for _, b in kept.lines for r in b["tasks"]] == [t for t, _, _ in judged]
    for step, body in kept.lines:
        assert step == "inputs-unchanged"
        assert len(json.dumps(body)) < MAX_LINE_BYTES - 16 * 1024  # room for the envelope


def test_a_file_found_present_then_deleted_runs_it_again(work: Path) -> None:
    for check in ("test -e out.txt", "[[ -e out.txt ]]", "cat d/* > /dev/null"):
        first = judged(work, check)
        assert first.passed, check
        reader = sealed_reader("t1", first)
        gone = work / ("d/a.txt" if "d/*" in check else "out.txt")
        content = gone.read_text()
        gone.unlink()
        assert reused(work, check, reader) is None, check
        gone.write_text(content)


def test_behind_a_fence_hiding_inputs_there_is_no_read_set(work: Path) -> None:
    """What a check sees then depends on whose fence it runs behind: never trusted again."""
    from groundskeeper.sandbox import fence as fences
    from groundskeeper.sandbox import run

    hiding = fences.Fence(rules=(fences.PathRules(os.path.realpath(work), conceal=("d",)),))
    for check in ("[[ -f out.txt ]]", "grep -q hello out.txt"):
        first = judged(work, check)
        assert first.reads is not None, check
        with fences.binding(hiding):
            assert judged(work, check).reads is None, check
            with read_set.recording(work) as reads:
                run(check, workdir=work, read_only=True)
            assert reads.tainted == "the fence hides inputs", check
            assert not inputs.unchanged(work, first.reads)
