"""`groundskeeper report` through click's CliRunner: files written, exit codes, errors that
name the file and the fix, exports refused for a ledger that does not verify."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from tests.review.conftest import VECTOR_KEY, VECTORS, Run

SUMMARY_KEYS = {"intact", "status", "first_broken_line", "findings", "format", "written"}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.stderr
    return result.exit_code, result.stdout, result.stderr


def test_no_ledger_is_a_usage_error(tmp_path: Path) -> None:
    code, out, err = run("report", str(tmp_path))
    assert (code, out) == (2, "")
    assert "no ledger at" in err and "pass a plan file, its directory or a _steps.jsonl" in err


def test_a_bad_prices_file_names_its_line_and_the_fix(demo: Run, tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("anthropic:m:\n  input_tokens: 3\n  output_tokens: [\n")
    code, _, err = run("report", str(demo.work), "--key", str(demo.key), "--prices", str(prices))
    assert code == 2
    assert f"{prices}:4: not YAML or JSON" in err and "input_tokens: N" in err
    prices.write_text("anthropic:m: {input_tokens: -1}\n")
    code, _, err = run("report", str(demo.work), "--key", str(demo.key), "--prices", str(prices))
    assert code == 2 and "input_tokens must be a number ≥ 0" in err


def test_a_broken_ledger_still_gets_its_page_and_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run(
        "report", str(VECTORS / "edited-value"), "--key", str(VECTOR_KEY), "--json"
    )
    assert code == 1
    summary = json.loads(out)
    assert set(summary) == SUMMARY_KEYS
    assert (summary["status"], summary["first_broken_line"]) == ("broken", 5)
    assert summary["written"] == ["report.html"]
    page = (tmp_path / "report.html").read_text()
    assert "Ledger broken at line 5" in page
    ledger = VECTORS / "edited-value" / "_steps.jsonl"
    assert f"groundskeeper ledger verify {ledger} --key {VECTOR_KEY}" in page
    assert "does NOT verify" in err


@pytest.mark.parametrize("fmt", ["intoto", "otlp-json"])
def test_exports_of_a_broken_ledger_are_refused(fmt: str, tmp_path: Path) -> None:
    out_file = tmp_path / "export"
    code, _, err = run("report", str(VECTORS / "swapped"), "--key", str(VECTOR_KEY),
                       "--format", fmt, "-o", str(out_file))  # fmt: skip
    assert code == 1
    assert "does not verify" in err and "nothing exported" in err
    assert not out_file.exists()


def test_json_goes_to_stdout_and_the_summary_needs_a_file(demo: Run) -> None:
    code, out, _ = run("report", str(demo.work), "--key", str(demo.key), "--format", "json")
    assert code == 0
    assert json.loads(out)["integrity"]["status"] == "intact"
    code, _, err = run("report", str(demo.work), "--key", str(demo.key), "--format", "json",
                       "--json")  # fmt: skip
    assert code == 2 and "give the report a file with -o FILE" in err


def test_intoto_writes_the_envelopes_and_the_public_key(
    demo: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, _ = run("report", str(demo.work), "--key", str(demo.key), "--format", "intoto",
                       "--json")  # fmt: skip
    assert code == 0
    written = json.loads(out)["written"]
    runs = [json.loads(line)["run"] for line in demo.ledger.read_text().splitlines()]
    assert written == [f"{runs[-1]}.intoto.jsonl", f"{runs[-1]}.intoto.key.json"]
    envelopes = (tmp_path / written[0]).read_text().splitlines()
    assert len(envelopes) == 9  # a check verdict each (none for a DONE kept untouched), the run
    key = json.loads((tmp_path / written[1]).read_text())
    assert {json.loads(e)["signatures"][0]["keyid"] for e in envelopes} == {key["keyid"]}
