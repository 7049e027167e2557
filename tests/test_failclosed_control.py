"""Nothing done to the plan or the control plane crashes the supervisor or leaves a forgery:
each case is a named diagnostic, the plan is restored first, the run stops cleanly or goes on.
(Workers cannot reach these files any more; the actor here is anything else on the machine.)"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from groundskeeper.models.model import AssistantTurn, ModelRequest
from groundskeeper.plan import edit as plan_module
from groundskeeper.plan.org import load_plan
from groundskeeper.record.telemetry import Telemetry
from groundskeeper.supervisor.runner import Runner, RunOptions
from tests.test_cli_run import HEAD, control, task

PLAN = HEAD + task("A", "a", "grep -q x a.txt") + task("B", "b", "grep -q x b.txt")


class Saboteur:
    """A model that, on task `a`'s first turn, does `act` from outside the sandbox; every task
    then writes its file through the sandbox and claims DONE."""

    name = "saboteur"

    def __init__(self, act: Callable[[], None], on: str = "a") -> None:
        self.act: Callable[[], None] | None = act
        self.on = on
        self.turns: dict[str, int] = {}

    def respond(self, request: ModelRequest) -> AssistantTurn:
        turn = self.turns.get(request.task_id, 0)
        self.turns[request.task_id] = turn + 1
        if request.task_id == self.on and self.act is not None:
            self.act, act = None, self.act
            act()
        if turn == 0:
            use = {"type": "tool_use", "id": f"t-{request.task_id}", "name": "write_file",
                   "input": {"path": f"{request.task_id}.txt", "content": "x"}}  # fmt: skip
            return AssistantTurn((use,), "tool_use")
        return AssistantTurn(({"type": "text", "text": "DONE"},), "end_turn")


def run(tmp_path: Path, act: Callable[[], None], telemetry: bool = False, on: str = "a") -> object:
    path = tmp_path / "plan.org"
    if not path.exists():
        path.write_text(PLAN)
    store = Telemetry.for_plan(path) if telemetry else None
    try:
        return Runner(
            load_plan(path), model=Saboteur(act, on), telemetry=store,
            options=RunOptions(max_parallel=1),
        ).run()  # fmt: skip
    finally:
        if store is not None:
            store.close()


def codes(report: object) -> list[str]:
    """The errors (the plan's own checks draw lint warnings that do not matter here)."""
    return [d.code for d in report.diagnostics if d.level == "error"]  # type: ignore[attr-defined]


def test_a_plan_replaced_by_a_directory_is_moved_aside_and_restored(tmp_path: Path) -> None:
    path = tmp_path / "plan.org"

    def replace_with_a_directory() -> None:
        path.unlink()
        (path / "inner").mkdir(parents=True)

    report = run(tmp_path, replace_with_a_directory)
    assert codes(report) == ["R003"]
    assert path.is_file() and "Task" not in path.read_text() and "* FAILED A" in path.read_text()
    rejected = control(path) / "rejected" / "plan.org.rejected-1"
    assert (rejected / "inner").is_dir()
    states = {t.id: t.state for t in report.tasks}  # type: ignore[attr-defined]
    assert states == {"a": "FAILED", "b": "DONE"}  # blamed: the only task running


def test_a_plan_replaced_by_a_symlink_is_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "plan.org"
    (tmp_path / "elsewhere.org").write_text("* DONE A\n")

    def replace_with_a_link() -> None:
        path.unlink()
        path.symlink_to("elsewhere.org")

    report = run(tmp_path, replace_with_a_link)
    assert codes(report) == ["R003"]
    assert not path.is_symlink() and path.read_text().startswith(HEAD)
    assert (tmp_path / "elsewhere.org").read_text() == "* DONE A\n"
    # the link kept aside still shows what it pointed to, from the rejected folder too
    rejected = control(path) / "rejected" / "plan.org.rejected-1"
    assert rejected.is_symlink() and rejected.read_text() == "* DONE A\n"


def test_squatted_rejected_names_are_skipped(tmp_path: Path) -> None:
    path = tmp_path / "plan.org"
    path.write_text(PLAN)
    rejected = control(path) / "rejected"
    rejected.mkdir(parents=True)
    (rejected / "plan.org.rejected-²").write_text("squat")
    (rejected / ("plan.org.rejected-" + "9" * 237)).write_text("squat")
    (rejected / "plan.org.rejected-1").mkdir()  # a name taken by a directory

    report = run(tmp_path, lambda: path.write_text("* DONE forged\n"))
    assert codes(report) == ["R003"]
    assert (rejected / "plan.org.rejected-2").read_text() == "* DONE forged\n"
    assert "* DONE forged" not in path.read_text()


@pytest.mark.parametrize("damage", ["truncated", "overwritten"])
def test_telemetry_damaged_mid_run_is_named(tmp_path: Path, damage: str) -> None:
    db = control(tmp_path / "plan.org") / "_telemetry.db"

    def damage_it() -> None:
        with open(db, "r+b") as handle:
            if damage == "truncated":
                handle.truncate(0)
            else:  # every byte, in place: the same inode, so no "replaced" to see
                handle.write(b"\xff" * db.stat().st_size)

    assert codes(run(tmp_path, lambda: None, telemetry=True)) == []  # rows on disk, checkpointed
    plan = tmp_path / "plan.org"
    plan.write_text(plan.read_text() + task("C", "c", "grep -q x c.txt"))
    report = run(tmp_path, damage_it, telemetry=True, on="c")
    assert "R005" in codes(report)
    states = {t.id: t.state for t in report.tasks}  # type: ignore[attr-defined]
    assert states["c"] == "DONE"  # the ledger and the plan carry the verdicts


def test_an_unwritable_plan_stops_the_run_cleanly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = plan_module.write_atomically

    def refuse(path: Path, text: str) -> None:
        if Path(path).name == "plan.org":
            raise PermissionError(13, "Permission denied", str(path))
        real(path, text)

    monkeypatch.setattr("groundskeeper.supervisor.plan_guard.write_atomically", refuse)
    report = run(tmp_path, lambda: None)
    assert codes(report) == ["R006"]
    message = report.diagnostics[-1].message  # type: ignore[attr-defined]
    assert "cannot write the plan" in message and "Permission denied" in message
    assert report.ok is False  # type: ignore[attr-defined]
    assert (tmp_path / "plan.org").read_text() == PLAN  # nothing half-written


# --- the same through the CLI: exit 2 and a message, never a traceback -----------------------


def resume(tmp_path: Path) -> object:
    script = tmp_path / "w.yaml"
    script.write_text("workers:\n  '*': [{say: DONE}]\n")
    return CliRunner().invoke(
        main, ["resume", str(tmp_path / "plan.org"), "--model", f"scripted:{script}"]
    )


def prepared(tmp_path: Path) -> Path:
    (tmp_path / "plan.org").write_text(PLAN)
    return control(tmp_path / "plan.org")


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda c: (c / "_telemetry.db").write_bytes(b"not sqlite" * 100), "telemetry database"),
        (
            lambda c: (
                __import__("sqlite3")
                .connect(c / "_telemetry.db")
                .execute("CREATE TABLE task_events (x)")
            ),
            "not groundskeeper's telemetry",
        ),
        (lambda c: (c / "run.lock").mkdir(), "run.lock: cannot open the run lock"),
        (lambda c: shutil.rmtree(c.parent) or c.parent.write_text("x"), "is not a directory"),
        (
            lambda c: shutil.rmtree(c.parent) or c.parent.symlink_to(c.parent.parent / "x"),
            "is a symlink",
        ),
        (lambda c: os.chmod(c.parent, 0o777), "can be written by others"),
    ],
    ids=[
        "corrupt-telemetry",
        "foreign-telemetry",
        "lock-directory",
        "control-file",
        "control-symlink",
        "control-world-writable",
    ],
)
def test_a_broken_control_plane_is_a_usage_error(
    tmp_path: Path, damage: Callable[[Path], object], message: str
) -> None:
    control_dir = prepared(tmp_path)
    control_dir.mkdir(parents=True)
    damage(control_dir)
    before = (tmp_path / "plan.org").read_text()
    result = resume(tmp_path)
    assert result.exit_code == 2, result.output  # type: ignore[attr-defined]
    assert message in result.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in result.output  # type: ignore[attr-defined]
    assert (tmp_path / "plan.org").read_text() == before


def test_a_ledger_lock_replaced_by_a_directory_stops_sealing(tmp_path: Path) -> None:
    control_dir = prepared(tmp_path)
    control_dir.mkdir(parents=True)
    (control_dir / "_steps.lock").mkdir()
    result = CliRunner().invoke(
        main, ["resume", str(tmp_path / "plan.org"), "--model", "scripted:/dev/null", "--json"]
    )
    assert result.exit_code == 2 or json.loads(result.stdout)["diagnostics"][0]["code"] == "R004"
    assert "Traceback" not in result.output


def test_a_plan_folder_that_cannot_take_a_control_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "plan.org").write_text(PLAN)
    real_mkdir = os.mkdir

    def read_only(path: object, *args: object, **kwargs: object) -> None:
        if str(path).endswith(".groundskeeper"):
            raise PermissionError(13, "Permission denied", str(path))
        real_mkdir(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "mkdir", read_only)
    result = resume(tmp_path)
    assert result.exit_code == 2  # type: ignore[attr-defined]
    assert "cannot create the control directory" in result.stderr  # type: ignore[attr-defined]
    assert "Permission denied" in result.stderr  # type: ignore[attr-defined]


def test_the_signing_key_is_out_of_reach_of_a_worker_when_home_is_in_the_workdir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plan under $HOME, the default home beneath it: `cat` of the key, through the shell
    and the file tools, by a plain path, a glob and a link, all meet nothing."""
    home = tmp_path / ".config" / "groundskeeper"
    monkeypatch.setenv("GROUNDSKEEPER_HOME", str(home))
    (tmp_path / "plan.org").write_text(
        HEAD + task("Steal", "steal", "grep -q 'PRIVATE KEY-' loot.txt")
    )
    script = tmp_path / "w.yaml"
    attempts = [
        "cat .config/groundskeeper/signing_key.pem > loot.txt",
        "cat .config/*/signing_key.pem > loot.txt",
        "cd .config && cat groundskeeper/signing_key.pem > ../loot.txt",
        "ln -s .config/groundskeeper k; cat k/signing_key.pem > loot.txt",
        "grep -r BEGIN . > loot.txt",
    ]
    script.write_text(
        "workers:\n  steal:\n"
        + "".join(f"    - {{tool: sh, input: {{cmd: '{c}'}}}}\n" for c in attempts)
        + "    - {tool: read_file, input: {path: .config/groundskeeper/signing_key.pem}}\n"
        + "    - say: DONE\n"
    )
    result = CliRunner().invoke(
        main, ["resume", str(tmp_path / "plan.org"), "--model", f"scripted:{script}", "--json"]
    )
    assert result.exit_code == 1, result.output
    assert (home / "signing_key.pem").exists()  # the run made and used it
    loot = tmp_path / "loot.txt"
    assert not loot.exists() or "PRIVATE KEY" not in loot.read_text()
    (steal,) = json.loads(result.stdout)["tasks"]
    assert steal["state"] == "FAILED"
