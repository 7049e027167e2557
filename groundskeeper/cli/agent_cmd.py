"""`groundskeeper agent`: set an agent up so its stops go through `groundskeeper hook`."""

from __future__ import annotations

import click


@click.group("agent")
def agent() -> None:
    """Gate an agent you already run (Claude Code, Codex, Gemini CLI, Copilot, Cursor)."""
