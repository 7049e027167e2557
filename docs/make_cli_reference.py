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


def help_sections(command: click.Command, path: list[str]) -> list[str]:
    with click.Context(command, info_name=" ".join(path), terminal_width=100) as ctx:
        text = command.get_help(ctx)
    sections = [f"## {' '.join(path)}\n\n```text\n{text}\n```\n"]
    if isinstance(command, click.Group):
        with click.Context(command, info_name=path[-1]) as ctx:
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None and not sub.hidden:
                    sections.extend(help_sections(sub, [*path, name]))
    return sections


def render() -> str:
    return HEADER + "\n" + "\n".join(help_sections(main, ["groundskeeper"]))


if __name__ == "__main__":
    OUT.write_text(render())
    sys.stderr.write(f"wrote {OUT}\n")
