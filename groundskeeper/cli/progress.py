"""Progress a person can watch: on a terminal, a live status line (done/total, running tasks,
elapsed, tokens) drawn by rich with the narration scrolling above it; elsewhere plain lines.

Everything goes to stderr, so stdout stays the answer (and stays empty under --json).
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import Any

import click


class Progress:
    """Narration plus a live line. Thread-safe: run events arrive from pool threads."""

    def __init__(self, *, live: bool | None = None) -> None:
        self._live_wanted = sys.stderr.isatty() if live is None else live
        self._lock = threading.Lock()
        self._started = time.monotonic()
        self.total = 0
        self.done = 0
        self.tokens = 0
        self.running: dict[str, None] = {}
        self._live: Any = None
        self._console: Any = None

    def __enter__(self) -> Progress:
        if self._live_wanted:
            from rich.console import Console
            from rich.live import Live

            self._console = Console(stderr=True)
            self._live = Live(
                self._line(), console=self._console, refresh_per_second=4, transient=True
            )
            self._live.__enter__()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.__exit__(exc_type, exc, tb)
            self._live = None

    def say(self, message: str) -> None:
        """A line of narration: above the live line on a terminal, a plain line elsewhere."""
        with self._lock:
            if self._console is not None:
                self._console.print(message, markup=False, highlight=False)
                self._refresh()
            else:
                click.echo(message, err=True)

    def set_total(self, total: int) -> None:
        with self._lock:
            self.total = total
            self._refresh()

    def task_started(self, task_id: str) -> None:
        with self._lock:
            self.running[task_id] = None
            self._refresh()

    def task_ended(self, task_id: str) -> None:
        with self._lock:
            self.running.pop(task_id, None)
            self.done += 1
            self._refresh()

    def add_tokens(self, count: int) -> None:
        with self._lock:
            self.tokens += count
            self._refresh()

    def status_line(self) -> str:
        elapsed = time.monotonic() - self._started
        running = ", ".join(list(self.running)[:4])
        more = len(self.running) - 4
        if more > 0:
            running += f" +{more}"
        parts = [f"{self.done}/{self.total} done" if self.total else "authoring"]
        if running:
            parts.append(f"running: {running}")
        parts.append(f"{elapsed:.1f} s")
        if self.tokens:
            parts.append(f"{self.tokens} tokens")
        return " · ".join(parts)

    def _line(self) -> Any:
        from rich.text import Text

        return Text(self.status_line(), style="dim")

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._line())
