"""The cyclic garbage collector while a hook process starts: off, then back on before a
check runs.

A hook call is a fresh process at every stop, and its imports make ~100,000 objects that live
as long as it does; the collector, walking young ones again each time 700 more piled up,
was a few per cent of the call's own time. `hold` turns it off for the start-up (`python -m
groundskeeper`: the imports, the ledger's verification, the decision's reading of the plan);
`release`, called before a check runs in the sandbox (`agents.gate`), sets everything made so
far aside (`gc.freeze`: never walked again, never freed; the process ends soon after) and
turns it back on, looking after `YOUNG` new objects rather than 700, so a long check is
collected as any process is. A command that is not a hook gets it back as it was (`resume`),
and a process that never held it (a test's, `agent run`'s) is left exactly as it was.
"""

from __future__ import annotations

import gc

#: New objects the collector lets pile up before it looks, once a check runs (as `cli.app`'s
#: commands have it; CPython's default is 700).
YOUNG = 10_000

_HELD: dict[str, tuple[int, int, int] | None] = {"threshold": None}


def hold() -> None:
    """The collector off, if it was on (a process that had turned it off keeps it so)."""
    if gc.isenabled():
        gc.disable()
        _HELD["threshold"] = gc.get_threshold()


def resume() -> None:
    """The collector as it was before `hold`, nothing set aside."""
    if _HELD["threshold"] is not None:
        _HELD["threshold"] = None
        gc.enable()


def release() -> None:
    """The collector back on, what start-up made set aside and `YOUNG` new objects between
    its looks; nothing unless `hold` turned it off."""
    previous = _HELD["threshold"]
    if previous is not None:
        _HELD["threshold"] = None
        gc.freeze()
        gc.set_threshold(YOUNG, *previous[1:])
        gc.enable()
