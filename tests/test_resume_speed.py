"""What makes a resume of a long plan cheap keeps every guarantee: carried DONEs that rest on
the same read set are observed once per sweep and demoted together when it no longer holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from groundskeeper.cli.output import dumps_indented
from tests.test_cli_run import keywords, resume, setup, steps, task


def _write(path: str, content: str) -> dict[str, Any]:
    return {"tool": "write_file", "input": {"path": path, "content": content}}


def _shared(tmp_path: Path, later: list[dict[str, Any]]) -> dict[str, Any]:
    """Run 1 makes three tasks DONE on the same check (one read set for all three) and
    `other` on another file, and fails `last`; run 2 works on `last` only, whose worker does
    `later` too. Run 2's report."""
    check = "grep -qx a out/a.txt"
    plan_text = "".join(task(f"Same {n}", f"same{n}", check) for n in range(3))
    plan_text += task("Other", "other", "grep -qx c out/c.txt")
    plan_text += task("Last", "last", "grep -qx b b.txt")
    # same0's worker writes the file; the others find it written (a file another task's
    # worker made before they started is their check's input, not theirs to write again)
    first: dict[str, Any] = {f"same{n}": [{"say": "DONE"}] for n in range(1, 3)}
    first["same0"] = [_write("out/a.txt", "a\n"), {"say": "DONE"}]
    first["other"] = [_write("out/c.txt", "c\n"), {"say": "DONE"}]
    plan, script = setup(tmp_path, plan_text, yaml.safe_dump({"workers": {**first,
                         "last": [{"say": "DONE"}]}}))  # fmt: skip
    resume(plan, script, "--max-parallel", "1")
    assert keywords(plan) == {"same0": "DONE", "same1": "DONE", "same2": "DONE",
                              "other": "DONE", "last": "FAILED"}  # fmt: skip
    again = {"last": [_write("b.txt", "b\n"), *later, {"say": "DONE"}]}
    script.write_text(yaml.safe_dump({"workers": again}))
    _, doc = resume(plan, script)
    return doc


def steps_in_order(plan: Path) -> list[str]:
    from groundskeeper.record.ledger import read_steps

    ledger = plan.parent / ".groundskeeper" / plan.name / "_steps.jsonl"
    return [obj["step"] for _, obj in read_steps(ledger) if obj is not None]


def _unchanged_rows(plan: Path) -> list[dict[str, Any]]:
    last = steps(plan, "run-start")[-1]["run_id"]
    return [row for s in steps(plan, "inputs-unchanged")
            if s["run_id"] == last for row in s["tasks"]]  # fmt: skip


def test_carried_dones_sharing_a_read_set_are_each_sealed_with_it(tmp_path: Path) -> None:
    doc = _shared(tmp_path, [])
    assert {t["id"]: t["state"] for t in doc["tasks"]} == dict.fromkeys(
        ("same0", "same1", "same2", "other", "last"), "DONE"
    )
    rows = _unchanged_rows(tmp_path / "plan.org")
    assert [r["task_id"] for r in rows] == ["same0", "same1", "same2", "other"]
    passes = {c["task_id"]: c["reads"]["sha256"] for c in steps(tmp_path / "plan.org", "check")
              if c["verdict"] == "PASS" and "reads" in c}  # fmt: skip
    assert [r["reads_sha256"] for r in rows] == [
        passes[t] for t in ("same0", "same1", "same2", "other")
    ]
    assert passes["same0"] == passes["same2"] != passes["other"]
    # staged with the sweep's checks, durable with the run's end: the ledger verifies
    from click.testing import CliRunner

    from groundskeeper.cli import main

    verified = CliRunner().invoke(main, ["ledger", "verify", str(tmp_path)])
    assert verified.exit_code == 0, verified.output
    kinds = [s for s in steps_in_order(tmp_path / "plan.org")]
    assert kinds.index("inputs-unchanged") < len(kinds) - 1 and kinds[-1] == "run-end"


def test_one_byte_under_a_shared_read_set_demotes_every_done_resting_on_it(
    tmp_path: Path,
) -> None:
    doc = _shared(tmp_path, [_write("out/a.txt", "A\n")])
    states = {t["id"]: t["state"] for t in doc["tasks"]}
    assert states == {"same0": "FAILED", "same1": "FAILED", "same2": "FAILED", "other": "DONE",
                      "last": "DONE"}  # fmt: skip
    for t in doc["tasks"][:3]:
        assert t["reason"].startswith("no longer passes: nonzero_status"), t
    assert [r["task_id"] for r in _unchanged_rows(tmp_path / "plan.org")] == ["other"]


def test_another_read_set_changing_in_the_same_sweep_demotes_only_its_own(
    tmp_path: Path,
) -> None:
    doc = _shared(tmp_path, [_write("out/c.txt", "C\n")])
    states = {t["id"]: t["state"] for t in doc["tasks"]}
    assert states == {"same0": "DONE", "same1": "DONE", "same2": "DONE", "other": "FAILED",
                      "last": "DONE"}  # fmt: skip
    rows = _unchanged_rows(tmp_path / "plan.org")
    assert [r["task_id"] for r in rows] == ["same0", "same1", "same2"]


# -- the JSON report: the same text as json.dumps(indent=2), encoded faster -------------------

_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text()
_keys = st.text() | st.integers() | st.booleans() | st.none() | st.floats(allow_nan=False)
_documents = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.lists(inner, max_size=3).map(tuple)
        | st.dictionaries(_keys, inner, max_size=4)
    ),
    max_leaves=30,
)


@given(_documents)
def test_the_report_is_the_text_json_dumps_indent_2_writes(document: Any) -> None:
    assert dumps_indented(document) == json.dumps(document, ensure_ascii=False, indent=2)


def test_a_long_report_is_the_same_text_and_what_json_refuses_is_refused() -> None:
    row = {"id": "t0", "title": "Tâche \u2028 \"0\"", "line": 3, "state": "DONE",
           "verified": None, "reason": None, "lies": [], "ok": True, "x": 1.5}  # fmt: skip
    document = {"tasks": [dict(row, id=f"t{n}") for n in range(300)], "nested": {"a": [row, []]},
                "empty": {}, "ordered": OrderedDict(b=OrderedDict(c=[1]))}  # fmt: skip
    assert dumps_indented(document) == json.dumps(document, ensure_ascii=False, indent=2)
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps_indented({"a": [1, {"b": object()}]})
    with pytest.raises(TypeError, match="not JSON serializable"):
        dumps_indented({"a": {1, 2}})


# -- what a resume imports: only what its plan can need ---------------------------------------

#: Never on a resume of plain checks: the models it was not given, the other commands' packages,
#: and the stages' rules that only a task with a judge, a gate, contracts or evidence needs.
RESUME_NEVER = (
    "langgraph",
    "langchain_core",
    "anthropic",
    "mcp",
    "ray",
    "rich",
    "jsonschema",
    "groundskeeper.agents",
    "groundskeeper.evals",
    "groundskeeper.review",
    "groundskeeper.conformance",
    "groundskeeper.acceptance.judge",
    "groundskeeper.acceptance.gates",
    "groundskeeper.acceptance.contracts",
    "groundskeeper.acceptance.evidence",
    "groundskeeper.acceptance.suite",
    "groundskeeper.sandbox.cpython",
    "groundskeeper.sandbox.quickjs",
    "groundskeeper.supervisor.gating",
    "groundskeeper.supervisor.author",
)


def imported_by_a_resume(plan: Path, script: Path) -> set[str]:
    """Every module `groundskeeper resume` imports, as a process of its own (`-X importtime`)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "groundskeeper", "resume", str(plan),
         "--model", f"scripted:{script}", "--json"],
        capture_output=True, env=dict(os.environ), timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr.decode()[-3000:]
    assert {t["state"] for t in json.loads(proc.stdout)["tasks"]} == {"DONE"}
    return {
        line.rsplit("|", 1)[1].strip()
        for line in proc.stderr.decode().splitlines()
        if line.startswith("import time:") and "|" in line
    }


def _never(modules: set[str], never: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in never))


def test_a_resume_of_plain_checks_imports_nothing_it_cannot_need(tmp_path: Path) -> None:
    plan_text = "".join(task(f"Task {n}", f"t{n}", f"grep -qx {n} f{n}.txt") for n in range(3))
    script = {f"t{n}": [_write(f"f{n}.txt", f"{n}\n"), {"say": "DONE"}] for n in range(3)}
    script["t2"] = [{"say": "DONE"}]  # fails in the first run: left for the resume
    plan, script_path = setup(tmp_path, plan_text, yaml.safe_dump({"workers": script}))
    resume(plan, script_path)
    assert keywords(plan) == {"t0": "DONE", "t1": "DONE", "t2": "FAILED"}
    script_path.write_text(yaml.safe_dump({"workers": {"t2": [_write("f2.txt", "2\n"),
                                                              {"say": "DONE"}]}}))  # fmt: skip
    modules = imported_by_a_resume(plan, script_path)
    assert "groundskeeper.supervisor.runner" in modules  # it ran in this process
    assert "wasmtime" in modules  # a check ran: the sandbox is needed
    assert _never(modules, RESUME_NEVER) == []


#: Never on a resume with nothing to run (every task DONE, no check to run, no sweep): the
#: sandbox's wasm layer and its shell, and the model backends it was not given.
IDLE_RESUME_NEVER = (
    *RESUME_NEVER,
    "wasmtime",
    "groundskeeper.sandbox.wasi",
    "groundskeeper.sandbox.preview1",
    "groundskeeper.sandbox.shell",
    "groundskeeper.models.claude",
)


def test_a_resume_with_nothing_to_run_imports_no_sandbox_and_no_other_model(
    tmp_path: Path,
) -> None:
    plan_text = "".join(task(f"Task {n}", f"t{n}", f"grep -qx {n} f{n}.txt") for n in range(2))
    script = {f"t{n}": [_write(f"f{n}.txt", f"{n}\n"), {"say": "DONE"}] for n in range(2)}
    plan, script_path = setup(tmp_path, plan_text, yaml.safe_dump({"workers": script}))
    resume(plan, script_path)
    assert keywords(plan) == {"t0": "DONE", "t1": "DONE"}
    modules = imported_by_a_resume(plan, script_path)
    assert "groundskeeper.supervisor.runner" in modules  # it ran in this process
    assert "groundskeeper.models.scripted" in modules  # the model it was given, checked
    assert _never(modules, IDLE_RESUME_NEVER) == []


def test_a_resume_with_a_judged_task_imports_the_judge(tmp_path: Path) -> None:
    """The other side: what a plan does need is still imported (the judge, for a `:judge:`)."""
    plan_text = task("Judged", "judged", "grep -qx j j.txt", judge="j.txt says j")
    worker = [_write("j.txt", "j\n"), {"say": "DONE"}]
    judge = [{"verdict": "pass", "reasons": ["it says j"]}]
    both = {"workers": {"judged": worker}, "judges": {"judged": judge}}
    plan, script = setup(tmp_path, plan_text, yaml.safe_dump(both))
    modules = imported_by_a_resume(plan, script)
    assert "groundskeeper.acceptance.judge" in modules


# -- the record index: written with each member encoded once, the same bytes -----------------

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=20,
)


@given(st.dictionaries(st.text().filter(lambda k: k != "sig"), _json, max_size=6))
def test_a_signed_file_is_the_canonical_text_and_its_signature_covers_the_payload(
    payload: dict[str, Any],
) -> None:
    import base64
    import tempfile

    from groundskeeper.record.keys import ensure_signing_key
    from groundskeeper.record.signed_file import canonical, read_signed, write_signed

    key = ensure_signing_key().key
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(tmp) / "signed"
        write_signed(target, payload, key, b"context\n", "test file")
        raw = target.read_bytes()
        signed = json.loads(raw)
        assert raw == canonical(signed) + b"\n"
        sig = base64.b64decode(signed.pop("sig"))
        assert signed == payload
        assert key.public.verify(sig, b"context\n" + canonical(payload))
        assert read_signed(target, key, b"context\n", "test file", "the key") == payload
