"""Leaves out of a pytest run the tests the host names (`-p gk_deselect`, added by our
start-up when `GK_DESELECT` is set): a JSON array of `[absolute path, function name]`, each
test function defined in that module under that name (every parametrized case of it), and
no other — not a test whose name merely starts the same (pytest's own `--deselect` takes node
id prefixes, relative to a rootdir the host cannot know). What it leaves out is reported as
deselected, as `--deselect` reports it. The host uses it to run a check once more without
the tests a worker appended to a module that was there (`acceptance.appended_tests`).

Read once, as pytest loads its plugins from the command line (before any conftest or test
module is imported), and removed from the environment.
"""

import json
import os
from typing import Any

_NAMED = os.environ.pop("GK_DESELECT", "")
_LEFT_OUT = frozenset((str(p), str(n)) for p, n in json.loads(_NAMED)) if _NAMED else frozenset()


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    kept: list[Any] = []
    left: list[Any] = []
    for item in items:
        name = getattr(item, "originalname", None) or item.name
        place = (os.path.abspath(str(getattr(item, "path", ""))), name)
        (left if place in _LEFT_OUT else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept
