"""A worker-controlled text the ledger cannot hold as it is never stops the run (adversary-13
F10, F12): a claim with a lone surrogate (a model's malformed output) is sealed — its hash
over its bytes as they are, its excerpt with U+FFFD — and the task is judged on its check."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from groundskeeper.cli import main
from tests.test_cli_run import resume, setup, steps, task
from tests.test_paths_cli import _row, _sh


def test_a_claim_with_a_lone_surrogate_is_sealed_and_judged(tmp_path: Path) -> None:
    plan, script = setup(
        tmp_path,
        task("Write ok", "t", "grep -qx ok out.txt", max_attempts="1") + "Write out.txt.\n",
        "workers:\n  t:\n" + _sh("echo ok > out.txt") + '    - say: "DONE \\udcff"\n',
    )
    result, doc = resume(plan, script)
    assert _row(doc, "t")["state"] == "DONE", _row(doc, "t")
    assert result.exit_code == 0
    claims = steps(plan, "claim")
    assert [c["excerpt"] for c in claims] == ["DONE \ufffd"]
    verified = CliRunner().invoke(main, ["ledger", "verify", str(plan)])
    assert verified.exit_code == 0, verified.output
