"""ledger/make_vectors.py, loaded as a module: the generator of the golden vectors and the
project's one independent reading of ledger/SPEC.md (spec_sign_line, spec_mth,
spec_checkpoint), which the tests also use to forge attacks without the product's code."""

from __future__ import annotations

import functools
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

LEDGER_DIR = Path(__file__).resolve().parent.parent / "ledger"


@functools.cache
def make_vectors() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_vectors", LEDGER_DIR / "make_vectors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module
