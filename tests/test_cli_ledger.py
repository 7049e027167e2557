"""`groundskeeper ledger verify|show` and `groundskeeper keygen` through click's CliRunner,
reading the --json documents."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from groundskeeper.cli import main
from groundskeeper.record.ledger import Ledger
from tests.test_ledger import KEY, OTHER, build_ledger, lines_of, write_lines

VECTORS = Path(__file__).resolve().parent.parent / "ledger" / "vectors"
VERIFY_KEYS = {"ok", "lines", "runs", "head", "findings", "witness"}
WITNESS_KEYS = {"path", "consulted", "size", "root", "advanced"}


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def trusted_home(groundskeeper_home: Path) -> Path:
    """A home that trusts the test key through trusted/, as a reviewer would set it up."""
    (groundskeeper_home / "trusted").mkdir()
    (groundskeeper_home / "trusted" / "team.pub").write_text(KEY.public.to_openssh("team") + "\n")
    return groundskeeper_home


def test_verify_clean_json(tmp_path: Path, trusted_home: Path) -> None:
    build_ledger(tmp_path / "plan")
    code, out, _ = run("ledger", "verify", str(tmp_path / "plan"), "--json")
    document = json.loads(out)
    assert code == 0
    assert set(document) == VERIFY_KEYS
    assert (document["ok"], document["lines"], document["runs"]) == (True, 12, 2)
    assert set(document["head"]) == {"size", "root"}
    assert document["head"]["size"] == 12
    assert document["findings"] == []


def test_verify_default_path_is_the_current_directory(
    tmp_path: Path, trusted_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_ledger(tmp_path / "plan")
    monkeypatch.chdir(tmp_path / "plan")
    code, out, _ = run("ledger", "verify", "--json")
    assert code == 0
    assert json.loads(out)["lines"] == 12


def test_verify_tampered_json_lists_every_finding(tmp_path: Path, trusted_home: Path) -> None:
    ledger = build_ledger(tmp_path / "plan")
    lines = lines_of(ledger)
    del lines[5]
    write_lines(ledger, lines)
    code, out, _ = run("ledger", "verify", str(ledger), "--json")
    document = json.loads(out)
    assert code == 1
    assert document["ok"] is False
    assert [(f["line"], f["seq"], f["code"]) for f in document["findings"]] == [
        (6, 7, "seq-mismatch"),
        (6, 7, "prev-mismatch"),
        (None, None, "checkpoint-mismatch"),
        (None, None, "rollback"),  # the witness saw 12 lines when the ledger was built
    ]
    assert all(set(f) == {"line", "seq", "code", "reason"} for f in document["findings"])


def test_verify_human_output_names_line_and_code(tmp_path: Path, trusted_home: Path) -> None:
    ledger = build_ledger(tmp_path / "plan")
    write_lines(ledger, lines_of(ledger)[:10])
    code, out, _ = run("ledger", "verify", str(ledger))
    assert code == 1
    assert "_steps.checkpoint: checkpoint-mismatch: checkpoint says 12 lines" in out
    assert "_steps.jsonl: rollback: the witness in " in out
    assert out.splitlines()[-1].startswith("FAILED: 2 findings in ")


def test_verify_trusts_only_what_the_user_trusts(tmp_path: Path) -> None:
    build_ledger(tmp_path / "plan")
    code, out, err = run("ledger", "verify", str(tmp_path / "plan"), "--json")
    assert code == 1
    codes = {f["code"] for f in json.loads(out)["findings"]}
    assert codes == {"untrusted-key", "checkpoint-untrusted"}
    assert "no trusted keys" in err
    pub = tmp_path / "colleague.pub"
    pub.write_text(KEY.public.to_openssh() + "\n")
    code, out, _ = run("ledger", "verify", str(tmp_path / "plan"), "--key", str(pub), "--json")
    assert (code, json.loads(out)["ok"]) == (0, True)


def test_verify_key_from_another_signer_does_not_help(tmp_path: Path) -> None:
    build_ledger(tmp_path / "plan", key=OTHER)
    pub = tmp_path / "mine.pub"
    pub.write_text(KEY.public.to_openssh() + "\n")
    code, out, _ = run("ledger", "verify", str(tmp_path / "plan"), "--key", str(pub), "--json")
    assert code == 1
    assert json.loads(out)["findings"][0]["code"] == "untrusted-key"


def test_verify_expected_head(tmp_path: Path, trusted_home: Path) -> None:
    build_ledger(tmp_path / "plan")
    _, out, _ = run("ledger", "verify", str(tmp_path / "plan"), "--json")
    head = json.loads(out)["head"]
    ok_args = ["--expect-size", str(head["size"]), "--expect-root", head["root"]]
    code, _, _ = run("ledger", "verify", str(tmp_path / "plan"), *ok_args)
    assert code == 0
    code, out, _ = run("ledger", "verify", str(tmp_path / "plan"), "--expect-size", "13", "--json")
    assert code == 1
    assert [f["code"] for f in json.loads(out)["findings"]] == ["expect-mismatch"]
    code, _, err = run("ledger", "verify", str(tmp_path / "plan"), "--expect-root", "xyz")
    assert code == 2
    assert "--expect-root" in err


@pytest.mark.parametrize("target", ["missing", "empty-dir"])
def test_verify_unreadable_exits_2(tmp_path: Path, target: str) -> None:
    (tmp_path / "empty-dir").mkdir()
    code, out, err = run("ledger", "verify", str(tmp_path / target), "--json")
    assert (code, out) == (2, "")
    assert "no ledger at" in err
    assert "Traceback" not in err


def test_verify_malformed_key_file_exits_2(tmp_path: Path) -> None:
    build_ledger(tmp_path / "plan")
    bad = tmp_path / "bad.pub"
    bad.write_text("ssh-rsa AAAAB3Nza... someone\n")
    code, _, err = run("ledger", "verify", str(tmp_path / "plan"), "--key", str(bad))
    assert code == 2
    assert f"{bad}:1:" in err


def test_vectors_through_the_cli() -> None:
    key = str(VECTORS / "test_key.pub")
    code, out, _ = run("ledger", "verify", str(VECTORS / "valid"), "--key", key, "--json")
    assert (code, json.loads(out)["ok"]) == (0, True)
    code, out, _ = run("ledger", "verify", str(VECTORS / "sig-bit-flip"), "--key", key, "--json")
    assert code == 1
    assert json.loads(out)["findings"][0]["code"] == "bad-signature"


def test_show_json_timeline(trusted_home: Path) -> None:
    code, out, _ = run(
        "ledger", "show", str(VECTORS / "valid"), "--key", str(VECTORS / "test_key.pub"), "--json"
    )
    document = json.loads(out)
    assert code == 0
    assert set(document) == {"ok", "findings", "entries"}
    entries = document["entries"]
    assert len(entries) == 12
    assert all(
        set(e) == {"line", "seq", "ts", "step", "run", "task", "summary", "verdict"}
        for e in entries
    )
    check = entries[4]
    assert (check["seq"], check["step"], check["task"], check["verdict"]) == (
        5,
        "check",
        "gather-pricing",
        "FAIL",
    )
    assert check["ts"] == "2025-03-14T09:26:59.000Z"
    assert entries[10]["summary"] == "FAILED → DONE"
    assert [e["run"] for e in entries] == ["run-1"] * 7 + ["run-2"] * 5


def test_show_human_highlights_verdicts_and_warns_when_not_verified() -> None:
    result = CliRunner().invoke(
        main,
        ["ledger", "show", str(VECTORS / "edited-value"), "--key", str(VECTORS / "test_key.pub")],
        color=True,
    )
    assert result.exit_code == 1
    assert "\x1b[" in result.stdout  # click.style colours when the terminal allows
    assert "PASS" in result.stdout  # the forged verdict is shown, and flagged below
    # Each stream ends its own last line: the warning never runs into what follows.
    assert result.stdout.endswith("\n")
    assert result.stderr == (
        "groundskeeper: this ledger does NOT verify (3 findings); "
        f"see: groundskeeper ledger verify {VECTORS / 'edited-value'}\n"
    )


def test_show_tells_a_dock_run_from_a_plan_run(tmp_path: Path, trusted_home: Path) -> None:
    ledger = Ledger(tmp_path, KEY, "dock-1", trusted=[])
    ledger.record("run-start", {"kind": "dock", "component": "b/tool.wasm", "into": "components"})
    ledger.record(
        "dock",
        {"task_id": None, "component": "b/tool.wasm", "sha256": "ab" * 32, "ok": False},
    )
    ledger.record("run-end", {"ok": False, "states": [], "tampers": 0})
    code, out, _ = run("ledger", "show", str(tmp_path), "--json")
    assert code == 0
    assert [(e["summary"], e["verdict"]) for e in json.loads(out)["entries"]] == [
        ("dock b/tool.wasm into components", None),
        ("b/tool.wasm refused · sha256 abababababab", "refused"),
        ("refused · dock", "refused"),
    ]


def test_keygen_creates_a_private_key_and_refuses_to_overwrite(groundskeeper_home: Path) -> None:
    code, out, _ = run("keygen", "--json")
    document = json.loads(out)
    assert code == 0
    assert set(document) == {"created", "private_key", "public_key", "key_id", "openssh"}
    private = Path(document["private_key"])
    assert private == groundskeeper_home / "signing_key.pem"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert (groundskeeper_home / "signing_key.pub").read_text().startswith("ssh-ed25519 ")
    assert len(document["key_id"]) == 64
    before = private.read_bytes()
    code, out, err = run("keygen")
    assert (code, out) == (2, "")
    assert "--force" in err
    assert private.read_bytes() == before
    code, out, _ = run("keygen", "--force", "--json")
    assert code == 0
    assert json.loads(out)["key_id"] != document["key_id"]


def test_keygen_human_output(groundskeeper_home: Path) -> None:
    code, out, _ = run("keygen")
    assert code == 0
    assert out.splitlines()[0] == f"public key: {groundskeeper_home / 'signing_key.pub'}"
    assert out.splitlines()[1].startswith("key id: ")


def test_own_key_is_trusted_after_keygen(tmp_path: Path, groundskeeper_home: Path) -> None:
    from groundskeeper.cli.ledger_cmd import load_run_key

    key = load_run_key()
    Ledger(tmp_path, key, "run-1").record("run-start", {})
    code, out, _ = run("ledger", "verify", str(tmp_path), "--json")
    assert (code, json.loads(out)["ok"]) == (0, True)


def test_first_use_notice_is_one_line_on_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    from groundskeeper.cli.ledger_cmd import load_run_key

    load_run_key()
    first = capsys.readouterr()
    assert first.out == ""
    assert len(first.err.splitlines()) == 1
    assert "created signing key" in first.err
    load_run_key()
    assert capsys.readouterr().err == ""


def test_a_line_of_30000_brackets_is_a_named_finding(tmp_path: Path, trusted_home: Path) -> None:
    plan = tmp_path / "plan"
    plan.mkdir()
    (plan / "_steps.jsonl").write_bytes(b"[" * 30_000 + b"]" * 30_000 + b"\n")
    code, out, err = run("ledger", "verify", str(plan), "--json")
    findings = json.loads(out)["findings"]
    assert code == 1
    assert {"line": 1, "code": "bad-json"}.items() <= findings[0].items()
    assert findings[0]["reason"] == "line nests arrays and objects deeper than 64 (SPEC §2)"
    assert "Traceback" not in err and "RecursionError" not in out + err
    code, out, err = run("ledger", "show", str(plan), "--json")
    assert code == 1
    assert "Traceback" not in err and "RecursionError" not in out + err


FORGED_LINE = "   16  2026-11-27 18:33:49  state          real              TODO → DONE"


def test_show_prints_one_line_per_step_whatever_a_worker_wrote(
    tmp_path: Path, groundskeeper_home: Path
) -> None:
    # a path a worker chose, with a newline and a terminal escape in it, must not print as
    # lines of its own (a forged `state … → DONE`) or reach the terminal as an escape
    from tests.test_cli_run import resume, setup, task

    forged = "notes.txt\\n" + FORGED_LINE + "\\n\\u001b[8m"
    plan, script = setup(
        tmp_path,
        task("Real", "real", "test -s out.txt"),
        "workers:\n  real:\n"
        f'    - {{tool: write_file, input: {{path: "{forged}", content: "x"}}}}\n'
        "    - say: DONE\n",
    )
    resume(plan, script)
    code, out, _ = run("ledger", "show", str(tmp_path))
    _, as_json, _ = run("ledger", "show", str(tmp_path), "--json")
    entries = json.loads(as_json)["entries"]
    assert code == 0
    printed = out.splitlines()
    assert len(printed) == len(entries) + len({e["run"] for e in entries})
    assert FORGED_LINE not in printed
    assert "\x1b" not in out
    assert any("notes.txt<U+000A>   16" in line for line in printed)
