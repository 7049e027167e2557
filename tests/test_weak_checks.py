"""Checks whose own text accepts a fake: a negated command whose status is an error (`! grep
-q ERROR build.log` with the log removed) fails the check at its line, in a check only."""

from __future__ import annotations

from pathlib import Path

from groundskeeper.sandbox import run
from tests.test_cli_run import resume, setup, task

LOG = "ERROR: link failed\n"


def _build(tmp_path: Path, check: str, worker: str) -> tuple[str, str | None]:
    (tmp_path / "build.log").write_text(LOG)
    plan, script = setup(tmp_path, task("Fix the build", "build", check), worker)
    _, doc = resume(plan, script)
    (entry,) = doc["tasks"]
    return entry["state"], entry["reason"]


REMOVES_LOG = "workers:\n  build: [{tool: sh, input: {cmd: rm build.log}}, {say: DONE}]\n"
FIXES_LOG = (
    "workers:\n  build: [{tool: write_file, input: {path: build.log, content: 'ok\\n'}},"
    " {say: DONE}]\n"
)


def test_a_removed_log_fails_a_negated_grep(tmp_path: Path) -> None:
    state, reason = _build(tmp_path, "! grep -q ERROR build.log", REMOVES_LOG)
    assert state == "FAILED"
    assert reason == (
        "negated_error: check line 1: `! grep -q ERROR build.log`: `grep` exited with status 2,"
        ' an error (a missing or unreadable file, a bad option or expression), not a "no": in'
        ' a check `!` passes only on a "no"'
    )


def test_a_fixed_log_passes_the_same_check(tmp_path: Path) -> None:
    state, reason = _build(tmp_path, "! grep -q ERROR build.log", FIXES_LOG)
    assert (state, reason) == ("DONE", None)


def test_the_negation_decides_in_an_if_and_in_a_list_too(tmp_path: Path) -> None:
    for check in (
        "if ! grep -q ERROR build.log; then true; else exit 1; fi",
        "test -n x && ! grep -q ERROR build.log",
        "! grep -q ERROR build.log || exit 1",
    ):
        (tmp_path / ".groundskeeper").exists() and _wipe(tmp_path)
        state, reason = _build(tmp_path, check, REMOVES_LOG)
        assert state == "FAILED" and reason is not None, check
        assert reason.startswith("negated_error: check line 1:"), (check, reason)


def _wipe(tmp_path: Path) -> None:
    import shutil

    for child in tmp_path.iterdir():
        shutil.rmtree(child) if child.is_dir() else child.unlink()


def _check(tmp_path: Path, line: str) -> tuple[int, str | None]:
    result = run(line, workdir=tmp_path, read_only=True, errexit=True, sentinel="S")
    return result.status, result.negated_error


def test_only_an_error_status_is_refused(tmp_path: Path) -> None:
    (tmp_path / "build.log").write_text(LOG)
    assert _check(tmp_path, "! grep -q NOPE build.log") == (0, None)  # "no": a pass
    assert _check(tmp_path, "! grep -q ERROR build.log") == (1, None)  # "yes": a failure
    status, why = _check(tmp_path, "! cmp build.log missing.txt")
    assert status == 2 and why is not None and why.startswith("`cmp` exited with status 2")
    status, why = _check(tmp_path, "! test 1 -gt x")
    assert status == 2 and why is not None and why.startswith("`test` exited with status 2")
    status, why = _check(tmp_path, "! grep -q x < missing.txt")
    assert status == 1 and why is not None and why.startswith("the negated command could not")
    status, why = _check(tmp_path, "! echo missing.txt | xargs grep -q x")
    assert status == 123 and why is not None and why.startswith("`grep` exited with status 2")
    status, why = _check(tmp_path, "set -o pipefail\n! grep x missing.txt | cat")
    assert status == 2 and why is not None and why.startswith("`grep` exited with status 2")
    status, why = _check(tmp_path, "until ! grep -q x missing.txt; do break; done")
    assert status == 2 and why is not None and why.startswith("`grep` exited with status 2")
    status, why = _check(tmp_path, "true\nn=$(! diff build.log missing.txt; echo $?)")
    assert status == 2 and why is not None and why.startswith("`diff` exited with status 2")


def test_a_workers_shell_keeps_bashs_negation(tmp_path: Path) -> None:
    result = run("! grep -q x missing.txt", workdir=tmp_path)
    assert (result.status, result.negated_error) == (0, None)


# --- lint: what each weak check's text accepts, and the strong twin it points at ---------


def _codes(check: str) -> list[str]:
    from tests.test_lint_checks import codes

    return codes(check)


def _found(check: str) -> list[tuple[str, str]]:
    from groundskeeper.plan.lint import validate
    from groundskeeper.plan.org import parse_plan

    text = f"* TODO t\n:PROPERTIES:\n:done-when: {check}\n:END:\n"
    return [(d.code, d.message) for d in validate(parse_plan(text))]


def test_lint_warns_of_a_final_negation_on_a_file_a_worker_can_empty() -> None:
    assert _codes("! grep -q ERROR build.log") == ["T029"]
    assert _codes("! awk '/ERROR/{f=1} END{exit !f}' build.log") == ["T029"]
    assert _codes("test -f build.log && ! grep -q ERROR build.log") == []
    assert _codes("test -s build.log; ! grep -q ERROR build.log") == []
    assert _codes("! test -e build.log") == []  # absence is what it asks
    assert _codes("grep -q '5 passed' test.log; ! grep -q skipped test.log") == []
    from tests.test_lint_checks import codes

    assert codes("! grep -q ERROR build.log", protect="build.log") == []  # it cannot go
    assert codes("! grep -q ERROR build.log", protect="build.log", writable="build.log") == ["T029"]
    assert _codes("cat report.txt; ! grep -q FAIL report.txt") == []
    assert sorted(_codes("! grep -q x other.txt; ! grep -q FAIL report.txt")) == ["T026", "T029"]


def test_lint_reads_a_dropped_program_status_as_a_check_that_cannot_fail() -> None:
    assert _codes("python3 -m pytest -q tests | grep -q passed") == ["T005", "T025"]
    assert _codes("python3 -m unittest discover 2>&1 | grep -q OK") == ["T005"]
    assert _codes("if python3 t.py | grep -q ok; then :; else exit 1; fi") == ["T005"]
    assert _codes("set -o pipefail; python3 -m pytest -q tests | grep -q passed") == ["T025"]
    assert _codes("python3 -m pytest -q tests") == ["T025"]
    assert _codes("grep ERROR build.log | grep -q link") == []  # filters of data
    assert _codes('test "$(python3 total.py | tail -n 1)" = 35') == []  # output compared


def test_lint_warns_of_an_unanchored_grep_of_an_answer() -> None:
    # a file's text as the regex is also T037's
    assert _codes('grep -q "$(cat key/answer.txt)" out.txt') == ["T010", "T037"]
    for weak in (
        'grep -qF "$X" out.txt',
        'grep -q -e "$X" out.txt',
        "grep -q 4711 out.txt",
    ):
        assert _codes(weak) == ["T010"], weak
    for strong in (
        "grep -qx 4711 out.txt",  # the answer the check spells: nothing to enumerate
        "grep -q 'total: 35' out.txt",
        'grep -c "$X" out.txt',
        'grep -qxF "$(cat key/answer.txt)" out.txt && test "$(wc -l < out.txt)" -eq 1',
        'test "$(cat out.txt)" = "$(cat key/answer.txt)"',
    ):
        assert _codes(strong) == [], strong


def test_lint_warns_that_a_whole_line_match_of_an_unspelt_answer_takes_a_list() -> None:
    """`grep -qxF "$(cat held/code.txt)" out.txt`, the form T010 used to advise, finds the
    hidden code on one line of a file listing all 9000 candidates (adversary-21 F21)."""
    for weak in (
        'grep -qxF "$(cat held/code.txt)" out.txt',
        'grep -q "^$X$" out.txt',
        'grep -qx -e "$X" out.txt',
    ):
        (message,) = [m for c, m in _found(weak) if c == "T010"]
        assert "a file listing every candidate, one per line, passes" in message, weak
        assert 'test "$(cat out.txt)" = "$(cat KEY)"' in message, weak


def test_lint_warns_that_a_source_not_spelling_the_answer_proves_nothing() -> None:
    for guard in (
        "! grep -q 4711 solve.py || exit 1; python3 solve.py | grep -qx 4711",
        "python3 solve.py | grep -qx 4711 && ! grep -qw 4711 solve.py",
        "if ! grep -qF -e 4711 src/solve.js; then test -s out.txt; else exit 1; fi",
    ):
        assert "T036" in _codes(guard), guard
    for other in (
        "test -s build.log; ! grep -q ERROR build.log",  # a log, not a program
        "python3 solve.py | grep -qx 4711",
        "grep -q 'def total' solve.py",  # asks that it be there
        # a rule on the source's form, no answer spelt (adversary-21 F5)
        "! grep -qE '[[:space:]]+$' *.py tests/*.py || exit 1",
        "! grep -q '\\t' calc.py",
    ):
        assert "T036" not in _codes(other), other


def test_lint_and_the_sandbox_agree_on_what_a_launcher_starts(tmp_path: Path) -> None:
    (tmp_path / "p.py").write_text("print(1)\n")
    for line, status in (
        ("echo p.py | xargs python3", 127),
        ("find . -name p.py -exec python3 {} +", 127),
        ("env FOO=1 python3 p.py", 125),
        ("echo x | xargs cd", 126),
    ):
        assert _codes(line) == ["T004"], line
        assert run(line, workdir=tmp_path, read_only=True).status == status, line
    for line in ("echo p.py | xargs cat", "find . -name p.py -exec cat {} +", "env FOO=1"):
        assert _codes(line) == [], line
        assert run(line, workdir=tmp_path, read_only=True).status == 0, line


# --- the same through the CLI: `lint` names the fake's check, and the honest twin runs -------


def _lint(tmp_path: Path, check: str) -> tuple[int, list[str]]:
    import json

    from click.testing import CliRunner

    from groundskeeper.cli import main

    plan = tmp_path / "plan.org"
    plan.write_text(task("T", "t", check))
    result = CliRunner().invoke(main, ["lint", str(plan), "--json"])
    found = json.loads(result.stdout)
    return result.exit_code, [d["code"] for d in found]


def test_cli_lint_refuses_a_pytest_pipe_and_takes_it_under_pipefail(tmp_path: Path) -> None:
    assert _lint(tmp_path, "python3 -m unittest -q 2>&1 | grep -q OK") == (1, ["T005"])
    assert _lint(tmp_path, "set -o pipefail; python3 -m unittest -q 2>&1 | grep -q OK") == (
        0,
        [],
    )


def test_cli_lint_warns_of_a_guess_list_and_not_of_the_whole_file(tmp_path: Path) -> None:
    # the key's text as the pattern: unanchored (T010) and a regex (T037)
    assert _lint(tmp_path, 'grep -q "$(cat key/answer.txt)" out.txt') == (0, ["T010", "T037"])
    # a whole line of a file that may list every candidate (adversary-21 F21)
    assert _lint(tmp_path, 'grep -qxF "$(cat key/answer.txt)" out.txt') == (0, ["T010"])
    assert _lint(tmp_path, 'test "$(cat out.txt)" = "$(cat key/answer.txt)"') == (0, [])


def test_cli_a_launcher_fake_is_refused_and_its_loop_twin_passes(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from groundskeeper.cli import main

    (tmp_path / "check.py").write_text("print('ok')\n")
    assert _lint(tmp_path, "echo check.py | xargs python3") == (1, ["T004"])
    assert _lint(tmp_path, "for f in check.py; do python3 $f; done") == (0, [])
    ran = CliRunner().invoke(main, ["check", str(tmp_path / "plan.org")])
    assert ran.exit_code == 0, ran.output
    for wrapper in ("timeout 5", "nice", "command", "env X=1"):
        assert _lint(tmp_path, f"{wrapper} python3 check.py") == (1, ["T004"]), wrapper


def test_cli_lint_does_not_give_guess_list_advice_on_a_prohibition(tmp_path: Path) -> None:
    # adversary-11 O2: a grep whose match FAILS the check lists no candidates; `-x` would
    # weaken it (a CRLF file passes unless a line is only "\r")
    cr = "\"$(printf '\\r')\""
    assert _lint(tmp_path, f"test -s out.txt; if grep -q {cr} out.txt; then exit 1; fi") == (
        0,
        [],
    )
    # the twin whose match passes the check is still a guess list
    assert "T010" in _lint(tmp_path, f"if grep -q {cr} out.txt; then exit 0; fi; exit 1")[1]


# --- adversary-17 F2: a program piped into `diff -`/`cmp -` is judged by the comparison ---------

CASE_LOOP = """* TODO Write the multiplier
  :PROPERTIES:
  :ID: solve
  :END:
  Write solve.py: it reads two integers from stdin and prints their product.
  #+begin_src sh :check
  for t in cases/*.in; do
    python3 solve.py < "$t" | diff - "${t%.in}.out"
  done
  #+end_src
"""


def _solver(tmp_path: Path, program: str) -> tuple[int, list[str], dict[str, str]]:
    import json

    from click.testing import CliRunner

    from groundskeeper.cli import main
    from tests.test_cli_run import HEAD

    cases = tmp_path / "cases"
    cases.mkdir()
    for i, (a, b) in enumerate(((2, 3), (6, 7)), 1):
        (cases / f"c{i}.in").write_text(f"{a} {b}\n")
        (cases / f"c{i}.out").write_text(f"{a * b}\n")
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD + CASE_LOOP)
    workers = tmp_path / "w.yaml"
    content = json.dumps(program)
    workers.write_text(
        "workers:\n  solve: [{tool: write_file, input: {path: solve.py, content: "
        + content
        + "}}, {say: DONE}]\n"
    )
    linted = CliRunner().invoke(main, ["lint", str(plan), "--json"])
    found = [d["code"] for d in json.loads(linted.stdout)]
    result = CliRunner().invoke(main, ["resume", str(plan), "--model", f"scripted:{workers}"])
    assert result.exit_code in (0, 1), result.output
    from groundskeeper.plan.org import load_plan

    return linted.exit_code, found, {t.task_id: str(t.keyword) for t in load_plan(plan).tasks()}


SOLVES = "a, b = map(int, input().split())\nprint(a * b)\n"
ADDS = "a, b = map(int, input().split())\nprint(a + b)\n"


def test_a_case_loop_piping_a_wrong_solver_into_diff_fails(tmp_path: Path) -> None:
    """The docs' own loop without `pipefail`: lint neither refuses nor warns, since `diff`
    decides; a solver that prints wrong products FAILS."""
    status, found, keyword = _solver(tmp_path, ADDS)
    assert (status, found, keyword) == (0, ["T014", "T014"], {"solve": "FAILED"})


def test_a_case_loop_piping_a_right_solver_into_diff_is_done(tmp_path: Path) -> None:
    status, found, keyword = _solver(tmp_path, SOLVES)
    assert (status, found, keyword) == (0, ["T014", "T014"], {"solve": "DONE"})


def test_lint_reads_a_comparing_last_stage_as_a_check_that_can_fail() -> None:
    assert _codes("python3 solve.py < c1.in | diff - c1.out") == []
    assert _codes("python3 render.py | cmp - tests/out.golden") == []
    assert _codes("python3 render.py | diff tests/out.golden -") == []
    assert _codes("set -o pipefail; python3 render.py | diff - tests/out.golden") == []
    # a filter that finds a word in the output still hides the program's failure
    assert _codes("python3 render.py | grep -q A") == ["T005"]
    # one whole line written in the check: any other output fails it, so a warning (T041)
    assert _codes("python3 render.py | grep -qx A") == ["T041"]
    assert _codes("python3 render.py | diff - a b") == ["T005"]  # no `-`: not its input


def test_lint_t034_only_where_code_under_test_can_be_imported() -> None:
    """adversary-17 F1: a `python3 -c` that imports only the standard library runs no code
    under test; one importing a workdir module (or loading code) still gets T034."""
    stdlib = "python3 -c \"import json; assert json.load(open('c.json'))['port'] == 8080\""
    assert "T034" not in _codes(stdlib)
    for imports in (
        "python3 -c 'import calc; assert calc.add(2, 3) == 5'",
        "python3 -c 'from calc import add; assert add(2, 3) == 5'",
        "python3 -c 'import runpy; runpy.run_path(\"calc.py\")'",
        "python3 -c 'exec(open(\"calc.py\").read())'",
        "python3 -c 'import json, calc'",
    ):
        assert "T034" in _codes(imports), imports


def test_lint_warns_that_a_count_of_files_takes_placeholders() -> None:
    """adv24 F7: `test $(ls out/*.csv | wc -l) -eq 5` passes for five empty files, as
    `test -s FILE` passes for any content: T010 says so, as it does of that."""
    for weak in (
        "test $(ls out/*.csv | wc -l) -eq 5",
        '[ "$(find out -name "*.csv" | wc -l)" -ge 5 ]',
        "test $(ls out | grep csv | wc -l) -gt 4",
    ):
        assert _codes(weak) == ["T010"], weak
    for strong in (
        "test $(ls out/*.csv | wc -l) -eq 5 && grep -q region out/north.csv",
        "test $(wc -l < out.csv) -eq 5",
    ):
        assert _codes(strong) == [], strong
    assert "T010" not in _codes("test $(ls out | wc -l) -eq 0")  # none left: no placeholder
