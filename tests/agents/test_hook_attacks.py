"""Attacks an agent with a shell makes on the hook itself, each found to work once and then
fixed by class: a test per attack, through the real `groundskeeper hook` command."""

from __future__ import annotations

from pathlib import Path

from groundskeeper.record.keys import create_signing_key
from tests.agents.conftest import call_hook, stop_event

COMPARED = """\
#+TODO: TODO | DONE FAILED
* TODO Compute the answer
  :PROPERTIES:
  :ID: answer
  :done-when: diff out.txt tests/expected.txt
  :END:
"""


def test_an_expected_file_rewritten_to_agree_with_the_work_blocks(tmp_path: Path) -> None:
    # nothing names tests/expected.txt in :protect:; a run protects it anyway, as the file
    # its check compares against, and so does a session
    work = tmp_path / "work"
    (work / "tests").mkdir(parents=True)
    (work / "plan.org").write_text(COMPARED)
    (work / "tests" / "expected.txt").write_text("42\n")
    create_signing_key()
    assert call_hook("claude-code", stop_event(work, hook_event_name="SessionStart")).status == 0
    (work / "out.txt").write_text("7\n")
    (work / "tests" / "expected.txt").write_text("7\n")
    run = call_hook("claude-code", stop_event(work))
    assert "the protected input `tests/expected.txt` was changed" in (run.blocked or ""), run
    # the honest twin: the work made to agree with the file
    (work / "tests" / "expected.txt").write_text("42\n")
    (work / "out.txt").write_text("42\n")
    assert call_hook("claude-code", stop_event(work)).blocked is None
