"""The optional Ray extra (`groundskeeper[ray]`): importing `ray`, or a usage error naming the
install. Eval sweeps (`evals.ray_backend`) and many plans (`supervisor.many_plans`) use it."""

from __future__ import annotations

import os
from types import ModuleType

from groundskeeper.errors import UsageError

INSTALL_HINT = "pip install 'groundskeeper[ray]'"


def require_ray() -> ModuleType:
    """The `ray` module (usage stats off unless the user set them), or UsageError naming the
    extra to install."""
    try:
        import ray

        module: ModuleType = ray
    except ImportError:
        raise UsageError(
            f"--backend ray needs Ray, an optional extra: {INSTALL_HINT} "
            "(or drop --backend ray to run on this machine)"
        ) from None
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    return module
