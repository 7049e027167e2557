"""Python modules in the workdir read from their sources, for the rule on what a passing
check read (`check_inputs`): which are the work, which are the check's data.

**A module the worker made that only the work imports is the work** (adversary-18 F5). A
checker program's imports are its library (`check_inputs.check_role`), so a `.py` file a
worker MADE that a passing `python3 check.py` read is held as a shadow of that library — and
an honest worker that splits its own solution in two (`solver2.py`, which the task asks for,
importing its new `parse2.py`) was refused. A read set cannot tell who imported a file; the
sources can. A made module is the work when (`work_modules`):

- the checked task's own worker made it, alone;
- no file on the checker's side imports it by any name it could be imported under: the
  check's text, and every other `.py` the check read that the task does not ask for (the
  checker program, its library). Each must be read and parsed, and none may load code by a
  name computed at run time (`importlib`, `__import__`, `exec`, `runpy`, …): a checker
  whose imports cannot be read keeps every made module its own;
- the work imports it: a file the task asks for (or one already freed) names it in an
  import statement.

The sandbox has already ruled out the other ways in: a workdir module named like a standard
or site one is never imported in its place, nor a package beside a module of its name
(`sandbox/cpython_site/sitecustomize.py`). A freed module runs only where the asked code
already runs, inside the checker's interpreter: it adds nothing the work could not do.

**A module that held only values before the work is the check's data** (adversary-19 F20,
`data_modules`): the tests' expected `CASES` kept as Python, read before any worker runs.

**A module the tests import beside the code the task names is their reference** (adv24 F6,
`reference_modules`): "Fix vat.py" with tests that compare `gross(net)` with
`legacy.gross(net)` names the code under test; `legacy.py`, which the tests import and
`vat.py` does not (nor anything it imports), is what the tests judge against, whatever its
name — rewritten to agree with the bug, it passed. Read before any worker runs, from the
sources as they were. A text that names no module leaves every module the code under test.
"""

from __future__ import annotations

import ast
import os
import posixpath
import re
import stat
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from groundskeeper.plan.spec import TaskSpec

__all__ = [
    "data_modules",
    "holds_data_only",
    "reference_modules",
    "source_reader",
    "work_modules",
]

#: Larger than any module a worker writes by hand; a bigger file is not read (kept held).
_MAX_SOURCE = 1 << 20

#: Names whose mention in a checker file (a name, an attribute, a string) means modules may be
#: loaded by a name computed at run time, or the import machinery reached some other way.
_DYNAMIC = frozenset(
    {
        "__import__", "exec", "eval", "compile", "import_module", "run_path", "run_module",
        "exec_module", "load_module", "spec_from_file_location", "importlib", "imp", "runpy",
        "pkgutil", "zipimport", "builtins", "__builtins__", "modules", "meta_path",
        "path_hooks", "__loader__", "__spec__",
    }
)  # fmt: skip


def _names(path: str) -> frozenset[str]:
    """Every name a module file could be imported under, part by part: `mylib/parse.py` →
    {mylib, parse}; `pkg/__init__.py` → {pkg}."""
    parts = path[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return frozenset(parts)


def _imports(text: str) -> frozenset[str] | None:
    """Every name part an import statement in `text` mentions (modules and the names taken
    from them, which may be submodules); None when the source does not parse or loads code
    by a computed name."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.update(alias.name.split("."))
        elif isinstance(node, ast.ImportFrom):
            found.update((node.module or "").split("."))
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Name):
            if node.id in _DYNAMIC:
                return None
        elif isinstance(node, ast.Attribute):
            if node.attr in _DYNAMIC:
                return None
        elif isinstance(node, ast.Constant) and node.value in _DYNAMIC:
            return None
    if found & _DYNAMIC:
        return None
    found.discard("")
    return frozenset(found)


def work_modules(
    candidates: Iterable[str],
    read: Iterable[str],
    asked: Callable[[str], bool],
    check_text: str,
    text_of: Callable[[str], str | None],
) -> frozenset[str]:
    """Which of `candidates` (made `.py` files the check read, each made by the checked
    task's worker alone) are the work: see the module. `read`: every file the check read;
    `asked`: whether the checked task asks for a file; `check_text`: the check's own text;
    `text_of`: a file's text now, None when it cannot be read."""
    pending = {p for p in candidates if p.endswith(".py")}
    if not pending:
        return frozenset()
    work: list[frozenset[str]] = []
    checker: set[str] = set(re.findall(r"[A-Za-z_]\w*", check_text))
    for path in sorted({p for p in read if p.endswith(".py")} - pending):
        text = text_of(path)
        names = _imports(text) if text is not None else None
        if asked(path):
            if names is not None:
                work.append(names)
        elif names is None:
            return frozenset()  # a checker file whose imports cannot be read: nothing is freed
        else:
            checker |= names
    pending = {p for p in pending if not (_names(p) & checker)}
    freed: set[str] = set()
    while True:
        imported = frozenset().union(*work)
        newly = {p for p in pending - freed if _names(p) & imported}
        if not newly:
            return frozenset(freed)
        freed |= newly
        for path in sorted(newly):
            text = text_of(path)
            names = _imports(text) if text is not None else None
            if names is not None:
                work.append(names)


def source_reader(root: Path) -> Callable[[str], str | None]:
    """A `text_of` for `work_modules`: the text of a workdir file (relative, `/`-separated),
    None for one that is not a regular file there (a link included), too large, not UTF-8
    or not readable — whose imports then count as unknown."""

    def text_of(path: str) -> str | None:
        data = _read_source(root, path, _MAX_SOURCE)
        try:
            return data.decode("utf-8") if data is not None else None
        except UnicodeDecodeError:
            return None

    return text_of


def _read_source(root: Path, path: str, limit: int) -> bytes | None:
    """The bytes of the workdir file `path` (relative, `/`-separated), read without following
    a link or blocking; None for one that is not a regular file there, is over `limit`
    bytes, escapes the workdir's spelling (`..`, absolute) or cannot be read."""
    if path.startswith("/") or ".." in path.split("/"):
        return None
    try:
        fd = os.open(root / path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        try:
            data = handle.read(limit + 1)
        except OSError:
            return None
    return data if len(data) <= limit else None


#: A module's source larger than this is never read as data only.
_MAX_DATA_SOURCE = 64 * 1024
#: A line that makes a module code at a glance (no parse needed): a top-level definition
#: or import, as no docstring line reads.
_CODE_WORDS = re.compile(
    rb"^(?:(?:async )?def \w+\(|class \w+[:(]|import \w|from [\w.]+ import )", re.M
)


def holds_data_only(source: bytes) -> bool:
    """Whether a module's source only names values: a docstring, comments and assignments of
    literals (`CASES = [((2, 3), 5)]`, `EXPECTED: dict[str, int] = {…}`) — the expected
    values of tests kept as Python (adversary-19 F20), not code under test."""
    if len(source) > _MAX_DATA_SOURCE or _CODE_WORDS.search(source):
        return False
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    assigned = False
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if value is None:
            return False
        try:
            ast.literal_eval(value)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            return False
        assigned = True
    return assigned


def data_modules(root: Path, paths: Iterable[str]) -> frozenset[str]:
    """The `.py` files among `paths` (relative to `root`) whose source holds data only
    (`holds_data_only`), read now: call it before any worker runs."""
    return frozenset(
        path
        for path in paths
        if path.endswith(".py")
        and not path.endswith("/__init__.py")
        and (source := _read_source(root, path, _MAX_DATA_SOURCE)) is not None
        and holds_data_only(source)
    )


def reference_modules(
    root: Path, tasks: Iterable[TaskSpec], paths: Iterable[str]
) -> frozenset[str]:
    """The `.py` files among `paths` (relative to `root`) that some test-runner check's tests
    import beside the module its task names as the work, and that the named modules do not
    import, directly or through the workdir's modules (see the module): the tests'
    reference, the check's. Read now: call it before any worker runs."""
    from groundskeeper.plan.expected import asks_to_change
    from groundskeeper.plan.programs import checker_named
    from groundskeeper.plan.test_paths import runs_pytest_check, runs_unittest, test_paths
    from groundskeeper.pytest_files import is_test_module

    modules = sorted(p for p in paths if p.endswith(".py"))
    text_of = source_reader(root)
    imports: dict[str, frozenset[str] | None] = {}

    def imported(path: str) -> frozenset[str] | None:
        if path not in imports:
            text = text_of(path)
            imports[path] = _imports(text) if text is not None else None
        return imports[path]

    def stem(path: str) -> str:
        return posixpath.basename(path)[: -len(".py")]

    found: set[str] = set()
    for task in tasks:
        if not (runs_pytest_check(task) or runs_unittest(task)):
            continue
        where = [t for t in test_paths(task) if t not in ("", ".")]
        tests = [
            p
            for p in modules
            if is_test_module(p) or any(p == t or p.startswith(t.rstrip("/") + "/") for t in where)
        ]
        code = [p for p in modules if p not in tests and not checker_named(p)]
        named = [
            p
            for p in code
            if stem(p) != "__init__" and (asks_to_change(task, p) or _spoken_of(task, p))
        ]
        if not named or not tests:
            continue
        by_tests: set[str] = set()
        for test in tests:
            names = imported(test)
            if names is None:
                by_tests = set()  # the tests' imports cannot be read: nothing is told apart
                break
            by_tests |= names
        work: set[str] = set()  # every name the named modules import, through the workdir's
        pending = list(named)
        seen: set[str] = set()
        while pending:
            path = pending.pop()
            if path in seen:
                continue
            seen.add(path)
            names = imported(path)
            if names is None:
                work = set(by_tests)  # the work's imports cannot be read: all may be its
                break
            work |= names
            pending += [p for p in code if stem(p) in names]
        found |= _referenced(code, named, by_tests, work, imported)
    return frozenset(found)


# Words before a module's name that make it what the work is compared with ("agree with
# legacy.py", "the same as legacy.py"), not where the work is.
_COMPARED_WITH = frozenset(
    {"with", "against", "like", "as", "than", "to", "versus", "vs", "per", "match",
     "matches", "agree", "agrees", "mirror", "mirrors", "reference", "oracle", "from"}
)  # fmt: skip


def _spoken_of(task: TaskSpec, path: str) -> bool:
    """Whether the task's text names `path` as where the work is, though not as a change's
    object ("gross() in vat.py is broken: fix it", "vat.py adds 2 % … Fix the bug",
    adversary-24c F2): its name, not just after a word comparing with it."""
    from groundskeeper.plan.expected import task_text

    text = task_text(task)
    name = re.escape(posixpath.basename(path))
    for found in re.finditer(rf"(?<![\w./-])(?:[\w.-]+/)*{name}(?![\w-])", text):
        before = re.findall(r"[a-z]+", text[max(0, found.start() - 40) : found.start()].lower())
        if not any(w in _COMPARED_WITH for w in before[-3:]):
            return True
    return False


def _referenced(
    code: list[str],
    named: list[str],
    by_tests: set[str],
    work: set[str],
    imported: Callable[[str], frozenset[str] | None],
) -> set[str]:
    """The modules of `code` the tests import (`by_tests`: names), and those import in turn
    (a helper the tests assert through, and the reference it compares with), that are not
    the work: neither `named` nor imported by it (`work`: names), nor beside it in its
    package."""
    packages = {posixpath.dirname(p) for p in named if posixpath.dirname(p)}

    def reference(path: str, names: Iterable[str]) -> bool:
        stem = posixpath.basename(path)[: -len(".py")]
        return (
            path not in named
            and stem != "__init__"
            and stem in names
            and stem not in work
            and posixpath.dirname(path) not in packages
        )

    found: set[str] = set()
    more = [p for p in code if reference(p, by_tests)]
    while more:
        path = more.pop()
        if path in found:
            continue
        found.add(path)
        names = imported(path)
        if names is not None:  # unread: it stays the check's, what it imports the work's
            more += [p for p in code if p not in found and reference(p, names)]
    return found
