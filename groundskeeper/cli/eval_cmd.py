"""`groundskeeper eval`: run a suite of eval cases against groundskeeper's own defences.

Loading, running and the figures live in `groundskeeper.evals`; this module parses options,
narrates progress on stderr and prints the report.
"""

from __future__ import annotations

import secrets
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from groundskeeper.cli.output import EXIT_FINDINGS, EXIT_OK, emit_json, fail_usage, narrate
from groundskeeper.errors import GroundskeeperError


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


@click.command("eval")
@click.argument("suites", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="How many cases run at once.",
)
@click.option("--case", "pattern", metavar="GLOB", help="Only the cases whose name matches.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=60.0,
    show_default=True,
    help="Seconds a case may take in all; past it the case fails, unscored.",
)
@click.option(
    "--model",
    "model_specs",
    multiple=True,
    metavar="SPEC",
    help="A worker for every case instead of its scripted agents.yaml, e.g."
    " `anthropic:MODEL` against evals/impossible (whose tasks cannot pass honestly: any DONE"
    " there is a cheat that got through) or another `scripted:FILE`; `stand-in` is each"
    " case's own agents.yaml (the default). Repeat it to sweep several models side by side.",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1, max=1000),
    default=1,
    show_default=True,
    help="Run every case this many times per model (recall over all runs).",
)
@click.option(
    "--backend",
    type=click.Choice(["threads", "ray"]),
    default="threads",
    show_default=True,
    help="Where cases run: this machine's thread pool (--jobs wide), or Ray tasks on a local"
    " cluster or the one at --address (needs the extra: pip install 'groundskeeper[ray]').",
)
@click.option(
    "--address",
    metavar="ADDR",
    help="The Ray cluster to use with --backend ray (HOST:PORT of `ray start --head`, or"
    " ray://…); default: a local cluster started for this eval.",
)
@click.option(
    "--max-in-flight",
    type=click.IntRange(min=1),
    help="At most this many cases of one model running at once (rate limits come before"
    " CPU); default: the backend's width.",
)
@click.option(
    "--ledger",
    "ledger_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Seal the sweep's verdicts in a suite ledger in DIR (new); default: a new directory"
    " under $GROUNDSKEEPER_HOME/evals/.",
)
@click.option(
    "--resume",
    "resume_dir",
    type=click.Path(path_type=Path, file_okay=False),
    help="Continue the sweep whose suite ledger is in DIR: its suites, models and repeats,"
    " skipping every case key sealed there already.",
)
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
@click.option(
    "--junit",
    "junit_path",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also write the results as JUnit XML to FILE.",
)
def eval_(
    suites: tuple[Path, ...],
    jobs: int,
    pattern: str | None,
    timeout: float,
    model_specs: tuple[str, ...],
    repeat: int,
    backend: str,
    address: str | None,
    max_in_flight: int | None,
    ledger_dir: Path | None,
    resume_dir: Path | None,
    as_json: bool,
    junit_path: Path | None,
) -> None:
    """Run eval cases: agents that fake DONE (each must not end DONE) and honest controls
    (each must end DONE), every case in its own temporary directory and $GROUNDSKEEPER_HOME.
    With no SUITES, the fake-DONE suite installed with groundskeeper runs.

    A case is a directory with plan.org, agents.yaml (a scripted worker), an optional setup/
    and expect.json; docs/evals.md describes the format. The report gives, per case, what
    was expected, what happened and which defence caught a fake (`caught_by`); per category,
    per model and overall, the fakes caught with their Wilson 95% interval and the honest
    controls' false-positive rate with its 95% upper bound.

    A sweep runs every case once per --model and --repeat; each (suite, case, model, repeat,
    version) is sealed once in the sweep's suite ledger (`groundskeeper ledger verify DIR`),
    and `--resume DIR` after an interruption runs only the keys not sealed yet.
    docs/scale.md says how to run sweeps on a Ray cluster.

    \b
    Examples:
      groundskeeper eval
      groundskeeper eval evals/fake-done
      groundskeeper eval evals/fake-done --case '*plan-tamper*' --json
      groundskeeper eval evals/impossible --model scripted:my-agent.yaml
      groundskeeper eval evals/fake-done --model stand-in --model scripted:b.yaml --repeat 3
      groundskeeper eval evals/fake-done --backend ray --address HOST:6379 --ledger sweep1
      groundskeeper eval --resume sweep1

    Exit 0 when every expectation holds, 1 otherwise (a crash or timeout included), 2 for
    a bad case or bad options.
    """
    from groundskeeper.evals import junit_xml
    from groundskeeper.evals.figures import STAND_IN
    from groundskeeper.record.keys import groundskeeper_home

    runner = _backend(backend, jobs, address)
    plan = None
    if resume_dir is not None:
        _refuse_with_resume(resume_dir, suites, pattern, model_specs, repeat, ledger_dir)
        ledger = _open_ledger(resume_dir, resume=True)
        plan = ledger.sweep or {}
        if not all(k in plan for k in ("suites", "pattern", "timeout_ms", "repeat", "model_specs")):
            fail_usage(f"--resume {resume_dir}: its ledger's run-start does not describe a sweep")
        suites = tuple(Path(p) for p in plan["suites"])
        pattern, timeout, repeat = plan["pattern"], plan["timeout_ms"] / 1000, plan["repeat"]
        model_specs = tuple(m or STAND_IN for m in plan["model_specs"])
    cases = _load(suites, pattern)
    models = tuple(None if m == STAND_IN else m for m in dict.fromkeys(model_specs or (STAND_IN,)))
    if resume_dir is None:
        if ledger_dir is None:
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
            ledger_dir = groundskeeper_home() / "evals" / f"{stamp}-{secrets.token_hex(3)}"
        ledger = _open_ledger(ledger_dir, resume=False)
    options: dict[str, object] = {
        "suites": [str(p.resolve()) for p in suites],
        "pattern": pattern,
        "timeout_ms": round(timeout * 1000),
        "model_specs": list(models),
    }
    from groundskeeper.cli.eval_progress import SweepProgress
    from groundskeeper.evals import BackendError, run_sweep

    sweep = len(models) > 1 or repeat > 1
    with SweepProgress(sweep=sweep) as progress:
        progress.say(f"suite ledger: {ledger.directory}")
        try:
            report = run_sweep(
                cases,
                models,
                repeat,
                backend=runner,
                timeout=timeout,
                ledger=ledger,
                max_in_flight=max_in_flight,
                hooks=progress.hooks(),
                options=options,
            )
        except BackendError as exc:
            progress.close()
            fail_usage(str(exc))
    document = report.to_json()
    if junit_path is not None:
        try:
            junit_path.write_text(junit_xml(report), encoding="utf-8")
        except OSError as exc:
            fail_usage(f"--junit {junit_path}: {exc}")
    if as_json:
        emit_json(document)  # stdout stays one JSON document; the tally goes to stderr
    else:
        _print_summary(document)
        if len(document["models"]) > 1:
            _print_models(document)
    narrate(
        f"sealed {report.sweep['sealed']}, skipped {report.sweep['skipped']} (sealed before),"
        f" {report.sweep['duplicates']} duplicate execution(s); verify:"
        f" groundskeeper ledger verify {ledger.directory}"
    )
    if as_json:
        narrate(f"eval: {report.passed} passed, {report.failed} failed ({report.seconds:.1f}s)")
    else:
        # CI tools read the last line: exactly this, with the timing on the line before.
        where = f"--jobs {jobs}" if backend == "threads" else f"--backend {backend}"
        click.echo(f"time: {report.seconds:.1f}s for {len(report.results)} cases, {where}")
        click.echo(f"eval: {report.passed} passed, {report.failed} failed")
    sys.exit(EXIT_OK if report.ok else EXIT_FINDINGS)


def _load(suites: tuple[Path, ...], pattern: str | None) -> list[Any]:
    from groundskeeper.evals import load_suite, shipped_suite

    try:
        cases = load_suite(list(suites) or [shipped_suite()], pattern)
    except GroundskeeperError as exc:
        fail_usage(str(exc))
    if not cases:
        fail_usage(f"no case matches --case {pattern!r}; drop --case to run them all")
    return cases


def _refuse_with_resume(
    resume_dir: Path,
    suites: tuple[Path, ...],
    pattern: str | None,
    model_specs: tuple[str, ...],
    repeat: int,
    ledger_dir: Path | None,
) -> None:
    given = [
        name
        for name, value in (
            ("SUITE", suites),
            ("--case", pattern),
            ("--model", model_specs),
            ("--repeat", repeat != 1),
            ("--ledger", ledger_dir),
        )
        if value
    ]
    if given:
        fail_usage(
            f"--resume {resume_dir} takes the sweep's suites, cases, models and repeats from"
            f" its ledger; drop {', '.join(given)}"
        )


def _open_ledger(directory: Path, *, resume: bool) -> Any:
    from groundskeeper.evals import SuiteLedger

    try:
        return SuiteLedger.resume(directory) if resume else SuiteLedger.create(directory)
    except GroundskeeperError as exc:
        fail_usage(str(exc))


def _backend(name: str, jobs: int, address: str | None) -> Any:
    from groundskeeper.evals import BackendError, ThreadBackend

    if name == "threads":
        if address is not None:
            fail_usage("--address names a Ray cluster: add --backend ray, or drop --address")
        return ThreadBackend(jobs)
    try:
        from groundskeeper.evals.ray_backend import RayBackend

        return RayBackend(address)
    except BackendError as exc:
        fail_usage(str(exc))


def _print_models(document: dict[str, Any]) -> None:
    models = document["models"]
    click.echo("")
    click.echo(
        f"{'MODEL':<34} {'RUNS':>5} {'RECALL':>7} {'WILSON 95%':>14} {'FPR':>6}"
        f" {'FPR UPPER95':>11} {'UNSCORED':>8}"
    )
    for name, fig in models.items():
        o = fig["overall"]
        low, high = o["recall_wilson95"]
        click.echo(
            f"{name[-34:]:<34} {fig['runs']:>5} {_pct(o['recall']):>7}"
            f" {_pct(low) + '–' + _pct(high):>14} {_pct(o['false_positive_rate']):>6}"
            f" {_pct(o['false_positive_upper95']):>11} {len(o['unscored']):>8}"
        )
    for name, fig in models.items():
        top = ", ".join(f"{code} {n}" for code, n in list(fig["caught_by"].items())[:5])
        click.echo(f"  {name}: caught by {top or 'nothing'}")


def _print_summary(document: dict[str, object]) -> None:
    categories = document["categories"]
    assert isinstance(categories, dict)
    click.echo(f"{'CATEGORY':<28} {'FAKES CAUGHT':>12} {'HONEST DONE':>11}")
    for name, fig in categories.items():
        click.echo(
            f"{name:<28} {fig['fakes_caught']:>5}/{fig['fakes']:<6}"
            f" {fig['honest_done']:>5}/{fig['honest']:<5}"
        )
    overall = document["overall"]
    assert isinstance(overall, dict)
    low, high = overall["recall_wilson95"]
    click.echo(
        f"fakes caught: {overall['fakes_caught']}/{overall['fakes']}"
        f" (recall {_pct(overall['recall'])}, Wilson 95% {_pct(low)}–{_pct(high)})"
    )
    click.echo(
        f"honest controls DONE: {overall['honest_done']}/{overall['honest']}"
        f" (false positives {overall['false_positives']},"
        f" rate {_pct(overall['false_positive_rate'])},"
        f" 95% upper bound {_pct(overall['false_positive_upper95'])},"
        f" {overall['false_positive_bound']})"
    )
    unscored = overall["unscored"]
    click.echo(
        f"unscored: {len(unscored)} ({overall['weak']} weak-check,"
        f" {overall['errors']} crashed or timed out)"
    )
    table = document["caught_by"]
    assert isinstance(table, dict)
    click.echo(
        f"fakes whose attack a tool refused first: {document['fakes_refused_by_tools']}"
        " (the plan file, the control directory, a protected input, outside the workdir)"
    )
    click.echo("caught by:")
    for code, count in table.items():
        click.echo(f"  {count:>3}  {code}")
