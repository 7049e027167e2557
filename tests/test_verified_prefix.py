"""The verified prefix (`record.verified_prefix`): a hook verifies only the lines appended
since its last call, and finds exactly what verifying every line finds; a prefix that is
forged, altered, another key's or set's, or no longer the ledger's bytes is not used."""

from __future__ import annotations

import base64
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from groundskeeper.record import ledger_verify
from groundskeeper.record.keys import SigningKey
from groundskeeper.record.ledger import Ledger, verify_ledger
from groundskeeper.record.ledger_format import LedgerUnreadable
from groundskeeper.record.signed_file import canonical as _canonical
from groundskeeper.record.verified_prefix import PREFIX_FILE, verify_with_prefix

KEY = SigningKey.from_seed(bytes(range(32)))
OTHER = SigningKey.from_seed(bytes(range(1, 33)))
TRUSTED = [KEY.public]


def _runs(directory: Path, *names: str) -> Path:
    for name in names:
        ledger = Ledger(directory, KEY, f"hook-{name}", trusted=TRUSTED)
        ledger.record("run-start", {"kind": "hook", "n": name})
        ledger.stage("claim", {"excerpt": f"done {name}"})
        ledger.stage("run-end", {"ok": True})
        ledger.commit()
    return directory / "_steps.jsonl"


def _codes(path: Path, key: SigningKey | None = KEY) -> list[tuple[int | None, str]]:
    report, data, _ = verify_with_prefix(path, TRUSTED, key)
    assert data == path.read_bytes()
    full = verify_ledger(path, TRUSTED)
    assert (report.lines, report.runs, report.head) == (full.lines, full.runs, full.head)
    assert report.findings == full.findings
    return [(f.line, f.code) for f in report.findings]


def _verified_lines(monkeypatch: pytest.MonkeyPatch, path: Path) -> list[int]:
    """How many lines each verification checked, the prefix's taken from where it ends."""
    seen: list[int] = []
    real = ledger_verify._verify

    def counting(*args: Any, **kwargs: Any) -> Any:
        report, after = real(*args, **kwargs)
        seen.append(after.tree.size - args[4].tree.size)
        return report, after

    monkeypatch.setattr(ledger_verify, "_verify", counting)
    _codes(path)
    return seen[:1]  # the second is `verify_ledger`'s, over every line


def test_a_second_call_verifies_only_the_lines_appended_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _runs(tmp_path, "a", "b")
    assert _codes(path) == []
    assert (tmp_path / PREFIX_FILE).is_file()
    _runs(tmp_path, "c")
    assert _verified_lines(monkeypatch, path) == [3]
    assert _verified_lines(monkeypatch, path) == [0]


def test_without_the_key_no_prefix_is_read_or_written(tmp_path: Path) -> None:
    path = _runs(tmp_path, "a")
    assert _codes(path, None) == []
    assert not (tmp_path / PREFIX_FILE).exists()


def test_lines_after_the_prefix_are_held_to_the_lines_before_it(tmp_path: Path) -> None:
    path = _runs(tmp_path, "a", "b")
    _codes(path)
    # a run id reused across the prefix's end, and a line whose signature does not verify
    again = Ledger(tmp_path, KEY, "hook-a", trusted=TRUSTED)
    again.record("run-start", {"kind": "hook"})
    lines = path.read_bytes().splitlines(keepends=True)
    lines[-1] = lines[-1].replace(b'"kind":"hook"', b'"kind":"hooK"')
    path.write_bytes(b"".join(lines))
    assert _codes(path) == [(7, "bad-signature"), (7, "run-reused"), (None, "checkpoint-mismatch")]


def _tamper_line(path: Path, number: int) -> None:
    lines = path.read_bytes().splitlines(keepends=True)
    lines[number - 1] = lines[number - 1].replace(b"done", b"DONE")
    path.write_bytes(b"".join(lines))


def test_a_line_changed_inside_the_prefix_is_found(tmp_path: Path) -> None:
    path = _runs(tmp_path, "a", "b")
    _codes(path)
    _tamper_line(path, 2)
    assert _codes(path) == [
        (2, "bad-signature"),
        (3, "prev-mismatch"),
        (None, "checkpoint-mismatch"),
    ]


def _forge(path: Path, key: SigningKey, change: dict[str, Any]) -> None:
    """Rewrite the prefix file with `change` applied, signed again by `key`."""
    prefix = path.with_name(PREFIX_FILE)
    signed = json.loads(prefix.read_bytes())
    signed.pop("sig")
    signed.update(change)
    context = b"groundskeeper verified prefix v1\n"
    sig = base64.b64encode(key.sign(context + _canonical(signed))).decode()
    prefix.write_bytes(_canonical({**signed, "sig": sig}) + b"\n")


def _clean_prefix_over_a_bad_ledger(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    """A ledger whose line 2 no longer verifies, and the prefix made while it did."""
    path = _runs(tmp_path, "a", "b")
    _codes(path)
    _tamper_line(path, 2)
    data = path.read_bytes()
    return path, {"sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)}


def test_a_prefix_signed_by_another_key_is_not_used(tmp_path: Path) -> None:
    path, cover = _clean_prefix_over_a_bad_ledger(tmp_path)
    _forge(path, OTHER, cover)  # it says the tampered bytes verified
    assert (2, "bad-signature") in _codes(path)


def test_an_altered_prefix_is_not_used(tmp_path: Path) -> None:
    path, cover = _clean_prefix_over_a_bad_ledger(tmp_path)
    prefix = path.with_name(PREFIX_FILE)
    signed = json.loads(prefix.read_bytes())
    prefix.write_bytes(_canonical({**signed, **cover}) + b"\n")  # the old signature
    assert (2, "bad-signature") in _codes(path)


@pytest.mark.parametrize(
    "change",
    [
        {"keys": "0" * 64},  # made when other keys were trusted
        {"v": 2},
        {"groundskeeper": "0.0.0"},
        {"bytes": 10},  # not a line's end
    ],
)
def test_a_prefix_of_other_keys_versions_or_bytes_is_not_used(
    tmp_path: Path, change: dict[str, Any]
) -> None:
    path, cover = _clean_prefix_over_a_bad_ledger(tmp_path)
    _forge(path, KEY, {**cover, **change})
    assert (2, "bad-signature") in _codes(path)


def test_a_prefix_whose_lines_are_not_its_bytes_is_not_used(tmp_path: Path) -> None:
    path, cover = _clean_prefix_over_a_bad_ledger(tmp_path)
    prefix = json.loads(path.with_name(PREFIX_FILE).read_bytes())
    state = {**prefix["state"], "size": 2, "stack": [prefix["state"]["stack"][0][:64]]}
    _forge(path, KEY, {**cover, "state": state})
    assert (2, "bad-signature") in _codes(path)


def test_a_torn_or_garbled_prefix_is_not_used(tmp_path: Path) -> None:
    path = _runs(tmp_path, "a")
    _codes(path)
    prefix = path.with_name(PREFIX_FILE)
    prefix.write_bytes(prefix.read_bytes()[:40])
    _tamper_line(path, 2)
    assert (2, "bad-signature") in _codes(path)


def test_a_ledger_cut_under_its_prefix_is_verified_whole(tmp_path: Path) -> None:
    path = _runs(tmp_path, "a", "b")
    _codes(path)
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:3]))
    assert _codes(path) == [(None, "checkpoint-mismatch")]


def test_a_checkpoint_behind_the_prefix_is_judged_on_every_line(tmp_path: Path) -> None:
    path = _runs(tmp_path, "a")
    checkpoint = path.with_name("_steps.checkpoint").read_bytes()
    _runs(tmp_path, "b")
    _codes(path)  # the prefix covers both runs
    path.with_name("_steps.checkpoint").write_bytes(checkpoint)
    assert _codes(path) == [(None, "checkpoint-stale")]
    with pytest.raises(LedgerUnreadable):
        ledger_verify.verify_after(
            path,
            path.read_bytes(),
            TRUSTED,
            ledger_verify.LineState.from_json(
                json.loads(path.with_name(PREFIX_FILE).read_bytes())["state"]
            ),
        )
