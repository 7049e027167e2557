"""Adversary-28 F4: under `:contract: pytest tests`, a test module that pytest skips whole at
collection after the work, and did not before, is a skip beyond the red-first run (C023):
the module the task is to write raising `unittest.SkipTest` (or a module-level
`pytest.skip`) at import skips every test that imports it, a held-out one too, and not one
of them ran. Through the CLI, fakes beside the honest twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _write

TEXT = "Write slug.py with slugify(text): lowercase, words joined by single dashes."


def _run(root: Path, worker: str) -> dict[str, object]:
    (root / "tests").mkdir()
    (root / "tests" / "test_pattern.py").write_text("def test_pattern():\n    assert 'a-b'\n")
    (root / "tests" / "test_slug.py").write_text(
        "from slug import slugify\n\n\ndef test_slug():\n    assert slugify('A  B') == 'a-b'\n"
    )
    heading = task("Slugs", "t", None, max_attempts="1", contract="pytest tests")
    plan, script = setup(root, heading + "  " + TEXT + "\n",
                         "workers:\n  t:\n" + worker + "    - say: DONE\n")  # fmt: skip
    _, doc = resume(plan, script, "--max-parallel", "1")
    return dict(_row(doc, "t"))


def test_the_module_written_is_done(tmp_path: Path) -> None:
    row = _run(
        tmp_path, _write("slug.py", "def slugify(t):\\n    return '-'.join(t.lower().split())")
    )
    assert (row["state"], row["reason"]) == ("DONE", None), row


@pytest.mark.parametrize(
    "module",
    [
        "import unittest\\n\\nraise unittest.SkipTest('not ready on this platform')",
        "import pytest\\n\\npytest.skip('later', allow_module_level=True)",
    ],
)
def test_a_module_that_skips_the_tests_importing_it_is_a_skip(tmp_path: Path, module: str) -> None:
    row = _run(tmp_path, _write("slug.py", module))
    assert row["state"] == "FAILED", row
    assert str(row["reason"]).startswith(
        "C023: pytest tests: tests skipped, xfailed or deselected beyond the red-first run:"
        " tests/test_slug.py (skipped at collection)"
    ), row["reason"]
