"""The run as in-toto attestations others can check: one DSSE envelope per check verdict,
each carrying an in-toto Statement v1 with the Test Result predicate, then one Simple
Verification statement for the ledger as a whole — all signed with the reviewer's ed25519
key, whose public form goes beside them.

It owns those statements' shape and their signing; it reads only the report document (so
only a ledger that verified is exported: the CLI refuses a broken one).
Formats: in-toto Statement v1, `https://in-toto.io/attestation/test-result/v0.1`,
`https://in-toto.io/attestation/simple-verification/v0.1`, DSSE v1 envelopes.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import PurePath
from typing import Any

from groundskeeper.record.keys import SigningKey
from groundskeeper.record.ledger_format import pae

PAYLOAD_TYPE = "application/vnd.in-toto+json"
STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
TEST_RESULT = "https://in-toto.io/attestation/test-result/v0.1"
SIMPLE_VERIFICATION = "https://in-toto.io/attestation/simple-verification/v0.1"
VERIFIER_ID = "urn:groundskeeper:report"
_HEX64 = frozenset("0123456789abcdef")


def _digest(value: object) -> dict[str, str] | None:
    if isinstance(value, str) and len(value) == 64 and set(value) <= _HEX64:
        return {"sha256": value}
    return None


def _descriptor(name: str, digest: object) -> dict[str, Any]:
    found = _digest(digest)
    return {"name": name, "digest": found} if found is not None else {"name": name}


def check_statements(document: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A Test Result statement for each `check` line, in ledger order. Its subject is the
    ledger line by digest and the artifacts the ledger sealed for that attempt (the files
    the judge read); its configuration names the check and the plan by digest."""
    ledger_name = PurePath(document["integrity"]["files"]["ledger"]).name
    plan = document["summary"]["plan"] or "plan"
    plan_sha = document["summary"]["plan_sha256"]
    artifacts = _attempt_artifacts(document)
    for run in document["timeline"]:
        for group in run["groups"]:
            for entry in group["entries"]:
                if entry["step"] != "check" or entry["task"] is None:
                    continue
                body = entry["body"]
                task = entry["task"]
                passed = body.get("verdict") == "PASS"
                subject = [
                    {
                        "name": f"{ledger_name}#{entry['anchor']}",
                        "digest": {"sha256": entry["sha256"]},
                    }
                ]
                key = (run["run"], task, entry["attempt"])
                subject += artifacts.get(key, [])
                yield {
                    "_type": STATEMENT_TYPE,
                    "subject": subject,
                    "predicateType": TEST_RESULT,
                    "predicate": {
                        "result": "PASSED" if passed else "FAILED",
                        "configuration": [
                            _descriptor(f"check of {task}", body.get("check_sha256")),
                            _descriptor(plan, plan_sha),
                        ],
                        "passedTests": [task] if passed else [],
                        "failedTests": [] if passed else [task],
                    },
                }


def _attempt_artifacts(
    document: dict[str, Any],
) -> dict[tuple[Any, Any, Any], list[dict[str, Any]]]:
    """(run, task, attempt) → the files its judge was shown, by their sealed digests."""
    found: dict[tuple[Any, Any, Any], list[dict[str, Any]]] = {}
    for run in document["timeline"]:
        for group in run["groups"]:
            for entry in group["entries"]:
                if entry["step"] != "judge":
                    continue
                for artifact in entry["body"].get("artifacts") or []:
                    if not isinstance(artifact, dict) or not isinstance(artifact.get("path"), str):
                        continue
                    digest = _digest(artifact.get("sha256"))
                    if digest is not None:
                        key = (run["run"], entry["task"], entry["attempt"])
                        found.setdefault(key, []).append(
                            {"name": artifact["path"], "digest": digest}
                        )
    return found


def run_statement(document: dict[str, Any], now: datetime) -> dict[str, Any]:
    """The Simple Verification statement: this ledger (its two files, by digest) verified
    intact by groundskeeper at `now`, with what that covered."""
    integrity = document["integrity"]
    files = integrity["files"]
    subject = [
        {"name": PurePath(files["ledger"]).name, "digest": {"sha256": files["ledger_sha256"]}}
    ]
    if files["checkpoint_sha256"] is not None:
        subject.append(
            {"name": "_steps.checkpoint", "digest": {"sha256": files["checkpoint_sha256"]}}
        )
    properties = ["GROUNDSKEEPER_LEDGER_INTACT", "GROUNDSKEEPER_CHECKPOINT_COVERS_ALL_LINES"]
    if integrity["witness"] is not None and integrity["witness"]["consulted"]:
        properties.append("GROUNDSKEEPER_WITNESS_AGREES")
    head = integrity["head"]
    return {
        "_type": STATEMENT_TYPE,
        "subject": subject,
        "predicateType": SIMPLE_VERIFICATION,
        "predicate": {
            "verifier": {"id": VERIFIER_ID},
            "timeCreated": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "resourceUri": f"urn:groundskeeper:ledger:{head['root']}:{head['size']}",
            "properties": properties,
        },
    }


def envelope(statement: dict[str, Any], key: SigningKey) -> dict[str, Any]:
    """A DSSE envelope around the statement's JSON, signed over DSSE's PAE."""
    payload = json.dumps(statement, sort_keys=True, separators=(",", ":")).encode("utf-8")
    signature = key.sign(pae(PAYLOAD_TYPE.encode("ascii"), payload))
    return {
        "payloadType": PAYLOAD_TYPE,
        "payload": base64.b64encode(payload).decode("ascii"),
        "signatures": [
            {"keyid": key.public.key_id, "sig": base64.b64encode(signature).decode("ascii")}
        ],
    }


def intoto_lines(
    document: dict[str, Any], key: SigningKey, clock: Callable[[], datetime] | None = None
) -> list[str]:
    """The `RUN.intoto.jsonl` lines: every check verdict's envelope, then the run's."""
    if not document["integrity"]["intact"]:
        raise ValueError("a ledger that does not verify is not exported as attestations")
    now = clock() if clock is not None else datetime.now(UTC)
    statements = [*check_statements(document), run_statement(document, now)]
    return [json.dumps(envelope(s, key), sort_keys=True) for s in statements]


def public_key_json(key: SigningKey) -> dict[str, Any]:
    """The signer's public key as securesystemslib and in-toto tooling read a key:
    `{keyid, keytype, scheme, keyval: {public: hex}}`."""
    return {
        "keyid": key.public.key_id,
        "keytype": "ed25519",
        "scheme": "ed25519",
        "keyval": {"public": key.public.raw.hex()},
        "openssh": key.public.to_openssh("groundskeeper"),
    }
