"""Hypothesis properties of the ledger: an untouched ledger verifies clean, and any single
changed byte anywhere in `_steps.jsonl` or `_steps.checkpoint` makes verification fail."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from groundskeeper.record.ledger import verify_ledger
from tests.test_ledger import KEY, build_ledger


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes]:
    ledger = build_ledger(tmp_path_factory.mktemp("pristine") / "plan")
    return ledger.read_bytes(), ledger.with_suffix(".checkpoint").read_bytes()


def _verify(steps: bytes, checkpoint: bytes | None) -> set[str]:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "_steps.jsonl").write_bytes(steps)
        if checkpoint is not None:
            (Path(tmp) / "_steps.checkpoint").write_bytes(checkpoint)
        return {f.code for f in verify_ledger(Path(tmp), [KEY.public]).findings}


def _flip(data: bytes, position: int, value: int) -> bytes:
    changed = bytearray(data)
    changed[position % len(data)] = value
    return bytes(changed)


def test_untouched_ledger_is_clean(pristine: tuple[bytes, bytes]) -> None:
    assert _verify(*pristine) == set()


SETTINGS = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(position=st.integers(min_value=0), value=st.integers(min_value=0, max_value=255))
def test_any_byte_change_in_the_steps_is_found(
    pristine: tuple[bytes, bytes], position: int, value: int
) -> None:
    steps, checkpoint = pristine
    changed = _flip(steps, position, value)
    if changed == steps:
        return
    codes = _verify(changed, checkpoint)
    assert codes, "a changed ledger verified clean"
    # Not only the checkpoint: the lines themselves give the change away.
    assert codes - {"checkpoint-mismatch"}, codes


@SETTINGS
@given(position=st.integers(min_value=0), value=st.integers(min_value=0, max_value=255))
def test_any_byte_change_in_the_steps_is_found_even_without_checkpoint(
    pristine: tuple[bytes, bytes], position: int, value: int
) -> None:
    steps, _ = pristine
    changed = _flip(steps, position, value)
    if changed == steps:
        return
    assert _verify(changed, None) - {"checkpoint-missing"}


@SETTINGS
@given(position=st.integers(min_value=0), value=st.integers(min_value=0, max_value=255))
def test_any_byte_change_in_the_checkpoint_is_found(
    pristine: tuple[bytes, bytes], position: int, value: int
) -> None:
    steps, checkpoint = pristine
    changed = _flip(checkpoint, position, value)
    if changed == checkpoint:
        return
    codes = _verify(steps, changed)
    assert codes, "a changed checkpoint verified clean"
    assert all(code.startswith("checkpoint-") for code in codes), codes
