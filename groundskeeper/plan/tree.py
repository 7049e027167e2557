"""The shape of a run: a plan's tasks as a tree, and the rules for walking it.

`TaskWalk` decides what starts next (ORDERED children one by one, none after a failure;
others all at once) and what a parent rolls up to; it runs nothing itself — a `TreeHost`
(the runner) runs the jobs and takes the verdicts.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

from groundskeeper.plan.org import Heading

NodeKind = Literal["leaf", "composite", "group"]


@dataclass(eq=False)
class Node:
    """A task (leaf or composite parent) or a grouping heading with tasks below it."""

    heading: Heading | None  # None for the plan itself
    kind: NodeKind
    parent: Node | None
    ordered: bool
    children: list[Node] = field(default_factory=list)
    next_child: int = 0
    pending: int = 0
    outcome: str | None = None  # DONE, FAILED, PARTIAL (groups: DONE or PARTIAL)
    ran: bool = False  # this node or a descendant ran something in this run

    @property
    def task(self) -> Heading:
        assert self.heading is not None  # only groups have none, and they never run
        return self.heading


class TreeHost(Protocol):
    def start_state(self, node: Node) -> str:
        """The task's keyword when the run started."""

    def has_own_check(self, node: Node) -> bool: ...

    def submit(self, node: Node) -> None:
        """Start a job for a leaf, or for a composite's own check once its children are DONE;
        the host calls `TaskWalk.finished` with its verdict."""

    def settle(self, node: Node, state: str, reason: str | None) -> None:
        """A composite's verdict that needs no job (PARTIAL, or DONE without a check)."""


def build_tree(headings: tuple[Heading, ...]) -> Node:
    root = Node(None, "group", None, False)
    _grow(headings, root)
    return root


def _grow(headings: tuple[Heading, ...], parent: Node) -> None:
    for heading in headings:
        if heading.is_task:
            kind: NodeKind = "composite" if heading.child_tasks else "leaf"
        elif heading.child_tasks:
            kind = "group"
        else:
            continue
        node = Node(heading, kind, parent, heading.ordered)
        parent.children.append(node)
        if kind != "leaf":
            _grow(heading.children, node)


class TaskWalk:
    """The walk over one tree, driven from one thread: `begin`, then `run_pending` whenever
    `finished` reported something, until nothing is pending and no job is out."""

    def __init__(self, root: Node, host: TreeHost, finished: frozenset[str] = frozenset()) -> None:
        self.root = root
        self.host = host
        self.finished_states = finished  # done states not ours (CANCELLED…): never run again
        self._actions: deque[Callable[[], None]] = deque()

    def begin(self) -> None:
        self._actions.append(lambda: self._start(self.root))

    @property
    def pending(self) -> bool:
        return bool(self._actions)

    def run_next(self) -> None:
        self._actions.popleft()()

    def abandon(self) -> None:
        """Start nothing more (the run is stopping)."""
        self._actions.clear()

    def finished(self, node: Node, state: str) -> None:
        """A submitted job's verdict is settled."""
        node.outcome = state
        self._actions.append(lambda: self._child_finished(node))

    def _start(self, node: Node) -> None:
        if node.kind != "group" and self.host.start_state(node) in self.finished_states:
            self.finished(node, self.host.start_state(node))  # finished; its parent is not DONE
        elif node.kind == "leaf":
            if self.host.start_state(node) == "DONE":
                self.finished(node, "DONE")  # skipped: its worker never runs
            else:
                node.ran = True
                self.host.submit(node)
        elif not node.children:
            self._complete(node)
        elif node.ordered:
            node.next_child = 0
            first = node.children[0]
            self._actions.append(lambda: self._start(first))
        else:
            node.pending = len(node.children)
            for child in node.children:
                self._actions.append(lambda c=child: self._start(c))  # type: ignore[misc]

    def _child_finished(self, child: Node) -> None:
        parent = child.parent
        if parent is None:
            return
        parent.ran = parent.ran or child.ran
        if parent.ordered:
            if not self._through(child):
                self._complete(parent)  # later siblings are not started
                return
            parent.next_child += 1
            if parent.next_child < len(parent.children):
                self._start(parent.children[parent.next_child])
            else:
                self._complete(parent)
            return
        parent.pending -= 1
        if parent.pending == 0:
            self._complete(parent)

    def _through(self, child: Node) -> bool:
        """Whether a child is behind its parent: DONE, or closed by the plan's own done state
        (CANCELLED: the user's, as org counts it), whose parent is judged on the others."""
        return child.outcome == "DONE" or child.outcome in self.finished_states

    def _complete(self, node: Node) -> None:
        unfinished = [c.task.title for c in node.children if not self._through(c)]
        some_done = any(c.outcome == "DONE" for c in node.children)
        all_done = not unfinished and some_done
        if node.kind == "group":
            node.outcome = "DONE" if all_done else "PARTIAL"
            self._child_finished(node)
        elif unfinished:
            self._conclude(
                node, "PARTIAL", f"not every child task is DONE: {', '.join(unfinished)}"
            )
        elif not some_done:
            closed = ", ".join(c.task.title for c in node.children)
            self._conclude(
                node,
                "PARTIAL",
                f"no child task is DONE: every one was closed without work ({closed})",
            )
        elif not node.ran and self.host.start_state(node) == "DONE":
            node.outcome = "DONE"
            self._child_finished(node)
        elif self.host.has_own_check(node):
            node.ran = True
            self.host.submit(node)
        else:
            node.ran = True
            self._conclude(node, "DONE", None)

    def _conclude(self, node: Node, state: str, reason: str | None) -> None:
        self.host.settle(node, state, reason)
        node.outcome = state
        self._child_finished(node)
