"""Write the table of the shipped suite's cases in docs/evals.md from each case's own
expect.json (`kind`, `weak_check`, `why`), so the table cannot drift from the suite.

Run: `.venv/bin/python docs/make_eval_table.py` (tests/test_eval_table.py checks it).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
SUITE = DOCS.parent / "evals" / "fake-done"
OUT = DOCS / "evals.md"
HEAD = "| case | kind | why |\n|---|---|---|\n"


def rows() -> str:
    """One row a case, by name: `| `category/case` | kind | why |`."""
    lines = []
    for expect in sorted(SUITE.glob("*/*/expect.json")):
        raw = json.loads(expect.read_text())
        name = expect.parent.relative_to(SUITE).as_posix()
        kind = "fake (weak)" if raw.get("weak_check") else raw["kind"]
        why = " ".join(str(raw.get("why", "")).split()).replace("|", "\\|")
        lines.append(f"| `{name}` | {kind} | {why} |\n")
    return "".join(lines)


def render() -> str:
    """docs/evals.md with its case table made anew (the table ends at its first blank line)."""
    text = OUT.read_text()
    start = text.index(HEAD) + len(HEAD)
    end = text.index("\n\n", start) + 1
    return text[:start] + rows() + text[end:]


if __name__ == "__main__":
    OUT.write_text(render())
    sys.stdout.write(f"wrote {OUT}\n")
