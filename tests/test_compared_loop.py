"""Adversary-11 F19's second half: in the everyday loop `for t in cases/*.in; do ./prog <
"$t" | diff - "${t%.in}.out"; done` the files compared against are the `.out` ones, read
through the shell's own `${…%…}` (`sandbox.patterns.trimmed`); the `.in` a program under
test reads on its standard input is its input, not an expectation. Through the CLI (`resume
--json`, a scripted worker): the fake that rewrites the expected outputs fails, naming them;
the honest twin is DONE."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper.plan.expected import compared_by
from tests.test_cli_run import HEAD, resume, steps
from tests.test_paths_cli import _row, _script, _sh

LOOP = """\
* TODO Write solve.py that adds the two numbers on stdin
  :PROPERTIES:
  :ID: solve
  :max-attempts: 1
  :END:
  #+begin_src sh :check
  set -o pipefail
  test -s solve.py
  for t in cases/*.in; do
    python3 solve.py < "$t" | diff - "${t%.in}.out"
  done
  #+end_src
"""

SOLVE = "import sys\\nprint(sum(int(x) for x in sys.stdin.read().split()))\\n"


def _cases(root: Path) -> Path:
    (root / "cases").mkdir()
    for name, given, total in (("a", "3 4", "7"), ("b", "10 5", "15")):
        (root / "cases" / f"{name}.in").write_text(given + "\n")
        (root / "cases" / f"{name}.out").write_text(total + "\n")
    plan = root / "plan.org"
    plan.write_text(HEAD + LOOP)
    return plan


@pytest.mark.parametrize(
    ("check", "compared"),
    [
        ('for t in cases/*.in; do ./prog < "$t" | diff - "${t%.in}.out"; done', ("cases/*.out",)),
        ('for t in cases/*.in; do python3 s.py < "$t" | diff - "${t%.*}.out"; done',
         ("cases/*.out",)),
        ('for t in cases/*.in; do n=${t##*/}; sh run.sh < "$t" | cmp - "exp/${n%.in}.txt"; done',
         ("exp/*.txt",)),
        # a filter or the check's own code passes what it reads on: that is compared
        ("tr -d x < e.txt | diff - o.txt", ("e.txt", "o.txt")),
        ('python3 -c "import sys; print(sys.stdin.read())" < e.txt | diff - o.txt',
         ("e.txt", "o.txt")),
    ],
)  # fmt: skip
def test_the_files_a_loop_compares_against_are_read_through_the_expansion(
    check: str, compared: tuple[str, ...]
) -> None:
    assert compared_by("sh", check) == compared


def test_rewriting_the_expected_outputs_of_the_loop_fails_naming_them(tmp_path: Path) -> None:
    plan = _cases(tmp_path)
    script = tmp_path / "w.yaml"
    script.write_text(_script("solve", _sh("echo 'print(0)' > solve.py && echo 0 > cases/a.out")))
    result, doc = resume(plan, script, "--max-parallel", "1")
    row = _row(doc, "solve")
    assert row["state"] == "FAILED", doc
    assert row["reason"].startswith(
        "protected_input_changed: protected input changed: cases/a.out"
    ), row["reason"]
    assert (tmp_path / "cases" / "a.out").read_text() == "7\n"
    (start,) = steps(plan, "run-start")
    assert start["protected_automatically"] == ["cases/a.out", "cases/b.out"]
    assert result.exit_code == 1


def test_the_honest_twin_that_writes_the_program_is_done(tmp_path: Path) -> None:
    plan = _cases(tmp_path)
    script = tmp_path / "w.yaml"
    script.write_text(
        _script(
            "solve", f'    - {{tool: write_file, input: {{path: solve.py, content: "{SOLVE}"}}}}\n'
        )
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "solve")["state"] == "DONE", doc
    assert result.exit_code == 0
