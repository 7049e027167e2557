"""A run cannot go on unsealed when its ledger is deleted, swapped or squatted mid-run.

Workers cannot reach the ledger (it lives in the plan's control directory, behind the
sandbox's fence); whoever else changes those files must stop the run with a named reason,
never start a new chain.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from groundskeeper.record.keys import SigningKey
from groundskeeper.record.ledger import Ledger, LedgerError, verify_ledger

KEY = SigningKey.from_seed(bytes(range(32)))


def started(tmp_path: Path) -> Ledger:
    ledger = Ledger(tmp_path, KEY, "run-1", trusted=[KEY.public])
    ledger.record("run-start", {"plan": "plan.org"})
    ledger.record("task-start", {"task": "a"})
    return ledger


def test_a_ledger_deleted_mid_run_stops_the_run(tmp_path: Path) -> None:
    ledger = started(tmp_path)
    for name in ("_steps.jsonl", "_steps.checkpoint", "_steps.lock"):
        (tmp_path / name).unlink(missing_ok=True)
    with pytest.raises(LedgerError, match="vanished during run run-1"):
        ledger.record("claim", {"task": "a"})
    assert not (tmp_path / "_steps.jsonl").exists()


def test_a_ledger_swapped_for_a_copy_mid_run_stops_the_run(tmp_path: Path) -> None:
    ledger = started(tmp_path)
    shutil.copy(tmp_path / "_steps.jsonl", tmp_path / "copy.jsonl")
    (tmp_path / "copy.jsonl").replace(tmp_path / "_steps.jsonl")
    with pytest.raises(LedgerError, match="was replaced during run run-1"):
        ledger.record("claim", {"task": "a"})


def test_a_squatted_checkpoint_temp_name_does_not_stop_appends(tmp_path: Path) -> None:
    ledger = started(tmp_path)
    (tmp_path / "_steps.checkpoint.tmp").mkdir()
    ledger.record("claim", {"task": "a"})
    report = verify_ledger(tmp_path / "_steps.jsonl", [KEY.public])
    assert (report.ok, report.lines) == (True, 3)
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("_steps.check"))
    assert leftovers == ["_steps.checkpoint", "_steps.checkpoint.tmp"]


def run_a_wiping_worker(tmp_path: Path, wipe: str) -> dict[str, Any]:
    """Resume a one-task plan whose worker runs `wipe` in the sandbox, then does the work."""
    plan = tmp_path / "plan.org"
    plan.write_text(
        "#+TODO: TODO NEXT | DONE FAILED PARTIAL\n"
        "* TODO Wipe\n  :PROPERTIES:\n  :ID: wipe\n  :done-when: test -e x\n  :END:\n"
    )
    script = tmp_path / "workers.yaml"
    script.write_text(
        "workers:\n  wipe:\n"
        f"    - {{tool: sh, input: {{cmd: '{wipe}'}}}}\n"
        "    - {tool: write_file, input: {path: x, content: done}}\n"
        "    - say: DONE\n"
    )
    result = CliRunner().invoke(
        main, ["resume", str(plan), "--model", f"scripted:{script}", "--json"]
    )
    assert result.exit_code == 0, result.output
    document: dict[str, Any] = json.loads(result.stdout)
    assert document["ok"] is True
    verified = CliRunner().invoke(main, ["ledger", "verify", str(plan), "--json"])
    assert verified.exit_code == 0, verified.output
    return document


CONTROL = ".groundskeeper/plan.org"


@pytest.mark.parametrize(
    "wipe",
    [
        f"rm -f {CONTROL}/_steps.jsonl {CONTROL}/_steps.checkpoint {CONTROL}/_steps.lock",
        f"rm -f {CONTROL}/*",
        "rm -rf .groundskeeper",
        f"cp /dev/null {CONTROL}/_steps.jsonl",
    ],
)
def test_a_worker_cannot_delete_the_ledger(tmp_path: Path, wipe: str) -> None:
    document = run_a_wiping_worker(tmp_path, wipe)
    assert [t["state"] for t in document["tasks"]] == ["DONE"]


def test_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "_steps.jsonl")
    result = CliRunner().invoke(main, ["ledger", "verify", str(tmp_path), "--json"])
    assert result.exit_code == 2
    assert "is not a regular file" in result.stderr

    os.mkfifo(tmp_path / "plan.org")
    result = CliRunner().invoke(main, ["check", str(tmp_path / "plan.org"), "--json"])
    assert result.exit_code == 2
    assert "not a regular file (a FIFO, socket or device)" in result.stderr


def test_foreign_bytes_landing_during_an_append_are_not_adopted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from groundskeeper.record import ledger as ledger_module

    ledger = started(tmp_path)
    real_write = ledger_module._write_whole

    def write_then_intrude(fd: int, data: bytes) -> None:
        real_write(fd, data)
        with open(tmp_path / "_steps.jsonl", "ab") as intruder:
            intruder.write(b'{"forged":true}\n')

    monkeypatch.setattr(ledger_module, "_write_whole", write_then_intrude)
    with pytest.raises(LedgerError, match="changed while a line was appended"):
        ledger.record("claim", {"task": "a"})
    monkeypatch.setattr(ledger_module, "_write_whole", real_write)
    report = verify_ledger(tmp_path / "_steps.jsonl", [KEY.public])
    assert report.ok is False


def test_a_worker_cannot_delete_telemetry(tmp_path: Path) -> None:
    document = run_a_wiping_worker(tmp_path, f"rm -f {CONTROL}/_telemetry.db*")
    assert [d for d in document["diagnostics"] if d["level"] == "error"] == []
    assert (tmp_path / CONTROL / "_telemetry.db").stat().st_size > 0


def test_telemetry_deleted_from_outside_fails_the_run(tmp_path: Path) -> None:
    """R005 stays for what the fence cannot stop: another process of the user's."""
    from groundskeeper.models import load_model
    from groundskeeper.plan.org import load_plan
    from groundskeeper.record.telemetry import Telemetry
    from groundskeeper.supervisor.runner import Runner

    plan = tmp_path / "plan.org"
    plan.write_text("* TODO A\n  :PROPERTIES:\n  :done-when: test -e x\n  :END:\n")
    script = tmp_path / "workers.yaml"
    script.write_text("workers:\n  A:\n    - {tool: write_file, input: {path: x, content: x}}\n"
                      "    - say: DONE\n")  # fmt: skip
    telemetry = Telemetry.for_plan(plan)
    telemetry.path.unlink()
    report = Runner(load_plan(plan), model=load_model(f"scripted:{script}"),
                    telemetry=telemetry).run()  # fmt: skip
    telemetry.close()
    [lost] = [d for d in report.diagnostics if d.code == "R005"]
    assert "was deleted during the run" in lost.message
