"""Hypothesis properties of the ledger: an untouched ledger verifies clean, and any single
changed byte anywhere in `_steps.jsonl` or `_steps.checkpoint` makes verification fail."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
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


# --- the subset check's fast path (`_in_subset`) accepts exactly what `_check_subset` does ---

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**54), max_value=2**54),  # past ±(2^53−1) on both sides
    st.floats(allow_nan=False),
    st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=6),
    st.sampled_from(["\ud800", "a\udfffb", "é", "\x7f", 2**53 - 1, -(2**53 - 1), 2**53]),
    st.binary(max_size=3),
)
_NAMES = st.one_of(
    st.text(max_size=4), st.sampled_from(["a b", "\x00", "é", "\t", "ok"]), st.integers(0, 3)
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(_NAMES, inner, max_size=4),
        st.tuples(inner),
    ),
    max_leaves=20,
)


def _nested(depth: int, leaf: object) -> object:
    value = leaf
    for n in range(depth):
        value = [value] if n % 2 else {"k": value}
    return value


def _accepted_by_the_naming_check(value: object) -> bool:
    from groundskeeper.record.ledger_format import LedgerError, _check_subset

    try:
        _check_subset(value, "body", 0)
    except LedgerError:
        return False
    return True


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(value=_VALUES)
@example(value={"a": "x\ud800"})
@example(value={"a": 2**53})
@example(value={"a": -(2**53)})
@example(value={"a": 1.0})
@example(value={"a b": 1})
@example(value={1: 1})
@example(value={"a": [("t",)]})
@example(value=["\udfff"])
@example(value={"a": {"b": True, "c": None}})
def test_the_fast_subset_check_agrees_with_the_naming_one(value: object) -> None:
    from groundskeeper.record.ledger_format import LedgerError, _in_subset, check_json_subset

    accepted = _accepted_by_the_naming_check(value)
    assert _in_subset(value, 0) is accepted
    if accepted:
        check_json_subset(value, "body")
    else:
        with pytest.raises(LedgerError, match=r"^body"):
            check_json_subset(value, "body")


@pytest.mark.parametrize("depth", [63, 64, 65])
@pytest.mark.parametrize("leaf", [1, 1.5, "\ud800", [], {}])
def test_the_fast_subset_check_agrees_at_the_depth_limit(depth: int, leaf: object) -> None:
    from groundskeeper.record.ledger_format import _in_subset

    value = _nested(depth, leaf)
    assert _in_subset(value, 0) is _accepted_by_the_naming_check(value)
