"""`groundskeeper sh` through click's CliRunner: JSON keys, exit status, usage errors."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from groundskeeper.cli import main

KEYS = {"status", "stdout", "stderr", "duration_ms", "fault"}


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["sh", *args])
    return result.exit_code, result.stdout, result.stderr


def test_json_output_has_every_key_and_the_exit_is_the_status(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("Hobby tier\nPro tier\n")
    code, out, _ = invoke("--workdir", str(tmp_path), "--json", "--", "grep -c tier notes.md")
    document = json.loads(out)
    assert set(document) == KEYS
    assert (code, document["status"], document["stdout"]) == (0, 0, "2\n")
    assert (document["stderr"], document["fault"]) == ("", None)
    assert isinstance(document["duration_ms"], float) and document["duration_ms"] > 0


def test_failures_keep_their_status_and_stderr(tmp_path: Path) -> None:
    code, out, err = invoke("--workdir", str(tmp_path), "--", "curl example.org")
    assert (code, out, err) == (127, "", "curl: command not found (not in the sandbox)\n")
    code, out, _ = invoke("--workdir", str(tmp_path), "--json", "--", "f() { :; }")
    document = json.loads(out)
    assert (code, document["status"], document["fault"]) == (2, 2, "syntax")
    assert "function definitions are not supported" in document["stderr"]


def test_plain_output_goes_to_stdout_and_words_are_joined(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    code, out, err = invoke("--workdir", str(tmp_path), "--", "cat", "a.txt")
    assert (code, out, err) == (0, "alpha\n", "")


def test_read_only_and_timeout_options(tmp_path: Path) -> None:
    code, _, err = invoke("--workdir", str(tmp_path), "--read-only", "--", "printf x > f.txt")
    assert code == 1 and "Read-only" in err
    assert not (tmp_path / "f.txt").exists()
    code, out, _ = invoke(
        "--workdir", str(tmp_path), "--timeout", "0.000001", "--json", "--", "true"
    )
    assert (code, json.loads(out)["fault"]) == (124, "deadline")


def test_usage_errors_exit_2_without_traceback(tmp_path: Path) -> None:
    code, _, err = invoke("--workdir", str(tmp_path / "missing"), "--", "true")
    assert code == 2
    assert "missing is not a directory" in err and "Traceback" not in err
    code, _, err = invoke("--timeout", "0", "--", "true")
    assert code == 2 and "--timeout" in err
    code, _, err = invoke()
    assert code == 2 and "missing CMD" in err and "--commands" in err


# ---- sh --commands -------------------------------------------------------------------------


def test_commands_json_lists_every_command_with_its_options() -> None:
    from groundskeeper.sandbox import COMMANDS

    code, out, err = invoke("--commands", "--json")
    document = json.loads(out)
    assert (code, err, set(document)) == (0, "", {"commands"})
    entries = document["commands"]
    assert all(set(e) == {"name", "summary", "options"} for e in entries)
    assert [e["name"] for e in entries] == sorted(COMMANDS)
    by_name = {e["name"]: e for e in entries}
    assert by_name["sed"]["options"][:5] == ["-n", "-E/-r", "-e SCRIPT", "-s", "-i[SUFFIX]"]
    assert by_name["grep"]["summary"] == "print lines matching patterns (no -P: use -E)"
    assert by_name["rev"]["options"] == []


def test_commands_text_is_one_aligned_line_a_command() -> None:
    from groundskeeper.sandbox import COMMANDS

    code, out, _ = invoke("--commands")
    lines = out.splitlines()
    assert code == 0 and len(lines) == len(COMMANDS)
    tee = next(line for line in lines if line.startswith("tee "))
    assert tee == "tee          copy stdin to stdout and files; options: -a"
    assert "rev          reverse each line's characters" in lines


def test_commands_with_a_command_line_is_a_usage_error() -> None:
    code, out, err = invoke("--commands", "--", "ls")
    assert (code, out) == (2, "")
    assert "--commands lists the commands and runs nothing" in err


def test_an_unknown_command_names_the_closest_one(tmp_path: Path) -> None:
    code, out, err = invoke("--workdir", str(tmp_path), "--", "grpe x f; sha265sum f")
    assert (code, out) == (127, "")
    assert err == (
        "grpe: command not found (not in the sandbox); did you mean grep?\n"
        "sha265sum: command not found (not in the sandbox); did you mean sha256sum?\n"
    )
