"""groundskeeper: a supervisor for LLM agents that does not take DONE on anyone's word.

Packages by concept: `plan` (rung 1), `acceptance` (rung 2), `conformance` (rung 3),
`record` (the signed ledger and what it backs), `models`, `supervisor`, `sandbox`, `evals`
and `cli`; docs/architecture.md walks a goal through them. The package never prints; only
`groundskeeper.cli` does.
"""

from groundskeeper.diagnostics import Diagnostic, Level
from groundskeeper.errors import GroundskeeperError

__version__ = "0.1.0"

__all__ = ["Diagnostic", "GroundskeeperError", "Level", "__version__"]
