"""Where eval cases execute: the `ExecutionBackend` interface a sweep's driver submits case
jobs to and collects executions from, and its default, `ThreadBackend` (a pool of threads,
each running a case in its own subprocesses on this machine). The Ray backend
(`evals.ray_backend`) implements the same interface. A backend only executes: it never seals,
never holds the signing key and never decides that a case key is done; the driver
(`evals.sweep`) does.

Errors: `BackendError` (a usage error: exit 2) when a backend cannot start as asked (the
optional extra missing, a cluster that cannot be reached, a mixed cluster).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import tempfile
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as wait_futures
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from groundskeeper import __version__
from groundskeeper.errors import UsageError
from groundskeeper.evals.cases import EvalCase
from groundskeeper.evals.figures import STAND_IN, CaseResult
from groundskeeper.evals.run import run_case, warm_cache


class BackendError(UsageError):
    """A backend that cannot run the sweep as asked; the message names the fix."""


def worker_versions() -> dict[str, str]:
    """What a worker reports about itself: a sweep refuses a cluster whose workers differ."""
    try:
        from importlib.metadata import version

        wasmtime = version("wasmtime")
    except Exception:  # an unreadable distribution is a version too: it will not match
        wasmtime = "unknown"
    return {
        "groundskeeper": __version__,
        "wasmtime": wasmtime,
        "python": platform.python_version(),
    }


@dataclass(frozen=True, slots=True)
class CaseKey:
    """What a sweep seals once: a case of a suite, run by a model, the Nth repeat, by a
    version of groundskeeper."""

    suite: str
    case: str
    model: str
    repeat: int
    version: str = __version__

    def to_json(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "case": self.case,
            "model": self.model,
            "repeat": self.repeat,
            "groundskeeper": self.version,
        }

    @property
    def digest(self) -> str:
        """The key's identity: SHA-256 of its JSON with sorted keys (hex)."""
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def label(self) -> str:
        return f"{self.case} · {self.model} · #{self.repeat}"


@dataclass(frozen=True, slots=True)
class CaseJob:
    key: CaseKey
    case: EvalCase
    timeout: float
    model_spec: str | None  # None: the case's own scripted agents.yaml (the stand-in)


@dataclass(frozen=True, slots=True)
class Execution:
    """A job's outcome as a backend reports it: the result (a crash when the job could not
    be run to its end: `error` set, unscored) and how many times the job started."""

    job: CaseJob
    result: CaseResult
    executions: int = 1
    worker: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Started:
    """A job began executing somewhere: its key's digest, the process and the node."""

    digest: str
    pid: int
    node: str


def crashed(job: CaseJob, reason: str, seconds: float = 0.0) -> CaseResult:
    """The result of a job that never gave one: failed and unscored, with its reason."""
    return CaseResult(
        job.case,
        job.case.expectations[0].describe(),
        "crash",
        False,
        None,
        (f"crash: {reason}",),
        seconds,
        error=reason,
        model=job.key.model,
        repeat=job.key.repeat,
    )


def labelled(job: CaseJob, result: CaseResult, executions: int = 1) -> CaseResult:
    """`result` as the driver keeps it: the driver's own case, the key's model and repeat."""
    return replace(
        result, case=job.case, model=job.key.model, repeat=job.key.repeat, executions=executions
    )


class ExecutionBackend(ABC):
    """Runs case jobs somewhere and reports each as it ends. One driver thread calls it."""

    name: str = "backend"

    @property
    @abstractmethod
    def width(self) -> int:
        """How many jobs it runs at once (the driver keeps no more in flight)."""

    @abstractmethod
    def start(self) -> dict[str, str]:
        """Get ready (warm caches, check workers); the workers' versions. BackendError."""

    @abstractmethod
    def submit(self, job: CaseJob) -> None:
        """Start a job; its `Execution` comes out of `wait` once it ends, exactly once."""

    @abstractmethod
    def wait(self, timeout: float) -> list[Execution]:
        """The jobs that ended since the last call, waiting up to `timeout` for one."""

    def started(self) -> list[Started]:
        """Jobs that began executing since the last call (for progress; may be late)."""
        return []

    @abstractmethod
    def close(self) -> None:
        """Stop: jobs still running are abandoned (their cases' temp dirs are their own)."""


Runner = Callable[[EvalCase, float], CaseResult]


class ThreadBackend(ExecutionBackend):
    """The default: `jobs` threads on this machine, each case in its own subprocesses,
    temporary directory and `$GROUNDSKEEPER_HOME`; the sandbox compiled once per sweep.
    `runner` replaces `run_case` (the harness's own tests)."""

    name = "threads"

    def __init__(self, jobs: int = 2, runner: Runner | None = None) -> None:
        self._jobs = max(1, jobs)
        self._runner = runner
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._cache: Path | None = None
        self._futures: dict[Future[CaseResult], CaseJob] = {}
        self._started: list[Started] = []
        self._node = platform.node() or "localhost"

    @property
    def width(self) -> int:
        return self._jobs

    def start(self) -> dict[str, str]:
        self._tmp = tempfile.TemporaryDirectory(prefix="gk-eval-cache-")
        self._pool = ThreadPoolExecutor(max_workers=self._jobs)
        if self._runner is None:
            self._cache = warm_cache(Path(self._tmp.name))
        return worker_versions()

    def submit(self, job: CaseJob) -> None:
        assert self._pool is not None, "start() first"
        self._futures[self._pool.submit(self._execute, job)] = job

    def _execute(self, job: CaseJob) -> CaseResult:
        self._started.append(Started(job.key.digest, os.getpid(), self._node))
        if self._runner is not None:
            return self._runner(job.case, job.timeout)
        run = functools.partial(run_case, cache=self._cache, model=job.model_spec)
        return run(job.case, job.timeout)

    def wait(self, timeout: float) -> list[Execution]:
        if not self._futures:
            time.sleep(min(timeout, 0.05))
            return []
        done, _ = wait_futures(list(self._futures), timeout=timeout, return_when=FIRST_COMPLETED)
        ended: list[Execution] = []
        for future in done:
            job = self._futures.pop(future)
            try:
                result = labelled(job, future.result())
            except Exception as exc:  # a harness bug on one case must not hide the others
                result = crashed(job, f"the harness failed on this case: {exc!r}")
            ended.append(Execution(job, result, 1, {"node": self._node, **worker_versions()}))
        return ended

    def started(self) -> list[Started]:
        found, self._started = self._started, []
        return found

    def close(self) -> None:
        if self._pool is not None:
            for future in self._futures:
                future.cancel()
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def default_model_label(spec: str | None) -> str:
    return STAND_IN if spec is None else spec
