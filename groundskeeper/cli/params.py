"""Option types and options shared by the commands."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

_F = TypeVar("_F", bound=Callable[..., Any])

MAX_SECONDS = 24 * 3600.0  # beyond a day a deadline is not a limit any more


class Seconds(click.ParamType[float]):
    """A positive, finite number of seconds, at most a day.

    click's FloatRange lets NaN through (every comparison with it is false) and accepts inf;
    a deadline must be a real one.
    """

    name = "SECONDS"

    def __init__(self, minimum: float = 0.0) -> None:
        self.minimum = minimum

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        if math.isnan(seconds) or not self.minimum < seconds <= MAX_SECONDS:
            self.fail(
                f"{value!r} is not a number of seconds in ({self.minimum:g}, {MAX_SECONDS:g}]",
                param,
                ctx,
            )
        return seconds


_SIZE = re.compile(r"([0-9]{1,18})([KMG]?)(?:i?B)?", re.IGNORECASE)
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


class ByteSize(click.ParamType[int]):
    """A positive whole number of bytes: plain (`1048576`) or with a binary unit (`512K`,
    `64M`, `1G`; `MiB`/`MB` read the same)."""

    name = "SIZE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
        match = _SIZE.fullmatch(str(value).strip())
        size = int(match.group(1)) * _UNITS[match.group(2).upper()] if match else 0
        if size <= 0:
            self.fail(
                f"{value!r} is not a size: a positive number of bytes, or one with K, M or G"
                " (as 512M or 1G)",
                param,
                ctx,
            )
        return size


def trusted_key_option(detail: str) -> Callable[[_F], _F]:
    """`--key FILE`, repeatable, into `key_files`: public keys trusted besides
    $GROUNDSKEEPER_HOME's. `detail` ends the help's first sentence, each command its own."""
    return click.option(
        "--key",
        "key_files",
        multiple=True,
        type=click.Path(path_type=Path),
        help=f"Also trust the public key(s) in FILE{detail}. Repeatable.",
    )
