"""Runs one box.wasm command (or another module's, `prepare_other`: CPython, MicroPython) in
its own wasmtime instance, under the sandbox's limits.

It owns the engine configuration, the on-disk cache of the compiled modules (each entry
authenticated with the user's own key, in a directory no one else can change), the pool of
engines (each with its linker of host WASI calls, `preview1`, and, on first need, a fuel-free
companion engine for CPython: `prepare_unmetered`), the watchdog that enforces the deadline
(and the backstop behind it for unmetered stages), and the mapping of traps to named faults.
It knows nothing of shell syntax.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import os
import resource
import stat
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import wasmtime

import groundskeeper.sandbox.hostcall as hostcall
import groundskeeper.sandbox.preview1 as preview1
from groundskeeper.fastclass import fastclass, field, replace
from groundskeeper.sandbox.confine import GUEST_ROOT
from groundskeeper.sandbox.fence import groundskeeper_home
from groundskeeper.sandbox.preview1_abi import Sink
from groundskeeper.sandbox.quota import DiskQuota
from groundskeeper.sandbox.result import Fault, SandboxError

BOX_WASM = Path(__file__).with_name("box.wasm")

MEMORY_LIMIT = 256 * 1024 * 1024  # bytes of linear memory a stage may hold
STREAM_LIMIT = 8 * 1024 * 1024  # bytes of stdout (and of stderr) a command line may return
PIPE_LIMIT = 64 * 1024 * 1024  # bytes one stage may write into a pipe, $(…) or a file
# bytes the interpreter itself may hold for one command line: variables, $(…) output,
# word lists and glob results (the shell's own work, not the stages')
HOST_MEMORY_LIMIT = 64 * 1024 * 1024
# loop iterations (for, while, until) one command line may run in all, whatever the deadline
LOOP_STEP_LIMIT = 100_000
# commands `xargs` and `find -exec` may start for one command line in all
FAN_OUT_LIMIT = 10_000
# Fuel per second of deadline, for box.wasm's commands, MicroPython and QuickJS: above any
# real rate, a backstop behind the deadline. 10 G was not: MicroPython's and QuickJS's
# interpreter loops spent 10 G a second on an idle machine, so an endless loop could end by
# fuel before its deadline. CPython (python3) is not fuel-metered: metering cost 20-30 % of
# every python3 run (a pytest check: 3.63 s against 2.93 s). It runs in an engine of its own
# without fuel (`prepare_unmetered`), bounded by the deadline through epoch interruption plus
# an independent backstop timer per stage (`BACKSTOP_GRACE`), and by memory, output and disk.
FUEL_PER_SECOND = 40_000_000_000
# An unmetered stage still running this long after its deadline is interrupted by a timer of
# its own, whatever became of the watchdog (the backstop fuel is for the other modules).
BACKSTOP_GRACE = 1.0
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
# The companion engine's (CPython's): the same but for fuel. Code compiled with fuel checks
# never loads into it, nor the reverse: the cache identity differs, and wasmtime refuses a
# module compiled for another configuration.
_UNMETERED_SETTINGS = (("consume_fuel", False), *_ENGINE_SETTINGS[1:])


def _new_config(metered: bool = True) -> wasmtime.Config:
    config = wasmtime.Config()
    config.consume_fuel = metered
    config.epoch_interruption = True
    config.cranelift_opt_level = "speed"
    # Host calls keep one view of guest memory (hostcall.Definitions): its base must stay put.
    config.memory_may_move = False
    # One slot per instance a run's store can hold (a run leases its engine alone): the
    # same memory is reused stage after stage, ~10% faster when the caches are cold.
    if _POOLING:
        hostcall.use_pooling(config, STAGES_PER_STORE, MEMORY_LIMIT)
    return config


@fastclass
class Limits:
    """The per-run limits; `run` uses the defaults, tests may shrink them."""

    memory: int = MEMORY_LIMIT
    stream: int = STREAM_LIMIT
    pipe: int = PIPE_LIMIT
    fuel_per_second: int = FUEL_PER_SECOND
    host_memory: int = HOST_MEMORY_LIMIT
    loop_steps: int = LOOP_STEP_LIMIT
    fan_out: int = FAN_OUT_LIMIT


# ---- compiling once ------------------------------------------------------------------------


def _wasmtime_identity() -> str:
    """The installed wasmtime's version (its dist-info name) and native library's stat.

    Read off the file system because importlib.metadata costs ~50 ms of a cold start."""
    package = Path(wasmtime.__file__).parent
    names = sorted(n for n in os.listdir(package.parent) if n.startswith("wasmtime-"))
    libraries = sorted(package.glob("*/_libwasmtime*"))
    stats = [(lib.name, lib.stat().st_size, lib.stat().st_mtime_ns) for lib in libraries]
    return repr((names, stats))


# In the cache directory: 32 random bytes, made on first use, that key every entry's MAC.
CACHE_KEY_FILE = ".key"
_MAC_CONTEXT = b"groundskeeper compiled box.wasm v1\0"
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # no FIFO blocks
_CREATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _cache_identity(module_bytes: bytes) -> bytes:
    """What an entry is compiled from and with (a digest): it names the entry, and its MAC
    covers it, so an authentic entry of another box.wasm or wasmtime never loads for this."""
    return compiled_identity(hashlib.sha256(module_bytes).hexdigest())


def compiled_identity(module_sha256: str, metered: bool = True) -> bytes:
    """The identity of a module's compiled form (its SHA-256 in hex): that module, compiled
    by this wasmtime with these engine settings (`metered`: with fuel checks, for the sandbox
    engine; without, for the companion engine), and nothing else."""
    settings = _ENGINE_SETTINGS if metered else _UNMETERED_SETTINGS
    identity = (_wasmtime_identity(), module_sha256, settings)
    return hashlib.sha256(repr(identity).encode()).digest()


def new_engine(metered: bool = True) -> wasmtime.Engine:
    """An engine configured as every sandbox engine is (what a compiled module needs), or as
    the fuel-free companion engine is (`metered` False)."""
    return wasmtime.Engine(_new_config(metered))


def _cache_dir() -> Path:
    return groundskeeper_home() / "cache"


def _entry_name(identity: bytes, stem: str = "box") -> str:
    return f"{stem}-{identity.hex()[:32]}.cwasm"


def entry_name(wasm: Path, stem: str) -> str:
    """The name of the cache entry `wasm` compiles to with this wasmtime and these engine
    settings (`stem`: "box" for box.wasm, as `load_compiled` is given it for others)."""
    return _entry_name(_cache_identity(wasm.read_bytes()), stem)


def _cache_path(module_bytes: bytes, stem: str = "box") -> Path:
    return _cache_dir() / _entry_name(_cache_identity(module_bytes), stem)


def _mac(key: bytes, identity: bytes, payload: bytes) -> bytes:
    # hmac over the payload costs what the plain sha256 it replaces did (~0.7 ms a MB)
    mac = hmac.new(key, _MAC_CONTEXT + identity, "sha256")
    mac.update(payload)
    return mac.digest()


@fastclass(frozen=True)
class _Cache:
    """The cache directory, open, and its key: only once no one else can change either."""

    dir_fd: int
    key: bytes


def _load_module(engine: wasmtime.Engine) -> wasmtime.Module:
    """box.wasm for this engine: from the authenticated disk cache, else compiled."""
    return _load_serialized(engine)[0]


def load_compiled(engine: wasmtime.Engine, wasm: Path, stem: str) -> tuple[wasmtime.Module, bytes]:
    """Another WASI module than box.wasm (QuickJS, …) for `engine`, through the same cache,
    with its serialized form (what later engines of this process deserialize)."""
    return _load_serialized(engine, wasm, stem)


def _load_serialized(
    engine: wasmtime.Engine, wasm: Path | None = None, stem: str = "box", mapped: bool = False
) -> tuple[wasmtime.Module, bytes]:
    """box.wasm (or another `wasm` module, its entries named `stem-…`) for this engine, with
    its serialized form (what later engines deserialize).

    wasmtime runs a deserialized module's native code blindly, so an entry is
    `HMAC(key, identity + payload) + payload`, keyed by a secret only this user can read:
    whatever else sits at its path (torn, altered, another module's, or someone else's
    work) is recompiled and rewritten, never loaded.

    `mapped`: the module may come from the entry's verified copy (`_load_verified`), mapped
    from its file rather than read, MACed and copied — then the serialized form given back
    is empty (a later engine calls this again, and maps the same file).
    """
    if wasm is None:  # looked up at each call: tests point BOX_WASM elsewhere
        wasm = BOX_WASM
    try:
        module_bytes = wasm.read_bytes()
    except OSError as error:
        fix = "run `make wasm`" if wasm == BOX_WASM else "reinstall groundskeeper"
        raise SandboxError(f"cannot read {wasm}: {error}; {fix}") from error
    # Keyed by the module's own hash: 0.2 ms for box.wasm, and the one key a rebuilt
    # box.wasm can never share with a stale artefact (a size or mtime key could).
    identity = _cache_identity(module_bytes)
    cache = _open_cache()
    if cache is None:
        module = wasmtime.Module(engine, module_bytes)
        return module, bytes(module.serialize())
    try:
        name = _entry_name(identity, stem)
        if mapped:
            verified = _load_verified(engine, cache, name, identity)
            if verified is not None:
                return verified, b""
        blob = _read_entry(cache, name)
        payload = blob[32:] if blob is not None else b""
        if blob and hmac.compare_digest(blob[:32], _mac(cache.key, identity, payload)):
            try:
                module = wasmtime.Module.deserialize(engine, payload)
            except wasmtime.WasmtimeError as error:
                _warn("ignoring unusable compiled module %s: %s", _cache_dir() / name, error)
            else:
                if mapped:
                    _save_verified(cache, name, identity, payload)
                return module, payload
        elif blob is not None:
            _warn("ignoring corrupt compiled module %s", _cache_dir() / name)
        module = wasmtime.Module(engine, module_bytes)
        payload = bytes(module.serialize())
        _store_entry(cache, name, _mac(cache.key, identity, payload) + payload)
        return module, payload
    finally:
        os.close(cache.dir_fd)


# ---- the verified copy: an entry's MAC checked once per boot, not on every cold start ------
#
# Beside an entry NAME whose MAC held: NAME.plain, its payload alone (a file wasmtime can map,
# ~0.2 ms, instead of reading, MACing and copying 2 MB, ~5 ms), and NAME.stamp, a MAC by the
# cache's key over the identity, this boot's id and the identity of both files as the kernel
# sees them (device, inode, size, mtime and ctime in ns). Any write to either file, or its
# replacement, changes its ctime, which no one can set back; a reboot changes the boot id,
# so a copy torn by a crash is never taken. Whatever does not match is ignored, and the entry
# is read and MACed as before.
_STAMP_CONTEXT = b"groundskeeper verified compiled module v1\0"
_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def _file_identity(status: os.stat_result) -> tuple[int, ...]:
    return (status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def _stamp(cache: _Cache, identity: bytes, boot: bytes, entry: os.stat_result,
           plain: os.stat_result) -> bytes:  # fmt: skip
    files = repr((_file_identity(entry), _file_identity(plain))).encode()
    return hmac.new(cache.key, _STAMP_CONTEXT + identity + boot + b"\0" + files, "sha256").digest()


def _boot_id() -> bytes | None:
    try:
        boot = _BOOT_ID.read_bytes().strip()
    except OSError:
        return None
    return boot or None


def _load_verified(
    engine: wasmtime.Engine, cache: _Cache, name: str, identity: bytes
) -> wasmtime.Module | None:
    """The entry's verified copy mapped into `engine`, when its stamp holds for this boot and
    both files as they are now; None (nothing trusted) otherwise."""
    boot = _boot_id()
    if boot is None:
        return None
    try:
        entry = os.stat(name, dir_fd=cache.dir_fd, follow_symlinks=False)
        stamp = _read_entry(cache, name + ".stamp")
        fd = os.open(name + ".plain", _READ_FLAGS, dir_fd=cache.dir_fd)
    except OSError:
        return None
    try:
        plain = os.fstat(fd)
        if (
            stamp is None
            or not stat.S_ISREG(entry.st_mode)
            or not stat.S_ISREG(plain.st_mode)
            or _not_only_ours(plain, stat.S_IWGRP | stat.S_IWOTH, "writable") is not None
            or not hmac.compare_digest(stamp, _stamp(cache, identity, boot, entry, plain))
        ):
            return None
        # the file this descriptor holds, whatever has since been renamed over its name
        try:
            return wasmtime.Module.deserialize_file(engine, f"/proc/self/fd/{fd}")
        except wasmtime.WasmtimeError:
            return None
    finally:
        os.close(fd)


def _save_verified(cache: _Cache, name: str, identity: bytes, payload: bytes) -> None:
    """Write the verified copy of an entry whose MAC was just checked, and its stamp: both
    written whole under temporary names and renamed; any failure only leaves it unwritten."""
    boot = _boot_id()
    if boot is None:
        return
    suffix = f"{os.getpid()}-{os.urandom(8).hex()}.tmp"
    plain_tmp, stamp_tmp = f".plain-{suffix}", f".stamp-{suffix}"
    try:
        entry = os.stat(name, dir_fd=cache.dir_fd, follow_symlinks=False)
        fd = os.open(plain_tmp, _CREATE_FLAGS, 0o600, dir_fd=cache.dir_fd)
        try:
            with os.fdopen(os.dup(fd), "wb") as handle:
                handle.write(payload)
            os.rename(plain_tmp, name + ".plain", src_dir_fd=cache.dir_fd,
                      dst_dir_fd=cache.dir_fd)  # fmt: skip
            plain = os.fstat(fd)  # after the rename: a rename changes the ctime
        finally:
            os.close(fd)
        fd = os.open(stamp_tmp, _CREATE_FLAGS, 0o600, dir_fd=cache.dir_fd)
        try:
            os.write(fd, _stamp(cache, identity, boot, entry, plain))
        finally:
            os.close(fd)
        os.rename(stamp_tmp, name + ".stamp", src_dir_fd=cache.dir_fd, dst_dir_fd=cache.dir_fd)
    except OSError:
        for temporary in (plain_tmp, stamp_tmp):
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=cache.dir_fd)


def _open_cache() -> _Cache | None:
    """The cache directory and its key; None (with a warning) if others could change them.

    As ssh's StrictModes: a cache directory that is a symlink, not this user's, or writable
    by group or others, or a key that is not a regular file of this user's that only this
    user can read, turns the cache off rather than trusting what others could put there."""
    path = _cache_dir()
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        dir_fd = os.open(path, _READ_FLAGS | os.O_DIRECTORY)
    except OSError as error:
        # O_NOFOLLOW | O_DIRECTORY fails on a symlink with ENOTDIR, not ELOOP
        why = "it is a symbolic link" if path.is_symlink() else str(error)
        _warn("not using the compiled-module cache %s: %s", path, why)
        return None
    key = None
    problem = _not_only_ours(os.fstat(dir_fd), stat.S_IWGRP | stat.S_IWOTH, "writable")
    if problem is None:
        key = _cache_key(dir_fd)
    else:
        _warn("not using the compiled-module cache %s: %s", path, problem)
    if key is None:
        os.close(dir_fd)
        return None
    return _Cache(dir_fd, key)


def _not_only_ours(status: os.stat_result, others: int, what: str) -> str | None:
    """Why a file is not this user's alone (`others`: the mode bits it must not have)."""
    if status.st_uid != os.geteuid():
        return f"it is owned by uid {status.st_uid}, not by this user ({os.geteuid()})"
    mode = stat.S_IMODE(status.st_mode)
    if mode & others:
        return f"it is {what} by group or others (mode {mode:04o})"
    return None


def _cache_key(dir_fd: int) -> bytes | None:
    """The cache's MAC key, read back with checks, or made on first use."""
    path = _cache_dir() / CACHE_KEY_FILE
    try:
        fd = os.open(CACHE_KEY_FILE, _READ_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        return _new_cache_key(dir_fd, path)
    except OSError as error:
        why = "is a symbolic link" if error.errno == errno.ELOOP else f"cannot be read: {error}"
        _warn("not using the compiled-module cache: its key %s %s", path, why)
        return None
    try:
        key, problem = _read_key(fd, path)
    finally:
        os.close(fd)
    if problem is not None:
        _warn("not using the compiled-module cache: its key %s %s", path, problem)
        return None
    return key


def _read_key(fd: int, path: Path) -> tuple[bytes, str | None]:
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            return b"", "is not a regular file"
        why = _not_only_ours(status, stat.S_IRWXG | stat.S_IRWXO, "readable or writable")
        if why is not None:
            return b"", f"is not private: {why}; fix it with: chmod 600 {path}"
        key = os.read(fd, 33)
    except OSError as error:
        return b"", f"cannot be read: {error}"
    if len(key) != 32:
        return b"", f"is not 32 bytes long; remove it to have a new one made: rm {path}"
    return key, None


def _new_cache_key(dir_fd: int, path: Path) -> bytes | None:
    """Made whole under a temporary name, then linked into place: a process racing this one
    finds no key or a complete one, never part of one, and both end up using the same."""
    temporary = f".key-{os.getpid()}-{os.urandom(8).hex()}.tmp"
    try:
        fd = os.open(temporary, _CREATE_FLAGS, 0o600, dir_fd=dir_fd)
        try:
            os.write(fd, os.urandom(32))
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temporary, CACHE_KEY_FILE, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except FileExistsError:
            pass  # another process made it first: theirs is read back below
        finally:
            os.unlink(temporary, dir_fd=dir_fd)
    except OSError as error:
        _warn("not using the compiled-module cache: cannot make its key %s: %s", path, error)
        return None
    return _cache_key(dir_fd)


def _read_entry(cache: _Cache, name: str) -> bytes | None:
    """The entry's bytes; None if there is none, b"" if there is one that cannot be read."""
    try:
        fd = os.open(name, _READ_FLAGS, dir_fd=cache.dir_fd)
    except FileNotFoundError:
        return None
    except OSError:
        return b""
    try:
        with open(fd, "rb", closefd=False) as handle:
            return handle.read()
    except OSError:
        return b""
    finally:
        os.close(fd)


def _store_entry(cache: _Cache, name: str, blob: bytes) -> None:
    """Written under a temporary name, then renamed: a reader sees an old entry or this one."""
    temporary = f".box-{os.getpid()}-{os.urandom(8).hex()}.tmp"
    try:
        fd = os.open(temporary, _CREATE_FLAGS, 0o600, dir_fd=cache.dir_fd)
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(blob)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, name, src_dir_fd=cache.dir_fd, dst_dir_fd=cache.dir_fd)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=cache.dir_fd)
            raise
    except OSError as error:  # a read-only home still runs, only slower next time
        _warn("cannot cache compiled module at %s: %s", _cache_dir() / name, error)


def _warn(message: str, *args: object) -> None:
    # logging is imported only when there is something to say: it costs a cold start ~5 ms
    import logging

    logging.getLogger(__name__).warning(message, *args)


# ---- engines: one per concurrent run, reused ------------------------------------------------


@fastclass(eq=False)
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
    others: dict[str, int] = field(default_factory=dict)  # other modules' handles, by kind
    served: set[tuple[str, str]] = field(default_factory=set)  # imports its linker defines
    # The store its stages run in, kept from a run that ended well to the next (see
    # STAGES_PER_STORE): making one and freeing it cost a short check ~5% of its time. Each
    # run arms it again (its epoch deadline; fuel is set per stage); a run with another
    # memory limit gets a new one.
    store: wasmtime.Store | None = None
    store_memory: int = 0
    stages_in_store: int = 0
    armed_by: Watch | None = None  # the run whose epoch deadline the store holds
    # False for the companion engine, made without fuel (`prepare_unmetered`)
    metered: bool = True
    # this engine's fuel-free companion, leased with it (CPython's stages run there)
    unmetered: Runtime | None = None

    def close_store(self) -> None:
        if self.store is not None:
            self.store.close()
            self.store = None
        self.armed_by = None

    def on_error(self, error: BaseException) -> bytes:
        if self.process is not None:
            return self.process.on_error(error)
        return b"host error"


_pool: list[Runtime] = []
_pool_lock = threading.Lock()
_first_module: list[bytes] = []  # the serialized module, shared by engines made later
# the same for the other modules, by kind (its fuel-free companion engine's: "KIND/unmetered")
_other_modules: dict[str, bytes] = {}


def _new_engine(metered: bool = True) -> wasmtime.Engine:
    try:
        return wasmtime.Engine(_new_config(metered))
    except wasmtime.WasmtimeError as error:  # e.g. a ulimit -v too small for its memory pool
        raise SandboxError(f"cannot create a wasmtime engine: {error}") from error


def _new_runtime() -> Runtime:
    engine = _new_engine()
    with _pool_lock:
        serialized = _first_module[0] if _first_module else None
    if serialized is None:
        module, payload = _load_serialized(engine, mapped=True)
        with _pool_lock:
            if not _first_module and payload:  # none: mapped, each engine maps it again
                _first_module.append(payload)
    else:
        module = wasmtime.Module.deserialize(engine, serialized)
    runtime = Runtime(engine, module, wasmtime.Linker(engine))
    runtime.definitions = hostcall.Definitions(runtime.linker)
    _define_imports(runtime, module, "box.wasm", {})
    runtime.prepared = hostcall.prepare(runtime.linker, module)
    return runtime


def _define_imports(
    runtime: Runtime,
    module: wasmtime.Module,
    name: str,
    own: Mapping[tuple[str, str], hostcall.HostFunction],
) -> None:
    """Serve `module`'s imports in the runtime's linker: WASI calls from `preview1`, and
    `own` (module, name) functions; any other import is refused before anything runs."""
    assert runtime.definitions is not None
    for item in module.imports:
        functype = item.type
        key = (item.module, item.name or "")
        wasi_call = key[0] == "wasi_snapshot_preview1" and key[1] in preview1.CALLS
        if not isinstance(functype, wasmtime.FuncType) or not (wasi_call or key in own):
            raise SandboxError(
                f"{name} imports {item.module}.{item.name}, which the sandbox does not provide"
            )
        if key in runtime.served:
            continue  # served already, for box.wasm or another module
        function = preview1.serve(lambda: runtime.process, key[1]) if wasi_call else own[key]
        runtime.definitions.define(key[0], key[1], functype, function, runtime.on_error)
        runtime.served.add(key)


def prepare_other(
    runtime: Runtime,
    kind: str,
    wasm: Path,
    own: Mapping[tuple[str, str], hostcall.HostFunction],
) -> int:
    """A module other than box.wasm (`kind` names it), made ready in this runtime's engine
    once: compiled through the same authenticated cache, its imports served like box.wasm's
    plus `own`. Runs share the engine's epoch, fuel and store, so every limit holds alike."""
    return prepare_module(
        runtime, kind, wasm.name, lambda engine: _load_serialized(engine, wasm, kind), own
    )


def prepare_module(
    runtime: Runtime,
    kind: str,
    name: str,
    load: Callable[[wasmtime.Engine], tuple[wasmtime.Module, bytes]],
    own: Mapping[tuple[str, str], hostcall.HostFunction],
) -> int:
    """`prepare_other` for a module `load` gives (with its serialized form) for an engine the
    first time this process needs it; later engines deserialize that form (or call `load`
    again when it gave an empty one)."""
    prepared = runtime.others.get(kind)
    if prepared is not None:
        return prepared
    module = _module_for(runtime.engine, kind, runtime.metered, load)
    _define_imports(runtime, module, name, own)
    prepared = hostcall.prepare(runtime.linker, module)
    runtime.others[kind] = prepared
    return prepared


def _module_for(
    engine: wasmtime.Engine,
    kind: str,
    metered: bool,
    load: Callable[[wasmtime.Engine], tuple[wasmtime.Module, bytes]],
) -> wasmtime.Module:
    key = kind if metered else f"{kind}/unmetered"  # neither engine loads the other's code
    with _pool_lock:
        serialized = _other_modules.get(key)
    if serialized is not None:
        return wasmtime.Module.deserialize(engine, serialized)
    module, payload = load(engine)
    if payload:  # none: `load` maps its file into each engine, which costs nothing to redo
        with _pool_lock:
            _other_modules.setdefault(key, payload)
    return module


def prepare_unmetered(
    runtime: Runtime,
    kind: str,
    name: str,
    load: Callable[[wasmtime.Engine], tuple[wasmtime.Module, bytes]],
    own: Mapping[tuple[str, str], hostcall.HostFunction],
) -> tuple[Runtime, int]:
    """`prepare_module` in `runtime`'s fuel-free companion engine, made on first need and
    leased with it (`load` gives a module compiled for that engine: `compiled_identity`
    with `metered` False): the companion and the module's handle there, for `run_stage`.

    It differs from the runtime's own engine in fuel alone. Its stages are bounded by the
    same run's deadline: `Watch.stop` bumps both engines' epochs, `Watch.take_store` arms
    its store for the run, and `run_stage` adds a backstop timer per stage."""
    companion = runtime.unmetered
    if companion is None:
        engine = _new_engine(metered=False)
        module = _module_for(engine, kind, False, load)
        companion = Runtime(engine, module, wasmtime.Linker(engine), metered=False)
        companion.definitions = hostcall.Definitions(companion.linker)
        _define_imports(companion, module, name, own)
        companion.prepared = hostcall.prepare(companion.linker, module)
        companion.others[kind] = companion.prepared
        runtime.unmetered = companion
    return companion, prepare_module(companion, kind, name, load, own)


def lease_runtime() -> Runtime:
    with _pool_lock:
        if _pool:
            return _pool.pop()
    return _new_runtime()


def release_runtime(runtime: Runtime) -> None:
    with _pool_lock:
        _pool.append(runtime)


# ---- the watchdog ---------------------------------------------------------------------------


@fastclass(eq=False)
class Watch:
    """One run as the watchdog sees it: its deadline, and why it was stopped."""

    runtime: Runtime
    deadline: float
    fault: Fault | None = None
    active: bool = True
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take_store(self, limits: Limits, runtime: Runtime | None = None) -> wasmtime.Store:
        """The store of the run's runtime (or of its companion `runtime`), with
        `limits.memory` as its memory limit, armed for this run: one epoch on from now, so a
        stop() of this run traps its guest (an earlier run's stop may have used up the
        deadline the store was armed with)."""
        runtime = runtime or self.runtime
        if runtime.store is not None and runtime.store_memory != limits.memory:
            runtime.close_store()
        if runtime.store is None:
            runtime.store = wasmtime.Store(runtime.engine)
            runtime.store.set_limits(memory_size=limits.memory)
            runtime.store_memory = limits.memory
            runtime.stages_in_store = 0
        if runtime.armed_by is not self:
            runtime.store.set_epoch_deadline(1)
            runtime.armed_by = self
        return runtime.store

    def give_back_store(self, memory_size: int, runtime: Runtime | None = None) -> None:
        runtime = runtime or self.runtime
        runtime.stages_in_store += 1
        if runtime.stages_in_store >= STAGES_PER_STORE or memory_size > SMALL_STAGE_MEMORY:
            runtime.close_store()

    def close_store(self) -> None:
        """Free the run's stores: its runtime's and its companion's."""
        self.runtime.close_store()
        if self.runtime.unmetered is not None:
            self.runtime.unmetered.close_store()

    def stop(self, fault: Fault) -> None:
        """Record why and interrupt the running stage (stores trap one epoch later): in the
        runtime's engine and in its fuel-free companion's, whichever runs it.

        Under the lock and only while active: once the run has ended, its engine may be
        leased to another run whose stage this must not stop."""
        with self.lock:
            if not self.active:
                return
            if self.fault is None:
                self.fault = fault
            self.runtime.engine.increment_epoch()
            # read after the fault is set: a companion made from now on is armed before its
            # stage checks the fault (run_stage), so that stage never starts
            companion = self.runtime.unmetered
            if companion is not None:
                companion.engine.increment_epoch()


class _Backstop:
    """An unmetered stage's own timer: it bumps its engine's epoch (trapping the guest as the
    deadline does) if the stage is still running `BACKSTOP_GRACE` after the run's deadline,
    should the watchdog or `Watch.stop` have failed to. Fuel is this backstop for the other
    modules; a stage without fuel gets this instead. Cancelled when the stage ends, under a
    lock, so it never fires into a later stage of the same engine."""

    def __init__(self, engine: wasmtime.Engine, deadline: float) -> None:
        self.engine = engine
        self.lock = threading.Lock()
        self.live = True
        self.fired = False
        delay = max(deadline - time.monotonic(), 0.0) + BACKSTOP_GRACE
        # a lock's wait takes no longer timeout (an endless deadline would raise OverflowError)
        self.timer = threading.Timer(min(delay, threading.TIMEOUT_MAX), self.fire)
        self.timer.daemon = True
        self.timer.name = "gk-backstop"
        self.timer.start()

    def fire(self) -> None:
        with self.lock:
            if self.live:
                self.fired = True
                self.engine.increment_epoch()

    def cancel(self) -> None:
        with self.lock:
            self.live = False
        self.timer.cancel()


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
                    # none live, or only runs excused from their deadline for now (inf)
                    timeout = self.next_wake - now if self.next_wake < float("inf") else None
                    self.wake.wait(timeout)
                    continue
            for watch in due:
                watch.stop("deadline")


_watchdog = _Watchdog()
_interrupted = threading.Event()  # set: every run stops at once, and every new one too


def interrupt_runs() -> None:
    """Stop every run of this process now, as its deadline would, with the fault
    "interrupted"; runs started from now on stop at once, until `allow_runs`. Safe from a
    signal handler (it takes only locks no handler's thread can hold for long)."""
    _interrupted.set()
    with _watchdog.wake:
        watches = list(_watchdog.watches)
    for watch in watches:
        watch.stop("interrupted")


def allow_runs() -> None:
    _interrupted.clear()


def start_watch(runtime: Runtime, timeout: float) -> Watch:
    watch = Watch(runtime, time.monotonic() + timeout)
    if _interrupted.is_set():
        watch.fault = "interrupted"
    _watchdog.add(watch)
    return watch


@contextlib.contextmanager
def excused(watch: Watch) -> Iterator[None]:
    """Time spent inside does not count against the run's deadline: for the sandbox's own
    one-time work in a run (compiling a module the line turned out to need), which box.wasm
    does before the watch starts. A deadline already due when this begins still stops it."""
    with watch.lock:
        deadline, watch.deadline = watch.deadline, float("inf")
    started = time.monotonic()
    try:
        yield
    finally:
        with watch.lock:
            watch.deadline = deadline + (time.monotonic() - started)
        _watchdog.add(watch)  # wakes it when this is now the nearest deadline


def end_watch(watch: Watch, keep_store: bool = False) -> None:
    """The run is over. `keep_store`: its runtime keeps the store for its next run, unless
    the run was stopped."""
    with watch.lock:
        watch.active = False
    _watchdog.remove(watch)
    if not keep_store or watch.fault is not None:
        watch.close_store()


# ---- one stage ------------------------------------------------------------------------------


@fastclass(frozen=True)
class StageSpec:
    argv: list[str]
    env: list[tuple[str, str]]
    stdin: bytes | int  # the bytes themselves, or an open host file the caller closes
    stdout: Sink
    stderr: Sink
    root_fd: int  # the workdir, open; the caller closes it
    read_only: bool
    quota: DiskQuota | None = None  # counts what the stage writes to files it opens itself
    # more preopened directories, each (host fd the caller closes, guest name, writable)
    shelves: tuple[tuple[int, str, bool], ...] = ()
    dev_null: bool = False  # a `/dev` holding `null`
    # names ending so are absent to this stage (MicroPython's `.mpy`: `micropython.py`)
    absent_suffixes: tuple[bytes, ...] = ()
    # CPython taking or resuming a memory image (`cpython_warm`)
    rewind: hostcall.Rewind | None = None


@fastclass(frozen=True)
class StageOutcome:
    status: int
    fault: Fault | None
    fuel_used: int
    message: str = ""
    stdin_read: int = 0  # bytes of an in-memory stdin the stage read


def run_stage(
    spec: StageSpec,
    watch: Watch,
    fuel: int,
    limits: Limits,
    program: int = 0,
    runtime: Runtime | None = None,
) -> StageOutcome:
    """Instantiate box.wasm once and run argv[0]; its output goes straight into the sinks.

    `program`: another module's handle from `prepare_other`, run instead of box.wasm; or
    from `prepare_unmetered`, with the companion `runtime` it gave: then `fuel` is not used,
    fuel_used is 0, and a backstop timer stands behind the deadline."""
    runtime = runtime or watch.runtime
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
        shelves=spec.shelves,
        dev_null=spec.dev_null,
        absent_suffixes=spec.absent_suffixes,
        on_yield=spec.rewind.at_yield if spec.rewind is not None else None,
    )
    if program and process.reads is not None:
        process.reads.taint("a module other than box.wasm")  # its own host calls
    stdin = process.fds[0]  # the handle itself: the guest may renumber or close fd 0
    store = watch.take_store(limits, runtime)
    runtime.process = process
    memory_size = 0
    backstop: _Backstop | None = None
    try:
        if runtime.metered:
            store.set_fuel(max(fuel, 0))
        # Checked after the epoch deadline is armed: a stop() from here on traps the guest.
        if watch.fault is not None:
            return StageOutcome(1, watch.fault, 0)
        if not runtime.metered:
            backstop = _Backstop(runtime.engine, watch.deadline)
        failure, memory_size = hostcall.run_start(store, program or runtime.prepared, spec.rewind)
        used = fuel - store.get_fuel() if runtime.metered else 0
        exhausted = memory_size * 2 > limits.memory  # see _stopped
    finally:
        if backstop is not None:
            backstop.cancel()
        runtime.process = None
        if runtime.definitions is not None:
            runtime.definitions.release()
        process.close()
        watch.give_back_store(memory_size, runtime)
    if process.host_error is not None:
        raise SandboxError(f"a sandbox host call failed: {process.host_error!r}") from failure
    if failure is None:
        return StageOutcome(0, None, used, stdin_read=stdin.offset)
    return replace(_stopped(failure, process, watch, used, exhausted), stdin_read=stdin.offset)


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
