"""Lint vets checks with the runtime's own model (one script under errexit): vacuous checks
are errors, weak ones warnings saying what they accept, and each code disappears when the
check is made strong."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper.acceptance.check import SealedCheck, run_check
from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import Check, load_plan, parse_plan


def codes(check: str, **props: str) -> list[str]:
    extra = "".join(f":{k}: {v}\n" for k, v in props.items())
    text = f"* TODO t\n:PROPERTIES:\n:done-when: {check}\n{extra}:END:\n"
    return [d.code for d in validate(parse_plan(text))]


@pytest.mark.parametrize(
    ("vacuous", "strong"),
    [
        ("true", "grep -q ok out.txt"),
        (":", "grep -q ok out.txt"),
        ("echo done", "echo checking; grep -q ok out.txt"),
        ("grep -q ok out.txt || true", "grep -q ok out.txt"),
        ("! false", "test -s out.txt && ! grep -q TODO out.txt"),
    ],
)
def test_a_check_that_cannot_fail_is_an_error(vacuous: str, strong: str) -> None:
    assert codes(vacuous) == ["T005"]
    assert codes(strong) == []


@pytest.mark.parametrize(
    ("never", "strong"),
    [
        ("! true", "grep -q ok out.txt"),
        ("false", "grep -q ok out.txt"),
        ("grep -q ok out.txt; exit 0", "grep -q ok out.txt"),
        ("grep -q ok out.txt || exit 0", "grep -q ok out.txt"),
        ("grep -q ok out.txt || exit", "grep -q ok out.txt || exit 1"),
        ("grep -q ok out.txt || exit $CODE", "grep -q ok out.txt || exit 1"),
        ("grep -q ok out.txt || exit 256", "grep -q ok out.txt || exit 255"),
        ("exit 1", "grep -q ok out.txt"),
    ],
)
def test_a_check_that_can_never_pass_or_exits_is_an_error(never: str, strong: str) -> None:
    assert "T009" in codes(never)
    assert codes(strong) == []


def test_x_then_true_can_fail_and_lint_and_the_runtime_agree(tmp_path: Path) -> None:
    assert codes("grep -q ok out.txt; true") == []  # not vacuous: the grep must succeed
    result = run_check(SealedCheck.seal(Check("grep -q ok out.txt; true", "sh", 1, "x")),
                       tmp_path)  # fmt: skip
    assert (result.verdict, result.code) == ("FAIL", "nonzero_status")


@pytest.mark.parametrize(
    ("weak", "accepts", "strong"),
    [
        ("test -e out.txt", "passes for an empty placeholder file", "grep -q ok out.txt"),
        ("test -f out.txt", "passes for an empty placeholder file", "grep -q ok out.txt"),
        ("[ -e out.txt ]", "passes for an empty placeholder file", "grep -q ok out.txt"),
        (
            "test -d out",
            "passes for an empty directory",
            "test -s out/index.html && grep -q ok out/index.html",
        ),
        ("test -s out.txt", "passes for any non-empty file", "grep -qx 3 out.txt"),
        ("grep -q . out.txt", "passes for any file with one character", "grep -q ok out.txt"),
    ],
)
def test_a_weak_check_is_a_warning_saying_what_it_accepts(
    weak: str, accepts: str, strong: str
) -> None:
    text = f"* TODO t\n:PROPERTIES:\n:done-when: {weak}\n:END:\n"
    (found,) = validate(parse_plan(text))
    assert (found.code, found.level) == ("T010", "warning")
    assert accepts in found.message
    assert codes(strong) == []


@pytest.mark.parametrize(
    ("check", "option"),
    [
        ("grep -P 'a+' f", "-P"),
        ("grep -qP x f", "-P"),
        ("sed -i s/a/b/ f", "-i"),
        ("find . -ok cat {} ;", "-ok"),
    ],
)
def test_options_the_sandbox_lacks_are_errors(check: str, option: str) -> None:
    text = f"* TODO t\n:PROPERTIES:\n:done-when: {check}\n:END:\n"
    found = [d for d in validate(parse_plan(text)) if d.code == "T012"]
    assert len(found) == 1 and f" {option}`" in found[0].message


@pytest.mark.parametrize(
    ("program", "what"),
    [
        # adversary-21 F16: what the sandbox's awk refuses when it parses the program (status 2)
        ("""BEGIN { getline e < "key.txt" } { if ($0 != e) exit 1 }""", "getline < FILE"),
        ("""BEGIN { "date" | getline d; print d }""", "CMD | getline"),
        ("""{ print | "sort" }""", "print | CMD"),
        ("""{ print $1 > "out.txt" }""", "output redirection (> FILE, >> FILE)"),
        ("""{ system("ls") }""", "system()"),
    ],
)
def test_awk_forms_the_sandbox_refuses_are_errors(program: str, what: str) -> None:
    block = f"  #+begin_src sh :check\n  awk '{program}' f.txt\n  #+end_src\n"
    found = [d for d in validate(parse_plan("* TODO t\n" + block)) if d.code == "T012"]
    assert [d.message.split(";")[0] for d in found] == [
        f"check uses `awk` with {what}, which the sandbox does not support"
    ]


@pytest.mark.parametrize(
    "program",
    [
        "$2 > 30 { n++ } END { exit n != 2 }",
        "{ print ($1 > 3) }",
        '/a|b/ { print "x > y | z" }',
        "NR == FNR { seen[$0]; next } !($0 in seen) { exit 1 }",
        "{ while ((getline line) > 0) n++ } END { print n }",
        "$1 || $2 { print }",
    ],
)
def test_awk_forms_the_sandbox_runs_are_not_refused(program: str) -> None:
    block = f"  #+begin_src sh :check\n  awk '{program}' f.txt\n  #+end_src\n"
    assert [d for d in validate(parse_plan("* TODO t\n" + block)) if d.code == "T012"] == []


@pytest.mark.parametrize("raw", ["0", "two", "-1", "1.5"])
def test_an_invalid_max_attempts_is_an_error(raw: str) -> None:
    assert codes("grep -q ok out.txt", **{"max-attempts": raw}) == ["T011"]
    assert codes("grep -q ok out.txt", **{"max-attempts": "3"}) == []


def test_a_plan_with_nothing_to_run_is_a_warning() -> None:
    (found,) = validate(parse_plan("* Notes\nsome text\n"))
    assert (found.code, found.level) == ("T013", "warning")


def test_comparing_against_a_file_the_worker_can_read_is_a_warning(tmp_path: Path) -> None:
    (tmp_path / "expected.txt").write_text("42\n")
    plan = tmp_path / "plan.org"
    body = "* TODO t\n:PROPERTIES:\n:done-when: diff out.txt expected.txt\n{}:END:\n"
    plan.write_text(body.format(""))
    (found,) = validate(load_plan(plan))
    assert (found.code, found.level) == ("T014", "warning")
    assert "a file the worker can read — it could copy it" in found.message
    assert "`:hide: expected.txt`" in found.message
    plan.write_text(body.format(":protect: expected.txt\n"))  # protected, but still readable
    assert [d.code for d in validate(load_plan(plan))] == ["T014"]
    plan.write_text(body.format(":hide: expected.txt\n"))
    assert validate(load_plan(plan)) == []
    plan.write_text("#+HIDE: *.txt\n" + body.format(""))
    assert validate(load_plan(plan)) == []
    both_there = "test -f out.txt -a -f expected.txt; "
    for check in ("cmp out.txt expected.txt", "diff -u out.txt expected.txt",
                  'test "$(cat expected.txt)" = "$(cat out.txt)"', "md5sum -c expected.txt",
                  "sha1sum --quiet -c expected.txt", "sha512sum -c expected.txt",
                  both_there + 'test -z "$(comm -3 out.txt expected.txt)"'):  # fmt: skip
        plan.write_text(body.format("").replace("diff out.txt expected.txt", check))
        assert [d.code for d in validate(load_plan(plan))] == ["T014"], check
    # without `test -f out.txt` it passes when out.txt is missing (comm's error is lost)
    check = 'test -z "$(comm -3 out.txt expected.txt)"'
    plan.write_text(body.format("").replace("diff out.txt expected.txt", check))
    assert [d.code for d in validate(load_plan(plan))] == ["T029", "T014"]


@pytest.mark.parametrize(
    "check",
    [
        "test $(grep -c . out.txt) -eq 3 || exit 1",
        "grep -q ok out.txt || exit 2; grep -q more out.txt",
        "grep -q ok out.txt || exit -1",
        "! grep -q TODO out.txt || exit 1",
        "grep -q ok out.txt || exit 1 && echo never",
    ],
)
def test_exit_with_a_failing_literal_status_is_a_failure_not_an_error(check: str) -> None:
    assert codes(check) == []


@pytest.mark.parametrize(
    ("content", "verdict", "line"),
    [("a\nb\nc\n", "PASS", None), ("a\nb\n", "FAIL", 2)],
)
def test_exit_1_fails_the_check_at_its_own_line(
    tmp_path: Path, content: str, verdict: str, line: int | None
) -> None:
    (tmp_path / "out.txt").write_text(content)
    text = "test -s out.txt\ntest $(grep -c . out.txt) -eq 3 || exit 1\necho counted\n"
    result = run_check(SealedCheck.seal(Check(text, "sh", 1, "block")), tmp_path)
    assert (result.verdict, result.failed_line) == (verdict, line)
    if verdict == "FAIL":
        assert result.code == "nonzero_status"
        assert result.reason == (
            "check line 2: `test $(grep -c . out.txt) -eq 3 || exit 1` exited with status 1"
        )


def test_an_exit_inside_a_block_names_the_exit_line(tmp_path: Path) -> None:
    (tmp_path / "out.txt").write_text("x\n")
    text = "if grep -q ok out.txt; then\n  echo fine\nelse\n  exit 3\nfi\n"
    result = run_check(SealedCheck.seal(Check(text, "sh", 1, "block")), tmp_path)
    assert (result.verdict, result.code, result.failed_line) == ("FAIL", "nonzero_status", 4)
    assert result.reason == "check line 4: `exit 3` exited with status 3"


@pytest.mark.parametrize(
    "vacuous",
    [
        "if grep -q ok report.txt; then echo ok; fi",  # no else: a failed test ends with 0
        'for f in a b; do [ -e "$f" ] || continue; done',  # every failure continues
        "while read line; do echo $line; done < out.txt || true",
        "{ grep -q ok out.txt || echo missing; }",
        "case $X in a) grep -q ok out.txt || true ;; esac",
    ],
)
def test_a_compound_check_whose_every_path_ends_well_cannot_fail(vacuous: str) -> None:
    assert codes(vacuous) == ["T005"]


@pytest.mark.parametrize(
    "exits",
    [
        "if grep -q answer out.txt; then exit 0; else exit 1; fi",
        "for f in out/*; do grep -q ok $f && exit; done; grep -q ok out.txt",
        "{ grep -q ok out.txt; exit $CODE; }",
    ],
)
def test_an_exit_that_could_pass_inside_a_compound_is_an_error(exits: str) -> None:
    assert "T009" in codes(exits)


@pytest.mark.parametrize(
    "strong",
    [
        "if grep -q ok out.txt; then grep -q more out.txt; else exit 1; fi",
        "if grep -q ok out.txt; then :; else exit 1; fi",
        "for f in a.txt b.txt; do grep -q ok $f; done",
        "for f in a.txt b.txt; do grep -q ok $f || exit 1; done",
        "while read n; do test $n -ge 3; done < counts.txt",
        "( exit 0 ); grep -q ok out.txt",
        "( grep -q ok out.txt )",
        "case $(cat kind.txt) in a) grep -q a out.txt ;; *) exit 1 ;; esac",
    ],
)
def test_compound_checks_that_can_fail_and_pass_are_clean(strong: str) -> None:
    assert codes(strong) == []


def test_a_vacuous_compound_check_passes_before_any_work_as_lint_says(tmp_path: Path) -> None:
    text = "if grep -q ok report.txt; then echo ok; fi"
    result = run_check(SealedCheck.seal(Check(text, "sh", 1, "done-when")), tmp_path)
    assert result.verdict == "PASS"  # no report.txt at all: T005 is right to refuse it


def test_the_usual_strict_preamble_is_accepted_and_runs(tmp_path: Path) -> None:
    text = "set -euo pipefail\nsort -u out.txt | grep -qx ok\n"
    assert codes("set -euo pipefail; grep -q ok out.txt") == []
    (tmp_path / "out.txt").write_text("ok\nok\n")
    result = run_check(SealedCheck.seal(Check(text, "sh", 1, "block")), tmp_path)
    assert result.verdict == "PASS"
    (tmp_path / "out.txt").write_text("no\n")
    result = run_check(SealedCheck.seal(Check(text, "sh", 1, "block")), tmp_path)
    assert (result.verdict, result.failed_line) == ("FAIL", 2)


@pytest.mark.parametrize(
    "vacuous",
    ["grep -q yes out.txt | cat", "grep -q yes out.txt | wc -l", "grep yes out.txt | head -n 1"],
)
def test_a_pipeline_ending_in_a_filter_of_its_input_cannot_fail(
    tmp_path: Path, vacuous: str
) -> None:
    """Without pipefail a pipeline's status is its last stage's: `… | cat` passes whatever
    the grep found. Lint says T005, and the runtime agrees (it passes on `no`)."""
    assert codes(vacuous) == ["T005"]
    (tmp_path / "out.txt").write_text("no\n")
    result = run_check(SealedCheck.seal(Check(vacuous, "sh", 1, "x")), tmp_path)
    assert result.verdict == "PASS"


@pytest.mark.parametrize(
    "strong",
    [
        "grep -q yes out.txt | sort -c",  # a check mode: it can fail
        "grep -q yes out.txt | cat extra.txt",  # a file to read: it can fail
    ],
)
def test_a_filter_given_a_file_or_a_check_can_fail(strong: str) -> None:
    assert "T005" not in codes(strong)


def test_under_pipefail_the_same_pipeline_can_fail_and_the_runtime_agrees(tmp_path: Path) -> None:
    text = "set -o pipefail\ngrep -q yes out.txt | cat"
    plan = f"* TODO t\n:PROPERTIES:\n:END:\n#+begin_src sh :check\n{text}\n#+end_src\n"
    assert [d.code for d in validate(parse_plan(plan))] == []
    (tmp_path / "out.txt").write_text("no\n")
    result = run_check(SealedCheck.seal(Check(text, "sh", 1, "block")), tmp_path)
    assert (result.verdict, result.code) == ("FAIL", "nonzero_status")
    (tmp_path / "out.txt").write_text("yes\n")
    assert run_check(SealedCheck.seal(Check(text, "sh", 1, "block")), tmp_path).passed


def test_a_program_piped_into_a_whole_line_grep_is_a_warning_not_an_error() -> None:
    # adversary-21 F8: `python3 greet.py Ann | grep -qx 'Hi Ann'` can fail (any other output
    # fails it); only a run that prints the line and then fails is lost: T041, a warning
    def found(check: str) -> list[tuple[str, str]]:
        block = f"  #+begin_src sh :check\n  {check}\n  #+end_src\n"
        plan = parse_plan("* TODO t\n" + block)
        return [(d.code, d.level) for d in validate(plan) if d.code in ("T005", "T041")]

    assert found("python3 greet.py Ann | grep -qx 'Hi Ann'") == [("T041", "warning")]
    assert found("python3 greet.py Ann | grep -qxF -e 'Hi Ann'") == [("T041", "warning")]
    assert found("python3 -m pytest -q tests | grep -q passed") == [("T005", "error")]
    assert found("python3 greet.py Ann | grep -qvx 'Hi Ann'") == [("T005", "error")]
    assert found("set -o pipefail\n  python3 greet.py Ann | grep -qx 'Hi Ann'") == []
