"""Invariants: `#+INVARIANT:` and `#+CONTEXT: NAME: …` read before the first headline,
chosen per task by `:contexts:` (inherited; default all), linted (I001–I003), rendered into
the worker's system prompt inside the cached prefix, and sealed on each leaf's task-start."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from groundskeeper.cli import main
from groundskeeper.plan.invariants import (
    invariant_diagnostics,
    read_invariants,
    render_invariants,
)
from groundskeeper.plan.org import parse_plan
from groundskeeper.supervisor.worker import WorkerTask, render_worker_prompt
from tests.messages_stub import MessagesStub
from tests.test_claude_cli import HEAD, ledger_verifies, resume, steps, write_a

PREAMBLE = (
    HEAD
    + "#+INVARIANT: Never delete anything under data/.\n"
    + "#+INVARIANT: Amounts are written in integer cents.\n"
    + "#+CONTEXT: billing: Every invoice has exactly one currency.\n"
    + "#+CONTEXT: ui: Every page has a <title>.\n"
    + "#+CONTEXT: billing: Refunds never exceed the charge.\n"
)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def lint_json(tmp_path: Path, text: str) -> tuple[int, list[dict[str, Any]]]:
    path = tmp_path / "plan.org"
    path.write_text(text)
    result = CliRunner().invoke(main, ["lint", str(path), "--json"])
    return result.exit_code, json.loads(result.stdout)


# --- lint: the failure paths first ---------------------------------------------------------------


def test_an_unknown_context_is_a_lint_error_naming_the_line_and_the_known_ones(
    tmp_path: Path,
) -> None:
    text = PREAMBLE + "* TODO Pay\n  :PROPERTIES:\n  :contexts: billing, biling\n  :END:\n"
    code, found = lint_json(tmp_path, text)
    assert code == 1
    (diagnostic,) = [d for d in found if d["code"] == "I001"]
    assert (diagnostic["level"], diagnostic["line"], diagnostic["scope"]) == ("error", 9, "Pay")
    assert diagnostic["message"].startswith(
        ":contexts: names `biling`, which the plan does not define; its contexts: billing, ui."
    )


def test_contexts_without_any_context_defined_is_an_error(tmp_path: Path) -> None:
    text = HEAD + "* TODO Pay\n  :PROPERTIES:\n  :contexts: billing\n  :END:\n"
    code, found = lint_json(tmp_path, text)
    assert code == 1
    found = [d for d in found if d["code"] != "T002"]  # T002: no check, a warning
    assert [d["code"] for d in found] == ["I001"]
    assert "its contexts: none (no `#+CONTEXT:` line)" in found[0]["message"]


def test_malformed_and_misplaced_invariant_lines_are_errors(tmp_path: Path) -> None:
    text = (
        HEAD
        + "#+INVARIANT:\n"
        + "#+CONTEXT: no colon here\n"
        + "#+CONTEXT: billing:\n"
        + "* TODO Pay\n"
        + "#+INVARIANT: said too late\n"
        + "  #+begin_src sh\n  #+CONTEXT: x: inside a block is code, not a keyword\n"
        + "  #+end_src\n"
    )
    code, found = lint_json(tmp_path, text)
    assert code == 1
    found = [d for d in found if d["code"] != "T002"]  # T002: no check, a warning
    assert [(d["code"], d["line"]) for d in found] == [
        ("I002", 2),
        ("I002", 3),
        ("I002", 4),
        ("I003", 6),
    ]
    assert found[3]["message"] == (
        "`#+INVARIANT:` after the first headline is read by nothing; move it above the first"
        " headline"
    )


def test_a_plan_with_known_contexts_lints_clean(tmp_path: Path) -> None:
    text = PREAMBLE + "* TODO Pay\n  :PROPERTIES:\n  :contexts: billing\n"
    code, found = lint_json(tmp_path, text + "  :done-when: grep -q x a\n  :END:\n")
    assert (code, found) == (0, [])


# --- which invariants a task sees ---------------------------------------------------------------


def test_selection_plan_level_always_contexts_by_property_inherited_default_all() -> None:
    plan = parse_plan(
        PREAMBLE
        + "* TODO All\n"  # no :contexts:: every context
        + "* TODO Billing\n  :PROPERTIES:\n  :contexts: billing\n  :END:\n"
        + "** TODO Child\n"  # inherits billing
        + "** TODO Own\n   :PROPERTIES:\n   :contexts: ui\n   :END:\n"
        + "* TODO None\n  :PROPERTIES:\n  :contexts:\n  :END:\n"  # only plan-level
    )
    seen = read_invariants(plan).for_tasks(plan)
    by_title = {h.title: [(i.context, i.line) for i in found] for h, found in seen.items()}
    plan_level = [(None, 2), (None, 3)]
    assert by_title == {
        "All": [*plan_level, ("billing", 4), ("ui", 5), ("billing", 6)],
        "Billing": [*plan_level, ("billing", 4), ("billing", 6)],
        "Child": [*plan_level, ("billing", 4), ("billing", 6)],
        "Own": [*plan_level, ("ui", 5)],
        "None": plan_level,
    }
    assert list(invariant_diagnostics(plan)) == []


def test_a_plan_without_invariants_says_so_in_the_prompt() -> None:
    prompt = render_worker_prompt(WorkerTask("t", "T", "", None))
    assert "## Invariants\n\nThe plan states none.\n" in prompt


def test_the_prompt_section_lists_plan_level_then_each_context() -> None:
    plan = parse_plan(PREAMBLE + "* TODO Pay\n  :PROPERTIES:\n  :contexts: billing\n  :END:\n")
    (seen,) = read_invariants(plan).for_tasks(plan).values()
    assert render_invariants(seen) == (
        "These hold for all work in this plan: nothing you do may break them, whatever else the"
        " task says.\n"
        "- Never delete anything under data/.\n"
        "- Amounts are written in integer cents.\n"
        "\nIn the context `billing`:\n"
        "- Every invoice has exactly one currency.\n"
        "- Refunds never exceed the charge."
    )


# --- through the CLI and the Messages API stub ----------------------------------------------------


def test_invariants_reach_the_cached_system_prompt_and_the_ledger(
    tmp_path: Path, messages_stub: MessagesStub
) -> None:
    plan = tmp_path / "plan.org"
    plan.write_text(
        PREAMBLE
        + "* TODO Task a\n  :PROPERTIES:\n  :ID: a\n  :contexts: billing\n"
        + "  :done-when: grep -q hello a.txt\n  :END:\n"
    )
    write_a(messages_stub)
    result, doc = resume(plan)
    assert result.exit_code == 0, result.stderr
    assert doc["tasks"][0]["state"] == "DONE"
    assert len(messages_stub.requests) == 2
    for request in messages_stub.requests:
        (system,) = request.body["system"]
        assert system["cache_control"] == {"type": "ephemeral"}  # inside the cached prefix
        text = system["text"]
        for said in (
            "- Never delete anything under data/.",
            "- Amounts are written in integer cents.",
            "In the context `billing`:\n- Every invoice has exactly one currency.\n"
            "- Refunds never exceed the charge.",
        ):
            assert said in text
        assert "Every page has a <title>" not in text  # the ui context was not selected
        # before the task's own words change per attempt: the messages, never the system
        assert "Never delete anything" not in json.dumps(request.body["messages"])
    (start,) = [s for s in steps(plan, "task-start") if s["kind"] == "leaf"]
    assert start["invariants"] == [
        {"context": None, "line": 2, "sha256": sha("Never delete anything under data/.")},
        {"context": None, "line": 3, "sha256": sha("Amounts are written in integer cents.")},
        {"context": "billing", "line": 4, "sha256": sha("Every invoice has exactly one currency.")},
        {"context": "billing", "line": 6, "sha256": sha("Refunds never exceed the charge.")},
    ]
    ledger_verifies(plan)


def test_a_leaf_without_invariants_seals_an_empty_list(tmp_path: Path) -> None:
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD + "* TODO T\n  :PROPERTIES:\n  :ID: t\n  :done-when: test -s a\n  :END:\n")
    script = tmp_path / "w.yaml"
    script.write_text("workers:\n  t:\n    - {tool: write_file, input: {path: a, content: x}}\n"
                      "    - say: DONE\n")  # fmt: skip
    result = CliRunner().invoke(
        main, ["resume", str(plan), "--model", f"scripted:{script}", "--json"]
    )
    assert result.exit_code == 0, result.output
    (start,) = steps(plan, "task-start")
    assert start["invariants"] == []
