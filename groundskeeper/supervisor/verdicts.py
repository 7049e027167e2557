"""Taking a verdict: the keyword (and the parent's statistics cookies) into the run's copy of
the plan's lines at once; then, once the plan writer has put them on disk, the telemetry row
committed and the `state` step sealed.

It owns that copy of the lines and the #+TODO: line a run may insert above them; it does not
decide verdicts (the runner, its phases and the pipeline do) nor write files (`plan_guard`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from groundskeeper.plan.edit import (
    TODO_LINE,
    has_statistics_cookie,
    needs_todo_line,
    statistics_cookies,
)
from groundskeeper.plan.edit import replace_keyword as edit_keyword
from groundskeeper.plan.org import Heading, Plan
from groundskeeper.supervisor.plan_guard import PlanGuard
from groundskeeper.supervisor.reports import RunEvent
from groundskeeper.supervisor.run_books import RunBooks
from groundskeeper.supervisor.task_run import VERDICT_STATES, TaskRun


class VerdictWriter:
    """Verdicts from the scheduler thread (and the run's phases), one at a time."""

    def __init__(
        self,
        plan: Plan,
        tasks: Mapping[Heading, TaskRun],
        guard: PlanGuard,
        books: RunBooks,
        emit: Callable[[RunEvent], None],
    ) -> None:
        self.plan = plan
        self.tasks = tasks
        self.guard = guard
        self.books = books
        self.emit = emit
        self.lines = plan.text.split("\n")  # a verdict edits one line, as the plan numbers them
        self.shift = 0  # 1 once the run has inserted the #+TODO: line above every headline
        self._parents = {c: h for h in plan.walk() for c in h.children}
        # telemetry rows of verdicts on disk whose `state` steps are staged, not yet durable
        # (the plan writer's thread alone touches it)
        self._unsettled: list[int] = []

    def settle(
        self,
        task: TaskRun,
        state: str,
        attempts: int,
        verified: bool | None,
        reason: str | None,
        output: str,
        duration_ms: int,
        stop: str | None = None,
    ) -> None:
        """Take a verdict: into the headline now; the row and the step once it is on disk.

        After a sealing failure nothing is taken: the plan shows only verdicts whose steps
        were sealed (a verdict already on its way to disk may lose its `state` step)."""
        seal, telemetry, run_id = self.books.seal, self.books.telemetry, self.books.run_id
        if (seal.failure or self.guard.failure) is not None:  # the run is halted
            task.attempts = attempts
            task.reason = (
                "no verdict: the run could not seal its steps and stopped (R004)"
                if seal.failure is not None
                else "no verdict: the run could not write the plan and stopped (R006)"
            )
            return
        before = task.state
        task.state, task.attempts, task.verified = state, attempts, verified
        task.reason, task.output, task.stop = reason, output, stop
        heading = task.heading
        shown = "WAITING" if task.waiting is not None else state  # at its gate: a person next
        self.emit(
            RunEvent("task-end", heading.task_id, heading.title, shown, attempts, verified, reason)
        )
        inserted = False
        if before != state:
            inserted = self._write_keyword(heading, before, state)
        rows: list[int] = []

        def recorded() -> None:
            # pending until the plan holds it: a crash in between never leaves a row for a
            # verdict the plan lost (the next run's reconcile drops it), nor the reverse
            if telemetry is not None:
                rows.append(
                    telemetry.record_verdict(
                        run_id=run_id,
                        task_id=heading.task_id,
                        idx=task.idx,
                        title=heading.title,
                        state=state,
                        output=output,
                        attempt=attempts,
                        verified=verified,
                        reason=reason,
                        duration_ms=duration_ms,
                        committed=False,
                        stop=stop,
                    )
                )

        def written() -> None:
            if inserted:
                seal.plan_edit(1, TODO_LINE, f"`{state}` is a state org knows only from it")
            # a failure latches; the loop stops
            lies = task.lies if state != "DONE" else ()
            seal.state(heading.task_id, before, state, stop, lies, task.spec.verdict_sha256)
            self._unsettled.extend(rows)

        # the writer thread does the I/O, so the next task starts meanwhile
        self.guard.submit("\n".join(self.lines), written, before=recorded, settled=self._settle)

    def _settle(self) -> None:
        """Once per plan write, after every verdict it carried staged its `state` step: the
        rows stand only beside durable verdicts, so the steps are committed first (one commit
        for the whole write). A crash before this commit leaves the rows pending (dropped by
        the next run, which re-verifies the headline); a failed commit latches (SealingError)
        and leaves them pending."""
        telemetry = self.books.telemetry
        rows, self._unsettled = self._unsettled, []
        if telemetry is not None:
            self.books.seal.commit()
            telemetry.commit_verdicts(rows)

    def _write_keyword(self, heading: Heading, before: str, state: str) -> bool:
        """The verdict into `lines`: the keyword, then the parent's statistics cookies as
        org counts them. True when the #+TODO: line had to be inserted first (once a run)."""
        inserted = False
        lines = self.lines
        if not self.shift and needs_todo_line(self.plan, state):
            first = lines[0]
            bom = "\ufeff" if first.startswith("\ufeff") else ""
            crlf = "\r" if first.endswith("\r") else ""
            lines[0] = first[len(bom) :]
            lines.insert(0, bom + TODO_LINE + crlf)
            self.shift, inserted = 1, True
            self.emit(
                RunEvent("plan-edit", None, state=state, reason=(
                    f"inserted `{TODO_LINE}` as line 1: the plan had no #+TODO: line, and org"
                    f" reads `{state}` only with one (every later line moved down by one)"
                ))
            )  # fmt: skip
        number = heading.line - 1 + self.shift
        lines[number] = edit_keyword(lines[number], 1, before, state)
        parent = self._parents.get(heading)
        if parent is not None and has_statistics_cookie(parent):
            done = set(self.plan.done_states) | (set(VERDICT_STATES) if self.shift else set())
            total = finished = 0
            for child in parent.children:
                run = self.tasks.get(child)
                keyword = run.state if run is not None else child.keyword
                if keyword is not None:
                    total += 1
                    finished += keyword in done
            at = parent.line - 1 + self.shift
            lines[at] = statistics_cookies(lines[at], finished, total)
        return inserted
