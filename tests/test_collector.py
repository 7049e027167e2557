"""`groundskeeper.collector`: the collector off while a hook starts, back on before a check."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from groundskeeper import collector


@pytest.fixture(autouse=True)
def _collector_as_it_was() -> Iterator[None]:
    enabled, threshold = gc.isenabled(), gc.get_threshold()
    yield
    collector._HELD["threshold"] = None
    gc.unfreeze()
    gc.set_threshold(*threshold)
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_held_then_released_the_collector_is_on_with_start_up_set_aside() -> None:
    gc.enable()
    gc.set_threshold(700, 10, 10)
    collector.hold()
    assert not gc.isenabled()
    made = [[n] for n in range(1000)]  # start-up's objects
    collector.release()
    assert gc.isenabled()
    assert gc.get_threshold() == (collector.YOUNG, 10, 10)
    assert gc.get_freeze_count() >= len(made)
    collector.release()  # once only: nothing more set aside
    assert gc.get_threshold() == (collector.YOUNG, 10, 10)


def test_a_collector_turned_off_by_its_process_stays_off() -> None:
    gc.disable()
    collector.hold()
    collector.release()
    assert not gc.isenabled()
    assert gc.get_freeze_count() == 0
    collector.resume()
    assert not gc.isenabled()


def test_released_without_a_hold_nothing_changes() -> None:
    gc.enable()
    gc.set_threshold(700, 10, 10)
    collector.release()
    assert gc.isenabled()
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_a_command_that_is_not_a_hook_gets_the_collector_back_as_it_was() -> None:
    gc.enable()
    gc.set_threshold(700, 10, 10)
    collector.hold()
    collector.resume()
    assert gc.isenabled()
    assert gc.get_threshold() == (700, 10, 10)
    assert gc.get_freeze_count() == 0


def test_the_gate_turns_it_back_on_before_a_check_runs() -> None:
    from groundskeeper.agents.gate import _Sandbox

    gc.enable()
    collector.hold()
    shell = object()
    assert _Sandbox(shell)() is shell  # type: ignore[arg-type]
    assert gc.isenabled()
