"""groundskeeper: a supervisor for LLM agents that does not take DONE on anyone's word.

The package owns the plan model, the three rungs (plan lint, sandboxed acceptance, component
conformance), the runner and the signed ledger. It never prints; only `groundskeeper.cli` does.
"""

from groundskeeper.diagnostics import Diagnostic, Level
from groundskeeper.errors import GroundskeeperError

__version__ = "0.1.0"

__all__ = ["Diagnostic", "GroundskeeperError", "Level", "__version__"]
