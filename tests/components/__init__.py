"""Test components of the groundskeeper:engine world, written as WAT text in this folder.

`wasm(name)` assembles one into binary; `world_component(...)` builds small components with
chosen string-typed imports and exports, for the upgrade tests.
"""

from __future__ import annotations

from pathlib import Path

import wasmtime

HERE = Path(__file__).parent


def wasm(name: str) -> bytes:
    """The binary of `tests/components/NAME.wat`."""
    return bytes(wasmtime.wat2wasm((HERE / f"{name}.wat").read_text("utf-8")))


def write_wasm(name: str, directory: Path, file_name: str | None = None) -> Path:
    """Assemble `NAME.wat` into `directory/FILE_NAME` (default `NAME.wasm`)."""
    path = directory / (file_name or f"{name}.wasm")
    path.write_bytes(wasm(name))
    return path


def _func_type(params: int) -> str:
    args = " ".join(f'(param "p{i}" string)' for i in range(params))
    return f"(func {args} (result string))"


def world_component(imports: dict[str, int], exports: dict[str, int]) -> bytes:
    """A component importing and exporting string functions: name → number of string params.

    Every export returns the empty string; imports are declared but never called.
    """
    lines = ["(component"]
    lines += [f'  (import "{name}" {_func_type(n)})' for name, n in imports.items()]
    lines += [
        "  (core module $M",
        '    (memory (export "memory") 1)',
        '    (func (export "realloc") (param i32 i32 i32 i32) (result i32) (i32.const 1024))',
    ]
    for name, n in exports.items():
        params = " ".join(["i32 i32"] * n)
        lines.append(f'    (func (export "{name}") (param {params}) (result i32) (i32.const 16))')
    lines += ["  )", "  (core instance $m (instantiate $M))"]
    for name, n in exports.items():
        lines.append(
            f'  (func (export "{name}") {_func_type(n)[6:-1]}'
            f' (canon lift (core func $m "{name}") (memory (core memory $m "memory"))'
            ' (realloc (core func $m "realloc"))))'
        )
    lines.append(")")
    return bytes(wasmtime.wat2wasm("\n".join(lines)))
