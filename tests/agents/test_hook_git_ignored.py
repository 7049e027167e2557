"""adversary-14 F2 in an agent's session: a file git ignores that a check program opens (an
answer key under an ignored `data/`) is held like any other input — by its stat key, never
read at set-up — so rewriting it blocks the stop, as it does without git. The honest twins:
the answer written beside the untouched key is allowed, and an ignored tree no check reads
(a build cache) changes freely."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.agents.gated import ledger_steps
from tests.agents.test_hook_as_a_run import allowed, plan_in, started
from tests.agents.test_hook_session_bound import hook

PLAN = """\
* TODO Answer
  :PROPERTIES:
  :ID: ans
  :done-when: python3 check.py
  :END:
  Write out.txt holding the answer to the question.
"""

CHECK = (
    "import sys\n"
    'got, want = open("out.txt").read().strip(), open("data/answer.txt").read().strip()\n'
    "sys.exit(0 if got == want else 1)\n"
)


def _project(tmp_path: Path) -> Path:
    work = plan_in(tmp_path, PLAN)
    (work / "check.py").write_text(CHECK)
    (work / "data").mkdir()
    (work / "data" / "answer.txt").write_text("42\n")
    (work / "cache").mkdir()
    (work / "cache" / "blob.bin").write_bytes(b"old")
    (work / ".gitignore").write_text("data/\ncache/\n")
    subprocess.run(["git", "init", "-q", str(work)], check=True)
    subprocess.run(["git", "-C", str(work), "add", "."], check=True)
    started(work)
    return work


def test_a_git_ignored_answer_key_rewritten_blocks_the_stop(tmp_path: Path) -> None:
    work = _project(tmp_path)
    (work / "out.txt").write_text("7\n")
    (work / "data" / "answer.txt").write_text("7\n")
    reason = hook(work).blocked or ""
    assert (
        "input changed: the check read `data/answer.txt` (an input of the check), which was"
        " changed since the plan was sealed for agents"
    ) in reason, reason
    [check] = [body for step, body in ledger_steps(work) if step == "check"]
    assert (check["verdict"], check["reason"]) == ("FAIL", "protected_input_changed")


def test_the_answer_beside_an_untouched_ignored_key_is_allowed(tmp_path: Path) -> None:
    work = _project(tmp_path)
    (work / "out.txt").write_text("42\n")
    (work / "cache" / "blob.bin").write_bytes(b"rebuilt, and no check reads it")
    (work / "cache" / "more.bin").write_bytes(b"new")
    assert allowed(hook(work)), hook(work)


def test_the_snapshot_holds_an_ignored_file_by_its_stat_key_alone(tmp_path: Path) -> None:
    from groundskeeper.agents.snapshot import changed_since, take_snapshot

    work = _project(tmp_path)
    snapshot = take_snapshot(work)
    assert snapshot.ignored_by_git and snapshot.complete
    assert snapshot.files["data/answer.txt"].startswith("stat:")
    assert snapshot.files["check.py"].startswith("sha256:")
    assert changed_since(work, snapshot.files, ["data/answer.txt"]) == set()
    (work / "data" / "answer.txt").write_text("42\n")  # the same bytes, written again
    assert changed_since(work, snapshot.files, ["data/answer.txt"]) == {"data/answer.txt"}
