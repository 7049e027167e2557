"""Checks that look strict but are not get a diagnostic before any work (`groundskeeper lint`):
a failure errexit ignores on the left of `&&` (T021), `find -exec … \\;` (T022), a `:check`
block that never runs (T023), a write in a read-only check (T024) — each beside the honest
spelling that draws nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from tests.test_cli_run import HEAD, keywords, resume, setup

OURS = {"T021", "T022", "T023", "T024", "T026"}


def _block(*lines: str, extra: str = "") -> str:
    body = "".join(f"  {line}\n" for line in lines)
    return (
        f"* TODO t\n  :PROPERTIES:\n  :ID: t\n{extra}  :END:\n"
        f"  #+begin_src sh :check\n{body}  #+end_src\n"
    )


def _lint(tmp_path: Path, body: str) -> list[tuple[str, str, int]]:
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD + body)
    result = CliRunner().invoke(main, ["lint", str(plan), "--json"])
    assert result.exit_code in (0, 1), result.output
    return [(d["code"], d["level"], d["line"]) for d in json.loads(result.stdout)
            if d["code"] in OURS]  # fmt: skip


def test_a_failure_on_the_left_of_and_and_on_a_line_not_the_last_is_warned(
    tmp_path: Path,
) -> None:
    assert _lint(tmp_path, _block("grep -q a f.txt && grep -q b f.txt", "test -s f.txt")) == [
        ("T021", "warning", 7)
    ]


@pytest.mark.parametrize(
    "lines",
    [("grep -q a f.txt", "grep -q b f.txt", "test -s f.txt"),  # each on its own line
     ("test -s f.txt", "grep -q a f.txt && grep -q b f.txt"),  # the last line: its status counts
     ("grep -q a f.txt || grep -q b f.txt", "test -s f.txt")],  # `||`: the fallback is meant
)  # fmt: skip
def test_the_honest_spellings_draw_no_t021(tmp_path: Path, lines: tuple[str, ...]) -> None:
    assert _lint(tmp_path, _block(*lines)) == []


def test_the_ignored_failure_really_passes_at_runtime(tmp_path: Path) -> None:
    """What T021 warns of: the first grep fails, and the check still passes."""
    plan, script = setup(tmp_path, "", "workers:\n  t: [{say: DONE}]\n")
    plan.write_text(HEAD + _block("grep -q missing f.txt && grep -q b f.txt", "test -s f.txt"))
    (tmp_path / "f.txt").write_text("b\n")
    _, doc = resume(plan, script)
    assert keywords(plan) == {"t": "DONE"}
    assert [d["code"] for d in doc["diagnostics"] if d["code"] in OURS] == ["T021"]


def test_find_exec_with_a_semicolon_is_warned_and_plus_or_xargs_is_not(tmp_path: Path) -> None:
    assert _lint(tmp_path, _block("find . -name '*.json' -exec jq -e .ok {} \\;")) == [
        ("T022", "warning", 7)
    ]
    assert _lint(tmp_path, _block("find . -name '*.json' -exec jq -e .ok {} +")) == []
    assert _lint(tmp_path, _block("find . -name '*.json' | xargs jq -e .ok")) == []


def test_a_second_check_block_is_an_error_and_one_block_is_not(tmp_path: Path) -> None:
    two = _block("grep -q a f.txt") + "  #+begin_src sh :check\n  grep -q b f.txt\n  #+end_src\n"
    assert _lint(tmp_path, two) == [("T023", "error", 9)]
    assert _lint(tmp_path, _block("grep -q a f.txt", "grep -q b f.txt")) == []


def test_a_check_block_under_done_when_is_an_error(tmp_path: Path) -> None:
    body = _block("grep -q b f.txt", extra="  :done-when: grep -q a f.txt\n")
    assert _lint(tmp_path, body) == [("T023", "error", 7)]


def test_a_check_that_writes_is_an_error_and_a_pipe_is_not(tmp_path: Path) -> None:
    assert _lint(tmp_path, _block("jq .ok out.json > seen.txt", "grep -q true seen.txt")) == [
        ("T024", "error", 7)
    ]
    assert _lint(tmp_path, _block("jq .ok out.json | tee seen.txt | grep -q true")) == [
        ("T024", "error", 7)
    ]
    assert _lint(tmp_path, _block("jq .ok out.json | grep -q true 2>/dev/null")) == []


def test_a_negated_command_on_a_line_not_the_last_is_an_error(tmp_path: Path) -> None:
    # bash's errexit ignores a `!` pipeline's status: `! grep -q ERROR log` there never fails
    assert _lint(tmp_path, _block("! grep -q ERROR log.txt", "test -s log.txt")) == [
        ("T026", "error", 7)
    ]


@pytest.mark.parametrize(
    "lines",
    [("! grep -q ERROR log.txt || exit 1", "test -s log.txt"),  # fails at its line
     ("test -s log.txt", "! grep -q ERROR log.txt"),  # the last line: its status counts
     ("if grep -q ERROR log.txt; then exit 1; fi", "test -s log.txt")],
)  # fmt: skip
def test_the_honest_spellings_draw_no_t026(tmp_path: Path, lines: tuple[str, ...]) -> None:
    assert _lint(tmp_path, _block(*lines)) == []


def test_the_spelling_t026_suggests_fails_at_runtime(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, "", "workers:\n  t: [{say: DONE}]\n")
    plan.write_text(HEAD + _block("! grep -q ERROR log.txt || exit 1", "test -s log.txt"))
    (tmp_path / "log.txt").write_text("ERROR: disk\n")
    _, doc = resume(plan, script)
    assert keywords(plan) == {"t": "FAILED"}
    assert "check line 1" in doc["tasks"][0]["reason"]
