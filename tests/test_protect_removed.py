"""A protected input removed by another task's worker fails every task protecting it, before
that task starts as after (adversary-17 F17): a removal is a change like any other, held
against the run-start file, not against the task-start look that no longer sees it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.test_cli_run import run_workers

PLAN = """#+TODO: TODO | DONE FAILED PARTIAL
* TODO Work
  :PROPERTIES:
  :ORDERED: t
  :END:
** TODO Write the notes
   :PROPERTIES:
   :ID: notes
   :done-when: grep -qx done notes.txt
   :END:
   Write notes.txt holding the word done.
** TODO Multiply
   :PROPERTIES:
   :ID: mul
   :protect: key.txt
   :done-when: test "$(cat out.txt)" = "$(sed -n 1p key.txt)"
   :END:
   Multiply the two numbers in in.txt and write the product to out.txt.
"""


def _run(tmp_path: Path, notes_cmd: str, mul_cmd: str | None) -> dict[str, dict[str, Any]]:
    (tmp_path / "key.txt").write_text("42\n")
    (tmp_path / "in.txt").write_text("6 7\n")
    (tmp_path / "plan.org").write_text(PLAN)
    notes = [{"tool": "sh", "input": {"cmd": notes_cmd}}, {"say": "DONE"}]
    mul = ([{"tool": "sh", "input": {"cmd": mul_cmd}}] if mul_cmd else []) + [{"say": "DONE"}]
    return run_workers(tmp_path / "plan.org", {"notes": notes, "mul": mul})


@pytest.mark.parametrize("removal", ["rm key.txt", "mv key.txt old.txt", "rm -f key.txt"])
def test_a_sibling_that_removes_a_protected_key_before_the_task_starts_fails_it(
    tmp_path: Path, removal: str
) -> None:
    rows = _run(tmp_path, f"echo done > notes.txt; {removal}", None)

    assert rows["mul"]["state"] == "FAILED", rows["mul"]
    assert "protected input removed: key.txt: removed by the worker of task notes" in str(
        rows["mul"]["reason"]
    )


def test_a_sibling_that_leaves_the_key_alone_lets_the_work_pass(tmp_path: Path) -> None:
    rows = _run(tmp_path, "echo done > notes.txt", "echo 42 > out.txt")

    assert rows["mul"]["state"] == "DONE", rows["mul"]
    assert rows["Work"]["state"] == "DONE"
