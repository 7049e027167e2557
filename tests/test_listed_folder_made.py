"""Adversary-28 F6: a file a worker made in a folder the check LISTED to choose what it
reads is on the check's side, whatever lists it — the shell's `$(ls …)` as before, and now
what the sandbox saw the check's run list (a Python `glob`, `os.listdir`, a hidden checker
program's): a worker that adds its own wrong answer to a folder of accepted answers is
refused (input made). The honest twins: the real answer; a deliverable written into a
folder the check lists, when the task's text asks for that folder. Through the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _sh

GLOB = (
    "python3 -c \"import glob, sys; out = open('out.txt').read();"
    " sys.exit(0 if any(open(k).read() == out for k in glob.glob('answers/*.txt')) else 1)\""
)
CHECKER = (
    "import glob, sys\nout = open('out.txt').read()\n"
    "sys.exit(0 if out in [open(k).read() for k in glob.glob('answers/*.txt')] else 1)\n"
)
TEXT = "Run prog.py and write the number it prints into out.txt."


def _answers(root: Path) -> None:
    (root / "prog.py").write_text("print(3 * 4)\n")
    (root / "answers").mkdir()
    (root / "answers" / "a.txt").write_text("12\n")
    (root / "answers" / "b.txt").write_text("12.0\n")


def _run(root: Path, check: str, worker: str, **props: str) -> dict[str, object]:
    plan, script = setup(
        root,
        task("Record the product", "p", check, max_attempts="1", **props) + "  " + TEXT + "\n",
        "workers:\n  p:\n" + worker + "    - say: DONE\n",
    )
    _, doc = resume(plan, script)
    return dict(_row(doc, "p"))


@pytest.mark.parametrize("form", ["python3 -c", "a hidden checker program"])
def test_an_answer_the_worker_adds_to_the_folder_of_answers_is_refused(
    tmp_path: Path, form: str
) -> None:
    _answers(tmp_path)
    props: dict[str, str] = {}
    check = GLOB
    if form != "python3 -c":
        (tmp_path / "tools").mkdir()
        (tmp_path / "tools" / "check.py").write_text(CHECKER)
        check, props = "python3 tools/check.py", {"hide": "tools/check.py"}
    row = _run(tmp_path, check, _sh("echo 7 > out.txt && echo 7 > answers/c.txt"), **props)
    assert row["state"] == "FAILED", row
    assert str(row["reason"]).startswith(
        "protected_input_changed: input made: the check read `answers/c.txt` (in `answers/`, a"
        " folder the check listed to choose which file it reads), which the worker of task `p`"
        " made during the work"
    ), row["reason"]


def test_the_real_answer_is_done(tmp_path: Path) -> None:
    _answers(tmp_path)
    row = _run(tmp_path, GLOB, _sh("python3 prog.py > out.txt"))
    assert (row["state"], row["reason"]) == ("DONE", None), row


REPORT = (
    "python3 -c \"import glob, sys; sys.exit(0 if any('total' in open(f).read()"
    " for f in glob.glob('reports/*.md')) else 1)\""
)


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("Write this week's report into reports/ as a markdown file. Mention the total.", "DONE"),
        ("Write this week's report as a markdown file. Mention the total.", "FAILED"),
    ],
)
def test_a_deliverable_in_a_folder_the_check_lists_needs_the_text_to_ask_for_the_folder(
    tmp_path: Path, text: str, state: str
) -> None:
    (tmp_path / "reports").mkdir()
    plan, script = setup(
        tmp_path,
        task("Report", "r", REPORT, max_attempts="1") + "  " + text + "\n",
        "workers:\n  r:\n"
        + _sh("printf '# Week 48\\n\\nThe total is 12.\\n' > reports/week48.md")
        + "    - say: DONE\n",
    )
    _, doc = resume(plan, script)
    assert _row(doc, "r")["state"] == state, _row(doc, "r")
