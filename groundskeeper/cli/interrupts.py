"""Ctrl-C during a run: the first SIGINT (or a process manager's SIGTERM) asks the run to stop
and seal its end; a second one ends the process at once, printing the command that continues.

It owns the signal handlers while a run is under way; what stopping means is the runner's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable, Iterator
from types import FrameType

EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report an interrupted command

STOPPING = (
    "{name}: stopping the run — its sandbox commands end now, its end is being sealed"
    " (press Ctrl-C again to exit at once)\n"
)
ABANDONED = "{name} again: exiting at once, the run's end unsealed\ncontinue with: {again}\n"


@contextlib.contextmanager
def interruptible(stop: Callable[[str], None], again: str) -> Iterator[None]:
    """While inside, SIGINT and SIGTERM call `stop(name)` once; a second signal ends the
    process at once (exit 130) after printing `again`. Outside the main thread (where
    Python cannot take signals) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[str] = []

    def handler(signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        received.append(name)
        if len(received) == 1:
            # os.write, not print: a handler may run while the main thread is printing
            os.write(2, STOPPING.format(name=name).encode())
            stop(name)
            return
        os.write(2, ABANDONED.format(name=name, again=again).encode())
        os._exit(EXIT_INTERRUPTED)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)
