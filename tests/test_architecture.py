"""The import graph of groundskeeper, read from its source (issue 21): no circle among its
modules, none between its packages, nothing outside the CLI imports the CLI, and the record
stands on the foundation alone.

The graph is an `ast` walk rather than grimp's: every import statement counts, inside a
function or under TYPE_CHECKING as much as at the top, and `from groundskeeper.sandbox import
fence` is an import of `groundskeeper.sandbox` (whose `__init__` runs and whose namespace is
read) as well as of `groundskeeper.sandbox.fence`. grimp (3.20) records only the second, so a
submodule reaching back into its own package's `__init__` would go unseen.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterable, Mapping, Set
from itertools import pairwise
from pathlib import Path

import groundskeeper

#: importer -> imported -> the line of the first statement that imports it.
Graph = dict[str, dict[str, int]]

ROOT = "groundskeeper"
#: What every layer may stand on: the package's own `__init__` and its foundation modules.
FOUNDATION = frozenset(
    {
        ROOT,
        f"{ROOT}.errors",
        f"{ROOT}.diagnostics",
        f"{ROOT}.regular_file",
        f"{ROOT}.path_patterns",
        f"{ROOT}.fastclass",
        f"{ROOT}.logs",
        f"{ROOT}.collector",
    }
)
CLI = f"{ROOT}.cli"
RECORD = f"{ROOT}.record"


def module_names(source: Path, package: str) -> dict[str, Path]:
    """Every module of the package under `source` (its directory) by dotted name."""
    names: dict[str, Path] = {}
    for path in sorted(source.rglob("*.py")):
        parts = [package, *path.relative_to(source).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _imported_by(node: ast.AST, importer: str, is_package: bool, known: Set[str]) -> list[str]:
    """The package's modules one import statement imports (none for other statements)."""
    if isinstance(node, ast.Import):
        found = []
        for alias in node.names:
            # `import a.b.c` imports a.b.c; a name past the last module is an attribute
            parts = alias.name.split(".")
            while parts and ".".join(parts) not in known:
                parts.pop()
            if parts:
                found.append(".".join(parts))
        return found
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level:
        # a relative import counts from the importer's package (itself, for an `__init__`)
        anchor = importer.split(".")
        if not is_package:
            anchor.pop()
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, node.module] if node.module else anchor)
    else:
        base = node.module or ""
    found = [base] if base in known else []
    found += [f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in known]
    return found


def import_graph(source: Path, package: str) -> Graph:
    modules = module_names(source, package)
    known = frozenset(modules)
    graph: Graph = {name: {} for name in modules}
    for importer, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            for imported in _imported_by(node, importer, is_package, known):
                if imported != importer:
                    line = getattr(node, "lineno", 0)
                    graph[importer][imported] = min(graph[importer].get(imported, line), line)
    return graph


def strongly_connected(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """Tarjan's components of more than one node, each sorted; the list sorted too."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in edges.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)


def shortest_cycle(edges: Mapping[str, Iterable[str]], start: str) -> list[str]:
    """The shortest path start → … → start (breadth first), as the list of nodes it visits
    ending with start again; [] when there is none."""
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(edges.get(node, ())):
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if nxt not in came_from:
                came_from[nxt] = node
                queue.append(nxt)
    return []


def cycles(edges: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """For every circle (strongly connected component), the shortest cycle through each of
    its members, each cycle once: enough to name every edge that closes a circle."""
    seen: set[tuple[str, ...]] = set()
    found = []
    for component in strongly_connected(edges):
        for member in component:
            cycle = shortest_cycle(edges, member)
            turn = cycle.index(min(cycle[:-1]))
            key = tuple(cycle[turn:-1] + cycle[:turn])
            if key not in seen:
                seen.add(key)
                found.append([*key, key[0]])
    return found


def chain(graph: Graph, cycle: list[str]) -> str:
    """`a:12 → b:3 → a`: each module with the line where it imports the next."""
    hops = [f"{a}:{graph[a][b]}" for a, b in pairwise(cycle)]
    return " → ".join([*hops, cycle[-1]])


def package_of(module: str) -> str:
    """The top-level part a module belongs to: `groundskeeper.plan` for
    `groundskeeper.plan.lint`, a root module (`groundskeeper.errors`) is its own."""
    return ".".join(module.split(".")[:2])


def package_edges(graph: Graph) -> dict[str, dict[str, list[str]]]:
    """Package → package it imports → the module imports that make it so (`a:12 imports b`)."""
    edges: dict[str, dict[str, list[str]]] = {package_of(m): {} for m in graph}
    for importer, imported in graph.items():
        for target, line in sorted(imported.items()):
            source, sink = package_of(importer), package_of(target)
            if source != sink:
                edges[source].setdefault(sink, []).append(f"{importer}:{line} imports {target}")
    return edges


GRAPH = import_graph(Path(groundskeeper.__file__).parent, ROOT)


# --- the walk itself ------------------------------------------------------------------------


def _write(root: Path, files: Mapping[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_the_walk_counts_every_import_statement(tmp_path: Path) -> None:
    _write(tmp_path / "pkg", {
        "__init__.py": "def run():\n    from pkg.shell import go\n",
        "shell.py": "from pkg import fence, wasi\n",
        "fence.py": "import typing\nif typing.TYPE_CHECKING:\n    from pkg.wasi import W\n",
        "wasi.py": "import os\nimport pkg.sub.deep.name\nfrom .sub import deep\n",
        "sub/__init__.py": "from .. import errors\n",
        "sub/deep.py": "from ..errors import Error\nfrom . import missing\n",
        "errors.py": "",
    })  # fmt: skip
    assert import_graph(tmp_path / "pkg", "pkg") == {
        "pkg": {"pkg.shell": 2},
        "pkg.shell": {"pkg": 1, "pkg.fence": 1, "pkg.wasi": 1},
        "pkg.fence": {"pkg.wasi": 3},
        "pkg.wasi": {"pkg.sub.deep": 2, "pkg.sub": 3},
        "pkg.sub": {"pkg": 1, "pkg.errors": 1},
        "pkg.sub.deep": {"pkg.errors": 1, "pkg.sub": 2},
        "pkg.errors": {},
    }


def test_a_circle_is_named_with_its_chain() -> None:
    graph: Graph = {
        "a": {"b": 3},
        "b": {"c": 5, "a": 9},
        "c": {"a": 1},
        "d": {"a": 2},
    }
    assert [chain(graph, cycle) for cycle in cycles(graph)] == [
        "a:3 → b:9 → a",
        "a:3 → b:5 → c:1 → a",
    ]


# --- the rules ------------------------------------------------------------------------------


def test_the_walk_sees_the_packages_of_the_house() -> None:
    packages = {package_of(m) for m in GRAPH}
    expected = {"plan", "acceptance", "conformance", "record", "models", "supervisor", "sandbox",
                "cli", "evals", "errors", "diagnostics", "regular_file"}  # fmt: skip
    assert {f"{ROOT}.{name}" for name in expected} <= packages


def test_no_import_circle_among_modules() -> None:
    found = [chain(GRAPH, cycle) for cycle in cycles(GRAPH)]
    assert found == [], "import circles (module:line → the module it imports):\n" + "\n".join(found)


def test_no_import_circle_between_packages() -> None:
    edges = package_edges(GRAPH)
    lines = []
    for cycle in cycles(edges):
        lines.append(" → ".join(cycle))
        for source, sink in pairwise(cycle):
            lines.append(f"  {source} → {sink}:")
            lines.extend(f"    {why}" for why in edges[source][sink])
    assert lines == [], "packages in a circle, and the imports that close it:\n" + "\n".join(lines)


def test_nothing_outside_the_cli_imports_the_cli() -> None:
    outside = [
        f"{importer}:{line} imports {imported}"
        for importer, imports in sorted(GRAPH.items())
        if package_of(importer) != CLI and importer != f"{ROOT}.__main__"
        for imported, line in sorted(imports.items())
        if package_of(imported) == CLI
    ]
    assert outside == [], "only the CLI (and __main__) may import it:\n" + "\n".join(outside)


def test_the_record_imports_only_the_foundation() -> None:
    beyond = [
        f"{importer}:{line} imports {imported}"
        for importer, imports in sorted(GRAPH.items())
        if package_of(importer) == RECORD
        for imported, line in sorted(imports.items())
        if package_of(imported) != RECORD and imported not in FOUNDATION
    ]
    assert beyond == [], "the record stands on the foundation alone:\n" + "\n".join(beyond)
