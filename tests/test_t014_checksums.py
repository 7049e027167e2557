"""Lint T014 on a checksum list a check verifies (`sha256sum -c LIST`, adversary-17 F1's
remainder): the list is an expected file (a run protects it on its own), but nothing in it
can be copied into the work — the warning says what a readable list does give the worker (an
oracle to test guesses against) and, when `:writable:` frees it, that the worker can rewrite
it to match anything. A hidden list, and a list the text asks to refresh, are not warned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main


def _lint(
    tmp_path: Path, props: str = "", text: str = "Write out.txt.", head: str = ""
) -> list[str]:
    (tmp_path / "out.txt").write_text("x\n")
    (tmp_path / "sums.txt").write_text(
        "8a6ddc7a6d4d7d0a5ad0aaa4d0cd8b0e9b3a0f1a54ae34b8f84f3d8a7cca5e0c  out.txt\n"
    )
    drawer = f"  {props}\n" if props else ""
    (tmp_path / "plan.org").write_text(
        f"#+TODO: TODO | DONE FAILED PARTIAL\n{head}* TODO Make out\n  :PROPERTIES:\n"
        f"  :ID: a\n{drawer}  :END:\n  {text}\n  #+begin_src sh :check\n"
        "  sha256sum -c sums.txt\n  #+end_src\n"
    )
    result = CliRunner().invoke(main, ["lint", str(tmp_path / "plan.org"), "--json"])
    doc = json.loads(result.stdout)
    return [d["message"] for d in doc if d["code"] == "T014"]


def test_a_readable_list_is_an_expected_file_to_hide(tmp_path: Path) -> None:
    assert _lint(tmp_path) == [
        "check verifies the checksums listed in `sums.txt`, an expected file the worker can"
        " read — it could test its guesses against them; hide it with `:hide: sums.txt` on the"
        " task (or `#+HIDE: sums.txt` for the file)"
    ]


def test_a_writable_list_is_one_the_worker_can_rewrite(tmp_path: Path) -> None:
    assert _lint(tmp_path, ":writable: sums.txt") == [
        "check verifies the checksums listed in `sums.txt`, which `:writable:` lets the worker"
        " rewrite to match whatever it writes (the check then judges nothing); drop `sums.txt`"
        " from `:writable:` (a run then protects it on its own)"
    ]


@pytest.mark.parametrize(
    ("props", "text", "head"),
    [
        (":hide: sums.txt", "Write out.txt.", ""),
        ("", "Write out.txt.", "#+HIDE: sums.txt\n"),
        ("", "Write out.txt and update sums.txt to match it.", ""),
    ],
)
def test_a_hidden_or_asked_list_is_not_warned(
    tmp_path: Path, props: str, text: str, head: str
) -> None:
    assert _lint(tmp_path, props, text, head) == []


def test_a_compared_file_keeps_its_wording(tmp_path: Path) -> None:
    (tmp_path / "want.txt").write_text("x\n")
    (tmp_path / "plan.org").write_text(
        "#+TODO: TODO | DONE FAILED PARTIAL\n* TODO Make out\n  :PROPERTIES:\n  :ID: a\n"
        "  :END:\n  Write out.txt.\n  #+begin_src sh :check\n  diff out.txt want.txt\n"
        "  #+end_src\n"
    )
    doc = json.loads(
        CliRunner().invoke(main, ["lint", str(tmp_path / "plan.org"), "--json"]).stdout
    )
    assert [d["message"] for d in doc if d["code"] == "T014"] == [
        "check compares against `want.txt`, a file the worker can read — it could copy it;"
        " hide it with `:hide: want.txt` on the task (or `#+HIDE: want.txt` for the file)"
    ]
