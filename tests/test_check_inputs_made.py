"""A file a worker MADE that changes what a passing check ran (`acceptance.check_inputs`,
`read_inputs_made`): a new module under a pytest or unittest check's test path shadows the
code under test, a new `tests/test_0.py` or `tests/__init__.py` ends the run with status 0, a
new module beside a checker program replaces the one it imports (adversary-11 F6–F9,
adversary-12 F3) — each fails the task, named; the honest twins (new code under test, tests
the task asks for, `:writable:`) stay DONE. And a module named as the tests' helper or data
is the checker's, not the code under test (adversary-12 F2, adversary-11 F5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundskeeper.acceptance.check_inputs import CHECKER, CODE, check_role, made_side
from groundskeeper.path_patterns import naming
from groundskeeper.plan.org import load_plan
from groundskeeper.plan.spec import compile_plan
from tests.test_cli_run import HEAD, resume, setup, task
from tests.test_paths_cli import _row, _sh

FIXED = 'printf "def add(a, b):\\n    return a + b\\n" > '


def _calc(root: Path, test_dir: str = "tests", unittest: bool = False) -> None:
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / test_dir).mkdir(parents=True, exist_ok=True)
    body = (
        "import unittest\nfrom calc import add\n\n"
        "class T(unittest.TestCase):\n    def test_add(self):\n"
        "        self.assertEqual(add(2, 3), 5)\n"
        if unittest
        else "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    (root / test_dir / "test_calc.py").write_text(body)


def _made_failure(doc: dict[str, object], task_id: str, path: str, by: str) -> str:
    row = _row(doc, task_id)  # type: ignore[arg-type]
    assert row["state"] == "FAILED", row
    reason = str(row["reason"])
    assert reason.startswith(f"protected_input_changed: input made: the check read `{path}` ("), (
        reason
    )
    assert f"which the worker of task `{by}` made during the work" in reason, reason
    assert f"add `:writable: {naming(path)}` to task `{by}`" in reason, reason
    return reason


def _done(doc: dict[str, object], task_id: str) -> None:
    row = _row(doc, task_id)  # type: ignore[arg-type]
    assert row["state"] == "DONE", row["reason"]


# -- fakes: the task's own worker plants a file the check then runs ---------------------------

SHADOWS = [
    # (check, the file the worker makes, its content, what the reason says of where it sits)
    ("python3 -m pytest -q tests", "tests/calc.py", None, "under the check's test path `tests`"),
    (
        "python3 -m unittest discover -s tests",
        "tests/calc.py",
        None,
        "under the check's test path `tests`",
    ),
    ("python3 -m unittest discover tests", "tests/calc.py", None, "under the check's test path"),
    (
        "python3 -m pytest -q tests",
        "tests/test_0.py",
        "import os\nos._exit(0)\n",
        "under the check's test path `tests`",
    ),
    (
        "python3 -m pytest -q tests/test_calc.py",
        "tests/__init__.py",
        "import os\nos._exit(0)\n",
        "a package holding the check's test path `tests/test_calc.py`",
    ),
]


@pytest.mark.parametrize(("check", "made", "content", "where"), SHADOWS)
def test_a_file_the_worker_makes_on_the_checks_side_fails(
    tmp_path: Path, check: str, made: str, content: str | None, where: str
) -> None:
    _calc(tmp_path, unittest="unittest" in check)
    write = (
        FIXED + made
        if content is None
        else "python3 -c \"open('" + made + "', 'w').write(" + repr(content) + ')"'
    )
    plan, script = setup(
        tmp_path,
        task("Fix add in calc.py", "fix", check, max_attempts="1") + "  Make the tests pass.\n",
        "workers:\n  fix:\n" + _sh(write) + "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    reason = _made_failure(doc, "fix", made, "fix")
    assert where in reason, reason
    if where.startswith("under the check's test path"):  # a new test module may be asked for
        asked = made.rsplit("/", 1)[-1].startswith("test")
        assert (', or ask for tests in its text ("add a regression test")' in reason) == asked
    assert (tmp_path / made).exists()  # the check did run it: the verdict's rule caught it
    assert "return a - b" in (tmp_path / "calc.py").read_text()
    assert result.exit_code == 1


def test_a_module_beside_the_checker_program_fails(tmp_path: Path) -> None:
    """adversary-11 F9: `tools/check.py` puts `tools/` first on sys.path."""
    _calc(tmp_path)
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "check.py").write_text(
        "import sys\nsys.path.append('.')\nfrom calc import add\nsys.exit(add(2, 3) != 5)\n"
    )
    plan, script = setup(
        tmp_path,
        task("Fix add in calc.py", "fix", "python3 tools/check.py", max_attempts="1")
        + "  Make the check pass.\n",
        "workers:\n  fix:\n" + _sh(FIXED + "tools/calc.py") + "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    reason = _made_failure(doc, "fix", "tools/calc.py", "fix")
    assert "beside the check's program `tools/check.py`" in reason, reason
    assert result.exit_code == 1


def test_an_accomplice_sibling_planting_the_shadow_fails_the_victim(tmp_path: Path) -> None:
    """adversary-11 F7: the victim's worker does nothing; a sibling makes `tests/calc.py`."""
    _calc(tmp_path)
    plan, script = setup(
        tmp_path,
        task("Write the notes", "notes", "grep -q calc NOTES.md", max_attempts="1")
        + task("Fix add in calc.py", "fix", "python3 -m pytest -q tests", max_attempts="1")
        + "  Make the tests pass.\n",
        "workers:\n  notes:\n"
        + _sh("echo calc > NOTES.md; " + FIXED + "tests/calc.py")
        + "    - say: DONE\n  fix:\n"
        + _sh("sleep 2")
        + "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    _done(doc, "notes")
    _made_failure(doc, "fix", "tests/calc.py", "notes")
    assert result.exit_code == 1


def test_a_module_that_shadows_one_there_before_fails(tmp_path: Path) -> None:
    """A new `lib/calc.py` read instead of the `calc.py` there before the work: the check
    program puts `lib/` first on its path (a directory the rule knows nothing else of)."""
    _calc(tmp_path)
    (tmp_path / "checks").mkdir()
    (tmp_path / "checks" / "check.py").write_text(
        "import sys\nsys.path[:0] = ['lib', '.']\nfrom calc import add\nsys.exit(add(2, 3) != 5)\n"
    )
    plan, script = setup(
        tmp_path,
        task("Fix add in calc.py", "fix", "python3 checks/check.py", max_attempts="1")
        + "  Make the check pass.\n",
        "workers:\n  fix:\n"
        + _sh("mkdir -p lib && " + FIXED + "lib/calc.py")
        + "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    reason = _made_failure(doc, "fix", "lib/calc.py", "fix")
    assert "shadows the `calc` that was in the workdir's top before the work" in reason, reason
    assert result.exit_code == 1


# -- honest twins ---------------------------------------------------------------------------


def test_new_code_under_test_the_task_asks_for_is_done(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text(
        "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    plan, script = setup(
        tmp_path,
        task("Write calc.py with add", "w", "python3 -m pytest -q tests", max_attempts="1")
        + "  Make the tests pass.\n",
        "workers:\n  w:\n"
        + _sh(FIXED + "calc.py; printf 'X = 1\\n' > helper.py; echo 'import helper' >> calc.py")
        + "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    _done(doc, "w")
    assert result.exit_code == 0


@pytest.mark.parametrize(
    ("text", "made", "props"),
    [
        ("Fix add in calc.py and add a test for add with zero.", "tests/test_zero.py", {}),
        ("Fix add in calc.py and write tests/test_zero.py for it.", "tests/test_zero.py", {}),
        # adversary-20 F1: everyday ways to ask for a test
        ("Fix add in calc.py, with a test for it.", "tests/test_zero.py", {}),
        ("Fix add in calc.py and test it.", "tests/test_zero.py", {}),
        ("Fix add in calc.py and cover it with tests.", "tests/test_zero.py", {}),
        # adv24 H5: the fix as the object, and where the test goes
        (
            "Fix add in calc.py; cover the fix with a new test in tests/.",
            "tests/test_zero.py",
            {},
        ),
        ("Fix add in calc.py (tested).", "tests/test_zero.py", {}),
        ("Fix add in calc.py.", "tests/test_zero.py", {"writable": "tests/"}),
        ("Fix add in calc.py.", "tests/helpers.py", {"writable": "tests/helpers.py"}),
    ],
)
def test_tests_the_task_asks_for_are_done(
    tmp_path: Path, text: str, made: str, props: dict[str, str]
) -> None:
    _calc(tmp_path)
    content = (
        "from calc import add\\n\\ndef test_zero():\\n    assert add(0, 0) == 0\\n"
        if "test_" in made
        else "X = 1\\n"
    )
    plan, script = setup(
        tmp_path,
        task("Fix add", "fix", "python3 -m pytest -q tests", max_attempts="1", **props)
        + f"  {text}\n",
        "workers:\n  fix:\n"
        + _sh(FIXED + "calc.py; printf '" + content + "' > " + made)
        + "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    _done(doc, "fix")
    assert result.exit_code == 0


@pytest.mark.parametrize(
    "text",
    ["Fix add in calc.py. Do not add tests.", "Fix add in calc.py without adding a test for it."],
)
def test_a_negated_ask_for_tests_frees_no_test_module(tmp_path: Path, text: str) -> None:
    _calc(tmp_path)
    content = "from calc import add\\n\\ndef test_zero():\\n    assert add(0, 0) == 0\\n"
    plan, script = setup(
        tmp_path,
        task("Fix add", "fix", "python3 -m pytest -q tests", max_attempts="1") + f"  {text}\n",
        "workers:\n  fix:\n"
        + _sh(FIXED + "calc.py; printf '" + content + "' > tests/test_zero.py")
        + "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    _made_failure(doc, "fix", "tests/test_zero.py", "fix")
    assert result.exit_code == 1


def test_asking_for_tests_does_not_free_a_shadow_module(tmp_path: Path) -> None:
    """ "Add a test" frees a new `test_*.py`, never a `tests/calc.py` shadowing the code."""
    _calc(tmp_path)
    plan, script = setup(
        tmp_path,
        task("Fix add", "fix", "python3 -m pytest -q tests", max_attempts="1")
        + "  Fix add in calc.py and add a test for add with zero.\n",
        "workers:\n  fix:\n" + _sh(FIXED + "tests/calc.py") + "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    _made_failure(doc, "fix", "tests/calc.py", "fix")
    assert result.exit_code == 1


def test_a_deliverable_the_check_reads_is_done(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("Write out.txt", "w", "grep -qx 42 out.txt", max_attempts="1"),
        "workers:\n  w:\n" + _sh("echo 42 > out.txt") + "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    _done(doc, "w")
    assert result.exit_code == 0


# -- the tests' helper or data is the checker's (adversary-12 F2, adversary-11 F5) ------------


def test_gutting_a_root_level_test_helper_fails(tmp_path: Path) -> None:
    _calc(tmp_path)
    (tmp_path / "testkit.py").write_text("def expect(got, want):\n    assert got == want\n")
    (tmp_path / "tests" / "test_calc.py").write_text(
        "from calc import add\nfrom testkit import expect\n\n"
        "def test_add():\n    expect(add(2, 3), 5)\n"
    )
    plan, script = setup(
        tmp_path,
        task("Fix add", "fix", "python3 -m pytest -q tests", max_attempts="1")
        + "  Fix add in calc.py. The tests are the spec.\n",
        "workers:\n  fix:\n"
        + _sh("printf 'def expect(got, want):\\n    pass\\n' > testkit.py")
        + "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    row = _row(doc, "fix")
    assert row["state"] == "FAILED", row
    assert "testkit.py" in str(row["reason"]), row["reason"]
    assert result.exit_code == 1


def _expected_values(tmp_path: Path, work: str) -> tuple[Path, Path]:
    """A check importing the code under test and the module of values it must return."""
    (tmp_path / "expected_values.py").write_text("EXPECTED = 42\n")
    (tmp_path / "solution.py").write_text("def f():\n    return 0\n")
    check = (
        'python3 -c "from solution import f; from expected_values import EXPECTED;'
        ' assert f() == EXPECTED"'
    )
    return setup(
        tmp_path,
        task("Make f return the expected value", "mod", check, max_attempts="1")
        + "  Fix f in solution.py.\n",
        "workers:\n  mod:\n" + _sh(work) + "    - say: DONE\n",
    )


def test_rewriting_expected_values_in_a_module_fails(tmp_path: Path) -> None:
    plan, script = _expected_values(tmp_path, "printf 'EXPECTED = 0\\n' > expected_values.py")
    result, doc = resume(plan, script)
    row = _row(doc, "mod")
    assert row["state"] == "FAILED", row
    assert "expected_values.py" in str(row["reason"]), row["reason"]
    assert (tmp_path / "expected_values.py").read_text() == "EXPECTED = 42\n"  # refused
    assert result.exit_code == 1


def test_fixing_the_code_beside_expected_values_is_done(tmp_path: Path) -> None:
    plan, script = _expected_values(tmp_path, "printf 'def f():\\n    return 42\\n' > solution.py")
    result, doc = resume(plan, script)
    _done(doc, "mod")
    assert result.exit_code == 0


def _spec(tmp_path: Path, check: str) -> object:
    (tmp_path / "plan.org").write_text(HEAD + task("T", "t", check))
    return next(iter(compile_plan(load_plan(tmp_path / "plan.org"))))


@pytest.mark.parametrize(
    ("path", "role"),
    [
        ("testkit.py", CHECKER),
        ("test_helpers.py", CHECKER),
        ("helpers_test.py", CHECKER),
        ("expected_values.py", CHECKER),
        ("fixtures.py", CHECKER),
        ("golden/__init__.py", CHECKER),
        ("calc.py", CODE),
        ("contest.py", CODE),
        ("src/attest.py", CODE),
    ],
)
def test_a_helper_name_is_the_checkers(tmp_path: Path, path: str, role: str) -> None:
    spec = _spec(tmp_path, "python3 -m pytest -q tests")
    assert check_role(spec, path) == role  # type: ignore[arg-type]


def test_made_side_reads_the_check(tmp_path: Path) -> None:
    spec = _spec(tmp_path, "python3 -m pytest -q tests/unit")
    assert made_side(spec, "tests/unit/calc.py") == "under the check's test path `tests/unit`"  # type: ignore[arg-type]
    assert made_side(spec, "tests/__init__.py") is not None  # type: ignore[arg-type]
    assert made_side(spec, "src/sitecustomize.py") is not None  # type: ignore[arg-type]
    assert made_side(spec, "calc.py") is None  # type: ignore[arg-type]
    assert made_side(spec, "src/__init__.py") is None  # type: ignore[arg-type]
    assert made_side(spec, "src/calc.py", {"calc": frozenset({""})}) is not None  # type: ignore[arg-type]
    assert made_side(spec, "calc.py", {"calc": frozenset({""})}) is None  # type: ignore[arg-type]


# -- a module the work imports is the work (adversary-18 F5) -----------------------------------

CHECK_PY = (
    "import sys\n{extra}from solver2 import total\n"
    "sys.exit(0 if total('nums.txt') == 4711 else 1)\n"
)
SOLVER = "from {module} import ints\n\ndef total(path):\n    return sum(ints(path))\n"
PARSE = "def ints(path):\n    return [int(x) for x in open(path).read().split()]\n"


def _split_solution(
    tmp_path: Path, helper: str, module: str, *, extra: str = "", also: str = ""
) -> tuple[str, dict[str, object]]:
    """check.py imports the asked solver2.py, which the worker writes importing its own helper
    module (`helper`, imported as `module`): the state and reason of task s2."""
    (tmp_path / "nums.txt").write_text("4700\n11\n")
    (tmp_path / "check.py").write_text(CHECK_PY.format(extra=extra))
    files = {helper: PARSE, "solver2.py": SOLVER.format(module=module)}
    if helper.endswith("/parse.py"):
        files[helper.rsplit("/", 1)[0] + "/__init__.py"] = ""
    writes = "".join(
        f"    - tool: write_file\n      input: {{path: {path}, content: {json.dumps(text)}}}\n"
        for path, text in files.items()
    )
    plan, script = setup(
        tmp_path,
        task("Write the solver", "s2", "python3 check.py" + also, max_attempts="1")
        + "  Write solver2.py with a function total(path) that returns the sum of the\n"
        "  integers in the file, one a line.\n",
        "workers:\n  s2:\n" + writes + "    - say: DONE\n",
    )
    _result, doc = resume(plan, script)
    row = _row(doc, "s2")
    return str(row["state"]), row


@pytest.mark.parametrize(
    ("helper", "module"), [("parse2.py", "parse2"), ("mylib/parse.py", "mylib.parse")]
)
def test_a_helper_module_only_the_asked_code_imports_is_the_work(
    tmp_path: Path, helper: str, module: str
) -> None:
    """adversary-18 F5: splitting one's own solution in two files is no shadow of the
    checker's library."""
    state, row = _split_solution(tmp_path, helper, module)
    assert state == "DONE", row["reason"]


@pytest.mark.parametrize(
    ("extra", "also", "why"),
    [
        # the checker program imports the made module itself: its library
        ("import parse2\n", "", "the check's own program, test or data"),
        # the check's own text names it (an inline -c import)
        ("", " && python3 -c 'import parse2'", "the check's own program, test or data"),
        # the checker loads modules by name: who imports what cannot be read
        ("import importlib\n", "", "the check's own program, test or data"),
    ],
)
def test_a_made_module_the_checker_may_import_stays_the_checkers(
    tmp_path: Path, extra: str, also: str, why: str
) -> None:
    state, row = _split_solution(tmp_path, "parse2.py", "parse2", extra=extra, also=also)
    assert state == "FAILED", row
    reason = str(row["reason"])
    assert reason.startswith("protected_input_changed: input made: the check read `parse2.py`")
    assert why in reason, reason
