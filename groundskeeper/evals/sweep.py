"""The sweep's driver: every case once per (model, repeat), submitted to an execution backend
with the work in flight per model capped here (rate limits come before CPU), each execution
gathered as it ends and sealed once per case key in the suite ledger (`evals.suite_ledger`).
Keys sealed by an earlier driver are skipped (`eval --resume`); a key's second execution is a
duplicate, counted and never sealed as a verdict. It owns scheduling, not running a case
(`evals.run`) nor where it runs (`evals.backends`).
"""

from __future__ import annotations

import logging
import re
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from groundskeeper.evals.backends import (
    BackendError,
    CaseJob,
    CaseKey,
    Execution,
    ExecutionBackend,
    Started,
    ThreadBackend,
    crashed,
    default_model_label,
    worker_versions,
)
from groundskeeper.evals.cases import EvalCase
from groundskeeper.evals.figures import CaseResult, EvalReport
from groundskeeper.evals.run import DEFAULT_TIMEOUT
from groundskeeper.evals.suite_ledger import SuiteLedger, result_from_verdict

logger = logging.getLogger(__name__)

#: What must match between the driver and every worker (a mixed cluster is refused).
PINNED = ("groundskeeper", "wasmtime")


@dataclass
class SweepHooks:
    """What a caller hears while a sweep runs (all optional; called on the driver thread)."""

    planned: Callable[[dict[str, int], dict[str, int]], None] | None = None  # to run, skipped
    started: Callable[[Started, CaseJob], None] | None = None
    ended: Callable[[int, CaseResult], None] | None = None  # how many ended so far, result


@dataclass
class _Books:
    results: dict[str, CaseResult] = field(default_factory=dict)
    sealed: int = 0
    duplicates: int = 0


def sweep_jobs(
    cases: Sequence[EvalCase], models: Sequence[str | None], repeat: int, timeout: float
) -> list[CaseJob]:
    """One job per (case, model, repeat), repeat-major so that a partial sweep has every
    model's figures."""
    return [
        CaseJob(
            CaseKey(case.name.split("/")[0], case.name, default_model_label(model), r),
            case,
            timeout,
            model,
        )
        for r in range(1, repeat + 1)
        for case in cases
        for model in models
    ]


_PYTEST = re.compile(rb"\bpytest\b")
_PYTHON = re.compile(rb"\bpython3?\b")


def cpython_weight(case: EvalCase) -> int:
    """How much of CPython in the sandbox the case's plan and worker script name: 2 for
    pytest (a second or more a run, several runs a case), 1 for python3 or python, else 0.
    The heaviest cases start first, and the cheap ones after them even out the threads'
    ends. It orders only when cases start: the report keeps the cases' own order."""
    text = b""
    for name in ("plan.org", "agents.yaml"):
        try:
            text += (case.path / name).read_bytes()
        except OSError:
            continue
    return 2 if _PYTEST.search(text) else 1 if _PYTHON.search(text) else 0


def mismatched(worker: dict[str, str], driver: dict[str, str]) -> str | None:
    """Why a worker may not take part in the driver's sweep, or None."""
    differ = [f"{name} {worker.get(name)!s}" for name in PINNED if worker.get(name) != driver[name]]
    if not differ:
        return None
    want = ", ".join(f"{name} {driver[name]}" for name in PINNED)
    where = worker.get("node", "a worker")
    return f"mixed cluster: {where} runs {', '.join(differ)}; the driver runs {want}"


def run_sweep(
    cases: Sequence[EvalCase],
    models: Sequence[str | None] = (None,),
    repeat: int = 1,
    *,
    backend: ExecutionBackend | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    ledger: SuiteLedger | None = None,
    max_in_flight: int | None = None,
    hooks: SweepHooks | None = None,
    options: dict[str, object] | None = None,
) -> EvalReport:
    """Run the sweep; results come back in job order (repeat, case, model). `ledger` seals
    each key once and skips keys sealed before; `max_in_flight` caps each model's jobs in
    flight (default: the backend's width). BackendError if the backend cannot start."""
    started_at = time.monotonic()
    hooks = hooks or SweepHooks()
    backend = backend or ThreadBackend()
    jobs = sweep_jobs(cases, models, repeat, timeout)
    books = _Books()
    sealed_before = ledger.sealed if ledger is not None else {}
    skipped = 0
    pending: dict[str, deque[CaseJob]] = {}
    for job in sorted(jobs, key=lambda j: (j.key.repeat, -cpython_weight(j.case))):
        body = sealed_before.get(job.key.digest)
        if body is not None:
            books.results[job.key.digest] = result_from_verdict(job.case, body)
            skipped += 1
        else:
            pending.setdefault(job.key.model, deque()).append(job)
    if hooks.planned is not None:
        labels = list(dict.fromkeys(j.key.model for j in jobs))
        hooks.planned(
            {m: sum(j.key.model == m for j in jobs) for m in labels},
            {m: sum(r.model == m for r in books.results.values()) for m in labels},
        )
    driver = worker_versions()
    try:
        workers = backend.start()
        refused = mismatched(workers, driver)
        if refused is not None:
            raise BackendError(f"{refused}; install the same versions on every node")
        if ledger is not None:
            ledger.begin(
                {
                    **(options or {}),
                    "models": list(dict.fromkeys(j.key.model for j in jobs)),
                    "repeat": repeat,
                    "keys": len(jobs),
                    "skipped": skipped,
                    "backend": backend.name,
                    "versions": driver,
                }
            )
        _drive(backend, pending, max_in_flight or backend.width, ledger, driver, books, hooks)
    finally:
        backend.close()
    if ledger is not None:
        ledger.end(
            {
                "ok": all(r.passed for r in books.results.values()),
                "sealed": books.sealed,
                "duplicates": books.duplicates,
                "skipped": skipped,
            }
        )
    ordered = tuple(books.results[j.key.digest] for j in jobs if j.key.digest in books.results)
    sweep = {
        "models": list(dict.fromkeys(j.key.model for j in jobs)),
        "repeat": repeat,
        "backend": backend.name,
        "ledger": str(ledger.directory) if ledger is not None else None,
        "keys": len(jobs),
        "sealed": books.sealed,
        "skipped": skipped,
        "duplicates": books.duplicates,
    }
    return EvalReport(ordered, time.monotonic() - started_at, sweep=sweep)


def _drive(
    backend: ExecutionBackend,
    pending: dict[str, deque[CaseJob]],
    cap: int,
    ledger: SuiteLedger | None,
    driver: dict[str, str],
    books: _Books,
    hooks: SweepHooks,
) -> None:
    in_flight: dict[str, int] = dict.fromkeys(pending, 0)
    by_digest: dict[str, CaseJob] = {}
    while any(pending.values()) or any(in_flight.values()):
        _submit(backend, pending, in_flight, cap, by_digest)
        ended = backend.wait(0.25)
        for began in backend.started():
            known = by_digest.get(began.digest)
            if known is not None and hooks.started is not None:
                hooks.started(began, known)
        for execution in ended:
            in_flight[execution.job.key.model] -= 1
        if ended:  # the next jobs start before these are sealed (a durable write each)
            _submit(backend, pending, in_flight, cap, by_digest)
        for execution in ended:
            _settle(execution, ledger, driver, books)
            if hooks.ended is not None:
                hooks.ended(len(books.results), books.results[execution.job.key.digest])


def _submit(
    backend: ExecutionBackend,
    pending: dict[str, deque[CaseJob]],
    in_flight: dict[str, int],
    cap: int,
    by_digest: dict[str, CaseJob],
) -> None:
    """Round-robin over the models, each under its own cap, all under the backend's width."""
    progressed = True
    while progressed and sum(in_flight.values()) < backend.width:
        progressed = False
        for model, queue in pending.items():
            if queue and in_flight[model] < cap and sum(in_flight.values()) < backend.width:
                job = queue.popleft()
                by_digest[job.key.digest] = job
                backend.submit(job)
                in_flight[model] += 1
                progressed = True


def _settle(
    execution: Execution, ledger: SuiteLedger | None, driver: dict[str, str], books: _Books
) -> None:
    """Seal one execution's result as its key's verdict, or count it as a duplicate."""
    job, result = execution.job, execution.result
    refused = mismatched(execution.worker, driver) if execution.worker else None
    if refused is not None:  # a node that joined after the check: its result is not taken
        result = crashed(job, refused, result.seconds)
    books.duplicates += max(0, execution.executions - 1)
    if ledger is None:
        books.results[job.key.digest] = result
        books.sealed += 1
        return
    if ledger.seal(job.key, result, execution.executions, execution.worker):
        books.results[job.key.digest] = result
        books.sealed += 1
        return
    # sealed already (another driver): the sealed verdict stands, this run is a duplicate
    books.duplicates += 1
    body = ledger.sealed.get(job.key.digest)
    books.results[job.key.digest] = (
        result_from_verdict(job.case, body) if body is not None else result
    )


def run_suite(
    cases: Sequence[EvalCase],
    jobs: int = 2,
    timeout: float = DEFAULT_TIMEOUT,
    on_result: Callable[[int, CaseResult], None] | None = None,
    runner: Callable[[EvalCase, float], CaseResult] | None = None,
    model: str | None = None,
) -> EvalReport:
    """Every case once, `jobs` at a time on this machine, nothing sealed; `on_result` hears
    each as it ends (with how many have ended). Results come back in the cases' order."""
    return run_sweep(
        cases,
        (model,),
        1,
        backend=ThreadBackend(jobs, runner),
        timeout=timeout,
        hooks=SweepHooks(ended=on_result),
    )
