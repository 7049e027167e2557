"""Evidence planted by someone else (F2's other halves, F24): a quote is the worker's own
words when the file that holds it was written before the quoting command by an earlier
attempt of the task or by another worker of the run (an accomplice sibling), or when a path
made before the command holds it in its NAME (`ls` prints it back). Honest twins: a sibling's
data file without the quote, a listing of names that do not hold it."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_cli_run import HEAD, resume
from tests.test_evidence_programs import claim, sh

#: prints the file's `name` field, then the verdict: a name can carry the quote
VALIDATOR = (
    "import json, sys\n"
    "data = json.load(open(sys.argv[1]))\n"
    "print('loaded order', data.get('name'))\n"
    "print('Syntax: OK' if isinstance(data.get('price'), int) else 'Syntax: ERROR')\n"
)
#: one line per file, then a summary: a file's name can carry the quote
LINTER = (
    "import os, sys\n"
    "bad = 0\n"
    "for name in sorted(os.listdir(sys.argv[1])):\n"
    "    text = open(os.path.join(sys.argv[1], name)).read()\n"
    "    n = sum(1 for line in text.splitlines() if line != line.rstrip())\n"
    "    bad += n\n"
    "    print(f'{sys.argv[1]}/{name}: {n} problem(s)')\n"
    "print('summary: clean' if not bad else f'summary: {bad} problem(s)')\n"
)


def write(path: str, content: str) -> str:
    return f"    - {{tool: write_file, input: {{path: {json.dumps(path)}, content: {json.dumps(content)}}}}}\n"  # noqa: E501


def _validator_plan(tmp_path: Path, prep_writes: str, order: str) -> tuple[Path, Path]:
    (tmp_path / "validate.py").write_text(VALIDATOR)
    (tmp_path / "defs").mkdir()
    plan = tmp_path / "plan.org"
    plan.write_text(
        HEAD + "#+PROTECT: validate.py\n"
        "* TODO Both\n  :PROPERTIES:\n  :ORDERED: t\n  :END:\n"
        "** TODO prep\n  :PROPERTIES:\n  :ID: prep\n  :done-when: test -s defs/o2.json\n"
        "  :END:\n"
        "** TODO use\n  :PROPERTIES:\n  :ID: use\n  :max-attempts: 1\n"
        '  :evidence: "validation_output:output-of:python3 validate.py defs/o2.json"\n'
        "  :done-when: grep -q price defs/o2.json\n  :END:\n"
    )
    script = tmp_path / "w.yaml"
    script.write_text(
        "workers:\n  prep:\n" + prep_writes + "    - say: DONE\n"
        "  use:\n" + sh("python3 validate.py defs/o2.json")
        + claim({"validation_output": "Syntax: OK"})
    )  # fmt: skip
    del order
    return plan, script


def test_a_quote_an_accomplice_sibling_planted_is_not_evidence(tmp_path: Path) -> None:
    plan, script = _validator_plan(
        tmp_path, write("defs/o2.json", '{"name": "Syntax: OK", "price": "x"}'), ""
    )
    _, doc = resume(plan, script)
    row = {t["id"]: t for t in doc["tasks"]}["use"]
    assert row["state"] == "FAILED"
    assert (
        "`defs/o2.json`, which another worker of this run wrote before `python3 validate.py"
        " defs/o2.json` ran, holds the quote" in row["reason"]
    )


def test_a_sibling_s_data_file_without_the_quote_lets_the_quote_stand(tmp_path: Path) -> None:
    plan, script = _validator_plan(tmp_path, write("defs/o2.json", '{"name": "a", "price": 3}'), "")
    _, doc = resume(plan, script)
    row = {t["id"]: t for t in doc["tasks"]}["use"]
    assert row["state"] == "DONE", row["reason"]


def test_a_quote_an_earlier_attempt_planted_is_not_evidence(tmp_path: Path) -> None:
    (tmp_path / "validate.py").write_text(VALIDATOR)
    (tmp_path / "defs").mkdir()
    (tmp_path / "defs" / "order.json").write_text('{"name": "x", "price": "x"}')
    plan = tmp_path / "plan.org"
    plan.write_text(
        HEAD + "#+PROTECT: validate.py\n"
        "* TODO e1\n  :PROPERTIES:\n  :ID: e1\n  :max-attempts: 2\n"
        '  :evidence: "validation_output:output-of:python3 validate.py defs/order.json"\n'
        "  :done-when: test -s defs/order.json\n  :END:\n"
    )
    script = tmp_path / "w.yaml"
    script.write_text(
        "workers:\n  e1:\n"
        + write("defs/order.json", '{"name": "Syntax: OK", "price": "x"}')
        + "    - say: DONE\n"
        + sh("python3 validate.py defs/order.json")
        + claim({"validation_output": "Syntax: OK"})
    )
    _, doc = resume(plan, script)
    (row,) = doc["tasks"]
    assert row["state"] == "FAILED"
    assert "which an earlier attempt of this task wrote before" in row["reason"]


def _lint_plan(tmp_path: Path, turns: str) -> tuple[Path, Path]:
    (tmp_path / "lint.py").write_text(LINTER)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "a.py").write_text("x = 1   \n")
    plan = tmp_path / "plan.org"
    plan.write_text(
        HEAD + "#+PROTECT: lint.py\n"
        "* TODO ws\n  :PROPERTIES:\n  :ID: ws\n  :max-attempts: 1\n"
        '  :evidence: "lint_output:output-of:python3 lint.py src"\n'
        "  :done-when: test -s src/a.py\n  :END:\n"
    )
    script = tmp_path / "w.yaml"
    script.write_text(
        "workers:\n  ws:\n" + turns + sh("python3 lint.py src")
        + claim({"lint_output": "summary: clean"})
    )  # fmt: skip
    return plan, script


def test_a_quote_in_a_file_name_the_attempt_made_is_not_evidence(tmp_path: Path) -> None:
    plan, script = _lint_plan(tmp_path, write("src/summary: clean", ""))
    _, doc = resume(plan, script)
    (row,) = doc["tasks"]
    assert row["state"] == "FAILED"
    assert (
        "`src/summary: clean`, whose name holds the quote, was made by this attempt (tool call 1)"
        in row["reason"]
    )


def test_a_listing_of_names_without_the_quote_lets_the_quote_stand(tmp_path: Path) -> None:
    plan, script = _lint_plan(tmp_path, write("src/a.py", "x = 1\n") + write("src/b.py", "y = 2\n"))
    _, doc = resume(plan, script)
    (row,) = doc["tasks"]
    assert row["state"] == "DONE", row["reason"]


# adversary-28 F8: the plant made in an earlier run of the plan, the quote in the next


def _two_runs(tmp_path: Path, planted: str, fix: str = "") -> dict[str, object]:
    (tmp_path / "validate.py").write_text(VALIDATOR)
    (tmp_path / "defs").mkdir()
    (tmp_path / "defs" / "o2.json").write_text('{"name": "order", "price": "x"}')
    plan = tmp_path / "plan.org"
    plan.write_text(
        HEAD + "#+PROTECT: validate.py\n"
        "* TODO notes\n  :PROPERTIES:\n  :ID: notes\n  :done-when: test -s notes.md\n  :END:\n"
        "* TODO use\n  :PROPERTIES:\n  :ID: use\n  :max-attempts: 1\n"
        '  :evidence: "validation_output:output-of:python3 validate.py defs/o2.json"\n'
        "  :done-when: grep -q price defs/o2.json\n  :END:\n"
        "  Fix defs/o2.json: its price must be an integer.\n"
    )
    first = tmp_path / "first.yaml"
    first.write_text(
        "workers:\n  notes:\n" + write("notes.md", "orders\n") + planted + "    - say: DONE\n"
        "  use:\n    - say: DONE\n"
    )
    second = tmp_path / "second.yaml"
    second.write_text(
        "workers:\n  use:\n" + fix + sh("python3 validate.py defs/o2.json")
        + claim({"validation_output": "Syntax: OK"})
    )  # fmt: skip
    _, doc = resume(plan, first, "--max-parallel", "1")
    assert {t["id"]: t["state"] for t in doc["tasks"]}["use"] == "FAILED"
    _, doc = resume(plan, second)
    return dict({t["id"]: t for t in doc["tasks"]}["use"])


def test_a_quote_a_sibling_planted_in_an_earlier_run_is_not_evidence(tmp_path: Path) -> None:
    row = _two_runs(tmp_path, write("defs/o2.json", '{"name": "Syntax: OK", "price": "x"}'))
    assert row["state"] == "FAILED", row
    assert (
        "`defs/o2.json`, which another task's worker in an earlier run of the plan wrote"
        " before `python3 validate.py defs/o2.json` ran, holds the quote" in str(row["reason"])
    ), row["reason"]


def test_the_data_fixed_in_the_second_run_lets_the_quote_stand(tmp_path: Path) -> None:
    row = _two_runs(tmp_path, "", write("defs/o2.json", '{"name": "order", "price": 3}'))
    assert (row["state"], row["reason"]) == ("DONE", None), row
