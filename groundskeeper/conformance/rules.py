"""Rung 3: does a WebAssembly component fit the `groundskeeper:engine` world, and may it dock?

This module owns the conformance check, the upgrade check and docking (copying a component
into the engine's component directory). It does not run components: `engine.py` does.

Types come from `wasmtime.component` inspection with the same engine configuration the
engine runs components with (no external binary). Types are compared structurally: parameter
and result types count, parameter names do not. Any import named `wasi:*` is always allowed.

Diagnostic codes (stable; `scope` is the file name for C001/D00x, otherwise the import or
export name):

====  =================  ==============================================================
C001  not_a_component    empty file, junk, a core module, WAT that does not parse, a
                         truncated or invalid component
C002  missing_run        ``missing required export `run` ``
C003  run_wrong_type     `run` is not ``func(string) -> string``
C004  undeclared_import  ``undeclared Dock import `X` (not in groundskeeper:engine)``
C005  dock_wrong_type    a Dock import (session-info, vfs-query, run-command) has the
                         wrong type
U001  export_removed     upgrade: an export of the old component is gone
U002  export_changed     upgrade: an export changed type
U003  import_added       upgrade: the new component imports something the old did not
U004  import_changed     upgrade: an import changed type
D001  unreadable         dock: the component file cannot be read
D002  write_failed       dock: the component directory cannot be written
D003  not_baseline       dock: the docked file is not the one the plan's ledger sealed
====  =================  ==============================================================

`dock(component, into)` is the one entry point for every path by which a component docks
(the CLI and the runner's `:dock:` tasks): it never raises for bad input, copies atomically
(temp file + fsync + rename) and copies nothing unless the result is `ok`. Docks into one
directory are serialised by an advisory lock file (`.dock.lock`) there.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import re
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import wasmtime
from wasmtime import component as wc

from groundskeeper.diagnostics import Diagnostic, has_errors
from groundskeeper.errors import GroundskeeperError, UsageError
from groundskeeper.regular_file import NotARegularFileError, read_regular_file

__all__ = [
    "RUN_EXPORT",
    "WORLD_NAME",
    "ComponentUnreadable",
    "DockResult",
    "Interface",
    "Source",
    "World",
    "check_engine",
    "check_interface",
    "check_upgrade",
    "component_engine",
    "dock",
    "engine_world",
    "inspect_component",
    "read_component",
]

WORLD_NAME = "groundskeeper:engine@0.1.0"
RUN_EXPORT = "run"

LOCK_NAME = ".dock.lock"  # in the component directory; serialises docks into it

_CORE_HEADER = b"\0asm\x01\0\0\0"
_COMPONENT_HEADER = b"\0asm\x0d\0\x01\0"

Source = str | os.PathLike[str] | bytes


class ComponentUnreadable(UsageError):
    """The component file cannot be read at all (missing, a directory, no permission)."""


class WorldSyntaxError(GroundskeeperError):
    """The shipped `engine.wit` uses WIT this module does not understand (a packaging bug)."""


# ---------------------------------------------------------------------------------------------
# The world, read from the WIT file shipped with the package (the single source of truth).


@dataclass(frozen=True, slots=True)
class World:
    """A world's imports and exports: name → structural type, e.g. `func(string) -> string`."""

    name: str
    imports: dict[str, str]
    exports: dict[str, str]


_WIT_PACKAGE = re.compile(r"^package\s+([\w:.@-]+)\s*;$")
_WIT_ITEM = re.compile(
    r"^(import|export)\s+([a-z][a-z0-9-]*)\s*:\s*func\((.*?)\)\s*(?:->\s*(.+?))?\s*;$"
)
_WIT_PARAM = re.compile(r"^[a-z][a-z0-9-]*\s*:\s*(.+)$")


@functools.cache
def engine_world() -> World:
    """Parse the shipped `groundskeeper/wit/engine.wit` (a WIT subset: top-level func items)."""
    text = resources.files("groundskeeper").joinpath("wit/engine.wit").read_text("utf-8")
    package = ""
    imports: dict[str, str] = {}
    exports: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.split("//", 1)[0].strip()
        if not line or line.startswith("world ") or line == "}":
            continue
        if m := _WIT_PACKAGE.match(line):
            package = m.group(1)
            continue
        m = _WIT_ITEM.match(line)
        if m is None:
            raise WorldSyntaxError(f"engine.wit: unsupported line {raw.strip()!r}")
        kind, name, params, result = m.groups()
        types = []
        for param in filter(None, (p.strip() for p in params.split(","))):
            pm = _WIT_PARAM.match(param)
            if pm is None:
                raise WorldSyntaxError(f"engine.wit: bad parameter {param!r} in {name}")
            types.append(pm.group(1).strip())
        signature = _func_signature(types, result.strip() if result else None)
        (imports if kind == "import" else exports)[name] = signature
    if package != WORLD_NAME:
        raise WorldSyntaxError(f"engine.wit declares package {package!r}, expected {WORLD_NAME}")
    return World(name=package, imports=imports, exports=exports)


# ---------------------------------------------------------------------------------------------
# Rendering wasmtime types as JSON-native, structural descriptions.


def _func_signature(param_types: list[str], result: str | None) -> str:
    head = f"func({', '.join(param_types)})"
    return f"{head} -> {result}" if result is not None else head


_PRIMITIVES: dict[type, str] = {
    wc.Bool: "bool",
    wc.S8: "s8",
    wc.S16: "s16",
    wc.S32: "s32",
    wc.S64: "s64",
    wc.U8: "u8",
    wc.U16: "u16",
    wc.U32: "u32",
    wc.U64: "u64",
    wc.F32: "f32",
    wc.F64: "f64",
    wc.Char: "char",
    wc.String: "string",
    wc.ErrorContext: "error-context",
}


def _valtype(ty: Any) -> str:
    """A value type in WIT spelling; record/variant/enum/flags labels are part of the type."""
    primitive = _PRIMITIVES.get(type(ty))
    if primitive is not None:
        return primitive
    if isinstance(ty, wc.ListType):
        return f"list<{_valtype(ty.element)}>"
    if isinstance(ty, wc.TupleType):
        return f"tuple<{', '.join(_valtype(t) for t in ty.elements)}>"
    if isinstance(ty, wc.OptionType):
        return f"option<{_valtype(ty.payload)}>"
    if isinstance(ty, wc.ResultType):
        ok = _valtype(ty.ok) if ty.ok is not None else "_"
        err = _valtype(ty.err) if ty.err is not None else "_"
        return f"result<{ok}, {err}>"
    if isinstance(ty, wc.RecordType):
        return "record { " + ", ".join(f"{n}: {_valtype(t)}" for n, t in ty.fields) + " }"
    if isinstance(ty, wc.VariantType):
        cases = (f"{n}({_valtype(t)})" if t is not None else n for n, t in ty.cases)
        return "variant { " + ", ".join(cases) + " }"
    if isinstance(ty, wc.EnumType):
        return "enum { " + ", ".join(ty.names) + " }"
    if isinstance(ty, wc.FlagsType):
        return "flags { " + ", ".join(ty.names) + " }"
    if isinstance(ty, wc.OwnType):
        return "own<resource>"
    if isinstance(ty, wc.BorrowType):
        return "borrow<resource>"
    if isinstance(ty, wc.FutureType):
        return "future"
    if isinstance(ty, wc.StreamType):
        return "stream"
    return f"unknown<{type(ty).__name__}>"


def _describe(name: str, item: Any, engine: wasmtime.Engine) -> dict[str, Any]:
    """One import or export as JSON: name, kind, structural `type`, and params/result for funcs."""
    if isinstance(item, wc.FuncType):
        params = [{"name": n, "type": _valtype(t)} for n, t in item.params]
        result = _valtype(item.result) if item.result is not None else None
        signature = _func_signature([p["type"] for p in params], result)
        return {"name": name, "kind": "func", "type": signature, "params": params, "result": result}
    if isinstance(item, wc.ComponentInstanceType):
        members = [_describe(n, x.ty, engine) for n, x in item.exports(engine).items()]
        members.sort(key=lambda m: m["name"])
        body = "; ".join(f"{m['name']}: {m['type']}" for m in members)
        return {"name": name, "kind": "instance", "type": f"instance {{ {body} }}"}
    if isinstance(item, wc.ComponentType):
        imports = sorted(f"import {n}" for n in item.imports(engine))
        exports = sorted(f"export {n}" for n in item.exports(engine))
        return {"name": name, "kind": "component", "type": f"component {imports + exports}"}
    if isinstance(item, wc.ModuleType):
        return {"name": name, "kind": "module", "type": "module"}
    if isinstance(item, wc.ResourceType):
        return {"name": name, "kind": "resource", "type": "resource"}
    return {"name": name, "kind": "type", "type": _valtype(item)}


@dataclass(frozen=True, slots=True)
class Interface:
    """What a component imports and exports, as JSON-native descriptions in declaration order."""

    imports: list[dict[str, Any]]
    exports: list[dict[str, Any]]

    def to_json(self) -> dict[str, Any]:
        return {"imports": list(self.imports), "exports": list(self.exports)}


EMPTY_INTERFACE = Interface(imports=[], exports=[])


# ---------------------------------------------------------------------------------------------
# Loading: bytes → compiled component, or a C001 diagnostic saying why not.


@functools.cache
def component_engine() -> wasmtime.Engine:
    """The one engine components are inspected and run with (fuel and epochs on, as in the
    sandbox), so a component compiled for the check is the one the engine instantiates."""
    config = wasmtime.Config()
    config.consume_fuel = True
    config.epoch_interruption = True
    config.wasm_component_model = True
    return wasmtime.Engine(config)


def read_component(source: Source) -> tuple[bytes, str]:
    """The bytes of a component and the name its file-level diagnostics use as scope.

    Raises `ComponentUnreadable` when a path cannot be read (missing, a directory, denied).
    """
    if isinstance(source, bytes | bytearray):
        return bytes(source), "<bytes>"
    path = Path(source)
    try:
        return read_regular_file(path), path.name
    except NotARegularFileError:
        raise ComponentUnreadable(
            f"{path}: not a regular file (a FIFO, socket or device); pass a .wasm file"
        ) from None
    except IsADirectoryError:
        raise ComponentUnreadable(
            f"{path}: is a directory; pass the component's .wasm file"
        ) from None
    except FileNotFoundError:
        raise ComponentUnreadable(f"{path}: no such file; check the path") from None
    except OSError as exc:
        raise ComponentUnreadable(f"{path}: cannot read: {exc.strerror or exc}") from None


def _first_line(error: Exception) -> str:
    """wasmtime errors are multi-line ("failed to parse … Caused by: …"): keep the cause."""
    lines = [ln.strip() for ln in str(error).splitlines() if ln.strip()]
    causes = [ln for ln in lines if ln not in ("Caused by:", "failed to parse WebAssembly module")]
    return "; ".join(causes[:2]) if causes else (lines[0] if lines else type(error).__name__)


def _to_binary(data: bytes, scope: str) -> tuple[bytes | None, Diagnostic | None]:
    def refuse(why: str) -> tuple[None, Diagnostic]:
        return None, Diagnostic("error", scope, f"not a component: {why}", code="C001")

    if not data:
        return refuse("the file is empty")
    if data.startswith(b"\0asm"):
        return data, None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return refuse("not WebAssembly (no `\\0asm` header) and not WAT text")
    stripped = text.lstrip()
    if not stripped.startswith(("(", ";;")):
        return refuse("not WebAssembly (no `\\0asm` header) and not WAT text")
    try:
        return bytes(wasmtime.wat2wasm(text)), None
    except wasmtime.WasmtimeError as exc:
        return refuse(f"WAT text does not parse: {_first_line(exc)}")


def inspect_component(source: Source) -> tuple[wc.Component | None, Interface, list[Diagnostic]]:
    """Compile and inspect a component: (component or None, interface, C001 diagnostics).

    Raises `ComponentUnreadable` for a path that cannot be read.
    """
    data, scope = read_component(source)
    return _inspect_bytes(data, scope)


def _inspect_bytes(
    data: bytes, scope: str
) -> tuple[wc.Component | None, Interface, list[Diagnostic]]:
    binary, refusal = _to_binary(data, scope)
    if binary is None:
        assert refusal is not None
        return None, EMPTY_INTERFACE, [refusal]

    def refuse(why: str) -> tuple[None, Interface, list[Diagnostic]]:
        diagnostic = Diagnostic("error", scope, f"not a component: {why}", code="C001")
        return None, EMPTY_INTERFACE, [diagnostic]

    if binary.startswith(_CORE_HEADER):
        return refuse(
            "this is a core WebAssembly module; wrap it as a component "
            "(e.g. `wasm-tools component new`)"
        )
    if not binary.startswith(_COMPONENT_HEADER):
        return refuse(f"unknown WebAssembly version/layer {binary[4:8].hex()} (truncated?)")
    engine = component_engine()
    try:
        component = wc.Component(engine, binary)
    except wasmtime.WasmtimeError as exc:
        return refuse(f"invalid or truncated component: {_first_line(exc)}")
    ty = component.type
    interface = Interface(
        imports=[_describe(n, x.ty, engine) for n, x in ty.imports(engine).items()],
        exports=[_describe(n, x.ty, engine) for n, x in ty.exports(engine).items()],
    )
    return component, interface, []


# ---------------------------------------------------------------------------------------------
# The checks.


def check_interface(interface: Interface) -> list[Diagnostic]:
    """The world's rules (C002–C005) applied to an inspected interface."""
    world = engine_world()
    found: list[Diagnostic] = []
    exports = {e["name"]: e for e in interface.exports}
    run = exports.get(RUN_EXPORT)
    expected_run = world.exports[RUN_EXPORT]
    if run is None:
        others = ", ".join(f"`{n}`" for n in exports) or "nothing"
        found.append(
            Diagnostic(
                "error",
                RUN_EXPORT,
                f"missing required export `run` (it exports {others}: a different world?)",
                code="C002",
            )
        )
    elif run["type"] != expected_run:
        found.append(
            Diagnostic(
                "error",
                RUN_EXPORT,
                f"`run` has the wrong type: expected `{expected_run}`, found `{run['type']}`",
                code="C003",
            )
        )
    for item in interface.imports:
        name = item["name"]
        if name.startswith("wasi:"):
            continue
        expected = world.imports.get(name)
        if expected is None:
            found.append(
                Diagnostic(
                    "error",
                    name,
                    f"undeclared Dock import `{name}` (not in groundskeeper:engine)",
                    code="C004",
                )
            )
        elif item["type"] != expected:
            found.append(
                Diagnostic(
                    "error",
                    name,
                    f"Dock import `{name}` has the wrong type: expected `{expected}`, "
                    f"found `{item['type']}`",
                    code="C005",
                )
            )
    return found


def check_engine(source: Source) -> list[Diagnostic]:
    """Does this component fit the `groundskeeper:engine` world? Empty list when it conforms.

    `source` is a path (`.wasm`, or `.wat` text) or the bytes themselves. Raises
    `ComponentUnreadable` only when a path cannot be read; everything else is a diagnostic.
    """
    _component, interface, diagnostics = inspect_component(source)
    if diagnostics:
        return diagnostics
    return check_interface(interface)


def _upgrade_diagnostics(old: Interface, new: Interface) -> list[Diagnostic]:
    found: list[Diagnostic] = []
    old_exports = {e["name"]: e["type"] for e in old.exports}
    new_exports = {e["name"]: e["type"] for e in new.exports}
    old_imports = {i["name"]: i["type"] for i in old.imports}
    new_imports = {i["name"]: i["type"] for i in new.imports}
    for name, was in old_exports.items():
        now = new_exports.get(name)
        if now is None:
            message = f"export `{name}` was removed (exports may grow, never shrink)"
            found.append(Diagnostic("error", name, message, code="U001"))
        elif now != was:
            message = f"export `{name}` changed type: was `{was}`, now `{now}`"
            found.append(Diagnostic("error", name, message, code="U002"))
    for name, now in new_imports.items():
        was_import = old_imports.get(name)
        if was_import is None:
            message = f"import `{name}` was added (imports may shrink, never grow)"
            found.append(Diagnostic("error", name, message, code="U003"))
        elif now != was_import:
            message = f"import `{name}` changed type: was `{was_import}`, now `{now}`"
            found.append(Diagnostic("error", name, message, code="U004"))
    return found


def check_upgrade(old: Source, new: Source) -> list[Diagnostic]:
    """May `new` replace `old`? Exports may grow but never shrink or change type; imports may
    shrink but never grow or change type. Empty list when the upgrade is allowed.

    This compares interfaces only; whether `new` fits the world is `check_engine`'s question.
    Raises `ComponentUnreadable` only when a path cannot be read.
    """
    _c, old_interface, old_refusal = inspect_component(old)
    _c, new_interface, new_refusal = inspect_component(new)
    if old_refusal or new_refusal:
        return [
            Diagnostic(d.level, d.scope, f"{which} component is {d.message}", d.line, d.code)
            for which, refusal in (("old", old_refusal), ("new", new_refusal))
            for d in refusal
        ]
    return _upgrade_diagnostics(old_interface, new_interface)


# ---------------------------------------------------------------------------------------------
# Docking.


@dataclass(frozen=True, slots=True)
class DockResult:
    """The outcome of `dock`. Contract (the runner relies on it):

    - `ok` is True only when the component conforms, any upgrade check passed, and the file
      now sits at `destination`; otherwise nothing was copied and `destination` is None.
    - `diagnostics` explains a refusal (C00x, U00x, D00x codes); empty when `ok`.
    - `sha256` is the hex digest of the component's bytes ("" when unreadable).
    - `interface` is `{"imports": [...], "exports": [...]}`, JSON-native.
    - `replaced` is the sha256 of the component this one upgraded, or None.
    """

    ok: bool
    component: Path
    diagnostics: list[Diagnostic]
    sha256: str
    interface: dict[str, Any]
    destination: Path | None
    replaced: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "component": str(self.component),
            "destination": str(self.destination) if self.destination is not None else None,
            "sha256": self.sha256,
            "replaced": self.replaced,
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "imports": self.interface["imports"],
            "exports": self.interface["exports"],
        }


def _atomic_copy(data: bytes, destination: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{destination.name}.", dir=destination.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, destination)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def dock(component: Path, into: Path, *, sealed: Mapping[str, str] | None = None) -> DockResult:
    """Copy `component` into the component directory `into` if it conforms and, when a
    component of the same file name is already docked, only if the upgrade check passes.

    `sealed` (file name → SHA-256 of its last sealed dock) is what a plan's ledger says is
    docked: a docked file that differs from it (or has no sealed dock) is refused as the
    baseline, even when the new bytes are the same. Without it the directory is trusted.
    Never raises for bad input: an unreadable file or an unwritable directory is a diagnostic.
    """
    component = Path(component)
    into = Path(into)

    def refused(diagnostics: list[Diagnostic], sha: str, interface: Interface) -> DockResult:
        return DockResult(False, component, diagnostics, sha, interface.to_json(), None)

    try:
        data, scope = read_component(component)
    except ComponentUnreadable as exc:
        unreadable = Diagnostic("error", component.name, str(exc), code="D001")
        return refused([unreadable], "", EMPTY_INTERFACE)
    sha = hashlib.sha256(data).hexdigest()
    _c, interface, diagnostics = _inspect_bytes(data, scope)
    if not diagnostics:
        diagnostics = check_interface(interface)
    if has_errors(diagnostics):
        return refused(diagnostics, sha, interface)

    destination = into / component.name
    try:
        into.mkdir(parents=True, exist_ok=True)
        lock = open(into / LOCK_NAME, "a+b")  # noqa: SIM115  # held for the block below
    except OSError as exc:
        message = f"cannot write into {into}: {exc.strerror or exc}"
        return refused([Diagnostic("error", component.name, message, code="D002")], sha, interface)
    # Check-then-replace under one lock: two docks of the same name at once (parallel tasks,
    # two processes) must not both pass against the old component and race to replace it.
    with lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        return _dock_locked(component, data, sha, interface, destination, refused, sealed)


def _dock_locked(
    component: Path,
    data: bytes,
    sha: str,
    interface: Interface,
    destination: Path,
    refused: Callable[[list[Diagnostic], str, Interface], DockResult],
    sealed: Mapping[str, str] | None = None,
) -> DockResult:
    replaced: str | None = None
    if destination.exists():
        try:
            old_data, _ = read_component(destination)
        except ComponentUnreadable as exc:
            message = f"the docked component cannot be read ({exc}); remove it to dock afresh"
            return refused(
                [Diagnostic("error", destination.name, message, code="D001")], sha, interface
            )
        replaced = hashlib.sha256(old_data).hexdigest()
        if sealed is not None and sealed.get(destination.name) != replaced:
            baseline = sealed.get(destination.name)
            why = (
                f"its sealed dock has SHA-256 {baseline[:12]}…"
                if baseline
                else "no dock of it is sealed in the ledger"
            )
            message = (
                f"the docked {destination.name} (SHA-256 {replaced[:12]}…) is not the sealed"
                f" baseline: {why}; remove {destination} and dock it again"
            )
            return refused(
                [Diagnostic("error", destination.name, message, code="D003")], sha, interface
            )
        if replaced == sha:
            return DockResult(True, component, [], sha, interface.to_json(), destination, replaced)
        _c, old_interface, old_refusal = _inspect_bytes(old_data, destination.name)
        upgrade = [
            Diagnostic(d.level, d.scope, f"docked component is {d.message}", d.line, d.code)
            for d in old_refusal
        ] or _upgrade_diagnostics(old_interface, interface)
        if upgrade:
            return refused(upgrade, sha, interface)
    try:
        _atomic_copy(data, destination)
    except OSError as exc:
        message = f"cannot write into {destination.parent}: {exc.strerror or exc}"
        return refused([Diagnostic("error", component.name, message, code="D002")], sha, interface)
    return DockResult(True, component, [], sha, interface.to_json(), destination, replaced)
