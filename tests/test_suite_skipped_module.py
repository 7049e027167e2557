"""Adversary-19 F16: under `:contract: pytest tests`, a module the red-first run saw but
pytest skipped at collection (`pytest.importorskip("slug")` of the module the task is to
write) is no missing baseline: its tests, collected once the work is there, must pass like
red tests (C020), and may not skip (C023). A test module the red-first run never saw is
still new (C022, or the fence). Through the CLI, fakes beside the honest twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.test_cli_run import resume, setup, task
from tests.test_paths_cli import _row, _write

TEXT = "Implement slug.py with slug(s): lowercase, spaces to dashes."


def _run(root: Path, worker: str) -> dict[str, object]:
    (root / "tests").mkdir()
    (root / "tests" / "test_sanity.py").write_text("def test_sanity():\n    assert 1 + 1 == 2\n")
    (root / "tests" / "test_slug.py").write_text(
        'import pytest\n\nslug = pytest.importorskip("slug")\n\n\n'
        'def test_slug():\n    assert slug.slug("A B") == "a-b"\n'
    )
    heading = task("Slugs", "t", None, max_attempts="1", contract="pytest tests --min 2")
    plan, script = setup(root, heading + "  " + TEXT + "\n",
                         "workers:\n  t:\n" + worker + "    - say: DONE\n")  # fmt: skip
    _, doc = resume(plan, script, "--max-parallel", "1")
    return dict(_row(doc, "t"))


def test_the_module_the_skipped_tests_waited_for_is_done(tmp_path: Path) -> None:
    row = _run(tmp_path, _write("slug.py", "def slug(s):\\n    return s.lower().replace(' ', '-')"))
    assert (row["state"], row["reason"]) == ("DONE", None), row


@pytest.mark.parametrize(
    ("worker", "reason"),
    [
        # the tests run now and fail
        (
            _write("slug.py", "def slug(s):\\n    return s"),
            "C020: pytest tests --min 2: 1 of the suite's tests failed:"
            " tests/test_slug.py::test_slug",
        ),
        # the tests run now and skip themselves
        (
            _write("slug.py", "import pytest\\n\\ndef slug(s):\\n    pytest.skip('later')"),
            "C023: pytest tests --min 2: tests skipped, xfailed or deselected beyond the"
            " red-first run: tests/test_slug.py::test_slug",
        ),
        # the module still skipped: nothing ran
        ("", "C026: pytest tests --min 2: 1 tests passed, fewer than --min 2"),
    ],
)
def test_the_skipped_tests_must_now_pass(tmp_path: Path, worker: str, reason: str) -> None:
    row = _run(tmp_path, worker)
    assert row["state"] == "FAILED", row
    assert str(row["reason"]).startswith(reason), row["reason"]
