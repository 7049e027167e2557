"""`groundskeeper conform`, `dock` and `engine run` through click's CliRunner."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from groundskeeper.cli import main
from groundskeeper.record import ledger as ledger_module
from groundskeeper.record.keys import trusted_keys
from groundskeeper.record.ledger import Ledger, LedgerError, read_steps, verify_ledger
from tests.components import world_component, write_wasm

PLAN = """\
* TODO Research
** DONE Gather pricing
** TODO Summarize
"""


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def as_json(result: Result) -> Any:
    return json.loads(result.stdout)


def dock_rows(db: Path) -> list[dict[str, Any]]:
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(row) for row in conn.execute("select * from dock_events order by rowid")]


def control(plan_dir: Path) -> Path:
    """The control directory of `plan_dir/plan.org`, where `dock --plan` keeps its state."""
    return plan_dir / ".groundskeeper" / "plan.org"


@pytest.fixture
def plan_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "project"
    directory.mkdir()
    (directory / "plan.org").write_text(PLAN, encoding="utf-8")
    (directory / "notes.txt").write_text("hello notes\n", encoding="utf-8")
    return directory


# --- conform ----------------------------------------------------------------------------------


def test_conform_json_refuses_an_extra_import(tmp_path: Path) -> None:
    result = invoke("conform", write_wasm("extra_import", tmp_path), "--json")
    assert result.exit_code == 1
    document = as_json(result)
    assert sorted(document) == ["diagnostics", "exports", "imports", "ok"]
    assert document["ok"] is False
    assert [(d["code"], d["scope"]) for d in document["diagnostics"]] == [("C004", "read-secret")]
    assert [i["name"] for i in document["imports"]] == ["session-info", "read-secret"]


def test_conform_json_for_a_non_component_keeps_every_key(tmp_path: Path) -> None:
    empty = tmp_path / "empty.wasm"
    empty.write_bytes(b"")
    result = invoke("conform", empty, "--json")
    assert result.exit_code == 1
    assert as_json(result) == {
        "ok": False,
        "diagnostics": [
            {
                "level": "error",
                "scope": "empty.wasm",
                "message": "not a component: the file is empty",
                "line": None,
                "code": "C001",
            }
        ],
        "imports": [],
        "exports": [],
    }


@pytest.mark.parametrize("which", ["missing", "directory"])
def test_conform_unreadable_file_exits_2_without_traceback(tmp_path: Path, which: str) -> None:
    target = tmp_path / "nope.wasm" if which == "missing" else tmp_path
    result = invoke("conform", target, "--json")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert str(target) in result.stderr
    assert "Traceback" not in result.stderr


def test_conform_argument_count_is_a_usage_error(tmp_path: Path) -> None:
    one = write_wasm("echo", tmp_path)
    assert invoke("conform", one, one).exit_code == 2
    assert invoke("conform", "--upgrade", one).exit_code == 2


def test_conform_json_accepts_the_reference_component(tmp_path: Path) -> None:
    result = invoke("conform", write_wasm("dock_all", tmp_path), "--json")
    assert result.exit_code == 0
    document = as_json(result)
    assert document["ok"] is True
    assert document["diagnostics"] == []
    assert [(i["name"], i["type"]) for i in document["imports"]] == [
        ("session-info", "func() -> string"),
        ("vfs-query", "func(string) -> string"),
        ("run-command", "func(string) -> string"),
    ]
    assert [(e["name"], e["type"]) for e in document["exports"]] == [
        ("run", "func(string) -> string")
    ]


def test_conform_human_output(tmp_path: Path) -> None:
    refused = invoke("conform", write_wasm("run_wrong_type", tmp_path))
    assert refused.exit_code == 1
    assert refused.stdout.startswith("run_wrong_type.wasm: error: run: `run` has the wrong type")
    assert refused.stdout.rstrip().endswith("[C003]")
    accepted = invoke("conform", write_wasm("echo", tmp_path))
    assert accepted.exit_code == 0
    assert accepted.stdout.splitlines() == [
        "echo.wasm conforms to groundskeeper:engine@0.1.0",
        "  export run: func(string) -> string",
    ]


def test_conform_upgrade(tmp_path: Path) -> None:
    old = tmp_path / "old.wasm"
    shrunk = tmp_path / "shrunk.wasm"
    grown = tmp_path / "grown.wasm"
    old.write_bytes(world_component({}, {"run": 1, "describe": 0}))
    shrunk.write_bytes(world_component({}, {"run": 1}))
    grown.write_bytes(world_component({}, {"run": 1, "describe": 0, "version": 0}))
    refused = invoke("conform", "--upgrade", old, shrunk, "--json")
    assert refused.exit_code == 1
    assert [(d["code"], d["scope"]) for d in as_json(refused)["diagnostics"]] == [
        ("U001", "describe")
    ]
    accepted = invoke("conform", "--upgrade", old, grown, "--json")
    assert accepted.exit_code == 0
    assert [e["name"] for e in as_json(accepted)["exports"]] == ["run", "describe", "version"]


def test_conform_upgrade_to_a_non_conforming_component_is_refused(tmp_path: Path) -> None:
    old = write_wasm("echo", tmp_path)
    new = write_wasm("other_world", tmp_path)
    result = invoke("conform", "--upgrade", old, new, "--json")
    assert result.exit_code == 1
    assert [d["code"] for d in as_json(result)["diagnostics"]] == ["C002", "U001"]


# --- dock -------------------------------------------------------------------------------------


def test_dock_refuses_copies_nothing_and_records_the_refusal(
    tmp_path: Path, plan_dir: Path
) -> None:
    source = write_wasm("dock_wrong_type", tmp_path)
    result = invoke("dock", source, "--plan", plan_dir / "plan.org", "--json")
    assert result.exit_code == 1
    document = as_json(result)
    assert document["ok"] is False
    assert document["destination"] is None
    assert [d["code"] for d in document["diagnostics"]] == ["C005"]
    assert not (control(plan_dir) / "components" / "dock_wrong_type.wasm").exists()
    [row] = dock_rows(control(plan_dir) / "_telemetry.db")
    assert (row["component"], row["ok"]) == (str(source), 0)
    assert [d["code"] for d in json.loads(row["diagnostics"])] == ["C005"]


def test_dock_copies_into_components_beside_the_plan_and_records_it(
    tmp_path: Path, plan_dir: Path
) -> None:
    source = write_wasm("dock_all", tmp_path)
    result = invoke("dock", source, "--plan", plan_dir / "plan.org", "--json")
    assert result.exit_code == 0
    document = as_json(result)
    sha = hashlib.sha256(source.read_bytes()).hexdigest()
    assert document["ok"] is True
    assert document["sha256"] == sha
    assert document["destination"] == str(control(plan_dir) / "components" / "dock_all.wasm")
    assert (control(plan_dir) / "components" / "dock_all.wasm").read_bytes() == source.read_bytes()
    [row] = dock_rows(control(plan_dir) / "_telemetry.db")
    assert (row["sha256"], row["ok"], json.loads(row["diagnostics"])) == (sha, 1, [])


def test_dock_refuses_an_incompatible_upgrade(tmp_path: Path) -> None:
    into = tmp_path / "engine" / "components"
    (tmp_path / "v1").mkdir()
    (tmp_path / "v2").mkdir()
    v1 = tmp_path / "v1" / "tool.wasm"
    v2 = tmp_path / "v2" / "tool.wasm"
    v1.write_bytes(world_component({}, {"run": 1}))
    v2.write_bytes(world_component({"run-command": 1}, {"run": 1}))
    assert invoke("dock", v1, "--into", into).exit_code == 0
    refused = invoke("dock", v2, "--into", into)
    assert refused.exit_code == 1
    assert "import `run-command` was added" in refused.stdout
    assert "[U003]" in refused.stdout
    assert (into / "tool.wasm").read_bytes() == v1.read_bytes()
    # without --plan, telemetry sits beside the component directory
    assert [row["ok"] for row in dock_rows(tmp_path / "engine" / "_telemetry.db")] == [1, 0]


def test_dock_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    result = invoke("dock", tmp_path / "nope.wasm", "--into", tmp_path / "components")
    assert result.exit_code == 2
    assert "nope.wasm: no such file" in result.stderr


# --- dock: sealed in the signed ledger -------------------------------------------------------


def sealed_steps(directory: Path) -> list[tuple[str, str, dict[str, Any]]]:
    """(run, step, body) of every line, after checking the whole ledger verifies."""
    report = verify_ledger(directory, trusted_keys())
    assert (report.ok, report.findings) == (True, ())
    return [(obj["run"], obj["step"], obj["body"]) for _, obj in read_steps(directory) if obj]


def test_an_accepted_dock_is_sealed_as_a_run_of_its_own(tmp_path: Path, plan_dir: Path) -> None:
    source = write_wasm("dock_all", tmp_path)
    result = invoke("dock", source, "--plan", plan_dir / "plan.org", "--json")
    assert result.exit_code == 0
    document = as_json(result)
    sha = hashlib.sha256(source.read_bytes()).hexdigest()
    steps = sealed_steps(plan_dir)
    assert [step for _, step, _ in steps] == ["run-start", "dock", "run-end"]
    [run_id] = {run for run, _, _ in steps}
    start, docked, end = (body for _, _, body in steps)
    assert (start["kind"], start["component"], start["plan"]) == (
        "dock",
        str(source),
        str(plan_dir / "plan.org"),
    )
    assert (docked["sha256"], docked["ok"], docked["diagnostics"]) == (sha, True, [])
    assert docked["component"] == str(source)
    assert docked["destination"] == str(control(plan_dir) / "components" / "dock_all.wasm")
    assert docked["interface"] == {"imports": document["imports"], "exports": document["exports"]}
    assert [i["name"] for i in docked["interface"]["imports"]] == [
        "session-info",
        "vfs-query",
        "run-command",
    ]
    assert (end["ok"], end["states"]) == (True, [])
    head = verify_ledger(plan_dir, trusted_keys()).head
    assert document["ledger"] == {
        "path": str(control(plan_dir) / "_steps.jsonl"),
        "run_id": run_id,
        "seq": 2,
        "head": {"size": 3, "root": head.root},
    }
    [row] = dock_rows(control(plan_dir) / "_telemetry.db")
    assert row["run_id"] == run_id


def test_a_refusal_is_sealed_too(tmp_path: Path, plan_dir: Path) -> None:
    source = write_wasm("dock_wrong_type", tmp_path)
    result = invoke("dock", source, "--plan", plan_dir / "plan.org")
    assert result.exit_code == 1
    assert f"sealed the refusal in {control(plan_dir) / '_steps.jsonl'}" in result.stderr
    steps = sealed_steps(plan_dir)
    assert [step for _, step, _ in steps] == ["run-start", "dock", "run-end"]
    docked, end = steps[1][2], steps[2][2]
    assert (docked["ok"], docked["destination"]) == (False, None)
    assert docked["sha256"] == hashlib.sha256(source.read_bytes()).hexdigest()
    assert [d["code"] for d in docked["diagnostics"]] == ["C005"]
    assert end["ok"] is False


def test_successive_docks_continue_one_chain_beside_the_component_directory(
    tmp_path: Path,
) -> None:
    into = tmp_path / "engine" / "components"
    v1 = tmp_path / "tool.wasm"
    v1.write_bytes(world_component({}, {"run": 1}))
    assert invoke("dock", v1, "--into", into).exit_code == 0
    v1.write_bytes(world_component({}, {"run": 1, "describe": 0}))  # exports may grow
    assert invoke("dock", v1, "--into", into).exit_code == 0
    steps = sealed_steps(tmp_path / "engine")
    assert [step for _, step, _ in steps] == ["run-start", "dock", "run-end"] * 2
    first, second = steps[1][2], steps[4][2]
    assert second["replaced"] == first["sha256"] != second["sha256"]
    assert len({run for run, _, _ in steps}) == 2


@pytest.mark.parametrize("damage", ["checkpoint deleted", "last line cut"])
def test_a_damaged_ledger_means_no_dock(tmp_path: Path, plan_dir: Path, damage: str) -> None:
    first = write_wasm("echo", tmp_path)
    assert invoke("dock", first, "--plan", plan_dir / "plan.org").exit_code == 0
    ledger_module._forget_writers()  # the next dock is another process: no cached tail
    if damage == "checkpoint deleted":
        (control(plan_dir) / "_steps.checkpoint").unlink()
    else:  # a line the checkpoint names, cut: damage, not a crash's torn tail (repaired)
        steps_file = control(plan_dir) / "_steps.jsonl"
        steps_file.write_bytes(steps_file.read_bytes()[:-5])
    before = (control(plan_dir) / "_steps.jsonl").read_bytes()
    source = write_wasm("dock_all", tmp_path)
    result = invoke("dock", source, "--plan", plan_dir / "plan.org", "--json")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert "cannot seal the dock in the ledger: refusing to append" in result.stderr
    assert result.stderr.rstrip().endswith("nothing was docked")
    assert not (control(plan_dir) / "components" / "dock_all.wasm").exists()
    assert (control(plan_dir) / "_steps.jsonl").read_bytes() == before
    assert [row["component"] for row in dock_rows(control(plan_dir) / "_telemetry.db")] == [
        str(first)
    ]


@pytest.mark.parametrize("upgrade", [False, True])
def test_a_dock_whose_step_cannot_be_sealed_is_undone(
    tmp_path: Path, plan_dir: Path, monkeypatch: pytest.MonkeyPatch, upgrade: bool
) -> None:
    into = plan_dir / "components"
    old = world_component({}, {"run": 1})
    if upgrade:
        (tmp_path / "tool.wasm").write_bytes(old)
        assert invoke("dock", tmp_path / "tool.wasm", "--into", into).exit_code == 0
    new = tmp_path / "tool.wasm"
    new.write_bytes(world_component({}, {"run": 1, "describe": 0}))
    record = Ledger.record

    def disk_full_at_the_dock_step(self: Ledger, step: str, body: Any) -> Any:
        if step == "dock":
            raise LedgerError(f"cannot write the ledger {self.path}: No space left on device")
        return record(self, step, body)

    monkeypatch.setattr(Ledger, "record", disk_full_at_the_dock_step)
    result = invoke("dock", new, "--into", into, "--json")
    assert result.exit_code == 2
    assert "the dock step could not be sealed in the ledger" in result.stderr
    assert "No space left on device; the dock was undone" in result.stderr
    if upgrade:
        assert (into / "tool.wasm").read_bytes() == old
    else:
        assert not (into / "tool.wasm").exists()
    last = dock_rows(plan_dir / "_telemetry.db")[-1]
    assert (last["ok"], [d["code"] for d in json.loads(last["diagnostics"])]) == (0, ["R004"])


# --- engine run -------------------------------------------------------------------------------


def test_engine_run_prints_the_reference_components_answer(tmp_path: Path, plan_dir: Path) -> None:
    component = write_wasm("dock_all", tmp_path)
    plan = plan_dir / "plan.org"
    result = invoke("engine", "run", component, "--plan", plan, "--input", "hi", "--run-id", "r-42")
    assert result.exit_code == 0, result.stderr
    session = {
        "world": "groundskeeper:engine@0.1.0",
        "run_id": "r-42",
        "plan": str(plan.resolve()),
        "workdir": str(plan_dir.resolve()),
    }
    tasks = {
        "ok": True,
        "query": "state=DONE",
        "count": 1,
        "tasks": [
            {"id": "Research/Gather pricing", "title": "Gather pricing", "state": "DONE", "line": 2}
        ],
    }
    assert result.stdout == (
        f"input=hi\nsession={json.dumps(session)}\ntasks={json.dumps(tasks)}\ncommand=hello notes\n"
    )


def test_engine_run_json_and_separate_workdir(tmp_path: Path, plan_dir: Path) -> None:
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    (workdir / "notes.txt").write_text("other notes\n", encoding="utf-8")
    component = write_wasm("dock_all", tmp_path)
    result = invoke(
        "engine", "run", component, "--plan", plan_dir / "plan.org", "--workdir", workdir, "--json"
    )
    assert result.exit_code == 0
    document = as_json(result)
    assert sorted(document) == [
        "diagnostics",
        "duration_ms",
        "fuel_consumed",
        "instantiated",
        "ok",
        "output",
    ]
    assert document["ok"] is True
    assert document["output"].endswith("\ncommand=other notes\n")


def test_engine_run_refuses_a_non_conforming_component(tmp_path: Path) -> None:
    result = invoke("engine", "run", write_wasm("extra_import", tmp_path), "--json")
    assert result.exit_code == 1
    document = as_json(result)
    assert (document["ok"], document["output"], document["instantiated"]) == (False, None, False)
    assert [d["code"] for d in document["diagnostics"]] == ["C004"]


def test_engine_run_reports_a_deadline(tmp_path: Path) -> None:
    result = invoke(
        "engine", "run", write_wasm("limits", tmp_path), "--input", "spin", "--deadline", "0.2"
    )
    assert result.exit_code == 1
    assert result.stdout == ""
    assert "deadline: `run` did not finish within 0.2 s [E003]" in result.stderr


def test_engine_run_unusable_input_exits_2(tmp_path: Path) -> None:
    component = write_wasm("echo", tmp_path)
    assert invoke("engine", "run", tmp_path / "nope.wasm").exit_code == 2
    missing_plan = invoke("engine", "run", component, "--plan", tmp_path / "nope.org")
    assert missing_plan.exit_code == 2
    assert "nope.org: no such plan file" in missing_plan.stderr
