"""The path rules of issues 23 and 28 at the CLI, as a user runs them (`resume --json` with
a scripted worker): hidden inputs, expected files protected by default, and protection that
follows paths, per task, for the whole run. Each fake has its honest twin beside it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from groundskeeper.models.model import AssistantTurn, ModelRequest
from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import load_plan
from groundskeeper.supervisor.runner import Runner, RunOptions
from tests.test_cli_run import HEAD, resume, setup, steps, task

DIFF = "diff out/result.txt tests/expected.txt"


def _script(task_id: str, *calls: str) -> str:
    return f"workers:\n  {task_id}:\n" + "".join(calls) + "    - say: DONE\n"


def _sh(cmd: str) -> str:
    return "    - {tool: sh, input: {cmd: '" + cmd.replace("'", "''") + "'}}\n"


def _write(path: str, content: str) -> str:
    return f'    - {{tool: write_file, input: {{path: {path}, content: "{content}\\n"}}}}\n'


def _golden(root: Path, text: str = "42") -> None:
    (root / "tests").mkdir(exist_ok=True)
    (root / "tests" / "expected.txt").write_text(text + "\n")


def _row(doc: dict[str, Any], task_id: str) -> dict[str, Any]:
    return next(r for r in doc["tasks"] if r["id"] == task_id)


def _worker_calls(plan: Path, task_id: str) -> list[dict[str, Any]]:
    return [c for c in steps(plan, "tool-call") if c["task_id"] == task_id]


# -- hidden inputs (issue 23 item 1) ------------------------------------------------------------


def test_copying_a_hidden_answer_fails(tmp_path: Path) -> None:
    _golden(tmp_path)
    plan, script = setup(
        tmp_path,
        task("Answer", "t", DIFF, hide="tests/expected.txt"),
        _script("t", _sh("mkdir -p out && cp tests/expected.txt out/result.txt")),
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert result.exit_code == 1
    assert _row(doc, "t")["state"] == "FAILED"
    assert not (tmp_path / "out" / "result.txt").exists()
    (call,) = _worker_calls(plan, "t")
    assert call["is_error"] is True
    (start,) = steps(plan, "run-start")
    assert start["hidden"] == ["tests/expected.txt"]
    assert [p["path"] for p in start["protected"]] == ["tests/expected.txt"]


def test_computing_the_answer_with_a_hidden_expected_file_is_done(tmp_path: Path) -> None:
    _golden(tmp_path)
    plan, script = setup(
        tmp_path,
        task("Answer", "t", DIFF, hide="tests/expected.txt"),
        _script("t", _sh("mkdir -p out && echo $((6 * 7)) > out/result.txt")),
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert result.exit_code == 0, doc
    assert _row(doc, "t")["state"] == "DONE"


READ_BY_EVERY_TOOL = [
    _sh("ls tests > seen.txt; find . -name '*.txt' >> seen.txt; cat tests/* >> seen.txt"),
    _sh("cat tests/expected.txt > out.txt"),
    _sh("python3 -c \"print(open('tests/expected.txt').read())\""),
    _sh("cd tests && cat expected.txt"),
    _sh("echo tests/expected.txt | xargs cat"),
    "    - {tool: read_file, input: {path: tests/expected.txt}}\n",
    "    - {tool: list_files, input: {path: tests}}\n",
    _write("tests/expected.txt", "41"),
]


def test_a_fake_reading_a_hidden_directory_by_every_tool_learns_nothing(tmp_path: Path) -> None:
    _golden(tmp_path)
    plan, script = setup(
        tmp_path,
        task("Answer", "t", DIFF, hide="tests/"),
        _script("t", *READ_BY_EVERY_TOOL, _sh("mkdir -p out && cat out.txt > out/result.txt")),
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "t")["state"] == "FAILED"
    # nothing listed, found or read: `find` found the file it was writing, no more
    assert (tmp_path / "seen.txt").read_text() == "./seen.txt\n"
    assert (tmp_path / "tests" / "expected.txt").read_text() == "42\n"
    calls = _worker_calls(plan, "t")
    # every way of reading failed, but for list_files on a directory it cannot see either
    assert [c["is_error"] for c in calls[1:-1]] == [True] * 7
    assert result.exit_code == 1


def test_a_hidden_input_changed_from_outside_fails_with_its_name(tmp_path: Path) -> None:
    _golden(tmp_path)
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD + task("Answer", "t", DIFF, hide="tests/expected.txt"))

    class Outside:
        name = "outside"

        def respond(self, request: ModelRequest) -> AssistantTurn:
            (tmp_path / "tests" / "expected.txt").write_text("41\n")
            (tmp_path / "out").mkdir(exist_ok=True)
            (tmp_path / "out" / "result.txt").write_text("41\n")
            return AssistantTurn(({"type": "text", "text": "DONE"},), "end_turn")

    report = Runner(load_plan(plan), model=Outside(), options=RunOptions(max_parallel=1)).run()
    (row,) = report.tasks
    assert row.state == "FAILED"
    assert row.reason == "protected_input_changed: hidden input changed: tests/expected.txt"


def test_the_worker_is_told_held_out_files_exist(tmp_path: Path) -> None:
    _golden(tmp_path)
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD + "#+HIDE: tests/expected.txt\n" + task("Answer", "t", DIFF))
    systems: list[str] = []

    class Listening:
        name = "listening"

        def respond(self, request: ModelRequest) -> AssistantTurn:
            systems.append(request.system or "")
            return AssistantTurn(({"type": "text", "text": "FAILED: no"},), "end_turn")

    Runner(load_plan(plan), model=Listening(), options=RunOptions(max_parallel=1)).run()
    assert "Held-out files" in systems[0]
    assert "42" not in systems[0].split("## How to work")[0].split("## What else is checked")[1]


# -- expected files protected by default (issue 23 item 2) --------------------------------------


def test_rewriting_an_automatically_protected_golden_fails(tmp_path: Path) -> None:
    _golden(tmp_path)
    plan, script = setup(
        tmp_path,
        task("Answer", "t", DIFF),
        _script("t", _write("out/result.txt", "41"), _sh("echo 41 > tests/expected.txt")),
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert result.exit_code == 1
    assert _row(doc, "t")["state"] == "FAILED"
    assert (tmp_path / "tests" / "expected.txt").read_text() == "42\n"
    said = [d for d in doc["diagnostics"] if d["code"] == "F002"]
    assert len(said) == 1 and said[0]["level"] == "info"
    assert "`tests/expected.txt` (compared against by t)" in said[0]["message"]
    assert ":writable: tests/expected.txt" in said[0]["message"]
    (start,) = steps(plan, "run-start")
    assert start["protected_automatically"] == ["tests/expected.txt"]


def test_writable_opts_a_golden_out_of_protection(tmp_path: Path) -> None:
    _golden(tmp_path)
    plan, script = setup(
        tmp_path,
        task("Answer", "t", DIFF, writable="tests/expected.txt"),
        _script("t", _write("out/result.txt", "41"), _sh("echo 41 > tests/expected.txt")),
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "t")["state"] == "DONE"  # the author let it: T014 says what that costs
    assert [d["code"] for d in doc["diagnostics"] if d["code"] in ("F002", "T014")] == ["T014"]
    assert result.exit_code == 0


def test_a_task_asked_to_regenerate_its_golden_is_not_refused(tmp_path: Path) -> None:
    _golden(tmp_path, "41")
    body = "Regenerate tests/expected.txt from the new rules, then write out/result.txt.\n"
    plan, script = setup(
        tmp_path,
        task("Answer", "t", DIFF) + body,
        _script("t", _sh("echo 42 > tests/expected.txt"), _write("out/result.txt", "42")),
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "t")["state"] == "DONE", doc
    assert result.exit_code == 0


def test_t014_asks_to_hide_what_the_worker_could_copy(tmp_path: Path) -> None:
    _golden(tmp_path)
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD + task("Answer", "t", DIFF, protect="tests/expected.txt"))
    (found,) = validate(load_plan(plan))
    assert (found.code, found.level) == ("T014", "warning")
    assert found.message.startswith(
        "check compares against `tests/expected.txt`, a file the worker can read — it could"
        " copy it; hide it with `:hide: tests/expected.txt`"
    )
    plan.write_text(HEAD + task("Answer", "t", DIFF, hide="tests/"))
    assert validate(load_plan(plan)) == []


# -- protection follows paths, per task (issue 28 item 2) ---------------------------------------


def _ordered(first: str, second: str) -> str:
    return "* TODO Both\n  :PROPERTIES:\n  :ID: both\n  :ORDERED: t\n  :END:\n" + first + second


MAKE_GOLDEN = task("Make gen/golden.txt", "make", "test -s gen/golden.txt", level=2)
COMPARE = task("Compare", "cmp", "diff out.txt gen/golden.txt", level=2, protect="gen/**")
MAKER = "  make:\n" + _sh("mkdir -p gen && echo 42 > gen/golden.txt") + "    - say: DONE\n"


@pytest.mark.parametrize(
    "attack",
    [
        _sh("echo 41 > gen/golden.txt"),  # made after run start by a sibling
        _sh("echo 41 > x; mv x gen/golden.txt"),  # a rename into the pattern
        _sh("mkdir d; echo 41 > d/golden.txt; mv gen old; mv d gen"),  # a directory moved
        _sh("rm gen/golden.txt; echo 41 > gen/golden.txt"),
        _sh("echo 41 > gen/other.txt; cp gen/other.txt gen/golden.txt"),
        _write("gen/golden.txt", "41"),
    ],
)
def test_a_file_made_after_run_start_is_protected_by_its_pattern(
    tmp_path: Path, attack: str
) -> None:
    script = (
        "workers:\n" + MAKER + "  cmp:\n" + attack + _write("out.txt", "41") + "    - say: DONE\n"
    )
    plan, script_path = setup(tmp_path, _ordered(MAKE_GOLDEN, COMPARE), script)
    result, doc = resume(plan, script_path, "--max-parallel", "1")
    assert _row(doc, "make")["state"] == "DONE"
    assert _row(doc, "cmp")["state"] == "FAILED"
    assert (tmp_path / "gen" / "golden.txt").read_text() == "42\n"
    assert not (tmp_path / "gen" / "other.txt").exists()
    assert _worker_calls(plan, "cmp")[0]["is_error"] is True
    starts = {s["task_id"]: s for s in steps(plan, "task-start")}
    assert [p["path"] for p in starts["cmp"]["protected"]] == ["gen/golden.txt"]
    assert result.exit_code == 1


def test_the_honest_twin_of_a_later_file_is_done(tmp_path: Path) -> None:
    script = "workers:\n" + MAKER + "  cmp:\n" + _write("out.txt", "42") + "    - say: DONE\n"
    plan, script_path = setup(tmp_path, _ordered(MAKE_GOLDEN, COMPARE), script)
    result, doc = resume(plan, script_path, "--max-parallel", "1")
    assert [_row(doc, t)["state"] for t in ("make", "cmp")] == ["DONE", "DONE"], doc
    assert result.exit_code == 0


def test_a_sibling_regenerating_a_file_another_task_protects_is_not_refused(
    tmp_path: Path,
) -> None:
    _golden(tmp_path, "41")
    regen = task(
        "Regenerate tests/expected.txt", "regen", "grep -qx 42 tests/expected.txt", level=2
    )
    uses = task("Use", "use", DIFF, level=2, protect="tests/expected.txt")
    script = (
        "workers:\n  regen:\n" + _sh("echo 42 > tests/expected.txt") + "    - say: DONE\n"
        "  use:\n" + _sh("mkdir -p out && echo 42 > out/result.txt") + "    - say: DONE\n"
    )
    plan, script_path = setup(tmp_path, _ordered(regen, uses), script)
    result, doc = resume(plan, script_path, "--max-parallel", "1")
    assert [_row(doc, t)["state"] for t in ("regen", "use")] == ["DONE", "DONE"], doc
    assert _worker_calls(plan, "regen")[0]["is_error"] is False
    assert result.exit_code == 0


# -- the judge never sees a hidden input (issue 23 item 1) --------------------------------------


def test_the_judge_is_never_shown_a_hidden_input(tmp_path: Path) -> None:
    from groundskeeper.models import load_model

    _golden(tmp_path, "SECRET-42")
    plan, script = setup(
        tmp_path,
        task(
            "Answer",
            "t",
            "test -s out/result.txt",
            hide="tests/",
            judge="the answer is the product of the two numbers",
            judge_files="out/result.txt tests/expected.txt tests/*",
        ),
        _script("t", _write("out/result.txt", "42")),
    )
    shown: list[str] = []

    class Judge:
        name = "recording-judge"

        def respond(self, request: ModelRequest) -> AssistantTurn:
            shown.append(repr(request.system) + repr(request.messages))
            return AssistantTurn(({"type": "text", "text": "no verdict"},), "end_turn")

    report = Runner(load_plan(plan), model=load_model(f"scripted:{script}"), judge_model=Judge(),
                    options=RunOptions(max_parallel=1)).run()  # fmt: skip
    assert shown, (report.diagnostics, report.tasks)
    assert "out/result.txt" in shown[0] and "42" in shown[0]
    assert all("SECRET" not in text for text in shown)
    codes = [d.code for d in report.diagnostics]
    assert codes.count("F003") == 2  # tests/expected.txt and tests/*: left out, said so
    assert (tmp_path / "tests" / "expected.txt").read_text() == "SECRET-42\n"


@pytest.mark.parametrize(
    "link",
    [
        "os.symlink('../tests/expected.txt', 'out/result.txt')",  # the hidden file itself
        "os.symlink('../tests', 'out/t'); os.symlink('t/expected.txt', 'out/result.txt')",
        "os.symlink('..', 'out/up'); os.symlink('up/tests/expected.txt', 'out/result.txt')",
    ],
)
def test_a_link_naming_a_hidden_input_is_refused(tmp_path: Path, link: str) -> None:
    # the worker cannot read through such a link, but the check (which sees hidden inputs)
    # would follow it and compare the answer with itself
    _golden(tmp_path)
    cmd = f'mkdir -p out && python3 -c "import os; {link}"'
    plan, script = setup(
        tmp_path,
        task("Answer", "t", DIFF, hide="tests/expected.txt"),
        _script("t", _sh(cmd)),
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert result.exit_code == 1
    assert _row(doc, "t")["state"] == "FAILED"
    assert not (tmp_path / "out" / "result.txt").is_symlink()


# -- what a failed attempt is told when the plan holds files out ---------------------------------


class _Recording:
    """The scripted worker, with every request it is sent kept as text."""

    def __init__(self, script: Path) -> None:
        from groundskeeper.models import load_model

        self.inner = load_model(f"scripted:{script}")
        self.name = self.inner.name
        self.heard: list[str] = []

    def respond(self, request: ModelRequest) -> AssistantTurn:
        self.heard.append(json.dumps(list(request.messages)))
        return self.inner.respond(request)


def _run_recorded(plan: Path, script: Path) -> tuple[_Recording, dict[str, Any]]:
    model = _Recording(script)
    report = Runner(load_plan(plan), model=model, options=RunOptions(max_parallel=1)).run()
    return model, {t.id: t for t in report.tasks}


SECRET_DIFF = "diff out.txt tests/expected.txt"
TWO_WRONG_ATTEMPTS = (
    "workers:\n  t:\n"
    + "    - {tool: sh, input: {cmd: 'echo 41 > out.txt'}}\n    - say: DONE\n" * 2
)


def test_a_failed_check_never_tells_the_worker_what_a_hidden_file_holds(tmp_path: Path) -> None:
    _golden(tmp_path, "SECRET7731")
    plan, script = setup(
        tmp_path,
        task("Answer", "t", SECRET_DIFF, hide="tests/expected.txt", max_attempts="2"),
        TWO_WRONG_ATTEMPTS,
    )
    model, rows = _run_recorded(plan, script)
    assert rows["t"].state == "FAILED"
    told = model.heard[-1]
    assert "SECRET7731" not in told
    # pass or fail and nothing else: the status is a value the worker's code could choose
    assert "diff out.txt tests/expected.txt \\u2192 failed (the rest is not shown" in told
    assert "exited with status" not in told


def test_without_hidden_files_a_failed_check_shows_its_output(tmp_path: Path) -> None:
    _golden(tmp_path, "SECRET7731")
    plan, script = setup(
        tmp_path,
        task("Answer", "t", SECRET_DIFF, protect="tests/expected.txt", max_attempts="2"),
        TWO_WRONG_ATTEMPTS,
    )
    model, rows = _run_recorded(plan, script)
    assert rows["t"].state == "FAILED"
    assert "SECRET7731" in model.heard[-1]


def test_a_failed_contract_never_tells_the_worker_what_a_hidden_test_holds(
    tmp_path: Path,
) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_hidden.py").write_text(
        "from sol import f\n\n\ndef test_f():\n    assert f(3) == 'SECRET7731'\n"
    )
    plan, script = setup(
        tmp_path,
        task(
            "Write f",
            "t",
            None,
            hide="tests/test_hidden.py",
            contract="pytest tests",
            max_attempts="2",
        ),
        "workers:\n  t:\n" + '    - {tool: write_file, input: {path: sol.py, content: "def f(x):\\n'
        "    return 'nope'\\n\"}}\n    - say: DONE\n" * 2,
    )
    model, rows = _run_recorded(plan, script)
    assert rows["t"].state == "FAILED"
    told = model.heard[-1]
    assert "SECRET7731" not in told
    # the contract is named, and that it failed; its message is the record's alone
    assert "- pytest tests: failed (the rest is not shown: this run hides inputs" in told
    assert "C020" not in told and "held-out test" not in told


# -- a name with a space, in every path property ------------------------------------------------


@pytest.mark.parametrize("spelt", ['"golden output.txt"', "golden\\ output.txt"])
def test_a_protected_name_with_a_space_is_protected(tmp_path: Path, spelt: str) -> None:
    (tmp_path / "golden output.txt").write_text("42\n")
    plan, script = setup(
        tmp_path,
        task("Keep", "t", "grep -qx 42 out.txt", protect=spelt),
        _script("t", _sh("echo 7 > 'golden output.txt'; echo 42 > out.txt")),
    )
    assert [d.code for d in validate(load_plan(plan)) if d.level == "error"] == []
    resume(plan, script, "--max-parallel", "1")
    assert (tmp_path / "golden output.txt").read_text() == "42\n"  # the write was refused
    (start,) = steps(plan, "task-start")
    assert [p["path"] for p in start["protected"]] == ["golden output.txt"]


@pytest.mark.parametrize("spelt", ['"golden output.txt"', "golden\\ output.txt"])
def test_the_honest_twin_of_a_name_with_a_space_is_done(tmp_path: Path, spelt: str) -> None:
    (tmp_path / "golden output.txt").write_text("42\n")
    plan, script = setup(
        tmp_path,
        task("Keep", "t", "grep -qx 42 out.txt", protect=spelt),
        _script("t", _sh("echo 42 > out.txt")),
    )
    _, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "t")["state"] == "DONE"


def test_an_unclosed_quote_in_a_path_property_is_an_error(tmp_path: Path) -> None:
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD + task("Keep", "t", "test -s out.txt", protect='"golden output.txt'))
    (found,) = [d for d in validate(load_plan(plan)) if d.code == "F001"]
    assert "holds a quote left unclosed" in found.message


# -- CPython in the worker's sandbox against a held-out test (issue 22) -------------------------

PROBE = """
import glob, importlib, os, pathlib, shutil, sqlite3, sys
seen = []
def tried(name, how):
    try:
        seen.append(f"{name}: {how()!r}")
    except Exception as error:
        seen.append(f"{name}: {type(error).__name__}")
tried("open", lambda: open("tests/test_heldout.py").read())
tried("case", lambda: open("Tests/Test_Heldout.py").read())
tried("up", lambda: open("tests/../tests/test_heldout.py").read())
tried("listdir", lambda: os.listdir("tests"))
tried("scandir", lambda: [e.name for e in os.scandir("tests")])
tried("stat", lambda: os.stat("tests/test_heldout.py").st_size)
tried("walk", lambda: sorted(f for _, _, fs in os.walk(".") for f in fs))
tried("glob", lambda: sorted(glob.glob("**/*.py", recursive=True)))
tried("pathlib", lambda: sorted(p.name for p in pathlib.Path(".").rglob("*")))
tried("copy", lambda: shutil.copy("tests/test_heldout.py", "copy.py"))
tried("link", lambda: os.link("tests/test_heldout.py", "hard.py"))
tried("rename", lambda: os.rename("tests", "exposed"))
tried("symlink", lambda: (os.symlink("tests/test_heldout.py", "soft.py"), open("soft.py").read()))
tried("sqlite", lambda: sqlite3.connect("file:tests/test_heldout.py?mode=ro", uri=True)
      .execute("select 1").fetchall())
tried("import", lambda: (sys.path.insert(0, "tests"), importlib.import_module("test_heldout")))
open("seen.txt", "w").write("\\n".join(seen) + "\\n")
"""


def test_a_python_program_learns_nothing_of_a_held_out_test(tmp_path: Path) -> None:
    """The worker's python3, by every way the language offers, finds no held-out test: the
    run fails on the held-out test the worker never saw, which is left as it was."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "mathx.py").write_text("def double(x):\n    return x + x\n")
    (tmp_path / "tests" / "test_visible.py").write_text(
        "from mathx import double\n\n\ndef test_two():\n    assert double(2) == 4\n"
    )
    held_out = (
        "from mathx import double\n\n\ndef test_held_out_SECRET():\n    assert double(3) == 7\n"
    )
    (tmp_path / "tests" / "test_heldout.py").write_text(held_out)
    calls = [
        {"tool": "write_file", "input": {"path": "probe.py", "content": PROBE}},
        {"tool": "sh", "input": {"cmd": "python3 probe.py"}},
    ]
    script = "workers:\n  t:\n" + "".join(f"    - {json.dumps(c)}\n" for c in calls)
    plan, script_path = setup(
        tmp_path,
        task(
            "Make the tests pass",
            "t",
            "python3 -m pytest -q -p no:cacheprovider tests",
            hide="tests/test_heldout.py",
        ),
        script + "    - say: DONE\n",
    )
    result, doc = resume(plan, script_path, "--max-parallel", "1")
    assert result.exit_code == 1
    assert _row(doc, "t")["state"] == "FAILED"
    assert _row(doc, "t")["reason"] == (
        "nonzero_status: check line 1: `python3 -m pytest -q -p no:cacheprovider tests` "
        "exited with status 1"
    )
    # red-first ran the held-out test (it alone fails: `F.`), as each attempt's check did
    (red, *attempts) = steps(plan, "check")
    assert (red["phase"], red["verdict"], red["excerpt"][:2]) == ("red-first", "FAIL", "F.")
    assert [a["verdict"] for a in attempts] == ["FAIL"] * len(attempts)
    seen = (tmp_path / "seen.txt").read_text()
    assert seen.splitlines() == [
        "open: FileNotFoundError",
        "case: FileNotFoundError",
        "up: FileNotFoundError",
        "listdir: ['test_visible.py']",
        "scandir: ['test_visible.py']",
        "stat: FileNotFoundError",
        "walk: ['mathx.py', 'plan.org', 'probe.py', 'test_visible.py', 'workers.yaml']",
        "glob: ['mathx.py', 'probe.py', 'tests/test_visible.py']",
        "pathlib: ['mathx.py', 'plan.org', 'probe.py', 'test_visible.py', 'tests', 'workers.yaml']",
        "copy: FileNotFoundError",
        "link: FileNotFoundError",
        "rename: PermissionError",
        "symlink: PermissionError",
        "sqlite: OperationalError",
        "import: ModuleNotFoundError",
    ]
    assert (tmp_path / "tests" / "test_heldout.py").read_text() == held_out
    for made in ("copy.py", "hard.py", "soft.py", "exposed"):
        assert not (tmp_path / made).exists(), made


class _Guessing:
    """A worker that writes a wrong answer and claims DONE each attempt, keeping every
    message it was sent (the feedback among them)."""

    name = "guessing"

    def __init__(self, root: Path) -> None:
        self.root = root
        self.heard: list[str] = []

    def respond(self, request: ModelRequest) -> AssistantTurn:
        self.heard.append(repr(request.messages))
        (self.root / "out").mkdir(exist_ok=True)
        (self.root / "out" / "result.txt").write_text("41\n")
        return AssistantTurn(({"type": "text", "text": "DONE"},), "end_turn")


def test_a_failed_check_s_output_never_brings_a_hidden_input_back(tmp_path: Path) -> None:
    """What a check printed (here diff's `> SECRET-42`) can hold a hidden input: in a run
    that hides inputs it stays in the record for the reviewer, and the worker hears the
    check's reason alone."""
    _golden(tmp_path, "SECRET-42")
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD + task("Answer", "t", DIFF, hide="tests/expected.txt"))
    worker = _Guessing(tmp_path)
    report = Runner(load_plan(plan), model=worker, options=RunOptions(max_parallel=1)).run()
    (row,) = report.tasks
    assert (row.state, row.attempts) == ("FAILED", 2)
    second = worker.heard[1]
    assert "your work did not pass its acceptance check: diff out/result.txt" in second
    assert "exited with status" not in second
    assert "→ failed (the rest is not shown: this run hides inputs" in second
    assert "SECRET" not in "".join(worker.heard)
    assert "> SECRET-42" in row.output  # the reviewer's record keeps it


def test_without_hidden_inputs_the_output_goes_back(tmp_path: Path) -> None:
    _golden(tmp_path, "42")
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD + task("Answer", "t", DIFF))
    worker = _Guessing(tmp_path)
    Runner(load_plan(plan), model=worker, options=RunOptions(max_parallel=1)).run()
    assert "> 42" in worker.heard[1]
    assert "the rest is not shown" not in worker.heard[1]
    assert (
        "check line 1: `diff out/result.txt tests/expected.txt` exited with status 1"
        in (worker.heard[1])
    )
