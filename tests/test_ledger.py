"""The ledger: every tamper case of issue 5 is detected with the right finding, and the writer
refuses to re-sign damage. Lines and checkpoints for the attacks are forged here from
ledger/SPEC.md alone (an independent second implementation), not with the module's helpers.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from groundskeeper.record import ledger as ledger_module
from groundskeeper.record.keys import PublicKey, SigningKey
from groundskeeper.record.ledger import (
    Ledger,
    LedgerError,
    LedgerUnreadable,
    MerkleTree,
    Report,
    append_step,
    canonical_json,
    decode_line,
    verify_ledger,
)
from tests.ledger_reference import make_vectors

KEY = SigningKey.from_seed(hashlib.sha256(b"groundskeeper test key A").digest())
OTHER = SigningKey.from_seed(hashlib.sha256(b"groundskeeper test key B").digest())
TRUST = [KEY.public]

Triple = tuple[int | None, int | None, str]


def fixed_clock(start: str = "2025-01-02T03:04:05") -> Callable[[], datetime]:
    moments: Iterator[int] = iter(range(10**6))
    base = datetime.fromisoformat(start).replace(tzinfo=UTC)
    return lambda: base + timedelta(milliseconds=250 * next(moments))


RUN_A: list[tuple[str, dict[str, Any]]] = [
    (
        "run-start",
        {
            "plan": "plan.org",
            "plan_sha256": "ab" * 32,
            "checks": [{"task_id": "gather", "check_sha256": "cd" * 32}],
            "model": "scripted:demo.yaml",
            "versions": {"groundskeeper": "0.1.0"},
        },
    ),
    ("task-start", {"task_id": "gather", "attempt": 1}),
    ("tool-call", {"task_id": "gather", "tool": "sh", "input_sha256": "ef" * 32, "status": 0}),
    ("claim", {"task_id": "gather", "claim_sha256": "01" * 32, "excerpt": "DONE: saved the page"}),
    (
        "check",
        {
            "task_id": "gather",
            "check_sha256": "cd" * 32,
            "output_sha256": "23" * 32,
            "verdict": "FAIL",
            "reason": "exit status 1",
            "excerpt": "",
        },
    ),
    ("state", {"task_id": "gather", "from": "TODO", "to": "FAILED"}),
    ("run-end", {"ok": False, "states": [{"task_id": "gather", "state": "FAILED"}], "tampers": 0}),
]
RUN_B: list[tuple[str, dict[str, Any]]] = [
    ("run-start", {**RUN_A[0][1], "model": "scripted:retry.yaml"}),
    ("task-start", {"task_id": "gather", "attempt": 1}),
    (
        "check",
        {
            "task_id": "gather",
            "check_sha256": "cd" * 32,
            "output_sha256": "45" * 32,
            "verdict": "PASS",
            "reason": "sentinel seen",
            "excerpt": "✓ 2 tiers",
        },
    ),
    ("state", {"task_id": "gather", "from": "FAILED", "to": "DONE"}),
    ("run-end", {"ok": True, "states": [{"task_id": "gather", "state": "DONE"}], "tampers": 0}),
]


def build_ledger(run_dir: Path, key: SigningKey = KEY, runs: tuple[str, ...] = ("a", "b")) -> Path:
    """Two runs of one plan in one chain: 7 lines of run-a, then 5 of run-b (12 lines)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    clock = fixed_clock()
    for run_id, steps in zip(runs, (RUN_A, RUN_B), strict=False):
        ledger = Ledger(run_dir, key, f"run-{run_id}", trusted=[], clock=clock)
        for step, body in steps:
            ledger.record(step, body)
    # As if an earlier process wrote it: the next append must read the files, not a cache.
    ledger_module._forget_writers()
    return run_dir / "_steps.jsonl"


# --- an independent reading of the SPEC (ledger/make_vectors.py), used to forge attacks ----


spec_sign_line = make_vectors().spec_sign_line
spec_mth = make_vectors().spec_mth
spec_checkpoint = make_vectors().spec_checkpoint


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def write_lines(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(lines))


def triples(report: Report) -> set[Triple]:
    return {(f.line, f.seq, f.code) for f in report.findings}


def verify(path: Path, trusted: list[PublicKey] = TRUST) -> Report:
    return verify_ledger(path, trusted)


@pytest.fixture
def ledger(tmp_path: Path) -> Path:
    return build_ledger(tmp_path / "plan")


CKPT_MISMATCH: Triple = (None, None, "checkpoint-mismatch")


# --- the untouched ledger -----------------------------------------------------------------


def test_untouched_ledger_verifies_clean(ledger: Path) -> None:
    report = verify(ledger.parent)
    assert report.findings == ()
    assert report.ok is True
    assert (report.lines, report.runs) == (12, 2)
    assert report.head.size == 12
    assert report.head.root == spec_mth(lines_of(ledger)).hex()


def test_the_checkpoint_is_what_the_spec_says(ledger: Path) -> None:
    # Ed25519 is deterministic, so an independent implementation reproduces it exactly.
    assert ledger.with_suffix(".checkpoint").read_bytes() == spec_checkpoint(lines_of(ledger), KEY)


def test_every_line_is_what_the_spec_says(ledger: Path) -> None:
    lines = lines_of(ledger)
    for number, line in enumerate(lines, start=1):
        obj = json.loads(line)
        assert spec_sign_line(obj, KEY) == line
        assert obj["seq"] == number
        expected_prev = "0" * 64 if number == 1 else hashlib.sha256(lines[number - 2]).hexdigest()
        assert obj["prev"] == expected_prev
    assert [json.loads(line)["run"] for line in lines] == ["run-a"] * 7 + ["run-b"] * 5


def test_no_trusted_key_means_no_trust(ledger: Path) -> None:
    report = verify(ledger, trusted=[])
    assert triples(report) == {(n, n, "untrusted-key") for n in range(1, 13)} | {
        (None, None, "checkpoint-untrusted")
    }


# --- the tamper cases of issue 5, one test each -------------------------------------------


def test_edited_value(ledger: Path) -> None:
    lines = lines_of(ledger)
    assert b'"verdict":"FAIL"' in lines[4]
    lines[4] = lines[4].replace(b'"verdict":"FAIL"', b'"verdict":"PASS"')
    write_lines(ledger, lines)
    assert triples(verify(ledger)) == {
        (5, 5, "bad-signature"),
        (6, 6, "prev-mismatch"),
        CKPT_MISMATCH,
    }


def test_reserialized_with_same_meaning(ledger: Path) -> None:
    lines = lines_of(ledger)
    obj = json.loads(lines[2])
    lines[2] = (json.dumps(obj, sort_keys=True, separators=(", ", ": ")) + "\n").encode()
    assert json.loads(lines[2]) == obj
    write_lines(ledger, lines)
    assert triples(verify(ledger)) == {
        (3, 3, "not-canonical"),
        (4, 4, "prev-mismatch"),
        CKPT_MISMATCH,
    }


def test_reordered_keys_are_not_canonical(ledger: Path) -> None:
    lines = lines_of(ledger)
    obj = json.loads(lines[2])
    lines[2] = (json.dumps(dict(reversed(obj.items())), separators=(",", ":")) + "\n").encode()
    write_lines(ledger, lines)
    assert (3, 3, "not-canonical") in triples(verify(ledger))


def test_middle_line_deleted(ledger: Path) -> None:
    lines = lines_of(ledger)
    del lines[5]
    write_lines(ledger, lines)
    assert triples(verify(ledger)) == {
        (6, 7, "seq-mismatch"),
        (6, 7, "prev-mismatch"),
        CKPT_MISMATCH,
    }


def test_two_lines_swapped(ledger: Path) -> None:
    lines = lines_of(ledger)
    lines[2], lines[3] = lines[3], lines[2]
    write_lines(ledger, lines)
    assert triples(verify(ledger)) == {
        (3, 4, "seq-mismatch"),
        (3, 4, "prev-mismatch"),
        (4, 3, "seq-mismatch"),
        (4, 3, "prev-mismatch"),
        (5, 5, "prev-mismatch"),
        CKPT_MISMATCH,
    }


def test_line_inserted_signed_by_unknown_key(ledger: Path) -> None:
    lines = lines_of(ledger)
    forged = json.loads(lines[4])
    forged["body"]["verdict"] = "PASS"
    forged["prev"] = hashlib.sha256(lines[3]).hexdigest()
    lines.insert(4, spec_sign_line(forged, OTHER))
    write_lines(ledger, lines)
    assert triples(verify(ledger)) == {
        (5, 5, "untrusted-key"),
        (6, 5, "seq-mismatch"),
        (6, 5, "prev-mismatch"),
        CKPT_MISMATCH,
    }


def test_line_duplicated(ledger: Path) -> None:
    lines = lines_of(ledger)
    lines.insert(4, lines[3])
    write_lines(ledger, lines)
    assert triples(verify(ledger)) == {
        (5, 4, "seq-mismatch"),
        (5, 4, "prev-mismatch"),
        CKPT_MISMATCH,
    }


def test_validly_signed_line_spliced_in_from_another_run(ledger: Path, tmp_path: Path) -> None:
    other = build_ledger(tmp_path / "other-plan", runs=("c",))
    stolen = lines_of(other)[4]  # seq 5 of run-c, validly signed by the trusted key
    lines = lines_of(ledger)
    lines[4] = stolen  # in place of seq 5 of run-a
    write_lines(ledger, lines)
    assert triples(verify(ledger)) == {
        (5, 5, "prev-mismatch"),
        (5, 5, "run-mismatch"),
        (6, 6, "prev-mismatch"),
        CKPT_MISMATCH,
    }


def test_replayed_run_start(ledger: Path) -> None:
    lines = lines_of(ledger)
    write_lines(ledger, [*lines, lines[0]])
    found = triples(verify(ledger))
    assert (13, 1, "run-reused") in found
    assert (13, 1, "seq-mismatch") in found
    assert (13, 1, "prev-mismatch") in found


def test_tail_dropped_checkpoint_kept(ledger: Path) -> None:
    write_lines(ledger, lines_of(ledger)[:10])
    report = verify(ledger)
    assert triples(report) == {CKPT_MISMATCH}
    assert "12 lines" in report.findings[0].reason


def test_tail_dropped_checkpoint_deleted(ledger: Path) -> None:
    write_lines(ledger, lines_of(ledger)[:10])
    ledger.with_suffix(".checkpoint").unlink()
    assert triples(verify(ledger)) == {(None, None, "checkpoint-missing")}


def test_tail_dropped_checkpoint_resigned_by_another_key(ledger: Path) -> None:
    kept = lines_of(ledger)[:10]
    write_lines(ledger, kept)
    ledger.with_suffix(".checkpoint").write_bytes(spec_checkpoint(kept, OTHER))
    assert triples(verify(ledger)) == {(None, None, "checkpoint-untrusted")}


def test_tail_dropped_checkpoint_resigned_by_own_key_is_caught_by_a_head_kept_elsewhere(
    ledger: Path,
) -> None:
    head = verify(ledger).head
    kept = lines_of(ledger)[:10]
    write_lines(ledger, kept)
    ledger.with_suffix(".checkpoint").write_bytes(spec_checkpoint(kept, KEY))
    assert verify(ledger).ok  # the key holder can rewrite history; only an outside head sees it
    report = verify_ledger(ledger, TRUST, expect_size=head.size, expect_root=head.root)
    assert [f.code for f in report.findings] == ["expect-mismatch", "expect-mismatch"]


def _replace_sig(line: bytes, new_sig: str) -> bytes:
    obj = json.loads(line)
    obj["sig"] = new_sig
    return (canonical_json(obj) + "\n").encode()


def test_signature_bit_flip(ledger: Path) -> None:
    lines = lines_of(ledger)
    sig = bytearray(base64.b64decode(json.loads(lines[6])["sig"]))
    sig[10] ^= 0x04
    lines[6] = _replace_sig(lines[6], base64.b64encode(bytes(sig)).decode())
    write_lines(ledger, lines)
    assert triples(verify(ledger)) == {
        (7, 7, "bad-signature"),
        (8, 8, "prev-mismatch"),
        CKPT_MISMATCH,
    }


@pytest.mark.parametrize(
    "mangle",
    [
        pytest.param(lambda s: base64.b64encode(base64.b64decode(s)[:60]).decode(), id="short"),
        pytest.param(lambda s: base64.b64encode(base64.b64decode(s) + b"\0").decode(), id="long"),
        pytest.param(lambda s: "!" + s[1:], id="bad-base64"),
        pytest.param(lambda s: s.rstrip("="), id="unpadded"),
        # The last character of 64 bytes of base64 carries 4 unused bits: a sloppy decoder
        # maps several spellings to the same signature, so only the canonical one is accepted.
        pytest.param(lambda s: s[:85] + chr(ord(s[85]) ^ 1) + "==", id="non-canonical"),
    ],
)
def test_signature_malformed(ledger: Path, mangle: Callable[[str], str]) -> None:
    lines = lines_of(ledger)
    sig = json.loads(lines[11])["sig"]
    assert mangle(sig) != sig
    lines[11] = _replace_sig(lines[11], mangle(sig))
    write_lines(ledger, lines)
    assert triples(verify(ledger)) == {(12, 12, "malformed-signature"), CKPT_MISMATCH}


def test_whole_ledger_regenerated_under_another_key(ledger: Path, tmp_path: Path) -> None:
    forged = build_ledger(tmp_path / "forged", key=OTHER)
    report = verify(forged)
    assert triples(report) == {(n, n, "untrusted-key") for n in range(1, 13)} | {
        (None, None, "checkpoint-untrusted")
    }
    assert report.ok is False


def test_torn_last_line(ledger: Path) -> None:
    data = ledger.read_bytes()
    ledger.write_bytes(data[: len(data) - 40])
    assert triples(verify(ledger)) == {(12, None, "torn-line"), CKPT_MISMATCH}


def test_torn_line_after_a_crash_mid_append(ledger: Path) -> None:
    with ledger.open("ab") as f:
        f.write(b'{"body":{"task":"gat')
    assert triples(verify(ledger)) == {(13, None, "torn-line")}


def test_first_line_removed(ledger: Path) -> None:
    write_lines(ledger, lines_of(ledger)[1:])
    assert triples(verify(ledger)) == {
        (1, 2, "seq-mismatch"),
        (1, 2, "prev-mismatch"),
        (1, 2, "no-run-start"),
        (None, None, "checkpoint-origin"),
    }


def test_empty_ledger(tmp_path: Path) -> None:
    (tmp_path / "_steps.jsonl").write_bytes(b"")
    assert triples(verify(tmp_path)) == {(None, None, "empty")}


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"not json", "bad-json"),
        (b"\xff\xfe", "bad-json"),
        (b"[1,2]", "bad-json"),
        (b'{"a":1.5}', "bad-json"),
        (b'{"a":NaN}', "bad-json"),
        (b'{"a":9007199254740992}', "bad-json"),
        (b'{"a":1,"a":1}', "not-canonical"),
        (b'{"a":-0}', "not-canonical"),
        (b'{"a":"\\u00e9"}', "not-canonical"),
        (b'{"a":1}', "bad-field"),
    ],
)
def test_lines_outside_the_subset(ledger: Path, line: bytes, code: str) -> None:
    lines = lines_of(ledger)
    lines[6] = line + b"\n"
    write_lines(ledger, lines)
    found = triples(verify(ledger))
    assert (7, None, code) in found
    assert (8, 8, "prev-mismatch") in found


def test_checkpoint_byte_errors(ledger: Path) -> None:
    checkpoint = ledger.with_suffix(".checkpoint")
    good = checkpoint.read_bytes()
    checkpoint.write_bytes(good.replace(b"\n12\n", b"\n012\n"))
    assert triples(verify(ledger)) == {(None, None, "checkpoint-malformed")}
    checkpoint.write_bytes(good.replace(b"\n12\n", b"\n13\n"))
    assert triples(verify(ledger)) == {(None, None, "checkpoint-bad-signature")}
    checkpoint.write_bytes(good[:-1])
    assert triples(verify(ledger)) == {(None, None, "checkpoint-malformed")}


def test_unreadable_ledger_is_an_error_not_a_finding(tmp_path: Path) -> None:
    with pytest.raises(LedgerUnreadable, match="no ledger at"):
        verify(tmp_path)


# --- the writer --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"score": 0.5}, "float"),
        ({"n": float("nan")}, "float"),
        ({"n": 2**53}, "outside"),
        ({"é": 1}, "ASCII"),
        ({"t": (1, 2)}, "tuple"),
        ({"s": {1, 2}}, "set"),
        ({"b": b"x"}, "bytes"),
        ({"s": "\ud800"}, "surrogate"),
    ],
)
def test_append_refuses_values_outside_the_subset(
    tmp_path: Path, body: dict[str, Any], message: str
) -> None:
    with pytest.raises(LedgerError, match=message):
        append_step(tmp_path, KEY, "run-a", "run-start", body)
    assert not (tmp_path / "_steps.jsonl").exists()


def test_append_refuses_unknown_step_and_bad_run_id(tmp_path: Path) -> None:
    with pytest.raises(LedgerError, match="unknown step type 'task-done'"):
        append_step(tmp_path, KEY, "run-a", "task-done", {})
    with pytest.raises(LedgerError, match="run id"):
        append_step(tmp_path, KEY, "run a", "run-start", {})


def test_a_run_must_begin_with_run_start(tmp_path: Path) -> None:
    ledger = Ledger(tmp_path, KEY, "run-a", trusted=[])
    with pytest.raises(LedgerError, match="first step must be run-start"):
        ledger.record("task-start", {"task_id": "x"})
    ledger.record("run-start", {})
    with pytest.raises(LedgerError, match="already started"):
        ledger.record("run-start", {})
    assert verify(tmp_path).lines == 1


def test_a_later_run_continues_the_chain(ledger: Path) -> None:
    appended = Ledger(ledger.parent, KEY, "run-c", trusted=[]).record("run-start", {})
    assert appended.seq == 13
    last = json.loads(lines_of(ledger)[-1])
    assert (last["seq"], last["run"], last["step"]) == (13, "run-c", "run-start")
    assert last["prev"] == hashlib.sha256(lines_of(ledger)[11]).hexdigest()
    report = verify(ledger)
    assert (report.ok, report.runs, report.head.size) == (True, 3, 13)


def test_reusing_a_run_id_is_found(ledger: Path) -> None:
    Ledger(ledger.parent, KEY, "run-a", trusted=[]).record("run-start", {})
    assert triples(verify(ledger)) == {(13, 13, "run-reused")}


def _files(path: Path) -> tuple[bytes, bytes | None]:
    checkpoint = path.with_suffix(".checkpoint")
    return path.read_bytes(), checkpoint.read_bytes() if checkpoint.exists() else None


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda p: write_lines(p, lines_of(p)[:10]), "covers 12 lines but the file has 10"),
        (lambda p: p.with_suffix(".checkpoint").unlink(), "checkpoint is missing"),
        # a torn tail whose line a checkpoint names was cut, not left by a crash
        (lambda p: p.write_bytes(p.read_bytes()[:-5]), "covers 12 lines but the file has 11"),
        (
            lambda p: p.with_suffix(".checkpoint").write_bytes(spec_checkpoint(lines_of(p), OTHER)),
            "not signed by a trusted key",
        ),
        (
            lambda p: p.with_suffix(".checkpoint").write_bytes(b"garbage\n"),
            "checkpoint is malformed",
        ),
    ],
)
def test_append_refuses_to_resign_damage(
    ledger: Path, damage: Callable[[Path], None], message: str
) -> None:
    damage(ledger)
    before = _files(ledger)
    with pytest.raises(LedgerError, match=message):
        Ledger(ledger.parent, KEY, "run-c", trusted=[]).record("run-start", {})
    assert _files(ledger) == before


def test_append_repairs_a_stale_checkpoint_left_by_a_crash(ledger: Path) -> None:
    checkpoint = ledger.with_suffix(".checkpoint")
    old = checkpoint.read_bytes()
    ledger_c = Ledger(ledger.parent, KEY, "run-c", trusted=[])
    ledger_c.record("run-start", {})
    checkpoint.write_bytes(old)  # as if the process died before the rename
    assert triples(verify(ledger)) == {(None, None, "checkpoint-stale")}
    Ledger(ledger.parent, KEY, "run-d", trusted=[]).record("run-start", {})
    report = verify(ledger)
    assert (report.ok, report.lines) == (True, 14)


def test_stale_checkpoint_with_a_forged_extra_line_is_refused(ledger: Path) -> None:
    lines = lines_of(ledger)
    forged = json.loads(lines[11])
    forged.update(seq=13, prev=hashlib.sha256(lines[11]).hexdigest())
    write_lines(ledger, [*lines, spec_sign_line(forged, OTHER)])
    with pytest.raises(LedgerError, match="covers 12 lines but the file has 13"):
        Ledger(ledger.parent, KEY, "run-c", trusted=[]).record("run-start", {})


def test_a_colleagues_checkpoint_can_be_continued_when_trusted(ledger: Path) -> None:
    with pytest.raises(LedgerError, match="not signed by a trusted key"):
        Ledger(ledger.parent, OTHER, "run-c", trusted=[]).record("run-start", {})
    Ledger(ledger.parent, OTHER, "run-d", trusted=[KEY.public]).record("run-start", {})
    assert verify(ledger, [KEY.public, OTHER.public]).ok


def test_appends_after_the_file_changed_under_the_cache(ledger: Path) -> None:
    mine = Ledger(ledger.parent, KEY, "run-c", trusted=[])
    mine.record("run-start", {})
    # Another writer (same key, its own process in real life) appends behind our back.
    ledger_module._forget_writers()
    Ledger(ledger.parent, KEY, "run-d", trusted=[]).record("run-start", {})
    ledger_module._forget_writers()
    # Without a re-read this would reuse seq 14 and fork the chain.
    mine.record("task-start", {"task_id": "x"})
    report = verify(ledger)
    assert triples(report) == {(15, 15, "run-mismatch")}  # run-c's line after run-d started


# --- the building blocks --------------------------------------------------------------------


def test_an_unwritable_ledger_is_a_ledger_error_naming_the_file(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the run directory should be\n")
    ledger = Ledger(blocker, KEY, "run-a", trusted=[])
    with pytest.raises(LedgerError, match=r"cannot write the ledger .*not-a-dir/_steps\.jsonl"):
        ledger.record("run-start", {})


def test_merkle_tree_matches_rfc6962_definition() -> None:
    leaves = [f"leaf {i}\n".encode() for i in range(40)]
    tree = MerkleTree()
    assert tree.root() == hashlib.sha256(b"").digest()
    for n, leaf in enumerate(leaves, start=1):
        tree.append(leaf)
        assert tree.root() == spec_mth(leaves[:n]), n


def test_canonical_json_is_jcs_for_the_subset() -> None:
    value = {"b": [True, None, -7], "a": 'é\n\u0001/\u007f"\\', "A": {}}
    assert canonical_json(value) == '{"A":{},"a":"é\\n\\u0001/\u007f\\"\\\\","b":[true,null,-7]}'


def test_signed_note_matches_the_published_c2sp_example() -> None:
    # The signed-note example published with the C2SP spec: key "PeterNeumann", key id
    # c74f20a3; Ed25519 is deterministic, so the same seed and text give the same line.
    from groundskeeper.record.ledger_format import note_key_hash

    seed = base64.b64decode("AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz")[1:]
    key = SigningKey.from_seed(seed)
    text = b"If you think cryptography is the answer to your problem,\n"
    text += b"then you don't know what your problem is.\n"
    key_hash = note_key_hash("PeterNeumann", key.public)
    assert key_hash.hex() == "c74f20a3"
    blob = base64.b64encode(key_hash + key.sign(text)).decode()
    assert blob == (
        "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM="
    )


def test_appends_in_one_process_do_not_reread_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger = Ledger(tmp_path, KEY, "run-a", trusted=[])
    ledger.record("run-start", {})

    def no_reading(path: Path, what: str) -> bytes | None:
        raise AssertionError(f"append re-read the {what}: appends must be O(1)")

    monkeypatch.setattr(ledger_module, "read_if_present", no_reading)
    for n in range(5):
        ledger.record("task-start", {"task_id": f"t{n}"})
    monkeypatch.undo()
    assert (verify(tmp_path).ok, verify(tmp_path).lines) == (True, 6)


def test_ledger_public_api_is_locked() -> None:
    # The runner, the CLI and the benchmarks import from groundskeeper.record.ledger; splitting the
    # module must not move a name out from under them.
    assert sorted(ledger_module.__all__) == [
        "AppendedLine",
        "CHECKPOINT_FILE",
        "Finding",
        "Head",
        "LEDGER_FILE",
        "Ledger",
        "LedgerError",
        "LedgerUnreadable",
        "MerkleTree",
        "Report",
        "STEP_TYPES",
        "Witness",
        "advance_witness",
        "append_step",
        "canonical_json",
        "excerpt",
        "read_steps",
        "resolve_ledger_path",
        "verify_ledger",
    ]
    assert all(hasattr(ledger_module, name) for name in ledger_module.__all__)


# --- nesting depth (SPEC §2): a named finding, never a RecursionError -----------------------

DEEP_LINE = b"[" * 30_000 + b"]" * 30_000 + b"\n"
DEPTH_REASON = "line nests arrays and objects deeper than 64 (SPEC §2)"


def nested(depth: int) -> Any:
    value: Any = 0
    for _ in range(depth):
        value = [value]
    return value


def test_a_deeply_nested_line_is_bad_json(ledger: Path) -> None:
    write_lines(ledger, [*lines_of(ledger), DEEP_LINE])
    report = verify(ledger)
    assert (13, None, "bad-json") in triples(report)
    assert [f.reason for f in report.findings if f.code == "bad-json"] == [DEPTH_REASON]


def test_depth_is_counted_outside_strings_only() -> None:
    assert decode_line(b"[" * 64 + b"]" * 64) == (None, "bad-json", "line is not a JSON object")
    assert decode_line(b"[" * 65 + b"]" * 65) == (None, "bad-json", DEPTH_REASON)
    text = '{"a":' + json.dumps("[{" * 100) + "}"
    assert decode_line(text.encode()) == ({"a": "[{" * 100}, None, "")
    escaped = '{"a":' + json.dumps('\\"' + "[" * 100) + "}"
    assert decode_line(escaped.encode())[1:] == (None, "")


def test_appending_after_a_deep_line_is_refused_by_name(ledger: Path) -> None:
    write_lines(ledger, [*lines_of(ledger), DEEP_LINE])
    writer = Ledger(ledger.parent, KEY, "run-c", trusted=TRUST, clock=fixed_clock())
    with pytest.raises(LedgerError, match="refusing to append"):
        writer.record("run-start", RUN_A[0][1])


def test_the_writer_refuses_values_nested_too_deeply() -> None:
    assert canonical_json(nested(64)) == "[" * 64 + "0" + "]" * 64
    for depth in (65, 30_000):
        with pytest.raises(LedgerError, match="nested deeper than 64"):
            canonical_json({"body": nested(depth)})
