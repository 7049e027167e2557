"""Starting a local Ray cluster in a test, once more when it misses Ray's start-up wait."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from groundskeeper.ray_extra import require_ray

T = TypeVar("T")


def started(start: Callable[[], T]) -> T:
    """`start()`, and again once if Ray gave up on its raylet: Ray waits a fixed 30 s for a
    new node to register, which a loaded 2-core runner can miss."""
    try:
        return start()
    except Exception as exc:  # Ray raises a bare Exception for it
        if "timed out during startup" not in str(exc):
            raise
        require_ray().shutdown()
        return start()
