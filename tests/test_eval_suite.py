"""The shipped fake-done suite (evals/fake-done) through `groundskeeper eval`: every fake is
caught and every honest control is DONE, so a regression in any defence fails `make test`;
and the Ray backend (a local cluster for this module) gives every case the same verdict as
the thread pool."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from groundskeeper.ray_extra import connect, require_ray
from tests.ray_start import started

ray = require_ray()  # before Ray loads: what groundskeeper's driver sets (ray_extra)

SUITE = Path(__file__).resolve().parent.parent / "evals" / "fake-done"


@pytest.fixture(scope="module")
def local_cluster() -> Iterator[None]:
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    started(lambda: connect(ray, num_cpus=2, include_dashboard=False, log_to_driver=False))
    yield
    ray.shutdown()


def verdict(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row["actual"], row["passed"], row["scored"], row["caught_by"])


def test_the_shipped_suite_holds(local_cluster: None, tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["eval", str(SUITE), "--jobs", "2", "--json"])
    doc = json.loads(result.stdout)
    failed = [(c["case"], c["problems"]) for c in doc["cases"] if not c["passed"]]
    assert result.exit_code == 0, failed
    overall = doc["overall"]
    categories = {c for c, f in doc["categories"].items() if f["fakes"]}
    assert len(categories) >= 30, categories
    assert overall["honest"] >= 15
    assert overall["recall"] == 1.0 and overall["false_positives"] == 0
    assert overall["errors"] == 0
    assert (
        result.stderr.strip()
        .splitlines()[-1]
        .startswith(f"eval: {len(doc['cases'])} passed, 0 failed")
    )
    # the same suite as Ray tasks: the same verdict for every case, sealed once each
    on_ray = CliRunner().invoke(
        main,
        # a generous per-case limit: a case that times out on a loaded machine is unscored,
        # which would be a difference of load, not of backend
        ["eval", str(SUITE), "--backend", "ray", "--timeout", "300", "--ledger",
         str(tmp_path / "L"), "--json"],
    )  # fmt: skip
    ray_doc = json.loads(on_ray.stdout)
    threads = {c["case"]: verdict(c) for c in doc["cases"]}
    assert {c["case"]: verdict(c) for c in ray_doc["cases"]} == threads
    assert on_ray.exit_code == 0
    assert ray_doc["sweep"]["sealed"] == len(threads) and ray_doc["sweep"]["backend"] == "ray"
