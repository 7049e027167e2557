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
from dataclasses import dataclass
from typing import Any

import wasmtime
from wasmtime import _ffi as ffi

from groundskeeper.errors import GroundskeeperError

_VP = ctypes.c_void_p
_SIZE = ctypes.c_size_t
# size_t callback(void *env, wasmtime_caller_t *caller, wasmtime_val_raw_t *args, size_t n):
# returns a wasm_trap_t* (0 = carry on).
_Callback = ctypes.CFUNCTYPE(_SIZE, _VP, _VP, _VP, _SIZE)
_Finalizer = ctypes.CFUNCTYPE(None, _VP)
_EXTERN_FUNC = int(ffi.WASMTIME_EXTERN_FUNC.value)
_EXTERN_MEMORY = int(ffi.WASMTIME_EXTERN_MEMORY.value)


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
_instantiate_pre = _bind("wasmtime_linker_instantiate_pre", _VP, _VP, _VP, _VP)
_pre_instantiate = _bind("wasmtime_instance_pre_instantiate", _VP, _VP, _VP, _VP, _VP)
_export_get = _bind(
    "wasmtime_instance_export_get", ctypes.c_bool, _VP, _VP, ctypes.c_char_p, _SIZE, _VP
)
_call_unchecked = _bind("wasmtime_func_call_unchecked", _VP, _VP, _VP, _VP, _SIZE, _VP)
_memory_grow = _bind("wasmtime_memory_grow", _VP, _VP, _VP, ctypes.c_uint64, _VP)
_global_get = _bind("wasmtime_global_get", None, _VP, _VP, _VP)
_global_set = _bind("wasmtime_global_set", _VP, _VP, _VP, _VP)
_EXTERN_GLOBAL = int(ffi.WASMTIME_EXTERN_GLOBAL.value)
_I32 = int(ffi.WASMTIME_I32.value)
PAGE = 65536

# A host function: (guest memory, *i32/i64 arguments) -> i32 result, or None for no result.
HostFunction = Callable[..., "int | None"]
# Called with the exception when a host function raised; returns the trap's message.
OnError = Callable[[BaseException], bytes]


class GuestTrap(GroundskeeperError):
    """Raised by a host function to stop the guest: the message becomes the trap's."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class Definitions:
    """Host functions defined in one linker; keeps their C callbacks alive as long as it.

    The guest's memory is looked up on the first host call of an instance and kept as one
    memoryview until `release()` (call it before the instance's store goes away). That is
    sound because the engine is configured with `memory_may_move = False`: the base address
    never changes, and the view is rebuilt whenever the guest has grown its memory."""

    def __init__(self, linker: wasmtime.Linker) -> None:
        self.linker = linker
        self.callbacks: list[object] = []
        self.extern = ffi.wasmtime_extern_t()
        self.memory_address = ctypes.addressof(self.extern.of.memory)
        self.context = 0
        self.view: memoryview | None = None

    def release(self) -> None:
        if self.view is not None:
            self.view.release()
            self.view = None

    def _memory(self, caller: int) -> memoryview:
        memory = self.memory_address
        if self.view is None:
            if not _caller_export_get(caller, b"memory", 6, ctypes.addressof(self.extern)):
                raise GuestTrap("the module exports no memory")
            self.context = _caller_context(caller)
        elif _memory_size(self.context, memory) == len(self.view):
            return self.view
        else:
            self.release()
        size = _memory_size(self.context, memory)
        base = _memory_data(self.context, memory)
        self.view = memoryview((ctypes.c_ubyte * size).from_address(base)).cast("B")
        return self.view

    def define(
        self,
        module: str,
        name: str,
        functype: wasmtime.FuncType,
        function: HostFunction,
        on_error: OnError,
    ) -> None:
        # All arguments in one unpack: each sits in a 16-byte wasmtime_val_raw_t, an i32 in
        # its low 4 bytes. Read unsigned: so WASI passes them (fd_seek signs its one offset).
        layout = "".join("Q8x" if str(kind) == "i64" else "I12x" for kind in functype.params)
        arguments_codec = struct.Struct("<" + layout)
        width = arguments_codec.size
        has_result = bool(functype.results)

        memory_address = self.memory_address

        def callback(_env: int, caller: int, values: int, _count: int) -> int:
            try:
                arguments = arguments_codec.unpack(ctypes.string_at(values, width))
                # the view of the guest's memory as it is now (see _memory), inline: every
                # host call asks for it
                view = self.view
                if view is None or _memory_size(self.context, memory_address) != len(view):
                    view = self._memory(caller)
                result = function(view, *arguments)
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


def use_pooling(config: wasmtime.Config, instances: int, memory_size: int) -> None:
    """Give `config` wasmtime's pooling allocator, which wasmtime-py does not expose: slots
    for `instances` live instances and memories of up to `memory_size` bytes each, reserved
    once per engine and reused, instead of mapping and unmapping memory per instance."""
    pool = ffi.wasmtime_pooling_allocation_config_new()
    try:
        ffi.wasmtime_pooling_allocation_config_total_core_instances_set(pool, instances)
        ffi.wasmtime_pooling_allocation_config_total_memories_set(pool, instances)
        ffi.wasmtime_pooling_allocation_config_total_tables_set(pool, instances)
        # Fiber stacks serve async calls only (none here), but the pool reserves its default
        # 1,000 at once, each with a guard page mprotect()ed: ~1,000 syscalls, 4-8 ms of every
        # engine's creation (of a cold check's). As many as there are instances is plenty.
        ffi.wasmtime_pooling_allocation_config_total_stacks_set(pool, instances)
        ffi.wasmtime_pooling_allocation_config_max_memory_size_set(pool, memory_size)
        ffi.wasmtime_pooling_allocation_strategy_set(config.ptr(), pool)
    finally:
        ffi.wasmtime_pooling_allocation_config_delete(pool)


def _address(pointer: Any) -> int:
    return ctypes.cast(pointer, _VP).value or 0


def prepare(linker: wasmtime.Linker, module: wasmtime.Module) -> int:
    """The C API's InstancePre: `module` with its imports resolved in `linker` once, so
    each stage's instantiation skips 26 name lookups. Lives as long as the process."""
    pre = _VP()
    error = _instantiate_pre(_address(linker.ptr()), _address(module.ptr()), ctypes.byref(pre))
    failure = _failure(error, _VP())
    if failure is not None:
        raise failure
    return pre.value or 0


def run_start(
    store: wasmtime.Store, prepared: int, rewind: Rewind | None = None
) -> tuple[wasmtime.Trap | wasmtime.WasmtimeError | None, int]:
    """Instantiate a `prepare`d module in `store` and call its `_start`: (why it stopped, or
    None when it returned; the byte size of its memory afterwards, 0 when there is none).
    With `rewind`, the instance takes part in a memory image (see `Rewind`).

    The same C calls as wasmtime-py's `Linker.instantiate`, `Instance.exports` and
    `Func.__call__`, without the Python objects they build (~0.1 ms a stage)."""
    context = _address(store._context())
    instance = ffi.wasmtime_instance_t()
    trap = _VP()
    error = _pre_instantiate(prepared, context, ctypes.byref(instance), ctypes.byref(trap))
    failure = _failure(error, trap)
    if failure is not None:
        return failure, 0
    item = ffi.wasmtime_extern_t()
    if (
        not _export_get(context, ctypes.byref(instance), b"_start", 6, ctypes.byref(item))
        or int(item.kind) != _EXTERN_FUNC
    ):
        return wasmtime.WasmtimeError("box.wasm exports no _start function"), 0
    if rewind is not None:
        try:
            rewind.bind(context, ctypes.byref(instance))
        except wasmtime.WasmtimeError as refused:
            return refused, 0
    error = _call_unchecked(context, ctypes.byref(item.of.func), None, 0, ctypes.byref(trap))
    failure = _failure(error, trap)
    if rewind is not None and failure is None:
        try:
            rewind.finish()
        except wasmtime.WasmtimeError as refused:
            failure = refused
    size = 0
    if (
        _export_get(context, ctypes.byref(instance), b"memory", 6, ctypes.byref(item))
        and int(item.kind) == _EXTERN_MEMORY
    ):
        size = _memory_size(context, ctypes.addressof(item.of.memory))
    return failure, size


@dataclass(frozen=True)
class Image:
    """A guest's whole memory and its one mutable global (wasi-libc's `__stack_pointer`),
    taken while binaryen's asyncify had unwound its call stack into `data` (asyncify's
    unwind record, inside that memory): enough to resume it where it stopped."""

    memory: bytes
    stack_pointer: int
    data: int


# asyncify's states (`asyncify_get_state`)
_NORMAL, _UNWINDING, _REWINDING = 0, 1, 2
# Pages added at the end of the guest's memory for the unwound call stack when an image is
# taken; the guest's allocator grows past them, never into them.
UNWIND_PAGES = 16


class Rewind:
    """One stage's part in a memory image, for a module transformed by binaryen's asyncify
    (`asyncify_*` exported, its stack pointer exported as `__stack_pointer`).

    Taking one (`image` None): the guest's first `sched_yield` unwinds its call stack into
    pages added for it, `_start` returns, and `taken` holds the memory as it then is.
    Resuming one: the instance's memory and stack pointer are the image's before `_start`,
    which rewinds the stack down to that `sched_yield`, which returns; the guest carries on
    as if it had never stopped. Every other `sched_yield` is an ordinary one."""

    def __init__(self, image: Image | None = None) -> None:
        self.image = image
        self.taken: Image | None = None
        self.resumed = False
        self._context = 0
        self._exports: dict[bytes, Any] = {}
        self._unwinding = False

    def bind(self, context: int, instance: Any) -> None:
        """Look the instance's exports up, and (to resume) put the image in place."""
        self._context = context
        for name, kind in (
            (b"memory", _EXTERN_MEMORY),
            (b"__stack_pointer", _EXTERN_GLOBAL),
            (b"asyncify_get_state", _EXTERN_FUNC),
            (b"asyncify_start_unwind", _EXTERN_FUNC),
            (b"asyncify_stop_unwind", _EXTERN_FUNC),
            (b"asyncify_start_rewind", _EXTERN_FUNC),
            (b"asyncify_stop_rewind", _EXTERN_FUNC),
        ):
            item = ffi.wasmtime_extern_t()
            found = _export_get(context, instance, name, len(name), ctypes.byref(item))
            if not found or int(item.kind) != kind:
                raise wasmtime.WasmtimeError(f"the module exports no {name.decode()}")
            self._exports[name] = item
        if self.image is None:
            return
        memory = self._memory()
        size = _memory_size(context, memory)
        wanted = len(self.image.memory)
        if wanted % PAGE or wanted < size:
            raise wasmtime.WasmtimeError("the memory image does not fit this module")
        if wanted > size:
            self._grow((wanted - size) // PAGE)
        ctypes.memmove(_memory_data(context, memory), self.image.memory, wanted)
        value = ffi.wasmtime_val_t()
        value.kind = _I32  # type: ignore[assignment]  # wasmtime-py types it as its ctypes alias
        value.of.i32 = self.image.stack_pointer
        global_ = ctypes.addressof(self._exports[b"__stack_pointer"].of)
        _check(_global_set(context, global_, ctypes.addressof(value)))
        self._call(b"asyncify_start_rewind", self.image.data)

    def at_yield(self) -> None:
        """The guest's `sched_yield`: where a resumed stack stops rewinding, or (when an
        image is to be taken, once) where the stack starts unwinding."""
        state = self._call(b"asyncify_get_state")
        if state == _REWINDING:
            self._call(b"asyncify_stop_rewind")
            self.resumed = True
        elif state == _NORMAL and self.image is None and not self._unwinding:
            start = self._grow(UNWIND_PAGES) * PAGE
            record = struct.pack("<II", start + 8, start + UNWIND_PAGES * PAGE)
            ctypes.memmove(_memory_data(self._context, self._memory()) + start, record, 8)
            self._unwinding = True
            self._call(b"asyncify_start_unwind", start)

    def finish(self) -> None:
        """After `_start` returned: the image, when the stack had unwound for one. A resume
        that never reached its `sched_yield` is refused."""
        if self.image is not None:
            if not self.resumed:
                raise wasmtime.WasmtimeError("the guest did not resume from its image")
            return
        if not self._unwinding:
            return
        if self._call(b"asyncify_get_state") != _UNWINDING:
            raise wasmtime.WasmtimeError("the guest's stack did not unwind")
        self._call(b"asyncify_stop_unwind")
        memory = self._memory()
        size = _memory_size(self._context, memory)
        taken = ctypes.string_at(_memory_data(self._context, memory), size)
        value = ffi.wasmtime_val_t()
        global_ = ctypes.addressof(self._exports[b"__stack_pointer"].of)
        _global_get(self._context, global_, ctypes.addressof(value))
        self.taken = Image(taken, int(value.of.i32), size - UNWIND_PAGES * PAGE)

    def _memory(self) -> int:
        return ctypes.addressof(self._exports[b"memory"].of.memory)

    def _grow(self, pages: int) -> int:
        """Grow the guest's memory by `pages`; the page count it had."""
        before = ctypes.c_uint64()
        _check(_memory_grow(self._context, self._memory(), pages, ctypes.addressof(before)))
        return before.value

    def _call(self, name: bytes, argument: int | None = None) -> int:
        """Call an export taking at most one i32 and giving at most one; its result or 0."""
        slot = (ctypes.c_ubyte * 16)()
        if argument is not None:
            ctypes.c_uint32.from_buffer(slot).value = argument
        trap = _VP()
        func = ctypes.addressof(self._exports[name].of.func)
        error = _call_unchecked(self._context, func, slot, 1, ctypes.byref(trap))
        failure = _failure(error, trap)
        if failure is not None:
            raise wasmtime.WasmtimeError(f"{name.decode()} failed: {failure}")
        return ctypes.c_uint32.from_buffer(slot).value


def _check(error: int | None) -> None:
    if error:
        raise wasmtime.WasmtimeError._from_ptr(
            ctypes.cast(error, ctypes.POINTER(ffi.wasmtime_error_t))
        )


def _failure(error: int | None, trap: Any) -> wasmtime.Trap | wasmtime.WasmtimeError | None:
    """wasmtime-py's own exception objects for an error or trap pointer (they free it)."""
    if error:
        return wasmtime.WasmtimeError._from_ptr(
            ctypes.cast(error, ctypes.POINTER(ffi.wasmtime_error_t))
        )
    if trap.value:
        return wasmtime.Trap._from_ptr(ctypes.cast(trap.value, ctypes.POINTER(ffi.wasm_trap_t)))
    return None
