"""A module's logger that imports `logging` only when there is something to say.

An agent's hook is a fresh process at every stop (`groundskeeper hook …`), and importing
`logging` costs its cold start ~5 ms while the hook logs nothing on its usual path. A module
on that path keeps `log = Logger(__name__)` where it would keep `logging.getLogger(__name__)`:
the same logger, reached at the first message.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

__all__ = ["Logger"]


class Logger:
    """`logging.getLogger(name)`, looked up at each message (the calls take what its methods
    take; the record names the caller's line, not this class's)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def logger(self) -> logging.Logger:
        import logging

        return logging.getLogger(self.name)

    def debug(self, message: str, *args: object, **kwargs: Any) -> None:
        self.logger().debug(message, *args, stacklevel=2, **kwargs)

    def info(self, message: str, *args: object, **kwargs: Any) -> None:
        self.logger().info(message, *args, stacklevel=2, **kwargs)

    def warning(self, message: str, *args: object, **kwargs: Any) -> None:
        self.logger().warning(message, *args, stacklevel=2, **kwargs)

    def error(self, message: str, *args: object, **kwargs: Any) -> None:
        self.logger().error(message, *args, stacklevel=2, **kwargs)
