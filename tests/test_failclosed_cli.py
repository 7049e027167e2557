"""Adversarial CLI input for `lint` and `sh`: every unusable argument exits 2 with a message
naming it and the fix on stderr — never a traceback, never 0."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from groundskeeper.cli import main
from groundskeeper.sandbox.result import ShellResult


def invoke(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args))
    # an uncaught exception would hide behind exit code 1: make it loud
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


# --- lint ----------------------------------------------------------------------------------


def test_lint_refuses_a_fifo_instead_of_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "plan.org"
    os.mkfifo(fifo)
    result = invoke("lint", str(fifo), "--json")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert str(fifo) in result.stderr and "not a regular file" in result.stderr


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_lint_refuses_devices(device: str) -> None:
    result = invoke("lint", device)
    assert result.exit_code == 2
    assert f"{device}: not a regular file" in result.stderr


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b"* TODO a\n\xff\xfe\n", "not valid UTF-8"),
        (b"* TODO a\n\x00\x01", "binary file"),
        (b"\xef\xbb\xbf* TODO a\n\xc3\x28\n", "not valid UTF-8"),
    ],
)
def test_lint_unreadable_content_exits_2_naming_file_and_line(
    tmp_path: Path, content: bytes, words: str
) -> None:
    plan = tmp_path / "plan.org"
    plan.write_bytes(content)
    result = invoke("lint", str(plan), "--json")
    assert (result.exit_code, result.stdout) == (2, "")
    assert f"{plan}:2:" in result.stderr and words in result.stderr
    assert "Traceback" not in result.stderr


def test_lint_a_directory_and_a_missing_file_exit_2(tmp_path: Path) -> None:
    for path, words in ((tmp_path, "is a directory"), (tmp_path / "nope.org", "no such file")):
        result = invoke("lint", str(path))
        assert result.exit_code == 2
        assert str(path) in result.stderr and words in result.stderr


def test_lint_a_non_utf8_file_name_exits_with_a_message(tmp_path: Path) -> None:
    result = invoke("lint", str(tmp_path) + "/\udcff.org")
    assert result.exit_code == 2
    assert "no such file" in result.stderr


def test_lint_an_empty_outline_is_a_finding_not_ok(tmp_path: Path) -> None:
    plan = tmp_path / "plan.org"
    plan.write_text("")
    result = invoke("lint", str(plan), "--outline", "--json")
    assert result.exit_code == 1
    assert [d["code"] for d in json.loads(result.stdout)] == ["T001"]


# --- sh ------------------------------------------------------------------------------------


@pytest.mark.parametrize("timeout", ["nan", "inf", "-inf", "1e300", "0", "-1"])
def test_sh_refuses_unusable_timeouts(tmp_path: Path, timeout: str) -> None:
    result = invoke("sh", "--workdir", str(tmp_path), "--timeout", timeout, "--", "true")
    assert result.exit_code == 2, result.output
    assert "--timeout" in result.stderr


def test_sh_refuses_a_command_that_is_not_utf8(tmp_path: Path) -> None:
    result = invoke("sh", "--workdir", str(tmp_path), "--json", "--", "echo \udcff")
    assert (result.exit_code, result.stdout) == (2, "")
    assert "not valid UTF-8" in result.stderr


def test_sh_refuses_a_workdir_whose_name_is_not_utf8(tmp_path: Path) -> None:
    odd = os.fsdecode(os.fsencode(str(tmp_path)) + b"/\xff")
    os.mkdir(odd)
    result = invoke("sh", "--workdir", odd, "--json", "--", "echo hi")
    assert (result.exit_code, result.stdout) == (2, "")
    assert "--workdir" in result.stderr and "UTF-8" in result.stderr


@pytest.mark.parametrize("kind", ["missing", "file", "fifo"])
def test_sh_refuses_a_workdir_that_is_not_a_directory(tmp_path: Path, kind: str) -> None:
    target = tmp_path / "w"
    if kind == "file":
        target.write_text("x")
    elif kind == "fifo":
        os.mkfifo(target)
    result = invoke("sh", "--workdir", str(target), "--", "true")
    assert result.exit_code == 2
    assert f"--workdir {target} is not a directory" in result.stderr


def test_sh_a_stopped_run_never_exits_0(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import groundskeeper.sandbox as sandbox

    def stopped(cmdline: str, **_: object) -> ShellResult:
        return ShellResult(0, "partial", "", 1.0, "deadline")

    monkeypatch.setattr(sandbox, "run", stopped)
    result = invoke("sh", "--workdir", str(tmp_path), "--json", "--", "true")
    assert result.exit_code != 0
    assert json.loads(result.stdout)["fault"] == "deadline"


def test_sh_a_syntax_error_is_2_with_every_json_key(tmp_path: Path) -> None:
    result = invoke("sh", "--workdir", str(tmp_path), "--json", "--", "echo $[1+1]")
    document = json.loads(result.stdout)
    assert set(document) == {"status", "stdout", "stderr", "duration_ms", "fault"}
    assert (result.exit_code, document["fault"]) == (2, "syntax")


@pytest.mark.parametrize("deadline", ["nan", "inf", "1e300", "0"])
def test_engine_run_refuses_unusable_deadlines_as_usage_errors(
    tmp_path: Path, deadline: str
) -> None:
    component = tmp_path / "c.wasm"
    component.write_bytes(b"\0asm")
    result = invoke("engine", "run", str(component), "--deadline", deadline)
    assert result.exit_code == 2
    assert "--deadline" in result.stderr
