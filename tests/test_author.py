"""The author loop's parts: outline extraction, validate_outline, the retry message, one call."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groundskeeper.diagnostics import Diagnostic
from groundskeeper.models.model import AssistantTurn, ModelRequest
from groundskeeper.sandbox.registry import COMMANDS
from groundskeeper.supervisor.author import (
    ask_author,
    extract_outline,
    render_author_prompt,
    retry_message,
    validate_outline,
)

VALID = (
    "#+TITLE: t\n"
    "* TODO Greet\n"
    "  :PROPERTIES:\n"
    "  :ID: greet\n"
    "  :done-when: grep -qx hi out.txt\n"
    "  :END:\n"
    "  Write out.txt.\n"
)


# -- extraction ---------------------------------------------------------------------------------


def test_a_bare_outline_is_kept_as_is() -> None:
    assert extract_outline(VALID) == VALID


def test_prose_before_a_bare_outline_is_dropped() -> None:
    assert extract_outline("Sure, here is the plan.\n\n" + VALID) == VALID


def test_a_fenced_outline_is_the_fence_content_without_the_prose_around_it() -> None:
    reply = f"Here you go:\n```org\n{VALID}```\nLet me know if you want changes.\n"
    assert extract_outline(reply) == VALID


def test_the_first_fence_holding_a_headline_wins_over_a_fence_without_one() -> None:
    reply = f"```sh\ngrep -q x y\n```\n~~~\n{VALID}~~~\n```\n* TODO Other\n```\n"
    assert extract_outline(reply) == VALID


def test_an_unclosed_fence_runs_to_the_end_of_the_reply() -> None:
    assert extract_outline(f"```org\n{VALID}") == VALID


def test_crlf_line_ends_become_lf() -> None:
    assert extract_outline(VALID.replace("\n", "\r\n")) == VALID


def test_a_reply_without_an_outline_extracts_to_nothing() -> None:
    assert extract_outline("I cannot help with that.") == ""


@given(st.text())
def test_extraction_is_deterministic_and_idempotent(reply: str) -> None:
    once = extract_outline(reply)
    assert extract_outline(reply) == once
    if once and "```" not in once and "~~~" not in once:
        assert extract_outline(once) == once


# -- validation ---------------------------------------------------------------------------------


def test_an_outline_without_an_active_task_is_invalid_with_t001() -> None:
    found = validate_outline("#+TITLE: nothing to do\nJust prose.\n")
    assert [(d.level, d.code) for d in found] == [("error", "T001")]


def test_an_empty_outline_is_invalid() -> None:
    assert [d.code for d in validate_outline("")] == ["T001"]


def test_a_lint_error_makes_an_outline_invalid() -> None:
    outline = "* TODO Count\n  :PROPERTIES:\n  :done-when: true\n  :END:\n"
    found = validate_outline(outline)
    assert [d.code for d in found] == ["T005"]
    assert found[0].line == 3


def test_warnings_do_not_block_an_outline() -> None:
    assert validate_outline("* TODO Unchecked task\n") == []


def test_require_checks_makes_every_unchecked_leaf_an_error() -> None:
    outline = "* TODO Parent\n** TODO Leaf one\n** TODO Leaf two\n   :PROPERTIES:\n" \
              "   :done-when: test -s x\n   :END:\n"  # fmt: skip
    found = validate_outline(outline, require_checks=True)
    assert [(d.code, d.scope, d.line) for d in found] == [("A001", "Leaf one", 2)]
    assert validate_outline(outline) == []
    suite = "* TODO Fix it\n  :PROPERTIES:\n  :contract: pytest tests\n  :END:\n"
    assert validate_outline(suite, require_checks=True) == []  # its suite is its check
    soft = suite.replace("pytest tests", "soft pytest tests")
    assert [d.code for d in validate_outline(soft, require_checks=True)] == ["A001"]


def test_the_valid_example_is_valid_under_require_checks() -> None:
    assert validate_outline(VALID, require_checks=True) == []


# -- the retry message --------------------------------------------------------------------------


def test_the_retry_carries_the_diagnostics_verbatim_one_per_line() -> None:
    found = [
        Diagnostic("error", "outline", "outline has no heading in an active task state", None,
                   "T001"),
        Diagnostic("error", "Count", "check cannot fail: `true`", 3, "T005"),
    ]  # fmt: skip
    assert retry_message(found) == (
        "Your previous outline was invalid:\n"
        "plan.org: error: outline: outline has no heading in an active task state [T001]\n"
        "plan.org:3: error: Count: check cannot fail: `true` [T005]\n"
        "Emit a corrected org outline only."
    )


# -- the prompt and one call --------------------------------------------------------------------


def test_the_author_prompt_lists_every_sandbox_command_from_the_registry() -> None:
    prompt = render_author_prompt()
    assert "{{" not in prompt
    for name in COMMANDS:
        assert f"`{name}`" in prompt


@dataclass
class _Replies:
    """A model that answers author requests from a list and keeps what it was sent."""

    turns: list[AssistantTurn]
    requests: list[ModelRequest] = field(default_factory=list)

    @property
    def name(self) -> str:
        return "test:replies"

    def respond(self, request: ModelRequest) -> AssistantTurn:
        self.requests.append(request)
        return self.turns.pop(0)


def _text(text: str, stop: str = "end_turn") -> AssistantTurn:
    return AssistantTurn(({"type": "text", "text": text},), stop)


def test_an_author_request_has_no_tools_and_the_goal_in_its_first_message() -> None:
    model = _Replies([_text(VALID)])
    reply = ask_author(model, "say hi")
    (request,) = model.requests
    assert request.tools == ()
    assert request.purpose == "author"
    assert "say hi" in request.messages[0]["content"][0]["text"]
    assert reply.outline == VALID and reply.failure is None


def test_a_retry_shows_the_model_its_own_reply_and_the_verdict() -> None:
    model = _Replies([_text(VALID)])
    ask_author(model, "say hi", [("first reply", "Your previous outline was invalid: x")])
    roles = [(m["role"], m["content"][0]["text"]) for m in model.requests[0].messages]
    assert roles[1:] == [
        ("assistant", "first reply"),
        ("user", "Your previous outline was invalid: x"),
    ]


@pytest.mark.parametrize(
    ("stop", "failure"),
    [
        ("refusal", "the author model refused the goal"),
        ("max_tokens", "the author's reply was cut off at its token limit (max_tokens)"),
        ("model_context_window_exceeded", "the author's reply ran out of context window"),
        ("weird", "the author's reply stopped for an unknown reason: weird"),
    ],
)
def test_a_reply_that_did_not_end_on_purpose_is_a_failure_whatever_it_says(
    stop: str, failure: str
) -> None:
    reply = ask_author(_Replies([_text(VALID, stop)]), "say hi")
    assert reply.failure == failure


def test_pause_turn_is_sent_back_and_the_continuation_completes_the_reply() -> None:
    model = _Replies([_text("#+TITLE: t\n", "pause_turn"), _text(VALID[len("#+TITLE: t\n") :])])
    reply = ask_author(model, "say hi")
    assert reply.outline == VALID and reply.failure is None
    assert len(model.requests) == 2
    assert model.requests[1].messages[-1]["role"] == "assistant"


def test_pause_turn_without_end_is_a_failure_after_the_limit() -> None:
    model = _Replies([_text("x", "pause_turn") for _ in range(5)])
    reply = ask_author(model, "say hi")
    assert reply.failure == "the author's reply was still paused after 4 continuations"
    assert len(model.requests) == 5


@pytest.mark.parametrize(
    "check",
    [
        "grep -qx 3 out/count.txt || [ 1 -eq 1 ]",
        "(grep -qx 3 out/count.txt) || true",
        "grep -qx 3 out/count.txt | tr -d x",
        "grep -qx 3 out/count.txt || python3 -c pass",
    ],
)
def test_an_authored_check_that_cannot_fail_goes_back_to_the_author(check: str) -> None:
    """adversary-13 F9 in a goal run: the validator sends T005 back, as for `true`."""
    outline = f"* TODO Count\n  :PROPERTIES:\n  :done-when: {check}\n  :END:\n"
    assert [(d.level, d.code) for d in validate_outline(outline)] == [("error", "T005")]
    strong = outline.replace(check, "grep -qx 3 out/count.txt")
    assert validate_outline(strong) == []
