"""Rung 1: each rule fires on its case and stays quiet on a near miss."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper.diagnostics import Diagnostic
from groundskeeper.plan.lint import validate, validate_outline
from groundskeeper.plan.org import load_plan, parse_plan

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# The seed example's documented output (issue 2), shared by the library and CLI tests.
SEED_DIAGNOSTICS = [
    {
        "level": "error",
        "scope": "Summarize",
        "message": "input `events:list` has no upstream producer",
        "line": 2,
        "code": "W002",
    },
    {
        "level": "error",
        "scope": "Orphan task",
        "message": "component has no source block / language",
        "line": 6,
        "code": "W001",
    },
]


def lint(text: str, *, outline: bool = False) -> list[Diagnostic]:
    plan = parse_plan(text)
    return validate_outline(plan) if outline else validate(plan)


def only(text: str, code: str, *, outline: bool = False) -> list[Diagnostic]:
    return [d for d in lint(text, outline=outline) if d.code == code]


def checked(body: str) -> str:
    """A single task whose `:done-when:` is `body`."""
    return f"* TODO t\n:PROPERTIES:\n:done-when: {body}\n:END:\n"


# --- the seed example and the bundled plans ---------------------------------------------------


def test_seed_example_gives_exactly_the_documented_diagnostics() -> None:
    plan = load_plan(EXAMPLES / "broken-workflow.org")
    assert [d.to_json() for d in validate(plan)] == SEED_DIAGNOSTICS


def test_bundled_good_plan_is_clean_even_as_an_outline() -> None:
    assert validate_outline(load_plan(EXAMPLES / "pricing.org")) == []


# --- W001 -------------------------------------------------------------------------------------


def test_w001_component_without_source_block() -> None:
    text = "* W :workflow:\n** C :component:\n#+begin_src :out x:int\n#+end_src\n"
    (found,) = only(text, "W001")
    assert (found.level, found.scope, found.line) == ("error", "C", 2)
    assert found.message == "component has no source block / language"


def test_w001_near_misses() -> None:
    with_language = "* W :workflow:\n** C :component:\n#+begin_src js\n#+end_src\n"
    assert only(with_language, "W001") == []
    outside_workflow = "* W\n** C :component:\n"
    assert only(outside_workflow, "W001") == []
    # the tag must be the component's own: an inherited :component: does not make a component
    inherited = "* W :workflow:\n** Group :component:\n#+begin_src js\n#+end_src\n*** Sub\n"
    assert only(inherited, "W001") == []


# --- W002 -------------------------------------------------------------------------------------


def test_w002_input_without_producer_names_it() -> None:
    text = (
        "* W :workflow:\n"
        "** A :component:\n#+begin_src js :out events:list\n#+end_src\n"
        "** B :component:\n#+begin_src js :in events:set,other:int\n#+end_src\n"
    )
    found = only(text, "W002")
    assert [(d.scope, d.line, d.message) for d in found] == [
        ("B", 5, "input `events:set` has no upstream producer"),
        ("B", 5, "input `other:int` has no upstream producer"),
    ]


def test_w002_near_miss_exact_name_and_type_in_the_same_workflow() -> None:
    text = (
        "* W :workflow:\n"
        "** A :component:\n#+begin_src js :out events:list\n#+end_src\n"
        "** B :component:\n#+begin_src js :in events:list\n#+end_src\n"
    )
    assert lint(text) == []


def test_w002_producer_in_another_workflow_does_not_count() -> None:
    text = (
        "* W1 :workflow:\n** A :component:\n#+begin_src js :out x:int\n#+end_src\n"
        "* W2 :workflow:\n** B :component:\n#+begin_src js :in x:int\n#+end_src\n"
    )
    assert [(d.code, d.scope) for d in lint(text)] == [("W002", "B")]


# --- W003 -------------------------------------------------------------------------------------


def test_w003_cycle_is_spelled_out() -> None:
    text = (
        "* W :workflow:\n"
        "** A :component:\n#+begin_src js :in c:int :out a:int\n#+end_src\n"
        "** B :component:\n#+begin_src js :in a:int :out b:int\n#+end_src\n"
        "** C :component:\n#+begin_src js :in b:int :out c:int\n#+end_src\n"
    )
    (found,) = lint(text)
    assert found.code == "W003"
    assert (found.level, found.scope, found.line) == ("error", "A", 2)
    assert found.message == "components form a cycle: A → B → C → A"


def test_w003_self_loop() -> None:
    text = "* W :workflow:\n** A :component:\n#+begin_src js :in a:int :out a:int\n#+end_src\n"
    (found,) = lint(text)
    assert (found.code, found.message) == ("W003", "components form a cycle: A → A")


def test_w003_near_miss_diamond_is_not_a_cycle() -> None:
    text = (
        "* W :workflow:\n"
        "** Src :component:\n#+begin_src js :out a:int\n#+end_src\n"
        "** L :component:\n#+begin_src js :in a:int :out l:int\n#+end_src\n"
        "** R :component:\n#+begin_src js :in a:int :out r:int\n#+end_src\n"
        "** Join :component:\n#+begin_src js :in l:int,r:int\n#+end_src\n"
    )
    assert lint(text) == []


# --- W004 -------------------------------------------------------------------------------------


def test_w004_duplicate_component_name() -> None:
    text = (
        "* Flow :workflow:\n"
        "** A :component:\n#+begin_src js\n#+end_src\n"
        "** A :component:\n#+begin_src js\n#+end_src\n"
    )
    (found,) = lint(text)
    assert (found.code, found.scope, found.line) == ("W004", "A", 5)
    assert found.message == "duplicate component name `A` in workflow `Flow`"


def test_w004_near_miss_same_name_in_two_workflows() -> None:
    text = (
        "* F1 :workflow:\n** A :component:\n#+begin_src js\n#+end_src\n"
        "* F2 :workflow:\n** A :component:\n#+begin_src js\n#+end_src\n"
    )
    assert lint(text) == []


# --- T001 -------------------------------------------------------------------------------------


def test_t001_outline_without_active_task() -> None:
    text = "* DONE a\n:PROPERTIES:\n:done-when: test -s a\n:END:\n* notes\n"
    (found,) = only(text, "T001", outline=True)
    assert found.to_json() == {
        "level": "error",
        "scope": "outline",
        "message": "outline has no heading in an active task state (TODO)",
        "line": None,
        "code": "T001",
    }
    assert only(text, "T001") == []  # plain validate never asks for it


def test_t001_names_the_files_own_states_and_near_miss() -> None:
    (found,) = only("#+TODO: WAIT | OK\n* OK a\n", "T001", outline=True)
    assert found.message == "outline has no heading in an active task state (WAIT)"
    assert only("#+TODO: WAIT | OK\n* WAIT a\n", "T001", outline=True) == []


# --- T002 -------------------------------------------------------------------------------------


def test_t002_active_leaf_without_check() -> None:
    (found,) = lint("* TODO Write it\n")
    assert (found.code, found.level, found.scope, found.line) == (
        "T002",
        "warning",
        "Write it",
        1,
    )
    assert found.message == "task has no acceptance check: DONE will rest on the worker's word"


def test_t002_near_misses() -> None:
    assert only(checked("test -s x"), "T002") == []
    assert only("* DONE finished\n", "T002") == []  # not active
    parent = "* TODO parent\n** TODO child\n:PROPERTIES:\n:done-when: grep -q ok x\n:END:\n"
    assert only(parent, "T002") == []  # a composite parent rests on its children
    block = "* NEXT b\n#+begin_src sh :check\ngrep -q ok x\n#+end_src\n"
    assert only(block, "T002") == []


def test_t002_a_pytest_contract_is_an_acceptance_check() -> None:
    """The project's suite, run in the sandbox, is a check: DONE does not rest on the word."""
    suite = "* TODO Fix it\n:PROPERTIES:\n:contract: pytest tests --min 3\n:END:\n"
    assert only(suite, "T002") == []
    # a soft one only warns, and the others judge artefacts, not the work's behaviour
    for contract in ("soft pytest tests", "non-empty out.txt", "ran 'pytest *'"):
        text = f"* TODO Fix it\n:PROPERTIES:\n:contract: {contract}\n:END:\n"
        assert [d.code for d in only(text, "T002")] == ["T002"], contract


# --- T019 -------------------------------------------------------------------------------------


def test_t019_a_suite_the_worker_reads_in_full_asks_for_held_out_tests() -> None:
    text = "* TODO Fix it\n:PROPERTIES:\n:contract: pytest tests\n{}:END:\n"
    (found,) = only(text.format(""), "T019")
    assert (found.code, found.level, found.line) == ("T019", "info", 3)
    assert found.message == (
        "contract `pytest tests`: the worker can read every test it runs, so code that"
        " special-cases their inputs passes; hold some out with `:hide: PATH` (a test file"
        " under tests/: the contract still runs it, the worker never sees it)"
    )
    assert only(text.format(":hide: tests/test_heldout.py\n"), "T019") == []
    assert only("#+HIDE: tests/held_*.py\n" + text.format(""), "T019") == []
    assert only(text.format(":hide: other/key.txt\n"), "T019") != []  # not in the suite


# --- T003 -------------------------------------------------------------------------------------


def test_t003_done_when_outside_the_grammar() -> None:
    (found,) = lint(checked("test -s x & true"))
    assert (found.code, found.level, found.scope, found.line) == ("T003", "error", "t", 3)
    assert found.message.startswith("check does not parse: background jobs '&' are not")


def test_t003_points_at_the_line_inside_a_block() -> None:
    text = "* TODO t\n#+begin_src sh :check\ntest -s a\nfor f in x; do test -s $f; fi\n#+end_src\n"
    (found,) = lint(text)
    assert (found.code, found.line) == ("T003", 4)
    assert "'for' without 'done'" in found.message


def test_t003_empty_check() -> None:
    text = "* TODO t\n#+begin_src sh :check\n#+end_src\n"
    (found,) = lint(text)
    assert (found.code, found.message) == ("T003", "check does not parse: the check is empty")


def test_t003_near_miss_pipes_and_lists_parse() -> None:
    assert lint(checked('grep -c "x" out.txt | wc -l && test -s out.txt || false')) == []


# --- T004 -------------------------------------------------------------------------------------


def test_t004_unknown_command_also_inside_substitution() -> None:
    found = lint(checked("test $(curl -s x | ruby -e 1) -gt 0 && node -e 1"))
    assert [(d.code, d.message) for d in found] == [
        ("T004", "check uses `curl`, which the sandbox does not have"),
        ("T004", "check uses `ruby`, which the sandbox does not have"),
        ("T004", "check uses `node`, which the sandbox does not have"),
    ]
    assert {d.line for d in found} == {3}


@pytest.mark.parametrize(
    ("name", "closest"),
    [("grpe", "grep"), ("gerp", "grep"), ("sha265sum", "sha256sum"), ("/usr/bin/sort", "sort")],
)
def test_t004_names_the_closest_command_the_sandbox_has(name: str, closest: str) -> None:
    (found,) = only(checked(f"{name} x out.txt"), "T004")
    assert found.message == (
        f"check uses `{name}`, which the sandbox does not have; did you mean `{closest}`?"
    )


def test_t004_without_a_close_command_suggests_nothing() -> None:
    (found,) = only(checked("bash -c x"), "T004")
    assert found.message == (
        "check uses `bash`, which the sandbox does not have: the sandbox runs no shell but the"
        " check's own, so no script file; write the commands in the check itself (or run a"
        " Python program: `python3 FILE`)"
    )
    assert "did you mean" not in found.message


@pytest.mark.parametrize(
    ("check", "names"),
    [
        ("if test -s x; then curl a; fi", ["curl"]),
        ("for f in *.json; do ruby . $f; done", ["ruby"]),
        ("while read l; do perl -e 1; done < x", ["perl"]),
        ("case $x in a) { (node y); };; esac", ["node"]),
        ("[[ $(whoami) == a ]]", ["whoami"]),
        ("cat x | xargs -n 1 curl", ["curl"]),
        ("find . -name '*.py' -exec perl {} \\;", ["perl"]),
    ],
)
def test_t004_unknown_commands_inside_compounds_and_fan_out(check: str, names: list[str]) -> None:
    found = only(checked(check), "T004")
    assert [d.message for d in found] == [
        f"check uses `{name}`, which the sandbox does not have" for name in names
    ]


def test_t004_reported_once_per_command() -> None:
    found = only(checked("curl a && curl b"), "T004")
    assert len(found) == 1


def test_t004_near_miss_commands_the_sandbox_has() -> None:
    from groundskeeper.sandbox import COMMANDS

    assert {"grep", "test", "wc", "cd"} <= COMMANDS
    assert only(checked("cd out && grep -q x y.txt && test $(wc -l < y.txt) -ge 1"), "T004") == []


def test_t004_accepts_python_which_the_sandbox_runs_as_cpython() -> None:
    check = "python3 -c 'import json; json.load(open(\"a.json\"))' && python t.py"
    assert only(checked(check), "T004") == []


# --- T005 -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "check",
    ["true", ":", "echo done", "test -s x || true", "grep -q x f | true", "! false"],
)
def test_t005_checks_that_cannot_fail(check: str) -> None:
    (found,) = lint(checked(check))
    assert (found.code, found.level, found.scope, found.line) == ("T005", "error", "t", 3)
    assert found.message == f"check cannot fail: `{check}`"


def test_t005_multi_line_block_all_trivial() -> None:
    text = "* TODO t\n#+begin_src sh :check\n  echo checking\n  true\n#+end_src\n"
    (found,) = lint(text)
    assert found.message == "check cannot fail: `echo checking; true`"
    assert found.line == 2


@pytest.mark.parametrize(
    "check",
    [
        "test -s x",
        "true && test -s x",
        "echo x > out.txt",
        "echo checking; test -s x",
        "false || test -s x",
        "exit 1",
        "! true",
    ],
)
def test_t005_near_misses_can_fail(check: str) -> None:
    assert only(checked(check), "T005") == []


# --- T006 -------------------------------------------------------------------------------------


def test_t006_check_block_in_another_language() -> None:
    text = "* TODO t\n#+begin_src python :check\nassert True\n#+end_src\n"
    (found,) = lint(text)
    assert (found.code, found.level, found.line) == ("T006", "error", 2)
    assert found.message == (
        "check language `python` has no sandboxed interpreter; write the check as"
        " `#+begin_src sh :check` (`shell` and `bash` read the same) or a `:done-when:` command"
    )


def test_t006_check_block_without_language() -> None:
    (found,) = lint("* TODO t\n#+begin_src :check\ntest -s x\n#+end_src\n")
    assert (found.code, found.message) == (
        "T006",
        "check language `(none)` has no sandboxed interpreter; write the check as"
        " `#+begin_src sh :check` (`shell` and `bash` read the same) or a `:done-when:` command",
    )


def test_t006_near_misses() -> None:
    sh = "* TODO t\n#+begin_src sh :check\ngrep -q ok x\n#+end_src\n"
    assert lint(sh) == []
    # a python block that is not a check is just text for the worker
    not_check = sh + "#+begin_src python\nprint(1)\n#+end_src\n"
    assert lint(not_check) == []
    # :done-when wins over a later block, so the block's language does not matter (T006); the
    # block never runs, which is T023's to say
    overridden = checked("grep -q ok x") + "#+begin_src python :check\nx\n#+end_src\n"
    assert [d.code for d in lint(overridden)] == ["T023"]


# --- T038 -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("header", "named"),
    [
        (":dir public :results output", "`:dir public`"),
        (":var want=3", "`:var want=3`"),
        (":results silent :cmdline -x :stdin input", "`:cmdline -x`, `:stdin input`"),
        (":session s", "`:session s`"),
        (":noweb yes", "`:noweb yes`"),
        (":eval never", "`:eval never`"),
    ],
)
def test_t038_a_header_argument_the_check_would_ignore(header: str, named: str) -> None:
    """adversary-19 F23: `:dir` and `:var` were silently ignored, inverting the verdict."""
    (found,) = lint(
        f'* TODO t\n#+begin_src sh :check {header}\ngrep -qx "$want" n.txt\n#+end_src\n'
    )
    assert (found.code, found.level, found.line) == ("T038", "error", 2)
    assert found.message == (
        f"the check block's header argument {named} is not supported: the sandbox's shell runs"
        " the block from the workdir with no variables set, so it would be ignored; say it in"
        " the check itself (`cd public && …`, `want=3; …`)"
    )


def test_t038_near_misses() -> None:
    for header in (":check", ":check :results output :exports both", "-n :check :cache yes"):
        assert lint(f"* TODO t\n#+begin_src sh {header}\ngrep -q ok x\n#+end_src\n") == []
    # a block that is not the check: nothing runs it
    assert lint(checked("grep -q ok x") + "#+begin_src sh :dir x\nls\n#+end_src\n") == []


# --- T007 -------------------------------------------------------------------------------------


def test_t007_duplicate_ids_explicit_and_by_path() -> None:
    text = (
        "* TODO a\n:PROPERTIES:\n:ID: same\n:done-when: test -s a\n:END:\n"
        "* TODO b\n:PROPERTIES:\n:ID: same\n:done-when: test -s b\n:END:\n"
        "* TODO c\n:PROPERTIES:\n:done-when: grep -q ok c\n:END:\n"
        "* TODO c\n:PROPERTIES:\n:done-when: grep -q ok c\n:END:\n"
    )
    found = only(text, "T007")
    assert [(d.scope, d.line, d.message) for d in found] == [
        ("b", 6, "duplicate task id `same` (also at line 1)"),
        ("c", 15, "duplicate task id `c` (also at line 11)"),
    ]


def test_t007_near_miss_same_title_under_different_parents() -> None:
    text = (
        "* P1\n** TODO c\n:PROPERTIES:\n:done-when: grep -q ok c\n:END:\n"
        "* P2\n** TODO c\n:PROPERTIES:\n:done-when: grep -q ok c\n:END:\n"
    )
    assert lint(text) == []


# --- T008 -------------------------------------------------------------------------------------


def test_t008_ordered_without_child_tasks() -> None:
    text = "* TODO lone\n:PROPERTIES:\n:ORDERED: t\n:done-when: grep -q ok x\n:END:\n** notes\n"
    (found,) = lint(text)
    assert (found.code, found.level, found.scope, found.line) == ("T008", "warning", "lone", 1)
    assert found.message == ":ORDERED: on a heading with no child tasks"


def test_t008_near_misses() -> None:
    with_children = (
        "* Steps\n:PROPERTIES:\n:ORDERED: t\n:END:\n"
        "** group\n*** TODO one\n:PROPERTIES:\n:done-when: grep -q ok x\n:END:\n"
    )
    assert lint(with_children) == []
    not_ordered = "* TODO lone\n:PROPERTIES:\n:ORDERED: nil\n:done-when: grep -q ok x\n:END:\n"
    assert lint(not_ordered) == []


# --- ordering ---------------------------------------------------------------------------------


def test_diagnostics_come_in_document_order_across_rules() -> None:
    text = (
        "* W :workflow:\n"
        "** C :component:\n"
        "* TODO a\n"
        "* TODO b\n:PROPERTIES:\n:done-when: curl x\n:END:\n"
    )
    found = lint(text, outline=True)
    assert [(d.code, d.line) for d in found] == [("W001", 2), ("T002", 3), ("T004", 6)]


# --- one parser, one registry -----------------------------------------------------------------


def test_compound_checks_lint_clean() -> None:
    text = (
        "* TODO t\n#+begin_src sh :check\nfor f in a.txt b.txt; do\n  [[ -s $f ]]\ndone\n"
        "case $(wc -l < a.txt) in 0) false;; esac\ngrep -c x <<EOF\nx\nEOF\n#+end_src\n"
    )
    assert lint(text) == []


def test_t003_reports_exactly_what_the_sandbox_parser_says() -> None:
    from groundskeeper.sandbox import ShellSyntaxError, parse

    text = "test -s a && f() { cd b; }"
    with pytest.raises(ShellSyntaxError) as raised:
        parse(text)
    (found,) = lint(checked(text))
    assert found.message == (
        f"check does not parse: {raised.value.message} (column {raised.value.column})"
    )


def test_t004_accepts_every_command_the_registry_lists() -> None:
    from groundskeeper.sandbox import COMMANDS

    for name in sorted(COMMANDS):
        # xargs's first word is the command it runs: `xargs x` runs `x`
        argument = "echo x" if name == "xargs" else "x"
        assert only(checked(f"{name} {argument}"), "T004") == [], name


# --- O: where the text and org's reading of it part ways ----------------------------------------


def test_o001_mixed_line_endings_name_the_lines() -> None:
    (found,) = only("* TODO a\r\n* TODO b\n* TODO c\r\n", "O001")
    assert (found.level, found.line) == ("error", 1)
    assert "line(s) 1, 3 end in CRLF" in found.message


def test_o002_a_headline_inside_a_block_names_the_escape() -> None:
    (found,) = only("* TODO a\n#+begin_src sh :check\n* x\n#+end_src\n", "O002")
    assert (found.level, found.line) == ("error", 3)
    assert "`,*`" in found.message and "line 2" in found.message


def test_o003_an_unterminated_check_block_is_an_error_o004_other_blocks_warn() -> None:
    text = "* TODO a\n#+begin_src sh :check\ntrue\n* TODO b\n#+begin_quote\n"
    assert [(d.code, d.level, d.line) for d in lint(text) if d.code.startswith("O")] == [
        ("O003", "error", 2),
        ("O004", "warning", 5),
    ]


def test_o005_properties_outside_the_drawer_are_named() -> None:
    (found,) = only("* TODO a\nSee :PROPERTIES:\n:PROPERTIES:\n:done-when: true\n:END:\n", "O005")
    assert (found.level, found.line) == ("warning", 4)
    assert "`:done-when:`" in found.message and "line 3" in found.message


def test_o006_run_states_without_a_todo_line() -> None:
    found = only("* NEXT a\n* FAILED b\n* TODO c\n", "O006")
    assert [(d.line, d.scope) for d in found] == [(1, "NEXT a"), (2, "FAILED b")]
    assert only("#+TODO: TODO NEXT | DONE FAILED PARTIAL\n* NEXT a\n", "O006") == []


def test_o007_readings_org_itself_is_divided_on() -> None:
    found = only("* TODO\n* [#A]tight\n* COMMENTARY x\n", "O007")
    assert [d.line for d in found] == [1, 2, 3]


def test_o008_commented_subtrees_note_the_skipped_tasks() -> None:
    (found,) = only("* COMMENT Later\n** TODO a\n** TODO b\n* TODO c\n", "O008")
    assert (found.level, found.line) == ("info", 1)
    assert "2 task(s) skipped" in found.message


def test_o009_a_setup_file_org_reads_and_groundskeeper_does_not_is_an_error() -> None:
    # adversary-28b O1: the child's keyword came from the setup file, so it was no task and
    # its parent rolled up DONE without it
    text = "#+SETUPFILE: common.org\n* TODO Ship\n** FIXME Write the changelog\n"
    (found,) = only(text, "O009")
    assert (found.level, found.line) == ("error", 1)
    assert found.message.startswith("`#+SETUPFILE:` is not read")
    assert [d.line for d in only("#+include: other.org\n* TODO a\n", "O009")] == [1]
    assert only("#+TODO: TODO | DONE\n* TODO a\n  #+SETUPFILE is mentioned here\n", "O009") == []
