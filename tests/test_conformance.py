"""Rung 3: conformance to groundskeeper:engine, upgrades and docking."""

from __future__ import annotations

import hashlib
import random
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from groundskeeper.conformance.rules import (
    ComponentUnreadable,
    check_engine,
    check_upgrade,
    dock,
    engine_world,
    inspect_component,
)
from groundskeeper.diagnostics import Diagnostic
from tests.components import HERE, wasm, world_component, write_wasm

DOCK_FUNCTIONS = {"session-info": 0, "vfs-query": 1, "run-command": 1}


def codes(diagnostics: list[Diagnostic]) -> list[tuple[str, str]]:
    return [(d.code, d.scope) for d in diagnostics]


# --- the world --------------------------------------------------------------------------------


def test_world_is_read_from_the_shipped_wit_file() -> None:
    world = engine_world()
    assert world.name == "groundskeeper:engine@0.1.0"
    assert world.imports == {
        "session-info": "func() -> string",
        "vfs-query": "func(string) -> string",
        "run-command": "func(string) -> string",
    }
    assert world.exports == {"run": "func(string) -> string"}


# --- refusals first ---------------------------------------------------------------------------


def test_empty_file_is_not_a_component(tmp_path: Path) -> None:
    path = tmp_path / "empty.wasm"
    path.write_bytes(b"")
    [diagnostic] = check_engine(path)
    assert (diagnostic.code, diagnostic.scope, diagnostic.level) == ("C001", "empty.wasm", "error")
    assert diagnostic.message == "not a component: the file is empty"


def test_random_bytes_are_not_a_component(tmp_path: Path) -> None:
    path = tmp_path / "junk.wasm"
    path.write_bytes(random.Random(6).randbytes(4096))
    [diagnostic] = check_engine(path)
    assert diagnostic.code == "C001"
    assert "not WebAssembly" in diagnostic.message


def test_core_module_is_not_a_component(tmp_path: Path) -> None:
    [diagnostic] = check_engine(write_wasm("core_module", tmp_path))
    assert (diagnostic.code, diagnostic.scope) == ("C001", "core_module.wasm")
    assert "core WebAssembly module" in diagnostic.message


def test_truncated_component_is_not_a_component() -> None:
    data = wasm("dock_all")
    [diagnostic] = check_engine(data[: len(data) // 2])
    assert (diagnostic.code, diagnostic.scope) == ("C001", "<bytes>")
    assert "invalid or truncated component" in diagnostic.message


def test_component_header_followed_by_junk_is_not_a_component() -> None:
    [diagnostic] = check_engine(b"\0asm\x0d\0\x01\0" + random.Random(1).randbytes(200))
    assert diagnostic.code == "C001"


def test_text_that_is_not_wat_is_not_a_component() -> None:
    [diagnostic] = check_engine(b"(component (this is not wat))")
    assert diagnostic.code == "C001"
    assert "WAT text does not parse" in diagnostic.message


@settings(max_examples=60, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise_and_are_refused(data: bytes) -> None:
    diagnostics = check_engine(data)
    # the bare 8-byte component header is a valid, empty component: it lacks `run` (C002)
    expected = ["C002"] if data == b"\0asm\x0d\0\x01\0" else ["C001"]
    assert [d.code for d in diagnostics] == expected
    assert all(d.level == "error" for d in diagnostics)


def test_an_empty_component_lacks_run() -> None:
    [diagnostic] = check_engine(b"\0asm\x0d\0\x01\0")
    assert (diagnostic.code, diagnostic.scope) == ("C002", "run")
    assert "it exports nothing" in diagnostic.message


def test_extra_import_is_refused_and_named() -> None:
    [diagnostic] = check_engine(wasm("extra_import"))
    assert (diagnostic.code, diagnostic.scope) == ("C004", "read-secret")
    assert diagnostic.message == (
        "undeclared Dock import `read-secret` (not in groundskeeper:engine)"
    )


def test_missing_run_with_another_export_is_a_different_world() -> None:
    [diagnostic] = check_engine(wasm("other_world"))
    assert (diagnostic.code, diagnostic.scope) == ("C002", "run")
    assert diagnostic.message.startswith("missing required export `run`")
    assert "`greet`" in diagnostic.message


def test_run_with_the_wrong_type_is_refused() -> None:
    [diagnostic] = check_engine(wasm("run_wrong_type"))
    assert (diagnostic.code, diagnostic.scope) == ("C003", "run")
    assert "expected `func(string) -> string`, found `func(string) -> u32`" in diagnostic.message


def test_dock_import_with_the_wrong_type_is_refused() -> None:
    [diagnostic] = check_engine(wasm("dock_wrong_type"))
    assert (diagnostic.code, diagnostic.scope) == ("C005", "vfs-query")
    assert "expected `func(string) -> string`, found `func() -> string`" in diagnostic.message


def test_every_finding_is_reported_not_just_the_first() -> None:
    data = world_component({"session-info": 1, "spy": 0}, {"greet": 1})
    assert sorted(codes(check_engine(data))) == [
        ("C002", "run"),
        ("C004", "spy"),
        ("C005", "session-info"),
    ]


def test_unreadable_paths_raise_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(ComponentUnreadable, match="no such file"):
        check_engine(tmp_path / "missing.wasm")
    with pytest.raises(ComponentUnreadable, match="is a directory"):
        check_engine(tmp_path)


# --- conforming components --------------------------------------------------------------------


def test_component_calling_all_dock_functions_conforms() -> None:
    assert check_engine(wasm("dock_all")) == []
    _component, interface, diagnostics = inspect_component(wasm("dock_all"))
    assert diagnostics == []
    assert [(i["name"], i["kind"], i["type"]) for i in interface.imports] == [
        ("session-info", "func", "func() -> string"),
        ("vfs-query", "func", "func(string) -> string"),
        ("run-command", "func", "func(string) -> string"),
    ]
    assert interface.imports[1]["params"] == [{"name": "query", "type": "string"}]
    assert interface.exports == [
        {
            "name": "run",
            "kind": "func",
            "type": "func(string) -> string",
            "params": [{"name": "input", "type": "string"}],
            "result": "string",
        }
    ]


def test_component_without_imports_conforms() -> None:
    assert check_engine(wasm("echo")) == []


def test_wasi_import_is_always_permitted() -> None:
    assert check_engine(wasm("wasi_env")) == []
    _c, interface, _d = inspect_component(wasm("wasi_env"))
    [wasi] = interface.imports
    assert wasi["name"] == "wasi:cli/environment@0.2.0"
    assert wasi["type"] == "instance { get-arguments: func() -> list<string> }"


def test_parameter_names_are_not_compared() -> None:
    # echo.wat names run's parameter `text`; world_component names every parameter `pN`
    assert check_engine(wasm("echo")) == []
    assert check_engine(world_component(DOCK_FUNCTIONS, {"run": 1})) == []


def test_wat_text_files_are_accepted() -> None:
    assert check_engine(HERE / "dock_all.wat") == []
    assert codes(check_engine(HERE / "extra_import.wat")) == [("C004", "read-secret")]


# --- upgrades ---------------------------------------------------------------------------------


def test_upgrade_removing_an_export_is_refused() -> None:
    old = world_component({}, {"run": 1, "describe": 0})
    new = world_component({}, {"run": 1})
    [diagnostic] = check_upgrade(old, new)
    assert (diagnostic.code, diagnostic.scope) == ("U001", "describe")
    assert diagnostic.message == "export `describe` was removed (exports may grow, never shrink)"


def test_upgrade_adding_an_import_is_refused() -> None:
    old = world_component({"session-info": 0}, {"run": 1})
    new = world_component({"session-info": 0, "run-command": 1}, {"run": 1})
    [diagnostic] = check_upgrade(old, new)
    assert (diagnostic.code, diagnostic.scope) == ("U003", "run-command")
    assert diagnostic.message == "import `run-command` was added (imports may shrink, never grow)"


def test_upgrade_adding_an_export_is_accepted() -> None:
    old = world_component({}, {"run": 1})
    new = world_component({}, {"run": 1, "describe": 0})
    assert check_upgrade(old, new) == []


def test_upgrade_dropping_an_import_is_accepted() -> None:
    old = world_component(DOCK_FUNCTIONS, {"run": 1})
    new = world_component({"vfs-query": 1}, {"run": 1})
    assert check_upgrade(old, new) == []


def test_upgrade_changing_an_export_type_is_refused() -> None:
    old = world_component({}, {"run": 1, "describe": 0})
    new = world_component({}, {"run": 1, "describe": 1})
    [diagnostic] = check_upgrade(old, new)
    assert (diagnostic.code, diagnostic.scope) == ("U002", "describe")
    assert "was `func() -> string`, now `func(string) -> string`" in diagnostic.message


def test_upgrade_changing_an_import_type_is_refused() -> None:
    old = world_component({"session-info": 0}, {"run": 1})
    new = world_component({"session-info": 1}, {"run": 1})
    assert codes(check_upgrade(old, new)) == [("U004", "session-info")]


def test_upgrade_reports_every_violation() -> None:
    old = world_component({}, {"run": 1, "a": 0, "b": 0})
    new = world_component({"session-info": 0}, {"run": 0, "b": 0})
    assert codes(check_upgrade(old, new)) == [
        ("U002", "run"),
        ("U001", "a"),
        ("U003", "session-info"),
    ]


def test_upgrade_from_or_to_a_non_component_is_refused() -> None:
    [diagnostic] = check_upgrade(b"", wasm("echo"))
    assert diagnostic.code == "C001"
    assert diagnostic.message.startswith("old component is not a component")
    [diagnostic] = check_upgrade(wasm("echo"), wasm("core_module"))
    assert diagnostic.message.startswith("new component is not a component")


# --- docking ----------------------------------------------------------------------------------


def test_dock_refuses_a_non_conforming_component_and_copies_nothing(tmp_path: Path) -> None:
    source = write_wasm("extra_import", tmp_path)
    into = tmp_path / "components"
    result = dock(source, into)
    assert result.ok is False
    assert result.destination is None
    assert codes(result.diagnostics) == [("C004", "read-secret")]
    assert result.sha256 == hashlib.sha256(source.read_bytes()).hexdigest()
    assert not (into / "extra_import.wasm").exists()


def test_dock_refuses_junk_and_a_missing_file(tmp_path: Path) -> None:
    junk = tmp_path / "junk.wasm"
    junk.write_bytes(b"\x00\x01\x02")
    into = tmp_path / "components"
    assert codes(dock(junk, into).diagnostics) == [("C001", "junk.wasm")]
    missing = dock(tmp_path / "nope.wasm", into)
    assert (missing.ok, missing.sha256) == (False, "")
    assert codes(missing.diagnostics) == [("D001", "nope.wasm")]
    assert not into.exists()


def test_dock_copies_a_conforming_component(tmp_path: Path) -> None:
    source = write_wasm("dock_all", tmp_path)
    into = tmp_path / "plan" / "components"
    result = dock(source, into)
    assert result.ok is True
    assert result.diagnostics == []
    assert result.destination == into / "dock_all.wasm"
    assert (into / "dock_all.wasm").read_bytes() == source.read_bytes()
    assert result.sha256 == hashlib.sha256(source.read_bytes()).hexdigest()
    assert result.replaced is None
    assert [i["name"] for i in result.interface["imports"]] == list(DOCK_FUNCTIONS)
    assert [e["name"] for e in result.interface["exports"]] == ["run"]
    # no temp files left behind; the lock file serialises docks
    assert sorted(p.name for p in into.iterdir()) == [".dock.lock", "dock_all.wasm"]


def test_dock_upgrade_that_removes_an_export_is_refused(tmp_path: Path) -> None:
    into = tmp_path / "components"
    v1 = tmp_path / "v1" / "tool.wasm"
    v2 = tmp_path / "v2" / "tool.wasm"
    v1.parent.mkdir()
    v2.parent.mkdir()
    v1.write_bytes(world_component({}, {"run": 1, "describe": 0}))
    v2.write_bytes(world_component({}, {"run": 1}))
    assert dock(v1, into).ok is True
    result = dock(v2, into)
    assert result.ok is False
    assert result.destination is None
    assert codes(result.diagnostics) == [("U001", "describe")]
    assert (into / "tool.wasm").read_bytes() == v1.read_bytes()  # the old one stays


def test_dock_upgrade_that_adds_an_export_replaces_the_old(tmp_path: Path) -> None:
    into = tmp_path / "components"
    v1 = tmp_path / "v1" / "tool.wasm"
    v2 = tmp_path / "v2" / "tool.wasm"
    v1.parent.mkdir()
    v2.parent.mkdir()
    v1.write_bytes(world_component({"session-info": 0}, {"run": 1}))
    v2.write_bytes(world_component({}, {"run": 1, "describe": 0}))
    first = dock(v1, into)
    second = dock(v2, into)
    assert second.ok is True
    assert second.replaced == first.sha256
    assert (into / "tool.wasm").read_bytes() == v2.read_bytes()


def test_docking_the_same_bytes_again_is_accepted(tmp_path: Path) -> None:
    source = write_wasm("echo", tmp_path)
    into = tmp_path / "components"
    first = dock(source, into)
    again = dock(source, into)
    assert again.ok is True
    assert again.replaced == first.sha256 == again.sha256


def test_dock_into_an_unwritable_place_is_a_diagnostic(tmp_path: Path) -> None:
    source = write_wasm("echo", tmp_path)
    blocker = tmp_path / "components"
    blocker.write_text("a file where the directory should be")
    result = dock(source, blocker)
    assert result.ok is False
    assert codes(result.diagnostics) == [("D002", "echo.wasm")]


def test_dock_result_json_has_every_key(tmp_path: Path) -> None:
    result = dock(write_wasm("run_wrong_type", tmp_path), tmp_path / "components")
    document = result.to_json()
    assert sorted(document) == [
        "component",
        "destination",
        "diagnostics",
        "exports",
        "imports",
        "ok",
        "replaced",
        "sha256",
    ]
    assert document["ok"] is False
    assert document["destination"] is None
    assert document["diagnostics"][0]["code"] == "C003"


def test_concurrent_docks_of_one_name_cannot_both_win(tmp_path: Path) -> None:
    # A and B are not upgrades of each other (each drops the other's extra export): whichever
    # docks first, the other must be refused; never both accepted by checking the same old file.
    versions = {
        "a": world_component({}, {"run": 1, "only-a": 0}),
        "b": world_component({}, {"run": 1, "only-b": 0}),
    }
    for trial in range(12):
        into = tmp_path / f"trial-{trial}" / "components"
        sources = []
        for name, data in versions.items():
            source = tmp_path / f"trial-{trial}" / name / "tool.wasm"
            source.parent.mkdir(parents=True)
            source.write_bytes(data)
            sources.append(source)
        barrier = threading.Barrier(len(sources))
        results: list[bool] = []

        def dock_one(
            source: Path, into: Path, barrier: threading.Barrier, results: list[bool]
        ) -> None:
            barrier.wait()
            results.append(dock(source, into).ok)

        threads = [
            threading.Thread(target=dock_one, args=(s, into, barrier, results)) for s in sources
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(results) == [False, True], f"trial {trial}"
