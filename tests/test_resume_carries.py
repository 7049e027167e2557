"""A resume remembers what earlier runs' workers changed (adversary-11 F10–F13, F19; issue 28):
"before the work" is before the plan's first run, as its ledger sealed it, not the resumed
run's start. A file a worker not entitled to it changed in run 1 fails the tasks relying on it
in every later run — after a FAILED, after a run cut short, for a sibling's change and for the
task's own worker's — until the user restores it or resumes with `--accept-changes`; a task's
own deliverable, and a change the plan asks for, stay the worker's to make."""

from __future__ import annotations

from pathlib import Path

from tests.test_cli_run import keywords, resume, setup, steps, task

ACC = "workers:\n  acc: [{tool: sh, input: {cmd: 'echo hi > notes.md; echo junk > out.txt; echo junk > exp.txt'}}, {say: DONE}]\n"  # noqa: E501
VIC_SAYS_DONE = "workers:\n  vic: [{say: DONE}]\n"
VIC_WRITES = "workers:\n  vic: [{tool: sh, input: {cmd: 'echo real > out.txt'}}, {say: DONE}]\n"


#: the check reads exp.txt under a name no reading of its text finds, so no rule protects it:
#: the check backstop judges it
OWN = """* TODO Write out.txt
  :PROPERTIES:
  :ID: vic
  :END:
  #+begin_src sh :check
  python3 - <<'PY'
  import sys
  sys.exit(0 if open("out.txt").read() == open("exp" + ".txt").read() else 1)
  PY
  #+end_src
"""


#: the same, read in two steps; its hash is sealed only if the check's first read (red-first)
#: came before any other worker was at work
COMPARE = """* TODO Write out.txt
  :PROPERTIES:
  :ID: vic
  :END:
  #+begin_src sh :check
  python3 - <<'PY'
  import sys
  a = open("exp" + ".txt").read()
  b = open("out.txt").read()
  sys.exit(0 if a == b else 1)
  PY
  #+end_src
"""


def _pair(tmp_path: Path, acc_props: dict[str, str] | None = None) -> tuple[Path, Path]:
    (tmp_path / "exp.txt").write_text("real\n")
    plan = task("Write the notes", "acc", "grep -q hi notes.md", **(acc_props or {}))
    return setup(tmp_path, plan + COMPARE, ACC)


def _row(document: dict[str, object], task_id: str) -> dict[str, str]:
    tasks = document["tasks"]
    assert isinstance(tasks, list)
    [row] = [t for t in tasks if t["id"] == task_id]
    return row  # type: ignore[no-any-return]


def test_a_sibling_s_change_caught_by_run_1_still_fails_the_next_resume(tmp_path: Path) -> None:
    plan, script = _pair(tmp_path)
    result, document = resume(plan, script)
    assert _row(document, "vic")["state"] == "FAILED", result.output
    script.write_text(VIC_SAYS_DONE)
    result, document = resume(plan, script)
    assert result.exit_code == 1, result.output
    row = _row(document, "vic")
    assert row["state"] == "FAILED"
    assert row["reason"].startswith("protected_input_changed: "), row["reason"]
    # whether exp.txt's hash was sealed before acc's change depends on which ran first
    assert (
        "which the worker of task `acc` changed; task `acc` does not ask to change it; add"
        " `:writable: /exp.txt` to task `acc` if it should change it; it was changed in an"
        " earlier run of the plan"
    ) in row["reason"], row["reason"]
    assert keywords(plan)["vic"] == "FAILED"
    assert (tmp_path / "exp.txt").read_text() == "junk\n"


def test_an_explicitly_protected_file_stays_held_to_what_it_held_before_run_1(
    tmp_path: Path,
) -> None:
    plan, script = _pair(tmp_path)
    plan.write_text(plan.read_text().replace("  :ID: vic\n", "  :ID: vic\n  :protect: exp.txt\n"))
    resume(plan, script)
    script.write_text(VIC_SAYS_DONE)
    result, document = resume(plan, script)
    assert result.exit_code == 1, result.output
    assert _row(document, "vic")["reason"] == (
        "protected_input_changed: protected input changed: exp.txt: changed in an earlier run of"
        " the plan by the worker of task acc, whose task does not ask to change it; restore it,"
        " or resume with `--accept-changes` if it is right as it is"
    )


def test_a_run_cut_short_before_the_victim_ran_does_not_launder_the_change(
    tmp_path: Path,
) -> None:
    plan, script = _pair(tmp_path)
    # the run stops after acc's attempt (the cap leaves vic resumable, as a kill does)
    result, document = resume(plan, script, "--max-parallel", "1", "--max-total-attempts", "1")
    assert keywords(plan) == {"acc": "DONE", "vic": "TODO"}, result.output
    script.write_text(VIC_SAYS_DONE)
    result, document = resume(plan, script)
    assert result.exit_code == 1, result.output
    assert _row(document, "vic")["state"] == "FAILED"
    reason = _row(document, "vic")["reason"]
    assert "which the worker of task `acc` changed" in reason, reason
    assert "it was changed in an earlier run of the plan" in reason, reason


def test_restoring_the_file_frees_the_resume(tmp_path: Path) -> None:
    plan, script = _pair(tmp_path)
    # protected from the run's start: what it held before any work is sealed then
    plan.write_text(plan.read_text().replace("  :ID: vic\n", "  :ID: vic\n  :protect: exp.txt\n"))
    resume(plan, script)
    (tmp_path / "exp.txt").write_text("real\n")
    script.write_text(VIC_WRITES)
    result, _ = resume(plan, script)
    assert result.exit_code == 0, result.output
    assert keywords(plan) == {"acc": "DONE", "vic": "DONE"}


def test_accept_changes_takes_the_workdir_as_it_is_and_is_sealed(tmp_path: Path) -> None:
    plan, script = _pair(tmp_path)
    resume(plan, script)
    script.write_text(VIC_SAYS_DONE)
    result, _ = resume(plan, script, "--accept-changes")
    assert result.exit_code == 0, result.output
    assert keywords(plan) == {"acc": "DONE", "vic": "DONE"}
    assert [s.get("accept_changes") for s in steps(plan, "run-start")] == [None, True]
    result, _ = resume(plan, script)  # a later run keeps what the user accepted
    assert result.exit_code == 0, result.output
    assert keywords(plan) == {"acc": "DONE", "vic": "DONE"}


def test_a_change_the_plan_asks_for_in_run_1_is_the_baseline_of_the_resume(
    tmp_path: Path,
) -> None:
    plan, script = _pair(tmp_path, {"writable": "exp.txt"})
    resume(plan, script, "--max-parallel", "1", "--max-total-attempts", "1")
    assert keywords(plan) == {"acc": "DONE", "vic": "TODO"}
    script.write_text(VIC_SAYS_DONE)  # out.txt = exp.txt = junk: the regenerated expectation
    result, _ = resume(plan, script)
    assert result.exit_code == 0, result.output
    assert keywords(plan) == {"acc": "DONE", "vic": "DONE"}


def test_the_task_s_own_worker_s_change_to_what_its_check_reads_fails_every_resume(
    tmp_path: Path,
) -> None:
    (tmp_path / "exp.txt").write_text("real\n")
    plan, script = setup(
        tmp_path,
        OWN,
        "workers:\n  vic: [{tool: sh, input: {cmd: 'echo junk > out.txt; echo junk > exp.txt'}},"
        " {say: DONE}]\n",
    )
    result, document = resume(plan, script)
    assert _row(document, "vic")["state"] == "FAILED", result.output
    script.write_text(VIC_SAYS_DONE)
    result, document = resume(plan, script)
    assert result.exit_code == 1, result.output
    reason = _row(document, "vic")["reason"]
    assert (
        "the check read `exp.txt` (an input of the check), which the worker of task `vic`" in reason
    )
    assert reason.endswith(
        "it was changed in an earlier run of the plan (what it held before is not sealed): once"
        " it holds what it should, resume with `--accept-changes`"
    ), reason
    (tmp_path / "exp.txt").write_text("real\n")
    script.write_text(VIC_WRITES)
    result, _ = resume(plan, script, "--accept-changes")
    assert result.exit_code == 0, result.output
    assert keywords(plan) == {"vic": "DONE"}


def test_the_task_s_own_deliverable_stays_its_worker_s_after_a_failed_run(tmp_path: Path) -> None:
    (tmp_path / "orders.csv").write_text("id,amount\n1,5\n2,7\n")
    plan, script = setup(
        tmp_path,
        task("Summarize the orders", "sum", "grep -qx 'total: 12' summary.txt", max_attempts="1")
        + "  Put the total of orders.csv in summary.txt, as `total: N`.\n",
        "workers:\n  sum: [{tool: sh, input: {cmd: 'echo total: 5 > summary.txt'}}, {say: DONE}]\n",
    )
    result, _ = resume(plan, script)
    assert keywords(plan) == {"sum": "FAILED"}, result.output
    script.write_text(
        "workers:\n  sum: [{tool: sh, input: {cmd: \"echo 'total: 12' > summary.txt\"}},"
        " {say: DONE}]\n"
    )
    result, _ = resume(plan, script)
    assert result.exit_code == 0, result.output
    assert keywords(plan) == {"sum": "DONE"}


def test_a_hash_taken_while_another_worker_is_at_work_is_not_what_the_file_held_before() -> None:
    from groundskeeper.record.backing import read_record

    def start(task_id: str, sha: str | None) -> tuple[str, str, dict[str, object]]:
        listed = [] if sha is None else [{"path": "exp.txt", "sha256": sha}]
        return ("r1", "task-start", {"task_id": task_id, "kind": "leaf", "protected": listed})

    # acc's worker truncated exp.txt mid-call when vic's start hashed it; acc's sealed line
    # listing the change comes after
    run = ("r1", "run-start", {"protected": []})
    busy = read_record([run, start("acc", None), start("vic", "e" * 64)])
    assert busy.first == {}
    done = ("r1", "state", {"task_id": "acc", "from": "TODO", "to": "DONE"})
    after = read_record([run, start("acc", None), done, start("vic", "b" * 64)])
    assert after.first == {"exp.txt": "b" * 64}  # acc's worker is through: no call in flight
    alone = read_record([run, start("vic", "b" * 64)])
    assert alone.first == {"exp.txt": "b" * 64}
