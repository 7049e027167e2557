"""A run's checks: a task's check runs in the sandbox on the workdir, unless a hidden input it
reads changed since the run started or a protected input since the task started
(`run_paths`), which fails it without running it.

It owns that rule and the run's sealed checks outside the pipeline (phases, roll-ups, gates);
it does not decide what a result means for the task, and `acceptance.check` runs the check.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from groundskeeper.acceptance.check import (
    CheckResult,
    SandboxShell,
    SealedCheck,
    Shell,
    run_check,
    sha256_text,
)
from groundskeeper.record.backing import Record
from groundskeeper.supervisor.run_books import RunBooks
from groundskeeper.supervisor.run_paths import RunPaths


class RunChecks:
    """The checks of one run on `workdir`; `paths` is set as it starts."""

    def __init__(self, workdir: Path, shell: Shell | None, timeout: float, books: RunBooks) -> None:
        self.workdir = workdir
        self.shell = shell
        self.timeout = timeout
        self.books = books
        self.paths: RunPaths | None = None  # the run's protected and hidden inputs

    @property
    def hidden(self) -> tuple[str, ...]:
        """The run's hidden inputs (found at its start): what no failure a worker reads may
        show."""
        return tuple(self.paths.hidden) if self.paths is not None else ()

    def run(self, task_id: str, check: SealedCheck) -> CheckResult:
        """The check's result, not sealed."""
        gone = self.paths.changed(task_id) if self.paths is not None else []
        if gone:
            why = "; ".join(gone)
            return CheckResult("FAIL", "protected_input_changed", why, "", check.sha256,
                               sha256_text(""), 0, None)  # fmt: skip
        return run_check(check, self.workdir, shell=self.shell, timeout=self.timeout)

    def reused(
        self,
        task_id: str,
        check: SealedCheck,
        record: Record,
        rules: str,
        root: str | None = None,
    ) -> CheckResult | None:
        """A DONE carried from an earlier run, judged again without running its check: a pass
        when the read set its last passing check was sealed with still holds on disk — the
        same bytes, stat fields, listings, absences and links — for this very check, under
        this sandbox and this groundskeeper. None: run it (the full path, as ever). `root`:
        the workdir's real path, when the caller resolved it (for many tasks at once).
        `rules`: the task's `TaskSpec.verdict_sha256`."""
        if not record.backs_done(task_id, check.sha256, rules):
            return None
        if self.shell is not None and not isinstance(self.shell, SandboxShell):
            return None  # a stand-in for the sandbox: its verdicts rest on what it says
        if self.paths is not None and self.paths.changed(task_id):
            return None  # `run` says why it fails
        facts = _facts(record.reads.get(task_id), check.sha256)
        if facts is None:
            return None
        from groundskeeper.sandbox import inputs

        if not inputs.unchanged(root or self.workdir, facts, real=root is not None):
            return None
        why = "inputs unchanged since its verdict"
        return CheckResult("PASS", "", why, "", check.sha256, sha256_text(""), 0, None,
                           facts, reused=True)  # fmt: skip

    def sealed(
        self, task_id: str, attempt: int, check: SealedCheck, phase: str | None = None
    ) -> CheckResult:
        """The check's result, sealed (a phase's also kept for telemetry)."""
        result = self.run(task_id, check)
        self.books.check(task_id, attempt, result, phase)
        return result


def _facts(
    sealed: Mapping[str, Any] | None, check_sha256: str
) -> tuple[tuple[str, ...], ...] | None:
    """The facts of a sealed read set, when it was sealed for this check by this sandbox and
    its digest is theirs; None otherwise."""
    if sealed is None or sealed.get("check_sha256") != check_sha256:
        return None
    from groundskeeper.sandbox import read_set

    if sealed.get("version") != read_set.sandbox_version():
        return None
    listed = sealed.get("facts")
    if not isinstance(listed, list):
        return None
    facts: list[tuple[str, ...]] = []
    for fact in listed:
        if not isinstance(fact, list) or not all(isinstance(part, str) for part in fact):
            return None
        facts.append(tuple(fact))
    if read_set.digest(facts) != sealed.get("sha256"):
        return None
    return tuple(facts)
