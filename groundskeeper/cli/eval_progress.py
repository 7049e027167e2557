"""Progress of an eval or a sweep on stderr: a line per case as it ends, and on a terminal a
live line (cases done/total per model, failures so far, elapsed, ETA); elsewhere that line is
printed plainly every tenth of the sweep.
"""

from __future__ import annotations

import time
from typing import Any

from groundskeeper.cli.progress import Progress
from groundskeeper.evals.figures import CaseResult
from groundskeeper.evals.sweep import SweepHooks


class SweepProgress(Progress):
    """The eval's narration plus its live line. `sweep` (several models or repeats) adds the
    model and repeat to each case's line."""

    def __init__(self, *, sweep: bool, live: bool | None = None) -> None:
        super().__init__(live=live)
        self._sweep = sweep
        self._totals: dict[str, int] = {}
        self._done: dict[str, int] = {}
        self._failed = 0
        self._ran = 0  # ended in this run (not skipped): the ETA's rate
        self._left = 0
        self._every = 1

    def __enter__(self) -> SweepProgress:
        super().__enter__()
        return self

    def hooks(self) -> SweepHooks:
        return SweepHooks(planned=self._planned, ended=self._ended)

    def close(self) -> None:
        self.__exit__(None, None, None)

    def _planned(self, totals: dict[str, int], skipped: dict[str, int]) -> None:
        with self._lock:
            self._totals = dict(totals)
            self._done = dict(skipped)
            self.total = sum(totals.values())
            self.done = sum(skipped.values())
            self._left = self.total - self.done
            self._every = max(1, self._left // 10)
        if self.done:
            self.say(f"skipping {self.done} case run(s) sealed before")

    def _ended(self, done: int, result: CaseResult) -> None:
        with self._lock:
            self._done[result.model] = self._done.get(result.model, 0) + 1
            self.done += 1
            self._ran += 1
            self._failed += not result.passed
        width = len(str(self.total))
        mark = "✔" if result.passed else "✘"
        by = f", caught by {result.caught_by}" if result.caught_by else ""
        if result.tool_refusals:
            by += f", {result.tool_refusals} tool call(s) refused"
        if result.executions > 1:
            by += f", executed {result.executions} times"
        why = "" if result.passed else " — " + "; ".join(result.problems)
        name = result.case.name
        if self._sweep:
            name += f" · {result.model} · #{result.repeat}"
        self.say(
            f"[{self.done:>{width}}/{self.total}] {mark} {name}: {result.actual}"
            f" (expected {result.expected}{by}, {result.seconds:.1f}s){why}"
        )
        if self._sweep and not self._live_wanted and (self._ran % self._every == 0):
            self.say(self.status_line())
        with self._lock:
            self._refresh()

    def status_line(self) -> str:
        elapsed = time.monotonic() - self._started
        per_model = " · ".join(
            f"{model} {self._done.get(model, 0)}/{total}" for model, total in self._totals.items()
        )
        parts: list[Any] = [per_model or f"{self.done}/{self.total}"]
        parts.append(f"{self._failed} failed")
        parts.append(f"{elapsed:.0f} s")
        if self._ran:
            left = self._left - self._ran
            parts.append(f"ETA {elapsed / self._ran * left:.0f} s" if left > 0 else "ETA 0 s")
        return " · ".join(str(p) for p in parts)
