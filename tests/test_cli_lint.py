"""`groundskeeper lint` through click's CliRunner: output shapes and exit codes 0/1/2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from tests.test_lint import SEED_DIAGNOSTICS

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
BROKEN = EXAMPLES / "broken-workflow.org"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["lint", *args])
    # an uncaught exception would hide behind exit code 1: make it loud
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


# --- unusable input: exit 2, a message, no traceback -----------------------------------------


def test_missing_file_exits_2_with_a_message(tmp_path: Path) -> None:
    code, out, err = run(str(tmp_path / "plan.org"), "--json")
    assert code == 2
    assert out == ""
    assert "plan.org: no such file" in err
    assert "Traceback" not in err


def test_directory_exits_2(tmp_path: Path) -> None:
    code, _, err = run(str(tmp_path))
    assert code == 2
    assert "is a directory" in err


def test_binary_exits_2(tmp_path: Path) -> None:
    target = tmp_path / "x.org"
    target.write_bytes(b"\x7fELF\x00\x00")
    code, _, err = run(str(target))
    assert code == 2
    assert "x.org:1: binary file" in err


def test_invalid_utf8_exits_2_naming_the_line(tmp_path: Path) -> None:
    target = tmp_path / "x.org"
    target.write_bytes(b"* TODO a\n* TODO \xff\n")
    code, _, err = run(str(target))
    assert code == 2
    assert "x.org:2: not valid UTF-8" in err
    assert "Traceback" not in err


# --- findings -----------------------------------------------------------------------------------


def test_seed_example_json_and_exit_1() -> None:
    code, out, _ = run(str(BROKEN), "--json")
    assert code == 1
    assert json.loads(out) == SEED_DIAGNOSTICS


def test_seed_example_human_output_is_compiler_style() -> None:
    code, out, _ = run(str(BROKEN))
    assert code == 1
    name = str(BROKEN)
    assert out.splitlines() == [
        f"{name}:2: error: Summarize: input `events:list` has no upstream producer [W002]",
        f"{name}:6: error: Orphan task: component has no source block / language [W001]",
        f"2 errors, 0 warnings in {name}",
    ]


def test_clean_plan_exits_0() -> None:
    code, out, _ = run(str(EXAMPLES / "pricing.org"), "--outline")
    assert code == 0
    assert out == f"0 errors, 0 warnings in {EXAMPLES / 'pricing.org'}\n"


def test_warnings_alone_exit_0(tmp_path: Path) -> None:
    target = tmp_path / "plan.org"
    target.write_text("* TODO Write it\n")
    code, out, _ = run(str(target), "--json")
    assert code == 0
    (warning,) = json.loads(out)
    assert (warning["code"], warning["level"], warning["line"]) == ("T002", "warning", 1)
    code, out, _ = run(str(target))
    assert out.splitlines()[-1] == f"0 errors, 1 warning in {target}"


@pytest.mark.parametrize(("flag", "expected"), [((), ["T013"]), (("--outline",), ["T001"])])
def test_outline_flag_adds_t001(tmp_path: Path, flag: tuple[str, ...], expected: list[str]) -> None:
    target = tmp_path / "plan.org"
    target.write_text("* Notes\n")
    code, out, _ = run(str(target), "--json", *flag)
    assert [d["code"] for d in json.loads(out)] == expected
    assert code == (1 if expected == ["T001"] else 0)  # T013 is a warning


def test_help_teaches_the_exit_codes() -> None:
    result = CliRunner().invoke(main, ["lint", "--help"])
    assert result.exit_code == 0
    assert "Exit status: 0 no errors" in result.output
    assert "--outline" in result.output
