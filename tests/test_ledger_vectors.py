"""ledger/vectors/ is reproducible from ledger/make_vectors.py and verifies as documented in
each vector's expected.json (SPEC §11)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from groundskeeper.record.keys import SigningKey, read_public_keys
from groundskeeper.record.ledger import verify_ledger
from tests.ledger_reference import LEDGER_DIR, make_vectors

VECTORS = LEDGER_DIR / "vectors"
CASES = sorted(p.name for p in VECTORS.iterdir() if p.is_dir())


def _tree(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_vectors_regenerate_byte_for_byte(tmp_path: Path) -> None:
    make_vectors().generate(tmp_path / "vectors")
    regenerated, committed = _tree(tmp_path / "vectors"), _tree(VECTORS)
    assert sorted(regenerated) == sorted(committed)
    changed = [name for name in committed if committed[name] != regenerated[name]]
    assert changed == []


def test_every_issue_case_has_a_vector() -> None:
    assert set(CASES) >= {
        "valid",
        "edited-value",
        "reserialized",
        "deleted-middle",
        "swapped",
        "inserted-unknown-key",
        "duplicated",
        "spliced-other-run",
        "tail-dropped-checkpoint-kept",
        "tail-dropped-checkpoint-deleted",
        "tail-dropped-checkpoint-resigned",
        "sig-bit-flip",
        "sig-wrong-length",
        "sig-bad-base64",
        "regenerated-other-key",
        "torn-last-line",
    }


def test_published_keys_match_their_seeds() -> None:
    keys = json.loads((VECTORS / "keys.json").read_text())
    for entry, pub_file in (
        (keys["signer"], "test_key.pub"),
        (keys["stranger"], "stranger_key.pub"),
    ):
        key = SigningKey.from_seed(bytes.fromhex(entry["seed"]))
        assert key.public.raw.hex() == entry["public_key"]
        assert key.public.key_id == entry["key_id"]
        assert read_public_keys(VECTORS / pub_file) == [key.public]


@pytest.mark.parametrize("case", CASES)
def test_vector_verifies_as_documented(case: str) -> None:
    expected = json.loads((VECTORS / case / "expected.json").read_text(encoding="utf-8"))
    report = verify_ledger(VECTORS / case, read_public_keys(VECTORS / "test_key.pub"))
    found = sorted((f.line or 0, f.seq or 0, f.code) for f in report.findings)
    wanted = sorted((f["line"] or 0, f["seq"] or 0, f["code"]) for f in expected["findings"])
    assert found == wanted
    assert len(report.findings) == len(expected["findings"])
    assert report.head.to_json() == expected["head"]
    assert report.ok is (expected["findings"] == [])
