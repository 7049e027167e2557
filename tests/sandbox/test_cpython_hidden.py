"""CPython against hidden inputs (`:hide:`): a Python program in a worker's sandbox neither
reads nor sees a hidden file, by any path the language offers — `open`, `os.*`, `glob`,
`pathlib`, `shutil`, links, renames, `sqlite3`, imports — and what it gets back is what a
name that never existed gives (so not even the existence of a hidden name leaks), while a
check, not bound, reads the same files.

The attacks run in one guest each (a runner prints how each ended); every one is compared
with the same attack on a name that does not exist (`probe`), or must be refused with the
hidden files unchanged (`forbidden`).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from groundskeeper import sandbox
from groundskeeper.acceptance.protect import matched_files
from groundskeeper.record.control import ControlDir
from groundskeeper.sandbox import fence as fences

SECRET = "HELD-OUT-7f3a"
HIDE = ("tests/test_held*.py", "tests/hidden_*.py", "tests/*.db", "tests/deep/", "tests/private")
# every hidden name, for the listings: none may appear
HIDDEN_NAMES = ("test_heldout.py", "hidden_mod.py", "answers.db", "deep", "key.txt", "deep_mod.py",
                "test_held_dangling.py", "test_held_loop.py")  # fmt: skip


def _workdir(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    (root / "tests" / "deep").mkdir(parents=True)
    (root / "tests" / "test_heldout.py").write_text(f"def test_x():\n    assert '{SECRET}'\n")
    (root / "tests" / "hidden_mod.py").write_text(f"VALUE = '{SECRET}'\nprint(VALUE)\n")
    (root / "tests" / "deep" / "key.txt").write_text(SECRET + "-deep\n")
    (root / "tests" / "deep" / "deep_mod.py").write_text(f"VALUE = '{SECRET}-deep'\n")
    with sqlite3.connect(root / "tests" / "answers.db") as db:
        db.execute("create table t(answer text)")
        db.execute("insert into t values (?)", (SECRET,))
    db.close()
    (root / "tests" / "visible.txt").write_text("visible\n")
    (root / "tests" / "test_visible.py").write_text("def test_v():\n    assert 1\n")
    (root / "plan.org").write_text("* TODO x\n")
    (root / "link.txt").symlink_to("tests/test_heldout.py")  # ways in, made beforehand
    (root / "link-deep").symlink_to("tests/deep")
    (root / "link-never.txt").symlink_to("tests/test_held_never.py")  # their missing twins
    (root / "link-private").symlink_to("tests/private")
    (root / "alias.py").hardlink_to(root / "tests" / "hidden_mod.py")
    # hidden names that are links leading nowhere: their names, kinds and targets are hidden
    (root / "tests" / "test_held_dangling.py").symlink_to("nowhere.py")
    (root / "tests" / "test_held_loop.py").symlink_to("test_held_loop.py")
    return root


def _fence(root: Path) -> fences.Fence:
    control = ControlDir.for_plan(root / "plan.org").ensure()
    plan = fences.for_plan(root / "plan.org", control.root)
    return plan.union(fences.hiding_inputs(root, matched_files(root, HIDE), HIDE))


def _contents(root: Path) -> dict[str, bytes]:
    """The hidden files and links, as they are."""
    found = {name: (root / name).read_bytes() for name in matched_files(root, HIDE)}
    for name in ("tests/test_held_dangling.py", "tests/test_held_loop.py"):
        found[name] = os.readlink(root / name).encode()
    return found


@pytest.fixture
def work(tmp_path: Path) -> Iterator[Path]:
    """A workdir whose held-out test, hidden module, answer database and `tests/deep/` are
    hidden from this thread (as from a worker's), the rest of `tests/` visible."""
    root = _workdir(tmp_path)
    before = _contents(root)
    with fences.binding(_fence(root)):
        yield root
    assert _contents(root) == before  # nothing hidden was changed, whatever was tried


RUNNER = """
import glob, importlib, importlib.util, linecache, os, pathlib, runpy, shutil, sqlite3, sys
import tarfile, zipfile

HIDDEN = {hidden!r}

def shows(names):
    names = {{os.path.basename(str(n).rstrip('/')) for n in names}}
    assert names & set(HIDDEN), sorted(names)

def tidy():
    os.chdir(base)
    for made in ('got.txt', 'got.zip', 'got.tar'):
        if os.path.lexists(made):
            os.remove(made)
    shutil.rmtree('got-dir', ignore_errors=True)

base = os.getcwd()
for line in open('attacks.txt').read().splitlines():
    name, code = line.split(' :: ', 1)
    tidy()
    sys.path[:] = [p for p in sys.path if not p.startswith(base)] + [base]
    try:
        exec(code, {{'glob': glob, 'importlib': importlib, 'linecache': linecache, 'os': os,
                    'pathlib': pathlib, 'runpy': runpy, 'shutil': shutil, 'sqlite3': sqlite3,
                    'sys': sys, 'tarfile': tarfile, 'zipfile': zipfile, 'shows': shows}})
        print(name, 'ESCAPED')
    except BaseException as error:
        print(name, 'refused', type(error).__name__, getattr(error, 'errno', None))
tidy()
"""


def attack(work: Path, attacks: dict[str, str], *, read_only: bool = False) -> dict[str, str]:
    """Run each attack (a statement list) in one CPython guest: name → how it ended."""
    (work / "attacks.txt").write_text("".join(f"{k} :: {v}\n" for k, v in attacks.items()))
    (work / "runner.py").write_text(RUNNER.format(hidden=HIDDEN_NAMES))
    try:
        result = sandbox.run("python3 runner.py", workdir=work, timeout=60, read_only=read_only)
    finally:
        (work / "attacks.txt").unlink()
        (work / "runner.py").unlink()
    assert (result.status, result.fault) == (0, None), result.stderr
    assert SECRET not in result.stdout + result.stderr
    found = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    assert sorted(found) == sorted(attacks), result.stdout
    return found


# ---- probes: a hidden name answers exactly as a name that never existed -------------------

# {p}: a hidden path (or a way to it); the same template is run with {p} a missing name
PROBES = {
    "open": "open({p}).read()",
    "open-bytes": "open({p}, 'rb').read()",
    "open-rw": "open({p}, 'r+').read()",
    "os-open": "os.read(os.open({p}, os.O_RDONLY), 99)",
    "os-open-dir": "os.open({p}, os.O_RDONLY | os.O_DIRECTORY)",
    "os-open-nofollow": "os.open({p}, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)",
    "stat": "os.stat({p})",
    "lstat": "os.lstat({p})",
    "stat-slash": "os.stat({p} + '/')",
    "stat-below": "os.stat({p} + '/x')",
    "stat-dotdot": "os.stat({p} + '/..')",
    "exists": "assert os.path.exists({p})",
    "lexists": "assert os.path.lexists({p})",
    "isfile": "assert os.path.isfile({p}) or os.path.isdir({p})",
    "access": "assert os.access({p}, os.F_OK)",
    "listdir": "os.listdir({p})",
    "scandir": "list(os.scandir({p}))",
    "chdir": "os.chdir({p})",
    "readlink": "os.readlink({p})",
    "glob": "assert glob.glob({p})",
    "glob-escaped": "assert glob.glob(glob.escape({p}))",
    "pathlib-read": "pathlib.Path({p}).read_text()",
    "pathlib-exists": "assert pathlib.Path({p}).exists()",
    "pathlib-resolve": "pathlib.Path({p}).resolve(strict=True)",
    "pathlib-iterdir": "list(pathlib.Path({p}).iterdir())",
    "shutil-copy": "shutil.copy({p}, 'got.txt'); open('got.txt').read()",
    "shutil-copytree": "shutil.copytree({p}, 'got-dir'); shows(os.listdir('got-dir'))",
    "link": "os.link({p}, 'got.txt'); open('got.txt').read()",
    "link-follow": "os.link({p}, 'got.txt', follow_symlinks=True); open('got.txt').read()",
    "symlink-open": "os.symlink({p}, 'got.txt'); open('got.txt').read()",
    "sqlite": "sqlite3.connect({p}).execute('select * from t').fetchall()",
    "sqlite-uri": "sqlite3.connect('file:' + {p} + '?mode=ro', uri=True).execute("
    "'select * from t').fetchall()",
    "sqlite-attach": "c = sqlite3.connect(':memory:'); c.execute('attach ? as h', ({p},)); "
    "c.execute('select * from h.t').fetchall()",
    "runpy": "runpy.run_path({p})",
    "spec-from-file": "s = importlib.util.spec_from_file_location('m', {p}); "
    "s.loader.exec_module(importlib.util.module_from_spec(s))",
    "linecache": "assert linecache.getline({p}, 1)",
    "zipfile": "zipfile.ZipFile('got.zip', 'w').write({p})",
    "tarfile": "t = tarfile.open('got.tar', 'w'); t.add({p}); shows(t.getnames())",
}
# Each hidden path (or a visible way to it) beside its twin: the same spelling of a name the
# same hidden pattern covers that does not exist. A program must not tell the two apart.
HIDDEN_PATHS = {
    "plain": ("tests/test_heldout.py", "tests/test_held_never.py"),
    "dot": ("./tests/./test_heldout.py", "./tests/./test_held_never.py"),
    "slashes": ("tests//test_heldout.py", "tests//test_held_never.py"),
    "up": ("tests/../tests/test_heldout.py", "tests/../tests/test_held_never.py"),
    "up-dir": ("tests/deep/../test_heldout.py", "tests/deep/../test_held_never.py"),
    "absolute": ("/workdir/tests/test_heldout.py", "/workdir/tests/test_held_never.py"),
    "upper": ("TESTS/TEST_HELDOUT.PY", "TESTS/TEST_HELD_NEVER.PY"),
    "mixed": ("Tests/Test_Heldout.py", "Tests/Test_Held_Never.py"),
    "symlink": ("link.txt", "link-never.txt"),
    "dangling": ("tests/test_held_dangling.py", "tests/test_held_never.py"),
    "loop": ("tests/test_held_loop.py", "tests/test_held_never.py"),
    "module": ("tests/hidden_mod.py", "tests/hidden_never.py"),
    "database": ("tests/answers.db", "tests/never.db"),
    "dir": ("tests/deep", "tests/private"),
    "dir-slash": ("tests/deep/", "tests/private"),
    "dir-link": ("link-deep", "link-private"),
    "in-dir": ("tests/deep/key.txt", "tests/private/key.txt"),
    "in-dir-up": ("tests/deep/../deep/key.txt", "tests/private/../private/key.txt"),
    "in-dir-link": ("link-deep/key.txt", "link-private/key.txt"),
}


def probe(work: Path, template: str) -> tuple[dict[str, str], dict[str, str]]:
    """One template on every hidden path and on every twin: (hidden, twins), by key."""
    attacks = {k: template.format(p=repr(hidden)) for k, (hidden, _) in HIDDEN_PATHS.items()}
    attacks |= {f"{k}~": template.format(p=repr(twin)) for k, (_, twin) in HIDDEN_PATHS.items()}
    found = attack(work, attacks)
    return {k: found[k] for k in HIDDEN_PATHS}, {k: found[f"{k}~"] for k in HIDDEN_PATHS}


@pytest.mark.parametrize("template", list(PROBES.values()), ids=list(PROBES))
def test_a_hidden_name_answers_as_a_missing_one(work: Path, template: str) -> None:
    hidden, twins = probe(work, template)
    assert hidden["plain"].startswith("refused"), hidden
    assert {k: (v, twins[k]) for k, v in hidden.items() if v != twins[k]} == {}
    assert not (work / "got-dir").exists()


def test_a_hard_link_made_before_the_run_is_the_hidden_file(work: Path) -> None:
    """A second name made beforehand outside every pattern: absent by identity (its name is
    taken, so it cannot pass for a free one), never read."""
    found = attack(
        work,
        {
            "open": "open('alias.py').read()",
            "listed": "shows(os.listdir('.'))",
            "stat": "os.stat('alias.py')",
            "copy": "shutil.copy('alias.py', 'got.txt')",
            "link": "os.link('alias.py', 'got.txt')",
            "symlink": "os.symlink('alias.py', 'got.txt'); open('got.txt').read()",
            "rename": "os.rename('alias.py', 'got.txt')",
            "write": "open('alias.py', 'a').write('x')",
        },
    )
    assert found == {
        "open": "refused FileNotFoundError 44",
        "listed": "refused AssertionError None",
        "stat": "refused FileNotFoundError 44",
        "copy": "refused FileNotFoundError 44",
        "link": "refused FileNotFoundError 44",
        "symlink": "refused PermissionError 76",
        "rename": "refused FileNotFoundError 44",
        "write": "refused FileNotFoundError 44",
    }
    assert not (work / "got.txt").exists()


def test_the_answers_are_file_not_found(work: Path) -> None:
    """What a program sees is the ordinary "no such file" (WASI's ENOENT is 44)."""
    found = attack(
        work,
        {
            "open": "open('tests/test_heldout.py')",
            "below": "os.stat('tests/test_heldout.py/x')",
            "slash": "os.stat('tests/test_heldout.py/')",
            "dir-open": "os.open('tests/test_heldout.py', os.O_RDONLY | os.O_DIRECTORY)",
            "in-dir": "open('tests/deep/key.txt')",
            "chdir": "os.chdir('tests/deep')",
            "link": "open('link.txt')",
        },
    )
    assert set(found.values()) == {"refused FileNotFoundError 44"}, found


# ---- listings: no hidden name is ever shown ------------------------------------------------

LISTINGS = {
    "listdir": "shows(os.listdir('tests'))",
    "listdir-root": "shows(os.listdir('.'))",
    "scandir": "shows(e.name for e in os.scandir('tests'))",
    "walk": "shows(n for _, ds, fs in os.walk('.') for n in ds + fs)",
    "walk-bottom-up": "shows(n for _, ds, fs in os.walk('.', topdown=False) for n in ds + fs)",
    "walk-links": "shows(n for _, ds, fs in os.walk('.', followlinks=True) for n in ds + fs)",
    "glob-star": "shows(glob.glob('tests/*'))",
    "glob-recursive": "shows(glob.glob('**', recursive=True))",
    "glob-hidden-files": "shows(glob.glob('tests/.*') + glob.glob('*/*/*'))",
    "glob-exact": "shows(glob.glob('tests/test_held*.py') + glob.glob('tests/[dh]*'))",
    "glob-in-dir": "shows(glob.glob('tests/deep/*') + glob.glob('link-deep/*'))",
    "iglob-case": "shows(glob.glob('[Tt]ests/[Tt]est_*'))",
    "pathlib-iterdir": "shows(p.name for p in pathlib.Path('tests').iterdir())",
    "pathlib-glob": "shows(p.name for p in pathlib.Path('tests').glob('*'))",
    "pathlib-rglob": "shows(p.name for p in pathlib.Path('.').rglob('*'))",
    "pathlib-rglob-case": "shows(p.name for p in pathlib.Path('.').glob('**/*', "
    "case_sensitive=False))",
    "pathlib-walk": "shows(n for _, ds, fs in pathlib.Path('.').walk() for n in ds + fs)",
    "copytree": "shutil.copytree('tests', 'copy'); shows(os.listdir('copy'))",
    "copytree-links": "shutil.copytree('.', '../copy2', symlinks=True)",
    "make-archive": "shutil.make_archive('arch', 'tar', '.', 'tests'); "
    "shows(tarfile.open('arch.tar').getnames())",
    "tar-dir": "t = tarfile.open('t.tar', 'w'); t.add('tests'); shows(t.getnames())",
    "zip-dir": "import zipfile as z; f = z.ZipFile('z.zip', 'w'); "
    "[f.write(os.path.join(d, n)) for d, _, ns in os.walk('tests') for n in ns]; "
    "shows(f.namelist())",
    "sqlite-in-listing": "shows(n for n in os.listdir('tests') if n.endswith('.db'))",
    "dirfd-up": "d = os.open('tests/deep/..', os.O_RDONLY); shows(os.listdir(d))",
}


def test_no_listing_shows_a_hidden_name(work: Path) -> None:
    found = attack(work, LISTINGS)
    shown = {k: v for k, v in found.items() if v not in _NOT_SHOWN}
    assert shown == {}


_NOT_SHOWN = (
    "refused AssertionError None",  # listed, and nothing hidden among the names
    "refused FileNotFoundError 44",
    "refused PermissionError 76",  # copytree to ../: outside the workdir
)


# ---- imports: a hidden module is not there to import ---------------------------------------


def test_a_hidden_module_cannot_be_imported(work: Path) -> None:
    found = attack(
        work,
        {
            "path-insert": "sys.path.insert(0, 'tests'); import hidden_mod",
            "import-module": "sys.path.insert(0, 'tests'); importlib.import_module('hidden_mod')",
            "namespace": "importlib.import_module('tests.hidden_mod')",
            "namespace-deep": "importlib.import_module('tests.deep.deep_mod')",
            "namespace-test": "importlib.import_module('tests.test_heldout')",
            "dunder": "__import__('tests.hidden_mod')",
            "path-deep": "sys.path.insert(0, 'tests/deep'); import deep_mod",
            "path-link": "sys.path.insert(0, 'link-deep'); import deep_mod",
            "path-case": "sys.path.insert(0, 'TESTS'); import hidden_mod",
            "find-spec": "assert importlib.util.find_spec('tests.hidden_mod')",
            "chdir-import": "os.chdir('tests'); sys.path.insert(0, '.'); import hidden_mod",
            "pkgutil": "import pkgutil; shows(m.name for m in pkgutil.iter_modules(['tests']))",
            "alias": "import alias",  # the hard link made beforehand: the hidden file itself
        },
    )
    refused = {"refused ModuleNotFoundError None", "refused AssertionError None"}
    assert {k: v for k, v in found.items() if v not in refused} == {}
    # the visible part of tests/ still imports as a namespace package
    seen = attack(work, {"visible": "importlib.import_module('tests.test_visible')"})
    assert seen == {"visible": "ESCAPED"}  # the runner's word for "it worked"


def test_running_a_hidden_file_finds_no_such_file(work: Path) -> None:
    for cmdline in (
        "python3 tests/test_heldout.py",
        "python3 tests/hidden_mod.py",
        "python3 -m tests.hidden_mod",
        "cd tests && python3 hidden_mod.py",
        "python3 link.txt",
        "python3 < tests/hidden_mod.py",
        "python3 -m pytest -q tests/test_heldout.py",
    ):
        result = sandbox.run(cmdline, workdir=work, timeout=60)
        assert result.status != 0, cmdline
        assert SECRET not in result.stdout + result.stderr, cmdline


def test_pytest_in_the_workers_sandbox_collects_only_the_visible_tests(work: Path) -> None:
    result = sandbox.run("python3 -m pytest -q --co tests", workdir=work, timeout=60)
    assert result.stdout.splitlines()[0] == "tests/test_visible.py::test_v", result.stdout
    assert "heldout" not in result.stdout + result.stderr


# ---- changes: nothing hidden is changed, moved, exposed or made ----------------------------

FORBIDDEN = {
    "write": "open('tests/test_heldout.py', 'w').write('x')",
    "append": "open('tests/test_heldout.py', 'a').write('x')",
    "create-excl": "open('tests/test_heldout.py', 'x').write('x')",
    "truncate": "os.truncate('tests/test_heldout.py', 0)",
    "remove": "os.remove('tests/test_heldout.py')",
    "remove-in-dir": "os.remove('tests/deep/key.txt')",
    "rmtree": "shutil.rmtree('tests/deep')",
    "rmtree-parent": "shutil.rmtree('tests')",
    "utime": "os.utime('tests/test_heldout.py', (0, 0))",
    "rename-file": "os.rename('tests/test_heldout.py', 'got.txt')",
    "rename-dir": "os.rename('tests', 'exposed'); open('exposed/test_heldout.py').read()",
    "rename-deep": "os.rename('tests/deep', 'exposed'); open('exposed/key.txt').read()",
    "move-dir": "shutil.move('tests', 'exposed'); open('exposed/test_heldout.py').read()",
    "rename-over": "open('decoy.txt', 'w').write('x'); os.replace('decoy.txt', "
    "'tests/test_heldout.py')",
    "rename-into-dir": "open('decoy.txt', 'w').write('x'); os.rename('decoy.txt', "
    "'tests/deep/decoy.txt')",
    "mkdir-in-dir": "os.mkdir('tests/deep/new')",
    "create-in-dir": "open('tests/deep/new.txt', 'w').write('x')",
    "sqlite-write": "c = sqlite3.connect('tests/answers.db'); c.execute('delete from t'); "
    "c.commit()",
    "sqlite-create": "sqlite3.connect('tests/deep/new.db').execute('create table t(x)')",
    "link-over": "open('decoy.txt', 'w').write('x'); os.link('decoy.txt', 'tests/test_heldout.py')",
    "symlink-over": "os.symlink('visible.txt', 'tests/test_heldout.py')",
    "symlink-into": "os.symlink('../visible.txt', 'tests/deep/l')",
    "symlink-alias": "os.symlink('tests/deep/../test_heldout.py', 'alias2'); open('alias2').read()",
}


def test_nothing_hidden_is_changed_moved_or_made(work: Path) -> None:
    found = attack(work, FORBIDDEN)
    assert {k: v for k, v in found.items() if not v.startswith("refused")} == {}
    for made in ("got.txt", "alias2"):
        assert not (work / made).exists(), made
    # shutil.move, refused the rename, copies what it can see (by then, nothing: rmtree took
    # the visible files) and removes it
    assert [p.name for p in (work / "exposed").rglob("*")] == []
    assert not (work / "tests" / "deep" / "new").exists()
    assert not (work / "tests" / "deep" / "new.txt").exists()


def test_a_read_only_run_says_read_only_of_a_hidden_name_as_of_a_missing_one(
    work: Path,
) -> None:
    found = attack(
        work,
        {
            "hidden-dir": "os.mkdir('tests/deep')",
            "hidden-file": "os.mkdir('tests/test_heldout.py')",
            "missing": "os.mkdir('tests/test_held_never.py')",
            "visible": "os.mkdir('tests/visible.txt')",
        },
        read_only=True,
    )
    assert found == {
        "hidden-dir": "refused OSError 69",  # EROFS
        "hidden-file": "refused OSError 69",
        "missing": "refused OSError 69",
        "visible": "refused FileExistsError 20",
    }


# ---- the honest side -----------------------------------------------------------------------


def test_a_check_not_bound_reads_the_hidden_files(work: Path) -> None:
    """The binding is the worker's thread's: a check running meanwhile sees the held-out
    test, imports the hidden module and collects it with pytest."""
    seen: list[sandbox.ShellResult] = []

    def check() -> None:
        cmdline = (
            "python3 -c 'import sys; sys.path.insert(0, \"tests\"); import hidden_mod' && "
            "python3 -m pytest -q --co tests"
        )
        seen.append(sandbox.run(cmdline, workdir=work, read_only=True, timeout=60))

    thread = threading.Thread(target=check)
    thread.start()
    thread.join()
    (result,) = seen
    assert result.status == 0, result.stderr
    assert result.stdout.splitlines()[:3] == [
        SECRET,
        "tests/test_heldout.py::test_x",
        "tests/test_visible.py::test_v",
    ]
