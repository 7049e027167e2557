"""A folder a passing check LISTED (a glob, `os.listdir`, `ls`, `find`) is an input of that
check, whether or not it read a file in it (adversary-17 F10): a checker program that loops
over `glob("cases/*.in")` passes on an empty folder, so a case file there at run start that a
worker removed fails the task, named 'input gone'; a case the task asks to add, and a worker
that writes only its own outputs, pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _sh

# red-first reads no case file: the first case's output is missing, and it stops there
CHECKER = (
    "import glob, os, sys\n"
    "for case in sorted(glob.glob('cases/*.in')):\n"
    "    name = os.path.basename(case)[:-3]\n"
    "    if not os.path.exists('outputs/' + name + '.out'):\n"
    "        sys.exit(1)\n"
    "    if open('outputs/' + name + '.out').read() != open('cases/' + name + '.out').read():\n"
    "        sys.exit(1)\n"
)

GONE = (
    "protected_input_changed: input gone: `cases/{}` (in `cases/`, a folder the check read"
    " its data from) was there before the work, which the worker of task `outs` removed"
)


#: the same loop in the check's own shell: its glob lists `cases/`
SHELL_LOOP = (
    'for c in cases/*.in; do test -e "$c" || continue; n=${c#cases/};'
    ' cmp -s "outputs/${n%.in}.out" "cases/${n%.in}.out"; done'
)


def _outs(
    root: Path, cmd: str, text: str = "", check: str = "python3 check.py", **props: str
) -> dict[str, object]:
    (root / "cases").mkdir()
    (root / "outputs").mkdir()
    for name, value in (("a", "1"), ("b", "2")):
        (root / "cases" / f"{name}.in").write_text(value + "\n")
        (root / "cases" / f"{name}.out").write_text(str(int(value) * 2) + "\n")
    (root / "check.py").write_text(CHECKER)
    plan, script = setup(
        root,
        task("Double the cases", "outs", check, max_attempts="1", **props)
        + (text or "Write outputs/NAME.out, twice the number in cases/NAME.in, for each case.")
        + "\n",
        "workers:\n  outs:\n" + _sh(cmd) + "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    row = _row(doc, "outs")  # type: ignore[arg-type]
    assert result.exit_code == (0 if row["state"] == "DONE" else 1)
    return row


@pytest.mark.parametrize(
    "cmd",
    [
        "rm cases/*",
        "rm -r cases",
        "mv cases/a.in cases/a.in.bak; mv cases/b.in cases/b.in.bak",
        "python3 -c \"import os; [os.remove('cases/' + n) for n in os.listdir('cases')]\"",
    ],
)
def test_every_case_removed_from_a_globbed_folder_fails(tmp_path: Path, cmd: str) -> None:
    row = _outs(tmp_path, cmd)
    assert row["state"] == "FAILED", row
    assert str(row["reason"]).startswith(GONE.format("a.in")), row["reason"]
    assert "`cases/b.in`" in str(row["reason"])


@pytest.mark.parametrize("cmd", ["rm cases/*.in", "mv cases/a.in cases/b.in outputs/"])
def test_a_shell_glob_over_an_emptied_folder_fails(tmp_path: Path, cmd: str) -> None:
    row = _outs(tmp_path, cmd, check=SHELL_LOOP)
    assert row["state"] == "FAILED", row
    assert str(row["reason"]).startswith(GONE.format("a.in")), row["reason"]


def test_the_honest_work_passes_the_shell_loop(tmp_path: Path) -> None:
    row = _outs(tmp_path, "echo 2 > outputs/a.out; echo 4 > outputs/b.out", check=SHELL_LOOP)
    assert row["state"] == "DONE", row["reason"]


def test_the_honest_work_passes(tmp_path: Path) -> None:
    row = _outs(tmp_path, "echo 2 > outputs/a.out; echo 4 > outputs/b.out")
    assert row["state"] == "DONE", row["reason"]


def test_a_case_the_text_asks_to_add_passes(tmp_path: Path) -> None:
    row = _outs(
        tmp_path,
        "echo 3 > cases/c.in; echo 6 > cases/c.out;"
        " echo 2 > outputs/a.out; echo 4 > outputs/b.out; echo 6 > outputs/c.out",
        "Add a case cases/c.in (3) with cases/c.out (6), then write outputs/NAME.out, twice"
        " the number in cases/NAME.in, for each case.",
    )
    assert row["state"] == "DONE", row["reason"]


def test_a_test_runners_walk_of_the_tree_holds_no_folder(tmp_path: Path) -> None:
    """pytest lists every folder it collects from: a stale note a worker tidies away is no
    input of its check (only the tests under its test paths are)."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "stale.txt").write_text("old\n")
    (tmp_path / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    plan, script = setup(
        tmp_path,
        task("Tidy", "tidy", "python3 -m pytest -q", max_attempts="1")
        + "Write notes.md with a line about the project.\n",
        "workers:\n  tidy:\n" + _sh("rm docs/stale.txt; echo ok > notes.md") + "    - say: DONE\n",
    )
    _result, doc = resume(plan, script)
    row = _row(doc, "tidy")  # type: ignore[arg-type]
    assert row["state"] == "DONE", row["reason"]
