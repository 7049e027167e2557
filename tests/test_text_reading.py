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
        ("The result file is not wrong.", "result.txt", FORBIDS),
        ("Add an entry to the changelog.", "CHANGELOG.md", ASKS),
        ("Fix the Makefile.", "Makefile", ASKS),
        ("Sort names.txt in place.", "names.txt", ASKS),
        ("Normalize the data file.", "data.csv", ASKS),
        # the stem alone names only what cannot mean anything else
        ("Write total.txt from the data.", "data.csv", SILENT),
        ("Write o1.txt with the sum of the numbers in data.txt.", "data.txt", SILENT),
        # a file in the object's own phrase ("in numbers.txt") is not the verb's object (adv24)
        ("Write the sum of the numbers in numbers.txt into total.txt.", "total.txt", ASKS),
        ("Write the sum of the numbers in data.txt to out.txt.", "out.txt", ASKS),
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


@pytest.mark.parametrize(
    ("text", "path", "reading"),
    [
        # a defect said of the file, then the value wanted: a bug ticket (adversary-19 F13)
        ("The server in config.ini listens on the wrong port; it should be 8080.", "config.ini",
         ASKS),
        ("config.ini has the wrong port; it should be 8080.", "config.ini", ASKS),
        ("The port in config.ini is wrong: it should be 8080.", "config.ini", ASKS),
        ("The port in config.ini is wrong. It should be 8080.", "config.ini", ASKS),
        ("config.ini's port is wrong, it should be 8080.", "config.ini", ASKS),
        ("There is a typo in docs/guide.md: recieve should be receive.", "docs/guide.md", ASKS),
        ("There are two typos in docs/guide.md: both should read receive.", "docs/guide.md", ASKS),
        ("docs/guide.md has a typo: 'recieve' should be 'receive'.", "docs/guide.md", ASKS),
        # a value taken from another file, a comparison, a question, a condition: no ask
        ("out.txt is wrong; it should be the same as tests/expected.txt.", "tests/expected.txt",
         SILENT),
        ("The sum in out.txt is wrong; it should be what tests/e.txt holds.", "tests/e.txt",
         SILENT),
        ("The port in config.ini is wrong; it should match ports.txt.", "config.ini", SILENT),
        ("The port in config.ini is wrong; it should match ports.txt.", "ports.txt", SILENT),
        ("Is the port in config.ini wrong? It should be 8080.", "config.ini", SILENT),
        ("If the port in config.ini is wrong, it should be 8080.", "config.ini", SILENT),
        ("tests/expected.txt says 41; the answer should be 42.", "tests/expected.txt", SILENT),
        ("The server in config.ini listens on port 80; it should be 8080.", "config.ini", SILENT),
        ("The answer in out.txt is wrong: it should be the total of data.txt.", "data.txt", SILENT),
        ("There is a typo in docs/guide.md.", "docs/guide.md", SILENT),
        # and a keeping still keeps
        ("The port in config.ini is wrong; it should be 8080, but do not edit config.ini.",
         "config.ini", FORBIDS),
        ("config.ini has the wrong port; it should be 8080. Leave config.ini as it is.",
         "config.ini", UNSURE),
    ],
)  # fmt: skip
def test_a_defect_and_the_value_wanted_ask_for_the_fix(text: str, path: str, reading: str) -> None:
    assert text_reading(text, path) == reading


@pytest.mark.parametrize(
    ("text", "path", "reading"),
    [
        # adversary-21 F11: a negated state says what is wrong, not what to keep
        ("config.yaml does not parse: the port line is missing its colon. Fix it.",
         "config.yaml", ASKS),
        ("Edit config.yaml. config.yaml does not parse.", "config.yaml", ASKS),
        ("build.sh doesn't work; fix it.", "build.sh", ASKS),
        ("data.json is not valid JSON. Repair it.", "data.json", ASKS),
        ("config.yaml does not parse.", "config.yaml", SILENT),
        # a keeping stays one
        ("config.yaml does not change; fix app.py.", "config.yaml", FORBIDS),
        ("config.yaml is not yours to edit. Fix app.py.", "config.yaml", FORBIDS),
        # adversary-21 F6: a value used instead of another in a file
        ("Use port 8080 instead of 8000 in app.json.", "app.json", ASKS),
        ("Use tabs instead of spaces in Makefile.", "Makefile", ASKS),
        ("Use the values in ref.json instead of the old ones in app.json.", "ref.json", FORBIDS),
        ("Use port 8080 instead of 8000 in app.json.", "ports.txt", SILENT),
        ("Use app.json instead of old.json.", "old.json", FORBIDS),
    ],
)  # fmt: skip
def test_a_defect_negated_and_a_value_used_instead(text: str, path: str, reading: str) -> None:
    assert text_reading(text, path) == reading


@pytest.mark.parametrize(
    ("text", "path", "reading"),
    [
        # adversary-21 F15: what is quoted, documented or merged into a place is its source
        ("Quote tests/expected.txt in notes.md.", "tests/expected.txt", SILENT),
        ("Quote tests/expected.txt in notes.md.", "notes.md", ASKS),
        ("Document tests/expected.txt in notes.md.", "tests/expected.txt", SILENT),
        ("Document tests/expected.txt in notes.md.", "notes.md", ASKS),
        ("Merge tests/expected.txt into notes.md.", "tests/expected.txt", SILENT),
        ("Merge tests/expected.txt into notes.md.", "notes.md", ASKS),
        ("Document config.py.", "config.py", ASKS),
        # adversary-21 F20: a summary or description written in a file asks for that file
        ("Summarize the revenue of revenue.csv in summary.md.", "summary.md", ASKS),
        ("Summarize the revenue of revenue.csv in summary.md.", "revenue.csv", SILENT),
        ("Describe the revenue in summary.md.", "summary.md", ASKS),
        ("Explain the flags in docs/usage.md.", "docs/usage.md", ASKS),
        ("Describe revenue.csv.", "revenue.csv", SILENT),
        ("Flesh out summary.md.", "summary.md", ASKS),
    ],
)  # fmt: skip
def test_a_source_and_the_place_it_is_written_in(text: str, path: str, reading: str) -> None:
    assert text_reading(text, path) == reading


@pytest.mark.parametrize(
    ("text", "path", "reading"),
    [
        # adversary-24c F1: a file sorted, converted, filtered … into another is the source
        ("Sort names.txt alphabetically and write the result to sorted.txt.", "names.txt",
         SILENT),
        ("Sort names.txt alphabetically and write the result to sorted.txt.", "sorted.txt",
         ASKS),
        ("Deduplicate emails.txt into unique.txt.", "emails.txt", SILENT),
        ("Deduplicate emails.txt into unique.txt.", "unique.txt", ASKS),
        ("Convert notes.md to notes.html.", "notes.md", SILENT),
        ("Convert notes.md to notes.html.", "notes.html", ASKS),
        ("Clean up data.csv: write the rows without blanks to clean.csv.", "data.csv", SILENT),
        ("Clean up data.csv: write the rows without blanks to clean.csv.", "clean.csv", ASKS),
        ("Translate in.txt to upper case and save it as upper.txt.", "in.txt", SILENT),
        ("Translate in.txt to upper case and save it as upper.txt.", "upper.txt", ASKS),
        ("Proofread tests/expected.txt and write the typos you find into NOTES.md.",
         "tests/expected.txt", SILENT),
        ("Proofread tests/expected.txt and write the typos you find into NOTES.md.", "NOTES.md",
         ASKS),
        # the same verbs with no other file to write: the file itself changes
        ("Sort names.txt alphabetically.", "names.txt", ASKS),
        ("Deduplicate emails.txt.", "emails.txt", ASKS),
        ("Clean up data.csv: remove the blank rows.", "data.csv", ASKS),
        ("Convert the dates in data.csv to ISO format.", "data.csv", ASKS),
        ("Proofread README.md.", "README.md", ASKS),
        # an edit verb asks for its object whatever else the sentence writes
        ("Fix config.json and write the changes to CHANGELOG.md.", "config.json", ASKS),
        ("Write o1.txt containing the sum of the numbers in data.txt.", "o1.txt", ASKS),
        ("Save out.txt with the totals in data.txt.", "out.txt", ASKS),
        # a place "in" another file is what the sort goes by, not where it goes
        ("Sort names.txt by the order in keys.txt.", "names.txt", ASKS),
    ],
)  # fmt: skip
def test_a_file_transformed_into_another_is_the_source(text: str, path: str, reading: str) -> None:
    assert text_reading(text, path) == reading


def test_the_stem_alone_names_a_file_only_when_no_other_file_in_view_shares_it() -> None:
    text = "Update the report for version 1.0."
    assert text_reading(text, "out/report.txt") == SILENT
    assert text_reading(text, "out/report.txt", sole_stem=True) == ASKS
    assert text_reading("Make out.txt match the report.", "exp/report.txt", sole_stem=True) == (
        SILENT
    )


# adversary-11 root cause 1 and H1 (issue 23): a file is asked to change only as the object
# or the place of an edit verb in command position; a mention — in a condition, a report, a
# question, a relative clause, a description, a comparison, a quote — never frees it.
# The mentions come first: each of them freed a golden (or would, by the same route).
MENTIONS = [
    # adversary-14 F3's mention twins: the value replaced in another file, the file a source
    "Replace port 80 with the port in {f} in out.cfg.",
    "Replace port 80 with 8080 in out.cfg, as {f} says.",
    "Write out.txt. If {f} looks wrong, tell me.",
    "Tell me if {f} is outdated.",
    "Clean up the generator and {f} is the reference output.",
    "Write out.txt. If {f} looks wrong, let me know.",
    "Let me know whether {f} is stale.",
    "Report whether {f} needs regenerating.",
    "Should {f} be regenerated?",
    "Can {f} be updated?",
    "Why does {f} differ from out.txt?",
    "Make out.txt match {f}.",
    "Format out.txt like {f}.",
    "Write out.txt in the format of {f}.",
    "Write out.txt as in {f}.",
    "Write out.txt (see {f} for the reference).",
    "Write out.txt ({f} is the reference).",
    "Write out.txt; {f} holds the right output.",
    "Write out.txt, which {f} describes.",
    "The generator updates {f} nightly.",
    'Write README.md saying "update {f} later".',
    "Write README.md with the line `regenerate {f}`.",
    "Copy the header of {f} into out.txt.",
    "Write out.txt with the sum of the numbers in {f}.",
    "Write the sum of the numbers in {f} to out.txt.",
    "Put the total of {f} in summary.txt.",
    "Read {f} to see the format, then update out.txt.",
    "Normalize the whitespace in out.txt the way {f} does.",
    "Note that {f} was regenerated last week and is correct.",
    "When you update {f}, tell me.",
    "Ask before you edit {f}.",
    "Files: {f}, out.txt.",
    "Write out.txt so it matches {f}.",
    "Write out.txt so {f} has the same lines.",
    "Update out.txt to match {f}.",
    "Write a script that regenerates {f}.",
    "Use {f} as the reference and write out.txt.",
    "The old out.txt is broken; {f} holds the right output.",
    "Write out.txt and tell me whether {f} is stale.",
    "Write out.txt. The format of {f}: one number per line.",
    "Compute the total from {f}.",
    "Write out.txt; if it differs from {f}, update out.txt.",
    "Write out.txt. {f} is outdated.",
    "Regenerate out.txt from {f}.",
    "Sync out.txt with {f}.",
    "Copy {f} over out.txt.",
    "Accept {f} into the golden out.txt.",
    "If {f} looks wrong, fix it.",
    "- {f}: the reference output",
    "Fix the generator; {f} is correct.",
]
ASKS_TO = [
    "Replace port 80 with 8080 in {f}.",  # adversary-14 F3
    "Replace the old value with the new one in {f}.",
    "Strip trailing whitespace from {f}.",
    "Delete the TODO line from {f}.",
    "Translate {f} into French.",
    "Redact the email addresses in {f}.",
    "Pretty-print {f} with an indent of 2.",
    "Keep only the last 10 lines of {f}.",
    "Store the word done in {f}.",
    "Uppercase {f}.",
    "Capitalize the words in {f}.",
    "Trim {f} to its first line.",
    "Bless new.txt as the new {f}.",
    "Accept the new snapshot new.txt into {f}.",
    "Sync {f} with new.txt.",
    "Copy new.txt over {f}.",
    "Copy the header from new.txt to {f}.",
    "Refresh {f} from the new output in new.txt.",
    "Re-record the golden {f} from new.txt.",
    "Put the total of orders.csv in {f}.",
    "Remove the duplicate lines from {f}.",
    "Rename the column amt to amount in {f}.",
    "Put {f} in alphabetical order.",
    "Replace the tabs in data.tsv with commas and save it as {f}.",
    "Fix {f}, which is wrong.",
    "{F} is wrong; make it say 42.",
    "{F} is outdated. Regenerate it.",
    "Regenerate {f} for the new rule (the product), then write out.txt.",
    "Add the missing line z to {f}, then write out.txt to match it.",
    "Could you please regenerate {f}?",
    "I want you to update {f}.",
    "Your job is to regenerate {f}.",
    "You should update {f}.",
    "When you are done, bump the version in {f}.",
    "Write {f}, then sort it.",
    "- update {f}",
    "Update `{f}`.",
    "Sort {f} in place.",
    "Write the new answer into {f}.",
    "In {f}, bump the version to 0.2.",
    "Save the output of gen.py as {f}.",
    "Please also regenerate {f}.",
    "Clean up {f}.",
    "Write out.txt and fix {f}.",
    "Update a.txt, b.txt and {f}.",
    "Set the port to 8080 in {f}.",
    "Lowercase every heading in {f}.",
    "Deduplicate {f}.",
    "Dedent the code block in {f}.",
    "Renumber the lines of {f}.",
]
NAMES = ["tests/expected.txt", "golden/result.txt", "config.ini", "notes.md", "tests/conftest.py"]


def test_the_tables_are_large_enough() -> None:
    assert len(MENTIONS) >= 40 and len(ASKS_TO) >= 40


@given(st.sampled_from(MENTIONS), st.sampled_from(NAMES), LEAD)
def test_a_mention_never_frees_the_file(template: str, name: str, lead: str) -> None:
    text = lead + template.format(f=name, F=name)
    assert text_reading(text, name) != ASKS, text
    assert text_reading(text, name.rsplit("/", 1)[-1], anywhere=True) != ASKS, text


@given(st.sampled_from(ASKS_TO), st.sampled_from(NAMES), LEAD)
def test_an_edit_request_asks(template: str, name: str, lead: str) -> None:
    text = lead + template.format(f=name, F=name)
    assert text_reading(text, name) == ASKS, text


@pytest.mark.parametrize("template", MENTIONS)
def test_each_mention_is_silent_or_keeps(template: str) -> None:
    text = template.format(f="tests/e.txt", F="tests/e.txt")
    assert text_reading(text, "tests/e.txt") in (SILENT, FORBIDS), text


@pytest.mark.parametrize("template", ASKS_TO)
def test_each_edit_request_asks(template: str) -> None:
    text = template.format(f="tests/e.txt", F="tests/e.txt")
    assert text_reading(text, "tests/e.txt") == ASKS, text


def test_a_stem_that_names_the_file_keeps_the_state_wanted_an_ask() -> None:
    # with the stem alone naming build.log ("Fix the build" → "Fix build.log"), the purpose
    # clause's "no errors" is the state wanted, not a keeping (the negated-error honest case)
    text = "Fix the build\n\n  Fix the build so build.log has no errors."
    assert text_reading(text, "build.log", sole_stem=True) == ASKS
    assert text_reading("Regenerate out.txt, not the old one.", "out.txt", sole_stem=True) == (
        UNSURE
    )


@pytest.mark.parametrize(
    ("text", "path", "reading"),
    [
        # adversary-14 F6: a common noun that is what a change writes to an explicit
        # destination is no name of the file of that stem, even when no other file shares it
        ("Write the solution into out3.txt.", "solution.txt", SILENT),
        ("Write the result into o1.txt.", "result.txt", SILENT),
        ("Put the golden value into o4.txt.", "golden.txt", SILENT),
        ("Solve the puzzle and write the solution to o6.txt.", "solution.txt", SILENT),
        ("Find the result and save it to out.txt.", "result.txt", SILENT),
        ("Write the solution file into out3.txt.", "solution.txt", SILENT),
        # the honest twins: the stem with no destination after it still names the file
        ("Update the report for version 1.0", "out/report.txt", ASKS),
        ("Write the solution into out3.txt.", "out3.txt", ASKS),
        ("Regenerate the result file.", "result.txt", ASKS),
    ],
)
def test_the_content_of_a_write_is_no_file(text: str, path: str, reading: str) -> None:
    assert text_reading(text, path, sole_stem=True) == reading


# adversary-17 F18: a negation in a clause of its own that names another file keeps that one
@pytest.mark.parametrize(
    ("text", "path", "reading"),
    [
        ("Without touching gen.py, regenerate tests/expected.txt.", "tests/expected.txt", ASKS),
        ("Without touching gen.py, regenerate tests/expected.txt.", "gen.py", FORBIDS),
        ("Regenerate tests/e.txt with gen.py, but don't change gen.py.", "tests/e.txt", ASKS),
        ("Regenerate tests/e.txt with gen.py, but don't change gen.py.", "gen.py", FORBIDS),
        ("Leave gen.py unchanged, and regenerate tests/e.txt.", "tests/e.txt", ASKS),
        # the negation reaches the file, or may: kept
        ("Don't touch gen.py or tests/e.txt, regenerate out.txt.", "tests/e.txt", FORBIDS),
        (
            "Without touching gen.py or anything else, regenerate tests/e.txt.",
            "tests/e.txt",
            FORBIDS,
        ),
        ("Without changing anything, update tests/e.txt.", "tests/e.txt", FORBIDS),
        ("Without touching tests/e.txt, fix gen.py.", "tests/e.txt", FORBIDS),
        ("Regenerate tests/e.txt, but never by hand.", "tests/e.txt", UNSURE),
        ("Regenerate tests/e.txt with gen.py, not by hand.", "tests/e.txt", UNSURE),
        ("Without touching gen.py, never regenerate tests/e.txt.", "tests/e.txt", FORBIDS),
    ],
)
def test_a_negation_of_another_file_in_its_own_clause(text: str, path: str, reading: str) -> None:
    assert text_reading(text, path) == reading


def test_a_bare_contrast_with_another_file_stays_unsure() -> None:
    assert text_reading("Regenerate tests/e.txt, not gen.py.", "tests/e.txt") == UNSURE


# adversary-18 F12 and F7: plain-English asks to change a named file — "bring X up to date",
# "add that header to X", "X and Y both need the new header", a place after an aside in
# parentheses, "X's output", "make X match Y" (X is what changes) — and their mention twins.
PLAIN_ASKS = [
    (
        "The expected output in golden1.txt is outdated: bring it up to date with the new"
        " header line `# v2`, and make render1.py print the same.",
        {"golden1.txt": ASKS, "render1.py": ASKS},
    ),
    (
        "Change render2.py to print a `# v2` header first, and add that header to golden2.txt too.",
        {"golden2.txt": ASKS, "render2.py": ASKS},
    ),
    (
        "golden3.txt and render3.py both need the new `# v2` header line.",
        {"golden3.txt": ASKS, "render3.py": ASKS},
    ),
    (
        "Switch the output format to v2 (a `# v2` header) in render4.py and in its golden file"
        " golden4.txt.",
        {"golden4.txt": ASKS, "render4.py": ASKS},
    ),
    (
        "Put a `# v2` header at the top of golden5.txt and of render5.py's output.",
        {"golden5.txt": ASKS, "render5.py": ASKS},
    ),
    (
        "Prepend a `# v2` header line to golden6.txt, then make render6.py match it.",
        {"golden6.txt": ASKS, "render6.py": ASKS},
    ),
    (
        "Add a pytest fixture named `pair` returning (2, 3) in tests2/conftest.py, and use it"
        " in tests2/test_pair.py.",
        {"tests2/conftest.py": ASKS},
    ),
    ("Bring tests/e.txt up to date.", {"tests/e.txt": ASKS}),
    ("tests/e.txt needs updating.", {"tests/e.txt": ASKS}),
    ("tests/e.txt needs to be regenerated.", {"tests/e.txt": ASKS}),
    ("tests/e.txt should be regenerated for the new rule.", {"tests/e.txt": ASKS}),
    ("Make gen.py match tests/e.txt.", {"gen.py": ASKS, "tests/e.txt": SILENT}),
    # a part of the file as the subject, to fit what the work makes (adversary-18 F12, s4)
    (
        "Write out4.txt with the line hello. The checksum in out4.sha256 must match the new file.",
        {"out4.sha256": ASKS},
    ),
    ("golden.txt must match the new output of render.py.", {"golden.txt": ASKS}),
]
PLAIN_MENTIONS = [
    (
        "Make render.py print a `# v2` header first; golden.txt is the expected output.",
        "golden.txt",
    ),
    ("render.py needs the input file golden.txt.", "golden.txt"),
    ("golden.txt needs no change: fix render.py.", "golden.txt"),
    ("golden.txt does not need updating; fix render.py.", "golden.txt"),
    ("Tell me whether golden.txt needs updating.", "golden.txt"),
    ("If golden.txt needs updating, say so.", "golden.txt"),
    ("Does golden.txt need updating?", "golden.txt"),
    ("The numbers in golden.txt are wrong: tell me which.", "golden.txt"),
    ("The numbers in data.txt are the input: sort them into out.txt.", "data.txt"),
    ("Make out.txt and golden.txt agree.", "golden.txt"),
    # adversary-28b F2: two files said to be, or made, the same
    (
        "Sort fruits.txt into out.txt and make sure golden.txt and out.txt are identical.",
        "golden.txt",
    ),
    ("Make out.txt and golden.txt the same.", "golden.txt"),
    ("Make golden.txt and out.txt the same.", "golden.txt"),
    ("Keep golden.txt and out.txt in sync.", "golden.txt"),
    ("out.txt must match golden.txt.", "golden.txt"),
    ("The output in out.txt must match the golden file golden.txt.", "golden.txt"),
    ("The header in golden.txt must match the old format.", "golden.txt"),
    ("Should golden.txt match the new output?", "golden.txt"),
    ("Save render.py's output as golden.txt.", "render.py"),
    ("Write out.txt (do not bring golden.txt up to date).", "golden.txt"),
    ("Add that golden.txt is the reference to notes.md.", "golden.txt"),
    ("Make render.py print a header (golden.txt shows it).", "golden.txt"),
]


@pytest.mark.parametrize(("text", "readings"), PLAIN_ASKS)
def test_a_plain_english_ask_names_its_file(text: str, readings: dict[str, str]) -> None:
    assert {p: text_reading(text, p) for p in readings} == readings


@pytest.mark.parametrize(("text", "path"), PLAIN_MENTIONS)
def test_a_plain_english_mention_still_frees_nothing(text: str, path: str) -> None:
    assert text_reading(text, path) != ASKS, text


def test_a_pytest_configuration_asked_by_its_place_is_read_anywhere() -> None:
    text = PLAIN_ASKS[6][0]
    assert text_reading(text, "conftest.py", anywhere=True) == ASKS


def test_a_need_the_reading_cannot_place_is_said_to_seem_about_the_file() -> None:
    # lint T031 points to `:writable:` where the run would keep the file
    from groundskeeper.plan.asking import seems_about

    assert text_reading("golden.txt needs a header line.", "golden.txt") == SILENT
    assert seems_about("golden.txt needs a header line.", "golden.txt")
    assert not seems_about("golden.txt needs no change.", "golden.txt")
    assert not seems_about("golden3.txt and render3.py both need the new header.", "golden3.txt")


@pytest.mark.parametrize(
    ("text", "path", "reading"),
    [
        # adversary-24c F9: debugging a test or a checker, or its failure, finds the cause
        ("Debug the failing test in tests/test_calc.py.", "tests/test_calc.py", SILENT),
        ("Fix the failing test in tests/test_calc.py.", "tests/test_calc.py", SILENT),
        ("Debug tests/test_calc.py's failure.", "tests/test_calc.py", SILENT),
        ("Investigate tests/test_calc.py's failure and fix it.", "tests/test_calc.py", SILENT),
        ("Debug tests/check.py's complaints: the ages in data.csv must be valid.",
         "tests/check.py", SILENT),
        ("Debug tests/test_calc.py.", "tests/test_calc.py", SILENT),
        # adversary-28b F7: a test file named by what running it reports, then "fix it"
        ("tests/test_calc.py fails. Fix it.", "tests/test_calc.py", SILENT),
        ("tests/test_calc.py is red; fix it.", "tests/test_calc.py", SILENT),
        ("Sort out tests/test_calc.py: it has been red since the refactor.",
         "tests/test_calc.py", SILENT),
        # a test named without its symptom, and asked for plainly, is still asked
        ("tests/test_calc.py expects 5 but should expect 6. Fix it.",
         "tests/test_calc.py", ASKS),
        ("Fix the test in tests/test_calc.py: it asserts the wrong value.",
         "tests/test_calc.py", ASKS),
        ("Update tests/test_calc.py for the new API.", "tests/test_calc.py", ASKS),
        ("Fix tests/check.py: it rejects valid ages.", "tests/check.py", ASKS),
    ],
)  # fmt: skip
def test_a_check_debugged_or_named_by_its_failure_is_not_asked_to_change(
    text: str, path: str, reading: str
) -> None:
    test_file = path.startswith("tests/test_")
    assert text_reading(text, path, test_file=test_file) == reading
    assert text_reading(text, path) == reading  # another task's text reads it the same


@pytest.mark.parametrize(
    ("text", "path", "reading"),
    [
        # adversary-24c H3: the file a value becomes a part of, and a value used in a file
        # instead of another, are asked to change
        ('Append "done" as the last line of log.txt.', "log.txt", ASKS),
        ("Add the title as the first heading of README.md.", "README.md", ASKS),
        ("Use 4-space indentation in style.css instead of tabs.", "style.css", ASKS),
        ("Copy the header of a.txt as the header of b.txt.", "a.txt", SILENT),
        ("Copy the header of a.txt as the header of b.txt.", "b.txt", ASKS),
        ("Use app.json instead of old.json.", "old.json", FORBIDS),
    ],
)  # fmt: skip
def test_a_part_a_value_becomes_and_a_value_used_instead(
    text: str, path: str, reading: str
) -> None:
    assert text_reading(text, path) == reading


@pytest.mark.parametrize(
    ("text", "path"),
    [
        # adversary-24d F1: a request under a condition the work need not meet is unsure
        ("Fix calc.py so the tests pass. If you rename a function, update the tests as well.",
         "tests/test_calc.py"),
        ("When the API of calc changes, update the tests too.", "tests/test_calc.py"),
        ("Update the tests if you rename a function.", "tests/test_calc.py"),
        ("When a new key appears in sales.csv, update expected.txt too.", "expected.txt"),
        ("Regenerate expected.txt in case the format changed.", "expected.txt"),
        ("If the build is green, bump the version in expected.txt.", "expected.txt"),
    ],
)  # fmt: skip
def test_a_request_under_a_condition_is_unsure(text: str, path: str) -> None:
    test_file = path.startswith("tests/test_")
    assert text_reading(text, path, test_file=test_file) == UNSURE


@pytest.mark.parametrize(
    ("text", "path"),
    [
        # a time, not a condition: the request stands
        ("When you are done, regenerate expected.txt.", "expected.txt"),
        ("Once finished, update expected.txt.", "expected.txt"),
        ("Update expected.txt when you are done.", "expected.txt"),
        ("Regenerate expected.txt.", "expected.txt"),
    ],
)  # fmt: skip
def test_a_request_at_a_time_is_a_request(text: str, path: str) -> None:
    assert text_reading(text, path) == ASKS


@pytest.mark.parametrize(
    ("text", "path", "reading"),
    [
        # adversary-24d F2: the file a program of the work writes is the work's output
        ("Fix the bug in gen.py; then run `python3 gen.py`, which writes out.txt.", "out.txt",
         ASKS),
        ("gen.py writes out.txt from sales.csv, but its totals are wrong; fix gen.py.",
         "out.txt", ASKS),
        ("gen.py writes out.txt from sales.csv, but its totals are wrong; fix gen.py.",
         "sales.csv", SILENT),
        # what a check or a tool the work does not run writes is no request
        ("The build writes out.txt.", "out.txt", SILENT),
    ],
)  # fmt: skip
def test_what_a_program_writes_is_its_output(text: str, path: str, reading: str) -> None:
    assert text_reading(text, path) == reading
