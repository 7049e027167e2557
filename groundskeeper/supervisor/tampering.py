"""Tampering with the plan during a run: whom it is blamed on, and how it is recorded.

It owns the suspects (leaf jobs started and not yet judged) and the run's list of tampers;
finding a tamper is `plan_guard`'s, failing the blamed tasks closed the runner's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from groundskeeper.plan.org import Heading
from groundskeeper.plan.tree import Node
from groundskeeper.supervisor.plan_guard import Tamper
from groundskeeper.supervisor.reports import RunEvent
from groundskeeper.supervisor.run_books import RunBooks
from groundskeeper.supervisor.task_run import TaskRun


class Tampering:
    """The tampers of one run, and the suspects each is blamed on."""

    def __init__(
        self,
        tasks: Mapping[Heading, TaskRun],
        books: RunBooks,
        emit: Callable[[RunEvent], None],
    ) -> None:
        self.tasks = tasks
        self.books = books
        self.emit = emit
        self.tampers: list[Tamper] = []
        self._started: set[Node] = set()  # picked up by a pool thread, not yet judged
        self._lock = threading.Lock()

    def started(self, node: Node) -> None:
        with self._lock:
            self._started.add(node)

    def judged(self, node: Node) -> None:
        with self._lock:
            self._started.discard(node)

    def blame(self, tamper: Tamper) -> None:
        """Taint the suspects of a tampering; safe from any thread.

        The sandbox and the tools cannot write the plan, so a change to it came from outside,
        and no worker's record shows it: every worker that has started and is not yet judged
        fails closed, and its reason says blame could not be placed."""
        with self._lock:
            for node in self._started:
                if node.kind == "leaf":
                    task = self.tasks[node.task]
                    task.tainted = tamper
                    tamper.task_ids.append(task.heading.task_id)

    def record(self, tamper: Tamper, *, blamed: bool = False) -> None:
        """A tamper for the report, telemetry and the ledger (scheduler thread)."""
        if not blamed:
            self.blame(tamper)
        self.tampers.append(tamper)
        telemetry = self.books.telemetry
        if telemetry is not None:
            telemetry.record_tamper(
                run_id=self.books.run_id,
                task_id=",".join(tamper.task_ids) or None,
                rejected_path=str(tamper.rejected_path or ""),
                sha256=tamper.sha256,
                detail=tamper.describe(),
            )
        rejected = tamper.rejected_path.name if tamper.rejected_path else None
        self.books.seal.tamper(list(tamper.task_ids), rejected, tamper.sha256)
        self.emit(RunEvent("tamper", None, reason=tamper.describe()))
