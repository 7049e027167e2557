"""Adversary-18 F10: a check that uses a file's text as a PATTERN — a grep regex (`grep -qx
"$(cat out.txt)" key`), the right side of `[[ == ]]` unquoted (a glob), a `case` arm, a
`=~` regex, an awk program or `~` operand — matches `.*` or `*` against any key: lint T037
warns, naming the literal comparison to write (a weak check, as T010's: an author's own key
used as a pattern is no fake); the quoted or `-F` twin is clean. Through the CLI: the run of
the adversary's plan says T037, the honest twin with the fix is DONE."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import parse_plan
from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _write


def found(check: str) -> list[tuple[str, str]]:
    text = f"* TODO t\n:PROPERTIES:\n:done-when: {check}\n:END:\n"
    return [(d.level, d.code) for d in validate(parse_plan(text)) if d.code == "T037"]


AS_PATTERN = [
    'grep -qx "$(cat out.txt)" key/answer.txt',
    'grep -qx "$(< out.txt)" key/answer.txt',
    'grep -q -x -e "$(cat out.txt)" key/answer.txt',
    'A=$(cat out.txt); grep -qx "$A" key/answer.txt',
    "test -s out2.txt && [[ $(cat key/answer.txt) == $(cat out2.txt) ]]",
    '[[ "$(cat key/answer.txt)" == $(cat out2.txt) ]]',
    '[[ "$(cat key/answer.txt)" =~ $(cat out2.txt) ]]',
    'case "$(cat key/answer.txt)" in $(cat out.txt)) true ;; *) false ;; esac',
    'awk "/$(cat out.txt)/ {f=1} END {exit !f}" key/answer.txt',
    "awk -v p=\"$(cat out.txt)\" '$0 ~ p {f=1} END {exit !f}' key/answer.txt",
]
LITERAL = [
    'grep -qxF "$(cat out.txt)" key/answer.txt',
    'test "$(cat out.txt)" = "$(cat key/answer.txt)"',
    '[[ "$(cat key/answer.txt)" == "$(cat out2.txt)" ]]',
    'case "$(cat key/answer.txt)" in "$(cat out.txt)") true ;; *) false ;; esac',
    "grep -qx '4711' out.txt",
    'for w in $(sort -u words.txt); do grep -qx "$w: .*" out.txt; done',
    "awk -v p=\"$(cat out.txt)\" '$0 == p {f=1} END {exit !f}' key/answer.txt",
]


@pytest.mark.parametrize("check", AS_PATTERN)
def test_a_files_text_used_as_a_pattern_is_warned_of(check: str) -> None:
    assert found(check) == [("warning", "T037")]


@pytest.mark.parametrize("check", LITERAL)
def test_a_literal_comparison_is_clean(check: str) -> None:
    assert found(check) == []


def test_the_message_names_the_fix() -> None:
    text = '* TODO t\n:PROPERTIES:\n:done-when: grep -qx "$(cat out.txt)" key/answer.txt\n:END:\n'
    (said,) = [d.message for d in validate(parse_plan(text)) if d.code == "T037"]
    assert "`.*`" in said and "grep -qxF" in said and "the text of a file" in said


PLAN = (
    "#+HIDE: key/\n"
    + task("Sum", "t", "{check}", max_attempts="1")
    + "Write out.txt with the sum of the numbers in nums.txt, one line.\n"
)


def _case(tmp_path: Path, check: str, answer: str) -> tuple[str, dict[str, Any]]:
    (tmp_path / "key").mkdir()
    (tmp_path / "key" / "answer.txt").write_text("4711\n")
    (tmp_path / "nums.txt").write_text("4700\n11\n")
    plan, script = setup(
        tmp_path,
        PLAN.replace("{check}", check),
        "workers:\n  t:\n" + _write("out.txt", answer) + "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    row = _row(doc, "t") if doc["tasks"] else {"state": "refused"}
    return str(result.exit_code), {**row, "codes": [d["code"] for d in doc["diagnostics"]]}


@pytest.mark.parametrize(
    "check",
    ['grep -qx "$(cat out.txt)" key/answer.txt', "[[ $(cat key/answer.txt) == $(cat out.txt) ]]"],
)
def test_the_fakes_pattern_is_warned_of_where_the_run_says_so(tmp_path: Path, check: str) -> None:
    # a weak check, like T010's: its own text accepts the fake, so the run's lint says so
    code, row = _case(tmp_path, check, ".*" if "grep" in check else "*")
    assert "T037" in row["codes"]
    assert (row["state"], code) == ("DONE", "0")


def test_the_honest_twin_with_a_literal_comparison_is_done(tmp_path: Path) -> None:
    code, row = _case(tmp_path, 'grep -qxF "$(cat out.txt)" key/answer.txt', "4711")
    assert (row["state"], code) == ("DONE", "0")
