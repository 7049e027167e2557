"""Adversary-17 F2: the docs' own case-file loop, `python3 solve.py < "$t" | diff - "${t%.in}.out"`
without `set -o pipefail`, is no check that cannot fail (T005): its last stage compares the
program's whole output with a file, so a program that fails having printed nothing, or a
part, still fails the check. A filter that reads a part (`| grep -q passed`) or a comparison
of a part (`cmp -n 2`) stays T005. Through the CLI: lint, then the run, fake beside honest."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from tests.test_cli_run import resume, setup
from tests.test_paths_cli import _row, _write

LOOP = 'for t in cases/*.in; do\n  python3 solve.py < "$t" | diff - "${t%.in}.out"\ndone'


def _plan(root: Path, check: str) -> Path:
    (root / "cases").mkdir()
    for i in (1, 2):
        (root / "cases" / f"c{i}.in").write_text(f"{i}\n")
        (root / "cases" / f"c{i}.out").write_text(f"{3 * i}\n")
    body = "".join(f"  {line}\n" for line in check.splitlines())
    plan, _ = setup(
        root,
        "* TODO Multiply\n  :PROPERTIES:\n  :ID: m\n  :MAX-ATTEMPTS: 1\n  :END:\n"
        "  Write solve.py: it reads a number and prints it times three.\n"
        f"  #+begin_src sh :check\n{body}  #+end_src\n",
        "workers: {}\n",
    )
    return plan


def _lint(plan: Path) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["lint", str(plan)])
    return result.exit_code, result.stdout + result.stderr


@pytest.mark.parametrize(
    "check",
    [
        "python3 -m pytest -q tests | grep -q passed",
        'for t in cases/*.in; do\n  python3 solve.py < "$t" | cmp -n 1 - "${t%.in}.out"\ndone',
    ],
)
def test_a_program_whose_status_a_partial_reading_drops_is_still_t005(
    tmp_path: Path, check: str
) -> None:
    code, out = _lint(_plan(tmp_path, check))
    assert code == 1
    assert "[T005]" in out and "check cannot fail on `python3" in out, out


@pytest.mark.parametrize(
    "check",
    [
        LOOP,
        'for t in cases/*.in; do\n  python3 solve.py < "$t" | cmp "${t%.in}.out"\ndone',
        'for t in cases/*.in; do\n  python3 solve.py < "$t" | diff /dev/stdin "${t%.in}.out"\ndone',
    ],
)
def test_the_case_file_loop_into_diff_is_no_t005(tmp_path: Path, check: str) -> None:
    code, out = _lint(_plan(tmp_path, check))
    assert "T005" not in out, out
    assert code == 0, out


@pytest.mark.parametrize(
    ("solve", "state"),
    [
        ("import sys\\nraise SystemExit(1)", "FAILED"),  # fails, printing nothing
        ("print(int(input()) * 3)", "DONE"),
    ],
)
def test_the_loop_fails_a_failing_program_and_passes_the_honest_one(
    tmp_path: Path, solve: str, state: str
) -> None:
    plan = _plan(tmp_path, LOOP)
    script = tmp_path / "w.yaml"
    script.write_text("workers:\n  m:\n" + _write("solve.py", solve) + "    - say: DONE\n")
    result, doc = resume(plan, script)
    assert _row(doc, "m")["state"] == state, _row(doc, "m")
    assert result.exit_code == (0 if state == "DONE" else 1)
