"""Shared fixtures: every test gets its own GROUNDSKEEPER_HOME, so no test sees real user state."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.messages_stub import MessagesStub

# Wall-clock limits (per-example deadlines, the too-slow health check) would make property
# tests flaky on a loaded 2-core CI machine; the properties themselves are what must hold.
settings.register_profile(
    "groundskeeper", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("groundskeeper")


ANTHROPIC_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_PROFILE",
    "GROUNDSKEEPER_MODEL",
    "GROUNDSKEEPER_MODEL_RETRIES",
    "GROUNDSKEEPER_MODEL_TIMEOUT",
    "GROUNDSKEEPER_JUDGE_MODEL",
    "GROUNDSKEEPER_JUDGE_PROFILE",
)


@pytest.fixture(autouse=True)
def groundskeeper_home(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("gk-home")
    monkeypatch.setenv("GROUNDSKEEPER_HOME", str(home))
    # no test may reach the real Anthropic API, whatever the developer's shell exports;
    # tests that want Claude point ANTHROPIC_BASE_URL at tests/messages_stub.py
    for name in ANTHROPIC_ENV:
        monkeypatch.delenv(name, raising=False)
    yield home


@pytest.fixture
def messages_stub(monkeypatch: pytest.MonkeyPatch) -> Iterator[MessagesStub]:
    """A local Messages API (tests/messages_stub.py) that `anthropic:` models reach through
    ANTHROPIC_BASE_URL, with a dummy key. The SDK's backoff is real: a scripted error that
    should be retried quickly carries `retry-after-ms`."""
    with MessagesStub() as stub:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", stub.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-stub")
        yield stub
