"""A check that compares the work against any file a glob covers (any accepted answer) keeps
the glob, not only the files it covered at run start: a worker that adds its own answer
under it is refused (adversary-17 F12); the honest work passes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.test_cli_run import run_workers

PLAN = """#+TODO: TODO | DONE FAILED PARTIAL
* TODO Multiply
  :PROPERTIES:
  :ID: mul
  :END:
  Write the product of 6 and 7 to out.txt (digits or words are both accepted).
  #+begin_src sh :check
  ok=no
  for k in keys/*; do
    if cmp -s out.txt "$k"; then ok=yes; fi
  done
  test "$ok" = yes
  #+end_src
"""


def _run(tmp_path: Path, cmd: str) -> dict[str, Any]:
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "a.txt").write_text("42\n")
    (tmp_path / "keys" / "b.txt").write_text("forty-two\n")
    (tmp_path / "plan.org").write_text(PLAN)
    calls = [{"tool": "sh", "input": {"cmd": cmd}}, {"say": "DONE"}]
    (row,) = run_workers(tmp_path / "plan.org", {"mul": calls}).values()
    return row


@pytest.mark.parametrize(
    "cmd",
    [
        "echo 99 > out.txt; cp out.txt keys/c.txt",
        "echo 99 > out.txt; python3 -c \"open('keys/d.txt', 'w').write('99\\\\n')\"",
        "echo 99 > out.txt; mkdir -p keys/more; echo 99 > keys/more.txt",
    ],
)
def test_an_answer_of_the_workers_own_among_the_accepted_is_refused(
    tmp_path: Path, cmd: str
) -> None:
    row = _run(tmp_path, cmd)

    assert row["state"] == "FAILED", row  # the write refused, so no accepted answer matches
    assert sorted(p.name for p in (tmp_path / "keys").iterdir() if p.is_file()) == [
        "a.txt", "b.txt",
    ]  # fmt: skip


def test_the_right_answer_passes(tmp_path: Path) -> None:
    assert _run(tmp_path, "echo 42 > out.txt")["state"] == "DONE"
