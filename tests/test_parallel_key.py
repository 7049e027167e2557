"""A file a parallel sibling's worker made is not this task's worker's to rewrite: a check
that reads it after this worker changed it, unasked, fails naming the change, as it does when
the sibling ran first (adversary-17 F5)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.test_cli_run import run_workers

PLAN = """#+TODO: TODO | DONE FAILED PARTIAL
* TODO Product
** TODO Write the expected product
   :PROPERTIES:
   :ID: key
   :done-when: test -s golden/expected.txt
   :END:
   Write golden/expected.txt holding the product of the two numbers in in.txt.
** TODO Compute the product
   :PROPERTIES:
   :ID: mul
   :done-when: diff out.txt golden/expected.txt
   :END:
   Multiply the two numbers in in.txt and write the product to out.txt.
"""
# the sibling's key is there before this worker acts: it waits for it
WAIT = "n=0; while [ ! -s golden/expected.txt ] && [ $n -lt 200 ]; do sleep 0.05; n=$((n+1)); done"


def _run(tmp_path: Path, mul_cmd: str) -> dict[str, dict[str, Any]]:
    (tmp_path / "in.txt").write_text("6 7\n")
    (tmp_path / "plan.org").write_text(PLAN)
    key = [{"tool": "sh", "input": {"cmd": "mkdir -p golden; echo 42 > golden/expected.txt"}},
           {"say": "DONE"}]  # fmt: skip
    mul = [{"tool": "sh", "input": {"cmd": f"{WAIT}; {mul_cmd}"}}, {"say": "DONE"}]
    return run_workers(tmp_path / "plan.org", {"key": key, "mul": mul})


def test_a_worker_that_rewrites_a_parallel_siblings_key_fails(tmp_path: Path) -> None:
    rows = _run(tmp_path, "echo 99 > golden/expected.txt; echo 99 > out.txt")

    assert rows["mul"]["state"] == "FAILED", rows["mul"]
    assert "golden/expected.txt" in str(rows["mul"]["reason"])
    assert "which the worker of task `mul` changed" in str(rows["mul"]["reason"])


def test_a_worker_that_computes_the_product_passes(tmp_path: Path) -> None:
    rows = _run(tmp_path, "echo 42 > out.txt")

    assert rows["mul"]["state"] == "DONE", rows["mul"]
    assert rows["key"]["state"] == "DONE", rows["key"]
