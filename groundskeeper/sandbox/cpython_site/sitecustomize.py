"""groundskeeper's start-up for CPython in the sandbox, run by `site` before any user code.

It lives in the read-only site directory, so nothing in a workdir can replace it. It moves to
the shell's directory (WASI has no working directory of its own), keeps compiled bytecode out
of the workdir (read and written only under a read-only prefix: a planted `__pycache__` is
never loaded; what `py_compile` and `compileall` write goes to a fresh directory of the run's
private /tmp, discarded with it), loads no module from bytecode without its source outside
its own read-only folders (a worker's `lib.pyc` or `calc/__init__.pyc` never stands in for a
`lib.py` or `calc.py`), and fills in what pytest expects of a POSIX system.
"""

from __future__ import annotations

import _imp
import importlib.machinery  # before the finder below exists: it must not import itself
import os
import sys

_PREFIX = os.path.join(os.path.dirname(__file__), "__gk_pycache__")  # read-only bytecode

TYPE_CHECKING = False  # typing is not imported at start-up: it costs every command time

if TYPE_CHECKING:
    from collections.abc import Iterable
    from importlib.metadata import DistributionFinder, PathDistribution


_FROM_SOURCE = "Python runs from source here"


def _bytecode(path: str) -> bool:
    """Whether CPython would run the script at `path` as compiled bytecode: a `.pyc` name, or
    a file that starts as bytecode does (what CPython itself looks at)."""
    if path.endswith(".pyc"):
        return True
    try:
        with open(path, "rb") as script:
            start = script.read(2)
    except OSError:
        return False  # a directory (its `__main__` is imported), or one CPython names itself
    return start == importlib._bootstrap_external.MAGIC_NUMBER[:2]


def _refuse_bytecode(name: str, path: str) -> None:
    """Raise ModuleNotFoundError for module `name` when `path` (a `.pyc` where its source
    would be) is a file outside the interpreter's own folders."""
    if os.path.isfile(path) and not _trusted(os.path.dirname(path)):
        raise ModuleNotFoundError(
            f"No module named {name!r}: {path} is compiled bytecode without its source, which"
            f" the sandbox does not import ({_FROM_SOURCE})",
            name=name,
        )


def _enter() -> None:
    """What every run starts with, a warm start's (`gk_warm`) too: the shell's directory,
    and pytest's options."""
    cwd = os.environ.pop("GK_CWD", None)
    if cwd:
        os.chdir(cwd)
    options = "-p no:faulthandler -p no:cacheprovider --capture=sys"
    if os.environ.get("GK_DESELECT"):  # a rerun without the tests the host names
        options += " -p gk_deselect"
    os.environ["PYTEST_ADDOPTS"] = f"{options} {os.environ.get('PYTEST_ADDOPTS', '')}".strip()


def _start() -> None:
    _enter()
    argv0 = os.environ.pop("GK_ARGV0", None)
    if sys.argv and sys.argv[0] not in ("", "-", "-c", "-m") and _bytecode(sys.argv[0]):
        shown = argv0 if argv0 is not None else sys.argv[0]
        sys.stderr.write(
            f"python3: can't run {shown!r}: it is compiled bytecode, which the sandbox does"
            f" not run ({_FROM_SOURCE})\n"
        )
        sys.stderr.flush()
        os._exit(2)  # an exception here would only be printed by `site`, and the script run
    if argv0 is not None and sys.argv:  # the script as the user spelt it (see cpython.py)
        sys.argv[0] = argv0
    sys.pycache_prefix = _PREFIX
    if not hasattr(os, "getuid"):  # WASI has no users; pytest's tmp_path asks for one
        os.getuid = lambda: 0


class _StandardFirst:
    """A module named like one of the standard library's, or like one the site directory
    provides (pytest, pluggy, …), resolves to that copy, never to a file of the same name in
    the workdir: a worker's `json.py` or `pytest.py` beside a check cannot replace the module
    the check imports or runs. A standard name this build lacks (`_hashlib`, `_lzma`, `_uuid`,
    `readline`: the standard library tries them and falls back) is not found at all, rather
    than found in the workdir. Everything else imports as usual."""

    def __init__(self, owned: dict[str, list[str]]) -> None:
        self.owned = owned  # top-level module name → the directories it comes from

    def find_spec(
        self, name: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        where = self.owned.get(name) if path is None else None
        if where is None or name in sys.builtin_module_names or _imp.is_frozen(name):
            return None  # not ours, or compiled into the interpreter: its own finders
        spec = importlib.machinery.PathFinder.find_spec(name, where)
        if spec is None:
            raise ModuleNotFoundError(
                f"No module named {name!r} (a standard module this Python lacks: a file of"
                " that name in the workdir is not imported in its place)",
                name=name,
            )
        return spec


def _owned() -> dict[str, list[str]]:
    standard = [p for p in sys.path if p.startswith(sys.prefix) and "site-packages" not in p]
    owned = dict.fromkeys((*sys.stdlib_module_names, *sys.builtin_module_names), standard)
    site = os.path.dirname(os.path.abspath(__file__))
    for entry in os.listdir(site):
        name, dot, suffix = entry.partition(".")
        if name.isidentifier() and (not dot or suffix == "py") and not name.startswith("__"):
            owned.setdefault(name, [site])
    return owned


class _OneFilePerModule:
    """A package beside a module of its name (`rules/__init__.py` and `rules.py`) is refused:
    Python would load the package and silently ignore the module, so a worker's package could
    stand in for a protected module."""

    @staticmethod
    def find_spec(
        name: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        spec = importlib.machinery.PathFinder.find_spec(name, path)  # type: ignore[arg-type]
        if spec is not None and spec.origin is None and spec.submodule_search_locations:
            # a namespace package: a folder holding `__init__.pyc` alone is refused, named
            for folder in spec.submodule_search_locations:
                _refuse_bytecode(name, os.path.join(folder, "__init__.pyc"))
        origin = spec.origin if spec is not None else None
        if origin and origin.endswith(os.sep + "__init__.py"):
            module = os.path.dirname(origin) + ".py"
            if os.path.isfile(module):
                raise ImportError(
                    f"module {name!r} is both {origin} and {module}: Python would load the"
                    " package and ignore the module; remove one",
                    name=name,
                )
        return spec


class _CompileIntoScratch:
    """`py_compile` and `compileall` write a module's bytecode where
    `importlib.util.cache_from_source` says it goes: under the read-only prefix, which refuses
    them, so "does it compile" could never pass. Before either of them loads (imported, or run
    with -m), that answer is moved to a directory made fresh for this process in its private
    /tmp, which the sandbox discards with the run. A syntax error is raised as before (the
    source is compiled before anything is written); nothing reaches the workdir or the shared
    prefix; and `compileall`'s "already compiled" test only ever sees bytecode this process
    wrote, never a file planted for it. Imports still read the read-only prefix alone: the
    import system asks `importlib._bootstrap_external`, not `importlib.util`."""

    names = frozenset({"py_compile", "compileall"})
    done = False

    @classmethod
    def find_spec(cls, name: str, path: object = None, target: object = None) -> None:
        if path is None and name in cls.names and not cls.done:
            cls.done = True
            _bytecode_into_scratch()
        return None


def _bytecode_into_scratch() -> None:
    import importlib.util

    answer = importlib.util.cache_from_source
    made: list[str] = []

    def cache_from_source(
        path: str, debug_override: None = None, *, optimization: object = None
    ) -> str:  # `debug_override` is deprecated: only its default is passed on
        found = answer(path, debug_override, optimization=optimization)
        if not found.startswith(_PREFIX + os.sep):
            return found
        if not made:
            import tempfile

            made.append(tempfile.mkdtemp(prefix="gk-bytecode-"))
        return made[0] + found[len(_PREFIX) :]

    importlib.util.cache_from_source = cache_from_source  # type: ignore[assignment]


class _TrustedDistributions(importlib.machinery.PathFinder):
    """`sys.path`'s finder, except that the installed distributions it reports
    (`importlib.metadata`: what pytest autoloads plugins from, `*.dist-info/entry_points.txt`)
    are only those of the standard library's and the site directory's folders: a
    `*.dist-info` or `*.egg-info` in the workdir, which a worker can write, names no plugin
    and no installed package. Modules import from the workdir as before. The standard
    library's zip is not searched: it holds no distribution, and reading its directory
    (~2,000 entries, through zipfile) cost every pytest run ~0.1 s."""

    @classmethod
    def find_distributions(
        cls, context: DistributionFinder.Context | None = None
    ) -> Iterable[PathDistribution]:
        from importlib.metadata import DistributionFinder, MetadataPathFinder

        context = context if context is not None else DistributionFinder.Context()
        trusted = [entry for entry in context.path if _trusted(entry) and os.path.isdir(entry)]
        return MetadataPathFinder.find_distributions(
            DistributionFinder.Context(name=context.name, path=trusted)
        )


def _trusted(entry: object) -> bool:
    """Whether a `sys.path` entry is one of the interpreter's own or the site directory
    (read-only in the sandbox), not a folder the work can write."""
    if not isinstance(entry, str) or not entry:
        return False
    folder = os.path.abspath(entry)
    site = os.path.dirname(os.path.abspath(__file__))
    return folder == site or folder.startswith((sys.prefix + os.sep, site + os.sep))


def _from_source_only() -> None:
    """Folders on `sys.path` import through a FileFinder without the sourceless loader: a
    module is a `.py` file (its bytecode read from the read-only prefix) or a package with
    an `__init__.py`, never a `.pyc` alone — which a worker can write anywhere it writes,
    and which no one could read to tell what it does. The standard library still loads
    from its zip (zipimport); pytest and the rest of the site directory from source."""
    loaders = [
        (loader, suffixes)
        for loader, suffixes in importlib._bootstrap_external._get_supported_file_loaders()  # type: ignore[attr-defined]
        if loader is not importlib.machinery.SourcelessFileLoader
    ]
    finder_hook = importlib.machinery.FileFinder.path_hook(*loaders)
    sys.path_hooks[:] = [
        finder_hook if getattr(hook, "__name__", "") == "path_hook_for_FileFinder" else hook
        for hook in sys.path_hooks
    ]
    for entry, finder in list(sys.path_importer_cache.items()):
        if isinstance(finder, importlib.machinery.FileFinder):
            del sys.path_importer_cache[entry]  # made before: asked again through the hook


_start()
del _start
_from_source_only()


class _SelfPipeless:
    """asyncio's event loop makes a socket pair to wake itself from other threads and signal
    handlers, and WASI has no sockets: every `asyncio.run` failed (adversary-28 H5). When
    `asyncio.selector_events` loads, its loop is given none — in one thread, with no signal
    handlers, nothing ever needs to wake it — so timers, tasks, `gather` and `wait_for`
    work as they do elsewhere."""

    @staticmethod
    def find_spec(
        name: str, path: object = None, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name != "asyncio.selector_events":
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)  # type: ignore[arg-type]
        if spec is not None and spec.loader is not None:
            spec.loader = _PatchAfter(spec.loader)  # type: ignore[assignment]  # a Loader in all but name
        return spec


class _PatchAfter:
    """A loader that runs the module as its own loader does, then patches its loop class."""

    def __init__(self, inner: object) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def create_module(self, spec: object) -> object:
        return self.inner.create_module(spec)  # type: ignore[attr-defined]

    def exec_module(self, module: object) -> None:
        self.inner.exec_module(module)  # type: ignore[attr-defined]
        loop = module.BaseSelectorEventLoop  # type: ignore[attr-defined]

        def make_self_pipe(self: object) -> None:
            self._ssock = self._csock = None  # type: ignore[attr-defined]

        def close_self_pipe(self: object) -> None:
            pass  # none was made

        loop._make_self_pipe = make_self_pipe
        loop._close_self_pipe = close_self_pipe


sys.meta_path[0:0] = [
    _CompileIntoScratch,
    _StandardFirst(_owned()),
    _SelfPipeless,  # before any finder that answers for every module
    _OneFilePerModule,
]
sys.meta_path[:] = [
    _TrustedDistributions if finder is importlib.machinery.PathFinder else finder
    for finder in sys.meta_path
]


class _NotImported:
    """Last on `sys.meta_path`: an import nothing else found, for which a folder it looked in
    holds what the sandbox cannot or will not load, says so plainly instead of "No module
    named": a compiled extension (`name.cpython-312-x86_64-linux-gnu.so`, `name.pyd`), or
    bytecode without its source (`name.pyc`, `name/__init__.pyc`)."""

    @staticmethod
    def find_spec(name: str, path: object = None, target: object = None) -> None:
        base = name.rpartition(".")[2]
        entries = list(path) if path is not None else sys.path  # type: ignore[call-overload]
        for entry in entries:
            folder = os.path.abspath(entry or ".")
            if _trusted(folder):
                continue  # the interpreter's own folders: no extension, no stray bytecode
            _refuse_bytecode(name, os.path.join(folder, base + ".pyc"))
            _refuse_bytecode(name, os.path.join(folder, base, "__init__.pyc"))
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for found in names:
                if found.startswith(base + ".") and found.endswith((".so", ".pyd", ".dylib")):
                    raise ModuleNotFoundError(
                        f"No module named {name!r}: {os.path.join(folder, found)} is a C "
                        "extension, which cannot load in the sandbox (CPython for WASI runs "
                        "pure Python only)",
                        name=name,
                    )
        return None


sys.meta_path.append(_NotImported)
