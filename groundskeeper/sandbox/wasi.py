"""Runs one box.wasm command in its own wasmtime instance, under the sandbox's limits.

It owns the engine configuration, the on-disk cache of the compiled module, the pool of
engines (each with its linker of host WASI calls, `preview1`), the watchdog that enforces
the deadline, and the mapping of traps to named faults. It knows nothing of shell syntax.
"""

from __future__ import annotations

import hashlib
import os
import resource
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import wasmtime

from groundskeeper.sandbox import hostcall, preview1
from groundskeeper.sandbox.confine import GUEST_ROOT
from groundskeeper.sandbox.quota import DiskQuota
from groundskeeper.sandbox.result import Fault, SandboxError

BOX_WASM = Path(__file__).with_name("box.wasm")

MEMORY_LIMIT = 256 * 1024 * 1024  # bytes of linear memory a stage may hold
STREAM_LIMIT = 8 * 1024 * 1024  # bytes of stdout (and of stderr) a command line may return
PIPE_LIMIT = 64 * 1024 * 1024  # bytes one stage may write into a pipe, $(…) or a file
# bytes the interpreter itself may hold for one command line: variables, $(…) output,
# word lists and glob results (the shell's own work, not the stages')
HOST_MEMORY_LIMIT = 64 * 1024 * 1024
FUEL_PER_SECOND = 10_000_000_000  # per second of deadline: above any real rate, a backstop
# A run's stages share a store (making one and freeing it cost more than a short command);
# an instance's memory is only freed with its store, so a store is freed after this many
# stages, or at once after a stage whose memory grew past what box.wasm starts with.
STAGES_PER_STORE = 16
SMALL_STAGE_MEMORY = 32 * 1024 * 1024

# Every knob that changes the compiled code is part of the cache key.
# The pooling allocator reserves every slot's address space up front (~65 GiB virtual), and
# wasmtime's C API aborts the process when that fails: under any `ulimit -v`, do without it.
_POOLING = resource.getrlimit(resource.RLIMIT_AS)[0] == resource.RLIM_INFINITY

_ENGINE_SETTINGS = (
    ("consume_fuel", True),
    ("epoch_interruption", True),
    ("opt", "speed"),
    ("memory_may_move", False),
    ("pooling", STAGES_PER_STORE if _POOLING else 0, MEMORY_LIMIT),
)


def _new_config() -> wasmtime.Config:
    config = wasmtime.Config()
    config.consume_fuel = True
    config.epoch_interruption = True
    config.cranelift_opt_level = "speed"
    # Host calls keep one view of guest memory (hostcall.Definitions): its base must stay put.
    config.memory_may_move = False
    # One slot per instance a run's store can hold (a run leases its engine alone): the
    # same memory is reused stage after stage, ~10% faster when the caches are cold.
    if _POOLING:
        hostcall.use_pooling(config, STAGES_PER_STORE, MEMORY_LIMIT)
    return config


def groundskeeper_home() -> Path:
    """$GROUNDSKEEPER_HOME, else ~/.config/groundskeeper: where all user state lives."""
    home = os.environ.get("GROUNDSKEEPER_HOME")
    return Path(home) if home else Path.home() / ".config" / "groundskeeper"


@dataclass
class Limits:
    """The per-run limits; `run` uses the defaults, tests may shrink them."""

    memory: int = MEMORY_LIMIT
    stream: int = STREAM_LIMIT
    pipe: int = PIPE_LIMIT
    fuel_per_second: int = FUEL_PER_SECOND
    host_memory: int = HOST_MEMORY_LIMIT


# ---- compiling once ------------------------------------------------------------------------


def _wasmtime_identity() -> str:
    """The installed wasmtime's version (its dist-info name) and native library's stat.

    Read off the file system because importlib.metadata costs ~50 ms of a cold start."""
    package = Path(wasmtime.__file__).parent
    names = sorted(n for n in os.listdir(package.parent) if n.startswith("wasmtime-"))
    libraries = sorted(package.glob("*/_libwasmtime*"))
    stats = [(lib.name, lib.stat().st_size, lib.stat().st_mtime_ns) for lib in libraries]
    return repr((names, stats))


def _cache_path(module_bytes: bytes) -> Path:
    identity = (_wasmtime_identity(), hashlib.sha256(module_bytes).hexdigest(), _ENGINE_SETTINGS)
    key = hashlib.sha256(repr(identity).encode()).hexdigest()[:32]
    return groundskeeper_home() / "cache" / f"box-{key}.cwasm"


def _load_module(engine: wasmtime.Engine) -> wasmtime.Module:
    """box.wasm for this engine: from the verified disk cache, else compiled and cached."""
    return _load_serialized(engine)[0]


def _load_serialized(engine: wasmtime.Engine) -> tuple[wasmtime.Module, bytes]:
    """box.wasm for this engine, with its serialized form (what later engines deserialize).

    A cache entry is `sha256(payload) + payload`; a mismatch (a torn or altered file) is
    recompiled rather than handed to wasmtime, which would trust native code blindly.
    """
    try:
        module_bytes = BOX_WASM.read_bytes()
    except OSError as error:
        raise SandboxError(f"cannot read {BOX_WASM}: {error}; run `make wasm`") from error
    # Keyed by the module's own hash: 0.2 ms for box.wasm, and the one key a rebuilt
    # box.wasm can never share with a stale artefact (a size or mtime key could).
    path = _cache_path(module_bytes)
    try:
        blob = path.read_bytes()
    except OSError:
        blob = b""
    payload = blob[32:]
    if payload and hashlib.sha256(payload).digest() == blob[:32]:
        try:
            return wasmtime.Module.deserialize(engine, payload), payload
        except wasmtime.WasmtimeError as error:
            _warn("ignoring unusable compiled module %s: %s", path, error)
    elif blob:
        _warn("ignoring corrupt compiled module %s", path)
    module = wasmtime.Module(engine, module_bytes)
    payload = bytes(module.serialize())
    _store_cache(path, payload)
    return module, payload


def _store_cache(path: Path, payload: bytes) -> None:
    import tempfile  # only on a cache miss: it costs a cold start ~4 ms to import

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".box-", suffix=".tmp")
        with os.fdopen(fd, "wb") as handle:
            handle.write(hashlib.sha256(payload).digest() + payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as error:  # a read-only home still runs, only slower next time
        _warn("cannot cache compiled module at %s: %s", path, error)


def _warn(message: str, *args: object) -> None:
    # logging is imported only when there is something to say: it costs a cold start ~5 ms
    import logging

    logging.getLogger(__name__).warning(message, *args)


# ---- engines: one per concurrent run, reused ------------------------------------------------


@dataclass(eq=False)
class Runtime:
    """An engine with box.wasm loaded and a linker serving its WASI calls. Epochs are
    engine-wide, so a run leases one alone: bumping its epoch then stops exactly that run's
    stage and nobody else's; and the linker's calls act on that run's current `process`."""

    engine: wasmtime.Engine
    module: wasmtime.Module
    linker: wasmtime.Linker
    process: preview1.Process | None = None
    definitions: hostcall.Definitions | None = None
    prepared: int = 0  # hostcall.prepare's handle, made once the linker is complete

    def on_error(self, error: BaseException) -> bytes:
        if self.process is not None:
            return self.process.on_error(error)
        return b"host error"


_pool: list[Runtime] = []
_pool_lock = threading.Lock()
_first_module: list[bytes] = []  # the serialized module, shared by engines made later


def _new_runtime() -> Runtime:
    try:
        engine = wasmtime.Engine(_new_config())
    except wasmtime.WasmtimeError as error:  # e.g. a ulimit -v too small for its memory pool
        raise SandboxError(f"cannot create a wasmtime engine: {error}") from error
    with _pool_lock:
        serialized = _first_module[0] if _first_module else None
    if serialized is None:
        module, payload = _load_serialized(engine)
        with _pool_lock:
            if not _first_module:
                _first_module.append(payload)
    else:
        module = wasmtime.Module.deserialize(engine, serialized)
    runtime = Runtime(engine, module, wasmtime.Linker(engine))
    runtime.definitions = hostcall.Definitions(runtime.linker)
    for item in module.imports:
        functype = item.type
        if (
            item.module != "wasi_snapshot_preview1"
            or item.name not in preview1.CALLS
            or not isinstance(functype, wasmtime.FuncType)
        ):
            raise SandboxError(
                f"box.wasm imports {item.module}.{item.name}, which the sandbox does not provide"
            )
        serve = preview1.serve(lambda: runtime.process, item.name)
        runtime.definitions.define(item.module, item.name, functype, serve, runtime.on_error)
    runtime.prepared = hostcall.prepare(runtime.linker, module)
    return runtime


def lease_runtime() -> Runtime:
    with _pool_lock:
        if _pool:
            return _pool.pop()
    return _new_runtime()


def release_runtime(runtime: Runtime) -> None:
    with _pool_lock:
        _pool.append(runtime)


# ---- the watchdog ---------------------------------------------------------------------------


@dataclass(eq=False)
class Watch:
    """One run as the watchdog sees it: its deadline, and why it was stopped."""

    runtime: Runtime
    deadline: float
    fault: Fault | None = None
    active: bool = True
    lock: threading.Lock = field(default_factory=threading.Lock)
    store: wasmtime.Store | None = None  # the run's current store (see STAGES_PER_STORE)
    stages_in_store: int = 0

    def take_store(self, limits: Limits) -> wasmtime.Store:
        if self.store is None:
            self.store = wasmtime.Store(self.runtime.engine)
            self.store.set_limits(memory_size=limits.memory)
            self.store.set_epoch_deadline(1)  # one epoch on: a stop() traps the guest
            self.stages_in_store = 0
        return self.store

    def give_back_store(self, memory_size: int) -> None:
        self.stages_in_store += 1
        if self.stages_in_store >= STAGES_PER_STORE or memory_size > SMALL_STAGE_MEMORY:
            self.close_store()

    def close_store(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None

    def stop(self, fault: Fault) -> None:
        """Record why and interrupt the running stage (stores trap one epoch later).

        Under the lock and only while active: once the run has ended, its engine may be
        leased to another run whose stage this must not stop."""
        with self.lock:
            if not self.active:
                return
            if self.fault is None:
                self.fault = fault
            self.runtime.engine.increment_epoch()


class _Watchdog:
    """One thread that sleeps until the nearest deadline of the runs it watches.

    A run that starts wakes it only when its deadline is nearer than the one it sleeps
    towards, and a run that ends leaves without waking it: a wake-up of another thread
    costs more on these machines than a short command does."""

    def __init__(self) -> None:
        self.watches: set[Watch] = set()
        self.wake = threading.Condition()
        self.thread: threading.Thread | None = None
        self.next_wake = float("inf")

    def add(self, watch: Watch) -> None:
        with self.wake:
            self.watches.add(watch)
            if self.thread is None:
                self.thread = threading.Thread(target=self.loop, name="gk-watchdog", daemon=True)
                self.thread.start()
            if watch.deadline < self.next_wake:
                self.next_wake = watch.deadline
                self.wake.notify()

    def remove(self, watch: Watch) -> None:
        with self.wake:
            self.watches.discard(watch)

    def loop(self) -> None:
        while True:
            with self.wake:
                now = time.monotonic()
                live = [w for w in self.watches if w.fault is None]
                due = [w for w in live if w.deadline <= now]
                if not due:
                    self.next_wake = min((w.deadline for w in live), default=float("inf"))
                    timeout = self.next_wake - now if live else None
                    self.wake.wait(timeout)
                    continue
            for watch in due:
                watch.stop("deadline")


_watchdog = _Watchdog()


def start_watch(runtime: Runtime, timeout: float) -> Watch:
    watch = Watch(runtime, time.monotonic() + timeout)
    _watchdog.add(watch)
    return watch


def end_watch(watch: Watch) -> None:
    with watch.lock:
        watch.active = False
    _watchdog.remove(watch)
    watch.close_store()


# ---- one stage ------------------------------------------------------------------------------


@dataclass(frozen=True)
class StageSpec:
    argv: list[str]
    env: list[tuple[str, str]]
    stdin: bytes | int  # the bytes themselves, or an open host file the caller closes
    stdout: preview1.Sink
    stderr: preview1.Sink
    root_fd: int  # the workdir, open; the caller closes it
    read_only: bool
    quota: DiskQuota | None = None  # counts what the stage writes to files it opens itself


@dataclass(frozen=True)
class StageOutcome:
    status: int
    fault: Fault | None
    fuel_used: int
    message: str = ""


def run_stage(spec: StageSpec, watch: Watch, fuel: int, limits: Limits) -> StageOutcome:
    """Instantiate box.wasm once and run argv[0]; its output goes straight into the sinks."""
    runtime = watch.runtime
    process = preview1.Process(
        argv=spec.argv,
        env=spec.env,
        stdin=spec.stdin,
        stdout=spec.stdout,
        stderr=spec.stderr,
        root_fd=spec.root_fd,
        guest_root=GUEST_ROOT,
        read_only=spec.read_only,
        deadline=watch.deadline,
        stopped=lambda: watch.fault is not None,
        quota=spec.quota,
    )
    store = watch.take_store(limits)
    runtime.process = process
    memory_size = 0
    try:
        store.set_fuel(max(fuel, 0))
        # Checked after the epoch deadline is armed: a stop() from here on traps the guest.
        if watch.fault is not None:
            return StageOutcome(1, watch.fault, 0)
        failure, memory_size = hostcall.run_start(store, runtime.prepared)
        used = fuel - store.get_fuel()
        exhausted = memory_size * 2 > limits.memory  # see _stopped
    finally:
        runtime.process = None
        if runtime.definitions is not None:
            runtime.definitions.release()
        process.close()
        watch.give_back_store(memory_size)
    if process.host_error is not None:
        raise SandboxError(f"a sandbox host call failed: {process.host_error!r}") from failure
    if failure is None:
        return StageOutcome(0, None, used)
    return _stopped(failure, process, watch, used, exhausted)


def _stopped(
    failure: wasmtime.Trap | wasmtime.WasmtimeError,
    process: preview1.Process,
    watch: Watch,
    used: int,
    exhausted: bool,
) -> StageOutcome:
    """Why the guest did not return from _start: an exit, a limit, or a crash.

    `exhausted`: the stage had grown its memory past half its limit. wasmtime only makes
    memory.grow return -1 at the limit (malloc then fails), so a stage that failed that
    large is taken to have hit it."""
    if process.exit_code is not None:
        status = process.exit_code & 0xFF
        return StageOutcome(status, "memory" if status and exhausted else None, used)
    if process.fault is not None:
        status = 125 if process.fault in ("output", "disk") else 124
        return StageOutcome(status, process.fault, used)
    if watch.fault is not None:
        return StageOutcome(124, watch.fault, used)
    if isinstance(failure, wasmtime.Trap):
        if failure.trap_code == wasmtime.TrapCode.INTERRUPT:
            return StageOutcome(124, "deadline", used)
        if failure.trap_code == wasmtime.TrapCode.OUT_OF_FUEL:
            return StageOutcome(124, "fuel", used)
    if exhausted:
        return StageOutcome(125, "memory", used)
    message = failure.message if isinstance(failure, wasmtime.Trap) else str(failure)
    return StageOutcome(134, "trap", used, message.splitlines()[0])
