"""A program a check runs only for its output, which a comparison judges (`python3 render.py |
diff - tests/out.golden`, `python3 -m textkit < in | cmp - out`), is the code under test, not
the check's own program (adversary-17 F4): a task about what it prints may fix it, whether or
not its text names the file. The golden it is compared with stays protected, and a program
named as a checker, or also run for its status, stays the check's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from groundskeeper.plan.programs import judged_programs
from tests.test_cli_run import HEAD, resume


def _plan(tmp_path: Path, text: str, check: str, writes: dict[str, str]) -> dict[str, object]:
    (tmp_path / "data.txt").write_text("a\nb\n")
    (tmp_path / "render.py").write_text("for line in open('data.txt'):\n    print(line.strip())\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "out.golden").write_text("A\nB\n")
    body = "\n".join(f"  {line}" for line in check.splitlines())
    plan = tmp_path / "plan.org"
    plan.write_text(
        HEAD + "* TODO Upper-case output\n  :PROPERTIES:\n  :ID: up\n  :END:\n"
        f"  {text}\n  #+begin_src sh :check\n{body}\n  #+end_src\n"
    )
    entry = _written(plan, writes)
    return {"state": entry["state"], "reason": entry["reason"]}


def _written(plan: Path, writes: dict[str, str]) -> dict[str, object]:
    """The plan's one task (id `up`) after a resume whose worker writes `writes` and says
    DONE."""
    calls = ", ".join(
        "{tool: write_file, input: {path: " + path + ", content: " + json.dumps(content) + "}}"
        for path, content in writes.items()
    )
    script = plan.parent / "w.yaml"
    script.write_text("workers:\n  up: [" + calls + ", {say: DONE}]\n")
    _, doc = resume(plan, script)
    (entry,) = doc["tasks"]
    return dict(entry)


TEXT = "The renderer should print every line of data.txt in upper case; make it do so."
CHECK = "set -o pipefail\npython3 render.py | diff - tests/out.golden"
UPPER = "for line in open('data.txt'):\n    print(line.strip().upper())\n"


def test_rewriting_the_golden_with_the_program_fails(tmp_path: Path) -> None:
    """The fake twin: the program is the worker's, the golden it is compared with is not."""
    found = _plan(tmp_path, TEXT, CHECK, {"render.py": "print('X')\n", "tests/out.golden": "X\n"})
    assert found["state"] == "FAILED"
    assert (tmp_path / "tests" / "out.golden").read_text() == "A\nB\n"


def test_a_checker_named_program_piped_into_diff_stays_the_checks(tmp_path: Path) -> None:
    """`python3 check_render.py | diff - golden`: a checker's name keeps it the check's."""
    (tmp_path / "check_render.py").write_text("import subprocess\nprint('ok')\n")
    check = "set -o pipefail\npython3 check_render.py | diff - tests/out.golden"
    found = _plan(tmp_path, TEXT, check, {"check_render.py": "print('A')\nprint('B')\n"})
    assert found["state"] == "FAILED"
    assert (tmp_path / "check_render.py").read_text() == "import subprocess\nprint('ok')\n"


def test_a_program_also_run_for_its_status_stays_the_checks(tmp_path: Path) -> None:
    check = (
        "set -o pipefail\npython3 render.py --self-test\n"
        "python3 render.py | diff - tests/out.golden"
    )
    found = _plan(tmp_path, TEXT, check, {"render.py": UPPER})
    assert found["state"] == "FAILED"


def test_the_program_whose_output_diff_judges_is_the_work(tmp_path: Path) -> None:
    found = _plan(tmp_path, TEXT, CHECK, {"render.py": UPPER})
    assert found == {"state": "DONE", "reason": None}
    result = CliRunner().invoke(main, ["lint", str(tmp_path / "plan.org"), "--json"])
    codes = [(d["code"], d["message"]) for d in json.loads(result.stdout)]
    assert [c for c, _ in codes] == ["T014"]  # the golden's "could copy it", not render.py's
    assert "tests/out.golden" in codes[0][1]


@pytest.mark.parametrize(
    ("check", "judged"),
    [
        ("python3 render.py | diff - tests/out.golden", ["render.py"]),
        (
            "python3 -m textkit < s.txt | cmp - e.txt",
            ["textkit.py", "textkit/__init__.py", "textkit/__main__.py"],
        ),
        ('for t in c/*.in; do python3 solve.py < "$t" | diff - "${t%.in}.out"; done', ["solve.py"]),
        ("python3 render.py | cmp e.txt", ["render.py"]),  # cmp reads its input for a missing one
        ("python3 render.py | diff /dev/stdin e.txt", ["render.py"]),
        ("python3 render.py | diff -u - e.txt", ["render.py"]),  # an option before them
        ("python3 render.py | cmp -n 2 - e.txt", []),  # a part is compared
        ("python3 render.py | cmp - -", []),  # no file
        ("python3 check.py | diff - e.txt", []),  # a checker's name
        ("python3 tests/render.py | diff - e.txt", []),  # under the tests
        ("python3 render.py | grep -qx A", []),  # a filter, not a comparison of the whole
        ("python3 render.py | diff - e.txt; python3 render.py", []),  # its status decides too
        ('test "$(python3 render.py)" = A', []),
    ],
)
def test_judged_programs_reads_the_check(check: str, judged: list[str]) -> None:
    assert sorted(judged_programs(check)) == judged


# --- the generator of a golden the task asks to regenerate is its reference (adversary-17 F18)


def _regen(tmp_path: Path, text: str, cmd: str) -> tuple[str, str, str]:
    (tmp_path / "gen.py").write_text("print(6 * 7)\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "expected.txt").write_text("41\n")
    plan = tmp_path / "plan.org"
    plan.write_text(
        HEAD + "* TODO Golden\n  :PROPERTIES:\n  :ID: regen\n  :END:\n"
        f"  {text}\n  #+begin_src sh :check\n  set -o pipefail\n"
        "  python3 gen.py | diff - tests/expected.txt\n  #+end_src\n"
    )
    script = tmp_path / "w.yaml"
    script.write_text(
        "workers:\n  regen: [{tool: sh, input: {cmd: " + json.dumps(cmd) + "}}, {say: DONE}]\n"
    )
    _, doc = resume(plan, script)
    (entry,) = doc["tasks"]
    golden = (tmp_path / "tests" / "expected.txt").read_text()
    return entry["state"], (tmp_path / "gen.py").read_text(), golden


REGENERATES = "python3 gen.py > tests/expected.txt"
STALE_GENERATOR = "printf 'print(41)\\n' > gen.py"


def test_rewriting_the_generator_instead_of_regenerating_fails(tmp_path: Path) -> None:
    text = "Without touching gen.py, regenerate tests/expected.txt."
    assert _regen(tmp_path, text, STALE_GENERATOR) == ("FAILED", "print(6 * 7)\n", "41\n")


def test_regenerating_a_golden_forbidden_by_name_fails(tmp_path: Path) -> None:
    text = "Without touching tests/expected.txt, fix gen.py."
    assert _regen(tmp_path, text, REGENERATES) == ("FAILED", "print(6 * 7)\n", "41\n")


@pytest.mark.parametrize(
    "text",
    [
        "Without touching gen.py, regenerate tests/expected.txt.",
        "Regenerate tests/expected.txt with gen.py, but don't change gen.py.",
    ],
)
def test_regenerating_while_told_to_keep_the_generator_is_done(tmp_path: Path, text: str) -> None:
    assert _regen(tmp_path, text, REGENERATES) == ("DONE", "print(6 * 7)\n", "42\n")


# --- a program given the file the task writes is a tool over the work (adversary-21 F13) ---


@pytest.mark.parametrize(
    ("check", "given"),
    [
        ("python3 tools/canon.py out.txt | diff - k.txt", {"tools/canon.py": ["out.txt"]}),
        ("python3 render.py | diff - e.txt", {"render.py": []}),
        ("python3 solve.py -v < in/a.txt | cmp - e.txt", {"solve.py": ["in/a.txt"]}),
        ('python3 solve.py < "$t" | diff - e.txt', {"solve.py": []}),  # not spelt out
    ],
)
def test_judged_programs_given_names_what_each_is_given(
    check: str, given: dict[str, list[str]]
) -> None:
    from groundskeeper.plan.programs import judged_programs_given

    found = judged_programs_given(check)
    assert {p: sorted(files) for p, files in found.items()} == given


def _canon(tmp_path: Path, text: str, writes: dict[str, str]) -> str:
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "canon.py").write_text(
        "import sys\nfor line in sorted(open(sys.argv[1]).read().split()):\n    print(line)\n"
    )
    (tmp_path / "held").mkdir()
    (tmp_path / "held" / "expected.txt").write_text("2\n3\n")
    plan = tmp_path / "plan.org"
    plan.write_text(
        HEAD + "#+HIDE: held/\n* TODO Primes\n  :PROPERTIES:\n  :ID: up\n  :END:\n"
        f"  {text}\n  #+begin_src sh :check\n  set -o pipefail\n"
        "  python3 tools/canon.py out.txt | diff - held/expected.txt\n  #+end_src\n"
    )
    return str(_written(plan, writes)["state"])


KEY_PRINTER = "print(open('held/expected.txt').read(), end='')\n"


def test_the_normalizer_given_the_output_the_task_writes_is_the_checks(tmp_path: Path) -> None:
    text = "Write out.txt listing the primes below 4, one per line."
    writes = {"out.txt": "no idea\n", "tools/canon.py": KEY_PRINTER}
    assert _canon(tmp_path, text, writes) == "FAILED"
    assert (tmp_path / "tools" / "canon.py").read_text().startswith("import sys")


def test_the_output_it_normalizes_passes(tmp_path: Path) -> None:
    text = "Write out.txt listing the primes below 4, one per line."
    assert _canon(tmp_path, text, {"out.txt": "3\n2\n"}) == "DONE"
