"""Adversarial tests of the host-side WASI (`preview1`), the sandbox's security boundary.

Through `sandbox.run`: escapes by the commands' own path handling, trailing slashes, FIFOs,
read-only mode, big directories, deadlines and output limits inside host calls, host errors
failing closed, fd hygiene, concurrent runs. Then `preview1.Process` called directly.
"""

from __future__ import annotations

import os
import stat
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from groundskeeper import sandbox
from groundskeeper.sandbox import SandboxError, ShellResult, preview1, shell, wasi
from groundskeeper.sandbox.hostcall import GuestTrap
from tests.sandbox.reference import assert_same

SECRET = "TOP-SECRET-c41d"
CAPS = "Capabilities insufficient"  # musl's strerror(ENOTCAPABLE)

Snapshot = dict[str, tuple[str, bytes, int]]


def snapshot(root: Path) -> Snapshot:
    """Every entry under root, links not followed: (kind, bytes or link target, mtime_ns)."""
    found: Snapshot = {}
    for top, dirs, files in os.walk(root):
        for name in dirs + files:
            path = os.path.join(top, name)
            info = os.lstat(path)
            rel = os.path.relpath(path, root)
            if stat.S_ISLNK(info.st_mode):
                found[rel] = ("link", os.fsencode(os.readlink(path)), info.st_mtime_ns)
            elif stat.S_ISREG(info.st_mode):
                found[rel] = ("file", Path(path).read_bytes(), info.st_mtime_ns)
            else:
                found[rel] = ("other", b"", info.st_mtime_ns)
    return found


def outward_links(work: Path) -> set[str]:
    """Symlinks under work that resolve (as any host program would) outside it."""
    real = os.path.realpath(work)
    found = set()
    for top, dirs, files in os.walk(work):
        for name in dirs + files:
            path = os.path.join(top, name)
            if os.path.islink(path):
                target = os.path.realpath(path)
                if target != real and not target.startswith(real + os.sep):
                    found.add(os.path.relpath(path, work))
    return found


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """tmp/{secret.txt, outside/{x, dir/inner.txt}} hold the secret; tmp/work is the workdir
    with links out (chained, relative, absolute), links in, a loop, and a self link."""
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "x").write_text(SECRET + "\n")
    (outside / "dir" / "inner.txt").write_text(SECRET + "\n")
    (tmp_path / "secret.txt").write_text(SECRET + "\n")
    work = tmp_path / "work"
    (work / "sub" / "inner").mkdir(parents=True)
    (work / "a.txt").write_text("alpha\n")
    (work / "sub" / "c.txt").write_text("deep\n")
    (work / "sub" / "inner" / "e.txt").write_text("innermost\n")
    (work / "chain-a").symlink_to("chain-b")
    (work / "chain-b").symlink_to("../outside")
    (work / "rel-out-file").symlink_to("../outside/x")
    (work / "rel-out-dir").symlink_to("../outside/dir")
    (work / "abs-file").symlink_to(outside / "x")
    (work / "abs-dir").symlink_to(outside / "dir")
    (work / "rel-in").symlink_to("sub/../a.txt")
    (work / "sub" / "up").symlink_to("../a.txt")
    (work / "chain-in").symlink_to("rel-in")
    (work / "lnk-inner").symlink_to("sub/inner")
    (work / "loop1").symlink_to("loop2")
    (work / "loop2").symlink_to("loop1")
    (work / "self").symlink_to(".")
    return work


def leaks_nothing(result: ShellResult, cmdline: str = "") -> None:
    assert SECRET not in result.stdout + result.stderr
    if "inner.txt" not in cmdline:  # the name of the file in the outside directory
        assert "inner.txt" not in result.stdout + result.stderr


# ---- 1. escapes through the commands' own path handling ------------------------------------

REFUSED = [
    ("cat chain-a/x", 1, f"cat: chain-a/x: {CAPS}\n"),
    ("head chain-a/x", 1, f"head: cannot open 'chain-a/x' for reading: {CAPS}\n"),
    ("ls chain-a", 2, f"ls: cannot access 'chain-a': {CAPS}\n"),
    ("cat rel-out-file", 1, f"cat: rel-out-file: {CAPS}\n"),
    ("cat abs-file", 1, f"cat: abs-file: {CAPS}\n"),
    ("ls abs-dir", 2, f"ls: cannot access 'abs-dir': {CAPS}\n"),
    ("ls -R rel-out-dir/", 2, f"ls: cannot access 'rel-out-dir/': {CAPS}\n"),
    ("wc -c rel-out-dir/inner.txt", 1, f"wc: rel-out-dir/inner.txt: {CAPS}\n"),
    ("cat sub/../../secret.txt", 1, f"cat: sub/../../secret.txt: {CAPS}\n"),
    ("cat /workdir/../secret.txt", 1, f"cat: /workdir/../secret.txt: {CAPS}\n"),
    ("ls ../", 2, f"ls: cannot access '../': {CAPS}\n"),
    ("ls /workdir/..", 2, f"ls: cannot access '/workdir/..': {CAPS}\n"),
    ("ls ../secret.txt", 2, f"ls: cannot access '../secret.txt': {CAPS}\n"),
    ("tail ../secret.txt", 1, f"tail: cannot open '../secret.txt' for reading: {CAPS}\n"),
    ("sort ../secret.txt", 2, f"sort: cannot read: ../secret.txt: {CAPS}\n"),
    ("sed -n p ../secret.txt", 2, f"sed: can't read ../secret.txt: {CAPS}\n"),
    ("sha256sum ../secret.txt", 1, f"sha256sum: ../secret.txt: {CAPS}\n"),
    ("cmp a.txt ../secret.txt", 2, f"cmp: ../secret.txt: {CAPS}\n"),
    ("diff a.txt rel-out-file", 2, f"diff: rel-out-file: {CAPS}\n"),
    ("grep -r SECRET rel-out-dir", 2, f"grep: rel-out-dir: {CAPS}\n"),
    ("find rel-out-dir/", 1, f"find: 'rel-out-dir/': {CAPS}\n"),
    ("cat loop1", 1, "cat: loop1: Symbolic link loop\n"),
    ("cat " + "self/" * 41 + "a.txt", 1, "cat: " + "self/" * 41 + "a.txt: Symbolic link loop\n"),
    ("touch rel-out-file", 1, f"touch: cannot touch 'rel-out-file': {CAPS}\n"),
    ("touch abs-file", 1, f"touch: cannot touch 'abs-file': {CAPS}\n"),
    ("touch chain-a/x", 1, f"touch: cannot touch 'chain-a/x': {CAPS}\n"),
    ("mv a.txt ../b", 1, f"mv: cannot move 'a.txt' to '../b': {CAPS}\n"),
    ("cp a.txt sub/../../b", 1, f"cp: cannot create regular file 'sub/../../b': {CAPS}\n"),
    ("cp a.txt rel-out-dir/", 1, f"cp: cannot create regular file 'rel-out-dir/': {CAPS}\n"),
    ("cp rel-out-file copy.txt", 1, f"cp: cannot stat 'rel-out-file': {CAPS}\n"),
    ("mkdir ../d", 1, f"mkdir: cannot create directory '../d': {CAPS}\n"),
    ("mkdir -p ../d/e", 1, f"mkdir: cannot create directory '..': {CAPS}\n"),
    ("mkdir chain-a/new", 1, f"mkdir: cannot create directory 'chain-a/new': {CAPS}\n"),
    ("sort -o ../out a.txt", 2, f"sort: open failed: ../out: {CAPS}\n"),
    ("rm -r rel-out-dir/", 1, f"rm: cannot remove 'rel-out-dir/': {CAPS}\n"),
    ("rm -r abs-dir/", 1, f"rm: cannot remove 'abs-dir/': {CAPS}\n"),
    ("rm rel-out-dir/inner.txt", 1, f"rm: cannot remove 'rel-out-dir/inner.txt': {CAPS}\n"),
]


@pytest.mark.parametrize(("cmdline", "status", "stderr"), REFUSED)
def test_escape_through_a_command_is_refused_and_changes_nothing(
    cmdline: str, status: int, stderr: str, layout: Path
) -> None:
    before = snapshot(layout.parent)
    result = sandbox.run(cmdline, workdir=layout)
    assert (result.status, result.stdout, result.stderr, result.fault) == (status, "", stderr, None)
    leaks_nothing(result, cmdline)
    assert snapshot(layout.parent) == before


def test_mv_onto_a_link_to_outside_with_a_slash_is_refused(layout: Path) -> None:
    # bash would move a.txt INTO ../outside/dir; the sandbox must refuse, and must not
    # instead rename a.txt over the link itself (it strips the slash, see path_rename).
    before = snapshot(layout.parent)
    result = sandbox.run("mv a.txt rel-out-dir/", workdir=layout)
    assert result.status == 1, result
    assert snapshot(layout.parent) == before


def test_existence_outside_is_not_observable(layout: Path) -> None:
    # An existing and a missing outside name answer alike: no oracle for the host's files.
    seen = sandbox.run(
        "test -e ../secret.txt; echo $?; test -e ../nope; echo $?; "
        "test -f rel-out-file; echo $?; test -d rel-out-dir; echo $?; test -e loop1; echo $?",
        workdir=layout,
    )
    assert (seen.status, seen.stdout, seen.stderr) == (0, "1\n1\n1\n1\n1\n", "")
    there = sandbox.run("ls ../secret.txt", workdir=layout).stderr
    missing = sandbox.run("ls ../nope", workdir=layout).stderr
    assert there.replace("secret.txt", "NAME") == missing.replace("nope", "NAME")


@pytest.mark.parametrize(
    ("cmdline", "stdout"),
    [
        ("cat rel-in", "alpha\n"),  # a relative link whose `..` stays inside
        ("cat sub/up", "alpha\n"),
        ("cat chain-in", "alpha\n"),
        ("cat " + "self/" * 40 + "a.txt", "alpha\n"),  # 40 links: Linux's limit, still fine
        ("cat sub/../a.txt", "alpha\n"),
        ("cat /workdir/sub/../a.txt", "alpha\n"),
        ("ls lnk-inner/..", "c.txt\ninner\nup\n"),  # `..` of a followed link: its real parent
    ],
)
def test_links_and_dotdot_that_stay_inside_work(cmdline: str, stdout: str, layout: Path) -> None:
    result = sandbox.run(cmdline, workdir=layout)
    assert (result.status, result.stdout, result.stderr) == (0, stdout, "")


def test_dotdot_back_to_the_root_lists_the_root(layout: Path) -> None:
    expected = sandbox.run("ls", workdir=layout)
    assert expected.status == 0 and "a.txt\n" in expected.stdout
    for cmdline in ("ls sub/..", "ls sub/inner/../..", "ls ./sub/../", "cd sub && ls .."):
        result = sandbox.run(cmdline, workdir=layout)
        assert (result.status, result.stdout, result.stderr) == (0, expected.stdout, ""), cmdline


def test_find_over_links_out_lists_only_the_workdir(layout: Path) -> None:
    result = sandbox.run("find . -name '*'", workdir=layout)
    assert (result.status, result.stderr) == (0, "")
    expected = {"."} | {"./" + rel for rel in snapshot(layout)}
    assert set(result.stdout.splitlines()) == expected
    assert len(result.stdout.splitlines()) == len(expected)
    leaks_nothing(result)


@pytest.mark.parametrize(
    ("cmdline", "status"),
    [("grep -r SECRET .", 1), ("grep -R SECRET .", 1), ("grep -rl TOP .", 1), ("ls -la", 0)],
)
def test_recursive_reads_never_cross_a_link_out(cmdline: str, status: int, layout: Path) -> None:
    result = sandbox.run(cmdline, workdir=layout)
    assert (result.status, result.stderr, result.fault) == (status, "", None)
    leaks_nothing(result)


def test_ls_r_lists_the_workdir_and_never_a_link_target(layout: Path) -> None:
    result = sandbox.run("ls -R", workdir=layout)
    top = sorted(name for name in os.listdir(layout))
    assert (result.status, result.stderr) == (0, "")
    assert result.stdout == (
        ".:\n" + "".join(name + "\n" for name in top) + "\n./sub:\nc.txt\ninner\nup\n"
        "\n./sub/inner:\ne.txt\n"
    )


def test_cp_r_does_not_recreate_an_absolute_link(layout: Path) -> None:
    (layout / "cpdir").mkdir()
    (layout / "cpdir" / "f").write_text("f\n")
    (layout / "cpdir" / "abs").symlink_to(layout.parent / "outside" / "x")
    (layout / "cpdir" / "in").symlink_to("../a.txt")
    outward = outward_links(layout)
    result = sandbox.run("cp -r cpdir copy", workdir=layout)
    assert result.status == 1
    assert result.stderr == f"cp: cannot create symbolic link 'copy/abs': {CAPS}\n"
    assert (layout / "copy" / "f").read_text() == "f\n"
    assert os.readlink(layout / "copy" / "in") == "../a.txt"
    assert not os.path.lexists(layout / "copy" / "abs")
    assert outward_links(layout) == outward


def test_no_command_creates_a_link_that_resolves_outside(layout: Path) -> None:
    # d/deep/l -> ../../a.txt points inside; copied one level up it would point at
    # tmp/a.txt, outside the workdir, for every host program that reads the tree later.
    (layout / "d" / "deep").mkdir(parents=True)
    (layout / "d" / "deep" / "l").symlink_to("../../a.txt")
    (layout.parent / "a.txt").write_text(SECRET + "\n")
    outward = outward_links(layout)
    sandbox.run("cp -r d/deep top", workdir=layout)
    assert outward_links(layout) == outward


def test_a_link_moved_to_where_it_would_point_outside_is_refused(layout: Path) -> None:
    (layout / "d" / "deep").mkdir(parents=True)
    (layout / "d" / "deep" / "l").symlink_to("../../a.txt")
    outward = outward_links(layout)
    result = sandbox.run("mv d/deep/l moved; cat d/deep/l", workdir=layout)
    assert (result.status, result.stdout) == (0, "alpha\n")
    assert result.stderr.startswith("mv: ") and "Capabilities insufficient" in result.stderr
    assert not os.path.lexists(layout / "moved")
    assert outward_links(layout) == outward
    # moved deeper, the same link still points inside: allowed, and it still reads a.txt
    (layout / "d" / "deep" / "deeper").mkdir()
    result = sandbox.run("mv d/deep/l d/deep/deeper/l2 && ls d/deep/deeper", workdir=layout)
    assert (result.status, result.stdout) == (0, "l2\n")
    assert os.readlink(layout / "d" / "deep" / "deeper" / "l2") == "../../a.txt"


def test_a_link_made_inside_may_climb_as_far_as_the_root(layout: Path) -> None:
    (layout / "keep").mkdir()
    (layout / "keep" / "up").symlink_to("../a.txt")
    result = sandbox.run("mkdir p && cp -r keep p/kept && cat p/kept/up", workdir=layout)
    # p/kept/up -> ../a.txt names p/a.txt: inside, though missing
    assert (result.status, result.stdout) == (1, "")
    assert os.readlink(layout / "p" / "kept" / "up") == "../a.txt"


# ---- 2. trailing slashes and dot names, against bash ----------------------------------------


@pytest.mark.parametrize(
    "cmdline",
    [
        "ls sub/",
        "ls -d sub/",
        "ls sub/inner/..",
        "ls sub/../",
        "cat a.txt/",
        "ls a.txt/",
        "ls empty.txt/.",
        "cat sub/",
        "cat sub//c.txt",
        "cat ./sub/./c.txt",
        "touch a.txt/",
        "touch sub/; echo $?",
        "mkdir .",
        "mkdir sub/..",
        "mkdir new/; ls -d new",
        "mkdir sub/inner/; echo $?",
        "rm -r .",
        "rm -r sub/..",
        "rm -r sub/; ls",
        "rm a.txt/; ls a.txt",
        "rm -r sub/./inner; ls sub",
        "mv sub/ sub2; ls; ls sub2",
        "mv sub/c.txt/ x",
        "mv sub nodir/; ls",
        "cp a.txt sub/; ls sub",
        "cp a.txt nodir/",
        "cp -r sub/ copy; ls copy",
        "find sub/ -type f",
    ],
)
def test_trailing_slashes_and_dots_match_bash(cmdline: str, tmp_path: Path) -> None:
    assert_same(cmdline, tmp_path)


@pytest.mark.parametrize(
    "cmdline", ["mv a.txt nodir/; ls; cat nodir", "mv a.txt b.txt/; ls; cat b.txt"]
)
def test_mv_of_a_file_to_a_name_with_a_slash_fails_as_in_bash(cmdline: str, tmp_path: Path) -> None:
    # rename(2) of a non-directory to "name/" is ENOTDIR; the host must not drop the slash
    # (the second case silently overwrites b.txt).
    assert_same(cmdline, tmp_path)


def test_slash_messages(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "sub").mkdir()
    cases = [
        ("cat a.txt/", 1, "cat: a.txt/: Not a directory\n"),
        ("cat sub/", 1, "cat: sub/: Is a directory\n"),
        ("ls a.txt/", 2, "ls: cannot access 'a.txt/': Not a directory\n"),
    ]
    for cmdline, status, stderr in cases:
        result = sandbox.run(cmdline, workdir=tmp_path)
        assert (result.status, result.stdout, result.stderr) == (status, "", stderr), cmdline
    made = sandbox.run("mkdir .", workdir=tmp_path)
    assert made.status == 1
    assert made.stderr.startswith("mkdir: cannot create directory '.': ")


# ---- 3. FIFOs never block the host thread ---------------------------------------------------


def _unblock(fifo: Path) -> None:
    """Give a FIFO both ends for a moment, so an open blocked on it returns."""
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(writer)
    finally:
        os.close(reader)


def run_guarded(cmdline: str, work: Path, fifo: Path, timeout: float = 5.0) -> ShellResult:
    """sandbox.run in a thread; a run still blocked after 5 s fails the test (unblocked)."""
    results: list[ShellResult | BaseException] = []

    def target() -> None:
        try:
            results.append(sandbox.run(cmdline, workdir=work, timeout=timeout))
        except BaseException as error:  # handed to the test thread
            results.append(error)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(5.0)
    if thread.is_alive():
        _unblock(fifo)
        thread.join(5.0)
        pytest.fail(f"{cmdline!r} blocked on a FIFO (deadline {timeout}s did not reach it)")
    outcome = results[0]
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


@pytest.fixture
def fifo_work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "a.txt").write_text("x marks\n")
    os.mkfifo(work / "fifo")
    return work


@pytest.mark.parametrize(
    ("cmdline", "status", "stderr"),
    [
        ("cat fifo", 1, "cat: fifo: Permission denied\n"),
        ("grep x fifo", 2, "grep: fifo: Permission denied\n"),
        ("head fifo", 1, "head: cannot open 'fifo' for reading: Permission denied\n"),
        ("tail fifo", 1, "tail: cannot open 'fifo' for reading: Permission denied\n"),
        ("wc fifo", 1, "wc: fifo: Permission denied\n"),
        ("sort fifo", 2, "sort: cannot read: fifo: Permission denied\n"),
        ("uniq fifo", 1, "uniq: fifo: Permission denied\n"),
        ("cut -c1 fifo", 1, "cut: fifo: Permission denied\n"),
        ("sed -n p fifo", 2, "sed: can't read fifo: Permission denied\n"),
        ("sha256sum fifo", 1, "sha256sum: fifo: Permission denied\n"),
        ("cmp fifo a.txt", 2, "cmp: fifo: Permission denied\n"),
        ("diff fifo a.txt", 2, "diff: fifo: Permission denied\n"),
        ("cp fifo copy", 1, "cp: cannot open 'fifo' for reading: Permission denied\n"),
        ("cat < fifo", 1, "sh: fifo: not a regular file\n"),
        ("printf x > fifo", 1, "sh: fifo: No such device or address\n"),
        ("printf x >> fifo", 1, "sh: fifo: No such device or address\n"),
        ("cat missing 2> fifo", 1, "sh: fifo: No such device or address\n"),
    ],
)
def test_a_fifo_fails_at_once(cmdline: str, status: int, stderr: str, fifo_work: Path) -> None:
    started = time.monotonic()
    result = run_guarded(cmdline, fifo_work, fifo_work / "fifo")
    assert time.monotonic() - started < 2.0
    assert (result.status, result.stdout, result.stderr, result.fault) == (status, "", stderr, None)
    assert stat.S_ISFIFO(os.lstat(fifo_work / "fifo").st_mode)


def test_a_fifo_with_a_reader_is_still_refused_and_gets_no_bytes(fifo_work: Path) -> None:
    fifo = fifo_work / "fifo"
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        redirected = run_guarded("printf secret > fifo", fifo_work, fifo)
        copied = run_guarded("cp a.txt fifo", fifo_work, fifo)
        assert os.read(reader, 100) == b""  # nothing was written, and no writer is left
    finally:
        os.close(reader)
    assert (redirected.status, redirected.stderr) == (1, "sh: fifo: not a regular file\n")
    assert copied.status == 1
    assert copied.stderr == "cp: cannot create regular file 'fifo': Permission denied\n"


def test_recursive_grep_skips_a_fifo(fifo_work: Path) -> None:
    result = run_guarded("grep -r marks .", fifo_work, fifo_work / "fifo")
    assert (result.status, result.stdout) == (2, "./a.txt:x marks\n")
    assert result.stderr == "grep: ./fifo: Permission denied\n"


# ---- 4. read-only mode ----------------------------------------------------------------------

READ_ONLY = [
    ("mkdir x", 1, "mkdir: cannot create directory 'x': Read-only file system\n"),
    ("mkdir -p sub/new", 1, "mkdir: cannot create directory 'sub/new': Read-only file system\n"),
    ("touch a.txt", 1, "touch: setting times of 'a.txt': Read-only file system\n"),
    ("touch -c a.txt", 1, "touch: setting times of 'a.txt': Read-only file system\n"),
    ("touch new.txt", 1, "touch: cannot touch 'new.txt': Read-only file system\n"),
    ("rm a.txt", 1, "rm: cannot remove 'a.txt': Read-only file system\n"),
    ("rm -f a.txt", 1, "rm: cannot remove 'a.txt': Read-only file system\n"),
    ("rm link", 1, "rm: cannot remove 'link': Read-only file system\n"),
    ("rm -r sub", 1, None),
    ("mv a.txt b.txt", 1, "mv: cannot move 'a.txt' to 'b.txt': Read-only file system\n"),
    ("mv sub s2", 1, "mv: cannot move 'sub' to 's2': Read-only file system\n"),
    ("cp a.txt b.txt", 1, "cp: cannot create regular file 'b.txt': Read-only file system\n"),
    ("cp a.txt sub/c.txt", 1, None),
    ("cp -r sub s2", 1, "cp: cannot create directory 's2': Read-only file system\n"),
    ("sort -o a.txt a.txt", 2, "sort: open failed: a.txt: Read-only file system\n"),
    ("sed -i s/a/b/ a.txt", 4, None),
    ("printf x > f", 1, "sh: f: Read-only file system (read-only sandbox)\n"),
    ("printf x >> a.txt", 1, "sh: a.txt: Read-only file system (read-only sandbox)\n"),
    ("cat a.txt > a.txt", 1, "sh: a.txt: Read-only file system (read-only sandbox)\n"),
    ("cat a.txt 2> e.txt", 1, "sh: e.txt: Read-only file system (read-only sandbox)\n"),
]


@pytest.fixture
def ro_work(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "a.txt").write_text("alpha\n")
    (work / "sub" / "c.txt").write_text("deep\n")
    (work / "link").symlink_to("a.txt")
    old = time.time_ns() - 10**12  # mtimes well in the past, so a touch would show
    for path in (work / "a.txt", work / "sub" / "c.txt", work / "sub", work):
        os.utime(path, ns=(old, old))
    return work


@pytest.mark.parametrize(("cmdline", "status", "stderr"), READ_ONLY)
def test_read_only_changes_nothing(
    cmdline: str, status: int, stderr: str | None, ro_work: Path
) -> None:
    before = snapshot(ro_work)
    result = sandbox.run(cmdline, workdir=ro_work, read_only=True)
    assert (result.status, result.stdout, result.fault) == (status, "", None)
    if stderr is not None:
        assert result.stderr == stderr
    else:
        assert result.stderr != ""
    assert snapshot(ro_work) == before


def test_read_only_mkdir_p_of_an_existing_directory_succeeds(ro_work: Path) -> None:
    before = snapshot(ro_work)
    result = sandbox.run("mkdir -p sub && mkdir sub; mkdir new", workdir=ro_work, read_only=True)
    assert result.status == 1
    assert result.stderr == (
        "mkdir: cannot create directory 'sub': File exists\n"
        "mkdir: cannot create directory 'new': Read-only file system\n"
    )
    assert snapshot(ro_work) == before


def test_read_only_still_reads(ro_work: Path) -> None:
    before = snapshot(ro_work)
    result = sandbox.run(
        "cat a.txt link; ls sub; find . -name c.txt; grep -c alpha a.txt > /dev/null; echo $?",
        workdir=ro_work,
        read_only=True,
    )
    assert (result.status, result.stderr) == (0, "")
    assert result.stdout == "alpha\nalpha\nc.txt\n./sub/c.txt\n0\n"
    assert snapshot(ro_work) == before


# ---- 5. directories at scale: fd_readdir refills and cookies ---------------------------------

BIG = 3000


@pytest.fixture(scope="module")
def big_names(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    work = tmp_path_factory.mktemp("big")
    # lengths 6..255, so entries straddle every refill boundary of the guest's buffer
    names = [f"{i:04d}-" + "n" * (i % 250) for i in range(BIG)]
    for name in names:
        (work / name).write_bytes(b"")
    return work, names


def test_a_big_directory_lists_every_name_once(big_names: tuple[Path, list[str]]) -> None:
    work, names = big_names
    plain = sandbox.run("ls", workdir=work)
    assert (plain.status, plain.stderr) == (0, "")
    assert plain.stdout.splitlines() == sorted(names)
    every = sandbox.run("ls -a", workdir=work)
    assert every.stdout.splitlines() == [".", "..", *sorted(names)]
    counted = sandbox.run("ls | wc -l; ls -a | wc -l; find . -type f | wc -l", workdir=work)
    assert (counted.status, counted.stdout) == (0, f"{BIG}\n{BIG + 2}\n{BIG}\n")
    found = sandbox.run("find . -type f", workdir=work)
    assert sorted(found.stdout.splitlines()) == sorted("./" + name for name in names)


def test_rm_r_of_a_big_directory_removes_every_name(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.mkdir()
    for i in range(BIG):
        (big / (f"{i:04d}-" + "r" * (i % 200))).write_bytes(b"x")
    result = sandbox.run("rm -r big; ls", workdir=tmp_path)
    assert (result.status, result.stdout, result.stderr) == (0, "", "")
    assert not big.exists()


# ---- 6. deadlines inside host calls ---------------------------------------------------------


@pytest.mark.parametrize("cmdline", ["sleep 5", "echo $(sleep 5)", "sleep 0.3 && sleep 5; echo x"])
def test_a_sleep_past_the_deadline_is_stopped(cmdline: str, tmp_path: Path) -> None:
    started = time.monotonic()
    result = sandbox.run(cmdline, workdir=tmp_path, timeout=0.5)
    assert time.monotonic() - started < 1.5
    assert (result.status, result.stdout, result.fault) == (124, "", "deadline")
    assert result.stderr == (
        "sh: deadline of 0.5s exceeded while running 'sleep': the command line was stopped\n"
    )


def test_a_short_sleep_finishes(tmp_path: Path) -> None:
    started = time.monotonic()
    result = sandbox.run("sleep 0.2; echo done", workdir=tmp_path, timeout=2.0)
    elapsed = time.monotonic() - started
    assert (result.status, result.stdout, result.stderr, result.fault) == (0, "done\n", "", None)
    assert 0.19 <= elapsed < 1.5


# ---- 7. output order and limits -------------------------------------------------------------


@pytest.mark.parametrize(
    "cmdline",
    [
        "cat a.txt missing a.txt 2>&1",
        "ls a.txt missing.txt 2>&1",
        "cat a.txt missing 2>&1 > out.txt; cat out.txt",
        "cat missing a.txt missing2 2>&1 | head -3",
        "cat a.txt missing b.txt 2> err.txt; cat err.txt",
    ],
)
def test_interleaved_stdout_and_stderr_keep_their_order(cmdline: str, tmp_path: Path) -> None:
    assert_same(cmdline, tmp_path)


def run_limited(cmdline: str, work: Path, **limits: int) -> ShellResult:
    return shell.run_cmdline(
        cmdline, workdir=work, read_only=False, timeout=10.0, env=None, limits=wasi.Limits(**limits)
    )


def test_stdout_past_its_limit_is_cut_exactly_there(tmp_path: Path) -> None:
    result = run_limited("seq 1 100000", tmp_path, stream=1000)
    full = "".join(f"{i}\n" for i in range(1, 100001))
    assert (result.status, result.fault) == (125, "output")
    assert result.stdout == full[:1000]
    assert result.stderr == (
        "sh: output limit exceeded by 'seq' (0 MiB for stdout and stderr, 64 MiB for a pipe "
        "or file)\n"
    )


def test_stderr_past_its_limit_is_cut_and_still_names_the_fault(tmp_path: Path) -> None:
    names = " ".join(f"missing{i}" for i in range(100))
    result = run_limited(f"cat {names}", tmp_path, stream=200)
    assert (result.status, result.stdout, result.fault) == (125, "", "output")
    errors = "".join(f"cat: missing{i}: No such file or directory\n" for i in range(100))
    assert result.stderr.startswith(errors[:200] + "sh: output limit exceeded by 'cat'")


def test_a_redirection_past_the_pipe_limit_stops_at_it(tmp_path: Path) -> None:
    result = run_limited("seq 1 100000 > out.txt", tmp_path, pipe=1000)
    assert (result.status, result.fault) == (125, "output")
    assert (tmp_path / "out.txt").read_text() == "".join(f"{i}\n" for i in range(1, 100001))[:1000]


# ---- 8. host errors fail closed -------------------------------------------------------------


def _boom(*_args: object) -> int:
    raise RuntimeError("injected host failure")


@pytest.mark.parametrize(
    "cmdline",
    [
        "ls a.txt",
        "ls a.txt || echo fallback",
        "! ls a.txt",
        "echo $(ls a.txt)",
        "ls a.txt | wc -l",
        "test -e a.txt || true",
    ],
)
def test_a_failing_host_call_raises_and_the_pool_survives(
    cmdline: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    monkeypatch.setattr(preview1.Process, "path_filestat_get", _boom)
    with pytest.raises(SandboxError, match="injected host failure"):
        sandbox.run(cmdline, workdir=tmp_path)
    monkeypatch.undo()
    for _ in range(3):
        again = sandbox.run("ls a.txt; cat a.txt", workdir=tmp_path)
        assert (again.status, again.stdout, again.stderr) == (0, "a.txt\nalpha\n", "")


def test_a_failing_write_raises(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(preview1.Process, "fd_write", _boom)
    with pytest.raises(SandboxError, match="injected host failure"):
        sandbox.run("echo hi || true", workdir=tmp_path)


def test_an_os_error_in_a_host_call_is_the_guests_errno(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")

    def denied(*_args: object) -> int:
        raise PermissionError(13, "denied by the test")

    monkeypatch.setattr(preview1.Process, "path_open", denied)
    result = sandbox.run("cat a.txt", workdir=tmp_path)
    assert (result.status, result.stdout) == (1, "")
    assert result.stderr == "cat: a.txt: Permission denied\n"


# ---- 9. resource hygiene --------------------------------------------------------------------


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_no_fd_or_thread_outlives_its_run(layout: Path) -> None:
    os.mkfifo(layout / "fifo")
    (layout / "big.txt").write_text("line\n" * 5000)
    mix = [
        "cat a.txt sub/c.txt",
        "cat missing",
        "cat fifo",
        "ls sub; ls -R",
        "cat < a.txt",
        "cat < missing",
        "printf x > out.txt; cat out.txt",
        "cat ../secret.txt",
        "cat loop1",
        "find . -type f | wc -l",
        "grep -r alpha .",
        "mv a.txt nodir/ ; mv nodir a.txt",
        "cp -r sub copy; rm -r copy",
    ]
    sandbox.run("cat a.txt", workdir=layout)  # warm: pool, watchdog thread
    run_limited("cat big.txt", layout, stream=100)
    fds, threads = _open_fds(), threading.active_count()
    for index in range(200):
        sandbox.run(mix[index % len(mix)], workdir=layout)
        if index % 20 == 0:
            # a stage trapped (output limit) while it had files open
            assert run_limited("cat big.txt a.txt", layout, stream=100).fault == "output"
    assert (_open_fds(), threading.active_count()) == (fds, threads)


def test_concurrent_runs_each_see_only_their_own_workdir(tmp_path: Path) -> None:
    works = []
    for i in range(4):
        work = tmp_path / f"w{i}"
        work.mkdir()
        (work / "who.txt").write_text(f"{i}\n")
        works.append(work)
    wrong: list[tuple[int, ShellResult]] = []

    def worker(i: int) -> None:
        for _ in range(25):
            result = sandbox.run("cat who.txt; ls", workdir=works[i])
            if (result.status, result.stdout) != (0, f"{i}\nwho.txt\n"):
                wrong.append((i, result))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert wrong == []


# ---- 10. preview1.Process called directly ---------------------------------------------------

OUT, PATH, PATH2, BUF, SUBS, EVENTS = 0, 256, 4096, 8192, 60000, 61000
MEMORY = 1 << 16
R_READ, R_WRITE = preview1.R_FD_READ, preview1.R_FD_WRITE


class _Buffer:
    def __init__(self, limit: int = 1 << 20) -> None:
        self.limit = limit
        self.data = bytearray()

    def room(self) -> int:
        return self.limit - len(self.data)

    def write(self, data: bytes) -> None:
        self.data += data


@dataclass
class Guest:
    """A Process over a tree, and a guest memory to call it with (through `serve`)."""

    process: preview1.Process
    memory: memoryview
    root: Path

    def call(self, name: str, *arguments: int) -> int | None:
        return preview1.serve(lambda: self.process, name)(self.memory, *arguments)

    def put(self, data: bytes, at: int = PATH) -> tuple[int, int]:
        self.memory[at : at + len(data)] = data
        return at, len(data)

    def u32(self, at: int = OUT) -> int:
        value: int = struct.unpack_from("<I", self.memory, at)[0]
        return value

    def open(self, path: bytes, oflags: int = 0, rights: int = R_READ, fdflags: int = 0) -> int:
        return self.call("path_open", 3, 1, *self.put(path), oflags, rights, 0, fdflags, OUT) or 0

    def walk(self, path: bytes, follow: bool = True) -> tuple[str, bytes]:
        """`_walk`'s answer as (the host path of the directory, name); closes the fd. The
        depth it reports must be that directory's below the root."""
        fd, name, depth = self.process._walk(3, path, follow)
        real = os.readlink(f"/proc/self/fd/{fd}")
        relative = os.path.relpath(real, os.path.realpath(self.root))
        assert depth == (0 if relative == "." else len(relative.split(os.sep))), (path, depth)
        try:
            assert stat.S_ISDIR(os.fstat(fd).st_mode)
            return os.readlink(f"/proc/self/fd/{fd}"), name
        finally:
            os.close(fd)


def make_guest(root: Path, read_only: bool = False, **overrides: object) -> Guest:
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    fields: dict[str, object] = {
        "argv": ["box"],
        "env": [],
        "stdin": b"",
        "stdout": _Buffer(),
        "stderr": _Buffer(),
        "root_fd": root_fd,
        "guest_root": "/workdir",
        "read_only": read_only,
        "deadline": time.monotonic() + 30,
    }
    fields.update(overrides)
    process = preview1.Process(**fields)  # type: ignore[arg-type]
    return Guest(process, memoryview(bytearray(MEMORY)), root)


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "outside.txt").write_text(SECRET)
    root = tmp_path / "root"
    (root / "sub" / "inner").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\n")
    (root / "b.txt").write_text("beta\n")
    (root / "abs").symlink_to(tmp_path / "outside.txt")
    (root / "out").symlink_to("../outside.txt")
    (root / "to-inner").symlink_to("sub/inner")
    os.mkfifo(root / "fifo")
    yield root


@pytest.fixture
def guest(tree: Path) -> Iterator[Guest]:
    made = make_guest(tree)
    yield made
    made.process.close()
    os.close(made.process.root_fd)


def _code(guest: Guest, path: bytes, follow: bool = True) -> int:
    with pytest.raises(preview1.WasiError) as caught:
        guest.walk(path, follow)
    return caught.value.code


def test_walk_refuses_every_way_out(guest: Guest, tree: Path) -> None:
    fds = _open_fds()
    for path in (b"..", b"../root", b"sub/../..", b"sub/inner/../../../x", b"/etc", b"/"):
        assert _code(guest, path) == preview1.NOTCAPABLE, path
    for path in (b"abs", b"out", b"out/x", b"abs/"):
        assert _code(guest, path) == preview1.NOTCAPABLE, path
    assert _code(guest, b"to-inner/../../..") == preview1.NOTCAPABLE
    assert _code(guest, b"") == preview1.NOENT
    assert _code(guest, b"a\0b") == preview1.INVAL
    assert _code(guest, b"a.txt/x") == preview1.NOTDIR
    assert _open_fds() == fds  # every refusal closed what it had opened


def test_walk_counts_links_like_linux(guest: Guest, tree: Path) -> None:
    (tree / "l0").symlink_to("a.txt")
    for i in range(1, 41):
        (tree / f"l{i}").symlink_to(f"l{i - 1}")
    assert guest.walk(b"l39") == (str(tree), b"a.txt")  # 40 links followed
    assert _code(guest, b"l40") == preview1.LOOP  # 41
    assert guest.walk(b"l40", follow=False) == (str(tree), b"l40")
    (tree / "me").symlink_to("me")
    assert _code(guest, b"me") == preview1.LOOP
    assert _code(guest, b"me/x", follow=False) == preview1.LOOP


def test_walk_returns_a_directory_inside_the_root(guest: Guest, tree: Path) -> None:
    fds = _open_fds()
    assert guest.walk(b"a.txt") == (str(tree), b"a.txt")
    assert guest.walk(b".") == (str(tree), b".")
    assert guest.walk(b"sub/..") == (str(tree), b".")
    assert guest.walk(b"sub/inner/") == (str(tree / "sub" / "inner"), b".")
    assert guest.walk(b"to-inner/..") == (str(tree / "sub"), b".")
    assert guest.walk(b"to-inner/x") == (str(tree / "sub" / "inner"), b"x")
    assert guest.walk(b"to-inner", follow=False) == (str(tree), b"to-inner")
    assert guest.walk(b"to-inner", follow=True) == (str(tree / "sub"), b"inner")
    assert guest.walk(b"sub//inner/./missing") == (str(tree / "sub" / "inner"), b"missing")
    assert _open_fds() == fds


def test_path_open_refuses_a_fifo_without_keeping_an_fd(guest: Guest) -> None:
    fds, table = _open_fds(), dict(guest.process.fds)
    assert guest.open(b"fifo") == preview1.ACCES
    assert guest.open(b"fifo", rights=R_WRITE) == 60  # ENXIO: no reader, and no wait for one
    assert (_open_fds(), guest.process.fds) == (fds, table)


def test_path_open_cannot_create_outside(guest: Guest, tree: Path) -> None:
    for path in (b"../new", b"out", b"abs", b"sub/../../new"):
        code = guest.open(path, oflags=preview1.O_CREAT, rights=R_WRITE)
        assert code == preview1.NOTCAPABLE, path
    assert (tree.parent / "outside.txt").read_text() == SECRET
    assert sorted(os.listdir(tree.parent)) == ["outside.txt", "root"]


def test_fd_rights_are_enforced(guest: Guest, tree: Path) -> None:
    assert guest.open(b"a.txt", rights=R_READ) == preview1.SUCCESS
    reader = guest.u32()
    data_at, data_len = guest.put(b"overwritten", BUF)
    struct.pack_into("<II", guest.memory, PATH2, data_at, data_len)
    assert guest.call("fd_write", reader, PATH2, 1, OUT) == preview1.BADF
    assert guest.open(b"b.txt", rights=R_WRITE) == preview1.SUCCESS
    writer = guest.u32()
    assert guest.call("fd_read", writer, PATH2, 1, OUT) == preview1.BADF
    assert guest.open(b"sub", oflags=preview1.O_DIRECTORY) == preview1.SUCCESS
    directory = guest.u32()
    assert guest.call("fd_read", directory, PATH2, 1, OUT) == preview1.ISDIR
    assert guest.call("fd_seek", directory, 0, 0, OUT) == preview1.BADF
    assert guest.call("fd_close", directory) == preview1.SUCCESS
    assert guest.call("fd_close", directory) == preview1.BADF
    assert (tree / "a.txt").read_text() == "alpha\n"
    assert (tree / "b.txt").read_text() == "beta\n"


def test_bad_guest_pointers_are_efault_and_leak_nothing(tree: Path) -> None:
    fds = _open_fds()
    made = make_guest(tree)
    assert made.call("path_open", 3, 1, MEMORY - 2, 5, 0, R_READ, 0, 0, OUT) == preview1.FAULT
    path_at, path_len = made.put(b"a.txt")
    # The file opens, but its number cannot be written back: the guest never learns it.
    assert (
        made.call("path_open", 3, 1, path_at, path_len, 0, R_READ, 0, 0, MEMORY - 2)
        == preview1.FAULT
    )
    made.process.close()
    os.close(made.process.root_fd)
    assert _open_fds() == fds


WRITING_CALLS: list[tuple[str, Callable[[Guest], int | None]]] = [
    ("mkdir", lambda g: g.call("path_create_directory", 3, *g.put(b"new"))),
    ("rmdir", lambda g: g.call("path_remove_directory", 3, *g.put(b"sub/inner"))),
    ("unlink", lambda g: g.call("path_unlink_file", 3, *g.put(b"a.txt"))),
    ("rename", lambda g: g.call("path_rename", 3, *g.put(b"a.txt"), 3, *g.put(b"c", PATH2))),
    ("symlink", lambda g: g.call("path_symlink", *g.put(b"a.txt"), 3, *g.put(b"ln", PATH2))),
    (
        "utimes",
        lambda g: g.call(
            "path_filestat_set_times", 3, 1, *g.put(b"a.txt"), 0, 0, preview1.MTIM_NOW
        ),
    ),
    ("open-trunc", lambda g: g.open(b"a.txt", oflags=preview1.O_TRUNC)),
    ("open-create", lambda g: g.open(b"new", oflags=preview1.O_CREAT)),
    ("open-write", lambda g: g.open(b"a.txt", rights=R_WRITE)),
    ("open-append", lambda g: g.open(b"a.txt", fdflags=preview1.FD_APPEND)),
    ("open-dir-write", lambda g: g.open(b"sub", oflags=preview1.O_DIRECTORY, rights=R_WRITE)),
]


@pytest.mark.parametrize("attempt", [pytest.param(call, id=name) for name, call in WRITING_CALLS])
def test_every_writing_call_is_refused_read_only(
    attempt: Callable[[Guest], int | None], tree: Path
) -> None:
    made = make_guest(tree, read_only=True)
    before = snapshot(tree.parent)
    try:
        assert attempt(made) == preview1.ROFS
        assert snapshot(tree.parent) == before
        assert set(made.process.fds) == {0, 1, 2, 3}
    finally:
        made.process.close()
        os.close(made.process.root_fd)


def test_path_symlink_refuses_an_absolute_target(guest: Guest, tree: Path) -> None:
    for target in (b"/etc/passwd", str(tree / "a.txt").encode()):
        at, length = guest.put(target)
        assert guest.call("path_symlink", at, length, 3, *guest.put(b"ln", PATH2)) == (
            preview1.NOTCAPABLE
        )
        assert not os.path.lexists(tree / "ln")


@pytest.mark.parametrize(
    ("old", "new"), [(b"a.txt", b"nodir/"), (b"a.txt", b"b.txt/"), (b"a.txt/", b"c.txt")]
)
def test_path_rename_keeps_a_trailing_slash(old: bytes, new: bytes, guest: Guest) -> None:
    # rename(2) answers ENOTDIR when a non-directory is named with a trailing slash.
    before = snapshot(guest.root)
    at, length = guest.put(old)
    code = guest.call("path_rename", 3, at, length, 3, *guest.put(new, PATH2))
    assert code == preview1.NOTDIR
    assert snapshot(guest.root) == before


def test_fd_readdir_cookies_resume_exactly(guest: Guest, tree: Path) -> None:
    names = {f"{i:03d}" + "d" * (i % 200) for i in range(300)}
    (tree / "big").mkdir()
    for name in names:
        (tree / "big" / name).write_bytes(b"")
    assert guest.open(b"big", oflags=preview1.O_DIRECTORY) == preview1.SUCCESS
    fd = guest.u32()
    seen: list[str] = []
    cookie, size, rounds = 0, 512, 0
    while True:
        rounds += 1
        assert guest.call("fd_readdir", fd, BUF, size, cookie, OUT) == preview1.SUCCESS
        used = guest.u32()
        chunk = bytes(guest.memory[BUF : BUF + used])
        at = 0
        while at + 24 <= used:
            d_next, _inode, length, kind = struct.unpack_from("<QQIB3x", chunk, at)
            if at + 24 + length > used:
                break  # cut off: asked for again from the last whole entry's cookie
            name = chunk[at + 24 : at + 24 + length].decode()
            assert d_next == len(seen) + 1
            assert kind == (preview1.DIRECTORY if name in (".", "..") else preview1.REGULAR_FILE)
            seen.append(name)
            cookie = d_next
            at += 24 + length
        if used < size:
            break
    assert rounds > 50
    assert sorted(seen) == sorted(names | {".", ".."})
    assert len(seen) == len(set(seen))


def test_poll_oneoff_stops_at_the_deadline(tree: Path) -> None:
    made = make_guest(tree)
    made.process.deadline = time.monotonic() + 0.2
    struct.pack_into("<QB7xIxxxxQQH6x", made.memory, SUBS, 7, 0, 1, 5 * 10**9, 0, 0)
    started = time.monotonic()
    try:
        with pytest.raises(GuestTrap, match="deadline"):
            made.call("poll_oneoff", SUBS, EVENTS, 1, OUT)
        assert time.monotonic() - started < 0.5
        assert made.process.fault == "deadline"
    finally:
        made.process.close()
        os.close(made.process.root_fd)


def test_poll_oneoff_sleeps_then_reports_the_clock(guest: Guest) -> None:
    struct.pack_into("<QB7xIxxxxQQH6x", guest.memory, SUBS, 7, 0, 1, 50 * 10**6, 0, 0)
    started = time.monotonic()
    assert guest.call("poll_oneoff", SUBS, EVENTS, 1, OUT) == preview1.SUCCESS
    # the upper bound only tells nanoseconds from microseconds (50 s); a loaded CI machine has
    # taken 0.8 s to wake from this 50 ms sleep
    assert 0.045 <= time.monotonic() - started < 5
    assert guest.u32() == 1
    assert struct.unpack_from("<QHB", guest.memory, EVENTS) == (7, preview1.SUCCESS, 0)


def test_a_stopped_run_traps_in_its_next_call(tree: Path) -> None:
    made = make_guest(tree, stopped=lambda: True)
    struct.pack_into("<QB7xIxxxxQQH6x", made.memory, SUBS, 7, 0, 1, 5 * 10**9, 0, 0)
    try:
        with pytest.raises(GuestTrap, match="stopped"):
            made.call("poll_oneoff", SUBS, EVENTS, 1, OUT)
        struct.pack_into("<II", made.memory, PATH2, BUF, 4)
        with pytest.raises(GuestTrap, match="stopped"):
            made.call("fd_write", 1, PATH2, 1, OUT)
        assert made.process.stdout.room() == 1 << 20  # nothing was written
    finally:
        made.process.close()
        os.close(made.process.root_fd)


def test_fd_write_stops_exactly_at_the_sinks_room(tree: Path) -> None:
    sink = _Buffer(limit=10)
    made = make_guest(tree, stdout=sink)
    try:
        at, length = made.put(b"0123456789abcdefghijklmno", BUF)
        struct.pack_into("<II", made.memory, PATH2, at, length)
        with pytest.raises(GuestTrap, match="output limit"):
            made.call("fd_write", 1, PATH2, 1, OUT)
        assert (bytes(sink.data), made.process.fault) == (b"0123456789", "output")
    finally:
        made.process.close()
        os.close(made.process.root_fd)


# ---- 11. races and the guest's environment --------------------------------------------------


def test_a_directory_swapped_for_a_link_mid_run_never_leads_out(tmp_path: Path) -> None:
    """Another process flips work/d between a real directory and a link to outside while
    commands and redirections use d/x: each step is opened O_NOFOLLOW, so no read or write
    ever lands outside, whichever moment the swap hits."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x").write_text(SECRET + "\n")
    work = tmp_path / "work"
    work.mkdir()
    real, link = work / "real", work / "link"
    real.mkdir()
    (real / "x").write_text("inside\n")
    link.symlink_to("../outside")
    os.rename(real, work / "d")
    state = ["real"]
    done = threading.Event()

    def flip() -> None:
        while not done.is_set():
            if state[0] == "real":
                os.rename(work / "d", real)
                os.rename(link, work / "d")
                state[0] = "link"
            else:
                os.rename(work / "d", link)
                os.rename(real, work / "d")
                state[0] = "real"

    flipper = threading.Thread(target=flip, daemon=True)
    flipper.start()
    outputs: set[str] = set()
    refusals = 0
    try:
        for index in range(150):
            try:
                result = sandbox.run(
                    f"cat d/x; cat < d/x; printf w > d/w{index}; ls d", workdir=work
                )
            except OSError:
                # confine's realpath race (ENOENT or EINVAL out of its readlink): pinned
                # deterministically by the next test; here only confinement is checked
                continue
            outputs.add(result.stdout)
            refusals += CAPS in result.stderr or "outside the workdir" in result.stderr
            assert SECRET not in result.stdout + result.stderr
    finally:
        done.set()
        flipper.join(10)
    assert sorted(os.listdir(outside)) == ["x"]  # nothing was ever written outside
    assert (outside / "x").read_text() == SECRET + "\n"
    assert any("inside\n" in out for out in outputs) and refusals  # the race ran both ways


@pytest.mark.parametrize(
    "cmdline",
    ["GK_CWD=/ pwd", "GK_CWD=.. pwd", "export GK_CWD=/etc; pwd", "cd sub; GK_CWD=/workdir/.. pwd"],
)
def test_the_guests_cwd_cannot_be_set_from_the_command_line(cmdline: str, tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    result = sandbox.run(cmdline, workdir=tmp_path)
    expected = "/workdir/sub\n" if cmdline.startswith("cd sub") else "/workdir\n"
    assert (result.status, result.stdout, result.stderr) == (0, expected, "")


@pytest.mark.parametrize(
    ("cmdline", "code"),  # ENOENT: the name went away; EINVAL: a link became a directory
    [("cat < d/x", 2), ("printf w > d/y", 22), ("cd d && echo in", 2), ("cat d/*", 22)],
)
def test_a_path_that_changes_during_resolution_is_refused_not_raised(
    cmdline: str, code: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interpreter's own resolution (confine.Workdir.resolve → os.path.realpath) hit by
    the race above: a component replaced between realpath's lstat and readlink raises
    ENOENT or EINVAL (both seen in the previous test). `sandbox.run` must answer with a
    refused command, never let a bare OSError out (its contract: SandboxError only, and
    only when the sandbox itself is broken)."""
    work = tmp_path / "work"
    (work / "d").mkdir(parents=True)
    (work / "d" / "x").write_text("inside\n")
    original = os.path.realpath
    moving = str(work / "d")

    def racing_realpath(path: str | os.PathLike[str], *args: Any, **kwargs: Any) -> str:
        if os.fspath(path).startswith(moving):
            raise OSError(code, os.strerror(code), moving)
        return original(path, *args, **kwargs)

    monkeypatch.setattr(os.path, "realpath", racing_realpath)
    result = sandbox.run(cmdline, workdir=work)
    monkeypatch.undo()
    assert (result.status, result.stdout, result.fault) == (1, "", None)
    assert result.stderr.startswith("sh: ") or result.stderr.startswith("cd: ")
    assert sorted(os.listdir(work / "d")) == ["x"]
