"""The Ray backend on a real local cluster (one per module: `ray.init(num_cpus=2)`, usage
stats off): a worker killed mid-sweep is re-run by Ray and its key still sealed once, the
retry counted as a duplicate; a task that fails past its retries is a crashed, unscored case;
a node running other versions is refused before anything runs."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundskeeper import __version__
from groundskeeper.cli import main
from groundskeeper.evals import CaseJob, SuiteLedger, SweepHooks, load_suite, run_sweep
from groundskeeper.evals.backends import Started
from groundskeeper.evals.ray_backend import RayBackend
from groundskeeper.ray_extra import connect, require_ray
from tests.ray_start import started
from tests.test_eval_sweep import verdicts
from tests.test_evals import CHECK, CLAIM, FAKE, HONEST, WRITE_42, make_case

ray = require_ray()  # before Ray loads: what groundskeeper's driver sets (ray_extra)


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    started(lambda: connect(ray, num_cpus=2, include_dashboard=False, log_to_driver=False))
    yield
    ray.shutdown()


def suite(root: Path) -> Path:
    # the fake's worker sleeps first: a kill during it lands mid-case
    make_case(root / "s", "fake", CHECK, "    - {tool: sh, input: {cmd: sleep 2}}\n" + CLAIM, FAKE)
    make_case(root / "s", "honest", CHECK, WRITE_42, HONEST)
    return root / "s"


def killing(target: str, kills: list[int]) -> SweepHooks:
    """Hooks that SIGKILL the Ray worker process of `target`'s first execution."""

    def started(began: Started, job: CaseJob) -> None:
        if job.case.name == target and not kills:
            os.kill(began.pid, signal.SIGKILL)
            kills.append(began.pid)

    return SweepHooks(started=started)


def test_a_task_failing_past_its_retries_is_a_crashed_unscored_case(tmp_path: Path) -> None:
    cases = load_suite([suite(tmp_path)])
    ledger = SuiteLedger.create(tmp_path / "L")
    kills: list[int] = []
    report = run_sweep(
        cases,
        backend=RayBackend(retries=0),
        ledger=ledger,
        hooks=killing("s/fake", kills),
    )
    assert len(kills) == 1
    fake = next(r for r in report.results if r.case.name == "s/fake")
    assert fake.actual == "crash" and fake.scored is False and fake.caught_by is None
    assert fake.error is not None and "the Ray task failed after 1 execution(s)" in fake.error
    assert "WorkerCrashedError" in fake.error
    honest = next(r for r in report.results if r.case.name == "s/honest")
    assert honest.passed and honest.actual == "DONE"
    assert report.to_json()["overall"]["fakes"] == 0  # never counted as caught


def test_a_killed_worker_is_rerun_and_its_key_sealed_once(tmp_path: Path) -> None:
    cases = load_suite([suite(tmp_path)])
    ledger = SuiteLedger.create(tmp_path / "L")
    kills: list[int] = []
    report = run_sweep(
        cases,
        (None,),
        2,
        backend=RayBackend(retries=2),
        ledger=ledger,
        hooks=killing("s/fake", kills),
    )
    assert len(kills) == 1
    assert all(r.passed for r in report.results), [r.problems for r in report.results]
    sealed = [s["body"] for s in verdicts(tmp_path / "L") if s["step"] == "case-verdict"]
    keys = [b["key_sha256"] for b in sealed]
    assert len(keys) == len(set(keys)) == 4  # 2 cases × 2 repeats, each sealed once
    executions = {(b["key"]["case"], b["key"]["repeat"]): b["executions"] for b in sealed}
    assert executions == {("s/fake", 1): 2, ("s/honest", 1): 1, ("s/fake", 2): 1,
                          ("s/honest", 2): 1}  # fmt: skip
    assert report.sweep["duplicates"] == 1 and report.sweep["sealed"] == 4
    fake = next(r for r in report.results if r.case.name == "s/fake" and r.repeat == 1)
    assert fake.caught_by == "nonzero_status" and fake.executions == 2
    assert {b["worker"]["groundskeeper"] for b in sealed} == {__version__}
    verify = CliRunner().invoke(main, ["ledger", "verify", str(tmp_path / "L"), "--json"])
    assert verify.exit_code == 0 and json.loads(verify.stdout)["ok"] is True


def test_a_worker_process_forks_its_cases_commands_from_one_server_of_its_own(
    tmp_path: Path,
) -> None:
    from groundskeeper.evals.ray_backend import ExecutionRegistry, execute_case, pack_case

    registry = ray.remote(num_cpus=0)(ExecutionRegistry).remote()
    task = ray.remote(execute_case).options(num_cpus=1)
    payload = ray.put(pack_case(suite(tmp_path) / "honest"))
    outs = [ray.get(task.remote(payload, "s/honest", 60.0, None, f"k{i}", registry))
            for i in range(4)]  # fmt: skip
    assert [out["result"].actual for out in outs] == ["DONE"] * 4
    workers = [pid for _, pid, _ in ray.get(registry.since.remote(0))]
    servers: dict[int, set[int]] = {}
    for worker, out in zip(workers, outs, strict=True):
        assert isinstance(out["fork_server"], int)
        servers.setdefault(worker, set()).add(out["fork_server"])
    assert all(len(pids) == 1 for pids in servers.values()), servers  # kept, not restarted
    assert len(servers) < 4  # a worker process ran more than one case through its server


def test_a_node_s_compiled_cache_is_named_by_the_box_it_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from groundskeeper.evals import ray_backend
    from groundskeeper.sandbox import wasi

    monkeypatch.setattr(ray_backend.tempfile, "gettempdir", lambda: str(tmp_path))
    ready = ray_backend._node_cache()
    assert ready is not None
    entry = wasi._entry_name(wasi._cache_identity(wasi.BOX_WASM.read_bytes()))
    assert (ready / entry).is_file()  # what every command of a case loads, not a miss
    other = tmp_path / "other.wasm"
    other.write_bytes(wasi.BOX_WASM.read_bytes() + b"\0")
    monkeypatch.setattr(wasi, "BOX_WASM", other)
    monkeypatch.setattr(ray_backend, "warm_cache", lambda directory: None)
    assert ray_backend._node_cache() is None  # another box: not the first one's cache


def test_a_node_with_other_versions_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from groundskeeper.evals import backends, ray_backend, sweep

    real = backends.worker_versions()

    def driver_versions() -> dict[str, Any]:
        return {**real, "wasmtime": "0.0.1"}

    # the driver believes it runs another wasmtime; the cluster's workers report the real one
    monkeypatch.setattr(ray_backend, "worker_versions", driver_versions)
    monkeypatch.setattr(sweep, "worker_versions", driver_versions)
    result = CliRunner().invoke(
        main, ["eval", str(suite(tmp_path)), "--backend", "ray", "--ledger", str(tmp_path / "L")]
    )
    assert result.exit_code == 2
    assert "mixed cluster: node" in result.stderr
    assert f"wasmtime {real['wasmtime']}, the driver wasmtime 0.0.1" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "L" / "_steps.jsonl").exists()  # refused before anything ran


def test_several_plans_run_as_ray_tasks(tmp_path: Path) -> None:
    from tests.test_many_plans import HONEST as GREET
    from tests.test_many_plans import plan_dir

    a, script = plan_dir(tmp_path, "a", GREET)
    b, _ = plan_dir(tmp_path, "b", GREET)
    result = CliRunner().invoke(
        main, ["resume", str(a), str(b), "--model", f"scripted:{script}", "--backend", "ray",
               "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [p["exit_code"] for p in doc["plans"]] == [0, 0]
    assert [[t["state"] for t in p["report"]["tasks"]] for p in doc["plans"]] == [["DONE"]] * 2
    assert "as Ray tasks" in result.stderr


TRAP_AFTER_RAY = """
import faulthandler, sys
if sys.argv[1] == "pytest-like":
    faulthandler.enable()  # as pytest does, before anything else
from groundskeeper.sandbox.script_validation import validate_script
DOWN = "function down(n) { return down(n + 1) + 1; }\\ndown(0);\\n"
print(validate_script(DOWN).errors[0].code, flush=True)  # wasmtime's handlers installed
from groundskeeper.ray_extra import connect, require_ray
connect(require_ray(), address=sys.argv[2], log_to_driver=False)
print(validate_script(DOWN).errors[0].code, flush=True)  # a trap after Ray: still a trap
"""


@pytest.mark.parametrize("faults", ["pytest-like", "plain"])
def test_a_guest_trap_after_joining_ray_is_the_guest_s_not_the_process_s(
    tmp_path: Path, faults: str
) -> None:
    import subprocess
    import sys

    address = ray.get_runtime_context().gcs_address
    env = {k: v for k, v in os.environ.items() if k != "RAY_DISABLE_FAILURE_SIGNAL_HANDLER"}
    done = subprocess.run(
        [sys.executable, "-c", TRAP_AFTER_RAY, faults, address],
        capture_output=True, text=True, timeout=240, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert (done.returncode, done.stdout.split()) == (0, ["stack", "stack"]), done.stderr[-2000:]
