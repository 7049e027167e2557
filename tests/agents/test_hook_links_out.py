"""adv24 H3: a symbolic link of the workdir that leads out of it is named at `agent setup`.
The sandbox sees the workdir only, so a check reading through such a link fails at every stop
("Capabilities insufficient"), and the agent is told to do work it has done; the user hears of
it before the session, not from a loop of blocks. A link that stays inside is not named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PLAN = """\
* TODO Compute the total
  :PROPERTIES:
  :ID: total
  :done-when: test "$(cat total.txt)" = "$(awk '{s+=$1} END {print s}' data/numbers.txt)"
  :END:
  Write the sum of the numbers in data/numbers.txt into total.txt.
"""


def _setup(work: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "groundskeeper", "agent", "setup", "claude-code", "--plan",
         "plan.org"],
        cwd=work, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_a_link_out_of_the_workdir_is_named_at_setup(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "numbers.txt").write_text("5\n7\n")
    work = tmp_path / "work"
    work.mkdir()
    (work / "plan.org").write_text(PLAN)
    (work / "data").symlink_to(shared)
    (work / "inside").symlink_to("plan.org")
    done = _setup(work)
    assert done.returncode == 0, done.stderr
    assert (
        f"note: `data` (to {shared}): a symbolic link out of the workdir, which the sandbox"
        " does not follow" in done.stderr
    ), done.stderr
    assert "`inside`" not in done.stderr


def test_no_link_out_no_note(tmp_path: Path) -> None:
    work = tmp_path / "work"
    (work / "data").mkdir(parents=True)
    (work / "data" / "numbers.txt").write_text("5\n7\n")
    (work / "plan.org").write_text(PLAN)
    (work / "inside").symlink_to("data")
    done = _setup(work)
    assert done.returncode == 0, done.stderr
    assert "a symbolic link out of the workdir" not in done.stderr
