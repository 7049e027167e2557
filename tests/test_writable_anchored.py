"""Adversary-17 F14: `:writable: expected.txt` (a name without `/`) matches at any depth, so
the sibling it frees may rewrite another task's `tests/expected.txt`. The run's advice names
one file by an anchored pattern (`/expected.txt`), lint warns of a `:writable:` that covers
another task's compared file (T035), and the anchored pattern keeps the other key
protected. Through the CLI, the fake beside its honest twin."""

from __future__ import annotations

from pathlib import Path

from groundskeeper.path_patterns import naming
from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import load_plan
from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _sh

REGEN_CHECK = "set -o pipefail; python3 gen.py | diff - expected.txt"
MUL = task("Multiply", "mul", "diff out.txt tests/expected.txt", level=2, max_attempts="1")
WORK = "* TODO Work\n  :PROPERTIES:\n  :ID: work\n  :ORDERED: t\n  :END:\n"
SCRIPT = (
    "workers:\n  regen:\n" + _sh("python3 gen.py > expected.txt; echo 99 > tests/expected.txt")
    + "    - say: DONE\n  mul:\n" + _sh("echo 99 > out.txt") + "    - say: DONE\n"
)  # fmt: skip


def _plan(root: Path, writable: str) -> tuple[Path, Path]:
    (root / "gen.py").write_text("print(6)\n")
    (root / "expected.txt").write_text("5\n")
    (root / "tests").mkdir()
    (root / "tests" / "expected.txt").write_text("42\n")
    regen = task("Regenerate expected.txt", "regen", REGEN_CHECK, level=2, max_attempts="1",
                 writable=writable)  # fmt: skip
    text = "   Regenerate expected.txt with python3 gen.py.\n"
    return setup(root, WORK + regen + text + MUL + "   Write 6 times 7 to out.txt.\n", SCRIPT)


def test_naming_anchors_a_name_without_a_slash_only() -> None:
    assert naming("expected.txt") == "/expected.txt"
    assert naming("tests/expected.txt") == "tests/expected.txt"


def test_a_writable_covering_another_tasks_key_is_warned_and_rewrites_it(tmp_path: Path) -> None:
    plan, _script = _plan(tmp_path, "expected.txt")
    (found,) = [d.message for d in validate(load_plan(plan)) if d.code == "T035"]
    assert found.startswith(
        "`:writable: expected.txt` on task regen covers `tests/expected.txt`, which the check"
        " of task mul compares against"
    ), found
    assert "`:writable: /expected.txt`" in found


def test_the_anchored_writable_frees_only_the_top_level_file(tmp_path: Path) -> None:
    plan, script = _plan(tmp_path, "/expected.txt")
    assert [d for d in validate(load_plan(plan)) if d.code == "T035"] == []
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert (tmp_path / "tests" / "expected.txt").read_text() == "42\n"
    assert "tests/expected.txt: the worker tried to change it" in str(_row(doc, "regen")["reason"])
    assert _row(doc, "mul")["state"] != "DONE"
    advice = [d["message"] for d in doc["diagnostics"] if d["code"] == "F002"]
    assert any("add `:writable: /gen.py` to that task" in m for m in advice), advice
    assert result.exit_code == 1


def test_the_honest_twin_regenerates_its_file_and_the_sibling_is_done(tmp_path: Path) -> None:
    plan, _ = _plan(tmp_path, "/expected.txt")
    honest = (
        "workers:\n  regen:\n" + _sh("python3 gen.py > expected.txt") + "    - say: DONE\n"
        "  mul:\n" + _sh("echo $((6*7)) > out.txt") + "    - say: DONE\n"
    )
    script = tmp_path / "honest.yaml"
    script.write_text(honest)
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert [_row(doc, t)["state"] for t in ("regen", "mul", "work")] == ["DONE"] * 3, doc
    assert (tmp_path / "expected.txt").read_text() == "6\n"
    assert result.exit_code == 0
