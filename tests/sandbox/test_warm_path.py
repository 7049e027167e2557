"""What the warm path keeps from run to run changes nothing a run sees: a line parsed once
is run afresh in each workdir, a syntax error is reported every time, and the home the fence
hides is the one the environment names at each run."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper import sandbox
from groundskeeper.sandbox import shell, wasi
from groundskeeper.sandbox.result import ShellResult


def test_a_line_run_again_sees_each_workdir_afresh(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    for directory, text in ((first, "one\n"), (second, "two\n")):
        directory.mkdir()
        (directory / "f").write_text(text)
    line = "cat f; X=${X:-unset}; echo $X; X=set"
    assert sandbox.run(line, workdir=first).stdout == "one\nunset\n"
    assert sandbox.run(line, workdir=second).stdout == "two\nunset\n"
    assert sandbox.run(line, workdir=first, env={"X": "given"}).stdout == "one\ngiven\n"


def test_a_syntax_error_is_reported_at_every_run(tmp_path: Path) -> None:
    for _ in range(3):
        result = sandbox.run("echo (", workdir=tmp_path)
        assert (result.status, result.fault) == (2, "syntax")
        assert result.stderr.startswith("sh: syntax error at line 1")


def test_the_hidden_home_is_the_one_named_at_each_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("h1", "h2"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "secret").write_text(name)
    monkeypatch.setenv("GROUNDSKEEPER_HOME", str(tmp_path / "h1"))
    assert sandbox.run("ls", workdir=tmp_path).stdout.split() == ["h2"]
    monkeypatch.setenv("GROUNDSKEEPER_HOME", str(tmp_path / "h2"))
    assert sandbox.run("ls", workdir=tmp_path).stdout.split() == ["h1"]
    monkeypatch.setenv("GROUNDSKEEPER_HOME", str(tmp_path / "h1") + "/")  # another spelling
    assert sandbox.run("ls", workdir=tmp_path).stdout.split() == ["h2"]
    assert sandbox.run("cat h1/secret", workdir=tmp_path).status != 0


def _limited(cmdline: str, work: Path, timeout: float = 10.0, **limits: int) -> ShellResult:
    return shell.run_cmdline(cmdline, workdir=work, read_only=False, timeout=timeout, env=None,
                             limits=wasi.Limits(**limits))  # fmt: skip


def test_a_kept_store_holds_each_runs_own_memory_limit_and_deadline(tmp_path: Path) -> None:
    """A runtime keeps its store from a run that ended well to the next: the next run's
    memory limit is still its own (a smaller one gets a store of its own), a stopped run's
    successor is armed afresh, and an interrupt stops the run that follows it no less."""
    line = "0123456789 abcdefghijklmnopqrstuvwxyz x\n"
    (tmp_path / "big.txt").write_text(line * (12 * 1024 * 1024 // len(line)))
    for _ in range(3):  # with the pool's one runtime, its store kept in between
        assert _limited("sort big.txt | wc -l", tmp_path).stdout.strip() == "314572"
        small = _limited("sort big.txt", tmp_path, memory=24 * 1024 * 1024)
        assert (small.status, small.fault) == (125, "memory")
        slow = _limited("sleep 5", tmp_path, timeout=0.3)
        assert (slow.status, slow.fault) == (124, "deadline")
        assert _limited("echo ok", tmp_path).stdout == "ok\n"
    wasi.interrupt_runs()
    try:
        stopped = _limited("echo no", tmp_path)
        assert (stopped.status, stopped.fault) == (130, "interrupted")
    finally:
        wasi.allow_runs()
    assert _limited("echo again", tmp_path).stdout == "again\n"
