"""The shipped fake-done suite (evals/fake-done) through `groundskeeper eval`: every fake is
caught and every honest control is DONE, so a regression in any defence fails `make test`."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from groundskeeper.cli import main

SUITE = Path(__file__).resolve().parent.parent / "evals" / "fake-done"


def test_the_shipped_suite_holds() -> None:
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
