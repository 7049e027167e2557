"""The optional Ray extra (`groundskeeper[ray]`): importing `ray`, or a usage error naming the
install. Eval sweeps (`evals.ray_backend`) and many plans (`supervisor.many_plans`) use it."""

from __future__ import annotations

import faulthandler
import os
from types import ModuleType
from typing import Any

from groundskeeper.errors import UsageError

INSTALL_HINT = "pip install 'groundskeeper[ray]'"


def require_ray() -> ModuleType:
    """The `ray` module (usage stats off unless the user set them), or UsageError naming the
    extra to install."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    # read as Ray loads: its native failure signal handler, installed over wasmtime's, turns a
    # guest's trap (a stack overflow, `unreachable`) into a crash of the whole process
    os.environ.setdefault("RAY_DISABLE_FAILURE_SIGNAL_HANDLER", "1")
    try:
        import ray

        module: ModuleType = ray
    except ImportError:
        raise UsageError(
            f"--backend ray needs Ray, an optional extra: {INSTALL_HINT} "
            "(or drop --backend ray to run on this machine)"
        ) from None
    return module


def connect(ray: ModuleType, **options: Any) -> None:
    """`ray.init(**options)` that leaves this process's wasm traps to wasmtime: Ray turns on
    Python's faulthandler when it is off, over the handlers wasmtime installed, and a guest's
    trap then ends the process instead of its run (seen: a check's endless recursion)."""
    was_enabled = faulthandler.is_enabled()
    ray.init(**options)
    if not was_enabled and faulthandler.is_enabled():
        faulthandler.disable()  # puts back the handlers it found: wasmtime's
