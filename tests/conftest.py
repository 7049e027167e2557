"""Shared fixtures: every test gets its own GROUNDSKEEPER_HOME, so no test sees real user state."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from tests.messages_stub import MessagesStub

# read as Ray loads, before any test module imports it: what groundskeeper's own driver sets
# (`ray_extra.require_ray`), or a test's guest trap after a Ray test ends the whole worker
os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")

# Wall-clock limits (per-example deadlines, the too-slow health check) would make property
# tests flaky on a loaded 2-core CI machine; the properties themselves are what must hold.
settings.register_profile(
    "groundskeeper", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("groundskeeper")


# The longest tests, started first: under xdist (`make test` runs two workers) each then runs
# beside the many short ones instead of ending the run alone on one core. By function name,
# so a test keeps its place when its module moves; the rest keep their collection order.
LONGEST_FIRST = (
    "test_the_shipped_suite_holds",  # tests/test_eval_suite.py (threads, then Ray)
    "test_a_sweep_runs_on_both_nodes_and_is_sealed_by_the_driver",  # test_eval_ray_cluster
    "test_a_killed_worker_is_rerun_and_its_key_sealed_once",  # tests/test_eval_ray.py
    "test_committed_box_matches_its_sources",  # tests/sandbox/test_box_build.py
    "test_a_run_killed_during_execute_resumes_without_the_author",  # tests/test_cli_goal.py
    "test_lexer_parses_well_formed_lines_as_the_oracle_does",  # tests/sandbox/test_syntax.py
    "test_a_run_killed_during_execute_resumes_without_asking_the_author_again",
    "test_sigkill_mid_run_then_resume",  # tests/test_cli_run.py
    "test_twenty_kills_then_resume",  # tests/test_sigkill_resume.py
    "test_kills_between_buffered_steps_and_their_commit_then_resume",  # the same module
    "test_a_signal_mid_command_ends_the_run_promptly_and_resume_finishes",  # test_interrupt.py
    # tests/agents/test_claude_code.py: the real Claude Code binary, several sessions each
    "test_g_claude_code_as_the_worker_of_a_two_task_plan_with_one_liar",
    "test_e_the_block_bound_seals_failed_and_tells_the_user",
    "test_b_a_check_rewritten_to_true_is_blocked_as_a_plan_change",
    "test_each_tamper_vector_reads_broken_at_its_line",  # tests/review/test_browser.py
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: place for place, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(getattr(item, "originalname", item.name), len(rank)))


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
