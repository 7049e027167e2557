"""Tests appended to a test module that was there, as a task asking for tests may add them
(adversary-24 H5, F8).

A test module that was there before the work is its check's own: its module-level code runs
at collection, before any test, so an edit of it could rebind the code under test or drop a
failing test. But "add a test for a negative number" is most often done by appending a
function to the module that holds the others. Such an edit is told apart from the text
alone, on the host, never by importing it: every top-level statement the module held before
the work is still there, unchanged and in order (compared by the digest of its syntax tree,
so comments, blank lines and formatting do not count), and every statement after them is a
plain test function that runs nothing at collection —

- `def test…(…)` (or `async def`) binding a name no statement of the module binds before it;
- no default value and no annotation in its signature (both are evaluated as the module is
  imported);
- decorators only `pytest.mark.NAME` or `pytest.mark.NAME(…)` whose arguments are literals;

and, anywhere among them, one `import pytest` the module lacked, for those marks. A `from
MODULE import …` that was there may gain names for the new tests (`from calc import add`
become `from calc import add, mul`: adversary-28 H2), none aliased, none bound by another
statement of the module or read by any (a builtin its tests call included).

The module then imports as it did, plus function objects nothing calls until pytest runs
them; a new test could still patch the code under test for the tests that run after it, so
the check's pass stands only when it passes again without the new tests (`GK_DESELECT`,
which the sandbox's pytest honours: `cpython_site/gk_deselect.py`), as the tests of a new
module are run without it (`added_tests`).

It owns that reading: the digests sealed before the work (`statement_digests`) and what was
appended since (`appended`).
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from groundskeeper.acceptance.added_tests import rerun_without
from groundskeeper.acceptance.check import CheckResult, SealedCheck
from groundskeeper.plan.spec import TaskSpec
from groundskeeper.sandbox.confine import GUEST_ROOT

__all__ = [
    "DESELECT_ENV",
    "MAX_BYTES",
    "MAX_TEST_MODULES",
    "appended",
    "appended_to",
    "deselect_value",
    "read_digests",
    "statement_digests",
    "test_statements",
    "without_appended",
]

#: A module larger than this is not read: an edit of it is an edit like any.
MAX_BYTES = 1024 * 1024
#: Test modules whose statements are kept at most (past them: an edit like any).
MAX_TEST_MODULES = 2_000
#: A statement's digest: the first 96 bits of the SHA-256 of its syntax tree's dump.
DIGEST_CHARS = 24
#: The environment variable naming the tests a rerun leaves out: a JSON array of
#: `[absolute guest path, function name]` (`cpython_site/gk_deselect.py`).
DESELECT_ENV = "GK_DESELECT"


def _tree(source: str | bytes) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _digest(statement: ast.stmt) -> str:
    dumped = ast.dump(statement, include_attributes=False)
    return hashlib.sha256(dumped.encode()).hexdigest()[:DIGEST_CHARS]


def statement_digests(source: str | bytes) -> list[str] | None:
    """The digest of each top-level statement of a module's text, in order; None when it
    does not parse."""
    tree = _tree(source)
    return None if tree is None else [_digest(s) for s in tree.body]


def _source(path: Path) -> bytes | None:
    """The file's bytes; None when it cannot be read or is larger than `MAX_BYTES`."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError:
        return None
    return None if len(data) > MAX_BYTES else data


def read_digests(path: Path) -> list[str] | None:
    """`statement_digests` of the file at `path`; None when it cannot be read or is too
    large."""
    data = _source(path)
    return None if data is None else statement_digests(data)


def test_statements(
    root: Path, paths: Iterable[str], tasks: Iterable[TaskSpec]
) -> dict[str, tuple[str, ...]]:
    """The statement digests of each test module among `paths` (relative to `root`; at most
    `MAX_TEST_MODULES`), when some task asks for tests: what the run keeps at its start and
    an agents' snapshot at its seal, to tell an append from any other edit later."""
    from groundskeeper.plan.expected import asks_for_tests
    from groundskeeper.pytest_files import is_test_module

    if not any(asks_for_tests(t) for t in tasks):
        return {}
    found: dict[str, tuple[str, ...]] = {}
    for name in sorted(p for p in paths if is_test_module(p))[:MAX_TEST_MODULES]:
        digests = read_digests(root / name)
        if digests:
            found[name] = tuple(digests)
    return found


def appended_to(before: Sequence[str], path: Path) -> tuple[str, ...] | None:
    """`appended` of the file at `path` now; None when it cannot be read or is too large."""
    data = _source(path)
    return None if data is None else appended(before, data)


def appended(before: Sequence[str], source: str | bytes) -> tuple[str, ...] | None:
    """The names of the test functions `source` appends to the module whose statements had
    the digests `before`, when that is all the change is (see the module); None otherwise
    (an edit like any, or nothing appended)."""
    tree = _tree(source)
    if tree is None or not before:
        return None
    body = tree.body
    imports = [s for s in body if _imports_pytest(s)]
    if len(imports) == 1 and _digest(imports[0]) not in before:
        # `import pytest` put among them, for the marks of the new tests (adversary-24d F4)
        body = [s for s in body if s is not imports[0]]
        imports_added = True
    else:
        imports_added = False
    if len(body) <= len(before):
        return None
    old, new = body[: len(before)], body[len(before) :]
    widened: set[str] = set()
    for statement, digest in zip(old, before, strict=True):
        if _digest(statement) == digest:
            continue
        added = _widened(statement, digest)
        if added is None:
            return None
        widened |= added
    bound = _bound(old)
    if bound is None or (imports_added and "pytest" in bound):
        return None
    if widened and (widened & (_bound(old, widened) or {"*"}) or widened & _used(old)):
        return None  # a name it adds rebinds or shadows one the module had or uses
    names: list[str] = []
    for statement in new:
        if not _plain_test(statement) or statement.name in bound:  # type: ignore[attr-defined]
            return None
        name = statement.name  # type: ignore[attr-defined]
        bound.add(name)
        names.append(name)
    return tuple(names)


def _imports_pytest(statement: ast.stmt) -> bool:
    """`import pytest`, exactly: it runs nothing the runner has not run already."""
    return (
        isinstance(statement, ast.Import)
        and len(statement.names) == 1
        and statement.names[0].name == "pytest"
        and statement.names[0].asname is None
    )


def _plain_test(statement: ast.stmt) -> bool:
    if not isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    if not statement.name.startswith("test"):
        return False
    args = statement.args
    if args.defaults or any(d is not None for d in args.kw_defaults):
        return False
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    every += [a for a in (args.vararg, args.kwarg) if a is not None]
    if statement.returns is not None or any(a.annotation is not None for a in every):
        return False
    return all(_mark(d) for d in statement.decorator_list)


def _mark(decorator: ast.expr) -> bool:
    """`pytest.mark.NAME`, or a call of it with literal arguments."""
    if isinstance(decorator, ast.Call):
        values = [*decorator.args, *(k.value for k in decorator.keywords)]
        if any(k.arg is None for k in decorator.keywords) or not all(map(_literal, values)):
            return False
        decorator = decorator.func
    return (
        isinstance(decorator, ast.Attribute)
        and isinstance(decorator.value, ast.Attribute)
        and decorator.value.attr == "mark"
        and isinstance(decorator.value.value, ast.Name)
        and decorator.value.value.id == "pytest"
    )


def _literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Starred):
        return False
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


#: The most names a widened `from … import` may hold (each subset of them is tried).
_MAX_IMPORTED = 12


def _widened(statement: ast.stmt, digest: str) -> set[str] | None:
    """The names a `from MODULE import …` that was there gained (adversary-28 H2: `from calc
    import add` become `from calc import add, mul` for the test appended for `mul`): those
    whose removal gives the statement it was (`digest`), none of them `*` or aliased; None
    when it is no such statement."""
    if not isinstance(statement, ast.ImportFrom) or len(statement.names) > _MAX_IMPORTED:
        return None
    aliases = statement.names
    for size in range(len(aliases) - 1, 0, -1):
        for kept in itertools.combinations(range(len(aliases)), size):
            trial = ast.ImportFrom(statement.module, [aliases[i] for i in kept], statement.level)
            if _digest(trial) != digest:
                continue
            added = [aliases[i] for i in range(len(aliases)) if i not in kept]
            had = {aliases[i].name for i in kept}
            if any(a.name == "*" or a.asname is not None or a.name in had for a in added):
                return None
            return {a.name for a in added}
    return None


def _used(statements: Iterable[ast.stmt]) -> set[str]:
    """Every name the statements read (a builtin they call included)."""
    return {
        node.id
        for statement in statements
        for node in ast.walk(statement)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    }


def _bound(statements: Iterable[ast.stmt], leave: set[str] | None = None) -> set[str] | None:
    """Every name the module's statements may bind at its top level; None when that cannot
    be told (a `from … import *`). `leave`: names an import binds that are not counted
    (those a widened import gained)."""
    leave = leave or set()
    names: set[str] = set()
    for statement in statements:
        for node in ast.walk(statement):
            if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
                return None
            if isinstance(node, ast.Import | ast.ImportFrom):
                names.update(
                    (a.asname or a.name).split(".")[0] for a in node.names if a.name not in leave
                )
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
                names.add(node.id)
            elif isinstance(node, ast.Global | ast.Nonlocal):
                names.update(node.names)
    return names


def deselect_value(tests: Iterable[tuple[str, str]]) -> str:
    """`GK_DESELECT`'s value for the tests `(absolute guest path, function name)`."""
    return json.dumps(sorted(set(tests)))


def without_appended(
    check: SealedCheck,
    appended: Mapping[str, Sequence[str]],
    made: str,
    result: CheckResult,
    rerun: Callable[[SealedCheck], CheckResult],
) -> CheckResult:
    """`result` (a pass) when the check passes again without the test functions `appended`
    (module → names) to modules that were there, else a failure (`added_tests_decide`, as
    `added_tests.without_added` fails) naming them and why the tests that were there fail.
    `made`: when they were appended, as the reason's clause."""
    named = [(f"{GUEST_ROOT}/{path}", name) for path, names in appended.items() for name in names]
    listed = ", ".join(f"`{name}` in {path}" for path, names in appended.items() for name in names)
    value = "'" + deselect_value(named).replace("'", "'\\''") + "'"
    return rerun_without(check, f"{listed}, {made}", DESELECT_ENV, value, result, rerun)
