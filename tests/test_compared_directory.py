"""A directory a check compares the work against (any accepted answer under it) is kept as a
pattern over every file there, as a compared glob is (adversary-17 F12, its directory form):
`grep -rqxF "$(cat out.txt)" accepted`, `diff -r`, `cat DIR/* |`, an `ls DIR`/`find DIR`
driven loop. A worker that adds its own answer there is refused; the right answer passes, and
a directory the text asks the worker to write into stays the work's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main

CHECKS = {
    "grep -r": 'grep -rqxF "$(cat out.txt)" accepted',
    "grep -r dir/": 'grep -rqxF "$(cat out.txt)" accepted/',
    "cat | grep": 'cat accepted/* | grep -qxF "$(cat out.txt)"',
    "ls loop": (
        "ok=no\n  for k in $(ls accepted); do\n    if cmp -s out.txt accepted/$k; then ok=yes;"
        ' fi\n  done\n  test "$ok" = yes'
    ),
    "find | while read": (
        'find accepted -type f | while read -r k; do\n    cmp -s out.txt "$k" && echo hit\n'
        "  done | grep -q hit"
    ),
}


def _plan(check: str, text: str) -> str:
    return (
        "#+TODO: TODO | DONE FAILED PARTIAL\n* TODO Multiply\n  :PROPERTIES:\n  :ID: mul\n"
        f"  :max-attempts: 1\n  :END:\n  {text}\n  #+begin_src sh :check\n  {check}\n"
        "  #+end_src\n"
    )


def _run(tmp_path: Path, check: str, cmd: str, text: str = "") -> dict[str, object]:
    (tmp_path / "accepted").mkdir()
    (tmp_path / "accepted" / "a.txt").write_text("42\n")
    (tmp_path / "accepted" / "b.txt").write_text("forty-two\n")
    text = text or "Write the product of 6 and 7 to out.txt (digits or words are both accepted)."
    (tmp_path / "plan.org").write_text(_plan(check, text))
    calls = [{"tool": "sh", "input": {"cmd": cmd}}, {"say": "DONE"}]
    (tmp_path / "w.yaml").write_text(json.dumps({"workers": {"mul": calls}}))
    args = ["resume", str(tmp_path / "plan.org"), "--model", f"scripted:{tmp_path / 'w.yaml'}",
            "--json"]  # fmt: skip
    doc = json.loads(CliRunner().invoke(main, args).stdout)
    (row,) = doc["tasks"]
    return dict(row)


@pytest.mark.parametrize("check", sorted(CHECKS))
@pytest.mark.parametrize(
    "cmd",
    [
        "echo 99 > out.txt; cp out.txt accepted/c.txt",
        "echo 99 > out.txt; mkdir -p accepted/more; echo 99 > accepted/more/c.txt",
    ],
)
def test_an_answer_of_the_workers_own_in_the_accepted_directory_is_refused(
    tmp_path: Path, check: str, cmd: str
) -> None:
    row = _run(tmp_path, CHECKS[check], cmd)

    assert row["state"] == "FAILED", row
    assert sorted(p.name for p in (tmp_path / "accepted").rglob("*") if p.is_file()) == [
        "a.txt", "b.txt",
    ]  # fmt: skip


@pytest.mark.parametrize("check", sorted(CHECKS))
def test_the_right_answer_passes(tmp_path: Path, check: str) -> None:
    row = _run(tmp_path, CHECKS[check], "echo 42 > out.txt")
    assert row["state"] == "DONE", row["reason"]


def test_a_directory_the_text_asks_to_write_into_is_the_works(tmp_path: Path) -> None:
    row = _run(
        tmp_path,
        CHECKS["grep -r"],
        "echo 42 > out.txt; cp out.txt accepted/c.txt",
        "Write the product of 6 and 7 to out.txt, and add it to accepted/ as c.txt.",
    )
    assert row["state"] == "DONE", row["reason"]
    assert (tmp_path / "accepted" / "c.txt").read_text() == "42\n"
