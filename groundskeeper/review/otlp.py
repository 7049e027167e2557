"""The run as OpenTelemetry spans in OTLP JSON, with the GenAI semantic conventions, for the
trace viewers people already use (a collector's `otlpjsonfile` receiver loads the file):
`invoke_workflow` per run, `invoke_agent {task}` per attempt, `chat {model}` per sealed model
call with its `gen_ai.usage.*`, `execute_tool {name}` per tool call (its arguments only as
their sealed hashes), and `gen_ai.evaluation.result` events for checks, judges, evidence and
contracts.

It owns that mapping; it reads only the report document. Times come from the ledger; trace
and span ids are derived from the run id and each line's seq, so exporting again gives the
same ids; every span carries `groundskeeper.ledger.seq`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from groundskeeper import __version__

SPAN_KIND_INTERNAL = 1
SPAN_KIND_CLIENT = 3
STATUS_OK = 1
STATUS_ERROR = 2
_TOKENS = (
    ("input_tokens", "gen_ai.usage.input_tokens"),
    ("output_tokens", "gen_ai.usage.output_tokens"),
    ("cache_read_tokens", "gen_ai.usage.cache_read.input_tokens"),
    ("cache_write_tokens", "gen_ai.usage.cache_creation.input_tokens"),
)


def _value(value: object) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}  # OTLP JSON writes 64-bit integers as strings
    if isinstance(value, list | tuple):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    return {"stringValue": str(value)}


def _attributes(pairs: Mapping[str, object]) -> list[dict[str, Any]]:
    return [{"key": k, "value": _value(v)} for k, v in pairs.items() if v is not None]


def _nanos(ts: object) -> int:
    """A ledger time (`YYYY-MM-DDTHH:MM:SS.mmmZ`) in Unix nanoseconds; 0 when unreadable."""
    if not isinstance(ts, str):
        return 0
    try:
        moment = datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%f%z")
    except ValueError:
        return 0
    return int(moment.timestamp() * 1000) * 1_000_000


def trace_id(run: str) -> str:
    return hashlib.sha256(f"groundskeeper-trace:{run}".encode()).hexdigest()[:32]


def span_id(run: str, name: str) -> str:
    return hashlib.sha256(f"groundskeeper-span:{run}:{name}".encode()).hexdigest()[:16]


def provider(model: str) -> str:
    """`gen_ai.provider.name` for a groundskeeper model name (`anthropic:claude-…`)."""
    prefix = model.split(":", 1)[0]
    return "anthropic" if prefix in ("anthropic", "claude") else f"groundskeeper.{prefix}"


class _Span:
    def __init__(
        self, run: str, key: str, name: str, parent: _Span | None, seq: int | None, kind: int
    ) -> None:
        self.trace = trace_id(run)
        self.id = span_id(run, key)
        self.parent = parent
        self.name = name
        self.seq = seq
        self.kind = kind
        self.start = 0
        self.end = 0
        self.attributes: dict[str, object] = {"groundskeeper.ledger.seq": seq}
        self.events: list[dict[str, Any]] = []
        self.error: str | None = None

    def stretch(self, start: int, end: int) -> None:
        if start and (not self.start or start < self.start):
            self.start = start
        self.end = max(self.end, end, self.start)
        if self.parent is not None:
            self.parent.stretch(start, end)

    def event(self, when: int, pairs: Mapping[str, object]) -> None:
        self.events.append(
            {
                "timeUnixNano": str(when),
                "name": "gen_ai.evaluation.result",
                "attributes": _attributes(pairs),
            }
        )

    def to_json(self) -> dict[str, Any]:
        span: dict[str, Any] = {
            "traceId": self.trace,
            "spanId": self.id,
            "parentSpanId": self.parent.id if self.parent is not None else "",
            "name": self.name,
            "kind": self.kind,
            "startTimeUnixNano": str(self.start),
            "endTimeUnixNano": str(max(self.end, self.start)),
            "attributes": _attributes(self.attributes),
            "events": self.events,
            "status": {"code": STATUS_ERROR, "message": self.error}
            if self.error is not None
            else {"code": STATUS_OK},
        }
        return span


def _evaluations(step: str, body: Mapping[str, Any]) -> Iterable[dict[str, object]]:
    """The `gen_ai.evaluation.result` events a verdict step makes."""
    if step == "check":
        yield {
            "gen_ai.evaluation.name": f"check ({body.get('phase')})"
            if body.get("phase")
            else "check",
            "gen_ai.evaluation.score.label": str(body.get("verdict")),
            "gen_ai.evaluation.explanation": body.get("reason")
            if isinstance(body.get("reason"), str)
            else None,
            "groundskeeper.check.sha256": body.get("check_sha256")
            if isinstance(body.get("check_sha256"), str)
            else None,
        }
    elif step == "judge":
        label = "pass" if body.get("verdict") == "pass" and body.get("code") is None else "fail"
        message = body.get("message")
        yield {
            "gen_ai.evaluation.name": "judge",
            "gen_ai.evaluation.score.label": label,
            "gen_ai.evaluation.explanation": message
            if isinstance(message, str) and message
            else None,
            "groundskeeper.judge.code": body.get("code")
            if isinstance(body.get("code"), str)
            else None,
        }
    elif step in ("evidence", "contract"):
        for verdict in body.get("verdicts") or []:
            if not isinstance(verdict, dict):
                continue
            what = verdict.get("field") if step == "evidence" else verdict.get("contract")
            yield {
                "gen_ai.evaluation.name": f"{step} {what}",
                "gen_ai.evaluation.score.label": "pass" if verdict.get("ok") is True else "fail",
                "gen_ai.evaluation.explanation": verdict.get("message")
                if isinstance(verdict.get("message"), str)
                else None,
            }


def otlp_document(document: dict[str, Any]) -> dict[str, Any]:
    """One OTLP `ExportTraceServiceRequest` in JSON holding every run of the ledger."""
    if not document["integrity"]["intact"]:
        raise ValueError("a ledger that does not verify is not exported as spans")
    spans: list[_Span] = []
    for run in document["timeline"]:
        spans.extend(_run_spans(run))
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": _attributes(
                        {
                            "service.name": "groundskeeper",
                            "groundskeeper.ledger.sha256": document["integrity"]["files"][
                                "ledger_sha256"
                            ],
                            "groundskeeper.ledger.root": document["integrity"]["head"]["root"],
                        }
                    )
                },
                "scopeSpans": [
                    {
                        "scope": {"name": "groundskeeper.review", "version": __version__},
                        "spans": [span.to_json() for span in spans],
                    }
                ],
            }
        ]
    }


def _run_spans(run: Mapping[str, Any]) -> list[_Span]:
    run_id = str(run["run"])
    entries = [e for g in run["groups"] for e in g["entries"]]
    first = entries[0]
    root = _Span(run_id, "run", "invoke_workflow", None, first["seq"], SPAN_KIND_INTERNAL)
    root.attributes |= {
        "gen_ai.operation.name": "invoke_workflow",
        "groundskeeper.run.id": run_id,
        "groundskeeper.run.kind": (first["body"].get("kind") or "plan")
        if first["step"] == "run-start"
        else None,
    }
    spans = [root]
    agents: dict[tuple[str, int], _Span] = {}
    for entry in sorted(entries, key=lambda e: e["line"]):
        when = _nanos(entry["ts"])
        root.stretch(when, when)
        body, step, task, attempt = entry["body"], entry["step"], entry["task"], entry["attempt"]
        parent = root
        if task is not None and attempt is not None and attempt > 0:
            key = (task, attempt)
            if key not in agents:
                agent = _Span(
                    run_id,
                    f"agent:{task}:{attempt}",
                    f"invoke_agent {task}",
                    root,
                    entry["seq"],
                    SPAN_KIND_INTERNAL,
                )
                agent.attributes |= {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": task,
                    "groundskeeper.task.id": task,
                    "groundskeeper.attempt": attempt,
                }
                agents[key] = agent
                spans.append(agent)
            parent = agents[key]
        parent.stretch(when, when)
        if step in ("model-call", "author-call"):
            spans.append(_chat(run_id, entry, parent, when))
        elif step == "tool-call":
            spans.append(_tool(run_id, entry, parent, when))
        for pairs in _evaluations(step or "", body):
            parent.event(when, {**pairs, "groundskeeper.ledger.seq": entry["seq"]})
            label = pairs["gen_ai.evaluation.score.label"]
            if parent is not root and label in ("FAIL", "fail"):
                parent.error = f"{pairs['gen_ai.evaluation.name']}: {label}"
        if step == "run-end" and body.get("ok") is not True:
            root.error = str(body.get("outcome") or "the run did not end ok")
    return spans


def _chat(run_id: str, entry: Mapping[str, Any], parent: _Span, end: int) -> _Span:
    body = entry["body"]
    usage = body.get("usage") if entry["step"] == "author-call" else body
    usage = usage if isinstance(usage, dict) else {}
    model = str(usage.get("model") or body.get("model") or "unknown")
    span = _Span(
        run_id, f"seq:{entry['seq']}", f"chat {model}", parent, entry["seq"], SPAN_KIND_CLIENT
    )
    latency = usage.get("latency_ms")
    start = end - (latency * 1_000_000 if type(latency) is int and latency > 0 else 0)
    span.stretch(start, end)
    stop = body.get("stop_reason")
    span.attributes |= {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider(model),
        "gen_ai.request.model": model,
        "gen_ai.response.finish_reasons": [stop] if isinstance(stop, str) else None,
        "groundskeeper.purpose": body.get("purpose")
        if isinstance(body.get("purpose"), str)
        else "author",
        "groundskeeper.request_id": usage.get("request_id")
        if isinstance(usage.get("request_id"), str)
        else None,
    }
    for field, name in _TOKENS:
        value = usage.get(field)
        span.attributes[name] = value if type(value) is int else 0
    if isinstance(body.get("error"), str):
        span.error = body["error"]
        span.attributes["error.type"] = "model_call_failed"
    return span


def _tool(run_id: str, entry: Mapping[str, Any], parent: _Span, when: int) -> _Span:
    body = entry["body"]
    name = str(body.get("tool") or "tool")
    span = _Span(
        run_id,
        f"seq:{entry['seq']}",
        f"execute_tool {name}",
        parent,
        entry["seq"],
        SPAN_KIND_INTERNAL,
    )
    span.stretch(when, when)
    span.attributes |= {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": f"seq-{entry['seq']}",
        "groundskeeper.tool.input_sha256": body.get("input_sha256")
        if isinstance(body.get("input_sha256"), str)
        else None,
        "groundskeeper.tool.cmd_sha256": body.get("cmd_sha256")
        if isinstance(body.get("cmd_sha256"), str)
        else None,
        "groundskeeper.tool.status": body.get("status")
        if isinstance(body.get("status"), str)
        else None,
    }
    if body.get("is_error") is True:
        span.error = str(body.get("status") or "error")
        span.attributes["error.type"] = "tool_error"
    return span


def otlp_json(document: dict[str, Any]) -> str:
    """The export as one line, as the collector's OTLP JSON file receiver reads it."""
    return json.dumps(otlp_document(document), ensure_ascii=False, separators=(",", ":"))
