"""Lint W005–W007: `js` blocks marked `:validate workflow` are judged in the zero-tool sandbox."""

from __future__ import annotations

from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import parse_plan

HEAD = "#+TODO: TODO | DONE\n* Mail flow :workflow:\n** Sync :component:\n"


def lint(body: str) -> list[tuple[str, str, int | None]]:
    return [(d.level, d.code, d.line) for d in validate(parse_plan(HEAD + body))]


def test_a_valid_script_has_no_finding() -> None:
    body = (
        "   #+begin_src js :validate workflow\n"
        '   const workflow = { topics: { a: {} }, consumers: { c: { subscribe: ["a"],'
        " prepare: async () => ({}) } } };\n"
        "   #+end_src\n"
    )
    assert lint(body) == []


def test_an_invalid_script_is_an_error_on_the_line_the_sandbox_names() -> None:
    body = (
        "   #+begin_src js :validate workflow\n"
        "   const workflow = {\n"
        '     producers: { p: { schedule: { interval: "1m" }, handler() {} } },\n'
        "   };\n"
        '   Sheets.append("Log", [1]);\n'
        "   #+end_src\n"
    )
    diagnostics = validate(parse_plan(HEAD + body))
    assert [(d.level, d.code, d.line) for d in diagnostics] == [("error", "W005", 8)]
    assert diagnostics[0].scope == "Sync"
    assert diagnostics[0].message.startswith(
        "workflow script: Tool calls not allowed during validation: the script calls"
        " Sheets.append at the top level (line 4)"
    )
    assert diagnostics[0].message.endswith("(tool-call)")


def test_a_broken_rule_points_at_the_line_of_its_entry() -> None:
    body = (
        "   #+begin_src js :validate workflow\n"
        "   const workflow = { consumers: { c: { subscribe: [] } } };\n"
        "   #+end_src\n"
    )
    found = validate(parse_plan(HEAD + body))
    assert [(d.code, d.line) for d in found] == [("W005", 5), ("W005", 5)]
    assert [d.message.rsplit("(", 1)[1] for d in found] == [
        "consumer-subscribe)",
        "consumer-prepare)",
    ]


def test_an_undeclared_topic_is_a_warning() -> None:
    body = (
        "   #+begin_src js :validate workflow\n"
        '   const workflow = { consumers: { c: { subscribe: ["b"], prepare() {} } } };\n'
        "   #+end_src\n"
    )
    assert lint(body) == [("warning", "W006", 5)]


def test_a_finding_without_a_line_points_at_the_block() -> None:
    body = "   #+begin_src js :validate workflow\n   const flow = {};\n   #+end_src\n"
    assert lint(body) == [("error", "W005", 4)]


def test_a_validator_lint_does_not_know_or_a_block_that_is_not_js_is_an_error() -> None:
    body = (
        "   #+begin_src js :validate types\n   1\n   #+end_src\n"
        "   #+begin_src python :validate workflow\n   x = 1\n   #+end_src\n"
        "   #+begin_src js :validate\n   1\n   #+end_src\n"
    )
    found = validate(parse_plan(HEAD + body))
    assert [(d.code, d.line) for d in found] == [("W007", 4), ("W007", 7), ("W007", 10)]
    assert found[0].message == "`:validate` names `types`; the validator lint knows is `workflow`"
    assert found[1].message == "`:validate workflow` is for `js` blocks; this block is python"


def test_a_js_block_without_validate_is_not_run() -> None:
    body = "   #+begin_src js :out x:string\n   while (true) {}\n   #+end_src\n"
    assert lint(body) == []
