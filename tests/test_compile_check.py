"""Issue 23 (adversary round 3, F12): "it compiles" is an honest check. `python3 -m py_compile`
and `python3 -m compileall` pass when the code compiles and fail naming the line when it does
not, while a check stays read-only (nothing is written into the workdir) and bytecode a worker
plants is never what a check runs or trusts."""

from __future__ import annotations

from pathlib import Path

from tests.test_cli_run import resume, setup, steps, task
from tests.test_paths_cli import _row, _sh, _write

PY_COMPILE = "python3 -m py_compile sol.py"
COMPILEALL = "python3 -m compileall -q src"
GOOD = "def add(a, b):\\n    return a + b"
BROKEN = "def add(a, b):\\n    return (a + b\\n\\nVALUE = 1"  # the ( is never closed: line 2


def _tasks(**props: str) -> str:
    return task("Write sol.py", "one", PY_COMPILE, **props) + task(
        "Write src/", "all", COMPILEALL, **props
    )


def _said(plan: Path, task_id: str) -> str:
    """What the task's last check printed (the ledger's excerpt)."""
    return str([c for c in steps(plan, "check") if c["task_id"] == task_id][-1]["excerpt"])


def _failed_at(check: str) -> str:
    return f"nonzero_status: check line 1: `{check}` exited with status 1"


def _workers(source: str) -> str:
    return (
        "workers:\n  one:\n"
        + _write("sol.py", source)
        + "    - say: DONE\n  all:\n"
        + _write("src/good.py", GOOD)
        + _write("src/pkg/mod.py", source)
        + _sh(f"{COMPILEALL}; {PY_COMPILE}")  # in the worker's own (writable) shell too
        + "    - say: DONE\n"
    )


def test_code_that_compiles_passes_and_nothing_is_written_beside_it(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, _tasks(), _workers(GOOD))
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert (_row(doc, "one")["state"], _row(doc, "all")["state"]) == ("DONE", "DONE"), doc
    assert result.exit_code == 0
    shell = [c for c in steps(plan, "tool-call") if c["task_id"] == "all"][-1]
    assert shell["is_error"] is False, shell  # the worker's own compileall passed as well
    written = [p for p in tmp_path.rglob("*") if p.suffix == ".pyc" or p.name == "__pycache__"]
    assert written == []


def test_a_syntax_error_fails_naming_its_line(tmp_path: Path) -> None:
    plan, script = setup(tmp_path, _tasks(max_attempts="1"), _workers(BROKEN))
    result, doc = resume(plan, script, "--max-parallel", "1")
    one, every = _row(doc, "one"), _row(doc, "all")
    assert (one["state"], every["state"]) == ("FAILED", "FAILED"), doc
    assert (one["reason"], every["reason"]) == (_failed_at(PY_COMPILE), _failed_at(COMPILEALL))
    assert _said(plan, "one") == (
        '  File "sol.py", line 2\n    return (a + b\n           ^\n'
        "SyntaxError: '(' was never closed\n"
    )
    assert _said(plan, "all").startswith(
        "*** Error compiling 'src/pkg/mod.py'...\n  File \"src/pkg/mod.py\", line 2\n"
    )
    assert result.exit_code == 1


# Bytecode of the honest code, stamped "never check the source" (unchecked hash), which Python
# would load in place of sol.py if it ever read the workdir's __pycache__.
PLANT = (
    "mkdir -p __pycache__ src/pkg/__pycache__ && python3 -c "
    '"import py_compile as p; m = p.PycInvalidationMode.UNCHECKED_HASH; '
    "p.compile('honest.py', cfile='__pycache__/sol.cpython-312.pyc', invalidation_mode=m); "
    "p.compile('honest.py', cfile='src/pkg/__pycache__/mod.cpython-312.pyc', invalidation_mode=m)\""
    " && rm honest.py"
)


def test_planted_bytecode_neither_passes_a_check_nor_hides_a_syntax_error(tmp_path: Path) -> None:
    checks = (
        task("Write sol.py", "one", f"{PY_COMPILE} && python3 -c 'import sol'", max_attempts="1")
        + task("Write src/", "all", COMPILEALL, max_attempts="1")
        + task("Add", "run", "python3 -c 'import sol; assert sol.add(2, 3) == 5'", max_attempts="1")
    )
    plant = _write("honest.py", GOOD) + _sh(PLANT)
    workers = (
        "workers:\n  one:\n"
        + _write("sol.py", BROKEN)
        + plant
        + "    - say: DONE\n  all:\n"
        + _write("src/pkg/mod.py", BROKEN)
        + plant
        + "    - say: DONE\n  run:\n"
        + _write("sol.py", "def add(a, b):\\n    return 0")
        + plant
        + "    - say: DONE\n"
    )
    plan, script = setup(tmp_path, checks, workers)
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert (tmp_path / "__pycache__" / "sol.cpython-312.pyc").is_file()  # the plant is there
    assert (tmp_path / "src" / "pkg" / "__pycache__" / "mod.cpython-312.pyc").is_file()
    rows = {name: _row(doc, name) for name in ("one", "all", "run")}
    assert {name: row["state"] for name, row in rows.items()} == dict.fromkeys(rows, "FAILED")
    assert 'File "sol.py", line 2' in _said(plan, "one")
    assert 'File "src/pkg/mod.py", line 2' in _said(plan, "all")
    assert _said(plan, "run").endswith("AssertionError\n")
    assert result.exit_code == 1
