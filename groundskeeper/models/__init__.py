"""The models: the `Model` interface (`model`), the scripted backend (`scripted`), Claude
through the anthropic SDK (`claude`) and scripted judges (`judge_script`). It owns turning a
`--model` spec into a backend; it must not import the acceptance stages, the supervisor or
the CLI.
"""

from __future__ import annotations

import os
from pathlib import Path

from groundskeeper.models.model import Model, ModelUnavailableError
from groundskeeper.models.scripted import ScriptedModel

__all__ = ["load_model"]


def load_model(spec: str, *, retries: int | None = None, timeout: float | None = None) -> Model:
    """Resolve a `--model` spec: `scripted:FILE` or `anthropic:MODEL`.

    `retries` and `timeout` apply to the Anthropic backend (None: its defaults); the SDK is
    imported only here, for an `anthropic:` spec. ModelUnavailableError before anything runs
    when the spec cannot be used (`ANTHROPIC_API_KEY` unset included)."""
    kind, sep, rest = spec.partition(":")
    if not sep or not rest:
        raise ModelUnavailableError(
            f"--model {spec!r}: expected `scripted:FILE` or `anthropic:MODEL`"
        )
    if kind == "scripted":
        return ScriptedModel.from_file(Path(rest))
    if kind == "anthropic":
        if not os.environ.get("ANTHROPIC_API_KEY"):
            raise ModelUnavailableError(
                f"--model {spec!r}: ANTHROPIC_API_KEY is not set; export your API key as"
                " ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL to reach another endpoint)"
            )
        from groundskeeper.models.claude import ClaudeModel  # the SDK takes ~2 s to import

        return ClaudeModel.from_environment(rest, retries=retries, timeout=timeout)
    raise ModelUnavailableError(
        f"--model {spec!r}: unknown backend {kind!r}; expected `scripted` or `anthropic`"
    )
