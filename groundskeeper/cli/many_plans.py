"""`resume PLAN…` and `run --resume DIR…` given several plans: each plan's own command in its
own process (`supervisor.many_plans`), the same options forwarded, a line per plan as it
ends, one JSON document of every plan's report."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, NoReturn

import click

from groundskeeper.cli.output import emit_json, fail_usage, narrate
from groundskeeper.errors import UsageError

# options of the fan-out itself, never forwarded to a plan's process
OWN = frozenset({"jobs", "backend", "address", "as_json"})


def forwarded(ctx: click.Context, skip: frozenset[str]) -> list[str]:
    """The command line's options as the plan's own process is to get them (the values
    click resolved, environment variables included), except `skip` and the fan-out's own."""
    args: list[str] = []
    command = ctx.command
    for param in command.params:
        if not isinstance(param, click.Option) or param.name in skip | OWN:
            continue
        value = ctx.params.get(param.name or "")
        if value is None or value == () or (param.is_flag and not value):
            continue
        flag = max(param.opts, key=len)
        if param.is_flag:
            args.append(flag)
        elif isinstance(value, tuple):
            for item in value:
                args += [flag, str(item)]
        else:
            args += [flag, str(value)]
    return args


def run_many(
    plans: list[tuple[str, list[str]]],
    *,
    jobs: int,
    backend: str,
    address: str | None,
    as_json: bool,
) -> NoReturn:
    """Run each (label, groundskeeper args) as its own process; exit with the worst code."""
    from groundskeeper.supervisor.many_plans import (
        PlanOutcome,
        PlanProcess,
        overall_exit,
        run_plans,
        run_plans_on_ray,
    )

    cwd = str(Path.cwd())
    processes = [PlanProcess(label, (*args, "--json"), cwd) for label, args in plans]
    width = len(str(len(processes)))
    ended = 0

    def on_end(outcome: PlanOutcome) -> None:
        nonlocal ended
        ended += 1
        mark = "✔" if outcome.exit_code == 0 else "✘"
        narrate(
            f"[{ended:>{width}}/{len(processes)}] {mark} {outcome.plan}: exit {outcome.exit_code}"
            f"{_tally(outcome.report)} ({outcome.seconds:.1f}s)"
            + (f" — {outcome.error}" if outcome.error else "")
        )

    narrate(f"{len(processes)} plans, each in its own process ({_where(backend, jobs)})")
    try:
        if backend == "ray":
            outcomes = run_plans_on_ray(processes, address, on_end)
        else:
            if address is not None:
                fail_usage("--address names a Ray cluster: add --backend ray, or drop --address")
            outcomes = run_plans(processes, jobs, on_end)
    except UsageError as exc:
        fail_usage(str(exc))
    code = overall_exit(outcomes)
    if as_json:
        emit_json({"ok": code == 0, "exit_code": code, "plans": [o.to_json() for o in outcomes]})
    else:
        ok = sum(o.exit_code == 0 for o in outcomes)
        click.echo(f"plans: {ok} ok, {len(outcomes) - ok} not (exit {code})")
    sys.exit(code)


def _where(backend: str, jobs: int) -> str:
    return "as Ray tasks" if backend == "ray" else f"{jobs} at a time"


def _tally(report: dict[str, Any] | None) -> str:
    if report is None:
        return ""
    counts: dict[str, int] = {}
    for task in report.get("tasks") or []:
        if isinstance(task, dict):
            state = str(task.get("state"))
            counts[state] = counts.get(state, 0) + 1
    return " · " + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) if counts else ""


PLAN_OPTIONS = [
    click.option(
        "--jobs",
        type=click.IntRange(min=1),
        default=2,
        show_default=True,
        help="With several plans: how many run at once, each in its own process.",
    ),
    click.option(
        "--backend",
        type=click.Choice(["local", "ray"]),
        default="local",
        show_default=True,
        help="With several plans: run their processes here, or as Ray tasks (no engine"
        " retries; needs pip install 'groundskeeper[ray]' and the plans on a filesystem every"
        " node sees).",
    ),
    click.option(
        "--address",
        metavar="ADDR",
        help="The Ray cluster for --backend ray (default: a local one started for the run).",
    ),
]


def plan_options(command: Any) -> Any:
    """`--jobs`, `--backend` and `--address` for commands that take several plans."""
    for option in reversed(PLAN_OPTIONS):
        command = option(command)
    return command
