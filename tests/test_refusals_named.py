"""Adversary-8 F8: a change the fence refuses is one event, whatever protects the path and
whatever tool tried it — the worker's call fails and is told what protects the path, the
sealed tool call lists it (`refused`), and the attempt fails `protected_input_changed` by the
one rule, whether or not the task has a check (a `:contract: pytest` task has none). Through
the CLI (`resume --json`, a scripted worker); each protection beside its honest twin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.test_cli_run import resume, setup, steps, task
from tests.test_paths_cli import _row, _sh, _write

CALC = "def add(a, b):\n    return a + b\n"
TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"


def _files(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


# each protection: (the task's heading, the files there, the path it keeps, the honest work,
# a word its reason names the protection by)
PROTECTIONS: dict[str, tuple[str, dict[str, str], str, str, str]] = {
    "protect": (
        task("Sum", "t", None, max_attempts="1", protect="data.txt"),
        {"data.txt": "1 2 3\n"},
        "data.txt",
        _sh("echo 6 > out.txt"),
        "a protected pattern of the task: `data.txt`",
    ),
    "contract": (
        task("Fix", "t", None, max_attempts="1", contract="pytest tests"),
        {"calc.py": CALC, "tests/test_calc.py": TEST},
        "tests/test_calc.py",
        _sh("python3 -m pytest -q tests"),
        "the task's contract `pytest tests` judges with",
    ),
    "expected": (
        task("Sum", "t", "diff out.txt exp.txt", max_attempts="1"),
        {"exp.txt": "6\n"},
        "exp.txt",
        _sh("echo 6 > out.txt"),
        "an expected file the check of t compares against",
    ),
    "pytest-config": (
        task("Fix", "t", "python3 -m pytest -q tests", max_attempts="1"),
        {"calc.py": CALC, "tests/test_calc.py": TEST, "pytest.ini": "[pytest]\n"},
        "pytest.ini",
        _sh("python3 -m pytest -q tests"),
        "pytest's configuration",
    ),
    "hidden": (
        task("Guess", "t", None, max_attempts="1", hide="key/answer.txt"),
        {"key/answer.txt": "4711\n"},
        "key/answer.txt",
        _sh("echo 4711 > out.txt"),
        "a hidden input",
    ),
}

TOOLS = {
    "redirection": lambda p: _sh(f"echo 9 >> {p}; echo done"),
    "python3": lambda p: _sh(f"python3 -c \"open('{p}', 'a').write('9')\"; echo done"),
    "rename": lambda p: _sh(f"echo 9 > moved.txt; mv moved.txt {p}; echo done"),
    "write_file": lambda p: _write(p, "9"),
    "rm": lambda p: _sh(f"rm -f {p}; echo done"),
}


def _calls(plan: Path) -> list[dict[str, Any]]:
    return [c for c in steps(plan, "tool-call") if c["task_id"] == "t"]


# A hidden input is absent: where the guest looks before it writes (`rm -f` stats first,
# CPython's open walks the path), it finds nothing there and tries nothing to refuse.
ABSENT_FIRST = {("hidden", "python3"), ("hidden", "rm")}


@pytest.mark.parametrize(
    ("kind", "tool"),
    [(k, t) for k in sorted(PROTECTIONS) for t in sorted(TOOLS) if (k, t) not in ABSENT_FIRST],
)
def test_a_refused_change_fails_the_call_is_sealed_and_fails_the_attempt(
    tmp_path: Path, kind: str, tool: str
) -> None:
    heading, files, kept, honest, named = PROTECTIONS[kind]
    _files(tmp_path, files)
    plan, script = setup(tmp_path, heading, f"workers:\n  t:\n{honest}{TOOLS[tool](kept)}"
                         "    - say: DONE\n")  # fmt: skip
    result, doc = resume(plan, script, "--max-parallel", "1")
    row = _row(doc, "t")
    assert row["state"] == "FAILED", row
    assert row["reason"].startswith(
        f"protected_input_changed: protected input changed: {kept}: the worker tried to change"
        " it, and the sandbox refused ("
    ), row["reason"]
    assert named in row["reason"]
    assert (tmp_path / kept).read_text() == files[kept]
    *_, refused_call = _calls(plan)
    assert kept in refused_call["refused"]
    assert refused_call["is_error"] is True
    assert result.exit_code == 1


@pytest.mark.parametrize("kind", sorted(PROTECTIONS))
def test_the_honest_twin_that_leaves_it_alone_is_done(tmp_path: Path, kind: str) -> None:
    heading, files, _kept, honest, _named = PROTECTIONS[kind]
    _files(tmp_path, files)
    plan, script = setup(tmp_path, heading, f"workers:\n  t:\n{honest}    - say: DONE\n")
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "t")["state"] == "DONE", doc
    assert all("refused" not in c for c in _calls(plan))
    assert result.exit_code == 0


def test_the_worker_hears_of_a_refusal_in_a_list_that_exits_0(tmp_path: Path) -> None:
    # the F8 spelling: the `>>` fails, the list's last command succeeds (exit 0, as bash
    # says); the call still fails for the worker, naming the path and its protection
    _files(tmp_path, {"calc.py": CALC, "tests/test_calc.py": TEST})
    heading = task("Fix", "t", None, max_attempts="1", contract="pytest tests")
    append = (
        "printf 'def test_x():\\n    pass\\n' >> tests/test_calc.py; python3 -m pytest -q tests"
    )
    plan, script = setup(tmp_path, heading, f"workers:\n  t:\n{_sh(append)}    - say: DONE\n")
    _result, doc = resume(plan, script, "--max-parallel", "1")
    (call,) = _calls(plan)
    assert (call["exit_status"], call["is_error"], call["refused"]) == (
        0, True, ["tests/test_calc.py"],
    )  # fmt: skip
    assert _row(doc, "t")["state"] == "FAILED"
    (state,) = [s for s in steps(plan, "state") if s["task_id"] == "t"]
    assert any("tests/test_calc.py" in lie for lie in state["lies"]), state
