"""A JSON schema split across files (F15): relative `$ref`s resolve from the schema's own
folder in the workdir, for the contract and for lint alike (`plan.schema_refs`); a reference
outside the workdir, to an absent file, to a hidden one from a visible schema, or with a
scheme is a named failure in both."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundskeeper.acceptance.attempt_record import AttemptRecord
from groundskeeper.acceptance.contracts import ContractContext, judge_contracts
from groundskeeper.acceptance.toolbox import Toolbox
from groundskeeper.plan.lint import validate
from groundskeeper.plan.org import load_plan
from tests.test_cli_run import resume, setup, states, task
from tests.test_contracts import contract

ITEM = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
WRITE = (
    "workers:\n  r:\n    - {{tool: write_file, input: {{path: out.json, content: '{}'}}}}\n"
    "    - say: DONE\n"
)


def _plan(tmp_path: Path, ref: str, answer: str, **props: str) -> tuple[Path, Path]:
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "report.json").write_text(
        json.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema", "$ref": ref})
    )
    (tmp_path / "schemas" / "item.json").write_text(json.dumps(ITEM))
    return setup(
        tmp_path,
        task("Report", "r", "grep -q n out.json", max_attempts="1",
             contract="json-schema schemas/report.json out.json", **props),
        WRITE.format(answer),
    )  # fmt: skip


def _lint(plan: Path) -> list[tuple[str, str]]:
    return [(d.code, d.message) for d in validate(load_plan(plan)) if d.level == "error"]


def test_a_schema_split_across_files_is_resolved_and_judged(tmp_path: Path) -> None:
    plan, script = _plan(tmp_path, "item.json", '{"n": 3}')
    assert _lint(plan) == []
    _, doc = resume(plan, script)
    assert states(doc)["r"] == ("DONE", 1, True)


def test_the_referenced_file_judges_the_document(tmp_path: Path) -> None:
    plan, script = _plan(tmp_path, "item.json#", '{"n": "three"}')
    _, doc = resume(plan, script)
    (row,) = doc["tasks"]
    assert row["state"] == "FAILED"
    assert "C005" in row["reason"] and "'three' is not of type 'integer'" in row["reason"]


@pytest.mark.parametrize(
    ("ref", "why"),
    [
        ("../../item.json", "`schemas/report.json` refers to `../../item.json`, which is"
                            " outside the working directory"),
        ("missing.json", "`schemas/report.json` refers to `missing.json`, but"
                         " `schemas/missing.json` does not exist"),
        ("https://example.com/item.json", "`schemas/report.json` refers to"
         " `https://example.com/item.json`, which is not fetched"),
        ("held/item.json", "`schemas/report.json` refers to `held/item.json`, which is hidden"),
    ],
)  # fmt: skip
def test_a_reference_the_contract_will_not_follow_is_named_by_lint_and_the_run(
    tmp_path: Path, ref: str, why: str
) -> None:
    plan, _script = _plan(tmp_path, ref, '{"n": 3}', hide="schemas/held/")
    (tmp_path / "schemas" / "held").mkdir()
    (tmp_path / "schemas" / "held" / "item.json").write_text(json.dumps(ITEM))
    ((code, message),) = _lint(plan)
    assert code == "T016" and why in message
    # lint refuses the plan; the contract, run on the same files, names the same reason
    (tmp_path / "out.json").write_text('{"n": 3}')
    context = ContractContext(
        Toolbox(tmp_path, plan), AttemptRecord(()), hidden=("schemas/held/item.json",)
    )
    (verdict,) = judge_contracts([contract("json-schema schemas/report.json out.json")], context)
    assert verdict.code == "C006" and why in verdict.message


def test_a_worker_emptying_the_referenced_file_is_refused(tmp_path: Path) -> None:
    """The file a schema's `$ref` reaches judges the work as the schema does: it is a
    protected input like the schema (the fake half of F15)."""
    plan, script = _plan(tmp_path, "item.json", '{"n": "three"}')
    script.write_text(
        "workers:\n  r:\n"
        "    - {tool: write_file, input: {path: schemas/item.json, content: '{}'}}\n"
        '    - {tool: write_file, input: {path: out.json, content: \'{"n": "three"}\'}}\n'
        "    - say: DONE\n"
    )
    _, doc = resume(plan, script)
    (row,) = doc["tasks"]
    assert row["state"] == "FAILED"
    assert json.loads((tmp_path / "schemas" / "item.json").read_text()) == ITEM
