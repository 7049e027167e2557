"""The `workflow-script FILE` contract: script validation on a worker's file after its claim.
A failure goes back to the worker as `Script validation failed: …`; a pass seals the
extracted config and keeps it in telemetry."""

from __future__ import annotations

import json
import os
from pathlib import Path

from groundskeeper.acceptance.contracts import READ_LIMIT, REGISTRY
from groundskeeper.models.model import AssistantTurn, ModelRequest
from groundskeeper.models.scripted import ScriptedModel
from groundskeeper.plan.contract_syntax import ContractProblem, parse_contract
from groundskeeper.plan.org import load_plan
from groundskeeper.record.telemetry import Telemetry
from groundskeeper.sandbox.script_validation import MAX_SCRIPT_BYTES
from groundskeeper.supervisor.runner import MemoryRecorder, Runner, RunOptions
from tests.test_contracts import HEAD, judge
from tests.test_script_validation import VALID

INVALID = 'const workflow = { topics: { a: {} }, consumers: { sync: { subscribe: ["a"] } } };\n'


def test_the_type_is_registered_with_one_file_argument() -> None:
    assert REGISTRY["workflow-script"].usage == "workflow-script FILE"
    problem = parse_contract("workflow-script a.js b.js")
    assert isinstance(problem, ContractProblem)
    assert problem.message == ("`workflow-script` takes 1 argument, not 2: `workflow-script FILE`")
    problem = parse_contract("workflow-script ../flow.js")
    assert isinstance(problem, ContractProblem)
    assert "must be a path inside the workdir" in problem.message


def test_a_valid_script_passes_with_its_config(tmp_path: Path) -> None:
    (tmp_path / "flow.js").write_text(VALID)
    verdict = judge(tmp_path, "workflow-script flow.js")
    assert verdict.ok
    assert verdict.message == "`flow.js` is a valid workflow script"
    config = verdict.detail["config"]
    assert config["topics"] == ["email.received", "row.created"]
    assert config["producers"]["nightly"] == {"schedule": {"cron": "0 3 * * *"}}
    assert config["consumers"]["audit"]["hasNext"] is True
    assert verdict.detail["warnings"] == []


def test_an_invalid_script_fails_with_the_fix_prompt(tmp_path: Path) -> None:
    (tmp_path / "flow.js").write_text(INVALID)
    verdict = judge(tmp_path, "workflow-script flow.js")
    assert verdict.code == "C012"
    assert verdict.message == (
        "Script validation failed: workflow.consumers.sync.prepare must be a function (it is"
        " missing): add `prepare: async (state) => { … }`"
    )
    assert [e["code"] for e in verdict.detail["errors"]] == ["consumer-prepare"]


def test_many_errors_are_named_whole_then_counted(tmp_path: Path) -> None:
    consumers = ", ".join(f"c{i}: {{ subscribe: [] }}" for i in range(3))
    (tmp_path / "flow.js").write_text(f"const workflow = {{ consumers: {{ {consumers} }} }};\n")
    verdict = judge(tmp_path, "workflow-script flow.js")
    assert verdict.code == "C012"
    assert len(verdict.detail["errors"]) == 6
    assert verdict.message.count("must be") == 3
    assert verdict.message.endswith(
        "; and 3 more (consumer-prepare, consumer-subscribe, consumer-prepare)"
    )
    assert len(verdict.message) < 1000


def test_missing_huge_and_escaping_files_fail_closed(tmp_path: Path) -> None:
    assert judge(tmp_path, "workflow-script absent.js").code == "C001"
    (tmp_path / "big.js").write_text("//" + "x" * (MAX_SCRIPT_BYTES + 10))
    big = judge(tmp_path, "workflow-script big.js")
    assert big.code == "C012"
    assert "(size limit)" in big.message
    (tmp_path / "huge.js").write_text("//" + "x" * (READ_LIMIT + 10))
    assert judge(tmp_path, "workflow-script huge.js").code == "C002"
    outside = tmp_path.parent / f"{tmp_path.name}-outside.js"
    outside.write_text(VALID)
    os.symlink(outside, tmp_path / "link.js")
    assert judge(tmp_path, "workflow-script link.js").code == "C001"


class Listening:
    """The scripted model, keeping every request it was sent (to read the feedback)."""

    def __init__(self, inner: ScriptedModel) -> None:
        self.inner = inner
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        return self.inner.name

    def respond(self, request: ModelRequest) -> AssistantTurn:
        self.requests.append(request)
        return self.inner.respond(request)


def test_the_worker_is_told_to_fix_its_script_and_the_config_lands_in_telemetry(
    tmp_path: Path,
) -> None:
    plan = tmp_path / "plan.org"
    plan.write_text(
        HEAD + "* TODO t\n  :PROPERTIES:\n  :ID: t\n  :contract: workflow-script flow.js\n  :END:\n"
    )
    script = (
        "workers:\n  t:\n"
        f"    - {{tool: write_file, input: {{path: flow.js, content: {json.dumps(INVALID)}}}}}\n"
        "    - say: DONE\n"
        f"    - {{tool: write_file, input: {{path: flow.js, content: {json.dumps(VALID)}}}}}\n"
        "    - say: DONE\n"
    )
    model = Listening(ScriptedModel.from_yaml(script))
    recorder = MemoryRecorder()
    with Telemetry.for_plan(plan) as telemetry:
        report = Runner(
            load_plan(plan),
            model=model,
            recorder=recorder,
            options=RunOptions(max_parallel=1),
            telemetry=telemetry,
        ).run()
        rows = list(telemetry.db["contract_events"].rows)
    (task,) = report.tasks
    assert (task.state, task.attempts) == ("DONE", 2)
    said = [
        block["text"]
        for request in model.requests
        for message in request.messages
        if message["role"] == "user"
        for block in message["content"]
        if block.get("type") == "text"
    ]
    assert any(
        "- C012: workflow-script flow.js: Script validation failed: workflow.consumers.sync"
        ".prepare must be a function" in text
        for text in said
    )
    # the two attempts; the final sweep keeps the DONE without judging the script again,
    # since nothing acted on the workdir after its verdict
    assert [(r["attempt"], r["ok"], r["code"]) for r in rows] == [(1, 0, "C012"), (2, 1, None)]
    kept = [s["tasks"] for s in recorder.of("untouched")]
    assert kept == [[{"task_id": "t", "check_sha256": None}]]
    config = json.loads(rows[1]["detail"])["config"]
    assert config["producers"]["pollEmail"] == {"schedule": {"interval": "5m"}}
    assert [v["verdicts"][0]["code"] for v in recorder.of("contract")] == ["C012", None]


def test_a_worker_claiming_done_on_an_invalid_script_fails(tmp_path: Path) -> None:
    plan = tmp_path / "plan.org"
    plan.write_text(
        HEAD + "* TODO t\n  :PROPERTIES:\n  :ID: t\n  :contract: workflow-script flow.js\n  :END:\n"
    )
    write = (
        f"    - {{tool: write_file, input: {{path: flow.js, content: {json.dumps(INVALID)}}}}}\n"
    )
    model = ScriptedModel.from_yaml("workers:\n  t:\n" + write + "    - say: DONE\n" * 2)
    report = Runner(load_plan(plan), model=model, options=RunOptions(max_parallel=1)).run()
    (task,) = report.tasks
    assert task.state == "FAILED"
    assert (task.reason or "").startswith(
        "C012: workflow-script flow.js: Script validation failed:"
    )
