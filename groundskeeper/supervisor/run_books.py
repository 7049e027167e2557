"""A run's books: every step it seals with the telemetry row that goes with it, the usage of
its model calls, and the warnings its report will carry. Safe from any thread.

It owns this bookkeeping, shared by the runner, its phases and the pipeline's stages; it
decides nothing, and the steps' bodies are `sealing`'s, the rows' columns `telemetry`'s.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

from groundskeeper.acceptance.check import CheckResult
from groundskeeper.diagnostics import Diagnostic
from groundskeeper.models.model import ModelCall, UsageTotals
from groundskeeper.record.telemetry import Telemetry
from groundskeeper.supervisor.sealing import RunSeal


class RunBooks:
    """The books of one run (`run_id`): its seal, its telemetry (None: kept nowhere)."""

    def __init__(self, seal: RunSeal, telemetry: Telemetry | None, run_id: str) -> None:
        self.seal = seal
        self.telemetry = telemetry
        self.run_id = run_id
        self._lock = threading.Lock()
        self._usage = UsageTotals()
        self._soft: list[Diagnostic] = []  # soft contract failures: warnings in the report
        self._judge_warnings: list[Diagnostic] = []  # `fast`: a pass that stood unjudged
        self._check_events: list[tuple[str, str, str, str | None]] = []

    def model_called(self, task_id: str, attempt: int, call: ModelCall) -> None:
        """Every model call, answered or failed: sealed (before its reply is acted on), a row
        in telemetry, and added to the run's totals."""
        self.seal.model_call(task_id, attempt, call)
        with self._lock:
            self._usage = self._usage.add(call.usage)
        if self.telemetry is not None:
            self.telemetry.record_model_call(self.run_id, task_id, attempt, call)

    def check(
        self, task_id: str, attempt: int, result: CheckResult, phase: str | None = None
    ) -> None:
        """A check's verdict, sealed; one of a phase's is also a telemetry row, written with
        the rest of its phase (`flush_check_events`)."""
        self.seal.check(task_id, attempt, result, phase)
        if phase is not None and self.telemetry is not None:
            said = f"{result.code}: {result.reason}" if result.code else None
            with self._lock:
                self._check_events.append((task_id, phase, result.verdict, said))

    def inputs_unchanged(self, judged: Sequence[tuple[str, str, str]]) -> None:
        """DONEs the final sweep judged by their unchanged read sets (task id, check sha256,
        read set sha256), sealed together; each also a telemetry row of the sweep."""
        self.seal.inputs_unchanged(judged)
        if self.telemetry is not None:
            with self._lock:
                self._check_events.extend((t, "sweep", "PASS", None) for t, _, _ in judged)

    def untouched(self, phase: str, kept: Sequence[tuple[str, str | None]]) -> None:
        """DONEs kept in `phase` since nothing acted on the workdir after their verdict
        (task id, check sha256), sealed together; each also a telemetry row of the phase."""
        self.seal.untouched(phase, kept)
        if self.telemetry is not None:
            with self._lock:
                self._check_events.extend((t, phase, "PASS", None) for t, _ in kept)

    def flush_check_events(self) -> None:
        with self._lock:
            events, self._check_events = self._check_events, []
        if events and self.telemetry is not None:
            self.telemetry.record_check_events(self.run_id, events)

    def claim_events(self, task_id: str, attempt: int, rows: Sequence[Mapping[str, Any]]) -> None:
        """The verdicts on one claim's evidence and contracts, as telemetry rows, in one commit."""
        if self.telemetry is not None:
            self.telemetry.record_contract_events(self.run_id, task_id, attempt, rows)

    def soft_warning(self, warning: Diagnostic) -> None:
        with self._lock:
            if warning not in self._soft:  # the same on every attempt: said once
                self._soft.append(warning)

    def judge_warning(self, warning: Diagnostic) -> None:
        with self._lock:
            self._judge_warnings.append(warning)

    @property
    def usage(self) -> UsageTotals:
        with self._lock:
            return self._usage

    @property
    def soft_warnings(self) -> list[Diagnostic]:
        with self._lock:
            return list(self._soft)

    @property
    def judge_warnings(self) -> list[Diagnostic]:
        with self._lock:
            return list(self._judge_warnings)
