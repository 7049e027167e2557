"""Eval cases for groundskeeper's own defences: loading a suite (`cases`), running each case
isolated in its own `resume` subprocess (`run`), the figures (`figures`: recall with its
Wilson interval, the false-positive rate with its upper bound, per category and per model),
and sweeps of cases × models × repeats (`sweep`) on an execution backend (`backends`: a
thread pool by default, Ray behind the optional extra in `ray_backend`), each case key sealed
once by the driver in a suite ledger (`suite_ledger`), and hook cases: a scripted agent
session gated by the real `groundskeeper hook` (`hook`). It does not print; `groundskeeper eval`
does. Nothing here weakens a defence: a case runs the same `groundskeeper resume` a user runs.
"""

from __future__ import annotations

import importlib.resources
from pathlib import Path

from groundskeeper.evals.backends import (
    BackendError,
    CaseJob,
    CaseKey,
    Execution,
    ExecutionBackend,
    ThreadBackend,
)
from groundskeeper.evals.cases import EvalCase, EvalCaseError, Expectation, load_suite
from groundskeeper.evals.figures import (
    STAND_IN,
    CaseResult,
    EvalReport,
    by_model,
    caught_by,
    junit_xml,
    rule_of_three,
    summarize,
    wilson_interval,
)
from groundskeeper.evals.run import DEFAULT_TIMEOUT, run_case, warm_cache
from groundskeeper.evals.suite_ledger import SuiteLedger, SuiteLedgerError
from groundskeeper.evals.sweep import SweepHooks, run_suite, run_sweep

__all__ = [
    "DEFAULT_TIMEOUT",
    "STAND_IN",
    "BackendError",
    "CaseJob",
    "CaseKey",
    "CaseResult",
    "EvalCase",
    "EvalCaseError",
    "EvalReport",
    "Execution",
    "ExecutionBackend",
    "Expectation",
    "SuiteLedger",
    "SuiteLedgerError",
    "SweepHooks",
    "ThreadBackend",
    "by_model",
    "caught_by",
    "junit_xml",
    "load_suite",
    "rule_of_three",
    "run_case",
    "run_suite",
    "run_sweep",
    "shipped_suite",
    "summarize",
    "warm_cache",
    "wilson_interval",
]

SHIPPED_SUITE = "fake-done"


def shipped_suite() -> Path:
    """The fake-DONE suite installed with the package (`groundskeeper/suites/fake-done` in
    a wheel), or `evals/fake-done` of the repository in an editable install. Raises
    EvalCaseError when neither is there."""
    packaged = importlib.resources.files("groundskeeper") / "suites" / SHIPPED_SUITE
    candidates = [
        Path(str(packaged)),
        Path(__file__).resolve().parents[2] / "evals" / SHIPPED_SUITE,
    ]
    for candidate in candidates:
        if next(candidate.rglob("expect.json"), None) is not None:
            return candidate
    raise EvalCaseError(
        "the shipped suite is missing from this installation (looked in "
        + " and ".join(str(c) for c in candidates)
        + "); reinstall groundskeeper or pass a suite directory"
    )
