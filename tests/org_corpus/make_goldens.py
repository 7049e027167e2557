"""Regenerate the org corpus goldens: the scripted run's output for every plan, then Emacs's
view of each plan before and after it (`emacs -Q --batch -l org_view.el`).

    make org-goldens        # installs emacs-nox from Debian packages when emacs is missing
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.org_corpus.corpus import AFTER, GOLDEN, ORG_VIEW, corpus_plans, scripted_run


def _normalised(raw: Path) -> str:
    data = json.loads(raw.read_text(encoding="utf-8"))
    return json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True) + "\n"


def main() -> int:
    AFTER.mkdir(exist_ok=True)
    GOLDEN.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        os.environ["GROUNDSKEEPER_HOME"] = str(root / "home")
        pairs: list[tuple[Path, Path, Path]] = []
        for plan in corpus_plans():
            workdir = root / plan.stem
            workdir.mkdir()
            after = AFTER / plan.name
            after.write_bytes(scripted_run(plan, workdir))
            pairs.append((plan, root / f"{plan.stem}.json", GOLDEN / f"{plan.stem}.json"))
            pairs.append(
                (after, root / f"{plan.stem}.after.json", GOLDEN / f"{plan.stem}.after.json")
            )
        args = [str(p) for source, raw, _ in pairs for p in (source, raw)]
        subprocess.run(["emacs", "-Q", "--batch", "-l", str(ORG_VIEW), *args], check=True)
        for _, raw, golden in pairs:
            golden.write_text(_normalised(raw), encoding="utf-8")
    print(f"{len(pairs)} goldens in {GOLDEN}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
