"""`groundskeeper sh`: run one command line in the WASM shell from the terminal.

It owns the terminal side only (options, printing, the exit status); the shell itself is
`groundskeeper.sandbox`.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from groundskeeper.cli.output import emit_json, fail_usage
from groundskeeper.cli.params import Seconds


def _not_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _list_commands(as_json: bool) -> None:
    from groundskeeper.sandbox.registry import available_synopses

    synopses = available_synopses()
    if as_json:
        emit_json(
            {
                "commands": [
                    {"name": name, "summary": s.summary, "options": list(s.options)}
                    for name, s in synopses.items()
                ]
            }
        )
        return
    width = max(map(len, synopses))
    for name, synopsis in synopses.items():
        options = f"; options: {', '.join(synopsis.options)}" if synopsis.options else ""
        click.echo(f"{name:<{width}}  {synopsis.summary}{options}")


@click.command(name="sh")
@click.argument("cmd", metavar="-- 'CMD'", nargs=-1)
@click.option(
    "--workdir",
    type=click.Path(path_type=Path),
    default=Path("."),
    show_default=True,
    help="The only directory the commands can see.",
)
@click.option(
    "--read-only", is_flag=True, help="Mount the workdir read-only (as acceptance checks do)."
)
@click.option(
    "--timeout",
    type=Seconds(),
    default=10.0,
    show_default=True,
    help="Wall-clock deadline in seconds for the whole command line.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON object {status, stdout, stderr, duration_ms, fault} instead "
    "(with --commands: {commands: [{name, summary, options}]}).",
)
@click.option(
    "--commands",
    "list_commands",
    is_flag=True,
    help="List the commands the sandbox has, each with a synopsis and its options; run nothing.",
)
def sh(
    cmd: tuple[str, ...],
    workdir: Path,
    read_only: bool,
    timeout: float,
    as_json: bool,
    list_commands: bool,
) -> None:
    """Run CMD in the sandbox shell, where every command is a WebAssembly program.

    \b
    The grammar: pipes |, lists ; && || !, VAR=value, $VAR ${VAR} $?,
    ${VAR:-x} ${VAR-x} ${VAR:=x} ${VAR:+x} ${#VAR} ${VAR#p} ${VAR##p} ${VAR%p}
    ${VAR%%p}, $(…) and backticks, $((…)) and ((…)), quotes, backslashes,
    # comments, globs * ? [..], redirections > >> < 2> 2>&1 (to files inside
    the workdir, or /dev/null), here-docs <<EOF <<'EOF' <<-EOF and <<<,
    if/elif/else, for/while/until with break/continue, case, { …; } and
    ( … ) groups (redirections apply to them too), [[ … ]]. Functions, &
    and eval are refused with a message saying what to write instead.
    Builtins: cd (inside the workdir), :, exit, export, read, break,
    continue, set (-e, -u, -o pipefail: on, never off). xargs and find
    -exec run their commands as stages of their own. Other commands come
    from box.wasm and CPython (`--commands` lists them all with their
    options); anything else answers 127 "command not found (not in the
    sandbox)", naming the closest command there is.
    Several CMD words are joined with spaces. The whole grammar:
    docs/shell.md.

    \b
    Limits: the deadline, fuel, 256 MiB memory a command, 8 MiB of stdout
    and of stderr, 100000 loop iterations and 10000 commands started by
    xargs/find -exec a line. Hitting one stops the line with status 124
    (deadline, fuel, loop steps, fan-out), 125 (memory, output) or 134 (a
    crash), and a message naming it. Fuel meters box.wasm's commands,
    micropython and QuickJS, a backstop behind the deadline; python3
    (CPython) is not fuel-metered (metering cost 20-30% of every python3
    run): the deadline ends it, through epoch interruption and a timer of
    its own, beside its memory, output and disk limits.

    \b
    Exit status: the command line's own status; 2 for a syntax error or
    an unusable workdir.

    \b
    Examples:
      groundskeeper sh -- 'grep -c Hobby notes.md'
      groundskeeper sh --workdir run1 --read-only --json -- 'test -s out.txt && echo ok'
      groundskeeper sh --commands
    """
    from groundskeeper.sandbox import SandboxError, run

    if list_commands:
        if cmd:
            fail_usage("--commands lists the commands and runs nothing; drop CMD or --commands")
        _list_commands(as_json)
        return
    if not cmd:
        fail_usage("missing CMD; write: groundskeeper sh -- 'CMD' (or --commands to list them)")

    if not workdir.is_dir():
        fail_usage(f"--workdir {workdir} is not a directory; pass an existing directory")
    if _not_utf8(str(workdir.resolve())):
        fail_usage(
            f"--workdir {workdir!s}: the path is not valid UTF-8, which WASI cannot open;"
            " use a directory whose path is UTF-8"
        )
    cmdline = " ".join(cmd)
    if _not_utf8(cmdline):
        fail_usage("CMD is not valid UTF-8 text; the sandbox shell takes UTF-8 command lines")
    try:
        result = run(cmdline, workdir=workdir, read_only=read_only, timeout=timeout)
    except SandboxError as error:
        fail_usage(str(error))
    if as_json:
        emit_json(
            {
                "status": result.status,
                "stdout": result.stdout,
                "stderr": result.stderr,
                "duration_ms": result.duration_ms,
                "fault": result.fault,
            }
        )
    else:
        click.echo(result.stdout, nl=False)
        click.echo(result.stderr, nl=False, err=True)
    # a run the sandbox stopped never reads as success, whatever status it carries
    sys.exit(result.status if result.status != 0 or result.fault is None else 1)
