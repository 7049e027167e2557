"""A task's `:protect:`ed file changed since run start by a worker of another task (adversary-6
F17, F7): by one whose task does not ask to change it, it fails the protecting task naming
that task; by one whose task asks (a sibling regenerating a golden), it re-bases the file."""

from __future__ import annotations

from pathlib import Path

from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _sh, _write

CHECKER = "import sys\nsys.exit(open('out.txt').read().strip() != 'the-answer-42')\n"


def _project(*children: str) -> str:
    return "* TODO Project\n  :PROPERTIES:\n  :ID: p\n  :ORDERED: t\n  :END:\n" + "".join(children)


def test_an_accomplice_sibling_rewriting_a_protected_checker_fails_the_task(
    tmp_path: Path,
) -> None:
    (tmp_path / "check.py").write_text(CHECKER)
    notes = task("Write the notes", "notes", "grep -q plan notes.txt", level=2) + (
        "   Write notes.txt describing the plan.\n"
    )
    ans = task("Compute", "ans", "python3 check.py", level=2, protect="check.py",
               max_attempts="1") + "   Write the answer into out.txt.\n"  # fmt: skip
    script = (
        "workers:\n  notes:\n"
        + _sh("echo the plan > notes.txt; echo 'raise SystemExit(0)' > check.py")
        + "    - say: DONE\n  ans:\n" + _write("out.txt", "no idea") + "    - say: DONE\n"
    )  # fmt: skip
    plan, script_path = setup(tmp_path, _project(notes, ans), script)
    result, doc = resume(plan, script_path, "--max-parallel", "1")
    row = _row(doc, "ans")
    assert row["state"] == "FAILED"
    assert row["reason"] == (
        "protected_input_changed: protected input changed: check.py: changed by the worker of"
        " task notes, whose task does not ask to change it"
    )
    assert _row(doc, "p")["state"] != "DONE"
    assert result.exit_code == 1


def test_a_sibling_asked_to_regenerate_a_protected_golden_rebases_it(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "expected.txt").write_text("old\n")
    (tmp_path / "data.txt").write_text("new\n")
    regen = task("Regenerate", "regen", "grep -qx new tests/expected.txt", level=2) + (
        "   Regenerate tests/expected.txt from data.txt.\n"
    )
    other = task("Answer", "other", "grep -qx 42 out.txt", protect="tests/", max_attempts="1")
    # in parallel: `other` starts before the regeneration and is checked after it
    wait = _sh("python3 -c 'import time; time.sleep(3)'")
    script = (
        "workers:\n  regen:\n" + _sh("cp data.txt tests/expected.txt") + "    - say: DONE\n"
        "  other:\n" + wait + _write("out.txt", "42") + "    - say: DONE\n"
    )
    plan, script_path = setup(tmp_path, other + _project(regen), script)
    result, doc = resume(plan, script_path, "--max-parallel", "2")
    assert _row(doc, "regen")["state"] == "DONE", doc
    assert _row(doc, "other")["state"] == "DONE", doc
    assert result.exit_code == 0


def _failed_answer(tmp_path: Path) -> Path:
    (tmp_path / "check.py").write_text(CHECKER)
    ans = task("Compute", "ans", "python3 check.py", protect="check.py", max_attempts="1")
    script = "workers:\n  ans:\n" + _write("out.txt", "no idea") + "    - say: DONE\n"
    plan, script_path = setup(tmp_path, ans, script)
    _, doc = resume(plan, script_path, "--max-parallel", "1")
    assert _row(doc, "ans")["state"] == "FAILED"
    return plan


def _check_write(plan: Path) -> str:
    from click.testing import CliRunner

    from groundskeeper.cli import main

    result = CliRunner().invoke(main, ["check", str(plan), "--write"])
    return result.output + (result.stderr or "")


def test_check_write_never_promotes_over_a_rewritten_checker(tmp_path: Path) -> None:
    plan = _failed_answer(tmp_path)
    (tmp_path / "check.py").write_text("raise SystemExit(0)\n")  # as F20's accomplice did
    said = _check_write(plan)
    assert "ans: not promoted to DONE: protected input changed since the record sealed it:" \
        " check.py" in said  # fmt: skip
    assert "* FAILED Compute" in plan.read_text()


def test_check_write_promotes_the_honest_fix(tmp_path: Path) -> None:
    plan = _failed_answer(tmp_path)
    (tmp_path / "out.txt").write_text("the-answer-42\n")
    said = _check_write(plan)
    assert "not promoted" not in said
    assert "* DONE Compute" in plan.read_text()


def test_an_accomplice_after_its_victim_failed_is_named_at_the_run_s_end(tmp_path: Path) -> None:
    # adversary-20: `ans` fails on its own first (one task at a time, in the plan's order);
    # then `notes`' worker rewrites check.py, which ans's check runs and no task asks to
    # change. No verdict of the run names it (ans is not judged again), so the run's end
    # does: a warning naming the worker, the file and the task
    (tmp_path / "check.py").write_text(CHECKER)
    ans = task("Compute", "ans", "python3 check.py", protect="check.py",
               max_attempts="1") + "   Write the answer into out.txt.\n"  # fmt: skip
    notes = task("Write the notes", "notes", "grep -q plan notes.txt") + (
        "   Write notes.txt describing the plan.\n"
    )
    script = (
        "workers:\n  ans:\n" + _write("out.txt", "no idea") + "    - say: DONE\n  notes:\n"
        + _sh("echo the plan > notes.txt; echo 'raise SystemExit(0)' > check.py")
        + "    - say: DONE\n"
    )  # fmt: skip
    plan, script_path = setup(tmp_path, ans + notes, script)
    result, doc = resume(plan, script_path, "--max-parallel", "1")
    assert _row(doc, "ans")["state"] == "FAILED"
    assert _row(doc, "notes")["state"] == "DONE"
    named = [d for d in doc["diagnostics"] if d["code"] == "R010"]
    assert [(d["level"], d["message"]) for d in named] == [
        (
            "warning",
            "the worker of task notes changed `check.py`, which task ans's check reads and"
            " which no task asks to change; no verdict of this run was judged on it: ans fails"
            " on it until it is restored, or `resume --accept-changes` takes it as it is",
        )
    ]
    assert result.exit_code == 1


def test_no_accomplice_no_warning(tmp_path: Path) -> None:
    (tmp_path / "check.py").write_text(CHECKER)
    ans = task("Compute", "ans", "python3 check.py", protect="check.py",
               max_attempts="1") + "   Write the answer into out.txt.\n"  # fmt: skip
    notes = task("Write the notes", "notes", "grep -q plan notes.txt")
    script = (
        "workers:\n  ans:\n" + _write("out.txt", "no idea") + "    - say: DONE\n  notes:\n"
        + _sh("echo the plan > notes.txt") + "    - say: DONE\n"
    )  # fmt: skip
    plan, script_path = setup(tmp_path, ans + notes, script)
    _, doc = resume(plan, script_path, "--max-parallel", "1")
    assert _row(doc, "ans")["state"] == "FAILED"
    assert [d for d in doc["diagnostics"] if d["code"] == "R010"] == []
