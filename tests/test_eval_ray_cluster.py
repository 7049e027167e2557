"""The Ray backend on a cluster of two nodes in one machine (`ray.cluster_utils.Cluster`, one
CPU each): both nodes report their versions, both run cases, the driver seals them all."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from ray.cluster_utils import Cluster

from groundskeeper.cli import main
from groundskeeper.ray_extra import connect, require_ray
from tests.ray_start import started
from tests.test_eval_sweep import verdicts
from tests.test_evals import CHECK, CLAIM, FAKE, HONEST, WRITE_42, make_case

ray = require_ray()  # before Ray loads: what groundskeeper's driver sets (ray_extra)


@pytest.fixture(scope="module", autouse=True)
def two_nodes() -> Iterator[Cluster]:
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"

    def start() -> Cluster:
        cluster = Cluster(
            initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
        )
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        connect(ray, address=cluster.address, log_to_driver=False)
        return cluster

    cluster = started(start)
    yield cluster
    ray.shutdown()
    cluster.shutdown()


def test_a_sweep_runs_on_both_nodes_and_is_sealed_by_the_driver(tmp_path: Path) -> None:
    make_case(tmp_path / "s", "fake", CHECK, CLAIM, FAKE)
    make_case(tmp_path / "s", "honest", CHECK, WRITE_42, HONEST)
    ledger = tmp_path / "L"
    result = CliRunner().invoke(
        main,
        ["eval", str(tmp_path / "s"), "--backend", "ray", "--repeat", "2", "--ledger",
         str(ledger), "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["sweep"]["backend"] == "ray" and doc["sweep"]["sealed"] == 4
    assert [c["passed"] for c in doc["cases"]] == [True] * 4
    sealed = [s["body"] for s in verdicts(ledger) if s["step"] == "case-verdict"]
    nodes = {b["worker"]["node"] for b in sealed}
    assert len(nodes) == 2, nodes  # two in flight at a time, one CPU per node
    alive = {n["NodeID"] for n in ray.nodes() if n["Alive"]}
    assert nodes == alive
    verify = CliRunner().invoke(main, ["ledger", "verify", str(ledger), "--json"])
    assert verify.exit_code == 0
