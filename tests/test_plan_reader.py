"""The plan reader against org 9.5's own reading (org-element, org-entry-get), construct by
construct; `test_org_goldens` holds it to Emacs itself on the corpus.

Each expectation here was seen in `emacs -Q --batch` (tests/org_corpus/org_view.el).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from groundskeeper.plan.edit import replace_keyword
from groundskeeper.plan.org import Heading, parse_plan


def _seen(text: str) -> list[tuple[Any, ...]]:
    return [(h.line, h.keyword, h.priority, h.title, h.tags) for h in parse_plan(text).walk()]


def test_an_unterminated_block_hides_nothing() -> None:
    text = "* TODO a\n#+begin_src sh :check\ntest -s x\n* TODO b\n** TODO c\n"
    plan = parse_plan(text)
    assert [(h.title, h.check) for h in plan.walk()] == [("a", None), ("b", None), ("c", None)]
    (note,) = plan.notes
    assert (note.kind, note.line, note.is_check) == ("unterminated-block", 2, True)


def test_a_block_ends_only_inside_its_section() -> None:
    plan = parse_plan("* TODO a\n#+begin_example\n* TODO b\n#+end_example\n")
    assert [h.title for h in plan.walk()] == ["a", "b"]
    (note,) = plan.notes
    assert (note.kind, note.line, note.other, note.text) == ("headline-in-block", 3, 2, "example")


def test_a_property_drawer_counts_only_after_the_headline_or_planning_line() -> None:
    text = (
        "* TODO body first\n"
        "The :PROPERTIES: drawer is explained here.\n"
        ":PROPERTIES:\n:done-when: true\n:END:\n"
        "* TODO logbook first\n:LOGBOOK:\n- note\n:END:\n:PROPERTIES:\n:ID: late\n:END:\n"
        "* TODO planned\nSCHEDULED: <2024-01-01 Mon>\n:properties:\n:ID: planned\n:end:\n"
        "* TODO blank inside\n:PROPERTIES:\n\n:ID: gap\n:END:\n"
    )
    plan = parse_plan(text)
    assert [(h.get_property("ID"), h.check) for h in plan.walk()] == [
        (None, None),
        (None, None),
        ("planned", None),
        (None, None),
    ]
    assert [(n.kind, n.line, n.text, n.other) for n in plan.notes] == [
        ("unread-property", 4, "done-when", 3),
        ("unread-property", 11, "ID", 10),
        ("unread-property", 21, "ID", 19),
    ]


def test_the_first_property_line_wins_and_plus_appends() -> None:
    plan = parse_plan("* TODO a\n:PROPERTIES:\n:ID: one\n:id: two\n:ID+: more\n:END:\n")
    (heading,) = plan.walk()
    assert (heading.task_id, heading.property_lines["id"]) == ("one more", 3)


def test_headlines_read_as_org_element_reads_them() -> None:
    text = (
        "* TODO\n"
        "* [#a] Low priority\n"
        "* [#A]No space\n"
        "*  TODO  two  spaces   :c#:50%:\n"
        "* a:b:\n"
        "* TODO :tag:\n"
        "* :only:\n"
        "* TODO x :a::b:\n"
        "* TODO\tTab\n"
    )
    assert _seen(text) == [
        (1, None, None, "TODO", ()),
        (2, None, "a", "Low priority", ()),
        (3, None, "A", "No space", ()),
        (4, "TODO", None, "two  spaces", ("c#", "50%")),
        (5, None, None, "a:b:", ()),
        (6, "TODO", None, ":tag:", ()),
        (7, None, None, "", ("only",)),
        (8, "TODO", None, "x", ("a", "", "b")),
        (9, None, None, "TODO\tTab", ()),
    ]
    kinds = [(n.kind, n.line) for n in parse_plan(text).notes]
    assert kinds == [("keyword-without-title", 1), ("priority-without-space", 3)]


def test_comment_subtrees_are_not_tasks() -> None:
    text = "* COMMENT Later\n** TODO a\n* TODO COMMENT b\n* COMMENTARY c\n* TODO d\n** TODO e\n"
    plan = parse_plan(text)
    assert [(h.title, h.commented) for h in plan.walk()] == [
        ("Later", True),
        ("a", True),
        ("b", True),
        ("ARY c", True),
        ("d", False),
        ("e", False),
    ]
    assert [t.title for t in plan.tasks()] == ["d", "e"]
    assert [(n.kind, n.line) for n in plan.notes] == [("comment-prefix", 4)]


def test_keyword_sets_as_org_builds_them() -> None:
    plan = parse_plan("#+TODO: DRAFT REVIEW\n#+SEQ_TODO: WAIT(w@/!) | CANCELLED(c)\n* REVIEW a\n")
    assert plan.active_states == ("DRAFT", "WAIT")
    assert plan.done_states == ("REVIEW", "CANCELLED")
    plan = parse_plan("#+TYP_TODO: A | B\n#+TODO: C D\n")
    assert (plan.active_states, plan.done_states) == (("A", "C"), ("B", "D"))


def test_statistics_cookies_stay_out_of_path_ids() -> None:
    plan = parse_plan("* TODO Ship [1/2] it\n** TODO One [50%]\n** DONE Two\n")
    assert [h.task_id for h in plan.walk()] == ["Ship it", "Ship it/One", "Ship it/Two"]
    assert plan.roots[0].title == "Ship [1/2] it"


def test_mixed_line_endings_keep_their_cr_as_emacs_does() -> None:
    plan = parse_plan("* TODO a\r\n* TODO b :x:\r\n* TODO c :y:\n")
    assert [(h.title, h.tags) for h in plan.walk()] == [("a", ()), ("b :x:", ()), ("c", ("y",))]
    (note,) = plan.notes
    assert (note.kind, note.line, note.text) == ("mixed-line-endings", 1, "1, 2")
    assert parse_plan("* TODO a :x:\r\n* TODO b\r\n").notes == ()


# --- every write-back keeps org's reading of everything else --------------------------------

_LINES = st.sampled_from(
    [
        "* TODO Task", "** DONE Done [1/2]", "*  TODO  spaced  :a:b:", "* NEXT n", "* FAILED f",
        "* COMMENT c", "** PARTIAL p :x#:", "* TODO [#A] pri", ":PROPERTIES:", ":ID: x",
        ":done-when: true", ":END:", "#+begin_src sh :check", "#+end_src", "body", "",
        "* TODO", "* [#B]tight", "SCHEDULED: <2024-01-01 Mon>",
    ]
)  # fmt: skip


def _view(heading: Heading) -> tuple[Any, ...]:
    return (heading.line, heading.level, heading.title, heading.tags, heading.priority,
            heading.commented, heading.task_id, heading.check)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(_LINES, min_size=1, max_size=14), st.sampled_from(["\n", "\r\n"]), st.data())
def test_a_keyword_swap_changes_only_that_keyword(
    lines: list[str], newline: str, data: st.DataObject
) -> None:
    text = "#+TODO: TODO NEXT | DONE FAILED PARTIAL" + newline + newline.join(lines) + newline
    before = parse_plan(text)
    tasks = before.tasks()
    if not tasks:
        return
    task = data.draw(st.sampled_from(tasks))
    new = data.draw(st.sampled_from(["TODO", "NEXT", "DONE", "FAILED", "PARTIAL"]))
    if new == task.keyword:
        return
    after = parse_plan(replace_keyword(text, task.line, task.keyword, new))
    assert [_view(h) for h in after.walk()] == [_view(h) for h in before.walk()]
    assert [h.keyword for h in after.walk()] == [
        new if h is task else h.keyword for h in before.walk()
    ]
    assert after.notes == before.notes
