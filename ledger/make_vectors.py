"""Generate ledger/vectors/: a sample ledger signed with a published test key, and tampered
variants, each with the findings a verifier must report (ledger/SPEC.md §11).

Usage: python ledger/make_vectors.py [OUTDIR]   (default: the vectors/ next to this file)

The clean ledger is written by groundskeeper's own writer; the attacks are forged here from
the SPEC, and every expected finding is declared by hand below, never computed by the
verifier under test.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from groundskeeper.record.keys import SigningKey
from groundskeeper.record.ledger import Ledger

SIGNER_SEED = hashlib.sha256(b"groundskeeper ledger vectors: signer").digest()
STRANGER_SEED = hashlib.sha256(b"groundskeeper ledger vectors: stranger").digest()
SIGNER = SigningKey.from_seed(SIGNER_SEED)
STRANGER = SigningKey.from_seed(STRANGER_SEED)
PAYLOAD_TYPE = b"application/vnd.groundskeeper.step+json"

PLAN_CHECKS = {"gather-pricing": "5" * 64, "summarize": "6" * 64, "Research/Notes": None}
RUN_START = {
    "plan": "plan.org",
    "plan_sha256": "7" * 64,
    "checks": [{"task_id": t, "check_sha256": h} for t, h in PLAN_CHECKS.items()],
    "model": "scripted:demo.yaml",
    "versions": {"groundskeeper": "0.1.0", "python": "3.11.7"},
}
RUNS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "run-1": [
        ("run-start", RUN_START),
        ("task-start", {"task_id": "gather-pricing", "kind": "leaf", "check_sha256": "5" * 64}),
        (
            "tool-call",
            {
                "task_id": "gather-pricing",
                "tool": "write_file",
                "input_sha256": "8" * 64,
                "status": 0,
            },
        ),
        (
            "claim",
            {
                "task_id": "gather-pricing",
                "attempt": 1,
                "claim_sha256": "9" * 64,
                "excerpt": "DONE: page saved",
            },
        ),
        (
            "check",
            {
                "task_id": "gather-pricing",
                "check_sha256": "5" * 64,
                "output_sha256": "a" * 64,
                "verdict": "FAIL",
                "reason": "exit status 1 (test -s scratch/e2b_pricing.html)",
                "excerpt": "",
            },
        ),
        ("state", {"task_id": "gather-pricing", "from": "TODO", "to": "FAILED"}),
        (
            "run-end",
            {
                "ok": False,
                "states": [{"task_id": "gather-pricing", "state": "FAILED"}],
                "tampers": 0,
            },
        ),
    ],
    "run-2": [
        ("run-start", {**RUN_START, "model": "scripted:retry.yaml"}),
        ("task-start", {"task_id": "gather-pricing", "kind": "leaf", "check_sha256": "5" * 64}),
        (
            "check",
            {
                "task_id": "gather-pricing",
                "check_sha256": "5" * 64,
                "output_sha256": "b" * 64,
                "verdict": "PASS",
                "reason": "sentinel line seen",
                "excerpt": "Hobby — $0 · Pro — $150/mo",
            },
        ),
        ("state", {"task_id": "gather-pricing", "from": "FAILED", "to": "DONE"}),
        (
            "run-end",
            {"ok": True, "states": [{"task_id": "gather-pricing", "state": "DONE"}], "tampers": 0},
        ),
    ],
}
THIRD_RUN: dict[str, list[tuple[str, dict[str, Any]]]] = {"run-3": [("run-start", RUN_START)]}
OTHER_PLAN: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "other-1": [(step, {**body, "plan": "other.org"}) for step, body in RUNS["run-1"]]
}

Triple = tuple[int | None, int | None, str]
CKPT_MISMATCH: Triple = (None, None, "checkpoint-mismatch")
CKPT_STALE: Triple = (None, None, "checkpoint-stale")


def _clock() -> Callable[[], datetime]:
    ticks: Iterator[int] = iter(range(10**6))
    start = datetime(2025, 3, 14, 9, 26, 53, tzinfo=UTC)
    return lambda: start + timedelta(milliseconds=1500 * next(ticks))


def _write(
    directory: Path, key: SigningKey, runs: dict[str, list[tuple[str, dict[str, Any]]]]
) -> None:
    clock = _clock()
    for run_id, steps in runs.items():
        ledger = Ledger(directory, key, run_id, trusted=[], clock=clock)
        for step, body in steps:
            ledger.record(step, body)


def spec_sign_line(obj: dict[str, Any], key: SigningKey) -> bytes:
    unsigned = {name: value for name, value in obj.items() if name != "sig"}
    unsigned["key"] = key.public.key_id
    payload = _canonical(unsigned).encode()
    pae = b"DSSEv1 %d %s %d %s" % (len(PAYLOAD_TYPE), PAYLOAD_TYPE, len(payload), payload)
    signed = {**unsigned, "sig": base64.b64encode(key.sign(pae)).decode()}
    return (_canonical(signed) + "\n").encode()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def spec_mth(leaves: list[bytes]) -> bytes:
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return hashlib.sha256(b"\x00" + leaves[0]).digest()
    split = 1
    while split * 2 < len(leaves):
        split *= 2
    return hashlib.sha256(b"\x01" + spec_mth(leaves[:split]) + spec_mth(leaves[split:])).digest()


def spec_checkpoint(lines: list[bytes], key: SigningKey) -> bytes:
    origin = "groundskeeper-ledger/" + hashlib.sha256(lines[0]).hexdigest()
    text = f"{origin}\n{len(lines)}\n{base64.b64encode(spec_mth(lines)).decode()}\n".encode()
    name = "groundskeeper-" + key.public.key_id[:16]
    key_hash = hashlib.sha256(name.encode() + b"\n\x01" + key.public.raw).digest()[:4]
    return text + f"\n— {name} {base64.b64encode(key_hash + key.sign(text)).decode()}\n".encode()


def _with_sig(line: bytes, sig: str) -> bytes:
    obj = json.loads(line)
    obj["sig"] = sig
    return (_canonical(obj) + "\n").encode()


def _sig_of(line: bytes) -> bytes:
    return base64.b64decode(json.loads(line)["sig"])


@dataclass
class Vector:
    name: str
    description: str
    steps: bytes
    checkpoint: bytes | None
    findings: list[Triple]


def _vectors(
    valid: list[bytes],
    ckpt: bytes,
    extra: list[bytes],
    stranger: list[bytes],
    stranger_ckpt: bytes,
    other: list[bytes],
) -> list[Vector]:
    def joined(lines: list[bytes]) -> bytes:
        return b"".join(lines)

    def replaced(index: int, line: bytes) -> list[bytes]:
        return [*valid[:index], line, *valid[index + 1 :]]

    edited = valid[4].replace(b'"verdict":"FAIL"', b'"verdict":"PASS"')
    reserialized = (
        json.dumps(json.loads(valid[2]), sort_keys=True, separators=(", ", ": ")) + "\n"
    ).encode()
    forged = json.loads(valid[4])
    forged["body"]["verdict"] = "PASS"
    forged["prev"] = hashlib.sha256(valid[3]).hexdigest()
    flipped = bytearray(_sig_of(valid[6]))
    flipped[10] ^= 0x04
    swapped = [*valid[:2], valid[3], valid[2], *valid[4:]]
    return [
        Vector("valid", "two runs of one plan in one chain, as written", joined(valid), ckpt, []),
        Vector(
            "edited-value",
            "line 5: verdict FAIL changed to PASS, signature kept",
            joined(replaced(4, edited)),
            ckpt,
            [(5, 5, "bad-signature"), (6, 6, "prev-mismatch"), CKPT_MISMATCH],
        ),
        Vector(
            "reserialized",
            "line 3 re-serialized with the same meaning (spaces after , and :)",
            joined(replaced(2, reserialized)),
            ckpt,
            [(3, 3, "not-canonical"), (4, 4, "prev-mismatch"), CKPT_MISMATCH],
        ),
        Vector(
            "deleted-middle",
            "line 6 deleted",
            joined([*valid[:5], *valid[6:]]),
            ckpt,
            [(6, 7, "seq-mismatch"), (6, 7, "prev-mismatch"), CKPT_MISMATCH],
        ),
        Vector(
            "swapped",
            "lines 3 and 4 swapped",
            joined(swapped),
            ckpt,
            [
                (3, 4, "seq-mismatch"),
                (3, 4, "prev-mismatch"),
                (4, 3, "seq-mismatch"),
                (4, 3, "prev-mismatch"),
                (5, 5, "prev-mismatch"),
                CKPT_MISMATCH,
            ],
        ),
        Vector(
            "inserted-unknown-key",
            "a PASS verdict signed by the stranger key inserted as line 5",
            joined([*valid[:4], spec_sign_line(forged, STRANGER), *valid[4:]]),
            ckpt,
            [
                (5, 5, "untrusted-key"),
                (6, 5, "seq-mismatch"),
                (6, 5, "prev-mismatch"),
                CKPT_MISMATCH,
            ],
        ),
        Vector(
            "duplicated",
            "line 4 duplicated",
            joined([*valid[:4], valid[3], *valid[4:]]),
            ckpt,
            [(5, 4, "seq-mismatch"), (5, 4, "prev-mismatch"), CKPT_MISMATCH],
        ),
        Vector(
            "spliced-other-run",
            "line 5 replaced by line 5 of another plan's run, validly signed by the signer",
            joined(replaced(4, other[4])),
            ckpt,
            [
                (5, 5, "prev-mismatch"),
                (5, 5, "run-mismatch"),
                (6, 6, "prev-mismatch"),
                CKPT_MISMATCH,
            ],
        ),
        Vector(
            "replayed-run-start",
            "line 1 appended again at the end",
            joined([*valid, valid[0]]),
            ckpt,
            [(13, 1, "seq-mismatch"), (13, 1, "prev-mismatch"), (13, 1, "run-reused"), CKPT_STALE],
        ),
        Vector(
            "tail-dropped-checkpoint-kept",
            "lines 11 and 12 removed, checkpoint untouched",
            joined(valid[:10]),
            ckpt,
            [CKPT_MISMATCH],
        ),
        Vector(
            "tail-dropped-checkpoint-deleted",
            "lines 11 and 12 removed, checkpoint deleted",
            joined(valid[:10]),
            None,
            [(None, None, "checkpoint-missing")],
        ),
        Vector(
            "tail-dropped-checkpoint-resigned",
            "lines 11 and 12 removed, checkpoint re-signed by the stranger key",
            joined(valid[:10]),
            spec_checkpoint(valid[:10], STRANGER),
            [(None, None, "checkpoint-untrusted")],
        ),
        Vector(
            "sig-bit-flip",
            "one bit of line 7's signature flipped",
            joined(replaced(6, _with_sig(valid[6], base64.b64encode(bytes(flipped)).decode()))),
            ckpt,
            [(7, 7, "bad-signature"), (8, 8, "prev-mismatch"), CKPT_MISMATCH],
        ),
        Vector(
            "sig-wrong-length",
            "line 12's signature cut to 60 bytes",
            joined(
                replaced(
                    11, _with_sig(valid[11], base64.b64encode(_sig_of(valid[11])[:60]).decode())
                )
            ),
            ckpt,
            [(12, 12, "malformed-signature"), CKPT_MISMATCH],
        ),
        Vector(
            "sig-bad-base64",
            "line 12's signature starts with '!', not base64",
            joined(replaced(11, _with_sig(valid[11], "!" + json.loads(valid[11])["sig"][1:]))),
            ckpt,
            [(12, 12, "malformed-signature"), CKPT_MISMATCH],
        ),
        Vector(
            "regenerated-other-key",
            "the same steps, ledger and checkpoint regenerated under the stranger key",
            joined(stranger),
            stranger_ckpt,
            [(n, n, "untrusted-key") for n in range(1, 13)]
            + [(None, None, "checkpoint-untrusted")],
        ),
        Vector(
            "torn-last-line",
            "the last 40 bytes of the file cut off",
            joined(valid)[:-40],
            ckpt,
            [(12, None, "torn-line"), CKPT_MISMATCH],
        ),
        Vector(
            "crash-mid-append",
            "a crash while appending line 13: half a line, checkpoint of 12",
            joined(valid) + extra[0][:100],
            ckpt,
            [(13, None, "torn-line")],
        ),
        Vector(
            "stale-checkpoint",
            "line 13 appended but the checkpoint still covers 12 (crash before its rewrite)",
            joined([*valid, extra[0]]),
            ckpt,
            [CKPT_STALE],
        ),
        Vector(
            "first-line-removed",
            "the genesis line removed",
            joined(valid[1:]),
            ckpt,
            [
                (1, 2, "seq-mismatch"),
                (1, 2, "prev-mismatch"),
                (1, 2, "no-run-start"),
                (None, None, "checkpoint-origin"),
            ],
        ),
    ]


def _key_json(key: SigningKey, seed: bytes) -> dict[str, str]:
    return {
        "seed": seed.hex(),
        "public_key": key.public.raw.hex(),
        "key_id": key.public.key_id,
        "openssh": key.public.to_openssh("groundskeeper-vectors"),
    }


def generate(out: Path) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        _write(root / "valid", SIGNER, RUNS)
        _write(root / "extended", SIGNER, {**RUNS, **THIRD_RUN})
        _write(root / "stranger", STRANGER, RUNS)
        _write(root / "other", SIGNER, OTHER_PLAN)
        valid = (root / "valid" / "_steps.jsonl").read_bytes().splitlines(keepends=True)
        ckpt = (root / "valid" / "_steps.checkpoint").read_bytes()
        extra = (root / "extended" / "_steps.jsonl").read_bytes().splitlines(keepends=True)[12:]
        stranger = (root / "stranger" / "_steps.jsonl").read_bytes().splitlines(keepends=True)
        stranger_ckpt = (root / "stranger" / "_steps.checkpoint").read_bytes()
        other = (root / "other" / "_steps.jsonl").read_bytes().splitlines(keepends=True)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    keys = {
        "signer": _key_json(SIGNER, SIGNER_SEED),
        "stranger": _key_json(STRANGER, STRANGER_SEED),
    }
    (out / "keys.json").write_text(json.dumps(keys, indent=2) + "\n")
    (out / "test_key.pub").write_text(keys["signer"]["openssh"] + "\n")
    (out / "stranger_key.pub").write_text(keys["stranger"]["openssh"] + "\n")
    for vector in _vectors(valid, ckpt, extra, stranger, stranger_ckpt, other):
        directory = out / vector.name
        directory.mkdir()
        (directory / "_steps.jsonl").write_bytes(vector.steps)
        if vector.checkpoint is not None:
            (directory / "_steps.checkpoint").write_bytes(vector.checkpoint)
        complete = vector.steps.splitlines(keepends=True)
        complete = [line for line in complete if line.endswith(b"\n")]
        expected = {
            "description": vector.description,
            "head": {"size": len(complete), "root": spec_mth(complete).hex()},
            "findings": [
                {"line": line, "seq": seq, "code": code} for line, seq, code in vector.findings
            ],
        }
        (directory / "expected.json").write_text(
            json.dumps(expected, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )


if __name__ == "__main__":
    generate(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "vectors")
