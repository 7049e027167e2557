"""adversary-14 F2 (p27, p34) in an agent's session: the snapshot never walks the folders it
always skips (`.venv`, `node_modules`, `__pycache__`, …), so a key a check keeps there was not
held at all — rewritten together with the deliverable, the stop was allowed. A file a task's
check names (in its text, its program's or its tests') that lives in a skipped folder is held
anyway, so a change to it blocks the stop with the usual reason; files there no check names
change freely. And a pytest suite reading a git-ignored `data/expected.txt` (p34) is held by
its stat key."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.agents.gated import ledger_steps
from tests.agents.test_hook_as_a_run import allowed, plan_in, started
from tests.agents.test_hook_session_bound import hook

PROGRAM_PLAN = """\
* TODO Answer
  :PROPERTIES:
  :ID: ans
  :done-when: python3 check.py
  :END:
  Write out.txt holding the answer to the question.
"""

#: the check's program opens its key under a folder the snapshot skips
PROGRAM = (
    "import sys\n"
    'got, want = open("out.txt").read().strip(), open("{key}").read().strip()\n'
    "sys.exit(0 if got == want else 1)\n"
)

#: the check's text names the key, its program opens what it is given
BY_ARGUMENT = (
    "import sys\n"
    'got, want = open("out.txt").read().strip(), open(sys.argv[1]).read().strip()\n'
    "sys.exit(0 if got == want else 1)\n"
)

TEXT_PLAN = """\
* TODO Answer
  :PROPERTIES:
  :ID: ans
  :done-when: python3 check.py {key}
  :END:
  Write out.txt holding the answer to the question.
"""

KEYS = ["node_modules/keys/answer.txt", ".venv/answer.txt", "__pycache__/answer.txt",
        ".tox/data/answer.txt", "lib/.mypy_cache/answer.txt"]  # fmt: skip

CHANGED = (
    "input changed: the check read `{key}` (an input of the check), which was changed since"
    " the plan was sealed for agents"
)


def _project(tmp_path: Path, key: str, *, in_text: bool) -> Path:
    if in_text:
        work = plan_in(tmp_path, TEXT_PLAN.format(key=key))
        (work / "check.py").write_text(BY_ARGUMENT)
    else:
        work = plan_in(tmp_path, PROGRAM_PLAN)
        (work / "check.py").write_text(PROGRAM.format(key=key))
    (work / key).parent.mkdir(parents=True)
    (work / key).write_text("42\n")
    (work / "node_modules" / "other").mkdir(parents=True)
    (work / "node_modules" / "other" / "index.js").write_text("old\n")
    started(work)
    return work


@pytest.mark.parametrize("in_text", [False, True], ids=["program", "check-text"])
@pytest.mark.parametrize("key", KEYS)
def test_a_key_under_a_skipped_folder_rewritten_blocks_the_stop(
    tmp_path: Path, key: str, in_text: bool
) -> None:
    work = _project(tmp_path, key, in_text=in_text)
    (work / "out.txt").write_text("7\n")
    (work / key).write_text("7\n")
    reason = hook(work).blocked or ""
    assert CHANGED.format(key=key) in reason, reason
    [check] = [body for step, body in ledger_steps(work) if step == "check"]
    assert (check["verdict"], check["reason"]) == ("FAIL", "protected_input_changed")


@pytest.mark.parametrize("key", KEYS[:2])
def test_the_answer_beside_an_untouched_skipped_key_is_allowed(tmp_path: Path, key: str) -> None:
    work = _project(tmp_path, key, in_text=False)
    (work / "out.txt").write_text("42\n")
    (work / key).write_text("42\n")  # the same bytes written again: held by content
    (work / "node_modules" / "other" / "index.js").write_text("rebuilt; no check names it\n")
    (work / "node_modules" / "new.js").write_text("new\n")
    run = hook(work)
    assert allowed(run), (run.blocked, run.stderr)


def test_the_snapshot_holds_a_named_file_under_a_skipped_folder_only(tmp_path: Path) -> None:
    from groundskeeper.agents.snapshot import take_snapshot

    work = _project(tmp_path, "node_modules/keys/answer.txt", in_text=False)
    files = take_snapshot(work, ["node_modules/keys/answer.txt", "node_modules/gone.txt"]).files
    assert files["node_modules/keys/answer.txt"].startswith("sha256:")
    assert not any(p.startswith("node_modules/other") for p in files)
    assert "node_modules/gone.txt" not in files
    assert not any(p.startswith("node_modules") for p in take_snapshot(work).files)


# -- p34: a pytest suite reading a git-ignored expected value --------------------------------

PYTEST_PLAN = """\
* TODO Implement mul
  :PROPERTIES:
  :ID: calc
  :done-when: python3 -m pytest -q tests
  :END:
  Implement mul in calc.py so the tests pass.
"""


@pytest.mark.parametrize(
    "key", ["data/expected.txt", ".venv/expected.txt"], ids=["git-ignored", "skipped-folder"]
)
def test_an_expected_value_a_pytest_suite_reads_rewritten_blocks(tmp_path: Path, key: str) -> None:
    work = plan_in(tmp_path, PYTEST_PLAN)
    (work / "tests").mkdir()
    (work / "tests" / "test_mul.py").write_text(
        "import sys; sys.path.insert(0, '.')\nfrom calc import mul\n\n"
        "def test_mul():\n"
        f'    assert mul(2, 3) == int(open("{key}").read())\n'
    )
    (work / "calc.py").write_text("def mul(a, b):\n    return 0\n")
    (work / key).parent.mkdir()
    (work / key).write_text("6\n")
    if key.startswith("data/"):
        (work / ".gitignore").write_text("data/\n")
        subprocess.run(["git", "init", "-q", str(work)], check=True)
    started(work)
    (work / key).write_text("0\n")  # mul still returns 0
    reason = hook(work).blocked or ""
    assert CHANGED.format(key=key) in reason, reason


def test_a_seal_after_a_check_names_another_skipped_file_takes_it_quietly(tmp_path: Path) -> None:
    """A file in a skipped folder that one seal holds (a check named it) and the other not
    was neither added nor removed: the re-seal takes the new check (accepted) and holds the
    newly named key, without refusing it as a file added on the check's side."""
    from tests.agents.test_hook_session_bound import gk

    work = _project(tmp_path, "node_modules/keys/answer.txt", in_text=False)
    (work / "node_modules" / "keys" / "other.txt").write_text("42\n")  # there all along
    (work / "check.py").write_text(PROGRAM.format(key="node_modules/keys/other.txt"))
    told = gk(work, "agent", "seal", "plan.org", "--accept", "check.py")
    assert told.returncode == 0, told.stderr
    assert "node_modules" not in told.stderr, told.stderr
    (work / "out.txt").write_text("7\n")
    (work / "node_modules" / "keys" / "other.txt").write_text("7\n")
    reason = hook(work, session="s-2").blocked or ""
    assert CHANGED.format(key="node_modules/keys/other.txt") in reason, reason
