"""A run's protected and hidden inputs (issues 23 and 28): which files each task protects
(its patterns and the expected files its check compares against), which the run hides, their
hashes at run start and at each task's start, and the fences a worker's attempt and the
judge are bound by. The sandbox's fence enforces them; `run_checks` asks `changed` before a
check runs. It owns the rule "protection follows paths, per task"; it does not seal.

A task's protection binds its own worker (and so, being inherited, its subtree's), not every
worker of the run: a sibling whose job is to regenerate the file is not refused, and the
task's check compares against what the file held when the task started. Hidden inputs bind
every worker of the run — an answer key one worker could read, it could pass on through the
shared workdir — and their hashes are the run-start ones, since no worker may change them.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from pathlib import Path

from groundskeeper.acceptance import protect
from groundskeeper.diagnostics import Diagnostic
from groundskeeper.path_patterns import covers
from groundskeeper.plan.expected import expected_files
from groundskeeper.plan.spec import PlanSpec
from groundskeeper.sandbox import fence as fences

__all__ = ["RunPaths"]

Hashes = dict[str, str | None]


class RunPaths:
    """The protected and hidden inputs of one run on `workdir`, read as it starts."""

    def __init__(self, workdir: Path, spec: PlanSpec) -> None:
        self.workdir = workdir
        hide = tuple(dict.fromkeys(p for task in spec for p in task.hide))
        #: the task id → the patterns its worker may not change: its `:protect:` patterns and
        #: its expected files that exist now (as anchored paths)
        self.keep: dict[str, tuple[str, ...]] = {}
        #: expected files protected without a `:protect:` naming them → the tasks comparing
        self.automatic: dict[str, list[str]] = {}
        self.hide_of: dict[str, tuple[str, ...]] = {}
        for task in spec:
            auto = tuple(
                p
                for p in expected_files(task)
                if (workdir / p).is_file() and not covers(task.protect, p)
                and not covers(task.hide, p)
            )  # fmt: skip
            for path in auto:
                self.automatic.setdefault(path, []).append(task.task_id)
            self.keep[task.task_id] = task.protect + tuple(f"/{p}" for p in auto)
            self.hide_of[task.task_id] = task.hide
        #: hidden inputs found at run start (hidden from every worker, seen by checks)
        self.hidden = protect.matched_files(workdir, hide)
        kept = protect.matched_files(workdir, [p for ps in self.keep.values() for p in ps])
        #: what every protected or hidden input held before any worker ran (sealed)
        self.start: Hashes = {
            f: protect.input_sha256(workdir, f) for f in sorted({*kept, *self.hidden})
        }
        self._hide = hide
        self._hiding = fences.hiding_inputs(workdir, self.hidden, hide)
        self._at_task: dict[str, Hashes] = {}
        self._lock = threading.Lock()

    def inputs_of(self, task_id: str) -> list[str]:
        """The files the task protects now (made since run start included)."""
        return protect.matched_files(self.workdir, self.keep.get(task_id, ()))

    def task_started(self, task_id: str) -> Hashes:
        """Hash the task's protected inputs as its work starts: its checks compare against
        these from now on (a sibling may have regenerated one since the run started)."""
        hashes = {f: protect.input_sha256(self.workdir, f) for f in self.inputs_of(task_id)}
        with self._lock:
            self._at_task[task_id] = hashes
        return hashes

    def worker_fence(self, task_id: str) -> fences.Fence:
        """What the task's worker is bound by: the run's hidden inputs, absent, and its own
        protected inputs — the files now and every name its patterns cover, made later."""
        keep = self.keep.get(task_id, ())
        files = self.inputs_of(task_id) if keep else []
        return self._hiding.union(fences.protecting(self.workdir, files, keep))

    def judge_fence(self) -> fences.Fence:
        """What the judge's reading is bound by: the hidden inputs are absent to it."""
        return self._hiding

    def changed(self, task_id: str) -> list[str]:
        """Why the task's check must not be trusted now: each hidden input it reads that
        changed since run start, each protected input changed since the task started (or,
        before it started, since run start), named."""
        with self._lock:
            baseline = self._at_task.get(task_id)
        found: list[str] = []
        hidden = [f for f in self.hidden if covers(self.hide_of.get(task_id, ()), f)]
        found += [f"hidden input changed: {f}" for f in self._differ(hidden, self.start)]
        now = self.inputs_of(task_id) if self.keep.get(task_id) else []
        if baseline is None:
            baseline = {f: h for f, h in self.start.items() if f in now or f in self._kept(task_id)}
        paths = sorted({*now, *baseline})
        found += [f"protected input changed: {f}" for f in self._differ(paths, baseline)]
        return found

    def _kept(self, task_id: str) -> set[str]:
        keep = self.keep.get(task_id, ())
        return {f for f in self.start if keep and covers(keep, f)}

    def _differ(self, paths: Iterable[str], baseline: Hashes) -> list[str]:
        return [p for p in paths if protect.input_sha256(self.workdir, p) != baseline.get(p)]

    def judged(self, patterns: tuple[str, ...]) -> tuple[str, ...]:
        """`:judge-files:` read by the one matcher (`protect.named_files`: a plain path as
        spelled, there or not, and a pattern or a directory as the files it covers now) —
        never a hidden input, named or covered (lint's F003 says so). A pattern naming no
        file, or too many to show, stays as written: it cannot be read, and the attempt
        fails before the judge is asked (J014)."""
        found: list[str] = []
        for pattern in patterns:
            try:
                named = protect.named_files(self.workdir, pattern)
            except ValueError:
                named = []
            if not named:
                found.append(pattern)
                continue
            found += [f for f in named if f not in self.hidden and not covers(self._hide, f)]
        return tuple(dict.fromkeys(found))

    def announcement(self) -> list[Diagnostic]:
        """The run's one word on expected files it protects without a pattern naming them
        (F002, info): which files, for which tasks, and how to let a worker change one."""
        if not self.automatic:
            return []
        listed = "; ".join(
            f"`{path}` (compared against by {', '.join(ids)})"
            for path, ids in sorted(self.automatic.items())
        )
        first = min(self.automatic)
        message = (
            f"protected automatically, as expected output a check compares against: {listed};"
            f" to let a task's worker change one, add `:writable: {first}` to that task"
        )
        return [Diagnostic("info", "run", message, None, "F002")]
