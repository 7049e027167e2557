"""The preview1 calls CPython needs beyond box.wasm's, each confined like the others: hard
links, truncation, positioned reads and writes, times on an open file, randomness, clocks,
sockets (refused), read-only and writable shelves, and `/dev/null`. Refusals first."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from groundskeeper.sandbox import fence, preview1
from groundskeeper.sandbox.hostcall import GuestTrap
from groundskeeper.sandbox.quota import DiskQuota
from tests.sandbox.test_preview1 import (
    BUF,
    OUT,
    PATH2,
    R_READ,
    R_WRITE,
    SECRET,
    Guest,
    _open_fds,
    make_guest,
    snapshot,
)

FOLLOW = 1


@pytest.fixture
def tree(tmp_path: Path) -> Iterator[Path]:
    (tmp_path / "outside.txt").write_text(SECRET)
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "a.txt").write_text("alpha\n")
    (root / "abs").symlink_to(tmp_path / "outside.txt")
    (root / "in-link").symlink_to("a.txt")
    (root / "up").symlink_to("../outside.txt")
    yield root


def _guest(root: Path, **overrides: object) -> Guest:
    return make_guest(root, **overrides)


@pytest.fixture
def guest(tree: Path) -> Iterator[Guest]:
    made = _guest(tree)
    yield made
    made.process.close()
    os.close(made.process.root_fd)


def link(g: Guest, old: bytes, new: bytes, flags: int = 0, old_fd: int = 3, new_fd: int = 3) -> int:
    at, length = g.put(old)
    code = g.call("path_link", old_fd, flags, at, length, new_fd, *g.put(new, PATH2))
    assert code is not None
    return code


# ---- path_link ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "flags", "code"),
    [
        (b"../outside.txt", b"got", 0, preview1.NOTCAPABLE),
        (b"abs", b"got", FOLLOW, preview1.NOTCAPABLE),  # a link out, followed
        (b"up", b"got", FOLLOW, preview1.NOTCAPABLE),
        (b"abs", b"got", 0, preview1.PERM),  # the link itself: moved, it could lead out
        (b"in-link", b"sub/got", 0, preview1.PERM),
        (b"sub", b"got", 0, preview1.PERM),  # a directory
        (b"a.txt", b"../got", 0, preview1.NOTCAPABLE),
        (b"a.txt", b"/tmp/got", 0, preview1.NOTCAPABLE),
    ],
)
def test_path_link_never_reaches_outside(
    guest: Guest, tree: Path, old: bytes, new: bytes, flags: int, code: int
) -> None:
    before, fds = snapshot(tree.parent), _open_fds()
    assert link(guest, old, new, flags) == code
    assert snapshot(tree.parent) == before
    assert _open_fds() == fds


def test_path_link_refuses_a_protected_file_under_any_name(tree: Path) -> None:
    (tree / "sub" / "key.txt").write_text("answer\n")
    os.link(tree / "sub" / "key.txt", tree / "alias.txt")  # a name made before the run
    with fence.enforced(fence.protecting(tree, ["sub/key.txt"])):
        made = _guest(tree)
        try:
            assert link(made, b"sub/key.txt", b"copy.txt") == preview1.ACCES
            assert link(made, b"alias.txt", b"copy.txt") == preview1.ACCES
            assert link(made, b"a.txt", b"sub/key.txt") == preview1.ACCES  # over it
        finally:
            made.process.close()
            os.close(made.process.root_fd)
    assert not (tree / "copy.txt").exists()
    assert (tree / "sub" / "key.txt").read_text() == "answer\n"


def test_path_link_refuses_the_plan_and_the_control_plane(tmp_path: Path) -> None:
    root = tmp_path / "work"
    control = root / ".groundskeeper" / "plan.org"
    control.mkdir(parents=True)
    (control / "_steps.jsonl").write_text("LEDGER\n")
    (root / "plan.org").write_text("* TODO x\n")
    with fence.enforced(fence.for_plan(root / "plan.org", root / ".groundskeeper")):
        made = _guest(root)
        try:
            assert link(made, b".groundskeeper/plan.org/_steps.jsonl", b"l") == preview1.NOENT
            assert link(made, b"plan.org", b"p2.org") == preview1.ACCES
        finally:
            made.process.close()
            os.close(made.process.root_fd)
    assert sorted(os.listdir(root)) == [".groundskeeper", "plan.org"]


def test_path_link_is_refused_read_only(tree: Path) -> None:
    made = _guest(tree, read_only=True)
    try:
        assert link(made, b"a.txt", b"b.txt") == preview1.ROFS
    finally:
        made.process.close()
        os.close(made.process.root_fd)
    assert not (tree / "b.txt").exists()


def test_path_link_inside_makes_a_second_name(guest: Guest, tree: Path) -> None:
    assert link(guest, b"a.txt", b"sub/b.txt") == preview1.SUCCESS
    assert link(guest, b"in-link", b"c.txt", FOLLOW) == preview1.SUCCESS
    assert os.stat(tree / "a.txt").st_nlink == 3
    assert (tree / "sub" / "b.txt").read_text() == "alpha\n"


# ---- sizes, positioned writes and the quota -------------------------------------------------


def _open_writer(g: Guest, name: bytes) -> int:
    assert g.open(name, rights=R_READ | R_WRITE) == preview1.SUCCESS
    return g.u32()


def test_growing_a_file_by_truncate_counts_against_the_quota(tree: Path) -> None:
    quota = DiskQuota(1000)
    made = _guest(tree, quota=quota)
    try:
        fd = _open_writer(made, b"a.txt")
        assert made.call("fd_filestat_set_size", fd, 900) == preview1.SUCCESS
        assert quota.used == 900 - len("alpha\n")
        with pytest.raises(GuestTrap, match="disk quota"):
            made.call("fd_filestat_set_size", fd, 10**12)
        assert made.process.fault == "disk"
        assert os.path.getsize(tree / "a.txt") == 900
    finally:
        made.process.close()
        os.close(made.process.root_fd)


def test_a_positioned_write_counts_against_the_quota(tree: Path) -> None:
    quota = DiskQuota(8)
    made = _guest(tree, quota=quota)
    try:
        fd = _open_writer(made, b"a.txt")
        data_at, length = made.put(b"0123456789", BUF)
        struct.pack_into("<II", made.memory, PATH2, data_at, length)
        with pytest.raises(GuestTrap, match="disk quota"):
            made.call("fd_pwrite", fd, PATH2, 1, 100, OUT)
        struct.pack_into("<II", made.memory, PATH2, data_at, 3)
        assert made.call("fd_pwrite", fd, PATH2, 1, 2, OUT) == preview1.SUCCESS
        assert (made.u32(), quota.used) == (3, 3)
    finally:
        made.process.close()
        os.close(made.process.root_fd)
    assert (tree / "a.txt").read_bytes() == b"al012\n"


def test_a_read_only_descriptor_cannot_be_resized_or_written(guest: Guest, tree: Path) -> None:
    assert guest.open(b"a.txt", rights=R_READ) == preview1.SUCCESS
    fd = guest.u32()
    assert guest.call("fd_filestat_set_size", fd, 0) == preview1.BADF
    struct.pack_into("<II", guest.memory, PATH2, BUF, 1)
    assert guest.call("fd_pwrite", fd, PATH2, 1, 0, OUT) == preview1.BADF
    assert guest.call("fd_filestat_set_size", 1, 0) == preview1.SPIPE  # stdout: a stream
    assert guest.call("fd_allocate", fd, 0, 10) == preview1.NOTSUP
    assert (tree / "a.txt").read_text() == "alpha\n"


def test_times_of_a_protected_file_cannot_be_set_through_its_descriptor(tree: Path) -> None:
    before = os.stat(tree / "a.txt").st_mtime_ns
    with fence.enforced(fence.protecting(tree, ["a.txt"])):
        made = _guest(tree)
        try:
            assert made.open(b"a.txt", rights=R_READ) == preview1.SUCCESS
            fd = made.u32()
            code = made.call("fd_filestat_set_times", fd, 0, 5, preview1.MTIM_NOW)
            assert code == preview1.ACCES
        finally:
            made.process.close()
            os.close(made.process.root_fd)
    assert os.stat(tree / "a.txt").st_mtime_ns == before


def test_pread_and_tell_read_where_asked(guest: Guest) -> None:
    assert guest.open(b"a.txt", rights=R_READ) == preview1.SUCCESS
    fd = guest.u32()
    struct.pack_into("<II", guest.memory, PATH2, BUF, 3)
    assert guest.call("fd_pread", fd, PATH2, 1, 2, OUT) == preview1.SUCCESS
    assert bytes(guest.memory[BUF : BUF + guest.u32()]) == b"pha"
    assert guest.call("fd_tell", fd, OUT) == preview1.SUCCESS
    assert struct.unpack_from("<Q", guest.memory, OUT)[0] == 0  # pread moves no offset
    assert guest.call("fd_tell", 1, OUT) == preview1.SPIPE


# ---- randomness, clocks, sockets ------------------------------------------------------------


def test_random_get_is_real_randomness(guest: Guest) -> None:
    assert guest.call("random_get", BUF, 32) == preview1.SUCCESS
    first = bytes(guest.memory[BUF : BUF + 32])
    assert guest.call("random_get", BUF, 32) == preview1.SUCCESS
    assert first != bytes(guest.memory[BUF : BUF + 32]) and first != bytes(32)
    assert guest.call("random_get", len(guest.memory) - 4, 32) == preview1.FAULT


def test_clock_res_get_knows_the_four_clocks(guest: Guest) -> None:
    for clock in range(4):
        assert guest.call("clock_res_get", clock, OUT) == preview1.SUCCESS
        assert struct.unpack_from("<Q", guest.memory, OUT)[0] == 1000
    assert guest.call("clock_res_get", 9, OUT) == preview1.INVAL


@pytest.mark.parametrize(
    ("call", "arguments"),
    [
        ("sock_accept", (3, 0, OUT)),
        ("sock_recv", (3, PATH2, 1, 0, OUT, OUT)),
        ("sock_send", (3, PATH2, 1, 0, OUT)),
        ("sock_shutdown", (3, 2)),
    ],
)
def test_sockets_are_refused(guest: Guest, call: str, arguments: tuple[int, ...]) -> None:
    assert guest.call(call, *arguments) == preview1.NOTSUP


# ---- shelves and /dev/null ------------------------------------------------------------------


@pytest.fixture
def shelved(tree: Path, tmp_path: Path) -> Iterator[tuple[Guest, Path, Path]]:
    """A read-only run with a read-only shelf (fd 4), a writable one (fd 5) and /dev (fd 6)."""
    site, scratch = tmp_path / "site", tmp_path / "scratch"
    site.mkdir()
    scratch.mkdir()
    (site / "mod.py").write_text("X = 1\n")
    site_fd = os.open(site, os.O_RDONLY | os.O_DIRECTORY)
    scratch_fd = os.open(scratch, os.O_RDONLY | os.O_DIRECTORY)
    made = _guest(
        tree,
        read_only=True,
        shelves=((site_fd, "/site", False), (scratch_fd, "/tmp", True)),
        dev_null=True,
    )
    yield made, site, scratch
    made.process.close()
    for fd in (made.process.root_fd, site_fd, scratch_fd):
        os.close(fd)


def test_a_read_only_shelf_refuses_every_change(shelved: tuple[Guest, Path, Path]) -> None:
    made, site, _ = shelved
    before = snapshot(site)
    at, length = made.put(b"mod.py")
    assert made.call("path_open", 4, 0, at, length, 0, R_WRITE, 0, 0, OUT) == preview1.ROFS
    assert made.call("path_open", 4, 0, at, length, preview1.O_CREAT, R_READ, 0, 0, OUT) == (
        preview1.ROFS
    )
    assert made.call("path_unlink_file", 4, at, length) == preview1.ROFS
    assert made.call("path_create_directory", 4, *made.put(b"new")) == preview1.ROFS
    assert made.call("path_rename", 4, at, length, 5, *made.put(b"m.py", PATH2)) == preview1.ROFS
    assert link(made, b"mod.py", b"m.py", old_fd=4, new_fd=5) == preview1.ROFS
    assert made.call("path_open", 4, 0, at, length, 0, R_READ, 0, 0, OUT) == preview1.SUCCESS
    assert snapshot(site) == before


def test_a_writable_shelf_takes_writes_in_a_read_only_run(
    shelved: tuple[Guest, Path, Path], tree: Path
) -> None:
    made, _, scratch = shelved
    at, length = made.put(b"result.xml")
    assert made.call("path_open", 5, 0, at, length, preview1.O_CREAT, R_WRITE, 0, 0, OUT) == (
        preview1.SUCCESS
    )
    assert (scratch / "result.xml").exists()
    # the workdir stays read-only, and nothing moves from the scratch into it
    assert made.open(b"new.txt", oflags=preview1.O_CREAT, rights=R_WRITE) == preview1.ROFS
    assert link(made, b"result.xml", b"got.xml", old_fd=5, new_fd=3) == preview1.ROFS
    assert not (tree / "got.xml").exists()


def test_dev_null_reads_nothing_and_keeps_nothing(shelved: tuple[Guest, Path, Path]) -> None:
    made, _, _ = shelved
    at, length = made.put(b"null")
    assert made.call("path_open", 6, 0, at, length, 0, R_READ | R_WRITE, 0, 0, OUT) == 0
    fd = made.u32()
    data_at, data_length = made.put(b"dropped", BUF)
    struct.pack_into("<II", made.memory, PATH2, data_at, data_length)
    assert made.call("fd_write", fd, PATH2, 1, OUT) == preview1.SUCCESS
    struct.pack_into("<II", made.memory, PATH2, BUF, 16)
    assert made.call("fd_read", fd, PATH2, 1, OUT) == preview1.SUCCESS
    assert made.u32() == 0
    for name in (b"zero", b"../root/a.txt", b"null/x"):
        at, length = made.put(name)
        assert made.call("path_open", 6, 0, at, length, 0, R_READ, 0, 0, OUT) == preview1.NOENT
