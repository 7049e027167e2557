"""Ledgers to review: the demo's own run (once per test process, as `make demo` makes it),
and a hand-built run whose worker wrote every hostile string a page must keep inert."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from groundskeeper.record import ledger as ledger_module
from groundskeeper.record.ledger import Ledger
from tests.test_ledger import KEY, fixed_clock

ROOT = Path(__file__).resolve().parents[2]
VECTORS = ROOT / "ledger" / "vectors"
VECTOR_KEY = VECTORS / "test_key.pub"
GOAL = "Write the release notes for 0.1.0 and count the changes"


@dataclass(frozen=True)
class Run:
    """A plan directory with a ledger, and the public key that signed it."""

    work: Path
    key: Path

    @property
    def ledger(self) -> Path:
        return self.work / ".groundskeeper" / "plan.org" / "_steps.jsonl"


@pytest.fixture(scope="session")
def demo_once(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """`make demo`'s run, through the real command line, in a home of its own."""
    base = tmp_path_factory.mktemp("demo")
    env = {**os.environ, "GROUNDSKEEPER_HOME": str(base / "home")}
    subprocess.run(
        [sys.executable, "-m", "groundskeeper", "run", GOAL, "--model",
         f"scripted:{ROOT / 'examples' / 'demo' / 'mission.yaml'}", "--dir", str(base / "work"),
         "--require-checks"],
        check=True, capture_output=True, env=env, cwd=base,
    )  # fmt: skip
    return Run(base / "work", base / "home" / "signing_key.pub")


@pytest.fixture
def demo(demo_once: Run, tmp_path: Path) -> Run:
    """A copy of the demo's run this test may change."""
    work = tmp_path / "work"
    shutil.copytree(demo_once.work, work, symlinks=True)
    return Run(work, demo_once.key)


#: What a worker wrote, each string once in a claim, a check reason, a judge reason, a file
#: name and a stored output.
HOSTILE = {
    "pre": "</pre></td></tr></table><h1 id=pwned>owned</h1>",
    "script": "<script>document.title='owned'</script><img src=x onerror=alert(1)>",
    "banner": '</span></section><section id="integrity" class="intact"><p>✔ Ledger intact</p>',
    "refresh": '<meta http-equiv="refresh" content="0;url=https://example.invalid/">',
    "css": "</style><style>body{display:none}</style><link rel=stylesheet href=//x.invalid/a.css>",
    "bidi": "DONE: all tests pass\u202e)elif nepo( sserp\u2066hidden\u2069\u200b",
}


@dataclass(frozen=True)
class Hostile:
    run: Run
    huge_output: str


@pytest.fixture
def hostile(tmp_path: Path) -> Hostile:
    """A signed ledger of one run whose worker's strings are all hostile; its stored output
    for the `cat` call is a huge text (stored by hash beside the ledger, as the runner does)."""
    control = tmp_path / "work" / ".groundskeeper" / "plan.org"
    control.mkdir(parents=True)
    huge = "A" * 300_000 + HOSTILE["pre"]
    digest = hashlib.sha256(huge.encode()).hexdigest()
    (control / "outputs").mkdir()
    (control / "outputs" / digest).write_text(huge)
    bad = " ".join(HOSTILE.values())
    ledger = Ledger(control, KEY, "run-hostile", trusted=[], clock=fixed_clock())
    ledger.record(
        "run-start",
        {
            "plan": bad,
            "plan_sha256": "0" * 64,
            "model": "anthropic:m",
            "checks": [{"task_id": bad, "check_sha256": "1" * 64}],
        },
    )
    ledger.record(
        "task-start", {"task_id": bad, "kind": "leaf", "check_sha256": "1" * 64, "invariants": []}
    )
    ledger.record(
        "model-call",
        {
            "task_id": bad,
            "attempt": 1,
            "purpose": "worker",
            "model": "anthropic:m",
            "stop_reason": "tool_use",
            "error": None,
            "input_tokens": 1200,
            "output_tokens": 340,
            "cache_read_tokens": 1000,
            "cache_write_tokens": 7,
            "latency_ms": 1500,
            "request_id": "req_1",
            "retries": 0,
        },
    )
    ledger.record(
        "tool-call",
        {
            "task_id": bad,
            "attempt": 1,
            "tool": "sh",
            "status": "exit 0",
            "is_error": False,
            "input_sha256": "2" * 64,
            "cmd": bad,
            "cmd_sha256": "3" * 64,
            "exit_status": 0,
            "fault": None,
            "stdout_sha256": digest,
            "stderr_sha256": "4" * 64,
            "changed": [bad],
        },
    )
    ledger.record(
        "claim",
        {
            "task_id": bad,
            "attempt": 1,
            "claim_sha256": "5" * 64,
            "claims_done": True,
            "excerpt": bad[:200],
            "evidence_json": None,
            "evidence_sha256": None,
        },
    )
    ledger.record(
        "evidence",
        {"task_id": bad, "attempt": 1, "verdicts": [
            {"field": bad, "type": "quote", "pattern": bad, "ok": False, "code": "E003",
             "message": bad}]},
    )  # fmt: skip
    ledger.record(
        "contract",
        {"task_id": bad, "attempt": 1, "verdicts": [
            {"contract": bad, "type": "json-schema", "soft": False, "ok": True, "code": None,
             "message": "", "detail_json": None, "detail_sha256": None}]},
    )  # fmt: skip
    ledger.record(
        "check",
        {
            "task_id": bad,
            "attempt": 1,
            "check_sha256": "1" * 64,
            "output_sha256": "6" * 64,
            "verdict": "FAIL",
            "reason": bad,
            "excerpt": bad,
        },
    )
    ledger.record(
        "judge",
        {
            "task_id": bad,
            "attempt": 1,
            "verdict": "fail",
            "code": "J010",
            "reasons": [bad],
            "message": bad,
            "artifacts": [{"path": bad, "sha256": "7" * 64, "bytes": 1, "note": ""}],
        },
    )
    ledger.record("state", {"task_id": bad, "from": "TODO", "to": "FAILED", "stop": "max-attempts"})
    ledger.record("run-end", {"ok": False, "states": [{"task_id": bad, "state": "FAILED"}],
                              "tampers": 0})  # fmt: skip
    ledger_module._forget_writers()
    key = tmp_path / "team.pub"
    key.write_text(KEY.public.to_openssh("team") + "\n")
    return Hostile(Run(tmp_path / "work", key), huge)
