"""The report's document: one JSON value built from a verified snapshot of a ledger — the
integrity verdict, the run summary, the task table and the timeline. The HTML page is
rendered from it and `report --format json` prints it; `report.schema.json` beside this module
is its shape.

It owns that shape; it reads nothing but the snapshot, the stored outputs (re-hashed before
use) and, when given, the plan file (for the headlines) and a prices file. It never trusts
the plan's headlines for what happened: that is the ledger's to say.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from groundskeeper import __version__
from groundskeeper.acceptance.attempt_record import OUTPUTS_DIR, OutputStore
from groundskeeper.record.ledger import Finding
from groundskeeper.review.snapshot import Line, Snapshot
from groundskeeper.review.tasks import TOKEN_FIELDS, TaskTable
from groundskeeper.review.timeline import summarize_step

#: The document's format name; a change that drops or retypes a key bumps its number.
FORMAT = "groundskeeper-report/1"
#: A stored output is shown up to this many characters (the rest is counted, not shown).
OUTPUT_SHOWN = 16 * 1024
_OUTPUT_FIELDS = (("cmd", "cmd_sha256"), ("stdout", "stdout_sha256"), ("stderr", "stderr_sha256"))
_FAILED_VERDICTS = frozenset({"FAIL", "FAILED", "refused", "failed", "tamper", "invalid"})


def build_document(
    snapshot: Snapshot,
    *,
    headlines: Mapping[str, dict[str, Any]] | None = None,
    prices: Mapping[str, Mapping[str, float]] | None = None,
    reverify: str | None = None,
) -> dict[str, Any]:
    """The whole document. `headlines` are the plan's (`tasks.plan_headlines`), None when no
    plan was read; `prices` per model (`prices.read_prices`), None for no cost estimate;
    `reverify` the command line that re-verifies this ledger."""
    table = TaskTable()
    for line in snapshot.lines:
        table.read(line)
    summary = _summary(snapshot.lines, prices)
    integrity = _integrity(snapshot, reverify)
    if headlines is not None and not integrity["intact"]:
        # a record that does not verify backs nothing
        headlines = {task: {**found, "backed": False} for task, found in headlines.items()}
    return {
        "format": FORMAT,
        "generator": f"groundskeeper {__version__}",
        "integrity": integrity,
        "summary": summary,
        "runs": _runs(snapshot.lines),
        "tasks": table.rows(headlines),
        "plan_read": headlines is not None,
        "timeline": _timeline(snapshot),
    }


# --- integrity --------------------------------------------------------------------------------


def _integrity(snapshot: Snapshot, reverify: str | None) -> dict[str, Any]:
    report = snapshot.report
    findings = [f.to_json() for f in report.findings]
    # Intact only when the verifier positively found nothing wrong with a non-empty ledger.
    intact = report.ok and report.lines > 0 and not findings
    broken_lines = sorted({f.line for f in report.findings if f.line is not None})
    checkpoint = snapshot.parsed_checkpoint
    signer = None
    if checkpoint is not None and checkpoint.signatures:
        signer = checkpoint.signatures[0][0]
    witness = report.witness.to_json() if report.witness is not None else None
    return {
        "status": "intact" if intact else "broken",
        "intact": intact,
        "first_broken_line": broken_lines[0] if broken_lines else None,
        "file_findings": [f.code for f in report.findings if f.line is None],
        "findings": findings,
        "lines": report.lines,
        "runs": report.runs,
        "head": report.head.to_json(),
        "checkpoint": {
            "present": snapshot.checkpoint is not None,
            "size": checkpoint.size if checkpoint is not None else None,
            "root": checkpoint.root.hex() if checkpoint is not None else None,
            "key_name": signer,
            "key_ids": _key_ids(snapshot.lines),
        },
        "witness": witness,
        "files": {
            "ledger": str(snapshot.ledger_path),
            "ledger_sha256": snapshot.ledger_sha256,
            "ledger_bytes": len(snapshot.data),
            "checkpoint_sha256": snapshot.checkpoint_sha256,
        },
        "reverify": reverify or f"groundskeeper ledger verify {snapshot.ledger_path}",
    }


def _key_ids(lines: Iterable[Line]) -> list[str]:
    return sorted({key for line in lines if (key := line.text("key")) is not None})


def finding_lines(findings: Iterable[Finding]) -> dict[int, list[str]]:
    by_line: dict[int, list[str]] = {}
    for finding in findings:
        if finding.line is not None:
            by_line.setdefault(finding.line, []).append(finding.code)
    return by_line


# --- summary and runs ------------------------------------------------------------------------


def _summary(
    lines: tuple[Line, ...], prices: Mapping[str, Mapping[str, float]] | None
) -> dict[str, Any]:
    tokens = dict.fromkeys(TOKEN_FIELDS, 0)
    by_model: dict[str, dict[str, int]] = {}
    models: set[str] = set()
    calls = wait_ms = attempts = 0
    seen_attempts: set[tuple[str, str, int]] = set()
    states: dict[str, str] = {}
    goal = plan = plan_sha256 = None
    outcome = "no plan run"
    plan_runs: set[str] = set()
    outlines: list[dict[str, Any]] = []
    for line in lines:
        body, step = line.body, line.step
        usage = _usage(step, body)
        if usage is not None:
            model = str(usage.get("model") or body.get("model") or "?")
            models.add(model)
            calls += 1
            wait_ms += _nonneg(usage.get("latency_ms"))
            per = by_model.setdefault(model, dict.fromkeys(TOKEN_FIELDS, 0))
            for name in TOKEN_FIELDS:
                tokens[name] += _nonneg(usage.get(name))
                per[name] += _nonneg(usage.get(name))
        task, attempt = body.get("task_id"), body.get("attempt")
        if isinstance(task, str) and type(attempt) is int and attempt > 0:
            key = (line.text("run") or "", task, attempt)
            attempts += key not in seen_attempts
            seen_attempts.add(key)
        if step == "state" and isinstance(task, str) and isinstance(body.get("to"), str):
            states[task] = body["to"]
        if step == "outline-check":
            outlines.append(_outline(line))
        if step == "run-start" and body.get("kind") == "goal":
            goal = body.get("goal") if isinstance(body.get("goal"), str) else goal
        elif step == "run-start" and body.get("kind") is None:
            plan_runs.add(line.text("run") or "")
            plan = body.get("plan") if isinstance(body.get("plan"), str) else plan
            sha = body.get("plan_sha256")
            plan_sha256 = sha if isinstance(sha, str) else plan_sha256
            outcome = "unfinished: no run-end sealed"
        elif step == "run-end" and line.text("run") in plan_runs:
            outcome = "ok" if body.get("ok") is True else "failed"
    by_state: dict[str, int] = {}
    for state in states.values():
        by_state[state] = by_state.get(state, 0) + 1
    return {
        "goal": goal,
        "plan": plan,
        "plan_sha256": plan_sha256,
        "models": sorted(models),
        "started": lines[0].text("ts") if lines else None,
        "ended": lines[-1].text("ts") if lines else None,
        "outcome": outcome,
        "outlines": outlines,
        "tasks_by_state": dict(sorted(by_state.items())),
        "attempts": attempts,
        "model_calls": calls,
        "tokens": tokens,
        "model_wait_ms": wait_ms,
        "cost": _cost(by_model, prices),
    }


def _outline(line: Line) -> dict[str, Any]:
    """A goal run's outline check: which outline, valid or not, and its diagnostics' codes."""
    body = line.body
    attempt = body.get("attempt")
    diagnostics = body.get("diagnostics")
    codes = sorted(
        {str(d.get("code")) for d in diagnostics if isinstance(d, dict)}
        if isinstance(diagnostics, list)
        else set()
    )
    return {
        "line": line.number,
        "attempt": attempt if type(attempt) is int else None,
        "ok": body.get("ok") is True,
        "codes": codes,
    }


def _usage(step: str | None, body: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The token counts of one model call: a `model-call` (workers and judges) or a goal
    run's `author-call` (its `usage` object). A judge's `judge` step repeats its call's."""
    if step == "model-call":
        return body
    usage = body.get("usage") if step == "author-call" else None
    return usage if isinstance(usage, dict) else None


def _nonneg(value: object) -> int:
    return value if type(value) is int and value > 0 else 0


def _cost(
    by_model: Mapping[str, Mapping[str, int]], prices: Mapping[str, Mapping[str, float]] | None
) -> dict[str, Any] | None:
    """An estimate from a user's prices (per million tokens); prices are not in the signed
    record, so the page labels it so. Models without a price are named, not guessed."""
    if prices is None:
        return None
    total = 0.0
    unpriced = []
    for model, counts in sorted(by_model.items()):
        price = prices.get(model)
        if price is None:
            if any(counts.values()):
                unpriced.append(model)
            continue
        total += sum(counts[name] * float(price.get(name, 0.0)) for name in TOKEN_FIELDS) / 1e6
    return {"estimate": True, "total": round(total, 6), "unpriced_models": unpriced}


def _runs(lines: Iterable[Line]) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for line in lines:
        if line.step == "run-start":
            body = line.body
            kind = body.get("kind") if isinstance(body.get("kind"), str) else "plan"
            if kind == "plan" and body.get("model") == "check --write":
                kind = "check --write"
            current = {
                "run": line.text("run"),
                "kind": kind,
                "first_line": line.number,
                "last_line": line.number,
                "started": line.text("ts"),
                "ended": None,
                "outcome": "no run-end sealed",
            }
            runs.append(current)
        elif current is not None and line.text("run") == current["run"]:
            current["last_line"] = line.number
            if line.step == "run-end":
                body = line.body
                current["ended"] = line.text("ts")
                ok = "ok" if body.get("ok") is True else "failed"
                outcome = body.get("outcome")
                current["outcome"] = f"{ok}: {outcome}" if isinstance(outcome, str) else ok
    return runs


# --- timeline ---------------------------------------------------------------------------------


def _timeline(snapshot: Snapshot) -> list[dict[str, Any]]:
    """Every line, grouped by run, then by task and attempt in the order each first
    appears: [{run, groups: [{task, attempt, failed, entries}]}]."""
    broken = finding_lines(snapshot.report.findings)
    store = OutputStore(snapshot.ledger_path.parent / OUTPUTS_DIR)
    anchors: set[int] = set()
    dock_runs: set[str] = set()
    runs: list[dict[str, Any]] = []
    groups: dict[tuple[str | None, int | None], dict[str, Any]] = {}
    for line in snapshot.lines:
        run = line.text("run")
        if line.step == "run-start" or not runs or runs[-1]["run"] != run:
            runs.append({"run": run, "groups": []})
            groups = {}
            if line.step == "run-start" and line.body.get("kind") == "dock" and run:
                dock_runs.add(run)
        entry = _entry(line, broken.get(line.number, []), anchors, store, run in dock_runs)
        key = (entry["task"], entry["attempt"])
        if key not in groups:
            groups[key] = {"task": key[0], "attempt": key[1], "failed": False, "entries": []}
            runs[-1]["groups"].append(groups[key])
        group = groups[key]
        group["entries"].append(entry)
        group["failed"] = group["failed"] or entry["failed"] or bool(entry["findings"])
    return runs


def _entry(
    line: Line, findings: list[str], anchors: set[int], store: OutputStore, dock_run: bool
) -> dict[str, Any]:
    seq = line.seq
    # `#seq-17` names the line whose seq is 17; a seq seen twice (a tampered ledger) keeps
    # its first line, the others get `#line-N`
    anchor = f"seq-{seq}" if seq is not None and seq not in anchors else f"line-{line.number}"
    if seq is not None:
        anchors.add(seq)
    body = line.body
    step = line.step
    if line.obj is None or step is None:
        summary, verdict = "(unreadable line: not shown)", None
    else:
        summary, verdict = summarize_step(step, body, dock_run)
    task = body.get("task_id")
    attempt = body.get("attempt")
    return {
        "line": line.number,
        "seq": seq,
        "anchor": anchor,
        "ts": line.text("ts"),
        "step": step,
        "task": task if isinstance(task, str) else None,
        "attempt": attempt if type(attempt) is int else None,
        "summary": summary,
        "verdict": verdict,
        # a check failing before any work (red first) is what it must do, not a failure
        "failed": verdict in _FAILED_VERDICTS and body.get("phase") != "red-first",
        "findings": findings,
        "sha256": line.sha256,
        "prev": line.text("prev"),
        "body": body,
        "outputs": _outputs(body, store) if step == "tool-call" else [],
    }


def _outputs(body: Mapping[str, Any], store: OutputStore) -> list[dict[str, Any]]:
    """The texts behind a tool call's hashes, each shown only when a stored copy hashes to
    the sealed value (SPEC §7, "Outputs and evidence, offline")."""
    found = []
    for name, field in _OUTPUT_FIELDS:
        digest = body.get(field)
        if not isinstance(digest, str):
            continue
        text = store.get(digest)
        found.append(
            {
                "name": name,
                "sha256": digest,
                "verified": text is not None,
                "text": text[:OUTPUT_SHOWN] if text is not None else None,
                "cut": max(0, len(text) - OUTPUT_SHOWN) if text is not None else 0,
            }
        )
    return found
