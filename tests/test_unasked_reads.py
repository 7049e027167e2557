"""Lint T031 (adversary-11 H1, adversary-12 F6): a check that reads an existing file its task
seems to be about, or only existing files no task asks to change, is said before the run,
pointing to `:writable:`; a task that asks, or a mention of a source, is not."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper.path_patterns import naming
from groundskeeper.plan.lint_properties import protection_diagnostics
from groundskeeper.plan.org import load_plan
from groundskeeper.plan.spec import compile_plan


def _t031(tmp_path: Path, title: str, check: str, text: str = "") -> list[str]:
    (tmp_path / "app.cfg").write_text("port = 80\n")
    (tmp_path / "notes.md").write_text("a  \n")
    (tmp_path / "data.txt").write_text("1\n2\n")
    plan = tmp_path / "plan.org"
    plan.write_text(
        f"* TODO {title}\n  :PROPERTIES:\n  :ID: t\n  :done-when: {check}\n  :END:\n  {text}\n"
    )
    found = protection_diagnostics(compile_plan(load_plan(plan)))
    return [d.message for d in found if d.code == "T031"]


@pytest.mark.parametrize(
    ("title", "check", "text", "name"),
    [
        ("Change the port", "grep -q '^port = 8080$' app.cfg",
         "Set the listening port of the service to 8080 (it is 80 now).", "app.cfg"),
        ("Frobnicate notes.md", "grep -q x notes.md", "", "notes.md"),
        ("Look at the notes", "grep -q x notes.md", "notes.md is outdated.", "notes.md"),
        # adversary-14 F6: the stem alone does not free a file read beside the file the text
        # asks for by full name; lint says so rather than leave the worker to find out
        ("Update the data, then write the total to out.txt",
         "test \"$(cat out.txt)\" = 3 && grep -q 2 data.txt", "", "data.txt"),
    ],
)  # fmt: skip
def test_a_check_reading_a_file_the_text_does_not_ask_for_is_warned(
    tmp_path: Path, title: str, check: str, text: str, name: str
) -> None:
    found = _t031(tmp_path, title, check, text)
    assert len(found) == 1, found
    assert f"reads `{name}`" in found[0] and f"`:writable: {naming(name)}`" in found[0]


@pytest.mark.parametrize(
    ("title", "check", "text"),
    [
        ("Strip trailing whitespace from notes.md", "! grep -q ' $' notes.md", ""),
        ("Set the port", "grep -q '^port = 8080$' app.cfg", "Set the port to 8080 in app.cfg."),
        ("Sum", 'test "$(cat total.txt)" = 3 && test -s data.txt',
         "Write total.txt with the sum of the numbers in data.txt."),
    ],
)  # fmt: skip
def test_an_asked_file_or_a_source_is_not_warned(
    tmp_path: Path, title: str, check: str, text: str
) -> None:
    assert _t031(tmp_path, title, check, text) == []
