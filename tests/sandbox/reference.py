"""Compare the sandbox against /bin/bash on identical copies of one test tree.

bash is only the reference inside tests; the product never runs a native shell.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

TREE: dict[str, str] = {
    "a.txt": "alpha\nbeta\ngamma\nalpha beta\n",
    "b.txt": "one\ntwo\nthree\n",
    "nums.txt": "10\n9\n100\n-3\n9\n",
    "words.txt": "pear apple\nbanana\napple\ncherry pie\nApple\n",
    "csv.txt": "name,age,city\nann,31,oslo\nbob,25,rome\ncid,40,oslo\n",
    "empty.txt": "",
    "notes.md": "# Title\n\nSome *text* here.\nHobby tier: free\nPro tier: $150\n",
    "sub/c.txt": "deep\nfile\n",
    "sub/d.log": "x=1\ny=2\n",
    "sub/inner/e.txt": "innermost\n",
    # for the text commands' battery (tests/sandbox/test_box_text.py)
    "text/dups.txt": "a\na\nA\nb\nb\nb\nc\na\n x 1\ny 1\n",
    "text/tabs.txt": "a\tb\tc\nno tabs here\n\t\nx\ty\n",
    "text/mixed.txt": "1.5\n-0\nabc\n0\n.5\n-1.25\n1.50\n007\n  3\n-\n10e2\n\n b\n\ta\n",
    "text/nonl.txt": "x\ny",
    "text/old.txt": "".join(f"line {i}\n" for i in range(1, 21)),
    "text/new.txt": "".join(
        f"line {i}\n" if i not in (3, 12) else f"LINE {i}\n" for i in range(1, 21) if i != 17
    )
    + "line 21\n",
    "text/long.txt": "ab," * 40000 + "\n" + "x" * 70000 + "\n",
}


def make_tree(root: Path) -> Path:
    """Write the reference tree under root and return root."""
    for rel, content in TREE.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    return root


@dataclass(frozen=True)
class Outcome:
    status: int
    stdout: str


def run_bash(cmdline: str, workdir: Path) -> Outcome:
    done = subprocess.run(
        ["/bin/bash", "-c", cmdline],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin", "LC_ALL": "C", "HOME": str(workdir)},
    )
    return Outcome(done.returncode, done.stdout)


def run_sandbox(cmdline: str, workdir: Path) -> Outcome:
    from groundskeeper import sandbox

    result = sandbox.run(cmdline, workdir=workdir)
    return Outcome(result.status, result.stdout)


def normalise(text: str) -> str:
    """Whitespace padding aside: strip trailing spaces and collapse runs of blanks."""
    return "\n".join(" ".join(line.split()) for line in text.splitlines())


def compare(cmdline: str, base: Path) -> tuple[Outcome, Outcome]:
    """Run cmdline in two fresh copies of the tree; return (sandbox, bash)."""
    left, right = base / "sandbox", base / "bash"
    for where in (left, right):
        if where.exists():
            shutil.rmtree(where)
        make_tree(where)
    return run_sandbox(cmdline, left), run_bash(cmdline, right)


def assert_same(cmdline: str, base: Path) -> None:
    ours, ref = compare(cmdline, base)
    assert (ours.status, normalise(ours.stdout)) == (ref.status, normalise(ref.stdout)), cmdline
