"""Host functions for wasmtime through the C API's unchecked form, and guest memory access.

wasmtime-py's `Linker.define_func` turns every argument and result into a `Val` object and
back (about 25 µs a call here); box.wasm makes a dozen WASI calls even for `true`. This
module binds the C API's raw form instead: arguments arrive as an array of 16-byte
`wasmtime_val_raw_t`, read in place. Everything private to wasmtime-py is confined here.
"""

from __future__ import annotations

import ctypes
import struct
from collections.abc import Callable
from typing import Any

import wasmtime
from wasmtime import _ffi as ffi

_VP = ctypes.c_void_p
_SIZE = ctypes.c_size_t
# size_t callback(void *env, wasmtime_caller_t *caller, wasmtime_val_raw_t *args, size_t n):
# returns a wasm_trap_t* (0 = carry on).
_Callback = ctypes.CFUNCTYPE(_SIZE, _VP, _VP, _VP, _SIZE)
_Finalizer = ctypes.CFUNCTYPE(None, _VP)


def _bind(name: str, restype: object, *argtypes: object) -> Any:
    # A prototype of our own: wasmtime-py's bindings type these arguments as POINTERs,
    # which ctypes would wrap in an object on every call.
    prototype = ctypes.CFUNCTYPE(restype, *argtypes)  # type: ignore[arg-type]
    return prototype((name, ffi.dll))


_define_unchecked = _bind(
    "wasmtime_linker_define_func_unchecked",
    _VP,
    _VP,
    ctypes.c_char_p,
    _SIZE,
    ctypes.c_char_p,
    _SIZE,
    _VP,
    _Callback,
    _VP,
    _Finalizer,
)
_caller_context = _bind("wasmtime_caller_context", _VP, _VP)
_caller_export_get = _bind(
    "wasmtime_caller_export_get", ctypes.c_bool, _VP, ctypes.c_char_p, _SIZE, _VP
)
_memory_data = _bind("wasmtime_memory_data", _VP, _VP, _VP)
_memory_size = _bind("wasmtime_memory_data_size", _SIZE, _VP, _VP)
_trap_new = _bind("wasmtime_trap_new", _VP, ctypes.c_char_p, _SIZE)

# WASI preview1 passes only unsigned values (fd_seek converts its one signed offset itself).
_I32 = struct.Struct("<I")
_I64 = struct.Struct("<Q")
_RAW_SIZE = 16  # sizeof(wasmtime_val_raw_t)

# A host function: (guest memory, *i32/i64 arguments) -> i32 result, or None for no result.
HostFunction = Callable[..., "int | None"]
# Called with the exception when a host function raised; returns the trap's message.
OnError = Callable[[BaseException], bytes]


class GuestTrap(Exception):
    """Raised by a host function to stop the guest: the message becomes the trap's."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def trap_message(error: BaseException) -> str:
    return error.message if isinstance(error, GuestTrap) else f"host error: {error!r}"


class Definitions:
    """Host functions defined in one linker; keeps their C callbacks alive as long as it."""

    def __init__(self, linker: wasmtime.Linker) -> None:
        self.linker = linker
        self.callbacks: list[object] = []
        self.extern = ffi.wasmtime_extern_t()  # scratch, one host call at a time

    def define(
        self,
        module: str,
        name: str,
        functype: wasmtime.FuncType,
        function: HostFunction,
        on_error: OnError,
    ) -> None:
        params = [_I64 if str(kind) == "i64" else _I32 for kind in functype.params]
        has_result = bool(functype.results)
        extern = self.extern
        extern_address = ctypes.addressof(extern)
        memory_address = ctypes.addressof(extern.of.memory)

        def callback(_env: int, caller: int, values: int, _count: int) -> int:
            try:
                context = _caller_context(caller)
                if not _caller_export_get(caller, b"memory", 6, extern_address):
                    raise GuestTrap("the module exports no memory")
                size = _memory_size(context, memory_address)
                base = _memory_data(context, memory_address)
                raw = ctypes.string_at(values, _RAW_SIZE * len(params))
                arguments = [
                    codec.unpack_from(raw, _RAW_SIZE * index)[0]
                    for index, codec in enumerate(params)
                ]
                with memoryview((ctypes.c_ubyte * size).from_address(base)).cast("B") as memory:
                    result = function(memory, *arguments)
                if has_result:
                    ctypes.c_int32.from_address(values).value = result if result is not None else 0
                return 0
            except BaseException as error:  # nothing may unwind into wasmtime
                message = on_error(error)
                return int(_trap_new(message, len(message)) or 0)

        c_callback = _Callback(callback)
        self.callbacks.append(c_callback)
        module_bytes, name_bytes = module.encode(), name.encode()
        error = _define_unchecked(
            ctypes.addressof(self.linker.ptr().contents),
            module_bytes,
            len(module_bytes),
            name_bytes,
            len(name_bytes),
            ctypes.addressof(functype.ptr().contents),
            c_callback,
            None,
            _Finalizer(0),
        )
        if error:
            raise wasmtime.WasmtimeError._from_ptr(
                ctypes.cast(error, ctypes.POINTER(ffi.wasmtime_error_t))
            )
