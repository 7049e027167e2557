"""The plan reader's fast path against orgparse's loader, which it stands in for.

`parse_plan` reads headlines, `#+` lines and property drawers with orgparse's own line parsers
instead of its node tree; the loader stays as the path for plans with dates and as the oracle
here: on any text both must give the same plan, or the same refusal.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import groundskeeper.plan as plan_module
from groundskeeper.plan import Heading, Plan, PlanReadError, parse_plan


def _dump(heading: Heading) -> tuple[Any, ...]:
    return (
        heading.level,
        heading.title,
        heading.keyword,
        heading.tags,
        heading.all_tags,
        list(heading.properties.items()),
        heading.body,
        heading.line,
        heading.blocks,
        heading.path,
        list(heading.property_lines.items()),
        heading.task_id,
        heading.check,
        [child.line for child in heading.child_tasks],
        heading.ordered,
        [_dump(child) for child in heading.children],
    )


def _read(text: str, *, full_loader: bool) -> tuple[Any, ...]:
    try:
        plan: Plan = plan_module._parse(text, None, full_loader=full_loader)
    except PlanReadError as exc:
        return ("refused", str(exc))
    return (
        plan.title,
        plan.active_states,
        plan.done_states,
        [_dump(root) for root in plan.roots],
    )


def _assert_same_as_loader(text: str) -> tuple[Any, ...]:
    direct = _read(text, full_loader=False)
    assert direct == _read(text, full_loader=True)
    return direct


# --- the path taken -------------------------------------------------------------------------


def _loader_refused(*args: object) -> object:
    raise AssertionError("the loader was used")


def test_a_plan_without_dates_is_read_without_the_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    text = "#+TITLE: t\n* TODO [#A] Task [1/2]   :x:\n  :PROPERTIES:\n  :ID: a\n  :END:\n"
    monkeypatch.setattr(plan_module, "_read_with_loader", _loader_refused)
    plan = parse_plan(text)
    assert (plan.title, plan.roots[0].title, plan.roots[0].task_id) == ("t", "Task [1/2]", "a")


@pytest.mark.parametrize(
    "dated",
    [
        "* TODO Meet <2024-05-01 Wed>",
        "#+DATE: <2024-05-01 Wed>\n* TODO Meet",
        "* TODO Meet\n  :PROPERTIES:\n  :CREATED: [2024-05-01 Wed]\n  :END:",
    ],
)
def test_a_plan_with_dates_goes_through_the_loader(
    monkeypatch: pytest.MonkeyPatch, dated: str
) -> None:
    monkeypatch.setattr(plan_module, "_read_with_loader", _loader_refused)
    with pytest.raises(AssertionError, match="the loader was used"):
        parse_plan(dated + "\n")


# --- the loader's quirks, kept ----------------------------------------------------------------


def test_duplicate_property_keeps_the_last_value_and_the_first_line() -> None:
    text = "* TODO T\n  :PROPERTIES:\n  :done-when: test -s a\n  :done-when: test -s b\n  :END:\n"
    task = parse_plan(text).roots[0]
    assert dict(task.properties) == {"done-when": "test -s b"}
    assert task.check is not None and (task.check.text, task.check.line) == ("test -s b", 3)
    _assert_same_as_loader(text)


def test_unclosed_drawer_reads_to_the_next_headline() -> None:
    text = "* TODO T\n  :PROPERTIES:\n  :ID: a\n  :done-when: true\n* TODO U\n"
    task = parse_plan(text).roots[0]
    assert dict(task.properties) == {"ID": "a", "done-when": "true"}
    assert dict(task.property_lines) == {"id": 3}
    _assert_same_as_loader(text)


def test_a_keyword_line_with_end_closes_the_drawer_as_the_loader_does() -> None:
    text = "* TODO T\n  :PROPERTIES:\n  #+note: :END:\n  :ID: a\n  :END:\n"
    task = parse_plan(text).roots[0]
    assert dict(task.properties) == {}
    assert task.task_id == "T"
    _assert_same_as_loader(text)


def test_a_todo_line_after_the_headlines_applies_to_all_of_them() -> None:
    text = "* WAIT First\n#+TODO: WAIT | OVER\n* OVER Second\n"
    plan = parse_plan(text)
    assert [h.keyword for h in plan.roots] == ["WAIT", "OVER"]
    assert (plan.active_states, plan.done_states) == (("WAIT",), ("OVER",))
    _assert_same_as_loader(text)


def test_title_comes_only_from_lines_before_the_first_headline() -> None:
    text = "#+TITLE: one\n#+title: two\n* TODO T\n#+TITLE: three\n"
    assert parse_plan(text).title == "one two"
    _assert_same_as_loader(text)


def test_an_unreadable_effort_is_refused_by_both_paths() -> None:
    text = "* TODO T\n  :PROPERTIES:\n  :Effort: soon\n  :END:\n"
    with pytest.raises(PlanReadError, match="orgparse cannot read this plan: Invalid duration"):
        parse_plan(text)
    assert _assert_same_as_loader(text)[0] == "refused"


def test_tags_in_the_last_word_of_a_padded_headline() -> None:
    text = "* TODO Ship it now:a:b:\n* TODO Pad          :x:y:   \n* TODO :only:\n* TODO x :a::b:\n"
    plan = parse_plan(text)
    assert [(h.title, h.tags) for h in plan.roots] == [
        ("Ship it now", ("a", "b")),
        ("Pad", ("x", "y")),
        ("", ("only",)),
        ("x", ("", "a", "b")),
    ]
    _assert_same_as_loader(text)


# --- any text -------------------------------------------------------------------------------

_HEADLINE_WORDS = st.sampled_from(
    ["Task", "a:b", "x:y:", ":t:", ":a::b:", "[#A]", "[#z]", "[1/2]", "[50%]", "TODO", "done",
     "*", "**", "\u00a0", "\t", "   ", "é:ü:", ":@x_y:", "NEXT", "WAIT", "OVER", "Pad" + " " * 30]
)  # fmt: skip
_KEYWORDS = st.sampled_from(["", "TODO ", "NEXT ", "DONE ", "FAILED ", "WAIT ", "OVER ", "TODO"])
_OTHER_LINES = st.sampled_from(
    [
        "", "  body text", "\tindented", "  - [ ] item", " * not a headline", "*bold*", "*",
        ":PROPERTIES:", "  :PROPERTIES:", "  :END:", ":END:", "  :ID: one", "  :id: two",
        "  :ID:", "  :done-when: test -s out.txt", "  :DONE-WHEN: grep -q x y", "  :ORDERED: t",
        "  :ordered: nil", "  :Effort: 1:30", "  :Effort: 2h", "  :: empty", "  : :",
        "  :a:b: c", "  :x: y :z:", "#+TODO: TODO NEXT | DONE FAILED PARTIAL",
        "#+TODO: WAIT OVER", "#+todo: TODO | DONE", "#+SEQ_TODO: A B | C", "#+TYP_TODO: WAIT",
        "  #+TODO: NEXT | OVER", "#+ TODO: X", "#+TITLE: a plan", "#+title:", "#+TITLE",
        "#+FILETAGS: :a:b:", "#+note: :END:", "#+note: :PROPERTIES:", "#+begin_src sh :check",
        "#+BEGIN_SRC js :in a:list :out b:int", "#+end_src", "#+END_SRC", "#+begin_quote",
        "#+end_quote", ",* escaped", ",#+end_src", "#+begin_src", "#+begin_example",
        "#+end_example", "  #+begin_src sh :check", "  #+end_src",
    ]
)  # fmt: skip
_DATED_LINES = st.sampled_from(
    [
        "  SCHEDULED: <2024-05-01 Wed>",
        "  DEADLINE: <2024-05-01 Wed> :PROPERTIES:",
        "  CLOCK: [2024-05-01 Wed 10:00]--[2024-05-01 Wed 11:00] =>  1:00",
        '  - State "DONE"       from "TODO"       [2024-05-01 Wed 10:00]',
        "  :CREATED: [2024-05-01 Wed]",
        "  see <2024-02-30 Fri>",
        "  [2024-05-01]",
        "#+DATE: <2024-02-30 Fri>",
        "#+DATE: [2024-05-01 Wed]",
        "  :LOG: CLOCK: [2024-05-01 Wed 10:00]--[2024-05-01 Wed 11:00] =>  1:00",
    ]
)


_PROPERTY_LINES = st.sampled_from(
    [
        "  :ID: one", "  :id: two", "  :ID:", "  :ID: three", "  :done-when: test -s out.txt",
        "  :done-when: false",
        "  :DONE-WHEN: grep -q x y", "  :ORDERED: t", "  :ordered: nil", "  :Effort: 1:30",
        "  :Effort: 2h", "  :: empty", "  : :", "  :a:b: c", "  :x: y :z:", "not a property",
        "#+note: :END:", "#+TODO: WAIT | OVER", "  :PROPERTIES:",
    ]
)  # fmt: skip


@st.composite
def _section(draw: st.DrawFn, with_dates: bool) -> list[str]:
    """A headline, often a property drawer (closed or not, opened by a `#+` line or not), and
    a few other lines."""
    stars = "*" * draw(st.integers(min_value=1, max_value=3))
    dated = st.sampled_from(["<2024-05-01 Wed>", "<2024-02-30 Fri>", "[2024-05-01]"])
    words = draw(
        st.lists(st.one_of(_HEADLINE_WORDS, dated) if with_dates else _HEADLINE_WORDS, max_size=5)
    )
    gap = draw(st.sampled_from([" ", "  ", "\t", " \u00a0"]))
    lines = [stars + gap + draw(_KEYWORDS) + " ".join(words)]
    lines += draw(st.lists(_OTHER_LINES, max_size=2))
    if draw(st.booleans()):
        openers = ["  :PROPERTIES:", "#+note: :PROPERTIES:", "x"]
        if with_dates:
            openers.append("  DEADLINE: <2024-05-01 Wed> :PROPERTIES:")
        lines.append(draw(st.sampled_from(openers)))
        properties = _PROPERTY_LINES
        if with_dates:
            properties = st.one_of(_PROPERTY_LINES, _DATED_LINES)
        lines += draw(st.lists(properties, min_size=1, max_size=6))
        lines += draw(st.sampled_from([["  :END:"], [":END:"], [], ["  :END:", "  :ID: late"]]))
    lines += draw(st.lists(_other_line(with_dates), max_size=3))
    return lines


def _other_line(with_dates: bool) -> st.SearchStrategy[str]:
    free = st.text(alphabet=" \t:*#+<>[]-_aEIDPR0\u00a0é", max_size=12)
    return st.one_of(_OTHER_LINES, free, *([_DATED_LINES] if with_dates else []))


@st.composite
def _texts(draw: st.DrawFn) -> str:
    with_dates = draw(st.booleans())
    lines = draw(st.lists(_other_line(with_dates), max_size=3))
    for _ in range(draw(st.integers(min_value=0, max_value=6))):
        lines += draw(_section(with_dates))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return newline.join(lines) + draw(st.sampled_from(["", newline]))


@settings(max_examples=600, deadline=None)
@given(_texts())
def test_the_fast_reader_reads_any_text_as_the_loader_does(text: str) -> None:
    _assert_same_as_loader(text)
