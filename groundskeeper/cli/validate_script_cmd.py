"""`groundskeeper validate-script`: judge a workflow script in the zero-tool sandbox.

It owns the terminal side only (reading the argument, printing the verdict, the exit code);
the rules and the sandbox run live in `groundskeeper.sandbox.script_validation`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from groundskeeper.cli.output import EXIT_FINDINGS, EXIT_OK, emit_json, fail_usage


@click.command(name="validate-script")
@click.argument("script", metavar="FILE.js", type=click.Path(path_type=Path))
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object {file, ok, errors, warnings, config, duration_ms} instead; "
    "each error and warning is {code, message, line}.",
)
def validate_script(script: Path, as_json: bool) -> None:
    """Check that FILE.js defines a valid `workflow`, by running it in a sandbox where every
    tool call throws.

    \b
    The script is evaluated by QuickJS in WebAssembly with no files, no
    environment, a 2 s deadline and a 32 MiB heap. Tool namespaces (Gmail,
    Sheets, Topics, … any global JavaScript does not define) throw "Tool
    calls not allowed during validation"; require, fs, std, os and process
    are not defined. The rules: `workflow` is an object with at least one
    producer or consumer; a producer has `schedule` with `interval` or
    `cron` and a `handler` function; a consumer has a non-empty `subscribe`
    array and a `prepare` function, and `mutate`/`next` are functions if
    present. A subscribed topic missing from `topics` is a warning.

    \b
    Each finding is one line, then the extracted config of a valid script:
      flow.js: error: workflow.consumers.sync.prepare must be a function … [consumer-prepare]

    \b
    Exit status: 0 valid (warnings allowed), 1 invalid, 2 the file cannot be
    read as text (missing, a directory, not UTF-8).

    \b
    Example:
      groundskeeper validate-script flow.js --json | jq .config
    """
    from groundskeeper.sandbox import SandboxError
    from groundskeeper.sandbox.script_validation import ScriptFileError, validate_script_file

    try:
        verdict = validate_script_file(script)
    except (ScriptFileError, SandboxError) as error:
        fail_usage(str(error))
    if as_json:
        emit_json({"file": str(script), **verdict.to_json()})
    else:
        for level, issues in (("error", verdict.errors), ("warning", verdict.warnings)):
            for issue in issues:
                where = f"{script}:{issue.line}" if issue.line is not None else str(script)
                click.echo(f"{where}: {level}: {issue.message} [{issue.code}]")
        if verdict.ok:
            import json

            click.echo(f"{script}: valid workflow script; config:")
            click.echo(json.dumps(verdict.config, ensure_ascii=False, indent=2))
        else:
            count = len(verdict.errors)
            click.echo(f"{script}: invalid: {count} error{'' if count == 1 else 's'}")
    sys.exit(EXIT_OK if verdict.ok else EXIT_FINDINGS)
