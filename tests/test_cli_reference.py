"""docs/cli.md is exactly what the commands' --help says today."""

from __future__ import annotations

import importlib.util
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_cli_reference_is_current() -> None:
    spec = importlib.util.spec_from_file_location(
        "make_cli_reference", DOCS / "make_cli_reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    rendered = module.render()
    assert "## groundskeeper lint" in rendered
    assert (DOCS / "cli.md").read_text() == rendered, (
        "docs/cli.md is stale: run `.venv/bin/python docs/make_cli_reference.py`"
    )
