"""Terminal output shared by the commands: JSON on stdout, narration on stderr, exit codes.

Exit codes: 0 ok, 1 findings or failures, 2 usage or unreadable input.
"""

from __future__ import annotations

import json
import sys
from typing import Any, NoReturn

import click

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2


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
