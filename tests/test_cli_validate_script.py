"""`groundskeeper validate-script` through click's CliRunner: output shapes and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from groundskeeper.cli import main
from tests.test_script_validation import VALID

JSON_KEYS = ["file", "ok", "errors", "warnings", "config", "duration_ms"]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["validate-script", *args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


def test_missing_file_exits_2_without_a_traceback(tmp_path: Path) -> None:
    code, out, err = run(str(tmp_path / "flow.js"), "--json")
    assert code == 2
    assert out == ""
    assert f"groundskeeper: error: {tmp_path / 'flow.js'}: no such file" in err
    assert "Traceback" not in err


def test_directory_and_non_utf8_exit_2(tmp_path: Path) -> None:
    code, _, err = run(str(tmp_path))
    assert code == 2
    assert "is a directory" in err
    (tmp_path / "x.js").write_bytes(b"const workflow = '\xfe';\n")
    code, _, err = run(str(tmp_path / "x.js"))
    assert code == 2
    assert "x.js:1: not valid UTF-8" in err


def test_valid_script_exits_0_and_prints_its_config(tmp_path: Path) -> None:
    (tmp_path / "flow.js").write_text(VALID)
    code, out, _ = run(str(tmp_path / "flow.js"), "--json")
    assert code == 0
    document = json.loads(out)
    assert list(document) == JSON_KEYS
    assert document["ok"] is True
    assert document["errors"] == [] and document["warnings"] == []
    assert document["config"]["producers"]["pollEmail"] == {"schedule": {"interval": "5m"}}
    code, out, _ = run(str(tmp_path / "flow.js"))
    assert code == 0
    assert out.startswith(f"{tmp_path / 'flow.js'}: valid workflow script; config:\n{{\n")


def test_invalid_script_exits_1_with_every_key_present(tmp_path: Path) -> None:
    (tmp_path / "flow.js").write_text('const x = 1;\nGmail.send({to: "a"});\n')
    code, out, _ = run(str(tmp_path / "flow.js"), "--json")
    assert code == 1
    document = json.loads(out)
    assert list(document) == JSON_KEYS
    assert document["ok"] is False
    assert document["config"] is None
    assert [e["code"] for e in document["errors"]] == ["tool-call"]
    assert document["errors"][0]["line"] == 2
    code, out, _ = run(str(tmp_path / "flow.js"))
    assert code == 1
    assert out.splitlines() == [
        f"{tmp_path / 'flow.js'}:2: error: Tool calls not allowed during validation: the script"
        " calls Gmail.send at the top level (line 2); call tools only inside producer handlers"
        " and consumer prepare/mutate/next functions (a name the script never defines counts"
        " as a tool here) [tool-call]",
        f"{tmp_path / 'flow.js'}: invalid: 1 error",
    ]


def test_huge_script_is_invalid_not_unreadable(tmp_path: Path) -> None:
    (tmp_path / "big.js").write_text("//" + "x" * 400_000)
    code, out, _ = run(str(tmp_path / "big.js"), "--json")
    assert code == 1
    assert [e["code"] for e in json.loads(out)["errors"]] == ["script-too-large"]


def test_lone_surrogates_in_names_print_as_replacement_characters(tmp_path: Path) -> None:
    (tmp_path / "flow.js").write_text(
        'const workflow = { topics: { "\\uDC00": {} }, consumers: { "\\uD800x": {'
        ' subscribe: ["\\uDC00", "\\uD83D\\uDE00"], prepare() {} } } };\n'
    )
    code, out, _ = run(str(tmp_path / "flow.js"), "--json")
    assert code == 0
    document = json.loads(out)
    assert document["config"]["consumers"] == {
        "\ufffdx": {"subscribe": ["\ufffd", "\U0001f600"], "hasMutate": False, "hasNext": False}
    }
    assert document["warnings"][0]["message"].startswith(
        'workflow.consumers["\ufffdx"] subscribes to "\U0001f600", which'
    )
    code, out, _ = run(str(tmp_path / "flow.js"))
    assert code == 0
    assert '"\ufffdx": {' in out
