"""What the sandbox's two Pythons are tested on (test_cpython.py, test_micropython.py): a
workdir with links pointing out of it at a secret, a workdir fenced as a running plan's, and
the helpers both files read them with."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from groundskeeper import sandbox
from groundskeeper.record.control import ControlDir
from groundskeeper.sandbox import fence


def links_out(tmp_path: Path, secret: str) -> Path:
    """tmp/outside holds the secret (outside/x, and the directory outside/dir), tmp/x too (what
    ../x names from the workdir); tmp/work is the workdir: a.txt, sub/, and link-file and
    link-dir pointing out. Returns the workdir, for each file to add its own entries."""
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "x").write_text(secret + "\n")
    (tmp_path / "x").write_text(secret + "\n")
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "a.txt").write_text("alpha\n")
    (work / "link-file").symlink_to(outside / "x")
    (work / "link-dir").symlink_to(outside / "dir")
    return work


@contextmanager
def fenced_plan(tmp_path: Path, protected: Mapping[str, str] | None = None) -> Iterator[Path]:
    """tmp/work holding a running plan (plan.org) and its control directory (a ledger line in
    it), with the fence up; `protected` files (path → text) are written and protected too."""
    root = tmp_path / "work"
    root.mkdir()
    (root / "plan.org").write_text("* TODO x\n")
    for name, text in (protected or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    control = ControlDir.for_plan(root / "plan.org").ensure()
    control.ledger.write_text("LEDGER-LINE\n")
    rules = fence.for_plan(root / "plan.org", control.root)
    if protected:
        rules = rules.union(fence.protecting(root, list(protected)))
    with fence.enforced(rules):
        yield root


def py(code: str) -> str:
    """`code` as one shell word (single-quoted), for `python3 -c` or `micropython -c`."""
    return "'" + code.replace("'", "'\\''") + "'"


def snapshot(root: Path) -> dict[str, str]:
    """Every file and directory beside and below `root` (links left out): path → text."""
    return {
        str(path.relative_to(root.parent)): path.read_text() if path.is_file() else "<dir>"
        for path in sorted(root.parent.rglob("*"))
        if not path.is_symlink()
    }


def assert_a_loop_ends_at_the_deadline(
    work: Path, python: str, seconds: int, within: float
) -> None:
    """`python -c 'while True: pass'` is stopped at a deadline of `seconds`, in under `within`
    seconds, with the line after it not run and the deadline named; the module is loaded once
    before (its first compilation is not what is timed)."""
    assert sandbox.run(f"{python} -c pass", workdir=work, timeout=30).status == 0
    started = time.monotonic()
    line = f"{python} -c 'while True: pass'; echo after"
    result = sandbox.run(line, workdir=work, timeout=seconds)
    assert time.monotonic() - started < within
    assert (result.status, result.fault, result.stdout) == (124, "deadline", "")
    assert result.stderr == (
        f"sh: deadline of {seconds}s exceeded while running '{python}': the command line was"
        " stopped\n"
    )
