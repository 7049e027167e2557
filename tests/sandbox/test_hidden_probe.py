"""A worker cannot learn whether a hidden input exists by trying to make, change, move or
read it (adversary round 2, finding 8): for a name a hide pattern covers, every tool answers
the same whether the file is there or not — the same status, output and message — and the
file is never changed. (Which names a pattern covers is no secret: the plan says so.)"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from groundskeeper import sandbox
from groundskeeper.acceptance.protect import matched_files
from groundskeeper.acceptance.toolbox import Toolbox
from groundskeeper.record.control import ControlDir
from groundskeeper.sandbox import fence as fences

PROBES = [
    "cat {p}",
    "echo x > {p}",
    "echo x >> {p}",
    "rm {p}",
    "rm -f {p}",
    "echo x > y.txt; mv y.txt {p}",
    "mv {p} moved.txt",
    "echo x > y.txt; cp y.txt {p}",
    "cp {p} copy.txt",
    "touch {p}",
    "mkdir {p}",
    "mkdir -p {p}/inner",
    "test -e {p} && echo yes || echo no",
    "[ -f {p} ] && echo yes || echo no",
    "ls {p}",
    "ls {d}",
    "ls -la {d} | wc -l",
    "stat -c %s {p}",
    "find . -name '{n}'",
    "echo {d}/*",
    "cd {d} && echo x > {n}",
    "python3 -c \"open('{p}', 'w').write('x')\"",
    "python3 -c \"import os; print(os.path.exists('{p}'))\"",
    "python3 -c \"import os; os.remove('{p}')\"",
    "python3 -c \"import os; os.rename('{p}', 'r.txt')\"",
    "python3 -c \"import os; print(sorted(os.listdir('{d}')))\"",
    "python3 -c \"import os; os.symlink('{n}', '{d}/l'); print(open('{d}/l').read())\"",
]
CASES = [("tests/expected.txt", "tests/expected.txt"), ("tests/held/", "tests/held/a.txt"),
         ("*.golden", "tests/a.golden")]  # fmt: skip


def _workdir(root: Path, hidden: str, present: bool) -> Path:
    (root / "tests" / "held").mkdir(parents=True)
    (root / "tests" / "visible.txt").write_text("visible\n")
    (root / "plan.org").write_text("* TODO x\n")
    if present:
        (root / hidden).write_text("SECRET\n")
    return root


@contextmanager
def _bound(root: Path, pattern: str) -> Iterator[None]:
    control = ControlDir.for_plan(root / "plan.org").ensure()
    fence = fences.for_plan(root / "plan.org", control.root).union(
        fences.hiding_inputs(root, matched_files(root, (pattern,)), (pattern,))
    )
    with fences.binding(fence):
        yield


def _answers(root: Path, pattern: str, hidden: str) -> list[tuple[int, str, str]]:
    directory, _, name = hidden.rpartition("/")
    found = []
    with _bound(root, pattern):
        for probe in PROBES:
            line = probe.format(p=hidden, d=directory, n=name)
            result = sandbox.run(line, workdir=root, timeout=30)
            found.append((result.status, result.stdout, result.stderr))
            for leftover in ("y.txt", "moved.txt", "copy.txt", "r.txt"):
                (root / leftover).unlink(missing_ok=True)
        toolbox = Toolbox(root, root / "plan.org")
        for tool, given in [
            ("read_file", {"path": hidden}),
            ("write_file", {"path": hidden, "content": "x"}),
            ("list_files", {"path": directory}),
        ]:
            outcome = toolbox.call(tool, given)
            found.append((int(outcome.is_error), outcome.text, str(outcome.status)))
    return found


@pytest.mark.parametrize(("pattern", "hidden"), CASES)
def test_a_hidden_name_answers_as_if_nothing_were_there(
    tmp_path: Path, pattern: str, hidden: str
) -> None:
    there = _answers(_workdir(tmp_path / "there", hidden, True), pattern, hidden)
    absent = _answers(_workdir(tmp_path / "absent", hidden, False), pattern, hidden)
    names = [*PROBES, "read_file", "write_file", "list_files"]
    differ = [(n, a, b) for n, a, b in zip(names, there, absent, strict=True) if a != b]
    assert differ == []
    assert (tmp_path / "there" / hidden).read_text() == "SECRET\n"
    assert not (tmp_path / "absent" / hidden).exists()
