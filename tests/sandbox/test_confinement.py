"""Nothing outside the workdir can be read, listed, created or changed — by the commands
(WASI) or by the interpreter itself (redirections, globs, cd)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from groundskeeper import sandbox
from groundskeeper.sandbox import ShellResult

SECRET = "TOP-SECRET-7f3a"


@pytest.fixture
def layout(tmp_path: Path) -> Path:
    """tmp/outside/{x, dir/inner.txt} holds the secret; tmp/work is the workdir, with
    symlinks pointing out (file and directory) and one pointing in."""
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "x").write_text(SECRET + "\n")
    (outside / "dir" / "inner.txt").write_text(SECRET + "\n")
    (tmp_path / "x").write_text(SECRET + "\n")  # what ../x names from the workdir
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    (work / "a.txt").write_text("alpha\n")
    (work / "link-file").symlink_to(outside / "x")
    (work / "link-dir").symlink_to(outside / "dir")
    (work / "link-new").symlink_to(outside / "created.txt")  # dangling, points out
    (work / "link-in").symlink_to("a.txt")  # WASI refuses absolute link targets
    return work


def snapshot(root: Path) -> dict[str, str]:
    return {
        str(path.relative_to(root)): path.read_text() if path.is_file() else "<dir>"
        for path in sorted(root.rglob("*"))
        if not path.is_symlink()
    }


def refused(result: ShellResult) -> None:
    assert result.status != 0
    assert SECRET not in result.stdout + result.stderr
    assert result.fault is None


ESCAPES = [
    "cat ../x",
    "cat /etc/hostname",
    "cat link-file",
    "cat link-dir/inner.txt",
    "cat < link-file",
    "cat < ../x",
    "cat < /etc/hostname",
    "cat ../*",
    "cat link-dir/*",
    "cat sub/../../x",
    "cd sub && cat ../../x",
    "cd ..",
    "cd /",
    "cd link-dir",
    "grep -r SECRET ..",
    "grep -r SECRET link-dir",
    "printf x > ../x",
    "printf x > /tmp/gk-escape-test",
    "printf x > link-file",
    "printf x > link-new",
    "printf x >> link-file",
    "printf x 2> link-file",
    "printf x > link-dir/inner.txt",
    "printf x > ../created.txt",
]


@pytest.mark.parametrize("cmdline", ESCAPES)
def test_escape_is_refused_and_leaks_nothing(cmdline: str, layout: Path) -> None:
    outside = layout.parent / "outside"
    before = snapshot(layout.parent)
    result = sandbox.run(cmdline, workdir=layout)
    refused(result)
    if cmdline.startswith("cat /etc") or cmdline.endswith("/etc/hostname"):
        hostname = Path("/etc/hostname").read_text().strip()
        assert not hostname or hostname not in result.stdout
    assert snapshot(layout.parent) == before
    assert not (outside / "created.txt").exists()
    assert not Path("/tmp/gk-escape-test").exists()


@pytest.mark.parametrize(
    "cmdline",
    ["ls ..", "ls link-dir", "ls /", "cp link-file in.txt", "cp ../x in.txt", "find .. -name x"],
)
def test_listing_and_copying_out_is_refused(cmdline: str, layout: Path) -> None:
    before = snapshot(layout.parent)
    result = sandbox.run(cmdline, workdir=layout)
    assert result.status not in (0, 127), result.stderr  # the command exists and refuses
    refused(result)
    assert "inner.txt" not in result.stdout
    assert snapshot(layout.parent) == before


def test_host_messages_name_the_refusal(layout: Path) -> None:
    assert sandbox.run("cd ..", workdir=layout).stderr == (
        "cd: ..: leaves the workdir (not in the sandbox)\n"
    )
    assert sandbox.run("cd link-dir", workdir=layout).stderr == (
        "cd: link-dir: leads outside the workdir (not in the sandbox)\n"
    )
    assert sandbox.run("printf x > /tmp/y", workdir=layout).stderr == (
        "sh: /tmp/y: absolute paths are outside the sandbox\n"
    )
    assert sandbox.run("printf x > link-file", workdir=layout).stderr == (
        "sh: link-file: leads outside the workdir (not in the sandbox)\n"
    )


def test_symlinks_inside_the_workdir_still_work(layout: Path) -> None:
    assert sandbox.run("cat link-in", workdir=layout).stdout == "alpha\n"
    assert sandbox.run("cat < link-in", workdir=layout).stdout == "alpha\n"
    assert sandbox.run("printf more >> link-in", workdir=layout).status == 0
    assert (layout / "a.txt").read_text() == "alpha\nmore"


@pytest.mark.parametrize("name", ["curl", "bash", "perl", "sh", "wget", "/bin/sh", "nc"])
def test_no_way_out_to_native_programs(name: str, layout: Path) -> None:
    result = sandbox.run(f"{name} -c 'cat ../x'", workdir=layout)
    assert (result.status, result.stdout) == (127, "")
    assert result.stderr == f"{name}: command not found (not in the sandbox)\n"


@pytest.mark.parametrize(
    "cmdline",
    [
        "printf x > new.txt",
        "printf x >> a.txt",
        "cat a.txt 2> err.txt",
        "sed -i s/alpha/omega/ a.txt",
        "touch new.txt",
        "mkdir newdir",
        "rm a.txt",
        "cp a.txt b.txt",
        "mv a.txt b.txt",
    ],
)
def test_read_only_mode_writes_nothing(cmdline: str, layout: Path) -> None:
    before = snapshot(layout)
    result = sandbox.run(cmdline, workdir=layout, read_only=True)
    assert result.status not in (0, 127), (result.status, result.stderr)
    assert snapshot(layout) == before


def test_read_only_mode_still_reads(layout: Path) -> None:
    result = sandbox.run("cat a.txt | grep -c alpha > /dev/null", workdir=layout, read_only=True)
    assert result.status == 0
    assert sandbox.run("cat a.txt", workdir=layout, read_only=True).stdout == "alpha\n"


def test_no_host_environment_reaches_the_commands(
    layout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GK_LEAK_CANARY", SECRET)
    result = sandbox.run('printf "%s" "$GK_LEAK_CANARY"; env', workdir=layout)
    assert SECRET not in result.stdout
    assert os.environ["GK_LEAK_CANARY"] == SECRET


@pytest.mark.parametrize(
    "cmdline",
    ["cat /a.txt", "ls /", "mkdir -p /tmp/gk-abs", "touch /a.txt", "cp a.txt /copy.txt"],
)
def test_absolute_paths_are_refused_inside_the_commands(cmdline: str, layout: Path) -> None:
    # The workdir is not `/` inside WASI: an absolute path never aliases a file in it.
    before = snapshot(layout.parent)
    result = sandbox.run(cmdline, workdir=layout)
    assert result.status not in (0, 127), result.stdout
    assert "No such file or directory" in result.stderr
    assert snapshot(layout.parent) == before
