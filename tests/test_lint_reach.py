"""Issue 23: a check that can never pass is refused before the run, by class — an option or
value the sandbox's command does not have (read from the sandbox's own option table, which
a test holds equal to the binary), named with the fix — while the honest spellings pass, and
`/dev/null` is an operand every command reads, as in bash."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import parse_plan
from tests.test_cli_run import resume, setup, task


def _t012(check: str) -> list[str]:
    text = f"* TODO t\n:PROPERTIES:\n:done-when: {check}\n:END:\n"
    return [d.message for d in validate(parse_plan(text)) if d.code == "T012"]


@pytest.mark.parametrize(
    ("check", "named", "fix"),
    [
        ("diff -r out gold", "`diff -r`", "-q -u -s -U ARG"),
        ("diff -ru out gold", "`diff -r`", "-q -u -s -U ARG"),
        ("diff --recursive out gold", "`diff --recursive`", "-q -u -s -U ARG"),
        ("test $(date -d yesterday +%s) -lt 5", "`date -d yesterday`", "date -r FILE"),
        ("find . -size +1k | grep -q .", "`find -size`", "-name"),
        ("find . -mmin -5 | grep -q .", "`find -mmin`", "-newer"),
        ("find . -mtime 0 | grep -q .", "`find -mtime`", "-newer"),
        ("grep -qf pats.txt out.txt", "`grep -f`", "-e ARG"),
        ("cmp -i 3 a b", "`cmp -i`", "-n ARG"),
        ("cd out && sort -V list | head -1", "`sort -V`", "-k ARG"),
        ("grep -P 'a+' f", "`grep -P`", "use -E"),
    ],
)
def test_an_option_the_sandbox_lacks_is_an_error_naming_it_and_the_fix(
    check: str, named: str, fix: str
) -> None:
    (message,) = _t012(check)
    assert f"check uses {named}, which the sandbox does not support" in message
    assert fix in message


@pytest.mark.parametrize(
    "check",
    [
        "diff -u out.txt expected.txt",
        "diff -U3 out.txt expected.txt",
        "cmp -s -n 10 a b",
        "cmp --silent a b",
        "head -5 f | grep -q x",
        "tail -n +2 f | grep -q x",
        "grep -qE 'a|b' f",
        "grep -c -e x -e y f",
        "sort -k2 -t, f | head -1",
        "sed -n 1p f | grep -q x",
        "find . -name '*.py' -newer stamp | grep -q .",
        "find . -type f -maxdepth 2 -exec grep -q x {} +",
        "test $(date -d @0 +%s) -eq 0",
        "cut -d, -f1 f | grep -q x",
        "seq -5 5 | grep -q 0",
        "diff /dev/null errors.txt",
        "wc -l --lines f",
        "date -u -r f +%s",
    ],
)
def test_the_options_the_sandbox_has_pass(check: str) -> None:
    assert _t012(check) == []


def test_dev_null_is_an_operand_every_command_reads(tmp_path: Path) -> None:
    # an honest "must be empty" check: DONE when the file is empty, FAILED when it is not
    plan, script = setup(
        tmp_path,
        task("No errors", "ok", "diff /dev/null errors.txt", max_attempts="1")
        + task("Some errors", "bad", "cmp -s /dev/null warnings.txt", max_attempts="1"),
        "workers:\n  ok:\n    - {tool: write_file, input: {path: errors.txt, content: ''}}\n"
        "    - say: DONE\n"
        "  bad:\n    - {tool: write_file, input: {path: warnings.txt, content: 'w'}}\n"
        "    - say: DONE\n",
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    rows = {r["id"]: r for r in doc["tasks"]}
    assert rows["ok"]["state"] == "DONE", rows["ok"]
    assert rows["bad"]["state"] == "FAILED"
    assert rows["bad"]["reason"].startswith("nonzero_status: check line 1: `cmp -s /dev/null")
    assert result.exit_code == 1
