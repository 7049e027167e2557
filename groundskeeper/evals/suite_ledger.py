"""A sweep's suite ledger: its own signed, hash-chained ledger (ledger/SPEC.md, the same
format `ledger verify` reads) holding one sealed `case-verdict` per case key, written only by
the driver. A second execution of a key already sealed (an engine's retry, a second driver) is
a `case-duplicate`, never a second verdict; the check and the append happen under one lock
shared by every driver of the directory. It does not run cases.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import secrets
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from groundskeeper.evals.backends import CaseKey
from groundskeeper.evals.cases import EvalCase
from groundskeeper.evals.figures import CaseResult
from groundskeeper.record.keys import ensure_signing_key, trusted_keys
from groundskeeper.record.ledger import LEDGER_FILE, Ledger, LedgerError, excerpt, verify_ledger

LOCK_FILE = "_sweep.lock"
MAX_PROBLEMS = 5


class SuiteLedgerError(LedgerError):
    """A suite ledger that cannot be started or continued as asked."""


def verdict_body(
    key: CaseKey, result: CaseResult, executions: int, worker: Mapping[str, str]
) -> dict[str, Any]:
    """What a `case-verdict` seals (ledger/SPEC.md §7): integers and strings only."""
    return {
        "key": key.to_json(),
        "key_sha256": key.digest,
        "kind": result.case.kind,
        "category": result.case.category,
        "expected": result.expected,
        "actual": result.actual,
        "passed": result.passed,
        "scored": result.scored,
        "caught_by": result.caught_by,
        "error": None if result.error is None else excerpt(result.error),
        "problems": [excerpt(p) for p in result.problems[:MAX_PROBLEMS]],
        "tool_refusals": result.tool_refusals,
        "executions": executions,
        "worker": {str(k): str(v) for k, v in sorted(worker.items())},
        "ms": round(result.seconds * 1000),
    }


def result_from_verdict(case: EvalCase, body: Mapping[str, Any]) -> CaseResult:
    """A sealed verdict as a result again (a resumed sweep reports every key)."""
    key = body.get("key") or {}
    return CaseResult(
        case=case,
        expected=str(body.get("expected")),
        actual=str(body.get("actual")),
        passed=body.get("passed") is True,
        caught_by=body.get("caught_by") if isinstance(body.get("caught_by"), str) else None,
        problems=tuple(str(p) for p in body.get("problems") or ()),
        seconds=int(body.get("ms") or 0) / 1000,
        error=body.get("error") if isinstance(body.get("error"), str) else None,
        tool_refusals=int(body.get("tool_refusals") or 0),
        model=str(key.get("model")),
        repeat=int(key.get("repeat") or 1),
        executions=int(body.get("executions") or 1),
    )


class SuiteLedger:
    """The ledger of a sweep's directory, as one driver run writes it."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / LEDGER_FILE
        self._loaded = ensure_signing_key()
        self._trusted = trusted_keys()
        now = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        self._ledger = Ledger(
            directory, self._loaded.key, f"eval-{now}-{secrets.token_hex(4)}",
            trusted=self._trusted,
        )  # fmt: skip
        self._read_upto = 0
        self._sealed: dict[str, dict[str, Any]] = {}
        self._sweep: dict[str, Any] | None = None

    @classmethod
    def create(cls, directory: Path) -> SuiteLedger:
        """A new sweep in `directory` (made if absent); refused if it holds one already."""
        if (directory / LEDGER_FILE).exists():
            raise SuiteLedgerError(
                f"{directory} already holds a sweep's ledger; continue it with "
                f"`groundskeeper eval --resume {directory}` or name a new directory"
            )
        try:
            directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SuiteLedgerError(f"cannot make {directory}: {exc.strerror}") from None
        return cls(directory)

    @classmethod
    def resume(cls, directory: Path) -> SuiteLedger:
        """The sweep in `directory`, verified before anything is skipped on its word."""
        if not (directory / LEDGER_FILE).is_file():
            raise SuiteLedgerError(
                f"{directory} holds no sweep's ledger ({LEDGER_FILE}); start one with "
                f"`groundskeeper eval SUITE --ledger {directory}`"
            )
        report = verify_ledger(directory / LEDGER_FILE, trusted_keys())
        findings = [f for f in report.findings if f.code != "checkpoint-stale"]
        if findings:
            codes = ", ".join(sorted({f.code for f in findings}))
            raise SuiteLedgerError(
                f"{directory}: the suite ledger does not verify ({codes}); nothing in it can "
                f"be skipped. See `groundskeeper ledger verify {directory}`"
            )
        ledger = cls(directory)
        ledger.refresh()
        if ledger.sweep is None:
            raise SuiteLedgerError(f"{directory}: the ledger holds no eval sweep's run-start")
        return ledger

    @property
    def sweep(self) -> dict[str, Any] | None:
        """The first driver's `run-start` body: the sweep's suites, models, repeats."""
        return self._sweep

    @property
    def sealed(self) -> dict[str, dict[str, Any]]:
        """Each sealed key's verdict body, by the key's digest (as of the last refresh)."""
        return dict(self._sealed)

    def refresh(self) -> None:
        """Read the lines appended since the last read (by this driver or another)."""
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self._read_upto)
                data = fh.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n") + 1
        for raw in data[:end].split(b"\n")[:-1]:
            if b'"step":"case-verdict"' not in raw and b'"step":"run-start"' not in raw:
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            body = obj.get("body") if isinstance(obj, dict) else None
            if not isinstance(body, dict):
                continue
            if obj.get("step") == "run-start" and body.get("kind") == "eval":
                self._sweep = self._sweep or body
            elif obj.get("step") == "case-verdict" and isinstance(body.get("key_sha256"), str):
                self._sealed.setdefault(body["key_sha256"], body)
        self._read_upto += end

    def begin(self, body: Mapping[str, Any]) -> None:
        with self._locked():
            self.refresh()
            self._ledger.record("run-start", {"kind": "eval", **body})
            self.refresh()

    def seal(
        self, key: CaseKey, result: CaseResult, executions: int, worker: Mapping[str, str]
    ) -> bool:
        """Seal `result` as the key's verdict; False (a `case-duplicate` sealed instead) when
        the key was sealed already, by this driver or another."""
        with self._locked():
            self.refresh()
            earlier = self._sealed.get(key.digest)
            if earlier is not None:
                self._ledger.record(
                    "case-duplicate",
                    {
                        "key": key.to_json(),
                        "key_sha256": key.digest,
                        "actual": result.actual,
                        "passed": result.passed,
                        "same_verdict": (earlier.get("actual"), earlier.get("passed"))
                        == (result.actual, result.passed),
                        "executions": executions,
                    },
                )
                self.refresh()
                return False
            self._ledger.record("case-verdict", verdict_body(key, result, executions, worker))
            self.refresh()
            return True

    def end(self, body: Mapping[str, Any]) -> None:
        with self._locked():
            self._ledger.record("run-end", {"states": [], "tampers": 0, **body})

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        # One lock for "is it sealed?" and "seal it": two drivers of one directory never
        # both seal a key. The ledger's own lock covers only the append.
        fd = os.open(self.directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)
