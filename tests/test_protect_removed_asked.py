"""Adversary-17 F17: an explicit `:protect:` input removed by a sibling before the protecting
task starts is a change since run start, as a rewrite is: the task fails naming the
sibling's worker. A removal the sibling's text asks for re-bases it. Through the CLI, the
fake beside its honest twin."""

from __future__ import annotations

from pathlib import Path

from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _sh


def _run(root: Path, notes_text: str, check: str, mul: str) -> dict[str, str]:
    (root / "key.txt").write_text("42\n")
    notes = task("Write the notes", "notes", "grep -qx done notes.txt", level=2, max_attempts="1")
    mul_task = task("Multiply", "mul", check, level=2, max_attempts="1", protect="key.txt")
    plan, script = setup(
        root,
        "* TODO Work\n  :PROPERTIES:\n  :ID: work\n  :ORDERED: t\n  :END:\n"
        + notes + f"   {notes_text}\n" + mul_task + "   Write 6 times 7 to out.txt.\n",
        "workers:\n  notes:\n" + _sh("echo done > notes.txt; rm key.txt")
        + "    - say: DONE\n  mul:\n" + mul + "    - say: DONE\n",
    )  # fmt: skip
    _, doc = resume(plan, script, "--max-parallel", "1")
    return {t: f"{_row(doc, t)['state']} {_row(doc, t)['reason']}" for t in ("notes", "mul")}


def test_a_protected_key_a_sibling_removed_before_the_task_started_fails_it(
    tmp_path: Path,
) -> None:
    rows = _run(tmp_path, "Write notes.txt holding the word done.",
                'test "$(cat out.txt)" = "$(sed -n 1p key.txt)"', "")  # fmt: skip
    assert rows["mul"] == (
        "FAILED protected_input_changed: protected input removed: key.txt: removed by the"
        " worker of task notes, whose task does not ask to remove it"
    ), rows


def test_a_removal_the_siblings_text_asks_for_rebases_it(tmp_path: Path) -> None:
    rows = _run(tmp_path, "Write notes.txt holding the word done, and delete key.txt.",
                "grep -qx 42 out.txt", _sh("echo 42 > out.txt"))  # fmt: skip
    assert rows == {"notes": "DONE None", "mul": "DONE None"}, rows
