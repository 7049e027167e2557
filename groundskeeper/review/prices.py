"""A user's prices file for the report's cost estimate: per model, what a million tokens of
each kind cost. Prices are not in the signed record, so the page calls the result an
estimate; without a prices file it shows no cost at all.

    # prices.yaml — per million tokens, in whatever currency you think in
    anthropic:claude-sonnet-4-5:
      input_tokens: 3.0
      output_tokens: 15.0
      cache_read_tokens: 0.3
      cache_write_tokens: 3.75

It owns reading that file; a bad one is a UsageError naming the file, the line when known,
and the fix.
"""

from __future__ import annotations

import math
from pathlib import Path

import yaml

from groundskeeper.errors import UsageError
from groundskeeper.review.tasks import TOKEN_FIELDS

Prices = dict[str, dict[str, float]]


def read_prices(path: Path) -> Prices:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the prices file: {exc}") from exc
    try:
        loaded = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise UsageError(
            f"{where}: not YAML or JSON ({getattr(exc, 'problem', exc)}); write one "
            "`MODEL: {input_tokens: N, output_tokens: N}` mapping per model"
        ) from exc
    if not isinstance(loaded, dict) or not loaded:
        raise UsageError(
            f"{path}: expected a mapping of model names to prices per million tokens, e.g. "
            "`anthropic:claude-sonnet-4-5: {input_tokens: 3.0, output_tokens: 15.0}`"
        )
    prices: Prices = {}
    for model, entry in loaded.items():
        if not isinstance(entry, dict):
            raise UsageError(
                f"{path}: model {model!r}: expected a mapping such as "
                "`{input_tokens: 3.0, output_tokens: 15.0}`"
            )
        unknown = sorted(str(k) for k in entry if k not in TOKEN_FIELDS)
        if unknown:
            raise UsageError(
                f"{path}: model {model!r}: unknown price {', '.join(unknown)}; the kinds are "
                f"{', '.join(TOKEN_FIELDS)}"
            )
        priced: dict[str, float] = {}
        for kind, value in entry.items():
            number = value if isinstance(value, int | float) and not isinstance(value, bool) else -1
            if not math.isfinite(number) or number < 0:
                raise UsageError(
                    f"{path}: model {model!r}: {kind} must be a number ≥ 0 (per million "
                    f"tokens), not {value!r}"
                )
            priced[str(kind)] = float(number)
        prices[str(model)] = priced
    return prices
