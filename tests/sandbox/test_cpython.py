"""`python3`/`python` (CPython 3.12 under the sandbox's own WASI layer): attacks first, by
every way a Python program can touch a file, then limits, the set-up, and ordinary use
(the standard library, pytest, unittest, doctest).

What CPython in the sandbox and the host's CPython both do is compared in
test_battery_python.py; this file pins what only the sandbox decides.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from groundskeeper import sandbox
from groundskeeper.sandbox import ShellResult, cpython, shell, wasi
from groundskeeper.sandbox.quota import DiskQuota
from tests.sandbox.python_workdirs import (
    assert_a_loop_ends_at_the_deadline,
    fenced_plan,
    links_out,
    py,
    snapshot,
)

SECRET = "TOP-SECRET-9e2f"
MiB = 1024 * 1024


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """tmp/outside holds the secret; tmp/work is the workdir, with links pointing out."""
    work = links_out(tmp_path, SECRET)
    (work / "link-up").symlink_to("../x")
    return work


def sh(work: Path, cmdline: str, **options: object) -> ShellResult:
    return sandbox.run(cmdline, workdir=work, timeout=30, **options)  # type: ignore[arg-type]


# One guest run tries every attack and prints, for each, how it was refused; a success prints
# ESCAPED and what it got. Each attack is a statement list run in its own try block.
ATTACK_RUNNER = """
import os, sys, shutil, pathlib, sqlite3
attacks = [line.split(' :: ', 1) for line in open('attacks.txt').read().splitlines()]
for name, code in attacks:
    try:
        exec(code, {'os': os, 'shutil': shutil, 'pathlib': pathlib, 'sqlite3': sqlite3})
        print(name, 'ESCAPED')
    except Exception as error:
        print(name, 'refused', type(error).__name__, getattr(error, 'errno', None))
"""

OUTSIDE_ATTACKS = {
    "open-abs": "open('/etc/passwd').read()",
    "open-up": "open('../x').read()",
    "open-sub-up": "open('sub/../../x').read()",
    "open-link": "open('link-file').read()",
    "open-link-dir": "open('link-dir/inner').read()",
    "open-link-up": "open('link-up').read()",
    "write-up": "open('../new', 'w').write('x')",
    "write-tmp-host": "open('/tmp/../x', 'w').write('x')",
    "listdir-up": "os.listdir('..')",
    "listdir-root": "os.listdir('/')",
    "scandir-link": "list(os.scandir('link-dir'))",
    "stat-up": "os.stat('../x')",
    "chdir-up": "os.chdir('..'); open('x').read()",
    "chdir-root": "os.chdir('/'); os.listdir('.')",
    "rename-out": "os.rename('a.txt', '../moved')",
    "replace-in": "os.replace('../x', 'got')",
    "link-out": "os.link('../x', 'got')",
    "link-link": "os.link('link-file', 'got', follow_symlinks=True)",
    "symlink-abs": "os.symlink('/etc/passwd', 'got'); open('got').read()",
    "symlink-up": "os.symlink('../x', 'got'); open('got').read()",
    "mkdir-up": "os.mkdir('../made')",
    "remove-up": "os.remove('../x')",
    "pathlib-read": "pathlib.Path('../x').read_text()",
    "pathlib-resolve": "pathlib.Path('link-file').resolve(strict=True).read_text()",
    "pathlib-glob": "assert list(pathlib.Path('..').glob('*'))",
    "shutil-copy": "shutil.copy('../x', 'got')",
    "shutil-copytree": "shutil.copytree('link-dir', 'got', symlinks=False)",
    "shutil-rmtree-up": "shutil.rmtree('../outside')",
    "shutil-move": "shutil.move('a.txt', '../moved')",
    "sqlite-out": "sqlite3.connect('../x.db').execute('create table t(x)')",
    "sqlite-uri": "sqlite3.connect('file:/etc/passwd?mode=ro', uri=True).execute('select 1')",
    "open-fd-dir": "fd = os.open('..', os.O_RDONLY)",
    "site-write": "open('/usr/local/lib/python3.12/site-packages/sitecustomize.py', 'a')",
    "site-remove": "os.remove('/usr/local/lib/python3.12/site-packages/sitecustomize.py')",
    "site-rmtree": "shutil.rmtree('/usr/local/lib/python3.12/site-packages/pytest')",
    "site-link-in": "os.link('/usr/local/lib/python3.12/site-packages/py.py', 'py.py')",
}


def attack(work: Path, attacks: dict[str, str], **options: object) -> dict[str, str]:
    (work / "attacks.txt").write_text("".join(f"{k} :: {v}\n" for k, v in attacks.items()))
    (work / "attack.py").write_text(ATTACK_RUNNER)
    result = sh(work, "python3 attack.py", **options)
    assert (result.status, result.fault) == (0, None), result.stderr
    assert SECRET not in result.stdout + result.stderr
    (work / "attacks.txt").unlink()
    (work / "attack.py").unlink()
    return dict(line.split(" ", 1) for line in result.stdout.splitlines())


def test_every_way_out_of_the_workdir_is_refused(layout: Path) -> None:
    before = snapshot(layout)
    found = attack(layout, OUTSIDE_ATTACKS)
    assert sorted(found) == sorted(OUTSIDE_ATTACKS)
    escaped = {name: how for name, how in found.items() if not how.startswith("refused")}
    assert escaped == {}
    assert snapshot(layout) == before
    assert not (layout.parent / "moved").exists() and not (layout / "got").exists()


def test_the_errors_are_the_ones_a_program_expects(layout: Path) -> None:
    found = attack(layout, {k: OUTSIDE_ATTACKS[k] for k in ("open-up", "open-abs", "site-write")})
    assert found == {
        "open-up": "refused PermissionError 76",  # ENOTCAPABLE
        "open-abs": "refused FileNotFoundError 44",
        "site-write": "refused OSError 69",  # EROFS: the site directory is read-only
    }


@pytest.fixture
def fenced(tmp_path: Path) -> Iterator[Path]:
    """A workdir holding a running plan, its control directory and a protected input."""
    with fenced_plan(tmp_path, {"tests/test_key.py": "def test_key():\n    assert 1\n"}) as root:
        yield root


FENCE_ATTACKS = {
    "read-ledger": "open('.groundskeeper/plan.org/_steps.jsonl').read()",
    "list-control": "os.listdir('.groundskeeper')",
    "glob-control": "assert list(pathlib.Path('.').glob('.groundskeeper/*'))",
    "walk-control": "assert any('.groundskeeper' in d for _, d, _ in os.walk('.'))",
    "sqlite-control": "sqlite3.connect('.groundskeeper/plan.org/x.db').execute('create table t')",
    "write-plan": "open('plan.org', 'w').write('* DONE x')",
    "rename-plan": "os.rename('plan.org', 'p.org')",
    "write-test": "open('tests/test_key.py', 'w').write('def test_key(): pass')",
    "append-test": "open('tests/test_key.py', 'a').write('#')",
    "truncate-test": "os.truncate('tests/test_key.py', 0)",
    "remove-test": "os.remove('tests/test_key.py')",
    "rename-test": "os.rename('tests/test_key.py', 'tests/old.py')",
    "replace-test": "open('t.py', 'w').write('x'); os.replace('t.py', 'tests/test_key.py')",
    "rename-dir": "os.rename('tests', 'tests2')",
    "link-test": "os.link('tests/test_key.py', 'alias.py'); open('alias.py', 'a').write('#')",
    "utime-test": "os.utime('tests/test_key.py', (0, 0))",
    "chmod-test": "os.chmod('tests/test_key.py', 0o777); "
    "assert os.stat('tests/test_key.py').st_mode & 0o777 == 0o777",
    "shutil-copy-over": "shutil.copy('plan.org', 'tests/test_key.py')",
    "shutil-move-over": "open('t2.py', 'w').write('x'); shutil.move('t2.py', 'tests/test_key.py')",
    "rmtree-tests": "shutil.rmtree('tests')",
    "sqlite-over-test": "sqlite3.connect('tests/test_key.py').execute('create table t(x)')",
    "symlink-swap": "os.symlink('a', 'tests/test_key.py')",
}


def test_the_control_plane_is_absent_and_protected_inputs_stay(fenced: Path) -> None:
    before = snapshot(fenced)
    found = attack(fenced, FENCE_ATTACKS)
    escaped = {name: how for name, how in found.items() if not how.startswith("refused")}
    assert escaped == {}
    assert sorted(found) == sorted(FENCE_ATTACKS)
    after = snapshot(fenced)
    for made in ("work/t.py", "work/t2.py"):  # the decoys the attacks wrote first
        after.pop(made, None)
    assert after == before


def test_a_read_only_run_refuses_every_write_but_tmp_is_private(layout: Path) -> None:
    before = snapshot(layout)
    found = attack(
        layout,
        {
            "create": "open('new.txt', 'w')",
            "append": "open('a.txt', 'a').write('x')",
            "remove": "os.remove('a.txt')",
            "mkdir": "os.mkdir('d')",
            "sqlite": "sqlite3.connect('db.sqlite').execute('create table t(x)')",
            "tmp-is-not-the-workdir": "open('/tmp/t', 'w').write('x'); open('t').read()",
        },
        read_only=True,
    )
    assert found == {
        "create": "refused OSError 69",
        "append": "refused OSError 69",
        "remove": "refused OSError 69",
        "mkdir": "refused OSError 69",
        "sqlite": "refused OperationalError None",
        "tmp-is-not-the-workdir": "refused FileNotFoundError 44",
    }
    assert snapshot(layout) == before


# ---- limits ----------------------------------------------------------------------------------


def test_an_endless_loop_ends_at_the_deadline(layout: Path) -> None:
    assert_a_loop_ends_at_the_deadline(layout, "python3", seconds=2, within=5)


def test_an_allocation_bomb_ends_at_the_memory_limit(layout: Path) -> None:
    code = "x = []\nwhile True: x.append(bytearray(1 << 20))"
    result = shell.run_cmdline(
        f"python3 -c {py(code)}; echo after",
        workdir=layout,
        read_only=False,
        timeout=30,
        env=None,
        limits=wasi.Limits(memory=64 * MiB),
    )
    assert (result.status, result.fault, result.stdout) == (125, "memory", "")
    assert result.stderr.endswith("sh: memory limit of 64 MiB a command exceeded by 'python3'\n")


def test_an_output_flood_ends_at_the_output_limit(layout: Path) -> None:
    result = shell.run_cmdline(
        "python3 -c 'while True: print(\"x\" * 999)'",
        workdir=layout,
        read_only=False,
        timeout=30,
        env=None,
        limits=wasi.Limits(stream=1 * MiB),
    )
    assert (result.status, result.fault) == (125, "output")
    assert len(result.stdout.encode()) <= 1 * MiB


def test_a_file_flood_ends_at_the_disk_quota_in_the_workdir_and_in_tmp(layout: Path) -> None:
    for path in ("big", "/tmp/big"):
        code = f"f = open({path!r}, 'w')\nwhile True: f.write('x' * 65536)"
        result = sh(layout, f"python3 -c {py(code)}", quota=DiskQuota(1 * MiB))
        assert (result.status, result.fault) == (125, "disk"), path
    assert (layout / "big").stat().st_size <= 1 * MiB
    code = "import os; f = os.open('sparse', os.O_CREAT | os.O_WRONLY); os.ftruncate(f, 1 << 40)"
    result = sh(layout, f"python3 -c {py(code)}", quota=DiskQuota(1 * MiB))
    assert (result.status, result.fault) == (125, "disk")


# ---- what it is ----------------------------------------------------------------------------


def test_it_is_cpython_with_its_standard_library(layout: Path) -> None:
    code = "import json, re, pathlib, unittest, dataclasses, sqlite3; print(1)"
    assert sh(layout, f"python3 -c {py(code)}").stdout == "1\n"
    version = sh(
        layout, "python -c 'import sys; print(sys.implementation.name, sys.version_info[:2])'"
    )
    assert version.stdout == "cpython (3, 12)\n"


def test_time_zones_are_there(layout: Path) -> None:
    """adversary-24c H7: WASI has no time-zone database; `zoneinfo` finds the one the site
    directory holds (`tzdata`), so code converting to local time runs as it does natively."""
    code = (
        "import datetime, zoneinfo; utc = datetime.timezone.utc; "
        "print(datetime.datetime(2024, 7, 1, 10, tzinfo=utc)"
        ".astimezone(zoneinfo.ZoneInfo('Europe/Paris')).hour)"
    )
    result = sh(layout, f"python3 -c {py(code)}")
    assert (result.status, result.stdout) == (0, "12\n"), result.stderr


def test_randomness_differs_between_runs(layout: Path) -> None:
    line = "python3 -c 'import os, random; print(os.urandom(8).hex(), random.random())'"
    first, second = sh(layout, line).stdout, sh(layout, line).stdout
    assert first != second and len(first.split()[0]) == 16


def test_the_start_up_loads_from_its_set_up_bytecode(layout: Path) -> None:
    """`sitecustomize` is imported by `site` before it points `sys.pycache_prefix` at the
    read-only prefix: set-up compiles it beside itself, in the read-only site directory, so
    no python3 compiles it from source (~6 ms each)."""
    code = (
        "import os, sys; m = sys.modules['sitecustomize']; c = m.__spec__.cached; "
        "print(c, os.path.isfile(c), c.startswith(os.path.dirname(m.__file__)))"
    )
    result = sh(layout, f'python3 -c "{code}"')
    site = cpython.SITE_GUEST
    assert result.stdout == f"{site}/__pycache__/sitecustomize.cpython-312.pyc True True\n"
    assert (cpython.site_path() / "__pycache__" / "sitecustomize.cpython-312.pyc").is_file()


def test_a_planted_pycache_is_never_loaded(layout: Path) -> None:
    (layout / "mod.py").write_text("VALUE = 'honest'\n")
    made = sh(layout, "python3 -c 'import mod; print(mod.VALUE)'")
    assert made.stdout == "honest\n"
    assert not (layout / "__pycache__").exists()  # nothing is written beside the source
    # a bytecode file whose source stamp matches, but whose code says otherwise
    import importlib.util
    import py_compile

    (layout / "evil.py").write_text("VALUE = 'forged'\n")
    os.utime(layout / "evil.py", ns=(0, os.stat(layout / "mod.py").st_mtime_ns))
    planted = Path(importlib.util.cache_from_source(str(layout / "mod.py")))
    planted = planted.with_name(planted.name.replace(".cpython-311", ".cpython-312"))
    py_compile.compile(str(layout / "evil.py"), cfile=str(planted))
    result = sh(layout, "python3 -c 'import mod; print(mod.VALUE)'")
    assert result.stdout == "honest\n"


def test_a_relative_script_runs_from_the_shells_directory(layout: Path) -> None:
    (layout / "sub" / "s.py").write_text("import sys, os\nprint(sys.argv, os.getcwd())\n")
    result = sh(layout, "cd sub && python3 s.py a 'b c'")
    assert result.stdout == "['s.py', 'a', 'b c'] /workdir/sub\n"
    result = sh(layout, "python3 -u -X utf8 sub/s.py -c")
    assert result.stdout == "['sub/s.py', '-c'] /workdir\n"


@pytest.mark.parametrize(
    ("args", "script"),
    [
        (["-c", "x", "y.py"], None),
        (["-m", "pytest"], None),
        (["-Ic", "x"], None),
        (["-"], None),
        (["-u", "a.py", "b.py"], 1),
        (["-W", "error", "a.py"], 2),
        (["-Werror", "a.py"], 1),
        (["-X", "utf8", "-B", "a.py"], 3),
        (["--", "-a.py"], 1),
        (["-h"], None),
    ],
)
def test_the_script_is_found_as_cpython_finds_it(args: list[str], script: int | None) -> None:
    assert cpython.script_index(args) == script


@pytest.fixture
def elsewhere(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The runtime directory moved to an empty place (this process's set-up failures
    forgotten); the real set-up's own paths are taken first, for fakes to copy from."""
    from groundskeeper.sandbox import cpython_setup

    real = (cpython.compiled_path(), cpython.site_path())
    where = tmp_path / "share" / "cpython"
    monkeypatch.setattr(cpython, "runtime_dir", lambda: where)
    monkeypatch.setattr(cpython_setup, "_failed", [])
    monkeypatch.setattr(cpython_setup, "REAL", real, raising=False)
    return where


def copy_real_set_up(calls: list[str]) -> tuple[object, object]:
    """Stand-ins for the set-up's two steps (the real ones compile for a minute and fetch
    from PyPI; the wheel check runs them): each copies what `make setup` made."""
    from groundskeeper.sandbox import cpython_setup

    compiled, site = cpython_setup.REAL  # type: ignore[attr-defined]

    def compile_module(force: bool = False) -> float:
        calls.append("compile")
        target = cpython.compiled_path()
        target.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(target.parent, 0o755)
        target.write_bytes(compiled.read_bytes())
        os.chmod(target, 0o644)
        return 1.0

    def build_site(force: bool = False) -> bool:
        calls.append("site")
        import shutil

        shutil.copytree(site, cpython.site_path())
        return True

    return compile_module, build_site


def test_a_set_up_that_cannot_be_made_fails_python3_naming_why(
    layout: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # the runtime directory cannot be made (a file is in the way: root can write anywhere)
    (tmp_path / "share").write_text("not a directory")
    result = sh(layout, "python3 -c 'print(1)'; python3 -c 'print(2)'")
    assert (result.status, result.stdout) == (126, "")
    said = (
        f"python3: CPython could not be set up in {elsewhere}: [Errno 20] Not a directory: "
        f"'{elsewhere}'; run `python -m groundskeeper.sandbox.cpython_setup` "
        "(`make setup` in a clone)\n"
    )
    assert result.stderr == said * 2  # the second python3 is refused for the same reason


def test_a_set_up_step_that_fails_is_named_and_not_retried(
    layout: Path,
    elsewhere: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    from groundskeeper.sandbox import cpython_setup

    calls: list[str] = []

    def offline(force: bool = False) -> bool:
        calls.append("site")
        raise sandbox.SandboxError("pip could not fetch the pinned wheels:\nno network")

    monkeypatch.setattr(cpython_setup, "compile_module", copy_real_set_up(calls)[0])
    monkeypatch.setattr(cpython_setup, "build_site", offline)
    first = sh(layout, "python3 -c 'print(1)'")
    second = sh(layout, "python3 -c 'print(1)'")
    assert calls == ["compile", "site"]  # once in this process, not once per python3
    for result in (first, second):
        assert result.status == 126
        assert result.stderr == (
            f"python3: CPython could not be set up in {elsewhere}: pip could not fetch the "
            "pinned wheels:\nno network; run `python -m groundskeeper.sandbox.cpython_setup` "
            "(`make setup` in a clone)\n"
        )
    assert "setting up CPython 3.12.0 for the sandbox" in capfd.readouterr().err


def test_python3_sets_cpython_up_on_first_need_once(
    layout: Path,
    elsewhere: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    from groundskeeper.sandbox import cpython_setup

    calls: list[str] = []
    compile_module, build_site = copy_real_set_up(calls)
    monkeypatch.setattr(cpython_setup, "compile_module", compile_module)
    monkeypatch.setattr(cpython_setup, "build_site", build_site)
    capfd.readouterr()
    result = sh(layout, "python3 -c 'print(6 * 7)'")
    assert (result.status, result.stdout, result.stderr) == (0, "42\n", "")
    err = capfd.readouterr().err.splitlines()
    assert err[0] == (
        f"groundskeeper: setting up CPython 3.12.0 for the sandbox in {elsewhere} (once per "
        "installation: the pinned module compiled, pytest's pinned wheels fetched; about a "
        "minute) …"
    )
    assert err[1].startswith("groundskeeper: CPython for the sandbox is set up (")
    assert calls == ["compile", "site"]
    assert sh(layout, "python3 -c 'print(1)'").stdout == "1\n"
    assert cpython_setup.ensure() is False and calls == ["compile", "site"]
    assert (elsewhere / cpython_setup.LOCK_NAME).exists()


def test_processes_that_need_the_set_up_at_once_wait_for_one(
    elsewhere: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import multiprocessing
    import time

    from groundskeeper.sandbox import cpython_setup

    log = tmp_path / "steps.log"
    calls: list[str] = []
    compile_module, build_site = copy_real_set_up(calls)

    def slow_compile(force: bool = False) -> float:
        with log.open("a") as out:
            out.write(f"compile {os.getpid()}\n")
        time.sleep(0.5)  # the others arrive while it holds the lock
        return compile_module(force)  # type: ignore[operator,no-any-return]

    monkeypatch.setattr(cpython_setup, "compile_module", slow_compile)
    monkeypatch.setattr(cpython_setup, "build_site", build_site)
    said: multiprocessing.Queue[str] = multiprocessing.get_context("fork").Queue()

    def need() -> None:
        made = cpython_setup.ensure(lambda line: said.put(f"{os.getpid()} {line}"))
        said.put(f"{os.getpid()} made={made} ready={cpython_setup.ready()}")

    workers = [multiprocessing.get_context("fork").Process(target=need) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    (line,) = log.read_text().splitlines()  # one process set it up
    maker = int(line.split()[1])
    lines = [said.get(timeout=5) for _ in range(3 + 2 + 2)]  # 3 ends, 2 say, 2 waited
    ends = sorted(x.split(" ", 1)[1] for x in lines if " made=" in x)
    assert ends == ["made=False ready=True", "made=False ready=True", "made=True ready=True"]
    assert f"{maker} made=True ready=True" in lines
    waited = [x for x in lines if "waiting for another process's set-up" in x]
    assert len(waited) == 2 and all(not x.startswith(f"{maker} ") for x in waited)


def test_set_up_refuses_a_module_that_is_not_the_pinned_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from groundskeeper.sandbox import cpython_setup

    fake = tmp_path / "python-3.12.0.wasm"
    fake.write_bytes(b"\0asm" + bytes(100))
    monkeypatch.setattr(cpython, "wasm_path", lambda: fake)
    with pytest.raises(sandbox.SandboxError, match="is not the pinned CPython build: SHA-256"):
        cpython_setup.verified_module()


def test_the_set_up_is_this_installations_and_private() -> None:
    compiled = cpython.compiled_path()
    assert compiled.exists(), "run make setup"
    assert cpython.site_ready() == cpython.site_path()
    for path in (compiled, compiled.parent, cpython.site_path()):
        cpython.check_private(path)


# ---- test runners and imports -------------------------------------------------------------


def test_unittest_and_doctest_run_a_projects_tests(layout: Path) -> None:
    (layout / "mathx.py").write_text(
        'def double(x):\n    """\n    >>> double(2)\n    4\n    """\n    return x * 2\n'
    )
    (layout / "test_mathx.py").write_text(
        "import unittest\n\nimport mathx\n\n\nclass T(unittest.TestCase):\n"
        "    def test_double(self):\n        self.assertEqual(mathx.double(3), 6)\n"
    )
    unit = sh(layout, "python3 -m unittest -q test_mathx 2>&1", read_only=True)
    assert (unit.status, unit.stdout.splitlines()[-1]) == (0, "OK")
    doc = sh(layout, "python3 -m doctest -v mathx.py", read_only=True)
    assert (doc.status, doc.stdout.splitlines()[-1]) == (0, "Test passed.")
    (layout / "mathx.py").write_text(
        'def double(x):\n    """\n    >>> double(2)\n    4\n    """\n    return x * 3\n'
    )
    assert sh(layout, "python3 -m unittest -q test_mathx", read_only=True).status == 1
    failed = sh(layout, "python3 -m doctest mathx.py", read_only=True)
    assert failed.status == 1 and "Expected:\n    4\nGot:\n    6" in failed.stdout


def test_a_c_extension_that_cannot_load_is_named(layout: Path) -> None:
    (layout / "fastmath.cpython-312-x86_64-linux-gnu.so").write_bytes(b"\x7fELF")
    result = sh(layout, "python3 -c 'import fastmath'")
    assert result.status == 1
    assert result.stderr.endswith(
        "ModuleNotFoundError: No module named 'fastmath': "
        "/workdir/fastmath.cpython-312-x86_64-linux-gnu.so is a C extension, which cannot "
        "load in the sandbox (CPython for WASI runs pure Python only)\n"
    )
    plain = sh(layout, "python3 -c 'import nosuchmodule'")
    assert plain.stderr.endswith("ModuleNotFoundError: No module named 'nosuchmodule'\n")


def test_a_workdir_file_never_replaces_a_standard_module(tmp_path: Path) -> None:
    # a worker's json.py beside a protected check script: the check's `import json` must be
    # the standard library's, so invalid JSON stays invalid; a module of the project's own
    # name still imports from the workdir
    (tmp_path / "json.py").write_text("def loads(s):\n    return {}\n")
    (tmp_path / "check.py").write_text(
        "import json, sys\njson.loads(open(sys.argv[1]).read())\nprint('valid')\n"
    )
    (tmp_path / "data.json").write_text("name: [")
    (tmp_path / "mylib.py").write_text("def helper():\n    return 7\n")
    result = sandbox.run("python3 check.py data.json", workdir=tmp_path)
    assert result.status == 1
    assert "json.decoder.JSONDecodeError" in result.stderr
    assert "valid" not in result.stdout
    mine = sandbox.run('python3 -c "import mylib, json; print(mylib.helper())"', workdir=tmp_path)
    assert (mine.stdout, mine.status) == ("7\n", 0)


def test_a_standard_module_the_build_lacks_is_never_found_in_the_workdir(
    tmp_path: Path,
) -> None:
    # the WASI build has no _hashlib, _lzma, _uuid or readline; hashlib, shutil, tempfile,
    # uuid, json.tool and pytest try them first. A worker's file of such a name must not run
    # inside a check: the import fails as it would with no such file, and the standard
    # library's fallback is used
    for name in ("_hashlib", "_lzma", "_uuid", "readline"):
        (tmp_path / f"{name}.py").write_text("import os\nos._exit(0)\n")
    (tmp_path / "out.json").write_text("{this is not json")
    digest = sandbox.run(
        "python3 -c 'import hashlib, shutil, tempfile, uuid; "
        'print(hashlib.sha256(b"x").hexdigest()[:8])\'',
        workdir=tmp_path,
    )
    assert (digest.stdout, digest.status) == ("2d711642\n", 0), digest.stderr
    tool = sandbox.run("python3 -m json.tool out.json", workdir=tmp_path)
    assert tool.status == 1, (tool.stdout, tool.stderr)
    assert "Expecting property name enclosed in double quotes" in tool.stderr
    direct = sandbox.run("python3 -c 'import _lzma'", workdir=tmp_path)
    assert direct.status == 1
    assert direct.stderr.endswith(
        "ModuleNotFoundError: No module named '_lzma' (a standard module this Python lacks:"
        " a file of that name in the workdir is not imported in its place)\n"
    ), direct.stderr
    (tmp_path / "test_add.py").write_text("def test_add():\n    assert 1 + 1 == 3\n")
    suite = sandbox.run("python3 -m pytest -q test_add.py", workdir=tmp_path, timeout=60)
    assert suite.status == 1, (suite.stdout, suite.stderr)
    assert "1 failed" in suite.stdout


def test_pytest_loads_no_plugin_a_workdir_distribution_declares(tmp_path: Path) -> None:
    # a worker's evil-0.dist-info/entry_points.txt naming a pytest11 plugin that turns every
    # failure into a pass: `python3 -m pytest` must not load it; the site directory's own
    # distributions (pytest, pluggy, …) are still seen
    (tmp_path / "evilplug.py").write_text(
        "import pytest\n"
        "@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n"
        "    outcome = yield\n"
        "    report = outcome.get_result()\n"
        "    report.outcome, report.longrepr = 'passed', None\n"
    )
    info = tmp_path / "evil-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evil\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[pytest11]\nevil = evilplug\n")
    (tmp_path / "test_add.py").write_text("def test_add():\n    assert 1 + 1 == 3\n")
    suite = sandbox.run("python3 -m pytest -q test_add.py", workdir=tmp_path, timeout=60)
    assert suite.status == 1, (suite.stdout, suite.stderr)
    assert "1 failed" in suite.stdout
    names = sandbox.run(
        "python3 -c 'import importlib.metadata as m; "
        'print(sorted(d.metadata["Name"] for d in m.distributions()))\'',
        workdir=tmp_path,
    )
    assert names.stdout == "['Pygments', 'iniconfig', 'packaging', 'pluggy', 'pytest', 'tzdata']\n"


def test_listing_distributions_leaves_the_standard_library_s_zip_unread(tmp_path: Path) -> None:
    # the standard library's zip holds no distribution: listing them (pytest does, at every
    # start) must not read its whole directory of ~2,000 entries through zipfile, which cost
    # ~0.1 s of each sandboxed pytest run; the site directory's distributions are all found
    (tmp_path / "listing.py").write_text(
        "import zipfile\n"
        "opened = []\n"
        "real = zipfile.ZipFile.__init__\n"
        "def spy(self, file, *args, **kwargs):\n"
        "    opened.append(str(file))\n"
        "    real(self, file, *args, **kwargs)\n"
        "zipfile.ZipFile.__init__ = spy\n"
        "import importlib.metadata as m\n"
        "print(sorted(d.metadata['Name'] for d in m.distributions()), opened)\n"
    )
    listed = sandbox.run("python3 listing.py", workdir=tmp_path, timeout=60)
    assert (
        listed.stdout == "['Pygments', 'iniconfig', 'packaging', 'pluggy', 'pytest', 'tzdata'] []\n"
    ), (
        listed.stdout,
        listed.stderr,
    )


def test_a_workdir_file_never_replaces_the_site_directory_s_pytest(tmp_path: Path) -> None:
    # a worker's pytest.py (or pluggy/ package) beside the tests: `python3 -m pytest` and the
    # pytest contract must run the site directory's pytest, which finds the failing test
    (tmp_path / "pytest.py").write_text("print('1 passed')\n")
    (tmp_path / "pluggy").mkdir()
    (tmp_path / "pluggy" / "__init__.py").write_text("raise SystemExit(0)\n")
    (tmp_path / "test_add.py").write_text("def test_add():\n    assert 1 + 1 == 3\n")
    result = sandbox.run("python3 -m pytest -q test_add.py", workdir=tmp_path, timeout=60)
    assert result.status == 1, (result.stdout, result.stderr)
    assert "1 failed" in result.stdout
    assert "test_add.py::test_add" in result.stdout


def test_a_package_beside_a_module_of_its_name_is_refused(tmp_path: Path) -> None:
    # Python loads rules/__init__.py before rules.py: a worker's package would silently
    # replace a protected module; the import fails naming both instead
    (tmp_path / "rules.py").write_text("def ok(d):\n    return 'name' in d\n")
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "__init__.py").write_text("def ok(d):\n    return True\n")
    (tmp_path / "check.py").write_text("import rules\nassert rules.ok({})\nprint('valid')\n")
    result = sandbox.run("python3 check.py", workdir=tmp_path, timeout=60)
    assert result.status == 1
    assert "valid" not in result.stdout
    assert result.stderr.endswith(
        "ImportError: module 'rules' is both /workdir/rules/__init__.py and /workdir/rules.py:"
        " Python would load the package and ignore the module; remove one\n"
    ), result.stderr
    (tmp_path / "rules" / "__init__.py").unlink()
    (tmp_path / "rules").rmdir()
    honest = sandbox.run("python3 check.py", workdir=tmp_path, timeout=60)
    assert honest.status == 1 and "AssertionError" in honest.stderr


def _bytecode(work: Path, made: dict[str, str]) -> None:
    """Sourceless CPython 3.12 bytecode at each path, made as a worker makes it: by the
    sandbox's own CPython, `py_compile` with `cfile`, the source removed."""
    lines = ["import os, py_compile"]
    for number, (path, code) in enumerate(made.items()):
        source = f"source{number}.py"
        (work / source).write_text(code)
        lines.append(f"py_compile.compile({source!r}, cfile={path!r}, doraise=True)")
        lines.append(f"os.remove({source!r})")
    (work / "make.py").write_text("\n".join(lines) + "\n")
    made_by = sandbox.run("python3 make.py", workdir=work, timeout=60)
    assert made_by.status == 0, made_by.stderr
    (work / "make.py").unlink()
    assert all((work / path).is_file() for path in made)


def test_sourceless_bytecode_in_the_workdir_is_never_imported(tmp_path: Path) -> None:
    # adversary-18 F2, F3, F9: a worker's `lib.pyc` earlier on sys.path than the checker's
    # helpers/lib.py, a package `calc/__init__.pyc` beside the module under test `calc.py`,
    # `validate/__main__.pyc` beside the protected `validate.py` run by `-m`: CPython would
    # load each bytecode file. In the sandbox the source modules are the ones imported
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "lib.py").write_text("def same(a, b):\n    return a == b\n")
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (tmp_path / "validate.py").write_text("print('validate.py ran')\n")
    _bytecode(
        tmp_path,
        {
            "lib.pyc": "def same(a, b):\n    return True\n",
            "calc/__init__.pyc": "def add(a, b):\n    return a + b\n",
            "validate/__init__.pyc": "",
            "validate/__main__.pyc": "print('Syntax: OK')\n",
        },
    )
    imports = sandbox.run(
        "python3 -c \"import sys; sys.path.append('helpers'); import lib, calc; "
        'print(lib.same(1, 2), lib.__file__, calc.add(2, 3), calc.__file__)"',
        workdir=tmp_path,
        timeout=60,
    )
    assert (imports.stdout, imports.status) == (
        "False /workdir/helpers/lib.py -1 /workdir/calc.py\n",
        0,
    ), imports.stderr
    module = sandbox.run("python3 -m validate", workdir=tmp_path, timeout=60)
    assert (module.stdout, module.status) == ("validate.py ran\n", 0), module.stderr


def test_bytecode_without_its_source_is_named_not_run(tmp_path: Path) -> None:
    # what nothing else provides fails naming the bytecode file, by import, by -m and as the
    # script (`python3 x.pyc`, or a `.py` name holding bytecode), and a directory run whose
    # `__main__` is bytecode only has none
    _bytecode(
        tmp_path,
        {
            "lone.pyc": "print('forged')\n",
            "pkg/__init__.pyc": "print('forged')\n",
            "app/__main__.pyc": "print('forged')\n",
            "disguised.py": "print('forged')\n",
        },
    )
    why = "is compiled bytecode without its source, which the sandbox does not import"
    for line, missing, found in (
        ("python3 -c 'import lone'", "lone", "/workdir/lone.pyc"),
        ("python3 -m lone", "lone", "/workdir/lone.pyc"),
        ("python3 -c 'import pkg'", "pkg", "/workdir/pkg/__init__.pyc"),
    ):
        result = sandbox.run(line, workdir=tmp_path, timeout=60)
        assert result.status == 1, (line, result.stdout, result.stderr)
        assert "forged" not in result.stdout
        named = f"No module named {missing!r}: {found} {why} (Python runs from source here)"
        assert named in result.stderr, (line, result.stderr)
    for script in ("lone.pyc", "disguised.py"):
        result = sandbox.run(f"python3 {script}", workdir=tmp_path, timeout=60)
        assert (result.stdout, result.status) == ("", 2), (script, result.stderr)
        assert result.stderr == (
            f"python3: can't run {script!r}: it is compiled bytecode, which the sandbox does"
            " not run (Python runs from source here)\n"
        )
    directory = sandbox.run("python3 app", workdir=tmp_path, timeout=60)
    assert (directory.stdout, directory.status) == ("", 1), directory.stderr
    assert "can't find '__main__' module in '/workdir/app'" in directory.stderr


ASYNC = """\
import asyncio

async def double(x):
    await asyncio.sleep(0.01)
    return 2 * x

async def main():
    doubled = await asyncio.gather(*(double(x) for x in (1, 2, 3)))
    try:
        await asyncio.wait_for(asyncio.sleep(5), 0.05)
    except TimeoutError:
        return doubled, "timed out"

print(asyncio.run(main()))
"""


def test_asyncio_runs_without_a_self_pipe(layout: Path) -> None:
    # adversary-28 H5: the event loop's socket pair, which WASI lacks, failed every run
    (layout / "aio.py").write_text(ASYNC)
    result = sh(layout, "python3 aio.py")
    assert (result.status, result.stdout, result.stderr) == (0, "([2, 4, 6], 'timed out')\n", "")
