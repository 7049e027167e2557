"""The sandbox's write journal (`groundskeeper.sandbox.writes`): every way a command line can
change a file in the workdir is noted under its real name — the interpreter's redirections and
each command's own opens, renames (both names, a moved directory's files), removals, links and
touches, CPython's included — and nothing a read does, nothing outside the workdir, and
nothing another thread's run writes."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from groundskeeper.sandbox import run, writes


def _wrote(root: Path, cmd: str) -> tuple[str, ...] | None:
    with writes.recording(root) as journal:
        result = run(cmd, workdir=root, read_only=False, timeout=60)
    assert result.status == 0, (cmd, result.stderr)
    assert journal.served
    return journal.files()


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "sub" / "deep").mkdir(parents=True)
    (tmp_path / "old.txt").write_text("old\n")
    (tmp_path / "sub" / "deep" / "f.txt").write_text("f\n")
    (tmp_path / "keep.txt").write_text("keep\n")
    return tmp_path


@pytest.mark.parametrize(
    ("cmd", "noted"),
    [
        ("echo a > a.txt", ("a.txt",)),
        ("echo a >> old.txt", ("old.txt",)),
        ("{ echo a; echo b; } > group.txt", ("group.txt",)),
        ("cp old.txt c.txt", ("c.txt",)),
        ("mv old.txt moved.txt", ("moved.txt", "old.txt")),
        ("rm old.txt", ("old.txt",)),
        ("touch new.txt", ("new.txt",)),
        ("echo q | tee t.txt", ("t.txt",)),
        ("cd sub && echo in > in.txt", ("sub/in.txt",)),
        ("echo x > ./sub//../y.txt", ("y.txt",)),
        ("mkdir d && mv sub d/", ("d/sub", "d/sub/deep/f.txt", "sub")),
        ("find . -name old.txt -exec rm {} +", ("old.txt",)),
        ("echo old.txt | xargs rm", ("old.txt",)),
        ("cat old.txt; grep -c o keep.txt; ls sub; wc -l old.txt > /dev/null", ()),
    ],
)
def test_every_shell_write_is_noted_and_no_read(
    root: Path, cmd: str, noted: tuple[str, ...]
) -> None:
    assert _wrote(root, cmd) == noted


def test_sed_in_place_notes_the_file_it_replaces(root: Path) -> None:
    found = _wrote(root, "sed -i s/old/new/ old.txt")
    assert found is not None and "old.txt" in found
    assert (root / "old.txt").read_text() == "new\n"


@pytest.mark.parametrize(
    ("code", "noted"),
    [
        ("open('py.txt', 'w').write('p')", ("py.txt",)),
        ("import os; os.rename('old.txt', 'b.txt')", ("b.txt", "old.txt")),
        ("import os; os.symlink('keep.txt', 'l.txt')", ("l.txt",)),
        ("import os; os.utime('keep.txt')", ("keep.txt",)),
        ("import os; os.remove('keep.txt')", ("keep.txt",)),
        ("import tempfile; tempfile.NamedTemporaryFile(delete=False).write(b'x')", ()),
    ],
)
def test_python3_writes_are_noted_and_its_own_tmp_is_not_the_work(
    root: Path, code: str, noted: tuple[str, ...]
) -> None:
    assert _wrote(root, f'python3 -c "{code}"') == noted


def test_a_write_through_a_symlink_is_noted_as_the_file_it_changes(root: Path) -> None:
    (root / "link.txt").symlink_to("keep.txt")
    assert _wrote(root, "echo more >> link.txt") == ("keep.txt",)


def test_a_write_to_a_file_with_another_name_is_unknown(root: Path) -> None:
    """A hard link's other names change too, and nothing lists them: fail closed."""
    (root / "second.txt").hardlink_to(root / "keep.txt")
    assert _wrote(root, "echo more >> second.txt") is None


def test_a_run_on_another_thread_is_not_in_this_journal(root: Path) -> None:
    """The journal is this context's: a sibling's writes, at the same moment, are its own."""
    other: list[tuple[str, ...] | None] = []

    def sibling() -> None:
        other.append(_wrote(root, "sleep 0.2; echo s > sibling.txt"))

    thread = threading.Thread(target=sibling)
    thread.start()
    mine = _wrote(root, "sleep 0.6; echo m > mine.txt")
    thread.join()
    assert (mine, other) == (("mine.txt",), [("sibling.txt",)])


def test_nothing_is_noted_when_no_journal_records(root: Path) -> None:
    assert writes.current() is None
    result = run("echo a > a.txt", workdir=root, read_only=False, timeout=30)
    assert result.status == 0 and writes.current() is None
