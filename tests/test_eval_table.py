"""docs/evals.md's table of the shipped suite lists exactly its cases, as their expect.json
describes them."""

from __future__ import annotations

import importlib.util
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_the_case_table_is_current() -> None:
    spec = importlib.util.spec_from_file_location("make_eval_table", DOCS / "make_eval_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rendered = module.render()
    assert "| `accomplice/deletes-after-done` | fake |" in rendered
    assert (DOCS / "evals.md").read_text() == rendered, (
        "docs/evals.md's case table is stale: run `.venv/bin/python docs/make_eval_table.py`"
    )
