"""Adversarial rung 3 and the engine: look-alike worlds are refused, and nothing a component or
a host function does at run time reads as success or escapes as an exception."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import wasmtime

from groundskeeper.conformance.engine import EngineLimits, Session, SessionHost, run_component
from groundskeeper.conformance.rules import ComponentUnreadable, check_engine, dock
from tests.components import wasm

MEMORY_AND_REALLOC = """
    (memory (export "memory") 1)
    (global $next (mut i32) (i32.const 4096))
    (func (export "realloc") (param i32 i32 i32 i32) (result i32)
      (local $ptr i32)
      (local.set $ptr (global.get $next))
      (global.set $next (i32.add (global.get $next) (local.get 3)))
      (local.get $ptr))
"""

LIFT = """(canon lift (core func $m "run")
      (memory (core memory $m "memory")) (realloc (core func $m "realloc")))"""


def returning(ptr: int, length: int, data: str = "") -> bytes:
    """A conforming component whose `run` answers the bytes at (ptr, length)."""
    return bytes(
        wasmtime.wat2wasm(
            f"""(component
  (core module $M {MEMORY_AND_REALLOC}
    {data}
    (func (export "run") (param i32 i32) (result i32)
      (i32.store (i32.const 16) (i32.const {ptr}))
      (i32.store (i32.const 20) (i32.const {length}))
      (i32.const 16)))
  (core instance $m (instantiate $M))
  (func (export "run") (param "input" string) (result string) {LIFT}))"""
        )
    )


def host(tmp_path: Path) -> SessionHost:
    return SessionHost(Session("run-1", tmp_path, None))


# --- look-alike worlds -------------------------------------------------------------------------


def test_run_inside_an_exported_instance_is_not_the_run_export() -> None:
    component = wasmtime.wat2wasm(
        f"""(component
  (core module $M {MEMORY_AND_REALLOC}
    (func (export "run") (param i32 i32) (result i32) (i32.const 16)))
  (core instance $m (instantiate $M))
  (func $run (param "input" string) (result string) {LIFT})
  (instance $api (export "run" (func $run)))
  (export "groundskeeper:engine/api" (instance $api)))"""
    )
    assert [d.code for d in check_engine(bytes(component))] == ["C002"]


def test_dock_functions_imported_as_an_interface_are_undeclared() -> None:
    component = wasmtime.wat2wasm(
        f"""(component
  (import "groundskeeper:engine/dock" (instance
    (export "session-info" (func (result string)))))
  (core module $M {MEMORY_AND_REALLOC}
    (func (export "run") (param i32 i32) (result i32) (i32.const 16)))
  (core instance $m (instantiate $M))
  (func (export "run") (param "input" string) (result string) {LIFT}))"""
    )
    found = check_engine(bytes(component))
    assert [(d.code, d.scope) for d in found] == [("C004", "groundskeeper:engine/dock")]


@pytest.mark.parametrize(
    "name",
    ["wasi-evil", "wasix:io/streams", "wasi-http:x/y", "wasii:cli/env", "evil:wasi/streams"],
)
def test_wasi_prefix_spoofs_are_undeclared(name: str) -> None:
    kind = "(func (result string))" if ":" not in name else "(instance)"
    component = wasmtime.wat2wasm(
        f"""(component
  (import "{name}" {kind})
  (core module $M {MEMORY_AND_REALLOC}
    (func (export "run") (param i32 i32) (result i32) (i32.const 16)))
  (core instance $m (instantiate $M))
  (func (export "run") (param "input" string) (result string) {LIFT}))"""
    )
    assert [(d.code, d.scope) for d in check_engine(bytes(component))] == [("C004", name)]


def test_an_unknown_wasi_interface_conforms_but_is_never_provided(tmp_path: Path) -> None:
    component = bytes(
        wasmtime.wat2wasm(
            f"""(component
  (import "wasi:evil/backdoor@0.2.0" (instance
    (export "open" (func (param "path" string) (result string)))))
  (core module $M {MEMORY_AND_REALLOC}
    (func (export "run") (param i32 i32) (result i32) (i32.const 16)))
  (core instance $m (instantiate $M))
  (func (export "run") (param "input" string) (result string) {LIFT}))"""
        )
    )
    assert check_engine(component) == []
    result = run_component(component, "x", host(tmp_path))
    assert (result.ok, result.output, result.instantiated) == (False, None, False)
    assert [d.code for d in result.diagnostics] == ["E005"]


# --- what a guest hands back ---------------------------------------------------------------


def test_invalid_utf8_from_the_guest_is_a_failure(tmp_path: Path) -> None:
    component = returning(64, 3, '(data (i32.const 64) "\\ff\\fe\\fd")')
    result = run_component(component, "x", host(tmp_path))
    assert (result.ok, result.output) == (False, None)
    assert [d.code for d in result.diagnostics] == ["E001"]


def test_a_string_pointing_outside_memory_is_a_failure(tmp_path: Path) -> None:
    result = run_component(returning(65530, 100), "x", host(tmp_path))
    assert (result.ok, result.output) == (False, None)
    assert [d.code for d in result.diagnostics] == ["E001"]


def test_a_huge_string_over_the_output_limit_is_refused(tmp_path: Path) -> None:
    limits = EngineLimits(output=1000)
    result = run_component(returning(1024, 60000), "x", host(tmp_path), limits)
    assert (result.ok, result.output) == (False, None)
    assert [d.code for d in result.diagnostics] == ["E004"]


def test_a_huge_input_is_carried_not_crashed(tmp_path: Path) -> None:
    result = run_component(wasm("echo"), "é" * 20_000, host(tmp_path))
    assert (result.ok, result.output) == (True, "é" * 20_000)


# --- host functions that fail ----------------------------------------------------------------


class RaisingHost:
    def __init__(self, error: BaseException) -> None:
        self.error = error

    def session_info(self) -> str:
        raise self.error

    def vfs_query(self, query: str) -> str:
        raise self.error

    def run_command(self, cmdline: str) -> str:
        raise self.error


@pytest.mark.parametrize("error", [RuntimeError("host bug"), ValueError("x"), KeyError("k")])
def test_a_host_function_exception_is_a_failure_not_a_crash(error: Exception) -> None:
    result = run_component(wasm("dock_all"), "x", RaisingHost(error))
    assert (result.ok, result.output, result.instantiated) == (False, None, True)
    assert [d.code for d in result.diagnostics] == ["E001"]
    assert "host" in result.diagnostics[0].message


def test_a_shell_that_raises_reaches_the_component_as_an_error(tmp_path: Path) -> None:
    def broken(cmdline: str, workdir: Path) -> object:
        raise RuntimeError("sandbox host bug")

    session_host = SessionHost(Session("run-1", tmp_path, None), shell=broken)
    answer = session_host.run_command("cat x")
    assert answer.startswith("error: run-command: `cat x` could not run")


def test_a_shell_answering_garbage_reaches_the_component_as_an_error(tmp_path: Path) -> None:
    session_host = SessionHost(Session("run-1", tmp_path, None), shell=lambda c, w: None)
    assert session_host.run_command("cat x").startswith("error: run-command:")


def test_a_host_answer_that_is_not_a_string_is_a_failure() -> None:
    class NumberHost(RaisingHost):
        def session_info(self) -> str:
            return 42  # type: ignore[return-value]

    result = run_component(wasm("dock_all"), "x", NumberHost(RuntimeError()))
    assert (result.ok, result.output) == (False, None)


# --- docking ---------------------------------------------------------------------------------


def test_dock_refuses_a_look_alike_and_copies_nothing(tmp_path: Path) -> None:
    source = tmp_path / "evil.wasm"
    source.write_bytes(
        wasmtime.wat2wasm(
            f"""(component
  (import "wasi-evil" (func (result string)))
  (core module $M {MEMORY_AND_REALLOC}
    (func (export "run") (param i32 i32) (result i32) (i32.const 16)))
  (core instance $m (instantiate $M))
  (func (export "run") (param "input" string) (result string) {LIFT}))"""
        )
    )
    result = dock(source, tmp_path / "components")
    assert (result.ok, result.destination) == (False, None)
    assert not (tmp_path / "components" / "evil.wasm").exists()


def test_a_host_exception_during_instantiation_is_a_failure() -> None:
    source = (Path(__file__).parent / "components" / "start_calls_host.wat").read_text("utf-8")
    conforming = source.replace(
        '(func (export "run") (param i32) (result i32) (local.get 0))',
        '(func (export "run") (param i32 i32) (result i32) (i32.const 0))',
    ).replace(
        """(func (export "run") (param "input" u32) (result u32)
    (canon lift (core func $main "run"))))""",
        """(func (export "run") (param "input" string) (result string)
    (canon lift (core func $main "run")
      (memory (core memory $memory "memory")) (realloc (core func $memory "realloc")))))""",
    )
    component = bytes(wasmtime.wat2wasm(conforming))
    assert check_engine(component) == []
    result = run_component(component, "x", RaisingHost(RuntimeError("host bug")))
    assert (result.ok, result.output, result.instantiated) == (False, None, False)
    assert [d.code for d in result.diagnostics] == ["E001"]
    assert "`session-info` failed: RuntimeError: host bug" in result.diagnostics[0].message


def test_input_that_is_not_unicode_is_refused(tmp_path: Path) -> None:
    result = run_component(wasm("echo"), "bad \udcff byte", host(tmp_path))
    assert (result.ok, result.output) == (False, None)
    assert [d.code for d in result.diagnostics] == ["E005"]


def test_a_host_answer_with_a_lone_surrogate_is_a_failure(tmp_path: Path) -> None:
    class SurrogateHost(RaisingHost):
        def session_info(self) -> str:
            return "workdir /tmp/\udcff"

    result = run_component(wasm("dock_all"), "x", SurrogateHost(RuntimeError()))
    assert (result.ok, result.output) == (False, None)
    assert "`session-info` failed: UnicodeEncodeError" in result.diagnostics[0].message


def test_a_host_failure_never_leaks_into_another_run(tmp_path: Path) -> None:
    """wasmtime-py keeps one process-wide slot for a host function's exception; a failure in
    one run must not surface as the answer of the next (or a parallel) run."""
    for _ in range(3):
        broken = run_component(wasm("dock_all"), "x", RaisingHost(RuntimeError("run A")))
        assert "run A" in broken.diagnostics[0].message
        spinning = run_component(wasm("limits"), "spin", host(tmp_path), EngineLimits(0.2))
        assert [d.code for d in spinning.diagnostics] == ["E003"]
        honest = run_component(wasm("echo"), "hi", host(tmp_path))
        assert (honest.ok, honest.output) == (True, "hi")


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_component_that_is_not_a_regular_file_is_unreadable_not_a_hang(
    tmp_path: Path, kind: str
) -> None:
    if kind == "fifo":
        path = tmp_path / "c.wasm"
        os.mkfifo(path)
    else:
        path = Path("/dev/zero")
    with pytest.raises(ComponentUnreadable, match="not a regular file"):
        check_engine(path)
    result = dock(path, tmp_path / "components")
    assert (result.ok, [d.code for d in result.diagnostics]) == (False, ["D001"])


@pytest.mark.parametrize(
    "limits",
    [
        EngineLimits(deadline=float("nan")),
        EngineLimits(deadline=float("inf")),
        EngineLimits(deadline=1e300),
        EngineLimits(deadline=0),
        EngineLimits(fuel=0),
        EngineLimits(fuel=2**70),
        EngineLimits(memory=0),
    ],
)
def test_unusable_limits_refuse_to_run(tmp_path: Path, limits: EngineLimits) -> None:
    result = run_component(wasm("echo"), "hi", host(tmp_path), limits)
    assert (result.ok, result.output, result.instantiated) == (False, None, False)
    assert [d.code for d in result.diagnostics] == ["E005"]
    assert "unusable limits" in result.diagnostics[0].message
