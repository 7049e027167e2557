"""CPython's warm start: `python3 -m pytest …` resumed from a memory image of an interpreter
that has already started and imported pytest, instead of starting from nothing.

It owns the transform of the pinned module that makes an image possible (binaryen's
asyncify on the frames between `_start` and the guest's `sched_yield`, at set-up), taking
the image (set-up runs the site directory's `gk_warm` and the host keeps the memory at its
`os.sched_yield()`), where the image lives and when one is used. The guest's half (what a
resumed interpreter does before running the module) is `cpython_site/gk_warm.py`. A start
that the image cannot stand for exactly (other options, `PYTHON*` or locale variables) is an
ordinary cold one; so is every start when there is no image.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import groundskeeper.sandbox.hostcall as hostcall

# The pinned build's functions on the call stack from `_start` to its `sched_yield` import
# when a Python function called from `-c` calls `os.sched_yield()` (read from the wasm
# backtrace of that moment; no test derives them again: set-up's probe of a warm start from
# each image is what fails when they are wrong): the only ones asyncify instruments, so
# every other function runs as it did.
FRAMES = (43, 4056, 4057, 4053, 4055, 3280, 3281, 1191, 3283, 747, 365, 1893, 7322)
# What the transform is, in the compiled module's identity: a change compiles it again.
TRANSFORM = "asyncify-1 binaryen-116 " + ",".join(map(str, FRAMES))
# The interpreter options an image is taken with, one image each: none (a check's
# `python3 -m pytest …`), and the pytest contracts' `-E -s`.
IMAGE_OPTIONS: tuple[tuple[str, ...], ...] = ((), ("-E", "-s"))
# How set-up starts the interpreter an image is taken of (after its options).
IMAGE_CODE = ("-c", "__import__('gk_warm').ready()")
# The request a warm start reads in its private /tmp (argv and environment, as JSON).
REQUEST = ".gk-warm"
_MAGIC = b"GKIMAGE1\n"
# Variables CPython reads as it starts, before any code of ours: a start given any of them
# is a cold one (the image was taken without them).
_STARTUP_PREFIXES = ("PYTHON", "LC_")
_STARTUP_NAMES = frozenset({"LANG", "LANGUAGE", "TZ"})


def transform(wasm: bytes) -> bytes:
    """The pinned module with its DWARF sections dropped (binaryen would not optimise it
    otherwise, and wasmtime does not read them), the `FRAMES` instrumented by asyncify so
    that a call to `sched_yield` can unwind and rewind the stack, and the stack pointer
    exported as `__stack_pointer` (the image carries its value)."""
    import platform

    from cffi import FFI
    from icpp_binaryen import _lib as bundled

    ffi = FFI()
    ffi.cdef(_BINARYEN_API)
    name = "libbinaryen.dylib" if platform.system() == "Darwin" else "libbinaryen.so"
    lib: Any = ffi.dlopen(str(bundled.LIB_DIR / name))  # declared in _BINARYEN_API
    stripped = _without_debug_sections(wasm)
    buffer = ffi.new("char[]", stripped)
    module = lib.BinaryenModuleRead(buffer, len(stripped))
    if module == ffi.NULL:
        raise ValueError("binaryen could not read the module")
    try:
        if lib.BinaryenGetNumFunctions(module) <= max(FRAMES):  # binaryen would not check
            raise ValueError("the module is not the pinned build: it lacks the frames")
        names = []
        for index in FRAMES:
            function = lib.BinaryenGetFunctionByIndex(module, index)
            label = ffi.string(lib.BinaryenFunctionGetName(function))
            names.append(label.decode() if isinstance(label, bytes) else label)
        stack = lib.BinaryenGetGlobalByIndex(module, 0)
        lib.BinaryenSetPassArgument(b"asyncify-onlylist", ",".join(names).encode())
        lib.BinaryenSetPassArgument(b"asyncify-imports", b"wasi_snapshot_preview1.sched_yield")
        lib.BinaryenSetOptimizeLevel(2)
        lib.BinaryenSetShrinkLevel(0)
        passes = ffi.new("const char*[]", [ffi.new("char[]", b"asyncify")])
        lib.BinaryenModuleRunPasses(module, passes, 1)
        lib.BinaryenAddGlobalExport(module, lib.BinaryenGlobalGetName(stack), b"__stack_pointer")
        if not lib.BinaryenModuleValidate(module):
            raise ValueError("binaryen's asyncify made an invalid module")
        written = lib.BinaryenModuleAllocateAndWrite(module, ffi.NULL)
        try:
            return bytes(ffi.buffer(written.binary, written.binaryBytes))
        finally:
            bundled.libc.free(written.binary)
    finally:
        lib.BinaryenModuleDispose(module)


_BINARYEN_API = """
typedef uint32_t BinaryenIndex;
typedef struct BinaryenModule *BinaryenModuleRef;
typedef struct BinaryenFunction *BinaryenFunctionRef;
typedef struct BinaryenGlobal *BinaryenGlobalRef;
typedef struct BinaryenExport *BinaryenExportRef;
typedef struct {
  void *binary;
  size_t binaryBytes;
  char *sourceMap;
} BinaryenModuleAllocateAndWriteResult;
BinaryenModuleRef BinaryenModuleRead(char *input, size_t inputSize);
void BinaryenModuleDispose(BinaryenModuleRef module);
bool BinaryenModuleValidate(BinaryenModuleRef module);
void BinaryenModuleRunPasses(BinaryenModuleRef module, const char **passes,
                             BinaryenIndex numPasses);
void BinaryenSetPassArgument(const char *name, const char *value);
void BinaryenSetOptimizeLevel(int level);
void BinaryenSetShrinkLevel(int level);
BinaryenIndex BinaryenGetNumFunctions(BinaryenModuleRef module);
BinaryenFunctionRef BinaryenGetFunctionByIndex(BinaryenModuleRef module, BinaryenIndex index);
const char *BinaryenFunctionGetName(BinaryenFunctionRef func);
BinaryenGlobalRef BinaryenGetGlobalByIndex(BinaryenModuleRef module, BinaryenIndex index);
const char *BinaryenGlobalGetName(BinaryenGlobalRef global);
BinaryenExportRef BinaryenAddGlobalExport(BinaryenModuleRef module, const char *internalName,
                                          const char *externalName);
BinaryenModuleAllocateAndWriteResult BinaryenModuleAllocateAndWrite(BinaryenModuleRef module,
                                                                    const char *sourceMapUrl);
"""


def _without_debug_sections(wasm: bytes) -> bytes:
    """The module without its `.debug_*` custom sections (every other section kept)."""
    kept = [wasm[:8]]
    at = 8
    while at < len(wasm):
        start = at
        section = wasm[at]
        size, at = _leb(wasm, at + 1)
        end = at + size
        name_size, name_at = _leb(wasm, at) if section == 0 else (0, at)
        if not (section == 0 and wasm[name_at : name_at + name_size].startswith(b".debug")):
            kept.append(wasm[start:end])
        at = end
    return b"".join(kept)


def _leb(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def wanted(argv: Sequence[str], env: Sequence[tuple[str, str]]) -> tuple[str, ...] | None:
    """The options of the image that stands for this start, if one does: `python3 [OPTIONS]
    -m pytest [ARG…]` with the OPTIONS of an image, and no variable CPython reads as it
    starts (under `-E`, it reads none named `PYTHON*`); else None (a cold start)."""
    if "-m" not in argv[1:4]:
        return None
    at = argv.index("-m", 1)
    options = tuple(argv[1:at])
    if options not in IMAGE_OPTIONS or at + 1 >= len(argv):
        return None
    if argv[at + 1] != "pytest":  # what pytest's own run would import anyway: no other
        return None  # module could tell the image from a cold start by what is imported
    prefixes = _STARTUP_PREFIXES[1:] if "-E" in options else _STARTUP_PREFIXES
    if any(key.startswith(prefixes) or key in _STARTUP_NAMES for key, _ in env):
        return None
    return options


def request(argv: Sequence[str], env: Sequence[tuple[str, str]]) -> bytes:
    """What the resumed guest is to run, as it reads it from `REQUEST`."""
    return json.dumps({"argv": list(argv), "env": [list(pair) for pair in env]}).encode()


# ---- the image on disk ---------------------------------------------------------------------


def image_path(runtime: Path, module_identity: str, site: str, options: tuple[str, ...]) -> Path:
    """Where the image of this compiled module, this site directory and these interpreter
    options lives."""
    key = f"{module_identity} {site} {' '.join(options)}"
    return runtime / f"python-{hashlib.sha256(key.encode()).hexdigest()[:32]}.image"


def write_image(path: Path, image: hostcall.Image) -> None:
    """`image` into `path`, written whole under another name, then renamed; readable by all,
    writable by its owner alone (like the compiled module beside it)."""
    header = json.dumps(
        {"stack_pointer": image.stack_pointer, "data": image.data, "size": len(image.memory)}
    ).encode()
    temporary = path.with_name(f".{path.name}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(_MAGIC + header + b"\n")
            handle.write(image.memory)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


_loaded: dict[Path, tuple[tuple[int, ...], hostcall.Image]] = {}
_loading = threading.Lock()


def read_image(path: Path) -> hostcall.Image | None:
    """The image at `path`, read once a process (again when the file changes); None when
    there is none, or it is not a regular file only its owner or root can change."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if (
            not stat.S_ISREG(info.st_mode)
            or info.st_uid not in (os.geteuid(), 0)
            or stat.S_IMODE(info.st_mode) & (stat.S_IWGRP | stat.S_IWOTH)
        ):
            return None
        key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        with _loading:
            known = _loaded.get(path)
            if known is not None and known[0] == key:
                return known[1]
            image = _parse(handle.read())
            if image is not None:
                _loaded[path] = (key, image)
            return image


def _parse(data: bytes) -> hostcall.Image | None:
    if not data.startswith(_MAGIC):
        return None
    line_end = data.find(b"\n", len(_MAGIC))
    with contextlib.suppress(ValueError, KeyError, TypeError):
        header = json.loads(data[len(_MAGIC) : line_end])
        memory = data[line_end + 1 :]
        if len(memory) == header["size"] and len(memory) % hostcall.PAGE == 0:
            return hostcall.Image(memory, int(header["stack_pointer"]), int(header["data"]))
    return None


__all__ = ["FRAMES", "IMAGE_CODE", "IMAGE_OPTIONS", "REQUEST", "read_image", "transform", "wanted"]
