"""The one exception tree of groundskeeper.

Exceptions are for bugs and for what cannot be recovered; everything a user can get wrong
comes back as a `Diagnostic` instead. Every exception we raise derives from one base::

    GroundskeeperError
    └── UsageError          bad input a person must fix (the CLI exits 2 and shows the message)

Modules define narrower subclasses next to the code that raises them.
"""

from __future__ import annotations


class GroundskeeperError(Exception):
    """Base of every exception groundskeeper raises on purpose."""


class UsageError(GroundskeeperError):
    """Input that cannot be used at all: a missing file, a directory, bytes that are not text.

    The message names the file (and line, where there is one) and says how to fix it.
    """
