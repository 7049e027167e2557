"""The report's document: built from the ledger by the verifier's own code, broken at the
right line for every tamper vector, the demo's story told from the record, and its shape
held by report.schema.json."""

from __future__ import annotations

import hashlib
import json
import re
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from groundskeeper.record.keys import PublicKey, read_public_keys
from groundskeeper.review.document import build_document
from groundskeeper.review.snapshot import read_snapshot
from groundskeeper.review.tasks import plan_headlines
from tests.review.conftest import VECTOR_KEY, VECTORS, Hostile, Run

SCHEMA = json.loads(
    (resources.files("groundskeeper.review") / "report.schema.json").read_text(encoding="utf-8")
)
TAMPERED = sorted(p.name for p in VECTORS.iterdir() if p.is_dir() and p.name != "valid")


def document_of(path: Path, keys: list[PublicKey], **kwargs: Any) -> dict[str, Any]:
    snapshot = read_snapshot(path, keys)
    headlines = plan_headlines(snapshot.plan_path, snapshot.lines) if snapshot.plan_path else None
    return build_document(snapshot, headlines=headlines, **kwargs)


def demo_document(run: Run, **kwargs: Any) -> dict[str, Any]:
    return document_of(run.work, read_public_keys(run.key), **kwargs)


@pytest.mark.parametrize("name", TAMPERED)
def test_every_tamper_vector_is_broken_at_its_first_finding(name: str) -> None:
    expected = json.loads((VECTORS / name / "expected.json").read_text())
    lines = sorted(f["line"] for f in expected["findings"] if f["line"] is not None)
    codes = sorted(f["code"] for f in expected["findings"])
    document = document_of(VECTORS / name, read_public_keys(VECTOR_KEY))
    integrity = document["integrity"]
    assert (integrity["intact"], integrity["status"]) == (False, "broken")
    assert integrity["first_broken_line"] == (lines[0] if lines else None)
    assert sorted(f["code"] for f in integrity["findings"]) == codes
    jsonschema.validate(document, SCHEMA)


def test_the_valid_vector_is_intact_and_untrusted_it_is_not() -> None:
    trusted = document_of(VECTORS / "valid", read_public_keys(VECTOR_KEY))
    assert trusted["integrity"]["status"] == "intact"
    assert trusted["integrity"]["findings"] == []
    untrusted = document_of(VECTORS / "valid", [])
    assert untrusted["integrity"]["status"] == "broken"
    assert "checkpoint-untrusted" in untrusted["integrity"]["file_findings"]
    assert untrusted["integrity"]["first_broken_line"] == 1  # untrusted-key on every line


def test_an_edited_demo_ledger_is_broken_at_the_edited_line(demo: Run) -> None:
    lines = demo.ledger.read_bytes().splitlines(keepends=True)
    number = next(
        i
        for i, raw in enumerate(lines, 1)
        if b'"verdict":"FAIL"' in raw and b"count" in raw and b'"attempt":1' in raw
    )
    lines[number - 1] = lines[number - 1].replace(b'"verdict":"FAIL"', b'"verdict":"PASS"')
    demo.ledger.write_bytes(b"".join(lines))
    integrity = demo_document(demo)["integrity"]
    assert integrity["status"] == "broken"
    assert integrity["first_broken_line"] == number
    assert {"line": number, "code": "bad-signature"} in [
        {"line": f["line"], "code": f["code"]} for f in integrity["findings"]
    ]
    # a record that does not verify backs no headline
    assert [t["headline"]["backed"] for t in demo_document(demo)["tasks"]] == [False] * 3


def test_what_is_verified_is_what_is_shown(demo: Run) -> None:
    data = demo.ledger.read_bytes()
    document = demo_document(demo)
    files = document["integrity"]["files"]
    assert files["ledger_sha256"] == hashlib.sha256(data).hexdigest()
    assert files["ledger_bytes"] == len(data)
    checkpoint = demo.ledger.with_suffix(".checkpoint").read_bytes()
    assert files["checkpoint_sha256"] == hashlib.sha256(checkpoint).hexdigest()
    entries = [e for run in document["timeline"] for g in run["groups"] for e in g["entries"]]
    assert [e["sha256"] for e in sorted(entries, key=lambda e: e["line"])] == [
        hashlib.sha256(raw).hexdigest() for raw in data.splitlines(keepends=True)
    ]


def test_the_demo_run_is_told_from_its_record(demo: Run) -> None:
    document = demo_document(demo)
    jsonschema.validate(document, SCHEMA)
    assert document["integrity"]["status"] == "intact"
    summary = document["summary"]
    # the retry: the author's first outline invalid (T005), the second valid
    assert [(o["attempt"], o["ok"], o["codes"]) for o in summary["outlines"]] == [
        (1, False, ["T005"]),
        (2, True, []),
    ]
    assert summary["tasks_by_state"] == {"DONE": 3}
    assert summary["attempts"] == 4
    assert summary["outcome"] == "ok"
    assert summary["goal"] == "Write the release notes for 0.1.0 and count the changes"
    tasks = {t["task_id"]: t for t in document["tasks"]}
    # failures first: both leaves failed an attempt before their DONE; the parent did not
    order = [t["task_id"] for t in document["tasks"]]
    assert (sorted(order[:2]), order[2]) == (["count", "draft"], "Ship the release notes")
    count, draft = tasks["count"]["attempts"], tasks["draft"]["attempts"]
    # the caught lie: "DONE: counted the changes" beside a check that failed
    assert count[0]["claim"]["excerpt"] == "DONE: counted the changes"
    assert (count[0]["check"]["verdict"], count[0]["check"]["reason"]) == ("FAIL", "nonzero_status")
    assert count[0]["claim_refuted"] is True
    # the judge's failure after a passing check
    assert (draft[0]["check"]["verdict"], draft[0]["judge"]["code"]) == ("PASS", "J010")
    assert draft[0]["outcome"] == "judge failed: J010"
    # the two successes
    for attempts in (count, draft):
        assert (attempts[1]["failed"], attempts[1]["check"]["verdict"]) == (False, "PASS")
    assert all(t["state"] == "DONE" and t["headline"]["backed"] for t in tasks.values())


def test_a_headline_the_record_does_not_back_says_so(demo: Run) -> None:
    plan = demo.work / "plan.org"
    plan.write_text(plan.read_text().replace("grep -q", "grep -qi", 1))  # draft's check changed
    tasks = {t["task_id"]: t for t in demo_document(demo)["tasks"]}
    assert tasks["draft"]["headline"] == {"keyword": "DONE", "backed": False, "line": 7}
    assert tasks["count"]["headline"]["backed"] is True


def test_cost_is_an_estimate_only_from_given_prices(demo: Run) -> None:
    assert demo_document(demo)["summary"]["cost"] is None
    model = "scripted:" + str(Path(__file__).resolve().parents[2] / "examples/demo/mission.yaml")
    cost = demo_document(demo, prices={model: {"input_tokens": 3.0}})["summary"]["cost"]
    assert cost == {"estimate": True, "total": 0.0, "unpriced_models": []}


def test_a_stored_output_is_shown_only_when_it_hashes_to_the_sealed_value(demo: Run) -> None:
    notes = (demo.work / "out" / "notes.md").read_text()
    digest = hashlib.sha256(notes.encode()).hexdigest()
    outputs = demo.ledger.parent / "outputs"
    outputs.mkdir()
    (outputs / digest).write_text(notes)

    def shown() -> list[dict[str, Any]]:
        document = demo_document(demo)
        entries = [e for r in document["timeline"] for g in r["groups"] for e in g["entries"]]
        return [o for e in entries for o in e["outputs"] if o["sha256"] == digest]

    assert [(o["name"], o["verified"], o["text"]) for o in shown()] == [("stdout", True, notes)]
    (outputs / digest).write_text(notes + "- and one change nobody made\n")
    assert [(o["verified"], o["text"]) for o in shown()] == [(False, None)]


def test_the_schema_can_fail() -> None:
    document = document_of(VECTORS / "valid", read_public_keys(VECTOR_KEY))
    document["integrity"]["status"] = "intact"
    document["integrity"]["intact"] = False  # a status the flag does not back
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, SCHEMA)
    document = document_of(VECTORS / "valid", read_public_keys(VECTOR_KEY))
    del document["summary"]["tokens"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, SCHEMA)


def test_an_edit_to_any_line_of_the_demo_is_reported_at_that_line(demo: Run) -> None:
    original = demo.ledger.read_bytes().splitlines(keepends=True)
    keys = read_public_keys(demo.key)
    found = []
    for number in range(1, len(original) + 1):
        lines = list(original)
        # one digit of the line's time, still canonical JSON: only the signature can tell
        lines[number - 1] = re.sub(
            rb'("ts":"[^"]*)(\d)Z"',
            lambda m: m[1] + str((int(m[2]) + 1) % 10).encode() + b'Z"',
            lines[number - 1],
        )
        assert lines[number - 1] != original[number - 1]
        demo.ledger.write_bytes(b"".join(lines))
        integrity = document_of(demo.work, keys)["integrity"]
        found.append((integrity["status"], integrity["first_broken_line"]))
    assert found == [("broken", n) for n in range(1, len(original) + 1)]


def test_evidence_and_contracts_sit_beside_the_claim_they_judged(hostile: Hostile) -> None:
    document = document_of(hostile.run.work, read_public_keys(hostile.run.key))
    (task,) = document["tasks"]
    (attempt,) = task["attempts"]
    assert [(v["ok"], v["code"]) for v in attempt["evidence"]] == [(False, "E003")]
    assert [(v["ok"], v["code"]) for v in attempt["contracts"]] == [(True, None)]
    assert (attempt["outcome"], attempt["claim_refuted"]) == ("claim refuted: E003", True)
    assert attempt["tokens"] == {
        "input_tokens": 1200,
        "output_tokens": 340,
        "cache_read_tokens": 1000,
        "cache_write_tokens": 7,
    }
    assert (task["state"], task["stop"]) == ("FAILED", "max-attempts")
    assert document["summary"]["model_wait_ms"] == 1500
