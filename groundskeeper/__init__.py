"""groundskeeper: a supervisor for LLM agents that does not take DONE on anyone's word.

Packages by concept: `plan` (rung 1), `acceptance` (rung 2), `conformance` (rung 3),
`record` (the signed ledger and what it backs), `models`, `supervisor`, `sandbox`, `evals`
and `cli`; docs/architecture.md walks a goal through them. The package never prints; only
`groundskeeper.cli` does.
"""

from typing import TYPE_CHECKING

from groundskeeper.errors import GroundskeeperError

if TYPE_CHECKING:
    from groundskeeper.diagnostics import Diagnostic, Level

__version__ = "0.1.0"

__all__ = ["Diagnostic", "GroundskeeperError", "Level", "__version__"]


def __getattr__(name: str) -> object:
    # `Diagnostic` and `Level` load at their first use: an agent's hook (a fresh process at
    # every stop) imports the package and reports no diagnostic
    if name in ("Diagnostic", "Level"):
        from groundskeeper import diagnostics

        return getattr(diagnostics, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
