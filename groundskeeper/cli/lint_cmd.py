"""`groundskeeper lint`: rung 1 from the command line.

It owns the terminal side only (reading the argument, printing diagnostics, the exit code);
the rules live in `groundskeeper.plan.lint` and the plan model in `groundskeeper.plan.org`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from groundskeeper.cli.output import EXIT_FINDINGS, EXIT_OK, emit_json, fail_usage
from groundskeeper.diagnostics import Diagnostic, has_errors


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def summary_line(diagnostics: list[Diagnostic], filename: str) -> str:
    """`2 errors, 1 warning in plan.org` (infos are counted only when there are some)."""
    errors = sum(d.level == "error" for d in diagnostics)
    warnings = sum(d.level == "warning" for d in diagnostics)
    infos = sum(d.level == "info" for d in diagnostics)
    parts = [_count(errors, "error"), _count(warnings, "warning")]
    if infos:
        parts.append(_count(infos, "info"))
    return f"{', '.join(parts)} in {filename}"


@click.command(name="lint")
@click.argument("plan", metavar="PLAN", type=click.Path(path_type=Path))
@click.option(
    "--outline",
    is_flag=True,
    help="Also require at least one task in an active state (T001), as the author loop does.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the diagnostics as one JSON array on stdout (keys: level, scope, message, "
    "line, code).",
)
def lint(plan: Path, outline: bool, as_json: bool) -> None:
    """Check that PLAN (an org-mode plan file) coheres, before anything runs.

    \b
    Tasks are headings with a TODO keyword (from the file's #+TODO: line, default
    `TODO NEXT | DONE FAILED PARTIAL`). Their checks (:done-when: or a
    `#+begin_src sh :check` block) must parse in the sandbox shell and use only
    commands it has; :workflow: subtrees must have a producer for every :in.

    \b
    Each finding is one line, compiler-style, then a summary:
      plan.org:4: error: Summarize: input `events:list` has no upstream producer [W002]
      1 error, 0 warnings in plan.org

    \b
    Exit status: 0 no errors (warnings allowed), 1 at least one error,
    2 the file cannot be read as a plan (missing, a directory, binary, not UTF-8).

    \b
    Example:
      groundskeeper lint plan.org --json | jq '.[] | select(.level == "error")'
    """
    from groundskeeper.plan.lint import validate, validate_outline
    from groundskeeper.plan.org import PlanReadError, load_plan

    try:
        parsed = load_plan(plan)
    except PlanReadError as exc:
        fail_usage(str(exc))
    diagnostics = validate_outline(parsed) if outline else validate(parsed)
    if not outline:  # what the run itself refuses a plan for, read as the run reads it
        from groundskeeper.supervisor.task_run import verdict_states_problem

        problem = verdict_states_problem(parsed)
        if problem is not None:
            diagnostics = [*diagnostics, problem]

    if as_json:
        emit_json([d.to_json() for d in diagnostics])
    else:
        filename = str(plan)
        for diagnostic in diagnostics:
            click.echo(diagnostic.format(filename))
        click.echo(summary_line(diagnostics, filename))
    sys.exit(EXIT_FINDINGS if has_errors(diagnostics) else EXIT_OK)
