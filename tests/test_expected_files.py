"""Issue 23: which files a check compares against is read the way the check will run — `cd`,
variables, `${…}`, `for` words, options and their arguments, a `-` fed by a pipe or `<`,
`python3 -c` comparisons — and only an explicit ask in the task's text (the file as the
object of a changing verb) or `:writable:` leaves one unprotected. Through the CLI where a
worker is involved: each fake (adversary rounds 1–2) beside its honest twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper.plan.expected import asks_to_change, compared_by
from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import load_plan
from groundskeeper.plan.spec import compile_plan
from tests.test_cli_run import HEAD, resume, setup, steps, task
from tests.test_paths_cli import _golden, _row, _sh, _write

PY_READ = "python3 -c \"import sys; sys.exit(open('out.txt').read() != open('{}').read())\""


@pytest.mark.parametrize(
    ("check", "golden"),
    [
        ("cd tests && diff ../out.txt expected.txt", "tests/expected.txt"),
        ("cd tests; diff ../out.txt ./expected.txt", "tests/expected.txt"),
        ('E=tests/expected.txt; diff out.txt "$E"', "tests/expected.txt"),
        ("D=tests; diff out.txt ${D}/expected.txt", "tests/expected.txt"),
        ('diff out.txt "${EXPECTED:-tests/expected.txt}"', "tests/expected.txt"),
        ("diff -u out.txt tests/expected.txt", "tests/expected.txt"),
        ("diff -U 3 out.txt tests/expected.txt", "tests/expected.txt"),
        ("cmp -s out.txt tests/expected.txt", "tests/expected.txt"),
        ("cmp -n 10 out.txt tests/expected.txt", "tests/expected.txt"),
        ("sort tests/expected.txt | diff - out.txt", "tests/expected.txt"),
        ("diff out.txt - < tests/expected.txt", "tests/expected.txt"),
        ("sha256sum -c tests/sums.txt", "tests/sums.txt"),
        ("sha256sum --quiet --check tests/sums.txt", "tests/sums.txt"),
        ('test "$(cat tests/expected.txt)" = "$(cat out.txt)"', "tests/expected.txt"),
        ('[[ "$(< tests/expected.txt)" == "$(< out.txt)" ]]', "tests/expected.txt"),
        ('test -z "$(comm -3 out.txt tests/expected.txt)"', "tests/expected.txt"),
        (PY_READ.format("tests/expected.txt"), "tests/expected.txt"),
        (
            'python3 -c "from pathlib import Path as P; import pathlib;'
            " assert pathlib.Path('tests/expected.txt').read_text() == open('out.txt').read()\"",
            "tests/expected.txt",
        ),
        (
            "cd tests && python3 -c"
            " \"import filecmp; assert filecmp.cmp('../out.txt', 'expected.txt')\"",
            "tests/expected.txt",
        ),
        (
            "python3 - <<'PY'\nimport sys\nsys.exit(open('out.txt').read()"
            " != open('tests/expected.txt').read())\nPY\n",
            "tests/expected.txt",
        ),
        (
            "cd tests\npython3 <<'PY'\nassert open('../out.txt').read() =="
            " open('expected.txt').read()\nPY\n",
            "tests/expected.txt",
        ),
        ("for f in a b; do diff out/$f.txt tests/$f.txt; done", "tests/b.txt"),
        ("(cd tests && diff ../out.txt expected.txt) && diff out.txt tests/x.txt", "tests/x.txt"),
        ("if test -d tests; then cd tests; fi; diff ../out.txt expected.txt", "tests/expected.txt"),
    ],
)
def test_a_compared_file_is_found_as_the_check_will_name_it(check: str, golden: str) -> None:
    assert golden in compared_by("sh", check)


def test_an_option_argument_is_not_a_compared_file() -> None:
    assert compared_by("sh", "cmp -n 10 a.txt b.txt") == ("a.txt", "b.txt")
    assert compared_by("sh", "diff -U 3 a.txt b.txt") == ("a.txt", "b.txt")
    assert compared_by("sh", "diff /dev/null - < b.txt") == ("b.txt",)
    assert compared_by("sh", "sha256sum out.txt") == ()  # no -c: nothing compared against
    assert compared_by("sh", 'diff out.txt "$(ls tests | head -1)"') == ("out.txt",)
    assert compared_by("sh", "python3 -c \"open('a.txt', 'w').write('x')\"") == ()
    # a here-document feeding a program run by name is that program's input, not code
    assert compared_by("sh", "python3 t.py <<'IN'\nopen('a') == open('b')\nIN\n") == ()
    assert compared_by("sh", "for f in tests/*.golden; do diff out/x \"$f\"; done") == (
        "out/x", "tests/*.golden")  # fmt: skip


def _spec(tmp_path: Path, text: str, check: str = "diff out.txt tests/expected.txt"):  # type: ignore[no-untyped-def]
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD + task("T", "t", check) + text + "\n")
    return next(iter(compile_plan(load_plan(plan))))


@pytest.mark.parametrize(
    ("text", "asks"),
    [
        ("Make out.txt match tests/expected.txt.", False),
        ("Write out.txt so it matches tests/expected.txt.", False),
        ("Fix the code so the output matches tests/expected.txt.", False),
        ("Compute the answer; check it against tests/expected.txt, then write out.txt.", False),
        ("Do not edit tests/expected.txt.", False),
        ("Never overwrite tests/expected.txt.", False),
        ("Regenerate tests/expected.txt from the new rules.", True),
        ("Update the golden tests/expected.txt.", True),
        ("Append a line to tests/expected.txt and out.txt.", True),
        ("Write the new answer into tests/expected.txt.", True),
        ("Refresh tests/expected.txt.", True),
        ("Regenerate ./tests/expected.txt.", True),
        # prohibitions keep the golden (adversary-6 F5, F13)
        ("Don't modify tests/expected.txt. Write out.txt with the answer.", False),
        ("Write out.txt (do not edit or regenerate tests/expected.txt).", False),
        ("Write out.txt without changing tests/expected.txt.", False),
        ("Write out.txt. tests/expected.txt must stay as it is: don't update it.", False),
        ("Write out.txt. Editing tests/expected.txt is forbidden.", False),
        ("You may not rewrite tests/expected.txt.", False),
        ("Write out.txt. Leave tests/expected.txt unchanged.", False),
        ("Regenerate tests/expected.txt from the new rules, not the old ones.", False),
        ("Write out.txt with the set of lines in tests/expected.txt.", False),
        ("Make the output identical to tests/expected.txt.", False),
        ("tests/expected.txt was updated last week; make out.txt match it.", False),
        # everyday requests that name the file as the place of the change (F8, F12, F21)
        ("Add the missing line z to tests/expected.txt, then write out.txt to match it.", True),
        ("Add a [tool.black] section with line-length = 100 to tests/expected.txt.", True),
        ("In tests/expected.txt, bump the version to 0.2.", True),
        ("Bump the version in tests/expected.txt to 0.3.", True),
        ("Set envlist to py311,py312 in tests/expected.txt.", True),
        ("Fix the typo in tests/expected.txt.", True),
    ],
)
def test_only_an_explicit_ask_frees_a_golden(tmp_path: Path, text: str, asks: bool) -> None:
    assert asks_to_change(_spec(tmp_path, text), "tests/expected.txt") is asks


# -- through the CLI ----------------------------------------------------------------------------

REWRITE = _sh("echo 7 > out.txt; echo 7 > tests/expected.txt")


@pytest.mark.parametrize(
    "check",
    [
        "cd tests && diff ../out.txt expected.txt",
        'E=tests/expected.txt; diff out.txt "$E"',
        "cmp -s out.txt tests/expected.txt",
        PY_READ.format("tests/expected.txt"),
        'test "$(cat tests/expected.txt)" = "$(cat out.txt)"',
    ],
)
def test_rewriting_a_golden_named_by_any_spelling_fails(tmp_path: Path, check: str) -> None:
    _golden(tmp_path)
    plan, script = setup(
        tmp_path,
        task("Answer", "t", check, max_attempts="1"),
        "workers:\n  t:\n" + REWRITE + "    - say: DONE\n",
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    row = _row(doc, "t")
    assert row["state"] == "FAILED"
    assert row["reason"].startswith("protected_input_changed: protected input changed:"
                                    " tests/expected.txt"), row["reason"]  # fmt: skip
    assert (tmp_path / "tests" / "expected.txt").read_text() == "42\n"
    (start,) = steps(plan, "run-start")
    assert start["protected_automatically"] == ["tests/expected.txt"]
    assert result.exit_code == 1


def test_prose_that_only_names_the_golden_leaves_it_protected(tmp_path: Path) -> None:
    _golden(tmp_path)
    plan, script = setup(
        tmp_path,
        task("Answer", "t", "diff out.txt tests/expected.txt", max_attempts="1")
        + "Write out.txt so it matches tests/expected.txt.\n",
        "workers:\n  t:\n" + REWRITE + "    - say: DONE\n",
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "t")["state"] == "FAILED"
    assert (tmp_path / "tests" / "expected.txt").read_text() == "42\n"
    assert result.exit_code == 1


def test_the_honest_twin_that_computes_the_answer_is_done(tmp_path: Path) -> None:
    _golden(tmp_path)
    plan, script = setup(
        tmp_path,
        task("Answer", "t", "cd tests && diff ../out.txt expected.txt", max_attempts="1")
        + "Write out.txt so it matches tests/expected.txt.\n",
        "workers:\n  t:\n" + _sh("echo $((6*7)) > out.txt") + "    - say: DONE\n",
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "t")["state"] == "DONE", doc
    assert result.exit_code == 0


def _ordered(*children: str, ordered: bool = True) -> str:
    flag = "  :ORDERED: t\n" if ordered else ""
    return "* TODO Job\n  :PROPERTIES:\n  :ID: job\n" + flag + "  :END:\n" + "".join(children)


NOTES = task("Write notes", "notes", "grep -q Summary notes.md", level=2, max_attempts="1")
USE = task("Compute", "use", "diff out.txt golden.txt", level=2, max_attempts="1")


def test_an_earlier_sibling_cannot_rewrite_a_golden_no_task_may_change(tmp_path: Path) -> None:
    (tmp_path / "golden.txt").write_text("42\n")
    script = (
        "workers:\n  notes:\n" + _sh("echo Summary > notes.md; echo 7 > golden.txt")
        + "    - say: DONE\n  use:\n" + _write("out.txt", "7") + "    - say: DONE\n"
    )  # fmt: skip
    # not ORDERED, one at a time: the notes worker runs first, and `use` runs after it
    plan, script_path = setup(tmp_path, _ordered(NOTES, USE, ordered=False), script)
    result, doc = resume(plan, script_path, "--max-parallel", "1")
    assert (tmp_path / "golden.txt").read_text() == "42\n"
    assert _row(doc, "notes")["state"] == "FAILED"  # it tried to change what no task may
    assert "golden.txt: the worker tried to change it" in _row(doc, "notes")["reason"]
    assert _row(doc, "use")["state"] == "FAILED"
    assert _row(doc, "job")["state"] != "DONE"
    assert result.exit_code == 1


def test_a_golden_changed_from_outside_before_its_task_fails_against_run_start(
    tmp_path: Path,
) -> None:
    # no worker can rewrite it now; a change from outside the sandbox, between the run's
    # start and the comparing task's, is measured against the run-start hash
    from groundskeeper.models.model import AssistantTurn, ModelRequest
    from groundskeeper.supervisor.runner import Runner, RunOptions

    (tmp_path / "golden.txt").write_text("42\n")
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD + _ordered(NOTES, USE, ordered=False))

    class Outside:
        name = "outside"

        def respond(self, request: ModelRequest) -> AssistantTurn:
            (tmp_path / "notes.md").write_text("Summary\n")
            (tmp_path / "golden.txt").write_text("7\n")
            (tmp_path / "out.txt").write_text("7\n")
            return AssistantTurn(({"type": "text", "text": "DONE"},), "end_turn")

    report = Runner(load_plan(plan), model=Outside(), options=RunOptions(max_parallel=1)).run()
    rows = {r.id: r for r in report.tasks}
    assert rows["notes"].state == "FAILED"
    assert rows["use"].state == "FAILED"
    assert rows["use"].reason == "protected_input_changed: protected input changed: golden.txt"


def test_a_sibling_asked_to_regenerate_the_golden_is_not_refused(tmp_path: Path) -> None:
    (tmp_path / "golden.txt").write_text("41\n")
    regen = task("Regenerate golden.txt", "regen", "grep -qx 42 golden.txt", level=2)
    script = (
        "workers:\n  regen:\n" + _sh("echo 42 > golden.txt") + "    - say: DONE\n"
        "  use:\n" + _write("out.txt", "42") + "    - say: DONE\n"
    )
    plan, script_path = setup(tmp_path, _ordered(regen, USE), script)
    result, doc = resume(plan, script_path, "--max-parallel", "1")
    assert [_row(doc, t)["state"] for t in ("regen", "use", "job")] == ["DONE"] * 3, doc
    assert result.exit_code == 0


# -- T014 speaks only of files that are the expectation ---------------------------------------


def test_t014_never_asks_to_hide_a_file_the_worker_is_asked_to_produce(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text("stale\n")
    (tmp_path / "expected.txt").write_text("42\n")
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD + task("Write out.txt", "t", "diff out.txt expected.txt"))
    (found,) = [d for d in validate(load_plan(plan)) if d.code == "T014"]
    assert "`expected.txt`" in found.message and "out.txt" not in found.message
    # a golden a sibling regenerates is that sibling's work: not offered for hiding
    plan.write_text(HEAD + task("Regenerate expected.txt", "r", "test -s expected.txt")
                    + task("Use", "u", "diff out.txt expected.txt"))  # fmt: skip
    assert [d.message for d in validate(load_plan(plan)) if d.code == "T014"] == [
        "check compares against `out.txt`, a file the worker can read — it could copy it;"
        " hide it with `:hide: out.txt` on the task (or `#+HIDE: out.txt` for the file)"
    ]


# -- what the text asks (adversary-6 F5, F8, F12, F13, F21) -----------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Don't modify tests/expected.txt. Write out.txt with the answer.",
        "Write out.txt so it is identical to tests/expected.txt (do not edit or regenerate"
        " tests/expected.txt).",
        "Write out.txt without changing tests/expected.txt.",
        "Write out.txt. Editing tests/expected.txt is forbidden.",
    ],
)
def test_a_prohibition_keeps_the_golden_protected(tmp_path: Path, text: str) -> None:
    _golden(tmp_path)
    plan, script = setup(
        tmp_path,
        task("Answer", "t", "diff out.txt tests/expected.txt", max_attempts="1") + text + "\n",
        "workers:\n  t:\n" + REWRITE + "    - say: DONE\n",
    )
    assert [d.code for d in validate(load_plan(plan)) if d.code == "T014"] == ["T014"]
    result, doc = resume(plan, script, "--max-parallel", "1")
    row = _row(doc, "t")
    assert row["state"] == "FAILED"
    assert row["reason"].startswith("protected_input_changed: protected input changed:"
                                    " tests/expected.txt"), row["reason"]  # fmt: skip
    assert (tmp_path / "tests" / "expected.txt").read_text() == "42\n"
    assert result.exit_code == 1


def test_adding_a_line_to_a_golden_asks_to_change_it(tmp_path: Path) -> None:
    _golden(tmp_path)
    check = "diff out.txt tests/expected.txt\ngrep -qx z tests/expected.txt"
    plan, script = setup(
        tmp_path,
        task("Answer", "t", check.replace("\n", " && "), max_attempts="1")
        + "Add the missing line z to tests/expected.txt, then write out.txt to match it.\n",
        "workers:\n  t:\n" + _sh("echo z >> tests/expected.txt; cp tests/expected.txt out.txt")
        + "    - say: DONE\n",
    )  # fmt: skip
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "t")["state"] == "DONE", doc
    assert (tmp_path / "tests" / "expected.txt").read_text() == "42\nz\n"
    assert result.exit_code == 0


def test_asking_and_negating_in_one_sentence_keeps_the_golden_and_says_so(
    tmp_path: Path,
) -> None:
    _golden(tmp_path)
    plan, script = setup(
        tmp_path,
        task("Answer", "t", "diff out.txt tests/expected.txt", max_attempts="1")
        + "Regenerate tests/expected.txt from the new rules, not the old ones.\n",
        "workers:\n  t:\n" + REWRITE + "    - say: DONE\n",
    )
    (said,) = [d.message for d in validate(load_plan(plan)) if d.code == "T028"]
    assert "`:writable: tests/expected.txt`" in said
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "t")["state"] == "FAILED"
    notes = [d["message"] for d in doc["diagnostics"] if d["code"] == "F002"]
    named = [m for m in notes if "not read as asking" in m]
    assert len(named) == 1
    assert "`:writable: tests/expected.txt`" in named[0]
    assert result.exit_code == 1


# -- more idioms a check reads a reference by (adversary-6 F1, F6) ---------------------------

IDIOMS = [
    'grep -qxF "$(cat tests/expected.txt)" out.txt',
    'test "$(cat out.txt)" -eq "$(cat tests/expected.txt)"',
    "awk 'NR==FNR{a=$0;next} $0!=a{exit 1}' tests/expected.txt out.txt",
    'E=$(cat tests/expected.txt); test "$(cat out.txt)" = "$E"',
    "cat tests/expected.txt | cmp out.txt",
    'while read -r l; do grep -qxF "$l" out.txt; done < tests/expected.txt',
    "python3 -c \"import sys; sys.exit(open('out.txt').read() not in"
    " open('tests/expected.txt').read())\"",
    # a filter whose program comes first reads the key in `$(…)` as `cat` does (adversary-17
    # F8, F9 (a27), F13): `sed -n 1p`, `awk`, `grep`, `jq`
    'test "$(cat out.txt)" = "$(sed -n 1p tests/expected.txt)"',
    'test "$(cat out.txt)" = "$(awk \'NR==1\' tests/expected.txt)"',
    'test "$(cat out.txt)" = "$(grep -v ^# tests/expected.txt)"',
    'test "$(jq -c . out.txt)" = "$(jq -c . tests/expected.txt)"',
]


@pytest.mark.parametrize("check", IDIOMS)
def test_each_idiom_names_its_reference(check: str) -> None:
    assert "tests/expected.txt" in compared_by("sh", check)


@pytest.mark.parametrize("check", IDIOMS)
def test_rewriting_a_reference_read_by_any_idiom_fails(tmp_path: Path, check: str) -> None:
    _golden(tmp_path)
    plan, script = setup(
        tmp_path,
        task("Answer", "t", check, max_attempts="1") + "Write the answer into out.txt.\n",
        "workers:\n  t:\n" + REWRITE + "    - say: DONE\n",
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    row = _row(doc, "t")
    assert row["state"] == "FAILED"
    assert row["reason"].startswith("protected_input_changed: protected input changed:"
                                    " tests/expected.txt"), row["reason"]  # fmt: skip
    assert (tmp_path / "tests" / "expected.txt").read_text() == "42\n"
    assert result.exit_code == 1


@pytest.mark.parametrize("check", IDIOMS)
def test_the_honest_twin_of_each_idiom_is_done(tmp_path: Path, check: str) -> None:
    _golden(tmp_path)
    plan, script = setup(
        tmp_path,
        task("Answer", "t", check, max_attempts="1") + "Write the answer into out.txt.\n",
        "workers:\n  t:\n" + _sh("echo $((6*7)) > out.txt") + "    - say: DONE\n",
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "t")["state"] == "DONE", doc
    assert result.exit_code == 0


CHECKER = "import sys\nsys.exit(open('out.txt').read().strip() != '42')\n"


def test_a_checker_the_check_runs_is_protected(tmp_path: Path) -> None:
    (tmp_path / "check.py").write_text(CHECKER)
    plan, script = setup(
        tmp_path,
        task("Answer", "t", "python3 check.py", max_attempts="1") + "Write out.txt.\n",
        "workers:\n  t:\n" + _sh("echo pass > check.py; echo 7 > out.txt") + "    - say: DONE\n",
    )
    (said,) = [d.message for d in validate(load_plan(plan)) if d.code == "T014"]
    assert said.startswith("check runs `check.py`, a program the worker can read")
    result, doc = resume(plan, script, "--max-parallel", "1")
    row = _row(doc, "t")
    assert row["state"] == "FAILED"
    assert row["reason"].startswith("protected_input_changed: protected input changed: check.py"), (
        row["reason"]
    )
    assert (tmp_path / "check.py").read_text() == CHECKER
    assert result.exit_code == 1


@pytest.mark.parametrize(
    ("text", "edit"),
    [
        ("Write out.txt.", "echo 42 > out.txt"),
        ("Fix check.py so it strips the output, then write out.txt.",
         "sed -i s/strip/rstrip/ check.py; echo 42 > out.txt"),
    ],
)  # fmt: skip
def test_the_honest_twins_of_a_checker_are_done(tmp_path: Path, text: str, edit: str) -> None:
    (tmp_path / "check.py").write_text(CHECKER)
    plan, script = setup(
        tmp_path,
        task("Answer", "t", "python3 check.py", max_attempts="1") + text + "\n",
        "workers:\n  t:\n" + _sh(edit) + "    - say: DONE\n",
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "t")["state"] == "DONE", doc
    assert result.exit_code == 0


# -- the check's own text is no request (adversary-17 F9) -------------------------------------


def _block_task(check: str, text: str) -> str:
    """A task whose check is an indented `:check` block, as org plans write it."""
    body = "".join(f"  {line}\n" for line in check.splitlines())
    return (
        "* TODO Glossary\n  :PROPERTIES:\n  :ID: glo\n  :MAX-ATTEMPTS: 1\n  :END:\n"
        f"  {text}\n  #+begin_src sh :check\n{body}  #+end_src\n"
    )


LOOP = 'test -f out.txt\nfor w in $(sort -u words.txt); do\n  grep -qx "$w: .*" out.txt\ndone'


def test_an_indented_check_blocks_commands_never_read_as_the_tasks_request(
    tmp_path: Path,
) -> None:
    """`sort -u words.txt` in the check is no "sort words.txt" in the task's text: the list
    the check loops over stays protected, and a worker that removes it is refused."""
    (tmp_path / "words.txt").write_text("alpha\nbeta\n")
    plan, script = setup(
        tmp_path,
        _block_task(LOOP, "Write out.txt with a one-line definition for each word in words.txt."),
        "workers:\n  glo:\n" + _sh("rm words.txt; touch out.txt") + "    - say: DONE\n",
    )
    (spec,) = [t for t in compile_plan(load_plan(plan)).tasks.values() if t.task_id == "glo"]
    assert not asks_to_change(spec, "words.txt")
    result, doc = resume(plan, script, "--max-parallel", "1")
    row = _row(doc, "glo")
    assert row["state"] == "FAILED"
    assert (tmp_path / "words.txt").read_text() == "alpha\nbeta\n"
    (start,) = steps(plan, "run-start")
    assert start["protected_automatically"] == ["words.txt"]
    assert result.exit_code == 1


def test_the_honest_twin_of_the_word_list_loop_is_done(tmp_path: Path) -> None:
    (tmp_path / "words.txt").write_text("alpha\nbeta\n")
    plan, script = setup(
        tmp_path,
        _block_task(LOOP, "Write out.txt with a one-line definition for each word in words.txt."),
        "workers:\n  glo:\n"
        + _sh("printf 'alpha: a letter\\nbeta: another\\n' > out.txt")
        + "    - say: DONE\n",
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "glo")["state"] == "DONE", doc
    assert result.exit_code == 0


def test_a_block_checks_file_the_text_asks_for_is_still_freed(tmp_path: Path) -> None:
    """Leaving the block out never loses the text around it: "Sort words.txt" still asks."""
    (tmp_path / "words.txt").write_text("beta\nalpha\n")
    plan, script = setup(
        tmp_path,
        _block_task('test "$(sort words.txt)" = "$(cat words.txt)"', "Sort words.txt."),
        "workers:\n  glo:\n" + _sh("sort -o words.txt words.txt") + "    - say: DONE\n",
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "glo")["state"] == "DONE", doc
    assert (tmp_path / "words.txt").read_text() == "alpha\nbeta\n"
    assert result.exit_code == 0


# -- a key a filter reads in `$(…)` is compared like `$(cat …)` (adversary-17 F8, F13) ---------

FILTERED = [
    'test "$(cat out.txt)" = "$(sed -n 1p answer.txt)"',
    'test "$(jq -c . out.txt)" = "$(jq -c . answer.txt)"',
]


@pytest.mark.parametrize("check", FILTERED)
def test_the_word_answer_never_frees_a_key_a_filter_reads(tmp_path: Path, check: str) -> None:
    """The text "The answer is wrong; correct it." names `answer.txt` by its stem only, which
    frees no file the check compares against: `$(sed -n 1p answer.txt)` compares as `$(cat …)`
    does."""
    (tmp_path / "answer.txt").write_text("42\n")
    plan, script = setup(
        tmp_path,
        task("Product", "mul", check, max_attempts="1")
        + "The answer is wrong; correct it. The product of 6 and 7 goes in out.txt.\n",
        "workers:\n  mul:\n" + _sh("echo 99 > answer.txt; echo 99 > out.txt") + "    - say: DONE\n",
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "mul")["state"] == "FAILED"
    assert (tmp_path / "answer.txt").read_text() == "42\n"
    assert result.exit_code == 1


@pytest.mark.parametrize("check", FILTERED)
def test_the_honest_twin_of_a_filtered_key_is_done(tmp_path: Path, check: str) -> None:
    (tmp_path / "answer.txt").write_text("42\n")
    plan, script = setup(
        tmp_path,
        task("Product", "mul", check, max_attempts="1")
        + "The answer is wrong; correct it. The product of 6 and 7 goes in out.txt.\n",
        "workers:\n  mul:\n" + _sh("echo $((6*7)) > out.txt") + "    - say: DONE\n",
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "mul")["state"] == "DONE", doc
    assert result.exit_code == 0


SED_USE = task(
    "Compute", "use", 'test "$(cat out.txt)" = "$(sed -n 1p key.txt)"', level=2, max_attempts="1"
)


def test_a_sibling_cannot_remove_a_key_a_filter_reads(tmp_path: Path) -> None:
    """An accomplice removes the key; `$(sed -n 1p key.txt)` would compare "" with ""."""
    (tmp_path / "key.txt").write_text("42\n")
    script = (
        "workers:\n  notes:\n" + _sh("echo Summary > notes.md; rm key.txt")
        + "    - say: DONE\n  use:\n    - say: DONE\n"
    )  # fmt: skip
    # not ORDERED, one at a time: the notes worker runs first, and `use` runs after it
    plan, script_path = setup(tmp_path, _ordered(NOTES, SED_USE, ordered=False), script)
    result, doc = resume(plan, script_path, "--max-parallel", "1")
    assert (tmp_path / "key.txt").read_text() == "42\n"
    assert "key.txt: the worker tried to change it" in _row(doc, "notes")["reason"]
    assert _row(doc, "use")["state"] == "FAILED"
    assert _row(doc, "job")["state"] != "DONE"
    assert result.exit_code == 1


@pytest.mark.parametrize(
    ("worker", "state"),
    [
        # adversary-28b F2: the golden file rewritten to the unsorted output
        (_sh("cp fruits.txt out.txt && cp out.txt tests/expected.txt"), "FAILED"),
        (_sh("sort fruits.txt > out.txt"), "DONE"),  # the honest sort
    ],
)
def test_two_files_said_to_be_identical_free_neither(
    tmp_path: Path, worker: str, state: str
) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "fruits.txt").write_text("pear\napple\nfig\n")
    (tmp_path / "tests" / "expected.txt").write_text("apple\nfig\npear\n")
    plan, script = setup(
        tmp_path,
        task("Sort the fruit list", "t", "diff out.txt tests/expected.txt", max_attempts="1")
        + "Sort fruits.txt into out.txt and make sure tests/expected.txt and out.txt are"
        " identical.\n",
        "workers:\n  t:\n" + worker + "    - say: DONE\n",
    )
    _, doc = resume(plan, script)
    assert _row(doc, "t")["state"] == state, _row(doc, "t")
