"""A run's checks: a task's check runs in the sandbox on the workdir, unless a hidden input it
reads changed since the run started or a protected input since the task started
(`run_paths`), which fails it without running it.

It owns that rule and the run's sealed checks outside the pipeline (phases, roll-ups, gates);
it does not decide what a result means for the task, and `acceptance.check` runs the check.
"""

from __future__ import annotations

from pathlib import Path

from groundskeeper.acceptance.added_tests import without_added
from groundskeeper.acceptance.appended_tests import without_appended
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

_EMPTY_SHA256 = sha256_text("")


class Observed:
    """What one final sweep found of sealed read sets, by their facts: many carried DONEs
    rest on the same set (the same check on the same files), and a set is checked and
    observed on disk once for all of them, in the same sweep. Never kept past it."""

    def __init__(self) -> None:
        self.digests: dict[tuple[tuple[str, ...], ...], str] = {}  # facts -> their digest
        self.holds: dict[tuple[tuple[str, ...], ...], bool] = {}  # facts -> still true now


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

    @property
    def configuration(self) -> tuple[str, ...]:
        """pytest's configuration the run keeps from every worker (`RunPaths.configuration`):
        a `pytest` contract runs under it as under its protected inputs."""
        return self.paths.configuration if self.paths is not None else ()

    @property
    def freed(self) -> tuple[str, ...]:
        """The names under `pytest` contracts' test paths some task's worker was entitled to
        write (`RunPaths.free`): a suite tolerates new tests there."""
        if self.paths is None:
            return ()
        return tuple(dict.fromkeys(p for ps in self.paths.free.values() for p in ps))

    @property
    def new_tests(self) -> tuple[str, ...]:
        """The test module names under `pytest` contracts' test paths some task's worker may
        make, its text asking for tests (`RunPaths.new_tests`): new files only."""
        if self.paths is None:
            return ()
        return tuple(dict.fromkeys(p for ps in self.paths.new_tests.values() for p in ps))

    @property
    def removed(self) -> tuple[str, ...]:
        """The test files under `pytest` contracts' test paths some task's text asks to
        remove by name, and the tests it asks to remove from one as `FILE::NAME`
        (`RunPaths.removed`): their red-first tests may go."""
        if self.paths is None:
            return ()
        return tuple(dict.fromkeys(p for ps in self.paths.removed.values() for p in ps))

    @property
    def renamed(self) -> tuple[tuple[str, str, str], ...]:
        """(file, old, new) for each test some task's text asks to rename
        (`RunPaths.renamed`): its red-first id may run by the new name."""
        if self.paths is None:
            return ()
        return tuple(dict.fromkeys(r for rs in self.paths.renamed.values() for r in rs))

    def run(self, task_id: str, check: SealedCheck) -> CheckResult:
        """The check's result, not sealed."""
        kept = self.kept(task_id, check.sha256)
        if kept is not None:
            return kept
        result = run_check(check, self.workdir, shell=self.shell, timeout=self.timeout)
        return self._inputs_held(task_id, check, result)

    def _inputs_held(self, task_id: str, check: SealedCheck, result: CheckResult) -> CheckResult:
        """A pass, unless a file it read that was there before the work was changed by a
        worker not entitled to (`acceptance.check_inputs`): then a failure naming each. A
        stand-in shell's pass records no reads, and stands."""
        if not result.passed or self.paths is None:
            return result
        read = result.read
        if read is None and self.shell is not None and not isinstance(self.shell, SandboxShell):
            return result
        gone = self.paths.links_made(result.links) + self.paths.inputs_read(
            task_id, read, result.folders
        )
        if gone:
            return _changed(check, gone, result.output)
        lost = self.paths.doctests_lost(task_id)
        if lost:
            return CheckResult("FAIL", "examples_lost", "; ".join(lost), result.output,
                               check.sha256, sha256_text(result.output), 0, None)  # fmt: skip
        added = self.paths.added_tests(task_id, read)
        result = self._without(check, added, result) if added else result
        appended = self.paths.appended_tests(task_id) if result.passed else {}
        if not appended:
            return result
        return without_appended(
            check,
            appended,
            "appended during the work",
            result,
            lambda alone: run_check(alone, self.workdir, shell=self.shell, timeout=self.timeout),
        )

    def _without(
        self, check: SealedCheck, added: list[tuple[str, str]], result: CheckResult
    ) -> CheckResult:
        """A pytest check's pass with test files a worker added (`RunPaths.added_tests`),
        once more without them (`acceptance.added_tests`)."""
        makers = ", ".join(dict.fromkeys(f"`{m}`" for _, m in added))
        return without_added(
            check,
            [p for p, _ in added],
            f"which the worker of task {makers} added",
            result,
            lambda alone: run_check(alone, self.workdir, shell=self.shell, timeout=self.timeout),
        )

    def kept(self, task_id: str, check_sha256: str | None = None) -> CheckResult | None:
        """The one rule of protection, for a task with a check or without one (a contract,
        the worker's word): a failure naming each hidden or protected input that changed, or
        that the task's worker tried to change and the fence refused (`RunPaths.changed`);
        None when none did."""
        gone = self.paths.changed(task_id) if self.paths is not None else []
        if not gone:
            return None
        return CheckResult("FAIL", "protected_input_changed", "; ".join(gone), "",
                           check_sha256, sha256_text(""), 0, None)  # fmt: skip

    def reused(
        self,
        task_id: str,
        check: SealedCheck,
        record: Record,
        rules: str,
        root: str | None = None,
        observed: Observed | None = None,
    ) -> CheckResult | None:
        """A DONE carried from an earlier run, judged again without running its check: a pass
        when the read set its last passing check was sealed with still holds on disk — the
        same bytes, stat fields, listings, absences and links — for this very check, under
        this sandbox and this groundskeeper. None: run it (the full path, as ever). `root`:
        the workdir's real path, when the caller resolved it (for many tasks at once);
        `observed`: what this sweep already found of the same facts (one sweep's only).
        `rules`: the task's `TaskSpec.verdict_sha256`."""
        sha256 = check.sha256  # (a property: hashed at each reading)
        if not record.backs_done(task_id, sha256, rules):
            return None
        if self.shell is not None and not isinstance(self.shell, SandboxShell):
            return None  # a stand-in for the sandbox: its verdicts rest on what it says
        if self.paths is not None and self.paths.changed(task_id):
            return None  # `run` says why it fails
        from groundskeeper.sandbox import inputs

        digests = observed.digests if observed is not None else None
        facts = inputs.sealed_facts(record.reads.get(task_id), sha256, digests)
        if facts is None:
            return None
        holds = observed.holds.get(facts) if observed is not None else None
        if holds is None:
            holds = inputs.unchanged(root or self.workdir, facts, real=root is not None)
            if observed is not None:
                observed.holds[facts] = holds
        if not holds:
            return None
        why = "inputs unchanged since its verdict"
        read = tuple(dict.fromkeys(f[1] for f in facts if f[0] == "bytes" and len(f) > 1))
        result = CheckResult("PASS", "", why, "", sha256, _EMPTY_SHA256, 0, None,
                             facts, reused=True, read=read)  # fmt: skip
        return result if not self.paths or not self.paths.inputs_read(task_id, read) else None

    def sealed(
        self, task_id: str, attempt: int, check: SealedCheck, phase: str | None = None
    ) -> CheckResult:
        """The check's result, sealed (a phase's also kept for telemetry)."""
        result = self.run(task_id, check)
        self.books.check(task_id, attempt, result, phase)
        return result


def _failed(check: SealedCheck, code: str, reason: str, output: str = "") -> CheckResult:
    return CheckResult("FAIL", code, reason, output, check.sha256, sha256_text(output), 0, None)


def _changed(check: SealedCheck, why: list[str], output: str = "") -> CheckResult:
    """A failure for inputs the check rests on that changed (`protected_input_changed`)."""
    return CheckResult("FAIL", "protected_input_changed", "; ".join(why), output,
                       check.sha256, sha256_text(output), 0, None)  # fmt: skip
