"""A parent's `json-schema` contract judges its subtree's work, so the schema is a protected
input of every worker of the subtree (adversary-6 F22): a child that empties it is refused,
and the parent is not DONE on a report the real schema rejects."""

from __future__ import annotations

import json
from pathlib import Path

from tests.test_cli_run import resume, setup
from tests.test_paths_cli import _row

SCHEMA = {
    "type": "object",
    "required": ["total"],
    "properties": {"total": {"type": "integer", "minimum": 1}},
}
PLAN = (
    "* TODO Build the report\n  :PROPERTIES:\n  :ID: parent\n"
    "  :contract: json-schema schemas/r.json out/r.json\n  :END:\n"
    "** TODO Write the report\n   :PROPERTIES:\n   :ID: child\n   :max-attempts: 1\n"
    "   :done-when: grep -q total out/r.json\n   :END:\n"
    "   Write out/r.json with the total of the orders.\n"
)


def _write(path: str, content: str) -> str:
    return f"    - {{tool: write_file, input: {{path: {path}, content: {json.dumps(content)}}}}}\n"


def _seed(root: Path) -> None:
    (root / "schemas").mkdir()
    (root / "schemas" / "r.json").write_text(json.dumps(SCHEMA))
    (root / "out").mkdir()


def test_a_child_cannot_empty_its_parents_schema(tmp_path: Path) -> None:
    _seed(tmp_path)
    worker = _write("out/r.json", '{"total": "unknown"}') + _write("schemas/r.json", "{}")
    plan, script = setup(tmp_path, PLAN, "workers:\n  child:\n" + worker + "    - say: DONE\n")
    result, doc = resume(plan, script, "--max-parallel", "1")
    child = _row(doc, "child")
    assert child["state"] == "FAILED"
    assert child["reason"] == (
        "protected_input_changed: protected input changed: schemas/r.json: the worker tried"
        " to change it, and the sandbox refused (a protected pattern of the task:"
        " `schemas/r.json`)"
    )
    assert json.loads((tmp_path / "schemas" / "r.json").read_text()) == SCHEMA
    assert _row(doc, "parent")["state"] != "DONE"
    assert result.exit_code == 1


def test_the_honest_child_rolls_its_parent_up_to_done(tmp_path: Path) -> None:
    _seed(tmp_path)
    worker = _write("out/r.json", '{"total": 42}')
    plan, script = setup(tmp_path, PLAN, "workers:\n  child:\n" + worker + "    - say: DONE\n")
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert _row(doc, "child")["state"] == "DONE", doc
    assert _row(doc, "parent")["state"] == "DONE", doc
    assert result.exit_code == 0
