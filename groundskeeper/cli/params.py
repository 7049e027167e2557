"""Option types shared by the commands."""

from __future__ import annotations

import math
from typing import Any

import click

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
