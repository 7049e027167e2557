"""One line of a ledger told in a sentence: the summary and verdict of each step, as
`ledger show` prints them and the report's timeline shows them.

It owns how a step reads; it does not verify the ledger (`record.ledger_verify`) or print.
Every body may hold what a worker wrote: values are read defensively and returned as text,
never as markup.
"""

from __future__ import annotations

import re
from typing import Any

#: what a failed attempt was caught at (a state step's `lies`) that contradicts what it
#: claimed; the rest are changes the fence refused, which an honest worker makes too when the
#: plan's wording does not ask for the change it needed (adversary-19 F24)
_LIES = ("false evidence", "forged sentinel")


def caught_label(item: str) -> str:
    """How a report names one entry of a task's `lies` (`attempt N: …`): "caught lying" for
    false evidence or a forged sentinel, "stopped by the fence" for a refused change."""
    said = item.split(": ", 1)[1] if item.startswith("attempt ") and ": " in item else item
    return "caught lying" if said.startswith(_LIES) else "stopped by the fence"


# Characters that change how text around them is laid out or read without being seen:
# C0/C1 controls (but tab and newline), bidirectional embeddings, overrides, isolates and
# marks, zero-width joiners and spaces, the line and paragraph separators, the BOM.
_INVISIBLE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]"
)


def inert(value: object) -> str:
    """Text a worker may have written, with its invisible controls made visible."""
    text = value if isinstance(value, str) else str(value)
    return _INVISIBLE.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)


def _short(value: Any, width: int = 12) -> str:
    return str(value)[:width] if value is not None else "-"


def summarize_step(step: str, body: dict[str, Any], dock_run: bool) -> tuple[str, str | None]:
    """(summary, verdict) of one step for the timeline; bodies are read defensively.
    `dock_run`: the step belongs to a run of `groundskeeper dock`, not of a plan."""
    get = body.get
    if step == "run-start" and dock_run:
        return f"dock {get('component')} into {get('into')}", None
    if step == "run-start" and get("kind") == "goal":
        return f"goal {str(get('goal') or '')[:60]!r} · author {get('author_model')}", None
    if step in _GOAL_STEPS:
        return _summarize_goal_step(step, body)
    if step == "run-start" and get("kind") == "eval":
        models = ", ".join(str(m) for m in get("models") or [])
        return f"eval sweep · {get('keys')} keys · models {models} · ×{get('repeat')}", None
    if step in ("case-verdict", "case-duplicate"):
        raw = get("key")
        key: dict[str, Any] = raw if isinstance(raw, dict) else {}
        what = f"{key.get('case')} · {key.get('model')} · #{key.get('repeat')} · {get('actual')}"
        if step == "case-duplicate":
            return f"duplicate · {what}", None
        verdict = "ok" if get("passed") is True else "failed"
        by = f" · caught by {get('caught_by')}" if get("caught_by") else ""
        return f"{what}{by}", verdict
    if step in ("run-start", "hook-decision") and str(get("kind") or step).startswith("hook"):
        return _summarize_hook_step(step, body)
    if step == "run-start" and get("kind") in ("launcher-check", "launcher-refusal"):
        return _summarize_launcher(body)
    if step == "run-start" and get("kind") == "worker-sweep":
        return f"agent work's final sweep · plan {get('plan')}", None
    if step == "run-end" and get("sealed") is not None:
        verdict = "ok" if get("ok") else "failed"
        return f"{verdict} · {get('sealed')} sealed, {get('duplicates')} duplicates", verdict
    if step == "run-start":
        checks = get("checks")
        count = len(checks) if isinstance(checks, list | dict) else 0
        return f"plan {get('plan')} · {count} tasks · model {get('model')}", None
    if step == "task-start":
        check = get("check_sha256")
        return f"{get('kind') or 'task'} · check {_short(check) if check else 'none'}", None
    if step == "tool-call":
        error = " (error)" if get("is_error") else ""
        what = f" `{str(get('cmd'))[:40]}`" if isinstance(get("cmd"), str) else ""
        what = f" {get('path')}" if isinstance(get("path"), str) else what
        said = " · reported by the client, not seen" if get("reported_by") == "client" else ""
        return f"{get('tool')}{what} → status {get('status')}{error}{said}", None
    if step == "model-call":
        if get("error"):
            return f"{get('purpose')} call failed: {str(get('error'))[:60]}", "failed"
        cached = f", {get('cache_read_tokens')} cached" if get("cache_read_tokens") else ""
        return (
            f"{get('purpose')} → {get('stop_reason')} · {get('input_tokens')} in{cached},"
            f" {get('output_tokens')} out · {get('latency_ms')} ms"
        ), None
    if step in ("contract", "evidence"):
        verdicts = [v for v in get("verdicts") or [] if isinstance(v, dict)]
        failed = [v for v in verdicts if not v.get("ok")]
        hard = [v for v in failed if not v.get("soft")]
        codes = ",".join(str(v.get("code")) for v in failed)
        verdict = "FAIL" if hard else "PASS"
        held = f"{len(verdicts) - len(failed)}/{len(verdicts)} hold"
        return f"{verdict} · {held}{' · ' + codes if codes else ''}", verdict
    if step == "judge":
        verdict = "PASS" if get("verdict") == "pass" and not get("code") else "FAIL"
        code = f" {get('code')}" if get("code") else ""
        files = len(get("artifacts") or [])
        return (
            f"{verdict}{code} · attempt {get('attempt')} · {files} artifact(s) · profile"
            f" {get('profile')} · prompt {_short(get('prompt_sha256'))}"
        ), verdict
    if step == "claim":
        attempt = f"attempt {get('attempt')}: " if get("attempt") is not None else ""
        return f"{attempt}{str(get('excerpt') or '')[:60]!r}", None
    if step == "check":
        verdict = str(get("verdict"))
        reason = f" {get('reason')}" if get("reason") else ""
        phase = f" ({get('phase')})" if get("phase") else ""  # red-first, rollup, sweep, …
        return f"{verdict}{reason}{phase} · output {_short(get('output_sha256'))}", verdict
    if step in ("untouched", "inputs-unchanged"):  # DONEs kept without a run
        rows = [r for r in get("tasks") or [] if isinstance(r, dict)]
        names = ", ".join(str(r.get("task_id")) for r in rows)
        return f"kept ({get('phase')}) · {names[:80]} · {get('reason')}", "PASS"
    if step == "state":
        stop = f" (stop: {get('stop')})" if get("stop") else ""  # max-attempts, breaker, …
        lies = get("lies")
        caught = "".join(
            f"; {caught_label(str(x))}: {x}" for x in (lies if isinstance(lies, list) else ())
        )  # what the earlier attempts were caught at, beside the last reason
        return f"{get('from')} → {get('to')}{stop}{caught}", str(get("to"))
    if step == "plan-edit":
        return f"inserted line {get('line')}: {get('text')}", None
    if step == "tamper":
        tasks = ", ".join(str(t) for t in get("task_ids") or [])
        return f"rejected {get('rejected_path')} ({tasks or 'no task'})", "tamper"
    if step == "dock":
        verdict = "ok" if get("ok") else "refused"
        return f"{get('component')} {verdict} · sha256 {_short(get('sha256') or None)}", verdict
    if step == "run-end" and dock_run:
        verdict = "ok" if get("ok") else "refused"
        return f"{verdict} · dock", verdict
    if step == "run-end" and get("outcome"):
        verdict = "ok" if get("ok") else "failed"
        return f"{verdict} · {get('outcome')}", verdict
    if step == "run-end":
        verdict = "ok" if get("ok") else "failed"
        states = get("states") or []
        counts: dict[str, int] = {}
        for entry in states if isinstance(states, list) else []:
            if isinstance(entry, dict):
                state = str(entry.get("state"))
                counts[state] = counts.get(state, 0) + 1
        tally = ", ".join(f"{n} {state}" for state, n in sorted(counts.items()))
        return f"{verdict} · {tally or 'no tasks'}", verdict
    return "", None


def _summarize_hook_step(step: str, body: dict[str, Any]) -> tuple[str, str | None]:
    """A `groundskeeper hook` call's run-start, a seal, a session's start, and its decision
    (allow, block or stop: the verdict)."""
    get = body.get
    session = f"session {get('session_id')}" if get("session_id") else "no session"
    if step == "hook-decision":
        decision = str(get("decision"))
        claims = {"plan": "the plan", "task": f"task {get('task_id')}"}.get(
            str(get("scope")), f"no task ({str(get('subject') or '')[:30]})"
        )
        reason = str(get("reason") or "")[:60]
        return f"{decision} · {get('event')} · {session} · claims {claims} · {reason}", decision
    kind = get("kind")
    if kind == "hook-seal":
        said = f"seal by {get('by')} · {session} · plan {_short(get('plan_sha256'))}"
        accepted = get("accepted")
        if isinstance(accepted, list) and accepted:
            # the user's word on changes on a check's side (`agent seal --accept`)
            names = ", ".join(str(a.get("path")) for a in accepted if isinstance(a, dict))
            said += f" · accepted changed check input(s): {names[:80]}"
        return said, None
    if kind == "hook-session":
        return f"session start · {get('event')} · {session}", None
    return f"hook {get('event') or get('kind')} · {get('agent')} · {session}", None


def _summarize_launcher(body: dict[str, Any]) -> tuple[str, str | None]:
    """`agent run`'s own judgment after its session, or its refusal of the session."""
    get = body.get
    session = f"session {get('session_id')}" if get("session_id") else "no session"
    if get("kind") == "launcher-refusal":
        reasons = [str(r) for r in get("reasons") or []]
        return f"agent run refused {session} · {'; '.join(reasons)[:80]}", "refused"
    tasks = [str(t) for t in get("tasks") or []]
    again = [str(t) for t in get("done_again") or []]
    said = f"agent run's judgment · {session} · {len(tasks)} open task(s)"
    said += f" ({', '.join(tasks)[:60]})" if tasks else ""
    said += f" · {len(again)} DONE judged again" if again else ""
    return said, None


_GOAL_STEPS = frozenset(
    {"author-call", "outline-check", "outline-retry", "approval", "plan-sealed"}
)


def _summarize_goal_step(step: str, body: dict[str, Any]) -> tuple[str, str | None]:
    """The steps of a goal-driven run's graph (`groundskeeper run "GOAL"`)."""
    get = body.get
    if step == "author-call":
        return (
            f"outline {get('attempt')} · {get('stop_reason')} · {_short(get('outline_sha256'))}",
            None,
        )
    if step == "outline-check":
        codes = sorted(
            {str(d.get("code")) for d in get("diagnostics") or [] if isinstance(d, dict)}
        )
        verdict = "valid" if get("ok") else "invalid"
        detail = f" ({', '.join(codes)})" if codes else ""
        return f"outline {get('attempt')} {verdict}{detail}", verdict
    if step == "outline-retry":
        return f"the one retry, for outline {get('attempt')}", None
    if step == "approval":
        return f"{get('decision')} · plan {_short(get('plan_sha256'))}", str(get("decision"))
    return f"plan {_short(get('plan_sha256'))} · {get('plan')}", None


def timeline_entries(steps: list[tuple[int, dict[str, Any] | None]]) -> list[dict[str, Any]]:
    """One entry per line of `record.ledger.read_steps`: what `ledger show` prints and the
    report's timeline starts from. Bodies are read defensively: a worker wrote some of them."""
    dock_runs: set[Any] = set()
    entries = []
    for line, obj in steps:
        if obj is not None and obj.get("step") == "run-start":
            body = obj.get("body")
            if isinstance(body, dict) and body.get("kind") == "dock":
                dock_runs.add(obj.get("run"))
        entries.append(_entry(line, obj, obj is not None and obj.get("run") in dock_runs))
    return entries


def _entry(line: int, obj: dict[str, Any] | None, dock_run: bool) -> dict[str, Any]:
    if obj is None or not isinstance(obj.get("body"), dict):
        return {
            "line": line,
            "seq": None,
            "ts": None,
            "step": None,
            "run": None,
            "task": None,
            "summary": "(unreadable line)",
            "verdict": None,
        }
    body: dict[str, Any] = obj["body"]
    step = str(obj.get("step"))
    summary, verdict = summarize_step(step, body, dock_run)
    task = body.get("task_id", body.get("task"))
    return {
        "line": line,
        "seq": obj.get("seq"),
        "ts": obj.get("ts"),
        "step": step,
        "run": obj.get("run"),
        "task": None if task is None else str(task),
        "summary": summary,
        "verdict": verdict,
    }
