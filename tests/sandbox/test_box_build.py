"""The committed box.wasm is exactly what its C sources build to.

A reviewer should never have to trust a binary: rebuilding from groundskeeper/sandbox/box/*.c
with the pinned ziglang must give the committed bytes.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BOX = ROOT / "groundskeeper" / "sandbox" / "box.wasm"


def test_committed_box_matches_its_sources(tmp_path: Path) -> None:
    make = shutil.which("make")
    assert make is not None, "make is needed to rebuild box.wasm"
    out = tmp_path / "box.wasm"
    done = subprocess.run(
        [make, "-s", "--no-print-directory", "wasm", f"BOX_OUT={out}", f"PY={sys.executable}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    rebuilt = hashlib.sha256(out.read_bytes()).hexdigest()
    committed = hashlib.sha256(BOX.read_bytes()).hexdigest()
    assert rebuilt == committed, "box.wasm is stale: run `make wasm` and commit it"
