"""Evidence checked against the record: declared fields, the claim_done tool, and `output-of`
quotes that must be what a matching command of this attempt printed and exited 0 with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from groundskeeper.acceptance.attempt_record import AttemptRecord, OutputStore, chain_commands
from groundskeeper.acceptance.evidence import judge_evidence
from groundskeeper.acceptance.toolbox import Toolbox
from groundskeeper.models.model import AssistantTurn, ModelRequest
from groundskeeper.models.scripted import ScriptedModel
from groundskeeper.plan.org import load_plan
from groundskeeper.plan.properties import EvidenceField, parse_evidence
from groundskeeper.sandbox.result import ShellResult
from groundskeeper.supervisor.runner import MemoryRecorder, Runner, RunOptions
from groundskeeper.supervisor.worker import TOOL_SPECS, AttemptOutcome, WorkerSession, WorkerTask

HEAD = "#+TODO: TODO NEXT | DONE FAILED PARTIAL\n"
SEED_EVIDENCE = 'definition_valid:bool "validation_output:output-of:python3 validate.py *"'


def test_parse_evidence() -> None:
    fields, problems = parse_evidence("ok:bool n:int s:str xs:list o:object 'q:output-of:grep *'")
    assert problems == []
    assert [f.spec for f in fields] == [
        "ok:bool", "n:int", "s:str", "xs:list", "o:object", "q:output-of:grep *"
    ]  # fmt: skip
    _, problems = parse_evidence("ok:bool ok:int bare q:output-of n:float s:str:x")
    assert problems == [
        "`ok` is declared twice",
        "`bare`: expected NAME:TYPE (a name of letters, digits, _ and -)",
        "`q:output-of`: output-of needs the command it quotes, as a glob:"
        " `q:output-of:'yamllint *'`, so that the quote cannot be self-made",
        "`n:float`: unknown evidence type `float`; the types are bool, int, str, list, object,"
        " output-of",
        "`s:str:x`: only output-of takes a pattern",
    ]


def test_types_missing_and_wrong() -> None:
    fields, _ = parse_evidence("ok:bool n:int s:str xs:list o:object")
    good = {"ok": False, "n": 3, "s": "", "xs": [], "o": {}}
    assert all(v.ok for v in judge_evidence(fields, good, AttemptRecord(())))
    bad = {"ok": "true", "n": True, "s": 1, "xs": {}, "o": []}
    said = [(v.code, v.reason) for v in judge_evidence(fields, bad, AttemptRecord(()))]
    assert said == [
        ("E002", "wrong evidence: ok: must be bool, not str"),
        ("E002", "wrong evidence: n: must be int, not bool"),
        ("E002", "wrong evidence: s: must be str, not int"),
        ("E002", "wrong evidence: xs: must be list, not object"),
        ("E002", "wrong evidence: o: must be object, not list"),
    ]
    missing = judge_evidence(fields[:1], {}, AttemptRecord(()))
    assert missing[0].reason == "missing evidence: ok: the claim's evidence has no such field"
    bare = judge_evidence(fields[:1], None, AttemptRecord(()))
    assert bare[0].code == "E001" and "bare final message" in bare[0].message


def test_chain_commands() -> None:
    assert chain_commands("grep -q 'a b' f.txt") == ["grep -q a b f.txt"]
    assert chain_commands("cd x && make test > log") == ["cd x", "make test"]
    for line in ("a || b", "a; b", "a | b", "! a", "X=1 a", "a $(b)", "a $X", "if"):
        assert chain_commands(line) is None, line
    # a compound command hides which of its commands ran, and how each ended
    for line in ("if false; then b; fi", "{ b || true; }", "for i in 1; do b; done",
                 "(b) && c", "b && while false; do :; done"):  # fmt: skip
        assert chain_commands(line) is None, line


def test_a_stored_output_that_was_changed_reads_as_absent(tmp_path: Path) -> None:
    store = OutputStore(tmp_path / "outputs")
    digest = store.put("Syntax: OK\n")
    assert store.get(digest) == "Syntax: OK\n"
    (tmp_path / "outputs" / digest).write_text("Syntax: OK, forged\n")
    assert store.get(digest) is None
    assert store.get("../" + digest) is None
    field = EvidenceField("out", "output-of", "lint *")
    body = {"tool": "sh", "cmd": "lint a", "exit_status": 0, "fault": None,
            "stdout_sha256": digest, "stderr_sha256": None}  # fmt: skip
    (verdict,) = judge_evidence([field], {"out": "Syntax: OK"}, AttemptRecord((body,), store))
    assert verdict.code == "E003" and "its output is not in the record" in verdict.message


# -- through the runner -----------------------------------------------------------------------


class ValidatorShell:
    """A sandbox stand-in with one validator: `python3 validate.py FILE` crashes the way the
    seed incident's did (or, with `works`, prints `Syntax: OK`). Everything else goes to the
    real sandbox."""

    def __init__(self, output: str = "", status: int = 1, stderr: str = "") -> None:
        self.output, self.status, self.stderr = output, status, stderr

    def __call__(self, cmdline: str, **kwargs: Any) -> ShellResult:
        if cmdline == "python3 validate.py defs/order.yaml":
            return ShellResult(self.status, self.output, self.stderr, 1.0)
        from groundskeeper.sandbox import run

        return run(cmdline, **kwargs)


CRASH = (
    'Traceback (most recent call last):\n  File "validate.py", line 1, in <module>\n'
    "    import yaml\nModuleNotFoundError: No module named 'yaml'\n"
)


def run(
    tmp_path: Path, turns: str, evidence: str = SEED_EVIDENCE, shell: Any = None
) -> tuple[Any, MemoryRecorder]:
    (tmp_path / "defs").mkdir(exist_ok=True)
    (tmp_path / "defs" / "order.yaml").write_text("name: order\n")
    plan = tmp_path / "plan.org"
    plan.write_text(
        HEAD + f"* TODO t\n  :PROPERTIES:\n  :ID: t\n  :max-attempts: 1\n"
        f"  :evidence: {evidence}\n  :END:\n"
    )
    model = ScriptedModel.from_yaml("workers:\n  t:\n" + turns)
    recorder = MemoryRecorder()
    runner = Runner(load_plan(plan), model=model, recorder=recorder,
                    options=RunOptions(max_parallel=1), shell=shell)  # fmt: skip
    (task,) = runner.run().tasks
    return task, recorder


def claim(evidence: dict[str, Any]) -> str:
    return (
        f"    - {{tool: claim_done, input: {{summary: done, evidence: {json.dumps(evidence)}}}}}\n"
    )


VALIDATE = "    - {tool: sh, input: {cmd: 'python3 validate.py defs/order.yaml'}}\n"
SEED_CLAIM = {"definition_valid": True, "validation_output": "Syntax: OK"}


def test_seed_incident_fails_on_the_field_the_record_contradicts(tmp_path: Path) -> None:
    task, recorder = run(tmp_path, VALIDATE + claim(SEED_CLAIM), shell=ValidatorShell(stderr=CRASH))
    assert task.state == "FAILED"
    assert task.reason == (
        "false evidence: validation_output: the record contradicts 'Syntax: OK':"
        " `python3 validate.py defs/order.yaml` (exited 1) did not print it"
    )
    (sealed,) = recorder.of("evidence")
    assert [(v["field"], v["ok"], v["code"]) for v in sealed["verdicts"]] == [
        ("definition_valid", True, None),
        ("validation_output", False, "E003"),
    ]
    (said,) = recorder.of("claim")
    assert json.loads(said["evidence_json"]) == SEED_CLAIM
    sh = recorder.of("tool-call")[0]
    assert sh["exit_status"] == 1 and sh["cmd"] == "python3 validate.py defs/order.yaml"
    stored = tmp_path / ".groundskeeper" / "plan.org" / "outputs" / sh["stderr_sha256"]
    assert "ModuleNotFoundError" in stored.read_text()


def test_honest_evidence_passes(tmp_path: Path) -> None:
    shell = ValidatorShell(output="Syntax: OK\n", status=0)
    task, recorder = run(tmp_path, VALIDATE + claim(SEED_CLAIM), shell=shell)
    assert task.state == "DONE", task.reason
    (sealed,) = recorder.of("evidence")
    assert sealed["verdicts"][1]["message"] == (
        "printed by `python3 validate.py defs/order.yaml` (tool call 1)"
    )


def test_quoting_the_output_of_a_command_that_failed(tmp_path: Path) -> None:
    shell = ValidatorShell(output="Syntax: OK\n", status=1, stderr=CRASH)
    task, _ = run(tmp_path, VALIDATE + claim(SEED_CLAIM), shell=shell)
    assert task.state == "FAILED"
    assert task.reason == (
        "false evidence: validation_output: the record contradicts 'Syntax: OK':"
        " `python3 validate.py defs/order.yaml` printed it but exited 1"
    )


@pytest.mark.parametrize(
    "cmd",
    [
        "echo 'Syntax: OK'",  # self-made, not the validator
        "printf 'Syntax: OK\\n'; false",
        "echo 'Syntax: OK' && python3 validate.py defs/order.yaml",  # a chain mixes outputs
        "python3 validate.py defs/order.yaml; echo 'Syntax: OK'",
    ],
)
def test_evidence_cannot_be_self_made(tmp_path: Path, cmd: str) -> None:
    shell = ValidatorShell(stderr=CRASH)
    turns = f"    - {{tool: sh, input: {{cmd: {json.dumps(cmd)}}}}}\n" + claim(SEED_CLAIM)
    task, _ = run(tmp_path, turns, shell=shell)
    assert task.state == "FAILED"
    assert (task.reason or "").startswith("false evidence: validation_output: no command")


def test_a_quote_from_a_file_the_worker_wrote_is_not_evidence(tmp_path: Path) -> None:
    evidence = '"found:output-of:grep *"'
    turns = (
        "    - {tool: write_file, input: {path: notes.txt, content: 'Syntax: OK\n'}}\n"
        "    - {tool: sh, input: {cmd: \"grep 'Syntax: OK' notes.txt\"}}\n"
        + claim({"found": "Syntax: OK"})
    )
    task, _ = run(tmp_path, turns, evidence=evidence)
    assert task.state == "FAILED"
    assert (task.reason or "").startswith(
        "false evidence: found: `notes.txt`, which this attempt wrote before `grep 'Syntax: OK'"
        " notes.txt` ran (tool call 1), holds the quote"
    )


def test_a_quote_from_a_file_written_by_the_shell_is_not_evidence(tmp_path: Path) -> None:
    evidence = '"found:output-of:grep -h *"'
    turns = (
        "    - {tool: sh, input: {cmd: \"printf 'Syntax: OK\\\\n' > out/count.txt\"}}\n"
        "    - {tool: sh, input: {cmd: 'grep -h Syntax defs/order.yaml out/count.txt'}}\n"
        + claim({"found": "Syntax: OK"})
    )
    (tmp_path / "out").mkdir()
    task, _ = run(tmp_path, turns, evidence=evidence)
    assert task.state == "FAILED"
    assert (
        "`out/count.txt`, which this attempt wrote before `grep -h Syntax defs/order.yaml"
        " out/count.txt` ran (tool call 1), holds the quote"
    ) in (task.reason or "")


def test_a_quote_equal_to_greps_own_pattern_from_a_file_it_did_not_write_holds(
    tmp_path: Path,
) -> None:
    evidence = '"found:output-of:grep *"'
    (tmp_path / "validate.log").write_text("checking\nSyntax: OK\n")  # the validator's
    turns = "    - {tool: sh, input: {cmd: \"grep 'Syntax: OK' validate.log\"}}\n" + claim(
        {"found": "Syntax: OK"}
    )
    task, _ = run(tmp_path, turns, evidence=evidence)
    assert task.state == "DONE", task.reason


def test_a_quote_elsewhere_in_greps_own_text_is_not_evidence(tmp_path: Path) -> None:
    evidence = '"found:output-of:grep *"'
    turns = "    - {tool: sh, input: {cmd: \"grep -h OK - <<< 'Syntax: OK'\"}}\n" + claim(
        {"found": "Syntax: OK"}
    )
    task, _ = run(tmp_path, turns, evidence=evidence)
    assert task.state == "FAILED"
    assert "has the quote in its own text: that is not evidence" in (task.reason or "")


def test_the_last_run_of_the_pattern_decides(tmp_path: Path) -> None:
    evidence = '"names:output-of:grep -c *"'
    turns = (
        "    - {tool: sh, input: {cmd: 'grep -c name defs/order.yaml'}}\n"
        "    - {tool: sh, input: {cmd: 'grep -c nothing-here defs/order.yaml'}}\n"
        + claim({"names": "1"})
    )
    task, _ = run(tmp_path, turns, evidence=evidence)
    assert task.state == "FAILED"
    assert "(exited 1) did not print it (the last of 2 runs of the pattern, which decides)" in (
        task.reason or ""
    )


def test_a_chain_cannot_lend_its_output_to_the_matching_command(tmp_path: Path) -> None:
    """`grep` matches and exits 0, but what the line printed came from `cat` of a file: only
    a line that is the one matching command counts."""
    evidence = '"found:output-of:grep -c *"'
    (tmp_path / "notes.txt").write_text("Syntax: OK")
    turns = "    - {tool: sh, input: {cmd: 'grep -c name defs/order.yaml && cat notes.txt'}}\n" + (
        claim({"found": "Syntax: OK"})
    )
    task, _ = run(tmp_path, turns, evidence=evidence)
    assert task.state == "FAILED"
    assert (task.reason or "").startswith("false evidence: found: no command matching")


def test_a_quote_from_the_real_sandbox_passes(tmp_path: Path) -> None:
    evidence = '"names:output-of:grep -c *"'
    turns = "    - {tool: sh, input: {cmd: 'grep -c name defs/order.yaml'}}\n" + claim(
        {"names": "1"}
    )
    task, _ = run(tmp_path, turns, evidence=evidence)
    assert task.state == "DONE", task.reason


def test_a_bare_final_text_is_a_claim_without_evidence(tmp_path: Path) -> None:
    task, _ = run(tmp_path, VALIDATE + "    - say: DONE\n", shell=ValidatorShell(status=0))
    assert task.state == "FAILED"
    assert task.reason == (
        "missing evidence: definition_valid: the claim was a bare final message; claim with"
        " claim_done {summary, evidence} (and 1 more)"
    )


def test_wrong_type_names_the_field(tmp_path: Path) -> None:
    evidence = {"definition_valid": "yes", "validation_output": "Syntax: OK"}
    shell = ValidatorShell(output="Syntax: OK\n", status=0)
    task, _ = run(tmp_path, VALIDATE + claim(evidence), shell=shell)
    assert task.reason == "wrong evidence: definition_valid: must be bool, not str"


# -- the claim_done tool in the worker loop ---------------------------------------------------


class Turns:
    name = "turns"

    def __init__(self, *turns: AssistantTurn) -> None:
        self.turns = list(turns)
        self.requests: list[ModelRequest] = []

    def respond(self, request: ModelRequest) -> AssistantTurn:
        self.requests.append(request)
        return self.turns.pop(0)


def use(name: str, tool_input: object, n: int) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"u{n}", "name": name, "input": tool_input}


def session(tmp_path: Path, model: Turns) -> WorkerSession:
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD)
    task = WorkerTask("t", "t", "", None)
    return WorkerSession(model, task, Toolbox(tmp_path, plan), system="s")  # type: ignore[arg-type]


def test_claim_done_is_offered_and_ends_the_attempt(tmp_path: Path) -> None:
    assert "claim_done" in [t.name for t in TOOL_SPECS]
    model = Turns(
        AssistantTurn((use("claim_done", {"summary": "did it", "evidence": {"a": 1}}, 1),
                       use("write_file", {"path": "late.txt", "content": "x"}, 2)), "tool_use"),
    )  # fmt: skip
    outcome = session(tmp_path, model).attempt()
    assert isinstance(outcome, AttemptOutcome)
    assert (outcome.claim, outcome.stop, dict(outcome.evidence or {})) == (
        "did it",
        "claim_done",
        {"a": 1},
    )
    assert outcome.claims_done
    assert [(c.tool, c.status) for c in outcome.tool_calls] == [
        ("claim_done", "ok"), ("write_file", "skipped")
    ]  # fmt: skip
    assert not (tmp_path / "late.txt").exists()


def test_a_malformed_claim_is_an_error_the_worker_can_correct(tmp_path: Path) -> None:
    model = Turns(
        AssistantTurn((use("claim_done", {"summary": "x", "evidence": [1]}, 1),), "tool_use"),
        AssistantTurn((use("claim_done", {"summary": "x", "evidence": {}}, 2),), "tool_use"),
    )
    worker = session(tmp_path, model)
    outcome = worker.attempt()
    assert outcome.turns == 2 and outcome.evidence == {}
    result = model.requests[1].messages[-1]["content"][0]
    assert result["is_error"] is True
    assert result["content"][0]["text"] == "claim_done: `evidence` must be an object"
    # the claim's own tool result is in the conversation, so feedback can follow it
    worker._say("feedback")
    assert worker.messages[-1]["content"][0]["type"] == "tool_result"
    assert worker.messages[-1]["content"][-1] == {"type": "text", "text": "feedback"}


def test_the_worker_is_told_its_contracts_and_evidence() -> None:
    from groundskeeper.supervisor.worker import render_worker_prompt

    task = WorkerTask("t", "t", "", None, "plan.org", ("changed out.json",), ("ok:bool",))
    prompt = render_worker_prompt(task)
    assert "- `changed out.json`" in prompt
    assert "- `ok:bool`" in prompt
    assert "{{requirements}}" not in prompt
    plain = render_worker_prompt(WorkerTask("t", "t", "", None))
    assert "Nothing beyond the acceptance check." in plain


def test_outputs_are_kept_only_for_tasks_that_are_judged_on_them(tmp_path: Path) -> None:
    """Every `sh` call seals its command and output hashes; the texts are kept (by hash, in the
    control directory) only for a task with evidence or contracts."""
    plan = tmp_path / "plan.org"
    plan.write_text(HEAD + "* TODO t\n  :PROPERTIES:\n  :ID: t\n  :END:\n")
    model = ScriptedModel.from_yaml(
        "workers:\n  t:\n    - {tool: sh, input: {cmd: 'echo hi'}}\n    - say: DONE\n"
    )
    recorder = MemoryRecorder()
    Runner(load_plan(plan), model=model, recorder=recorder).run()
    (sh,) = recorder.of("tool-call")
    assert sh["cmd"] == "echo hi" and sh["exit_status"] == 0 and sh["changed"] is None
    assert sh["stdout_sha256"] == "98ea6e4f216f2fb4b69fff9b3a44842c38686ca685f3f55dc48c5d3fb1107be4"
    assert not (tmp_path / ".groundskeeper" / "plan.org" / "outputs").exists()


def test_evidence_is_judged_again_offline_from_the_signed_ledger(tmp_path: Path) -> None:
    """A real run into the signed ledger: the ledger verifies, and the seed case's verdict is
    reached again from its lines and the stored outputs alone, with no runner."""
    from click.testing import CliRunner

    from groundskeeper.cli import main
    from groundskeeper.record.ledger import read_steps

    (tmp_path / "defs").mkdir()
    (tmp_path / "defs" / "order.json").write_text('{"title": "order"}\n')
    plan = tmp_path / "plan.org"
    plan.write_text(
        HEAD + "* TODO t\n  :PROPERTIES:\n  :ID: t\n  :max-attempts: 1\n"
        '  :evidence: "out:output-of:grep *"\n  :END:\n'
    )
    script = tmp_path / "agents.yaml"
    script.write_text(
        "workers:\n  t:\n    - {tool: sh, input: {cmd: 'grep -c title defs/order.json'}}\n"
        + "    - {tool: sh, input: {cmd: 'echo 2'}}\n"
        + claim({"out": "2"})
    )
    result = CliRunner().invoke(main, ["resume", str(plan), "--model", f"scripted:{script}",
                                       "--json"])  # fmt: skip
    assert json.loads(result.stdout)["tasks"][0]["state"] == "FAILED"
    verified = CliRunner().invoke(main, ["ledger", "verify", str(plan), "--json"])
    assert json.loads(verified.stdout)["ok"] is True
    control = tmp_path / ".groundskeeper" / "plan.org"
    lines = [obj for _, obj in read_steps(control) if obj is not None]
    (sealed,) = [o for o in lines if o["step"] == "evidence"]
    record = AttemptRecord.from_steps(
        lines, sealed["run"], "t", 1, OutputStore(control / "outputs")
    )
    assert [c["cmd"] for c in record.calls if c["tool"] == "sh"] == [
        "grep -c title defs/order.json", "echo 2"
    ]  # fmt: skip
    (again,) = judge_evidence([EvidenceField("out", "output-of", "grep *")], {"out": "2"}, record)
    assert [again.to_json()] == sealed["body"]["verdicts"]
    assert (
        again.code == "E003"
        and "`grep -c title defs/order.json` (exited 0) did not print it" in again.message
    )
    (honest,) = judge_evidence([EvidenceField("out", "output-of", "grep *")], {"out": "1"}, record)
    assert honest.ok


_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)
_bodies = st.fixed_dictionaries(
    {"tool": st.sampled_from(["sh", "write_file", "claim_done", 3])},
    optional={
        "cmd": st.one_of(
            st.text(max_size=20), st.sampled_from(["lint a", "lint a; echo ok"]), _values
        ),
        "exit_status": st.one_of(st.integers(-2, 2), _values),
        "fault": st.one_of(st.none(), st.text(max_size=5)),
        "stdout_sha256": _values,
        "changed": _values,
        "status": _values,
    },
)


@given(bodies=st.lists(_bodies, max_size=4), evidence=st.none() | st.dictionaries(
    st.sampled_from(["ok", "out", "n"]), _values, max_size=3))  # fmt: skip
def test_judging_evidence_never_raises_and_never_passes_a_quote_without_a_clean_run(
    bodies: list[dict[str, Any]], evidence: dict[str, Any] | None
) -> None:
    fields = [EvidenceField("ok", "bool"), EvidenceField("n", "int"),
              EvidenceField("out", "output-of", "lint *")]  # fmt: skip
    verdicts = judge_evidence(fields, evidence, AttemptRecord(tuple(bodies)))
    assert [v.field.name for v in verdicts] == ["ok", "n", "out"]
    # no store: no output can be read back, so no quote is ever evidence
    assert verdicts[2].ok is False
    for verdict in verdicts:
        json.dumps(verdict.to_json())  # always sealable
