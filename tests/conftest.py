"""Shared fixtures: every test gets its own GROUNDSKEEPER_HOME, so no test sees real user state."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def groundskeeper_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("gk-home")
    monkeypatch.setenv("GROUNDSKEEPER_HOME", str(home))
    yield home
