"""Eval sweeps on the default backend (the thread pool): cases × models × repeats, each case
key sealed once by the driver in a suite ledger that `ledger verify` accepts, a second
execution counted as a duplicate, `--resume` after the driver was killed, the per-model
figures, the in-flight cap, and the usage errors (exit 2, no traceback)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from groundskeeper.cli import main
from groundskeeper.evals import (
    CaseJob,
    CaseKey,
    SuiteLedger,
    SweepHooks,
    ThreadBackend,
    load_suite,
    run_sweep,
)
from groundskeeper.evals.backends import crashed
from groundskeeper.evals.figures import CaseResult
from tests.test_evals import CHECK, CLAIM, FAKE, HONEST, WRITE_42, make_case

CLAIMER = 'workers:\n  "*":\n    - say: DONE\n'


def verdicts(directory: Path) -> list[dict[str, Any]]:
    lines = (directory / "_steps.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def sealed_keys(directory: Path) -> list[str]:
    return [s["body"]["key_sha256"] for s in verdicts(directory) if s["step"] == "case-verdict"]


def eval_cli(*args: str) -> tuple[Result, dict[str, Any]]:
    result = CliRunner().invoke(main, ["eval", "--json", *args])
    return result, json.loads(result.stdout) if result.stdout.strip() else {}


def small_suite(root: Path) -> Path:
    make_case(root / "s", "fake", CHECK, CLAIM, FAKE)
    make_case(root / "s", "honest", CHECK, WRITE_42, HONEST)
    return root / "s"


# --- failure paths first -------------------------------------------------------------


def test_backend_ray_without_the_extra_exits_2_naming_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    result, _ = eval_cli(str(small_suite(tmp_path)), "--backend", "ray")
    assert result.exit_code == 2
    assert "pip install 'groundskeeper[ray]'" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "ledger").exists()


def test_resume_refuses_a_ledger_that_does_not_verify(tmp_path: Path) -> None:
    suite = small_suite(tmp_path)
    result, _ = eval_cli(str(suite), "--case", "fake", "--ledger", str(tmp_path / "L"))
    assert result.exit_code == 0, result.stderr
    steps = tmp_path / "L" / "_steps.jsonl"
    steps.write_text(steps.read_text().replace('"passed":true', '"passed":false'))
    result, doc = eval_cli("--resume", str(tmp_path / "L"))
    assert result.exit_code == 2 and doc == {}
    assert "the suite ledger does not verify (bad-signature" in result.stderr
    assert "groundskeeper ledger verify" in result.stderr


def test_resume_refuses_new_suites_models_or_repeats(tmp_path: Path) -> None:
    suite = small_suite(tmp_path)
    eval_cli(str(suite), "--case", "fake", "--ledger", str(tmp_path / "L"))
    result, _ = eval_cli("--resume", str(tmp_path / "L"), "--repeat", "3", str(suite))
    assert result.exit_code == 2
    assert "drop SUITE, --repeat" in result.stderr


def test_a_new_sweep_will_not_write_into_an_old_one(tmp_path: Path) -> None:
    suite = small_suite(tmp_path)
    eval_cli(str(suite), "--case", "fake", "--ledger", str(tmp_path / "L"))
    result, _ = eval_cli(str(suite), "--ledger", str(tmp_path / "L"))
    assert result.exit_code == 2
    assert f"eval --resume {tmp_path / 'L'}" in result.stderr
    shown = CliRunner().invoke(main, ["ledger", "show", str(tmp_path / "L")])
    assert "eval sweep · 1 keys · models stand-in · ×1" in shown.stdout
    assert "s/fake · stand-in · #1 · FAILED · caught by nonzero_status" in shown.stdout
    assert "ok · 1 sealed, 0 duplicates" in shown.stdout


def test_a_crash_in_a_sweep_is_sealed_unscored_never_caught(tmp_path: Path) -> None:
    suite = small_suite(tmp_path)
    (suite / "fake" / "agents.yaml").write_text("workers: [not, a, mapping]\n")
    result, doc = eval_cli(str(suite), "--repeat", "2", "--ledger", str(tmp_path / "L"))
    assert result.exit_code == 1
    crashes = [c for c in doc["cases"] if c["case"] == "s/fake"]
    assert [c["actual"] for c in crashes] == ["crash", "crash"]
    assert all(c["scored"] is False and c["caught_by"] is None for c in crashes)
    assert doc["models"]["stand-in"]["overall"]["fakes"] == 0
    sealed = [s["body"] for s in verdicts(tmp_path / "L") if s["step"] == "case-verdict"]
    fake = [b for b in sealed if b["key"]["case"] == "s/fake"]
    assert [(b["actual"], b["scored"], b["caught_by"]) for b in fake] == [
        ("crash", False, None),
        ("crash", False, None),
    ]
    assert fake[0]["error"].startswith("crash: `resume")


def test_a_second_driver_seals_a_key_once_and_counts_the_duplicate(tmp_path: Path) -> None:
    (case,) = load_suite([small_suite(tmp_path)], "fake")
    key = CaseKey("s", case.name, "stand-in", 1)
    job = CaseJob(key, case, 10.0, None)
    first = SuiteLedger.create(tmp_path / "L")
    first.begin({"suites": []})
    second = SuiteLedger.resume(tmp_path / "L")
    second.begin({"suites": []})
    result = crashed(job, "whatever")
    assert first.seal(key, result, 1, {}) is True
    assert second.seal(key, result, 1, {}) is False
    steps = [s["step"] for s in verdicts(tmp_path / "L")]
    assert steps.count("case-verdict") == 1 and steps.count("case-duplicate") == 1


# --- sweeps --------------------------------------------------------------------------


def test_a_sweep_seals_one_verdict_per_key_and_reports_per_model(tmp_path: Path) -> None:
    suite = small_suite(tmp_path)
    claimer = tmp_path / "claimer.yaml"
    claimer.write_text(CLAIMER)
    ledger = tmp_path / "L"
    args = ["--model", "stand-in", "--model", f"scripted:{claimer}", "--repeat", "2"]
    result, doc = eval_cli(str(suite), *args, "--ledger", str(ledger), "--jobs", "2")
    assert result.exit_code == 1  # the claimer's honest control is not DONE
    assert len(doc["cases"]) == 8
    stand_in, claims = doc["models"]["stand-in"], doc["models"][f"scripted:{claimer}"]
    assert (stand_in["runs"], stand_in["passed"]) == (4, 4)
    assert stand_in["overall"]["recall"] == 1.0
    assert stand_in["overall"]["false_positive_rate"] == 0.0
    assert claims["overall"]["false_positives"] == 2
    assert claims["overall"]["false_positive_rate"] == 1.0
    assert claims["overall"]["recall_wilson95"][0] == pytest.approx(0.3424, abs=1e-4)
    keys = sealed_keys(ledger)
    assert len(keys) == len(set(keys)) == 8
    assert doc["sweep"] == {
        "models": ["stand-in", f"scripted:{claimer}"],
        "repeat": 2,
        "backend": "threads",
        "ledger": str(ledger),
        "keys": 8,
        "sealed": 8,
        "skipped": 0,
        "duplicates": 0,
    }
    verify = CliRunner().invoke(main, ["ledger", "verify", str(ledger), "--json"])
    assert verify.exit_code == 0 and json.loads(verify.stdout)["ok"] is True
    assert "stand-in 4/4" in result.stderr  # the plain progress line per model
    assert result.stderr.strip().splitlines()[-1].startswith("eval: 6 passed, 2 failed")


def test_in_flight_work_per_model_is_capped_on_the_driver(tmp_path: Path) -> None:
    suite = small_suite(tmp_path)
    for n in range(3):
        make_case(suite, f"more{n}", CHECK, CLAIM, FAKE)
    cases = load_suite([suite])
    running: dict[str, int] = {}
    peak: dict[str, int] = {}
    lock = threading.Lock()

    class Recording(ThreadBackend):
        def _execute(self, job: CaseJob) -> CaseResult:
            with lock:
                running[job.key.model] = running.get(job.key.model, 0) + 1
                peak[job.key.model] = max(peak.get(job.key.model, 0), running[job.key.model])
            time.sleep(0.2)
            with lock:
                running[job.key.model] -= 1
            return crashed(job, "not run")

    report = run_sweep(
        cases, (None, "scripted:x.yaml"), 1, backend=Recording(jobs=4), max_in_flight=1
    )
    assert peak == {"stand-in": 1, "scripted:x.yaml": 1}
    assert len(report.results) == 10
    uncapped: dict[str, int] = {}
    peak.clear()
    run_sweep(cases, (None, "scripted:x.yaml"), 1, backend=Recording(jobs=4))
    uncapped.update(peak)
    assert max(uncapped.values()) >= 2  # the cap above is what held it to one


def test_a_duplicate_from_another_driver_keeps_the_first_verdict(tmp_path: Path) -> None:
    cases = load_suite([small_suite(tmp_path)])
    ledger = SuiteLedger.create(tmp_path / "L")
    seen: list[str] = []

    def started(began: Any, job: CaseJob) -> None:
        if job.case.name == "s/fake" and not seen:
            seen.append(began.digest)
            rival = SuiteLedger.resume(tmp_path / "L")
            rival.begin({"suites": []})
            rival.seal(job.key, crashed(job, "sealed by the other driver"), 1, {})

    report = run_sweep(
        cases, backend=ThreadBackend(1), ledger=ledger, hooks=SweepHooks(started=started)
    )
    fake = next(r for r in report.results if r.case.name == "s/fake")
    assert fake.error == "sealed by the other driver"
    assert report.sweep["duplicates"] == 1 and report.sweep["sealed"] == 1
    assert len(sealed_keys(tmp_path / "L")) == 2


def test_resume_after_the_driver_was_killed_runs_only_what_was_not_sealed(
    tmp_path: Path,
) -> None:
    suite = tmp_path / "s"
    for n in range(4):
        make_case(suite, f"c{n}", CHECK, CLAIM, FAKE)
    ledger = tmp_path / "L"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    driver = subprocess.Popen(
        [sys.executable, "-m", "groundskeeper", "eval", str(suite), "--jobs", "1",
         "--ledger", str(ledger)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and driver.poll() is None:
        if (ledger / "_steps.jsonl").exists() and len(sealed_keys(ledger)) >= 2:
            break
        time.sleep(0.05)
    os.killpg(driver.pid, signal.SIGKILL)
    driver.wait()
    before = sealed_keys(ledger)
    assert 2 <= len(before) < 4, "the driver was to be killed mid-sweep"
    result, doc = eval_cli("--resume", str(ledger))
    assert result.exit_code == 0, result.stderr
    after = sealed_keys(ledger)
    assert after[: len(before)] == before
    assert len(after) == len(set(after)) == 4  # every key once, none twice
    assert doc["sweep"]["skipped"] == len(before)
    assert doc["sweep"]["sealed"] == 4 - len(before)
    assert len(doc["cases"]) == 4 and all(c["passed"] for c in doc["cases"])
    runs = [s["step"] for s in verdicts(ledger) if s["step"] in ("run-start", "run-end")]
    assert runs == ["run-start", "run-start", "run-end"]  # the killed run never ended
    verify = CliRunner().invoke(main, ["ledger", "verify", str(ledger), "--json"])
    assert verify.exit_code == 0, verify.stdout


def test_cases_that_run_cpython_start_first_and_the_report_keeps_case_order(
    tmp_path: Path,
) -> None:
    suite = small_suite(tmp_path)
    make_case(suite, "py", "python3 -c 'print(42)' | grep -qx 42", CLAIM, FAKE)
    make_case(suite, "suite", "python3 -m pytest -q tests/", CLAIM, FAKE)
    cases = load_suite([suite])
    order: list[str] = []

    class Recording(ThreadBackend):
        def _execute(self, job: CaseJob) -> CaseResult:
            order.append(job.case.name)
            return crashed(job, "not run")

    report = run_sweep(cases, (None,), 2, backend=Recording(jobs=1))
    # pytest first, then python3, then the rest in their order; repeat by repeat
    assert order == ["s/suite", "s/py", "s/fake", "s/honest"] * 2
    assert [r.case.name for r in report.results] == ["s/fake", "s/honest", "s/py", "s/suite"] * 2


def test_the_next_case_is_submitted_before_the_last_one_is_sealed(tmp_path: Path) -> None:
    cases = load_suite([small_suite(tmp_path)])
    ledger = SuiteLedger.create(tmp_path / "L")
    events: list[str] = []
    seal = ledger.seal

    def sealing(key: Any, *args: Any) -> bool:
        events.append(f"seal {key.case}")
        return seal(key, *args)

    ledger.seal = sealing  # type: ignore[method-assign]

    class Recording(ThreadBackend):
        def submit(self, job: CaseJob) -> None:
            events.append(f"submit {job.case.name}")
            super().submit(job)

        def _execute(self, job: CaseJob) -> CaseResult:
            return crashed(job, "not run")

    report = run_sweep(cases, backend=Recording(jobs=1), ledger=ledger)
    assert events == ["submit s/fake", "submit s/honest", "seal s/fake", "seal s/honest"]
    assert report.sweep["sealed"] == 2 and len(sealed_keys(tmp_path / "L")) == 2
