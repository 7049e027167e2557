"""A file an earlier run's worker wrote is that task's own output in a later run (a redo asked
for, a run cut short), which its worker may write again; for every other task it is an input
like any file there before the work (`Record.made`, `RunPaths.made_earlier`)."""

from __future__ import annotations

from pathlib import Path

from tests.test_cli_run import keywords, resume, setup, task

WRITES_A = "workers:\n  a: [{tool: write_file, input: {path: a.txt, content: a}}, {say: DONE}]\n"


def _redo(plan: Path, task_id: str) -> None:
    title = {"a": "A", "b": "B"}[task_id]
    plan.write_text(plan.read_text().replace(f"* DONE {title}\n", f"* TODO {title}\n"))


def test_another_task_rewriting_an_earlier_run_s_output_fails(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, task("A", "a", "grep -qx a a.txt"), WRITES_A)
    assert resume(plan, script)[0].exit_code == 0
    # a second task joins; its check reads a.txt, which task a's worker made in run 1
    plan.write_text(plan.read_text() + "* TODO B\n  :PROPERTIES:\n  :ID: b\n"
                    "  :done-when: grep -qx b b.txt && grep -q . a.txt\n  :END:\n")  # fmt: skip
    script.write_text(
        "workers:\n  b: [{tool: sh, input: {cmd: 'echo b > b.txt; echo z > a.txt'}}, {say: DONE}]\n"
    )
    result, document = resume(plan, script)
    assert result.exit_code == 1, result.output
    [row] = [t for t in document["tasks"] if t["id"] == "b"]
    assert row["state"] == "FAILED"
    assert "a.txt" in row["reason"], row["reason"]
    assert row["reason"].startswith("protected_input_changed: "), row["reason"]


def test_a_redo_rewrites_the_task_s_own_output(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, task("A", "a", "grep -qx a a.txt"), WRITES_A)
    assert resume(plan, script)[0].exit_code == 0
    _redo(plan, "a")
    result, _ = resume(plan, script)
    assert result.exit_code == 0, result.output
    assert keywords(plan) == {"a": "DONE"}
