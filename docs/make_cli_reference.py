"""Write docs/cli.md from the commands' own --help, so the reference cannot drift.

Run: `.venv/bin/python docs/make_cli_reference.py` (tests/test_cli_reference.py checks it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from groundskeeper.cli import main

OUT = Path(__file__).with_name("cli.md")
HEADER = """# groundskeeper command reference

Generated from each command's `--help` by `docs/make_cli_reference.py`; do not edit by hand.
Every command takes `--json`; exit codes are 0 ok, 1 findings or failures, 2 usage or
unreadable input.
"""


def help_sections(
    command: click.Command, path: list[str], parent: click.Context | None = None
) -> list[str]:
    # make_context applies the command's context_settings (e.g. `-h`) and inherits the
    # parent's, exactly as a real invocation does; a bare Context would not.
    with command.make_context(
        path[-1], [], parent=parent, resilient_parsing=True, terminal_width=100
    ) as ctx:
        sections = [f"## {' '.join(path)}\n\n```text\n{command.get_help(ctx)}\n```\n"]
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    sections.extend(help_sections(sub, [*path, name], ctx))
    return sections


def render() -> str:
    return HEADER + "\n" + "\n".join(help_sections(main, ["groundskeeper"]))


if __name__ == "__main__":
    OUT.write_text(render())
    sys.stderr.write(f"wrote {OUT}\n")
