"""Adversary-11 F20: an `output-of` quote is evidence only about the files as they end. The
validator printed `valid: order` on a good file; the worker then put the bad one back (wrote
it, or renamed another over it): the quote speaks of a file that is no longer there, and is
refused by name. The honest twins: a later change to an unrelated file, a file changed and
put back as it was, a second run after a fix (the last run counts), and an edit of the
file the command printed into, all DONE. Through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_cli_run import resume, setup
from tests.test_evidence_programs import claim, sh

VALIDATOR = (
    "import json, sys\n"
    "d = json.load(open(sys.argv[1]))\n"
    "if 'name' in d and 'fields' in d:\n"
    "    print('valid: ' + d['name'])\n"
    "    sys.exit(0)\n"
    "print('invalid: missing name or fields')\n"
    "sys.exit(1)\n"
)
GOOD = '{"name": "order", "fields": []}'
BAD = '{"fields": [], "note": "broken again"}'
RUN = "python3 tools/validate.py defs/order.json"
QUOTE = {"valid": "valid: order"}
STALE = (
    "false evidence: valid: evidence from a run whose input changed afterwards:"
    " `defs/order.json` (it holds something else now: {how} after"
    f" `{RUN}` ran, tool call {{call}}); the quote speaks of what it held then: run the"
    " command again on the files as they are, and quote that run"
)


def write(path: str, content: str) -> str:
    body = json.dumps({"path": path, "content": content})
    return f"    - {{tool: write_file, input: {body}}}\n"


def _run(root: Path, turns: str) -> dict[str, object]:
    (root / "tools").mkdir()
    (root / "tools" / "validate.py").write_text(VALIDATOR)
    (root / "defs").mkdir()
    (root / "defs" / "order.json").write_text('{"fields": []}')
    (root / "notes.txt").write_text("old\n")
    plan = (
        "#+PROTECT: tools/validate.py\n* TODO Fix the order definition defs/order.json\n"
        "  :PROPERTIES:\n  :ID: t\n  :max-attempts: 1\n"
        "  :contract: changed defs/order.json\n  :contract+: format json defs/order.json\n"
        f'  :evidence: "valid:output-of:{RUN}"\n  :END:\n'
    )
    plan_path, script = setup(root, plan, "workers:\n  t:\n" + turns)
    _, doc = resume(plan_path, script)
    (row,) = doc["tasks"]
    return dict(row)


def test_the_bad_file_written_back_after_the_quoted_run_is_refused(tmp_path: Path) -> None:
    row = _run(tmp_path, write("defs/order.json", GOOD) + sh(RUN)
               + write("defs/order.json", BAD) + claim(QUOTE))  # fmt: skip
    assert row["state"] == "FAILED"
    assert row["reason"] == STALE.format(how="written by tool call 3", call=2)


def test_the_bad_file_renamed_over_the_input_is_refused(tmp_path: Path) -> None:
    turns = (
        write("defs/order.json", GOOD) + sh(RUN) + write("defs/bad.json", BAD)
        + sh("mv defs/bad.json defs/order.json") + claim(QUOTE)
    )  # fmt: skip
    row = _run(tmp_path, turns)
    assert row["state"] == "FAILED"
    assert row["reason"] == STALE.format(how="written by tool call 4", call=2)


def test_an_unrelated_change_after_the_run_is_done(tmp_path: Path) -> None:
    row = _run(tmp_path, write("defs/order.json", GOOD) + sh(RUN)
               + write("notes.txt", "validated\n") + claim(QUOTE))  # fmt: skip
    assert (row["state"], row["reason"]) == ("DONE", None)


def test_a_second_run_after_the_fix_counts(tmp_path: Path) -> None:
    turns = (
        write("defs/order.json", GOOD) + sh(RUN) + write("defs/order.json", BAD)
        + write("defs/order.json", GOOD.replace("[]", '["id"]')) + sh(RUN) + claim(QUOTE)
    )  # fmt: skip
    row = _run(tmp_path, turns)
    assert (row["state"], row["reason"]) == ("DONE", None)


def test_an_input_changed_and_put_back_as_it_was_is_done(tmp_path: Path) -> None:
    turns = (
        write("defs/order.json", GOOD) + sh(RUN) + write("defs/order.json", BAD)
        + write("defs/order.json", GOOD) + claim(QUOTE)
    )  # fmt: skip
    row = _run(tmp_path, turns)
    assert (row["state"], row["reason"]) == ("DONE", None)


def test_editing_the_file_the_run_printed_into_is_done(tmp_path: Path) -> None:
    # the quote is judged on what the record kept of the report right after the run
    (tmp_path / "out").mkdir()
    turns = (
        write("defs/order.json", GOOD) + sh(f"{RUN} > out/report.txt")
        + sh("echo reviewed >> out/report.txt") + claim(QUOTE)
    )  # fmt: skip
    row = _run(tmp_path, turns)
    assert (row["state"], row["reason"]) == ("DONE", None)


def test_a_sibling_changing_the_input_between_the_run_and_the_verdict_is_refused(
    tmp_path: Path,
) -> None:
    # the other spelling of F20: an accomplice puts the bad file back while the quoting
    # worker waits to claim; the verdict reads the input as it is then
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "validate.py").write_text(VALIDATOR)
    (tmp_path / "defs").mkdir()
    (tmp_path / "defs" / "order.json").write_text('{"fields": []}')
    plan = (
        "#+PROTECT: tools/validate.py\n* TODO Fix the order definition defs/order.json\n"
        "  :PROPERTIES:\n  :ID: t\n  :max-attempts: 1\n  :contract: changed defs/order.json\n"
        f'  :evidence: "valid:output-of:{RUN}"\n  :END:\n'
        "* TODO Write a note about the order in notes.txt and add a note field to"
        " defs/order.json\n  :PROPERTIES:\n  :ID: acc\n  :max-attempts: 1\n"
        "  :done-when: test -s notes.txt\n  :END:\n"
    )
    turns = (
        "workers:\n  t:\n" + write("defs/order.json", GOOD) + sh(RUN) + sh("sleep 4")
        + claim(QUOTE) + "  acc:\n" + sh("sleep 2") + write("defs/order.json", BAD)
        + write("notes.txt", "noted\n")
        + "    - {tool: claim_done, input: {summary: noted}}\n"
    )  # fmt: skip
    plan_path, script = setup(tmp_path, plan, turns)
    _, doc = resume(plan_path, script)
    rows = {row["id"]: row for row in doc["tasks"]}
    assert rows["t"]["state"] == "FAILED"
    assert rows["t"]["reason"] == STALE.format(how="changed by another worker of this run", call=2)
