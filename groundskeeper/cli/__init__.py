"""The command line: the only part of groundskeeper that writes to the terminal.

Each command family lives in its own module and is imported only when it is called, so
`groundskeeper lint` does not pay for importing langgraph or anthropic. It parses options,
wires the packages together, narrates and prints; it decides nothing itself, and no other
package imports it. The click group is `app.main`, named here on first use: an agent's hook
(`hook_run`, started at every stop) imports this package without click.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from groundskeeper.cli.app import COMMANDS, LazyGroup, main

__all__ = ["COMMANDS", "LazyGroup", "main"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from groundskeeper.cli import app

    return getattr(app, name)
