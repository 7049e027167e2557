"""The exports, checked by code no one here wrote: the in-toto envelopes by securesystemslib's
DSSE verifier and the in-toto-attestation bindings, the OTLP JSON by OpenTelemetry's own
protobuf definitions of an export request."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from google.protobuf import json_format
from in_toto_attestation.predicates.test_result.v0 import test_result_pb2
from in_toto_attestation.v1 import statement_pb2
from in_toto_attestation.v1.statement import Statement
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError
from securesystemslib.signer import Key

from groundskeeper.record.keys import read_public_keys
from groundskeeper.review.document import build_document
from groundskeeper.review.intoto import intoto_lines, public_key_json
from groundskeeper.review.otlp import otlp_document, trace_id
from groundskeeper.review.snapshot import read_snapshot
from tests.review.conftest import HOSTILE, Hostile, Run
from tests.test_ledger import KEY

CLOCK = lambda: datetime(2026, 11, 27, 12, 0, tzinfo=UTC)  # noqa: E731


def document(run: Run) -> dict[str, Any]:
    return build_document(read_snapshot(run.work, read_public_keys(run.key)))


def verifier_key() -> Key:
    found = public_key_json(KEY)
    found.pop("openssh")
    return Key.from_dict(found.pop("keyid"), found)


def envelopes(run: Run) -> list[Envelope]:
    return [
        Envelope.from_dict(json.loads(line)) for line in intoto_lines(document(run), KEY, CLOCK)
    ]


def test_every_envelope_verifies_and_a_flipped_byte_in_any_does_not(demo: Run) -> None:
    found = envelopes(demo)
    key = verifier_key()
    checks = demo.ledger.read_bytes().count(b'"step":"check"')
    # one per check verdict, then the run (a DONE the sweep kept untouched has none)
    assert (checks, len(found)) == (8, 9)
    for envelope in found:
        assert envelope.verify([key], 1) == {key.keyid: key}
    for index in range(len(found)):
        for where in ("payload", "signature"):
            broken = copy.deepcopy(found[index])
            if where == "payload":
                payload = bytearray(broken.payload)
                payload[len(payload) // 2] ^= 0x01
                broken.payload = bytes(payload)
            else:
                signature = broken.signatures[key.keyid]
                raw = bytearray(bytes.fromhex(signature.signature))
                raw[7] ^= 0x80
                signature.signature = raw.hex()
            with pytest.raises(VerificationError):
                broken.verify([key], 1)


def test_the_statements_parse_as_in_toto_test_results(demo: Run) -> None:
    found = envelopes(demo)
    lines = demo.ledger.read_bytes().splitlines(keepends=True)
    results = []
    for envelope in found:
        assert envelope.payload_type == "application/vnd.in-toto+json"
        statement = Statement.copy_from_pb(
            json_format.Parse(envelope.payload, statement_pb2.Statement())
        )
        statement.validate()  # the bindings' own rules: type, subjects with digests, predicate
        body = json.loads(envelope.payload)
        if statement.pb.predicate_type != "https://in-toto.io/attestation/test-result/v0.1":
            continue
        result = json_format.ParseDict(body["predicate"], test_result_pb2.TestResult())
        results.append((result.result, list(result.passed_tests), list(result.failed_tests)))
        # the first subject is the ledger line itself, by the digest of its bytes
        name, digest = body["subject"][0]["name"], body["subject"][0]["digest"]["sha256"]
        number = int(name.rsplit("-", 1)[1])
        assert digest == hashlib.sha256(lines[number - 1]).hexdigest()
        assert b'"step":"check"' in lines[number - 1]
        names = [c.name for c in result.configuration]
        assert names[0].startswith("check of ") and names[1].endswith("plan.org")
        assert len(result.configuration[1].digest["sha256"]) == 64
    assert ("FAILED", [], ["count"]) in results  # the caught lie
    # red first, attempts 1 and 2, roll-up, final sweep
    assert results.count(("FAILED", [], ["draft"])) == 1
    assert results.count(("PASSED", ["draft"], [])) == 4
    last = json.loads(found[-1].payload)
    assert last["predicateType"] == "https://in-toto.io/attestation/simple-verification/v0.1"
    assert (
        last["subject"][0]["digest"]["sha256"]
        == hashlib.sha256(demo.ledger.read_bytes()).hexdigest()
    )
    assert last["predicate"]["timeCreated"] == "2026-11-27T12:00:00Z"


def test_a_broken_ledger_is_not_exported(demo: Run) -> None:
    demo.ledger.write_bytes(
        demo.ledger.read_bytes().replace(b'"verdict":"FAIL"', b'"verdict":"PASS"', 1)
    )
    broken = document(demo)
    with pytest.raises(ValueError, match="does not verify"):
        intoto_lines(broken, KEY, CLOCK)
    with pytest.raises(ValueError, match="does not verify"):
        otlp_document(broken)


def otlp_request(exported: dict[str, Any]) -> ExportTraceServiceRequest:
    """Parse OTLP JSON with OpenTelemetry's protobuf definitions. OTLP JSON differs from
    protobuf's JSON mapping in one documented way: trace and span ids are hex, not base64."""
    wire = copy.deepcopy(exported)
    for resource in wire["resourceSpans"]:
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for field in ("traceId", "spanId", "parentSpanId"):
                    span[field] = base64.b64encode(bytes.fromhex(span[field])).decode()
    return json_format.ParseDict(wire, ExportTraceServiceRequest())


def attributes(span: Any) -> dict[str, Any]:
    found = {}
    for pair in span.attributes:
        kind = pair.value.WhichOneof("value")
        found[pair.key] = (
            getattr(pair.value, kind)
            if kind != "array_value"
            else [v.string_value for v in pair.value.array_value.values]
        )
    return found


def test_otlp_has_one_chat_span_per_sealed_model_call_with_its_tokens(hostile: Hostile) -> None:
    exported = otlp_document(document(hostile.run))
    request = otlp_request(exported)
    spans = list(request.resource_spans[0].scope_spans[0].spans)
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert [(s.name, attributes(s)["gen_ai.usage.input_tokens"]) for s in chats] == [
        ("chat anthropic:m", 1200)
    ]
    usage = attributes(chats[0])
    assert (usage["gen_ai.usage.output_tokens"], usage["gen_ai.usage.cache_read.input_tokens"],
            usage["gen_ai.usage.cache_creation.input_tokens"]) == (340, 1000, 7)  # fmt: skip
    assert usage["gen_ai.provider.name"] == "anthropic"
    assert chats[0].end_time_unix_nano - chats[0].start_time_unix_nano == 1_500_000_000
    names = sorted(s.name.split(" ")[0] for s in spans)
    assert names == ["chat", "execute_tool", "invoke_agent", "invoke_workflow"]
    tool = next(s for s in spans if s.name == "execute_tool sh")
    assert attributes(tool)["groundskeeper.tool.cmd_sha256"] == "3" * 64
    assert "</pre>" not in json.dumps(attributes(tool))  # arguments only as their hashes
    agent = next(s for s in spans if s.name.startswith("invoke_agent"))
    evaluations = [
        (attributes(e)["gen_ai.evaluation.name"], attributes(e)["gen_ai.evaluation.score.label"])
        for e in agent.events
    ]
    bad = " ".join(HOSTILE.values())
    assert evaluations == [
        (f"evidence {bad}", "fail"),
        (f"contract {bad}", "pass"),
        ("check", "FAIL"),
        ("judge", "fail"),
    ]
    assert agent.status.code == 2  # STATUS_CODE_ERROR
    assert all("groundskeeper.ledger.seq" in attributes(s) for s in spans)


def test_otlp_of_the_demo_matches_its_ledger_and_is_idempotent(demo: Run) -> None:
    first = otlp_document(document(demo))
    assert otlp_document(document(demo)) == first
    spans = list(otlp_request(first).resource_spans[0].scope_spans[0].spans)
    sealed = [
        json.loads(raw) for raw in demo.ledger.read_bytes().splitlines()
        if b'"step":"model-call"' in raw or b'"step":"author-call"' in raw
    ]  # fmt: skip
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert (len(chats), len(sealed)) == (13, 13)  # 2 author calls, 11 of workers and judges
    assert sorted(attributes(s)["groundskeeper.ledger.seq"] for s in chats) == sorted(
        line["seq"] for line in sealed
    )
    runs = {line["run"] for line in sealed}
    assert {s.trace_id.hex() for s in spans} == {trace_id(run) for run in runs}
