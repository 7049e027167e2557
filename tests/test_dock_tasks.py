"""`:dock:` cannot be side-stepped: the registry lives in the control directory, an upgrade
is judged against the sealed baseline even when the bytes are equal, and `:dock:` is
honoured on a parent and on a leaf without a check."""

from __future__ import annotations

from pathlib import Path

from tests.components import world_component, write_wasm
from tests.test_cli_run import control, keywords, resume, setup, states, steps, task

COPY = (
    "workers:\n  {id}:\n    - {{tool: sh, input: {{cmd: 'cp {src} comp.wasm'}}}}\n    - say: DONE\n"
)


def test_a_leaf_without_a_check_still_docks_and_fails_on_junk(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("Build", "build", dock="comp.wasm"),
        "workers:\n  build:\n    - {tool: write_file, input: {path: comp.wasm, content: junk}}\n"
        "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    (row,) = doc["tasks"]
    assert row["state"] == "FAILED"
    assert row["reason"].startswith("conformance: `comp.wasm` did not dock")
    assert [d["ok"] for d in steps(plan, "dock")] == [False]


def test_a_leaf_without_a_check_docks_a_conforming_component(tmp_path: Path) -> None:
    write_wasm("echo", tmp_path, "echo.wasm")
    plan, script = setup(
        tmp_path, task("Build", "build", dock="comp.wasm"), COPY.format(id="build", src="echo.wasm")
    )
    result, doc = resume(plan, script)
    assert result.exit_code == 0, doc
    assert states(doc) == {"build": ("DONE", 1, False)}
    assert (control(plan) / "components" / "comp.wasm").read_bytes() == (
        tmp_path / "echo.wasm"
    ).read_bytes()


def test_a_parent_with_a_dock_is_failed_when_its_artifact_does_not_dock(tmp_path: Path) -> None:
    body = "* TODO Ship\n  :PROPERTIES:\n  :ID: ship\n  :dock: comp.wasm\n  :END:\n" + task(
        "Build", "build", "test -s comp.wasm", 2
    )
    plan, script = setup(
        tmp_path,
        body,
        "workers:\n  build:\n    - {tool: write_file, input: {path: comp.wasm, content: junk}}\n"
        "    - say: DONE\n",
    )
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    assert states(doc)["build"][0] == "DONE"
    ship = next(t for t in doc["tasks"] if t["id"] == "ship")
    assert ship["state"] == "FAILED" and ship["reason"].startswith("conformance:")
    assert keywords(plan) == {"ship": "FAILED", "build": "DONE"}


def swapped_registry(tmp_path: Path) -> tuple[Path, Path, bytes]:
    """Run 1 docks echo.wasm as comp.wasm; then something outside the sandbox swaps the
    registry's copy for another conforming component (`other`)."""
    write_wasm("echo", tmp_path, "echo.wasm")
    other = world_component({}, {"run": 1, "describe": 0})
    (tmp_path / "other.wasm").write_bytes(other)
    plan, script = setup(
        tmp_path,
        task("Build", "build", "test -s comp.wasm", dock="comp.wasm"),
        COPY.format(id="build", src="echo.wasm"),
    )
    assert resume(plan, script)[0].exit_code == 0
    (control(plan) / "components" / "comp.wasm").write_bytes(other)
    return plan, script, other


def test_an_upgrade_is_judged_against_the_sealed_baseline(tmp_path: Path) -> None:
    plan, _, _ = swapped_registry(tmp_path)
    script = tmp_path / "again.yaml"
    script.write_text(COPY.format(id="again", src="echo.wasm"))
    plan.write_text(
        plan.read_text() + task("Again", "again", "test -s comp.wasm", dock="comp.wasm")
    )
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    again = next(t for t in doc["tasks"] if t["id"] == "again")
    assert again["state"] == "FAILED"
    assert "is not the sealed baseline" in again["reason"]


def test_equal_bytes_do_not_excuse_a_swapped_registry(tmp_path: Path) -> None:
    plan, _, other = swapped_registry(tmp_path)
    script = tmp_path / "again.yaml"
    script.write_text(COPY.format(id="again", src="other.wasm"))  # the very bytes swapped in
    plan.write_text(
        plan.read_text() + task("Again", "again", "test -s comp.wasm", dock="comp.wasm")
    )
    result, doc = resume(plan, script)
    assert result.exit_code == 1
    again = next(t for t in doc["tasks"] if t["id"] == "again")
    assert "is not the sealed baseline" in again["reason"]
    assert (control(plan) / "components" / "comp.wasm").read_bytes() == other  # untouched


def test_the_registry_is_out_of_the_workers_reach(tmp_path: Path) -> None:
    write_wasm("echo", tmp_path, "echo.wasm")
    (tmp_path / "other.wasm").write_bytes(world_component({}, {"run": 1, "describe": 0}))
    plan, script = setup(
        tmp_path,
        task("Build", "build", "test -s comp.wasm", dock="comp.wasm")
        + task("Sneak", "sneak", "test -s other.wasm"),
        COPY.format(id="build", src="echo.wasm")
        + "  sneak:\n    - {tool: sh, input: {cmd: 'cp other.wasm .groundskeeper/plan.org/"
        "components/comp.wasm'}}\n    - say: DONE\n",
    )
    result, doc = resume(plan, script, "--max-parallel", "1")
    assert result.exit_code == 0, doc
    sneak = [c for c in steps(plan, "tool-call") if c["task_id"] == "sneak"]
    assert [c["status"] for c in sneak] == ["exit 1"]
    assert (control(plan) / "components" / "comp.wasm").read_bytes() == (
        tmp_path / "echo.wasm"
    ).read_bytes()
