"""Terminal output shared by the commands: JSON on stdout, narration on stderr, exit codes.

Exit codes: 0 ok, 1 findings or failures, 2 usage or unreadable input, 3 a run that waits for
an approval (the plan's, or a task's gate) with nothing FAILED.
"""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import click

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
EXIT_WAITING = 3


def emit_json(document: Any) -> None:
    """Write one JSON document to stdout."""
    click.echo(json.dumps(document, ensure_ascii=False, indent=2))


def narrate(message: str) -> None:
    """Progress and commentary: stderr, so stdout stays the answer."""
    click.echo(message, err=True)


def fail_usage(message: str) -> NoReturn:
    """Bad input: a clear message on stderr, exit 2, never a traceback."""
    click.echo(f"groundskeeper: error: {message}", err=True)
    sys.exit(EXIT_USAGE)
