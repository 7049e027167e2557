"""The check grammar is faithful where plan authors rely on it: `$(< FILE)` is FILE's content,
and a check block's shared indentation is removed before it runs, as org does."""

from __future__ import annotations

from pathlib import Path

from groundskeeper.plan.org import parse_plan
from tests.test_cli_run import HEAD, keywords, resume, setup, task

ANSWER = (
    'workers:\n  t:\n    - {tool: write_file, input: {path: out.txt, content: "%s\\n"}}\n'
    "    - say: DONE\n"
)
COMPARE = task("T", "t", 'test "$(< out.txt)" = "$(< expected.txt)"')


def test_a_wrong_answer_fails_a_comparison_of_two_files(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, COMPARE, ANSWER % "41")
    (tmp_path / "expected.txt").write_text("42\n")
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    (t,) = doc["tasks"]
    assert t["state"] == "FAILED" and t["reason"].startswith("nonzero_status"), t


def test_the_right_answer_passes_a_comparison_of_two_files(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, COMPARE, ANSWER % "42")
    (tmp_path / "expected.txt").write_text("42\n")
    result, doc = resume(plan, script)
    assert result.exit_code == 0, doc
    assert keywords(plan) == {"t": "DONE"}


def test_a_correct_count_read_with_dollar_paren_lt_passes(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, task("T", "t", 'test "$(< out.txt)" -eq 3'), ANSWER % "3")
    result, doc = resume(plan, script)
    assert result.exit_code == 0, doc


INDENTED = HEAD + (
    "* TODO Write the list\n"
    "  :PROPERTIES:\n  :ID: t\n  :END:\n"
    "  #+begin_src sh :check\n"
    "    diff list.txt - <<EOF\n"
    "    alpha\n"
    "      beta\n"
    "    EOF\n"
    "  #+end_src\n"
)
LIST = (
    'workers:\n  t:\n    - {tool: write_file, input: {path: list.txt, content: "%s"}}\n'
    "    - say: DONE\n"
)


def test_an_indented_here_document_closes_and_an_honest_list_passes(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, "", LIST % "alpha\\n  beta\\n")
    plan.write_text(INDENTED)
    result, doc = resume(plan, script)
    assert result.exit_code == 0, doc
    assert keywords(plan) == {"t": "DONE"}


def test_an_indented_here_document_still_refuses_a_wrong_list(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, "", LIST % "alpha\\nbeta\\n")  # the inner indent kept
    plan.write_text(INDENTED)
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    assert doc["tasks"][0]["state"] == "FAILED"


def test_shared_indentation_goes_tabs_as_columns_and_minus_i_keeps_it() -> None:
    text = HEAD + (
        "* TODO a\n  #+begin_src sh :check\n    one\n\n\t  two\n      three\n  #+end_src\n"
        "* TODO b\n  #+begin_src sh -i :check\n    kept\n  #+end_src\n"
    )
    a, b = parse_plan(text).tasks()
    assert a.check is not None and a.check.text == "one\n\n      two\n  three"
    assert b.check is not None and b.check.text == "    kept"
