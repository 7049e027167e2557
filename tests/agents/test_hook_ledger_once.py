"""A hook call reads its plan's ledger once: the Merkle tree its verification computed is the
one its own steps are appended to (`record.ledger.known_lines`), not hashed line by line again
from the ledger's tail index (which only a resume's run-end writes); and a ledger changed
between the verification and the append is judged on every line, as without it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from groundskeeper.agents.gate import HookRecord, verified_entries
from groundskeeper.record import ledger as ledger_module
from groundskeeper.record.control import ControlDir
from groundskeeper.record.keys import SigningKey, create_signing_key
from groundskeeper.record.ledger import Ledger, LedgerError
from groundskeeper.record.ledger_format import MerkleTree

RUNS = 40  # tool-call runs of three lines each


def _ledger_of_runs(tmp_path: Path) -> tuple[Path, ControlDir, SigningKey]:
    plan = tmp_path / "plan.org"
    plan.write_text("* TODO One\n  :PROPERTIES:\n  :ID: one\n  :END:\n", encoding="utf-8")
    control = ControlDir.for_plan(plan).ensure()
    key = create_signing_key().key
    for n in range(RUNS):  # as `agent work` seals each PostToolUse
        ledger = Ledger(control.path, key, f"hook-tool-{n:04d}")
        ledger.record("run-start", {"kind": "hook-tool", "agent": "claude-code"})
        ledger.stage("tool-call", {"tool": "Bash", "attempt": 0, "status": "ok"})
        ledger.stage("run-end", {"ok": True, "states": [], "tampers": 0})
        ledger.commit()
    ledger_module._forget_writers()  # a hook call is a process of its own: nothing cached
    return plan, control, key


def _hashed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Every line hashed into a Merkle tree from now on (one entry per line)."""
    seen: list[int] = []
    real = MerkleTree.append

    def counting(self: MerkleTree, leaf: bytes) -> None:
        seen.append(len(leaf))
        real(self, leaf)

    monkeypatch.setattr(MerkleTree, "append", counting)
    return seen


def test_a_hook_call_hashes_each_line_of_its_ledger_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan, control, key = _ledger_of_runs(tmp_path)
    verified_entries(control, plan, key)  # the first call: every line, leaving its prefix
    ledger_module._forget_writers()
    hashed = _hashed(monkeypatch)
    entries = verified_entries(control, plan, key)
    assert len(entries) == 3 * RUNS
    assert hashed == []  # all of them were in the verified prefix
    record = HookRecord(control, key, {"kind": "hook", "agent": "claude-code"})
    record.stage("run-end", {"ok": True, "states": [], "tampers": 0})
    record.commit()
    assert len(hashed) == 2  # its run-start and run-end; none of the 120 lines before
    # and the ledger the call left verifies whole, its checkpoint over all 122 lines
    ledger_module._forget_writers()
    assert len(verified_entries(control, plan, None)) == 3 * RUNS + 2
    assert len(hashed) == 2 + 3 * RUNS + 2  # without the key no prefix: every line


def test_a_line_changed_after_the_verification_is_not_taken_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan, control, key = _ledger_of_runs(tmp_path)
    verified_entries(control, plan, key)  # the writer now knows these lines' tree
    data = control.ledger.read_bytes()
    at = data.index(b'"tool":"Bash"')
    control.ledger.write_bytes(data[:at] + b'"tool":"Bush"' + data[at + 13 :])  # same size
    appended: list[Any] = []
    with pytest.raises(LedgerError, match="a line was altered"):
        appended.append(Ledger(control.path, key, "hook-after").record("run-start", {"k": 1}))
    assert appended == []
    assert control.ledger.read_bytes()[at : at + 13] == b'"tool":"Bush"'  # left as found


def test_known_lines_refuses_a_tree_that_is_not_of_its_bytes(tmp_path: Path) -> None:
    tree = MerkleTree()
    tree.append(b"a\n")
    with pytest.raises(ValueError, match="a tree of 1 lines is not that of bytes of 2"):
        ledger_module.known_lines(tmp_path / "_steps.jsonl", b"a\nb\n", tree)
    with pytest.raises(ValueError, match="a tree of 1 lines is not that of bytes of 1"):
        ledger_module.known_lines(tmp_path / "_steps.jsonl", b"a\nb", tree)
