"""The agent hook tests' fixture; their helpers are `tests.agents.gated` (shared with
`benchmarks/hook_overhead.py`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.agents.gated import make_work


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A workdir with the two-task plan and nothing done."""
    return make_work(tmp_path / "work")
