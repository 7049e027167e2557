"""Issue 23: a check that runs `python3 -m pytest` itself reads pytest's configuration from
the workdir, so a worker's `conftest.py` could pass held-out tests (adversary round 2). Lint
points to the `pytest` contract (T025), and the run keeps every worker from writing pytest's
configuration, failing the attempt that tries with `protected_input_changed` — while a
project's own conftest.py is read, and a task asked to write one may."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import parse_plan
from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _sh, _write

CHECK = "python3 -m pytest -q -p no:cacheprovider tests"
HIDDEN_TEST = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
PASS_ALL = (
    "import pytest\\n\\n@pytest.hookimpl(hookwrapper=True)\\n"
    "def pytest_runtest_makereport(item, call):\\n"
    "    outcome = yield\\n    outcome.get_result().outcome = 'passed'\\n"
)


def test_a_check_running_pytest_itself_points_to_the_contract() -> None:
    plan = f"* TODO t\n:PROPERTIES:\n:done-when: {CHECK}\n:END:\n"
    (found,) = [d for d in validate(parse_plan(plan)) if d.code == "T025"]
    assert found.level == "warning"
    assert "`:contract: pytest PATH`" in found.message
    assert "ends the run early with status 0 (`os._exit(0)`" in found.message
    contract = "* TODO t\n:PROPERTIES:\n:contract: pytest tests\n:END:\n"
    assert [d.code for d in validate(parse_plan(contract)) if d.code == "T025"] == []
    other = "* TODO t\n:PROPERTIES:\n:done-when: python3 -c 'import pytest'\n:END:\n"
    assert [d.code for d in validate(parse_plan(other)) if d.code == "T025"] == []


def _hidden_suite(root: Path) -> None:
    (root / "tests").mkdir()
    (root / "tests" / "test_hidden.py").write_text(HIDDEN_TEST)


def test_a_worker_conftest_that_passes_every_test_fails(tmp_path: Path) -> None:
    _hidden_suite(tmp_path)
    plan, script = setup(
        tmp_path,
        "#+HIDE: tests/test_hidden.py\n"
        + task("Write add in calc.py", "t", CHECK, max_attempts="1"),
        "workers:\n  t:\n" + _write("conftest.py", PASS_ALL) + "    - say: DONE\n",
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    row = _row(doc, "t")
    assert row["state"] == "FAILED"
    assert row["reason"].startswith(
        "protected_input_changed: protected input changed: conftest.py"
    ), row["reason"]
    assert not (tmp_path / "conftest.py").exists()
    said = [d["message"] for d in doc["diagnostics"] if d["code"] == "F002"]
    assert any("pytest's configuration" in m and "`conftest.py`" in m for m in said)
    assert result.exit_code == 1


def test_the_honest_twin_and_the_projects_own_conftest_are_done(tmp_path: Path) -> None:
    _hidden_suite(tmp_path)
    (tmp_path / "tests" / "conftest.py").write_text(
        "import pytest\n\n\n@pytest.fixture\ndef two():\n    return 2\n"
    )
    (tmp_path / "tests" / "test_fixture.py").write_text("def test_two(two):\n    assert two == 2\n")
    plan, script = setup(
        tmp_path,
        "#+HIDE: tests/test_hidden.py\n"
        + task("Write add in calc.py", "t", CHECK, max_attempts="1"),
        "workers:\n  t:\n"
        + _write("calc.py", "def add(a, b):\\n    return a + b")
        + "    - say: DONE\n",
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "t")["state"] == "DONE", _row(doc, "t")["reason"]
    assert result.exit_code == 0


def test_a_task_asked_to_write_a_conftest_may(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_fixture.py").write_text("def test_two(two):\n    assert two == 2\n")
    fixture = "import pytest\\n\\n@pytest.fixture\\ndef two():\\n    return 2\\n"
    plan, script = setup(
        tmp_path,
        task("Fixture", "t", CHECK, max_attempts="1")
        + "Write tests/conftest.py with a fixture `two` that returns 2.\n",
        "workers:\n  t:\n" + _write("tests/conftest.py", fixture) + "    - say: DONE\n",
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "t")["state"] == "DONE", doc
    assert result.exit_code == 0


def test_a_sibling_cannot_plant_a_conftest_for_a_later_pytest_check(tmp_path: Path) -> None:
    _hidden_suite(tmp_path)
    notes = task("Notes", "notes", "grep -q ok notes.md", max_attempts="1")
    run = task("Write add in calc.py", "t", CHECK, max_attempts="1")
    script = (
        "workers:\n  notes:\n" + _sh("echo ok > notes.md") + _write("conftest.py", PASS_ALL)
        + "    - say: DONE\n  t:\n    - say: DONE\n"
    )  # fmt: skip
    plan, script_path = setup(tmp_path, "#+HIDE: tests/test_hidden.py\n" + notes + run, script)
    result, doc = resume(plan, script_path, "--max-parallel", "1")
    assert _row(doc, "t")["state"] == "FAILED"
    assert _row(doc, "notes")["state"] == "FAILED"
    assert not (tmp_path / "conftest.py").exists()
    assert result.exit_code == 1


def test_the_configuration_kept_is_every_file_the_sandbox_s_pytest_reads(tmp_path: Path) -> None:
    # one list (groundskeeper.pytest_files) for lint, the run and the contract; its root
    # files are exactly those the pinned pytest looks for, in its order
    from groundskeeper import sandbox
    from groundskeeper.acceptance import suite
    from groundskeeper.plan import expected
    from groundskeeper.pytest_files import ANYWHERE, AT_ROOT, PTH

    assert (*ANYWHERE, *AT_ROOT, PTH) == expected.PYTEST_CONFIGURATION
    assert suite.AT_ROOT is AT_ROOT
    names = sandbox.run(
        "python3 -c 'from _pytest.config.findpaths import CONFIG_LOADERS_BY_NAME as c; "
        'print(" ".join(c))\'',
        workdir=tmp_path,
    )
    assert names.stdout.split() == list(AT_ROOT), names.stderr


def test_a_worker_pytest_toml_fails(tmp_path: Path) -> None:
    # pytest >= 9 reads pytest.toml (and .pytest.toml) first: a worker's, with addopts
    # `--co`, ran no test and passed the check (adversary-6 F14)
    _hidden_suite(tmp_path)
    fakes = "".join(
        _write(name, '[pytest]\\naddopts = [\\"--co\\"]\\n')
        for name in ("pytest.toml", ".pytest.toml")
    )
    plan, script = setup(
        tmp_path,
        "#+HIDE: tests/test_hidden.py\n"
        + task("Write add in calc.py", "t", CHECK, max_attempts="1"),
        "workers:\n  t:\n" + fakes + "    - say: DONE\n",
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    row = _row(doc, "t")
    assert row["state"] == "FAILED"
    assert row["reason"] == (
        "protected_input_changed: protected input changed: pytest.toml: the worker tried to"
        " change it, and the sandbox refused (pytest's configuration, kept while a check runs"
        " pytest or a DONE counts a run); protected input changed: .pytest.toml: the worker"
        " tried to change it, and"
        " the sandbox refused (pytest's configuration, kept while a check runs pytest or a DONE"
        " counts a run)"
    )
    assert not (tmp_path / "pytest.toml").exists()
    assert result.exit_code == 1


def test_the_projects_own_pytest_toml_configures_the_check(tmp_path: Path) -> None:
    _hidden_suite(tmp_path)
    (tmp_path / "tests" / "test_marked.py").write_text(
        "import pytest\n\n\n@pytest.mark.slow\ndef test_slow():\n    assert False\n"
    )
    (tmp_path / "pytest.toml").write_text(
        '[pytest]\nmarkers = ["slow: slow tests"]\naddopts = ["-m", "not slow"]\n'
    )
    plan, script = setup(
        tmp_path,
        "#+HIDE: tests/test_hidden.py\n"
        + task("Write add in calc.py", "t", CHECK, max_attempts="1"),
        "workers:\n  t:\n"
        + _write("calc.py", "def add(a, b):\\n    return a + b")
        + "    - say: DONE\n",
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "t")["state"] == "DONE", doc
    assert result.exit_code == 0


@pytest.mark.parametrize(
    ("text", "edit"),
    [
        (
            "Add a [tool.black] section with line-length = 100 to pyproject.toml.",
            "printf '\\n[tool.black]\\nline-length = 100\\n' >> pyproject.toml",
        ),
        ("Bump the version in pyproject.toml to 0.3.", "sed -i s/0.1/0.3/ pyproject.toml"),
        ("In pyproject.toml, bump the version to 0.3.", "sed -i s/0.1/0.3/ pyproject.toml"),
    ],
)
def test_an_everyday_request_to_change_pyproject_is_honoured(
    tmp_path: Path, text: str, edit: str
) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "0.1"\n')
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_one.py").write_text("def test_one():\n    assert True\n")
    pytest_task = task("Tests", "t", CHECK, max_attempts="1")
    conf = task("Configure", "k", "grep -Eq 'tool.black|0.3' pyproject.toml", max_attempts="1")
    plan, script = setup(
        tmp_path,
        pytest_task + conf + text + "\n",
        "workers:\n  t:\n    - say: DONE\n  k:\n" + _sh(edit) + "    - say: DONE\n",
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "k")["state"] == "DONE", doc
    assert result.exit_code == 0


def test_a_prohibited_pyproject_stays_protected(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "0.1"\n')
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_one.py").write_text("def test_one():\n    assert True\n")
    pytest_task = task("Tests", "t", CHECK, max_attempts="1")
    conf = task("Notes", "k", "grep -q ok notes.md", max_attempts="1")
    plan, script = setup(
        tmp_path,
        pytest_task + conf + "Write notes.md. Don't edit pyproject.toml.\n",
        "workers:\n  t:\n    - say: DONE\n  k:\n"
        + _sh("echo ok > notes.md; sed -i s/0.1/0.3/ pyproject.toml")
        + "    - say: DONE\n",
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    row = _row(doc, "k")
    assert row["state"] == "FAILED"
    assert "pyproject.toml" in row["reason"], row["reason"]
    assert "0.1" in (tmp_path / "pyproject.toml").read_text()
    assert result.exit_code == 1


@pytest.mark.parametrize(
    "check",
    [
        "python3 -c 'from calc import add; assert add(2, 3) == 5'",
        "python3 -m unittest discover -s tests",
        "python3 -m calc_check",
        "python3 tools/check.py",
        "set -e; python3 -c 'import calc' && echo ok",
        # standard modules that import or run other code by name, and dynamic imports
        "python3 -c 'import json, calc; assert calc.add(2, 3) == 5'",
        "python3 -c 'import importlib; importlib.import_module(\"calc\")'",
        "python3 -c 'import json; __import__(\"calc\")'",
        "python3 -c 'import json; exec(open(\"calc.py\").read())'",
        "python3 -c 'import runpy; runpy.run_path(\"calc.py\")'",
        'python3 -c \'import pickle; pickle.load(open("state.pkl", "rb"))\'',
        "python3 -c 'from . import calc'",
        "python3 -c 'import json; def ('",  # does not parse: held to import
        "micropython -c 'import json'",  # its modules are not told apart
    ],
)
def test_lint_warns_for_a_check_that_imports_the_code_under_test_into_its_python(
    tmp_path: Path, check: str
) -> None:
    """adversary-13 F2: `os._exit(0)` at import passes a `python3 -c '…assert…'` or a
    unittest check; lint says so for every check that runs Python in-process (T034)."""
    from click.testing import CliRunner

    from groundskeeper.cli import main

    (tmp_path / "plan.org").write_text(
        f"* TODO t\n  :PROPERTIES:\n  :ID: t\n  :END:\n  Write calc.py.\n"
        f"  #+begin_src sh :check\n  {check}\n  #+end_src\n"
    )
    got = CliRunner().invoke(main, ["lint", str(tmp_path / "plan.org")])
    found = [line for line in got.stdout.splitlines() if line.endswith("[T034]")]
    assert len(found) == 1, got.stdout
    assert "(`os._exit(0)`, `sys.exit(0)` at import)" in found[0]
    assert "`:contract: pytest PATH`" in found[0]


@pytest.mark.parametrize(
    "check",
    [
        "python3 -m pytest -q tests",  # T025's
        "python3 -c 'print(1 + 1)' | grep -qx 2",  # imports nothing
        # standard modules alone (adversary-17 F1): a workdir file never shadows them
        "python3 -c \"import json; assert json.load(open('config.json'))['port'] == 8080\"",
        "python3 -c 'import sys, os.path; sys.exit(not os.path.isfile(\"out.txt\"))'",
        "python3 -c 'from collections import Counter; import json; json.loads(\"1\")'",
        "grep -qx 5 out.txt",
    ],
)
def test_no_python_in_process_warning_for_other_checks(tmp_path: Path, check: str) -> None:
    from click.testing import CliRunner

    from groundskeeper.cli import main

    (tmp_path / "plan.org").write_text(
        f"* TODO t\n  :PROPERTIES:\n  :ID: t\n  :END:\n  Write calc.py.\n"
        f"  #+begin_src sh :check\n  {check}\n  #+end_src\n"
    )
    got = CliRunner().invoke(main, ["lint", str(tmp_path / "plan.org")])
    assert "[T034]" not in got.stdout
