"""The Ray execution backend (`--backend ray`, the optional extra `groundskeeper[ray]`): each
case job ships as its case directory's bytes in one Ray task, runs in its own temporary
directory and `$GROUNDSKEEPER_HOME` on whichever node takes it (the sandbox's compiled cache
warmed once per node; the case's commands forked from a fork server of the worker process's
own, started by its first case, as the thread pool forks them), and comes back to the driver,
which alone seals. Ray re-runs a task whose worker died (`retries`); every execution
announces itself to a registry actor first, so the driver counts repeats as duplicates. A
task that fails past its retries is a crashed, unscored case. Every node reports its versions
before the sweep; a mixed cluster is refused. It does not seal and never sees the signing key.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from groundskeeper.errors import UsageError
from groundskeeper.evals.backends import (
    BackendError,
    CaseJob,
    Execution,
    ExecutionBackend,
    Started,
    crashed,
    labelled,
    worker_versions,
)
from groundskeeper.evals.cases import load_case
from groundskeeper.evals.figures import CaseResult
from groundskeeper.evals.fork_client import ForkServer
from groundskeeper.evals.run import run_case, start_fork_server, warm_cache
from groundskeeper.ray_extra import connect
from groundskeeper.ray_extra import require_ray as require_extra

PROBE_TIMEOUT = 120.0


def require_ray() -> ModuleType:
    """The `ray` module, or BackendError naming the extra to install."""
    try:
        return require_extra()
    except UsageError as exc:
        raise BackendError(str(exc)) from None


# --- what runs on a node ----------------------------------------------------------------


def pack_case(case_dir: Path) -> bytes:
    """A case directory as the bytes of a tar archive (symlinks kept as symlinks)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(case_dir, arcname="case")
    return buffer.getvalue()


def _node_cache() -> Path | None:
    """This node's compiled sandbox, warmed by the first task that needs it, once: later
    tasks wait on the lock and find it ready. It is named by what it is compiled from and
    with (box.wasm's bytes, this wasmtime, the engine's settings), not by version numbers: a
    cache of another box.wasm under the same version would be a miss for every command."""
    from groundskeeper.sandbox.wasi import BOX_WASM, compiled_identity

    identity = compiled_identity(hashlib.sha256(BOX_WASM.read_bytes()).hexdigest())
    root = Path(tempfile.gettempdir()) / f"groundskeeper-ray-{os.getuid()}-{identity.hex()[:32]}"
    root.mkdir(mode=0o700, exist_ok=True)
    ready = root / "warm" / "home" / "cache"
    with _flocked(root / ".lock"):
        if ready.is_dir():
            return ready
        # warmed aside and renamed in whole: a worker killed mid-warm leaves no half cache
        scratch = Path(tempfile.mkdtemp(prefix="warming-", dir=root))
        cache = warm_cache(scratch)
        if cache is None:
            shutil.rmtree(scratch, ignore_errors=True)
            return None
        os.replace(scratch, root / "warm")
    return ready


@contextlib.contextmanager
def _flocked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


_forks: list[ForkServer] = []  # this worker process's server, while it lives


def _process_forks() -> ForkServer | None:
    """This Ray worker process's fork server (`evals.fork_client`), started by the first case
    the process runs and kept for the next ones: Ray gives a worker process one task at a
    time and reuses it. A server that has ended is replaced; None when none can start (each
    command then starts Python, as it would without the server)."""
    if _forks and _forks[0].alive:
        return _forks[0]
    while _forks:
        _forks.pop().close()
    forks = start_fork_server()
    if forks is not None:
        _forks.append(forks)
        atexit.register(forks.close)
    return forks


def execute_case(
    payload: bytes,
    name: str,
    timeout: float,
    model_spec: str | None,
    digest: str,
    registry: Any,
) -> dict[str, Any]:
    """One case job on a Ray worker: announce the execution, unpack, run, report."""
    import ray

    node = ray.get_runtime_context().get_node_id()
    ray.get(registry.began.remote(digest, os.getpid(), node))
    with tempfile.TemporaryDirectory(prefix="gk-ray-case-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(payload), mode="r") as tar:
            tar.extractall(tmp, filter="tar")
        case = load_case(Path(tmp) / "case", name)
        forks = _process_forks()
        result = run_case(case, timeout, cache=_node_cache(), model=model_spec, forks=forks)
    return {
        "result": result,
        "worker": {"node": node, **worker_versions()},
        "fork_server": None if forks is None else forks.pid,
    }


def probe_node() -> dict[str, str]:
    import ray

    return {"node": ray.get_runtime_context().get_node_id(), **worker_versions()}


class ExecutionRegistry:
    """A Ray actor on the cluster: every execution of a case job announces itself here
    before it works, so retries are seen even when the first execution never returned."""

    def __init__(self) -> None:
        self.events: list[tuple[str, int, str]] = []
        self.counts: dict[str, int] = {}

    def began(self, digest: str, pid: int, node: str) -> None:
        self.events.append((digest, pid, node))
        self.counts[digest] = self.counts.get(digest, 0) + 1

    def since(self, index: int) -> list[tuple[str, int, str]]:
        return self.events[index:]

    def count(self, digest: str) -> int:
        return self.counts.get(digest, 0)


# --- the driver's side ------------------------------------------------------------------


class RayBackend(ExecutionBackend):
    """Case jobs as Ray tasks on a local cluster (started here, `ray.init()`) or the one at
    `address` (`ray start --head`, KubeRay, a hosted cluster)."""

    name = "ray"

    def __init__(self, address: str | None = None, retries: int = 2) -> None:
        self._ray = require_ray()
        self._address = address
        self._retries = retries
        self._owns_cluster = False
        self._width = 1
        self._refs: dict[Any, CaseJob] = {}
        self._payloads: dict[Path, Any] = {}  # a case's packed bytes, put once
        self._registry: Any = None
        self._task: Any = None
        self._seen = 0

    @property
    def width(self) -> int:
        return self._width

    def start(self) -> dict[str, str]:
        ray = self._ray
        if not ray.is_initialized():
            try:
                connect(
                    ray,
                    address=self._address,
                    include_dashboard=False,
                    log_to_driver=False,
                    configure_logging=False,
                )
            except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError…
                where = self._address or "a local cluster"
                raise BackendError(
                    f"--backend ray: cannot start or reach {where}: {exc}. Start a cluster "
                    "with `ray start --head` and pass --address HOST:PORT, or drop --address "
                    "for a local one"
                ) from None
            self._owns_cluster = True
        self._width = max(1, int(ray.cluster_resources().get("CPU", 1)))
        versions = self._probe_nodes()
        self._registry = ray.remote(num_cpus=0)(ExecutionRegistry).remote()
        self._task = ray.remote(execute_case).options(
            num_cpus=1, max_retries=self._retries, retry_exceptions=False
        )
        return versions

    def _probe_nodes(self) -> dict[str, str]:
        """Every alive node's versions; BackendError unless all are the driver's."""
        ray = self._ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        probe = ray.remote(num_cpus=0)(probe_node)
        nodes = [n["NodeID"] for n in ray.nodes() if n.get("Alive")]
        refs = [
            probe.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False)
            ).remote()
            for n in nodes
        ]
        try:
            reports: list[dict[str, str]] = ray.get(refs, timeout=PROBE_TIMEOUT)
        except Exception as exc:
            raise BackendError(
                f"--backend ray: a node did not report its versions: {exc}"
            ) from None
        driver = worker_versions()
        for report in reports:
            differ = [k for k in ("groundskeeper", "wasmtime") if report.get(k) != driver[k]]
            if differ:
                have = ", ".join(f"{k} {report.get(k)}" for k in differ)
                want = ", ".join(f"{k} {driver[k]}" for k in differ)
                raise BackendError(
                    f"mixed cluster: node {report.get('node')} runs {have}, the driver {want};"
                    " install the same versions on every node"
                )
        return reports[0] if reports else driver

    def submit(self, job: CaseJob) -> None:
        payload = self._payloads.get(job.case.path)
        if payload is None:
            payload = self._payloads[job.case.path] = self._ray.put(pack_case(job.case.path))
        ref = self._task.remote(
            payload, job.case.name, job.timeout, job.model_spec, job.key.digest, self._registry
        )
        self._refs[ref] = job

    def wait(self, timeout: float) -> list[Execution]:
        ray = self._ray
        if not self._refs:
            return []
        ready, _ = ray.wait(list(self._refs), num_returns=1, timeout=timeout)
        if ready:
            ready, _ = ray.wait(list(self._refs), num_returns=len(self._refs), timeout=0)
        ended: list[Execution] = []
        for ref in ready:
            job = self._refs.pop(ref)
            executions = max(1, int(ray.get(self._registry.count.remote(job.key.digest))))
            worker: dict[str, str] = {}
            try:
                out = ray.get(ref)
                result: CaseResult = labelled(job, out["result"], executions)
                worker = dict(out["worker"])
            except ray.exceptions.RayError as exc:
                why = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
                result = labelled(
                    job,
                    crashed(
                        job,
                        f"the Ray task failed after {executions} execution(s) "
                        f"({type(exc).__name__}: {why})",
                    ),
                    executions,
                )
            ended.append(Execution(job, result, executions, worker))
        return ended

    def started(self) -> list[Started]:
        if self._registry is None:
            return []
        events = self._ray.get(self._registry.since.remote(self._seen))
        self._seen += len(events)
        return [Started(digest, pid, node) for digest, pid, node in events]

    def close(self) -> None:
        ray = self._ray
        for ref in list(self._refs):
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        self._refs.clear()
        self._payloads.clear()
        if self._registry is not None:
            with contextlib.suppress(Exception):
                ray.kill(self._registry)
            self._registry = None
        if self._owns_cluster:
            ray.shutdown()
            self._owns_cluster = False
