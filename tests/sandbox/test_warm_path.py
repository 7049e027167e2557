"""What the warm path keeps from run to run changes nothing a run sees: a line parsed once
is run afresh in each workdir, a syntax error is reported every time, and the home the fence
hides is the one the environment names at each run."""

from __future__ import annotations

from pathlib import Path

import pytest

from groundskeeper import sandbox


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
