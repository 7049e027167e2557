"""A file a check's own shell reads through a `<` redirect into a builtin (`read n < f`,
`while read … done < f`) is an input of the check: the sandbox lists it among the files the
run read (the check backstop's `CheckResult.read`), and the static reading takes what `read`
reads as compared (an expected value), so it is protected like `$(cat f)`. The fake that
rewrites the expectation fails; the honest work passes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.acceptance.check import SealedCheck, run_check
from groundskeeper.cli import main
from groundskeeper.plan.compared import compared_files
from groundskeeper.sandbox import parse


@pytest.mark.parametrize(
    "check",
    [
        'read n < data/in.txt; test "$n" = 3',
        'while read -r l; do test "$l" = 3; done < data/in.txt',
        'read n <data/in.txt && [ "$n" -eq 3 ]',
    ],
)
def test_the_shells_own_redirect_is_in_the_files_read(tmp_path: Path, check: str) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "in.txt").write_text("3\n")
    result = run_check(SealedCheck(check, "sh", 1, "test"), tmp_path)
    assert result.passed, result.reason
    assert result.read == ("data/in.txt",)


@pytest.mark.parametrize(
    ("check", "compared"),
    [
        ('read want < expected.txt; test "$(cat out.txt)" = "$want"', ["out.txt", "expected.txt"]),
        ('read -r want < keys/a.txt\n[ "$want" = "$(cat out.txt)" ]', ["keys/a.txt", "out.txt"]),
        ("read n < data/in.txt", ["data/in.txt"]),
    ],
)
def test_what_read_reads_is_compared(check: str, compared: list[str]) -> None:
    assert set(compared_files(parse(check))) == set(compared)


CHECK = 'read want < expected.txt\n  test "$(cat out.txt)" = "$want"'


def _run(tmp_path: Path, cmd: str) -> dict[str, object]:
    (tmp_path / "expected.txt").write_text("42\n")
    (tmp_path / "plan.org").write_text(
        "#+TODO: TODO | DONE FAILED PARTIAL\n* TODO Multiply\n  :PROPERTIES:\n  :ID: mul\n"
        "  :max-attempts: 1\n  :END:\n  Write the product of 6 and 7 to out.txt.\n"
        f"  #+begin_src sh :check\n  {CHECK}\n  #+end_src\n"
    )
    calls = [{"tool": "sh", "input": {"cmd": cmd}}, {"say": "DONE"}]
    (tmp_path / "w.yaml").write_text(json.dumps({"workers": {"mul": calls}}))
    args = ["resume", str(tmp_path / "plan.org"), "--model", f"scripted:{tmp_path / 'w.yaml'}",
            "--json"]  # fmt: skip
    doc = json.loads(CliRunner().invoke(main, args).stdout)
    (row,) = doc["tasks"]
    return dict(row)


def test_the_expectation_read_by_read_rewritten_fails(tmp_path: Path) -> None:
    row = _run(tmp_path, "echo 99 > out.txt; echo 99 > expected.txt")
    assert row["state"] == "FAILED", row
    assert str(row["reason"]).startswith(
        "protected_input_changed: protected input changed: expected.txt: the worker tried to"
        " change it, and the sandbox refused"
    ), row["reason"]
    assert (tmp_path / "expected.txt").read_text() == "42\n"


def test_the_right_answer_passes(tmp_path: Path) -> None:
    row = _run(tmp_path, "echo 42 > out.txt")
    assert row["state"] == "DONE", row["reason"]
