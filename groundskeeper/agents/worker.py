"""Claude Code as groundskeeper's worker: each open task of a plan is done by the real
`claude` in headless mode (`-p`, JSON out), in the task's work directory, with groundskeeper's
settings injected, and decided by groundskeeper, never by its word.

It owns one task's session: the settings (a Stop hook that is that task's check through
`groundskeeper hook claude-code --task ID`, a PostToolUse hook that seals each tool call),
the prompt, the launch, the usage it reports (sealed as a `model-call`), and the verdict:
the task's check run again after the session, sealed and written into the headline. Attempts
are the hook's blocks; `--max-blocks` ends a task that cannot pass. The author graph is not
involved; only the worker differs. It never prints.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from groundskeeper.acceptance.check import SealedCheck, run_check
from groundskeeper.acceptance.protect import file_sha256
from groundskeeper.agents.gate import (
    HookRecord,
    backed_by,
    beyond_check,
    check_body,
    done_again,
    hides_inputs,
    open_plan_record,
    open_tasks,
    seal_fingerprint,
    verified_entries,
    verified_steps,
)
from groundskeeper.agents.seal import Fingerprint, fingerprint, held_inputs
from groundskeeper.agents.setup import _write_json, claude_code_settings
from groundskeeper.plan.edit import state_edited, write_atomically
from groundskeeper.plan.org import Plan, load_plan, parse_plan
from groundskeeper.plan.spec import TaskSpec
from groundskeeper.record.control import ControlDir
from groundskeeper.record.ledger import excerpt

__all__ = ["TaskOutcome", "work_plan"]

PROMPT = """You are working on one task of a plan; groundskeeper decides when it is done.

Task: {title}
{body}
It is done when this acceptance check passes (run by groundskeeper in its sandbox, in {root}):

{check}

Do the work in {root}. Do not edit the plan, its checks, or groundskeeper's files. When the
check would pass, say DONE."""


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    task_id: str
    state: str
    blocks: int
    reason: str
    session_id: str | None
    cost_usd: str | None

    def to_json(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "state": self.state,
            "blocks": self.blocks,
            "reason": self.reason,
            "session_id": self.session_id,
            "cost_usd": self.cost_usd,
        }


def _settings(plan: Path, task: TaskSpec, max_blocks: int, workdir: Path | None) -> Path:
    control = ControlDir.for_plan(plan).ensure()
    protected, hidden = held_inputs(load_plan(plan), (workdir or plan.parent).resolve())
    settings = claude_code_settings(plan, max_blocks, workdir, protected, hidden)
    for event, groups in settings["hooks"].items():
        for group in groups:
            for hook in group["hooks"]:
                hook["command"] = hook["command"].replace(
                    " hook claude-code ", f" hook claude-code --task {_quote(task.task_id)} ", 1
                )
        settings["hooks"][event] = groups
    # the hook's own words: after the test of its interpreter, before the fallback
    stop = settings["hooks"]["Stop"][0]["hooks"][0]["command"].split("}; ", 1)[-1]
    stop = stop.split(" || ")[0]
    # the Stop's command line, named for its own event (`--event`: never guessed)
    record_tool = stop.replace(" --event Stop", " --event PostToolUse")
    assert record_tool != stop, stop
    settings["hooks"]["PostToolUse"] = [
        {
            "matcher": "*",
            "hooks": [
                {
                    "type": "command",
                    "timeout": 60,
                    "command": record_tool + " --record-tool || true",
                }
            ],
        }
    ]
    path = control.path / f"claude-code.worker.{_safe(task.task_id)}.settings.json"
    _write_json(path, settings)
    return path


def _quote(text: str) -> str:
    return shlex.quote(text)


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "_" for c in text)[:64]


def work_plan(
    plan: Path,
    binary: str,
    args: Sequence[str],
    *,
    max_blocks: int,
    workdir: Path | None = None,
    timeout: float = 1800.0,
    env: dict[str, str] | None = None,
) -> list[TaskOutcome]:
    """Run every open leaf task of `plan` through Claude Code, in document order."""
    plan = plan.absolute()
    root = (workdir or plan.parent).resolve()
    outcomes: list[TaskOutcome] = []
    loaded = load_plan(plan)
    control, _ = open_plan_record(plan)
    # the tasks a run would work on, in the order it judges them (`gate.open_tasks`): a DONE
    # the ledger does not back is worked on again, a parent's own check after its children
    tasks = open_tasks(loaded, backed_by(verified_entries(control, plan)))
    # the plan and its inputs as the work starts: every later seal is this one with
    # groundskeeper's own headline edits, never the file as a session left it
    work = Work(fingerprint(loaded, root), loaded)
    seal_fingerprint(plan, work.verified, "worker start")
    for task in tasks:
        if load_plan(plan).text != work.expected.text:
            outcomes.append(
                TaskOutcome(
                    task.task_id,
                    task.heading.keyword or "",
                    0,
                    f"not run: {plan.name} changed during an earlier task's session; inspect it"
                    " (`groundskeeper agent seal` accepts it) and run again",
                    None,
                    None,
                )
            )
            continue
        outcomes.append(
            _work_task(plan, root, task, binary, args, max_blocks, workdir, timeout, env, work)
        )
    return outcomes + _final_sweep(plan, root, work, outcomes)


def _final_sweep(
    plan: Path, root: Path, work: Work, outcomes: list[TaskOutcome]
) -> list[TaskOutcome]:
    """As a run ends (`supervisor.phases.final_sweep`): every DONE task's check once more —
    made DONE by this command or carried from before — since a later task's session may have
    undone an earlier one's work. One that no longer passes is FAILED, sealed and written;
    its outcome replaces the earlier one (the demoted tasks are returned; the earlier
    outcomes are updated in place)."""
    current = load_plan(plan)
    done = done_again(current)
    if not done:
        return []
    control, key = open_plan_record(plan)
    record = HookRecord(control, key, {"kind": "worker-sweep", "plan": str(plan)})
    withhold = hides_inputs(current)
    demoted: list[tuple[TaskSpec, str]] = []
    for task in done:
        assert task.check is not None
        result = run_check(SealedCheck.seal(task.check), root)
        record.seal("check", check_body(task.task_id, 0, result, phase="sweep", withhold=withhold))
        if not result.passed:
            why = f"no longer passes at the final sweep: {result.code}: {result.reason}"
            demoted.append((task, why))
            record.seal(
                "state",
                {"task_id": task.task_id, "from": "DONE", "to": "FAILED",
                 "verdict_sha256": task.verdict_sha256},
            )  # fmt: skip
    record.seal(
        "run-end",
        {
            "ok": not demoted,
            "states": [{"task_id": t.task_id, "state": "FAILED"} for t, _ in demoted],
            "tampers": 0,
        },
    )
    added: list[TaskOutcome] = []
    for task, why in demoted:
        if load_plan(plan).text == work.expected.text:
            edited = parse_plan(state_edited(work.expected, task.task_id, "FAILED"), plan)
            write_atomically(plan, edited.text)
            work.expected = edited
            seal_fingerprint(plan, work.verified.with_plan(edited), "worker sweep")
        else:
            why += f"; {plan.name} changed: FAILED is sealed in the ledger, not written"
        at = next((i for i, o in enumerate(outcomes) if o.task_id == task.task_id), None)
        if at is None:
            added.append(TaskOutcome(task.task_id, "FAILED", 0, why, None, None))
        else:
            outcomes[at] = replace(outcomes[at], state="FAILED", reason=why)
    return added


@dataclass
class Work:
    """What `work_plan` verified as it started, and the plan text it last wrote itself."""

    verified: Fingerprint
    expected: Plan


def _work_task(
    plan: Path,
    root: Path,
    task: TaskSpec,
    binary: str,
    args: Sequence[str],
    max_blocks: int,
    workdir: Path | None,
    timeout: float,
    env: dict[str, str] | None,
    work: Work,
) -> TaskOutcome:
    if task.check is None:
        return TaskOutcome(
            task.task_id,
            task.heading.keyword or "",
            0,
            "no acceptance check: nothing could confirm it",
            None,
            None,
        )
    more = beyond_check(task)
    if more:
        # `changed`, `ran` and evidence are judged on the record of what the worker did; a
        # session's tool calls are what the client reported (PostToolUse), not what
        # groundskeeper saw, so nothing of them can hold a verdict
        return TaskOutcome(
            task.task_id,
            task.heading.keyword or "",
            0,
            f"not run: judged on {' and '.join(more)}, which only `groundskeeper run` confirms"
            " (a session's tool calls are the client's report, not groundskeeper's record) [H001]",
            None,
            None,
        )
    settings = _settings(plan, task, max_blocks, workdir)
    guarded = ((str(settings.absolute()), file_sha256(settings)),)
    now = replace(work.verified.with_plan(work.expected), guarded=guarded)
    seal_fingerprint(plan, now, f"worker {task.task_id}")
    sealed = SealedCheck.seal(task.check)
    prompt = PROMPT.format(
        title=task.title, body=task.heading.body.strip(), root=root, check=sealed.text.strip()
    )
    command = [
        binary,
        "--settings",
        str(settings),
        "--setting-sources",
        "",
        "-p",
        prompt,
        "--output-format",
        "json",
        *args,
    ]
    started = time.monotonic()
    try:
        proc = subprocess.run(
            command, cwd=root, env=env, capture_output=True, text=True, timeout=timeout
        )
        output = proc.stdout
    except (OSError, subprocess.TimeoutExpired) as exc:
        output = ""
        error: str | None = f"{type(exc).__name__}: {exc}"
    else:
        error = None if proc.stdout.strip() else f"claude exited {proc.returncode}: {proc.stderr}"
    latency = int((time.monotonic() - started) * 1000)
    result = _parse(output)
    session = result.get("session_id") if isinstance(result.get("session_id"), str) else None
    control, key = open_plan_record(plan)
    steps = verified_steps(control, plan)
    blocks = sum(
        1
        for s, b in steps
        if s == "hook-decision" and b.get("session_id") == session and b.get("decision") == "block"
    )
    record = HookRecord(
        control,
        key,
        {
            "kind": "worker",
            "worker": "claude-code",
            "task_id": task.task_id,
            "session_id": session,
            "plan": str(plan),
        },
    )
    found = result.get("usage")
    usage: dict[str, Any] = found if isinstance(found, dict) else {}
    record.seal(
        "model-call",
        {
            "task_id": task.task_id,
            "attempt": blocks + 1,
            "purpose": "worker",
            "model": _model(result),
            "stop_reason": result.get("stop_reason"),
            "error": excerpt(error) if error else None,
            "input_tokens": int(usage.get("input_tokens") or 0),
            "output_tokens": int(usage.get("output_tokens") or 0),
            "cache_read_tokens": int(usage.get("cache_read_input_tokens") or 0),
            "cache_write_tokens": int(usage.get("cache_creation_input_tokens") or 0),
            "latency_ms": latency,
            "request_id": None,
            "retries": 0,
            "num_turns": int(result.get("num_turns") or 0),
            "cost_usd": _cost(result),
        },
    )
    # the verdict is the check, run again now: never the session's own last word
    verdict = run_check(sealed, root)
    withhold = hides_inputs(load_plan(plan))
    record.seal(
        "check", check_body(task.task_id, blocks + 1, verdict, phase="worker", withhold=withhold)
    )
    state = "DONE" if verdict.passed else "FAILED"
    # under the task's rules (`TaskSpec.verdict_sha256`): all of them are its check here (a
    # task judged on more is not worked: H001), so its DONE backs the headline (adv24 O2)
    before = task.heading.keyword or ""
    body = {
        "task_id": task.task_id,
        "from": before,
        "to": state,
        "verdict_sha256": task.verdict_sha256,
    }
    record.seal("state", body)
    record.seal(
        "run-end",
        {"ok": verdict.passed, "states": [{"task_id": task.task_id, "state": state}], "tampers": 0},
    )
    reason = "" if verdict.passed else f"{verdict.code}: {verdict.reason}"
    if load_plan(plan).text == work.expected.text:
        edited = parse_plan(state_edited(work.expected, task.task_id, state), plan)
        write_atomically(plan, edited.text)
        work.expected = edited
        seal_fingerprint(plan, work.verified.with_plan(edited), f"worker {task.task_id} verdict")
    else:  # the session changed the plan: nothing of it is sealed or written over
        reason = (
            f"{reason}; {plan.name} changed during the session: {state} is sealed in the"
            " ledger, not written into the headline"
        ).lstrip("; ")
    if error:
        reason = f"{reason} ({error})".strip()
    return TaskOutcome(task.task_id, state, blocks, reason, session, _cost(result))


def _parse(output: str) -> dict[str, Any]:
    for line in reversed(output.strip().splitlines()):
        try:
            found = json.loads(line)
        except ValueError:
            continue
        if isinstance(found, dict):
            return found
    return {}


def _model(result: dict[str, Any]) -> str:
    models = result.get("modelUsage")
    return ",".join(sorted(models)) if isinstance(models, dict) else ""


def _cost(result: dict[str, Any]) -> str | None:
    # no floats in the ledger: the cost as the text Claude Code printed
    cost = result.get("total_cost_usd")
    return None if cost is None else str(cost)
