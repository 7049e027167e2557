"""How a task's text reads a file it names (`plan.expected.text_reading`): generated
prohibitions never free it, generated requests that name it as the object or the place of
a change always do, and a sentence that does both is unsure (kept, and said)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groundskeeper.plan.expected import ASKS, FORBIDS, SILENT, UNSURE, text_reading

VERBS = ["modify", "edit", "change", "update", "regenerate", "rewrite", "overwrite", "touch",
         "bump", "add to", "append to", "fix", "replace", "write to", "set values in"]  # fmt: skip
ASKING = ["update", "regenerate", "rewrite", "overwrite", "fix", "refresh", "edit", "modify"]
FILES = ["exp.txt", "g/exp2.txt", "tests/expected.txt", "pyproject.toml", "tox.ini"]
OTHER = ["the answer", "out.txt", "the report"]
PROHIBIT = [
    "Don't {v} {f}.",
    "Do not {v} {f}.",
    "Never {v} {f}.",
    "You must not {v} {f}.",
    "You may not {v} {f}.",
    "Please do not {v} or {v2} {f}.",
    "Write {o} without having to {v} {f}.",
    "Write {o} without changing {f}.",
    "{F} must stay as it is: don't {v} it.",
    "Editing {f} is forbidden.",
    "Leave {f} unchanged.",
    "Keep {f} intact.",
    "Do not, under any circumstances, {v} {f}.",
    "Write {o}; {f} is not yours to {v}.",
]
ASK = [
    "{A} {f}.",
    "Please {a} {f}.",
    "Add the missing line z to {f}.",
    "Add a [tool.black] section with line-length = 100 to {f}.",
    "Append a line to {f}.",
    "Bump the version in {f} to 0.3.",
    "In {f}, bump the version to 0.2.",
    "Set envlist to py311,py312 in {f}.",
    "Fix the typo in {f}.",
    "Write the new answer into {f}.",
]
COMPARE = [
    "Make {o} match {f}.",
    "Write {o} so it matches {f}.",
    "Write {o} so that it is identical to {f}.",
    "Compare {o} with {f}, fixing any differences.",
    "Check the answer against {f}.",
]


def _fill(template: str, data: st.DataObject) -> tuple[str, str]:
    f = data.draw(st.sampled_from(FILES))
    a = data.draw(st.sampled_from(ASKING))
    text = template.format(
        v=data.draw(st.sampled_from(VERBS)),
        v2=data.draw(st.sampled_from(VERBS)),
        f=f,
        F=f,
        o=data.draw(st.sampled_from(OTHER)),
        a=a,
        A=a.capitalize(),
    )
    return text, f


LEAD = st.sampled_from(["", "Write out.txt with the answer. ", "Compute the sum. "])


@given(st.sampled_from(PROHIBIT), LEAD, st.data())
def test_a_prohibition_never_frees_the_file(template: str, lead: str, data: st.DataObject) -> None:
    text, f = _fill(template, data)
    assert text_reading(lead + text, f) == FORBIDS, lead + text


@given(st.sampled_from(ASK), LEAD, st.data())
def test_a_plain_request_asks(template: str, lead: str, data: st.DataObject) -> None:
    text, f = _fill(template, data)
    assert text_reading(lead + text, f) == ASKS, lead + text


@given(st.sampled_from(COMPARE), LEAD, st.data())
def test_a_comparison_asks_nothing(template: str, lead: str, data: st.DataObject) -> None:
    text, f = _fill(template, data)
    assert text_reading(lead + text, f) == SILENT, lead + text


@given(st.sampled_from(ASK), st.sampled_from(PROHIBIT), st.data())
def test_asking_and_forbidding_the_same_file_is_unsure(
    ask: str, prohibit: str, data: st.DataObject
) -> None:
    text, f = _fill(ask, data)
    other = prohibit.format(v="edit", v2="change", f=f, F=f, o="out.txt", a="", A="")
    assert text_reading(text + " " + other, f) == UNSURE, text + " " + other


def test_a_negation_after_the_ask_leaves_it_unsure() -> None:
    text = "Regenerate exp.txt from the new rules, not the old ones."
    assert text_reading(text, "exp.txt") == UNSURE


@pytest.mark.parametrize(
    ("text", "path", "reading"),
    [
        ("The result file is wrong; make it say 42.", "result.txt", ASKS),
        ("The result file is not wrong.", "result.txt", UNSURE),
        ("Add an entry to the changelog.", "CHANGELOG.md", ASKS),
        ("Fix the Makefile.", "Makefile", ASKS),
        ("Sort names.txt in place.", "names.txt", ASKS),
        ("Normalize the data file.", "data.csv", ASKS),
        # the stem alone names only what cannot mean anything else
        ("Write total.txt from the data.", "data.csv", SILENT),
        ("Write o1.txt with the sum of the numbers in data.txt.", "data.txt", SILENT),
        ("Make out.txt match the expected file.", "exp/expected.txt", SILENT),
        ("Don't touch the result file.", "result.txt", FORBIDS),
        # the state the work is for: the file is to change to reach it
        ("Fix the build so build.log has no errors.", "build.log", ASKS),
        ("Run the tests until report.txt shows 0 failures.", "report.txt", ASKS),
        ("Write out.txt so it matches exp.txt.", "exp.txt", SILENT),
        ("Fix the build; build.log has errors.", "build.log", SILENT),
        ("Fix it so build.log has no errors, but do not edit build.log.", "build.log", FORBIDS),
        # a supposition or a thing to report is no request (adversary-11 F1, F2)
        ("If tests/expected4.txt looks wrong, tell me.", "tests/expected4.txt", SILENT),
        ("Tell me if tests/e.txt is outdated.", "tests/e.txt", SILENT),
        ("If tools/check.py looks wrong, tell me.", "tools/check.py", SILENT),
        (
            "Clean up the generator and tests/e7.txt is the reference output.",
            "tests/e7.txt",
            SILENT,
        ),
        ("Fix result.txt, which is wrong.", "result.txt", ASKS),
    ],
)
def test_a_file_named_by_its_stem_or_said_to_be_wrong(text: str, path: str, reading: str) -> None:
    assert text_reading(text, path) == reading


def test_the_stem_alone_names_a_file_only_when_no_other_file_in_view_shares_it() -> None:
    text = "Update the report for version 1.0."
    assert text_reading(text, "out/report.txt") == SILENT
    assert text_reading(text, "out/report.txt", sole_stem=True) == ASKS
    assert text_reading("Make out.txt match the report.", "exp/report.txt", sole_stem=True) == (
        SILENT
    )
