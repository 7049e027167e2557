"""Adversary-19 F5: a sibling whose text asks it to regenerate the expected file another
task's check compares against is that check's key-maker: the check then holds the work to
whatever that worker wrote. The run allows the asked change (as it must: regenerating a
golden file is a real task), so lint says so (T039), as T035 does for a `:writable:`."""

from __future__ import annotations

from pathlib import Path

from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import load_plan
from tests.test_cli_run import HEAD, task

GOLD = task("Regenerate tests/expected.txt: it must hold the lines of data/in.txt sorted",
            "gold", 'test "$(wc -l < tests/expected.txt)" -eq "$(wc -l < data/in.txt)"',
            level=2)  # fmt: skip
REP = task("Write out/sorted.txt: data/in.txt sorted", "rep",
           "diff out/sorted.txt tests/expected.txt", level=2)  # fmt: skip
WORK = "* TODO Sort\n  :PROPERTIES:\n  :ID: work\n  :ORDERED: t\n  :END:\n"


def _found(root: Path, body: str) -> list[tuple[str, str, str]]:
    (root / "data").mkdir()
    (root / "data" / "in.txt").write_text("b\na\nc\n")
    (root / "tests").mkdir()
    (root / "tests" / "expected.txt").write_text("a\nb\nc\n")
    plan = root / "plan.org"
    plan.write_text(HEAD + body)
    return [(d.level, d.scope, d.message) for d in validate(load_plan(plan)) if d.code == "T039"]


def test_a_sibling_asked_to_regenerate_the_key_is_warned(tmp_path: Path) -> None:
    ((level, scope, message),) = _found(tmp_path, WORK + GOLD + REP)
    assert (level, scope) == ("warning", "Write out/sorted.txt: data/in.txt sorted")
    assert message.startswith(
        "the check of task rep compares against `tests/expected.txt`, which the text of task"
        " gold asks to change: the check then holds this task's work to what that worker"
        " wrote;"
    ), message


def test_no_sibling_no_warning(tmp_path: Path) -> None:
    assert _found(tmp_path, WORK + REP) == []


def test_a_task_asked_for_its_own_key_and_the_work_is_warned(tmp_path: Path) -> None:
    """adv24b F11: one worker asked for both the work and the key it is compared with can
    make them agree; its own check then judges nothing."""
    own = task(
        "Sort data/in.txt into out/sorted.txt; tests/expected.txt may be outdated, fix it too",
        "rep", "diff out/sorted.txt tests/expected.txt",
    )  # fmt: skip
    ((level, scope, message),) = _found(tmp_path, own)
    assert level == "warning" and scope.startswith("Sort data/in.txt"), scope
    assert message.startswith(
        "the check compares against `tests/expected.txt`, which this task's own text asks to"
        " change: its worker can make the key agree with whatever it writes"
    ), message
