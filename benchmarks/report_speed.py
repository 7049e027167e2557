"""Report speed: the time to write the report page of a large run — read and verify its
ledger, build the document, render the HTML — and the size of what a browser then holds.

Usage: python benchmarks/report_speed.py [--tasks N] [--repeat N]
Prints one JSON document. Target: render_cpu_s <= 3.0 for 1,000 tasks (CPU time of this
process: the machine's two cores are shared, and wall time would measure the neighbours; the
wall time is printed beside it), and no drill-down element (one task's or one run's group of
timeline lines) over 1 MB. The ledger is written straight from the format's own functions
(signed, chained, checkpointed) without a durable append per line, which would time the disk
rather than the report. Figures are those of the fastest repeat.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from groundskeeper.record.keys import SigningKey
from groundskeeper.record.ledger_format import (
    GENESIS_PREV,
    MerkleTree,
    encode_canonical,
    format_checkpoint,
    ledger_origin,
    signed_message,
)
from groundskeeper.review.document import build_document
from groundskeeper.review.page import render_page
from groundskeeper.review.snapshot import read_snapshot

KEY = SigningKey.from_seed(hashlib.sha256(b"groundskeeper benchmark key").digest())
RUN = "20261127T120000Z-benchmark"
FAILURE = "FAILED tests/test_x.py::test_y - assert 1 == 2\n"
MODEL = "anthropic:claude-sonnet-4-5"


def _steps(tasks: int) -> list[tuple[str, dict[str, Any]]]:
    """A plan run of `tasks` leaves: each a task-start, a worker's model call and tool call,
    a claim, a check and a state; every fifth fails its first attempt and tries again."""
    h = lambda text: hashlib.sha256(text.encode()).hexdigest()  # noqa: E731
    checks = [{"task_id": f"task-{n}", "check_sha256": h(f"check {n}")} for n in range(tasks)]
    steps: list[tuple[str, dict[str, Any]]] = [
        ("run-start", {"plan": "/tmp/plan.org", "plan_sha256": h("plan"), "checks": None,
                       "checks_sha256": h(encode_canonical(checks)), "checks_count": tasks,
                       "model": MODEL, "breaker": 3,
                       "max_total_attempts": None}),
    ]  # fmt: skip
    for n in range(tasks):
        task, check = f"task-{n}", h(f"check {n}")
        steps.append(("task-start", {"task_id": task, "kind": "leaf", "check_sha256": check,
                                     "invariants": []}))  # fmt: skip
        for attempt in (1, 2) if n % 5 == 0 else (1,):
            passed = attempt == 2 or n % 5 != 0
            steps += [
                ("model-call", {"task_id": task, "attempt": attempt, "purpose": "worker",
                                "model": MODEL, "stop_reason": "tool_use",
                                "error": None, "input_tokens": 4000 + n, "output_tokens": 350,
                                "cache_read_tokens": 3000, "cache_write_tokens": 0,
                                "latency_ms": 2100, "request_id": f"req_{n}_{attempt}",
                                "retries": 0}),
                ("tool-call", {"task_id": task, "attempt": attempt, "tool": "sh",
                               "input_sha256": h(f"in {n}"), "status": "exit 0",
                               "is_error": False, "cmd": f"make -C src test TASK={n}",
                               "cmd_sha256": h(f"cmd {n}"), "exit_status": 0, "fault": None,
                               "stdout_sha256": h(f"out {n}"), "stderr_sha256": h(""),
                               "changed": [f"src/module_{n}.py"]}),
                ("claim", {"task_id": task, "attempt": attempt, "claim_sha256": h(f"c {n}"),
                           "claims_done": True, "excerpt": f"DONE: task {n} implemented and tested",
                           "evidence_json": None, "evidence_sha256": None}),
                ("check", {"task_id": task, "attempt": attempt, "check_sha256": check,
                           "output_sha256": h(f"o {n}"), "verdict": "PASS" if passed else "FAIL",
                           "reason": None if passed else "nonzero_status",
                           "excerpt": "" if passed else FAILURE}),
            ]  # fmt: skip
        steps.append(("state", {"task_id": task, "from": "TODO", "to": "DONE"}))
    states = [{"task_id": f"task-{n}", "state": "DONE"} for n in range(tasks)]
    steps.append(("run-end", {"ok": True, "tampers": 0, "states": states}))
    return steps


def write_ledger(directory: Path, tasks: int) -> int:
    lines: list[bytes] = []
    tree = MerkleTree()
    prev = GENESIS_PREV
    for seq, (step, body) in enumerate(_steps(tasks), start=1):
        ts = f"2026-11-27T12:{seq // 60000 % 60:02d}:{seq // 1000 % 60:02d}.{seq % 1000:03d}Z"
        unsigned = {"v": 1, "run": RUN, "seq": seq, "step": step, "ts": ts, "prev": prev,
                    "key": KEY.public.key_id, "body": {**body, "run_id": RUN}}  # fmt: skip
        signature = KEY.sign(signed_message(encode_canonical(unsigned).encode()))
        sig = base64.b64encode(signature).decode()
        line = (encode_canonical({**unsigned, "sig": sig}) + "\n").encode()
        lines.append(line)
        tree.append(line)
        prev = hashlib.sha256(line).hexdigest()
    (directory / "_steps.jsonl").write_bytes(b"".join(lines))
    checkpoint = format_checkpoint(ledger_origin(lines[0]), len(lines), tree.root(), KEY)
    (directory / "_steps.checkpoint").write_bytes(checkpoint)
    return len(lines)


def _largest(html: str, pattern: str) -> int:
    return max((len(s.encode()) for s in re.findall(pattern, html, flags=re.DOTALL)), default=0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        lines = write_ledger(directory, args.tasks)
        best: dict[str, float] | None = None
        html = ""
        for _ in range(args.repeat):
            wall, cpu = time.perf_counter(), time.process_time()
            ledger = directory / "_steps.jsonl"
            snapshot = read_snapshot(ledger, [KEY.public], witness_dir=directory / "w")
            verified = time.perf_counter()
            document = build_document(snapshot)
            built = time.perf_counter()
            html = render_page(document)
            done = time.perf_counter()
            figures = {
                "render_s": done - wall,
                "render_cpu_s": time.process_time() - cpu,
                "verify_s": verified - wall,
                "document_s": built - verified,
                "html_s": done - built,
            }
            if best is None or figures["render_cpu_s"] < best["render_cpu_s"]:
                best = figures
        assert best is not None
        assert document["integrity"]["intact"], "the benchmark's own ledger must verify"
    result: dict[str, Any] = {
        "tasks": args.tasks,
        "lines": lines,
        **{k: round(v, 3) for k, v in best.items()},
        "page_bytes": len(html.encode()),
        "largest_section_bytes": _largest(html, r"<section\b.*?</section>"),
        "largest_group_bytes": _largest(html, r"<details class=\"group.*?</ol>\s*</details>"),
        "target_render_cpu_s": 3.0,
        "target_largest_group_bytes": 1024 * 1024,
    }
    result["ok"] = (
        result["render_cpu_s"] <= 3.0
        and result["largest_group_bytes"] <= result["target_largest_group_bytes"]
    )
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
