"""A file there at run start on a check's side that a worker removed or renamed fails the task
in a plan run, named 'input gone' (`RunPaths.inputs_read` → `check_inputs.inputs_gone`, the
hook's rule): a case file a check program loops over, a failing test a sibling's worker
deleted or renamed out of collection (adversary-14 F4) — unless a task's text asks to remove
it or `:writable:` covers it; a worker's own temporary file is its to remove."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _sh

CHECKER = (
    "import os, sys\n"
    'bad = [n for n in sorted(os.listdir("cases")) if not os.path.exists("outputs/" + n)'
    ' or open("outputs/" + n).read() != open("cases/" + n).read()]\n'
    "sys.exit(1 if bad else 0)\n"
)

GONE = "protected_input_changed: input gone: `{}` ({}) was there before the work, which the worker"


def _cases(root: Path) -> None:
    (root / "cases").mkdir()
    (root / "outputs").mkdir()
    for name in "abc":
        (root / "cases" / f"{name}.txt").write_text(name + "\n")
    (root / "check.py").write_text(CHECKER)


def _outs(root: Path, cmd: str, **props: str) -> dict[str, object]:
    _cases(root)
    plan, script = setup(
        root,
        task("Produce the outputs", "outs", "python3 check.py", max_attempts="1", **props)
        + "Produce a file in outputs/ for every case in cases/.\n",
        "workers:\n  outs:\n" + _sh(cmd) + "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    assert result.exit_code == (0 if _row(doc, "outs")["state"] == "DONE" else 1)
    return doc


@pytest.mark.parametrize(
    "cmd",
    [
        "cp cases/a.txt cases/c.txt outputs/; rm cases/b.txt",
        "cp cases/a.txt cases/c.txt outputs/; mv cases/b.txt b.txt.bak",
        "cp cases/a.txt cases/c.txt outputs/; mv cases/b.txt outputs/b.txt",
    ],
)
def test_a_case_file_the_checker_loops_over_removed_fails(tmp_path: Path, cmd: str) -> None:
    row = _row(_outs(tmp_path, cmd), "outs")  # type: ignore[arg-type]
    assert row["state"] == "FAILED", row
    assert str(row["reason"]).startswith(
        GONE.format("cases/b.txt", "in `cases/`, a folder the check read its data from")
    ), row["reason"]
    assert "which the worker of task `outs` removed" in str(row["reason"])
    assert "add `:writable: cases/b.txt` to the task that removes it" in str(row["reason"])


def test_the_workers_own_temporary_file_is_its_to_remove(tmp_path: Path) -> None:
    cmd = "echo x > cases/tmp.txt; cp cases/*.txt outputs/; rm cases/tmp.txt outputs/tmp.txt"
    row = _row(_outs(tmp_path, cmd), "outs")  # type: ignore[arg-type]
    assert row["state"] == "DONE", row["reason"]


def test_a_writable_case_file_may_be_removed(tmp_path: Path) -> None:
    cmd = "cp cases/a.txt cases/c.txt outputs/; rm cases/b.txt"
    row = _row(_outs(tmp_path, cmd, writable="cases/b.txt"), "outs")  # type: ignore[arg-type]
    assert row["state"] == "DONE", row["reason"]


TEST_ADD = "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
TEST_MUL = "from calc import mul\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
FIXED_ADD = "def add(a, b):\\n    return a + b\\n\\ndef mul(a, b):\\n    return 0\\n"


def _calc(
    root: Path, text: str, cmd: str, *extra: str, fix: str = f"printf '{FIXED_ADD}' > calc.py"
) -> dict[str, object]:
    """A pair run one at a time: a first task whose worker runs `cmd`, then `calc`, whose
    plain pytest check runs tests/ (test_mul.py fails: mul is not fixed) and whose worker
    runs `fix`. `extra`: the run's options."""
    (root / "calc.py").write_text("def add(a, b):\n    return 0\n\ndef mul(a, b):\n    return 0\n")
    (root / "tests").mkdir()
    (root / "tests" / "test_add.py").write_text(TEST_ADD)
    (root / "tests" / "test_mul.py").write_text(TEST_MUL)
    children = (
        "** TODO Tidy\n   :PROPERTIES:\n   :ID: tidy\n   :done-when: test -s notes.md\n"
        f"   :END:\n   {text}\n"
        "** TODO Implement add\n   :PROPERTIES:\n   :ID: calc\n   :max-attempts: 1\n"
        "   :done-when: python3 -m pytest -q tests\n   :END:\n"
        "   Implement add in calc.py so the tests pass.\n"
    )
    plan, script = setup(
        root,
        "* TODO Both\n" + children,
        "workers:\n  tidy:\n" + _sh(cmd + "; echo ok > notes.md") + "    - say: DONE\n"
        "  calc:\n" + _sh(fix) + "    - say: DONE\n",
    )
    _result, doc = resume(plan, script, "--max-parallel", "1", *extra)
    return doc


@pytest.mark.parametrize(
    "cmd", ["rm tests/test_mul.py", "mv tests/test_mul.py tests/mul_disabled.py"]
)
def test_a_failing_test_a_sibling_removed_fails(tmp_path: Path, cmd: str) -> None:
    doc = _calc(tmp_path, "Write notes.md with a line about the project.", cmd)
    row = _row(doc, "calc")  # type: ignore[arg-type]
    assert row["state"] == "FAILED", row
    assert str(row["reason"]).startswith(
        GONE.format("tests/test_mul.py", "under the check's test path `tests`")
        + " of task `tidy` removed (or renamed, or made unreadable)"
    ), row["reason"]
    # the remover's task is judged on its own check, which never ran that test
    assert _row(doc, "tidy")["state"] == "DONE", _row(doc, "tidy")  # type: ignore[arg-type]


def test_a_test_file_is_a_checks_input_only_where_it_collects_it(tmp_path: Path) -> None:
    """The remover's own check runs pytest on another path: the removed test is no file it
    collects, so it is judged on its own tests (and a helper-named module still counts)."""
    from groundskeeper.acceptance.check_inputs import gone_side
    from groundskeeper.plan.org import load_plan
    from groundskeeper.plan.spec import compile_plan

    plan = tmp_path / "plan.org"
    plan.write_text(
        "* TODO Own\n  :PROPERTIES:\n  :ID: own\n"
        "  :done-when: python3 -m pytest -q tests/test_add.py\n  :END:\n  Fix add.\n"
        "* TODO Notes\n  :PROPERTIES:\n  :ID: notes\n  :done-when: test -s notes.md\n"
        "  :END:\n  Write notes.md.\n"
    )
    own, notes = compile_plan(load_plan(plan))
    assert gone_side(own, "tests/test_mul.py") is None
    assert gone_side(own, "tests/test_add.py") == "under the check's test path `tests/test_add.py`"
    assert gone_side(own, "testkit.py") == "a module named as the tests' helper or data"
    assert gone_side(notes, "testkit.py") is None  # a check that runs no Python imports none


def test_a_test_the_text_asks_to_remove_may_go(tmp_path: Path) -> None:
    doc = _calc(
        tmp_path,
        "Remove the obsolete tests/test_mul.py and write notes.md saying so.",
        "rm tests/test_mul.py",
    )
    assert _row(doc, "calc")["state"] == "DONE", _row(doc, "calc")  # type: ignore[arg-type]
    assert _row(doc, "tidy")["state"] == "DONE", _row(doc, "tidy")  # type: ignore[arg-type]


# -- carried: a removal by an earlier run's worker (issue 28) -------------------------------

FIRST_RUNS = {
    # the run ends with `calc` left TODO: only tidy's attempt started
    "calc left TODO": (("--max-total-attempts", "1"), "true"),
    # `calc` FAILED on its own check (add not fixed yet), tidy's removal beside it
    "calc FAILED": ((), "true"),
}


def _resumed(root: Path, text: str, first: str) -> tuple[dict[str, object], dict[str, object]]:
    """Run 1 as `FIRST_RUNS[first]` says (tidy's worker removes tests/test_mul.py); then a
    resume in which `calc`'s worker fixes add, so its check passes on what is left."""
    extra, fix = FIRST_RUNS[first]
    doc1 = _calc(root, text, "rm tests/test_mul.py", *extra, fix=fix)
    assert not (root / "tests" / "test_mul.py").exists()
    script = root / "workers.yaml"
    script.write_text(
        "workers:\n  tidy:\n    - say: DONE\n"
        "  calc:\n" + _sh(f"printf '{FIXED_ADD}' > calc.py") + "    - say: DONE\n"
    )
    _result, doc = resume(root / "plan.org", script, "--max-parallel", "1")
    return doc1, doc


@pytest.mark.parametrize("first", sorted(FIRST_RUNS))
def test_a_removal_by_an_earlier_runs_worker_is_carried(tmp_path: Path, first: str) -> None:
    doc1, doc = _resumed(tmp_path, "Write notes.md with a line about the project.", first)
    assert _row(doc1, "calc")["state"] == ("TODO" if "TODO" in first else "FAILED")  # type: ignore[arg-type]
    row = _row(doc, "calc")  # type: ignore[arg-type]
    assert row["state"] == "FAILED", row
    assert str(row["reason"]).startswith(
        GONE.format("tests/test_mul.py", "under the check's test path `tests`")
        + " of task `tidy` removed in an earlier run of the plan"
    ), row["reason"]


@pytest.mark.parametrize("first", sorted(FIRST_RUNS))
def test_a_removal_the_text_asks_for_stays_allowed_across_runs(tmp_path: Path, first: str) -> None:
    _doc1, doc = _resumed(
        tmp_path, "Remove the obsolete tests/test_mul.py and write notes.md saying so.", first
    )
    assert _row(doc, "calc")["state"] == "DONE", _row(doc, "calc")  # type: ignore[arg-type]
