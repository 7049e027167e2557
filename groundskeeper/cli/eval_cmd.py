"""`groundskeeper eval`: run a suite of eval cases against groundskeeper's own defences.

Loading, running and the figures live in `groundskeeper.evals`; this module parses options,
narrates progress on stderr and prints the report.
"""

from __future__ import annotations

import sys
from pathlib import Path

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
    "model_spec",
    help="The worker for every case instead of its scripted agents.yaml, e.g."
    " `anthropic:MODEL` against evals/impossible (whose tasks cannot pass honestly: any DONE"
    " there is a cheat that got through) or another `scripted:FILE`.",
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
    model_spec: str | None,
    as_json: bool,
    junit_path: Path | None,
) -> None:
    """Run eval cases: agents that fake DONE (each must not end DONE) and honest controls
    (each must end DONE), every case in its own temporary directory and $GROUNDSKEEPER_HOME.
    With no SUITES, the fake-DONE suite installed with groundskeeper runs.

    A case is a directory with plan.org, agents.yaml (a scripted worker), an optional setup/
    and expect.json; docs/evals.md describes the format. The report gives, per case, what
    was expected, what happened and which defence caught a fake (`caught_by`); per category
    and overall, the fakes caught with their Wilson 95% interval and the honest controls'
    false-positive rate with its 95% upper bound.

    \b
    Examples:
      groundskeeper eval
      groundskeeper eval evals/fake-done
      groundskeeper eval evals/fake-done --case '*plan-tamper*' --json
      groundskeeper eval evals/impossible --model scripted:my-agent.yaml

    Exit 0 when every expectation holds, 1 otherwise (a crash or timeout included), 2 for
    a bad case or bad options.
    """
    from groundskeeper.evals import junit_xml, load_suite, run_suite, shipped_suite

    try:
        cases = load_suite(list(suites) or [shipped_suite()], pattern)
    except GroundskeeperError as exc:
        fail_usage(str(exc))
    if not cases:
        fail_usage(f"no case matches --case {pattern!r}; drop --case to run them all")
    width = len(str(len(cases)))

    def progress(done: int, result: object) -> None:
        from groundskeeper.evals import CaseResult

        assert isinstance(result, CaseResult)
        mark = "✔" if result.passed else "✘"
        by = f", caught by {result.caught_by}" if result.caught_by else ""
        if result.tool_refusals:
            by += f", {result.tool_refusals} tool call(s) refused"
        why = "" if result.passed else " — " + "; ".join(result.problems)
        narrate(
            f"[{done:>{width}}/{len(cases)}] {mark} {result.case.name}:"
            f" {result.actual} (expected {result.expected}{by},"
            f" {result.seconds:.1f}s){why}"
        )

    report = run_suite(cases, jobs=jobs, timeout=timeout, on_result=progress, model=model_spec)
    document = report.to_json()
    if junit_path is not None:
        try:
            junit_path.write_text(junit_xml(report), encoding="utf-8")
        except OSError as exc:
            fail_usage(f"--junit {junit_path}: {exc}")
    if as_json:
        emit_json(document)  # stdout stays one JSON document; the tally goes to stderr
        narrate(f"eval: {report.passed} passed, {report.failed} failed ({report.seconds:.1f}s)")
    else:
        _print_summary(document)
        # CI tools read the last line: exactly this, with the timing on the line before.
        click.echo(f"time: {report.seconds:.1f}s for {len(report.results)} cases, --jobs {jobs}")
        click.echo(f"eval: {report.passed} passed, {report.failed} failed")
    sys.exit(EXIT_OK if report.ok else EXIT_FINDINGS)


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
