"""Lint of `:workflow:` subtrees: data flow between components (W001–W004, cycles) and `js`
blocks marked `:validate workflow`, judged in the zero-tool QuickJS sandbox (W005–W007).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from groundskeeper.diagnostics import Diagnostic, Level
from groundskeeper.plan.org import Heading, Plan

if TYPE_CHECKING:
    from groundskeeper.sandbox.script_validation import ScriptIssue

WORKFLOW = "workflow"
COMPONENT = "component"


# --- workflows ---------------------------------------------------------------------------------


@dataclass
class _Workflow:
    heading: Heading
    components: list[Heading] = field(default_factory=list)


def _workflows(plan: Plan) -> list[_Workflow]:
    """Each `:workflow:` heading with its components (own tag), nearest workflow owning each."""
    found: list[_Workflow] = []
    stack: list[tuple[Heading, _Workflow | None]] = [(h, None) for h in reversed(plan.roots)]
    while stack:
        heading, owner = stack.pop()
        if owner is not None and COMPONENT in heading.tags:
            owner.components.append(heading)
        inner = owner
        if WORKFLOW in heading.tags:
            inner = _Workflow(heading)
            found.append(inner)
        stack.extend((child, inner) for child in reversed(heading.children))
    return found


def _declared(component: Heading) -> tuple[list[str], list[str]]:
    """A component's `:in` and `:out` values over its source blocks, first mention first."""
    inputs: dict[str, None] = {}
    outputs: dict[str, None] = {}
    for block in component.blocks:
        if block.language:
            inputs.update(dict.fromkeys(block.inputs))
            outputs.update(dict.fromkeys(block.outputs))
    return list(inputs), list(outputs)


def workflow_diagnostics(plan: Plan) -> Iterator[Diagnostic]:
    for workflow in _workflows(plan):
        yield from _workflow_rules(workflow)


def _workflow_rules(workflow: _Workflow) -> Iterator[Diagnostic]:
    components = workflow.components
    producers: dict[str, list[int]] = {}
    declared_flow = [_declared(c) for c in components]
    inputs = [flow[0] for flow in declared_flow]
    outputs = [flow[1] for flow in declared_flow]
    for index, declared in enumerate(outputs):
        for value in declared:
            producers.setdefault(value, []).append(index)

    names: dict[str, Heading] = {}
    for index, component in enumerate(components):
        title = component.title
        if title in names:
            message = f"duplicate component name `{title}` in workflow `{workflow.heading.title}`"
            yield Diagnostic("error", title, message, component.line, "W004")
        names.setdefault(title, component)
        if not any(block.language for block in component.blocks):
            message = "component has no source block / language"
            yield Diagnostic("error", title, message, component.line, "W001")
        for value in inputs[index]:
            if value not in producers:
                message = f"input `{value}` has no upstream producer"
                yield Diagnostic("error", title, message, component.line, "W002")

    successors: list[list[int]] = [[] for _ in components]
    for consumer, declared in enumerate(inputs):
        for value in declared:
            for producer in producers.get(value, ()):
                successors[producer].append(consumer)
    for cycle in _cycles(successors):
        start = components[cycle[0]]
        path = " → ".join(components[i].title for i in (*cycle, cycle[0]))
        yield Diagnostic(
            "error", start.title, f"components form a cycle: {path}", start.line, "W003"
        )


_VALIDATE = ":validate"
_VALIDATORS = ("workflow",)
_SCRIPT_LANGUAGES = ("js", "javascript")


def script_diagnostics(plan: Plan) -> Iterator[Diagnostic]:
    """W005 (error) and W006 (warning): what script validation finds in a block marked
    `:validate workflow`, on the plan line it points at; W007: a `:validate` lint cannot honour
    (another validator, or a block that is not JavaScript), so nothing goes unchecked quietly."""
    for heading in plan.walk():
        for block in heading.blocks:
            args = block.header_args
            if _VALIDATE not in args:
                continue
            at = args.index(_VALIDATE)
            wanted = args[at + 1] if at + 1 < len(args) else ""
            title = heading.title
            if wanted not in _VALIDATORS:
                shown = f"`{wanted}`" if wanted and not wanted.startswith(":") else "nothing"
                message = f"`:validate` names {shown}; the validator lint knows is `workflow`"
                yield Diagnostic("error", title, message, block.line, "W007")
            elif block.language.lower() not in _SCRIPT_LANGUAGES:
                shown = block.language or "no language"
                message = f"`:validate workflow` is for `js` blocks; this block is {shown}"
                yield Diagnostic("error", title, message, block.line, "W007")
            else:
                yield from _validated_script(title, block.body, block.line)


def _validated_script(title: str, body: str, begin_line: int) -> Iterator[Diagnostic]:
    from groundskeeper.sandbox import SandboxError
    from groundskeeper.sandbox.script_validation import validate_script

    try:
        verdict = validate_script(body)
    except SandboxError as error:  # fail closed: a script nobody could judge is not valid
        message = f"workflow script could not be validated: {error}"
        yield Diagnostic("error", title, message, begin_line, "W005")
        return
    findings: list[tuple[Level, str, ScriptIssue]] = [
        *(("error", "W005", issue) for issue in verdict.errors),
        *(("warning", "W006", issue) for issue in verdict.warnings),
    ]
    for level, code, issue in findings:
        # the script's line 1 is the line after `#+begin_src`
        line = begin_line + issue.line if issue.line is not None else begin_line
        message = f"workflow script: {issue.message} ({issue.code})"
        yield Diagnostic(level, title, message, line, code)


def _cycles(successors: list[list[int]]) -> list[list[int]]:
    """One shortest cycle per strongly connected component that has one (Tarjan, iterative)."""
    count = len(successors)
    index_of = [-1] * count
    low = [0] * count
    on_stack = [False] * count
    stack: list[int] = []
    groups: list[list[int]] = []
    counter = 0
    for root in range(count):
        if index_of[root] != -1:
            continue
        work: list[tuple[int, int]] = [(root, 0)]
        while work:
            node, edge = work.pop()
            if edge == 0:
                index_of[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack[node] = True
            if edge < len(successors[node]):
                work.append((node, edge + 1))
                nxt = successors[node][edge]
                if index_of[nxt] == -1:
                    work.append((nxt, 0))
                elif on_stack[nxt]:
                    low[node] = min(low[node], index_of[nxt])
                continue
            if low[node] == index_of[node]:
                group: list[int] = []
                while True:
                    member = stack.pop()
                    on_stack[member] = False
                    group.append(member)
                    if member == node:
                        break
                groups.append(group)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])

    cycles: list[list[int]] = []
    for group in groups:
        start = min(group)
        members = set(group)
        if len(group) == 1 and start not in successors[start]:
            continue
        cycles.append(_shortest_cycle(start, members, successors))
    return sorted(cycles, key=lambda cycle: cycle[0])


def _shortest_cycle(start: int, members: set[int], successors: list[list[int]]) -> list[int]:
    came_from: dict[int, int] = {}
    frontier = [start]
    while frontier:
        following: list[int] = []
        for node in frontier:
            for nxt in successors[node]:
                if nxt == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return path[::-1]
                if nxt in members and nxt not in came_from:
                    came_from[nxt] = node
                    following.append(nxt)
        frontier = following
    return [start]  # unreachable: every member of a cycle group reaches its start
