"""The witness (ledger/SPEC.md §12): a ledger put back to an older pair of files is a
`rollback`, two continuations of one prefix a `fork`, both without the signing key; with no
entry for a ledger only the checkpoint speaks, and the output says so."""

from __future__ import annotations

import json
import logging
import multiprocessing
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from groundskeeper.cli import main
from groundskeeper.record import ledger as ledger_module
from groundskeeper.record.ledger import Ledger, verify_ledger
from groundskeeper.record.ledger_format import LedgerRolledBack, format_checkpoint, ledger_origin
from groundskeeper.record.witness import Witness, WitnessEntry
from tests.test_ledger import KEY, OTHER, RUN_A, RUN_B, TRUST, fixed_clock, lines_of

WITNESS_KEYS = {"path", "consulted", "size", "root", "advanced"}
RUN_C: list[tuple[str, Any]] = [
    (step, {**body, "model": "scripted:other.yaml"} if step == "run-start" else body)
    for step, body in RUN_B
]


def append_run(plan: Path, run_id: str, steps: list[tuple[str, Any]]) -> None:
    """One run of the plan, as one process of groundskeeper would append it."""
    plan.mkdir(parents=True, exist_ok=True)
    ledger = Ledger(plan, KEY, run_id, trusted=[], clock=fixed_clock())
    for step, body in steps:
        ledger.record(step, body)
    ledger_module._forget_writers()  # the next run is another process


def save_pair(plan: Path, into: Path) -> Path:
    into.mkdir()
    for name in ("_steps.jsonl", "_steps.checkpoint"):
        shutil.copy2(plan / name, into / name)
    return into


def restore_pair(saved: Path, plan: Path) -> None:
    for name in ("_steps.jsonl", "_steps.checkpoint"):
        shutil.copy2(saved / name, plan / name)


def verify_cli(*args: str) -> tuple[int, dict[str, Any]]:
    result = CliRunner().invoke(main, ["ledger", "verify", *args, "--json"])
    return result.exit_code, json.loads(result.stdout)


def codes(document: dict[str, Any]) -> list[tuple[Any, Any, str]]:
    return [(f["line"], f["seq"], f["code"]) for f in document["findings"]]


@pytest.fixture
def trusted_home(groundskeeper_home: Path) -> Path:
    (groundskeeper_home / "trusted").mkdir()
    (groundskeeper_home / "trusted" / "team.pub").write_text(KEY.public.to_openssh("team") + "\n")
    return groundskeeper_home


@pytest.fixture
def rolled_back(tmp_path: Path) -> Path:
    """Three runs (7 + 5 + 5 lines), then the pair saved after run 1 put back: 7 lines and
    a checkpoint signing exactly those 7, which on its own verifies."""
    plan = tmp_path / "plan"
    append_run(plan, "run-a", RUN_A)
    saved = save_pair(plan, tmp_path / "after-run-1")
    append_run(plan, "run-b", RUN_B)
    append_run(plan, "run-c", RUN_C)
    assert len(lines_of(plan / "_steps.jsonl")) == 17
    restore_pair(saved, plan)
    return plan


def origin_of(plan: Path) -> str:
    return ledger_origin(lines_of(plan / "_steps.jsonl")[0])


# --- what the writer records ---------------------------------------------------------------


def test_every_checkpoint_the_writer_signs_is_recorded(tmp_path: Path) -> None:
    plan = tmp_path / "plan"
    append_run(plan, "run-a", RUN_A)
    entry = Witness().lookup(origin_of(plan))
    assert entry is not None
    assert (entry.size, entry.note) == (7, (plan / "_steps.checkpoint").read_bytes())
    append_run(plan, "run-b", RUN_B)
    entry = Witness().lookup(origin_of(plan))
    assert entry is not None
    assert (entry.size, entry.root.hex()) == (12, verify_ledger(plan, TRUST).head.root)


def test_a_witness_that_cannot_be_written_does_not_lose_the_append(
    tmp_path: Path, groundskeeper_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (groundskeeper_home / "witness").write_text("a file where the directory should be")
    with caplog.at_level(logging.WARNING, logger="groundskeeper.record.ledger"):
        append_run(tmp_path / "plan", "run-a", RUN_A)
    report = verify_ledger(tmp_path / "plan", TRUST)
    assert (report.ok, report.lines) == (True, 7)
    assert "cannot open the witness" in caplog.text
    assert "the append to" in caplog.text


# --- rollback ----------------------------------------------------------------------------


def test_an_older_pair_put_back_is_a_rollback(rolled_back: Path, trusted_home: Path) -> None:
    assert verify_ledger(rolled_back, TRUST).ok  # the checkpoint alone cannot see it
    code, document = verify_cli(str(rolled_back))
    assert code == 1
    assert codes(document) == [(None, None, "rollback")]
    reason = document["findings"][0]["reason"]
    assert "saw this ledger at 17 lines" in reason
    assert "the file holds 7: lines were removed and an older checkpoint put back" in reason
    assert document["witness"]["consulted"] is True
    assert (document["witness"]["size"], document["witness"]["advanced"]) == (17, False)


def test_a_rollback_is_reported_in_words_too(rolled_back: Path, trusted_home: Path) -> None:
    result = CliRunner().invoke(main, ["ledger", "verify", str(rolled_back)])
    assert result.exit_code == 1
    assert "_steps.jsonl: rollback: the witness in " in result.stdout
    assert "witness: consulted its entry for this ledger in " in result.stdout
    assert result.stdout.splitlines()[-1].startswith("FAILED: 1 finding in ")


def test_without_a_witness_entry_an_older_pair_verifies_and_the_output_says_so(
    rolled_back: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = tmp_path / "fresh-home"
    (fresh / "trusted").mkdir(parents=True)
    (fresh / "trusted" / "team.pub").write_text(KEY.public.to_openssh("team") + "\n")
    monkeypatch.setenv("GROUNDSKEEPER_HOME", str(fresh))
    result = CliRunner().invoke(main, ["ledger", "verify", str(rolled_back)])
    assert result.exit_code == 0
    assert (
        f"witness: no entry for this ledger in {fresh / 'witness'} was consulted, so an older "
        "copy of the ledger put back in its place would not be detected; it now records 7 lines"
    ) in result.stdout
    assert result.stdout.splitlines()[-1].startswith("ok: ")
    # and from now on this home remembers 7 lines
    code, document = verify_cli(str(rolled_back))
    assert (code, document["witness"]["consulted"], document["witness"]["size"]) == (0, True, 7)
    assert document["witness"]["advanced"] is False


def test_a_tail_cut_with_the_checkpoint_kept_is_both_mismatch_and_rollback(
    tmp_path: Path, trusted_home: Path
) -> None:
    plan = tmp_path / "plan"
    append_run(plan, "run-a", RUN_A)
    append_run(plan, "run-b", RUN_B)
    (plan / "_steps.jsonl").write_bytes(b"".join(lines_of(plan / "_steps.jsonl")[:9]))
    _, document = verify_cli(str(plan))
    assert codes(document) == [(None, None, "checkpoint-mismatch"), (None, None, "rollback")]
    assert document["findings"][1]["reason"].endswith("the file holds 9: lines were removed")


def test_witness_option_points_at_another_witness(
    rolled_back: Path, tmp_path: Path, groundskeeper_home: Path, trusted_home: Path
) -> None:
    elsewhere = tmp_path / "reviewer-witness"
    code, document = verify_cli(str(rolled_back), "--witness", str(elsewhere))
    assert code == 0
    assert document["witness"] == {
        "path": str(elsewhere),
        "consulted": False,
        "size": None,
        "root": None,
        "advanced": True,
    }
    assert Witness(elsewhere).lookup(origin_of(rolled_back)) is not None
    entry = Witness().lookup(origin_of(rolled_back))
    assert entry is not None and entry.size == 17  # the home's own witness is untouched


# --- fork --------------------------------------------------------------------------------


def test_two_continuations_of_one_prefix_are_a_fork(
    tmp_path: Path, trusted_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = tmp_path / "plan"
    append_run(plan, "run-a", RUN_A)
    saved = save_pair(plan, tmp_path / "after-run-1")
    append_run(plan, "run-b", RUN_B)
    witnessed = Witness().lookup(origin_of(plan))
    restore_pair(saved, plan)
    # the older copy continued where this home's witness does not see it (another machine)
    with monkeypatch.context() as elsewhere:
        elsewhere.setenv("GROUNDSKEEPER_HOME", str(tmp_path / "elsewhere"))
        append_run(plan, "run-c", RUN_C)  # as many lines as run-b, other content
    assert Witness().lookup(origin_of(plan)) == witnessed
    assert verify_ledger(plan, TRUST).ok
    code, document = verify_cli(str(plan))
    assert (code, codes(document)) == (1, [(None, None, "fork")])
    assert "the first 12 lines here have root " in document["findings"][0]["reason"]
    # continuing it here is refused: a run sealed on it would launder the fork
    with pytest.raises(LedgerRolledBack, match="are not the ones the witness saw"):
        append_run(plan, "run-d", RUN_B)
    ledger_module._forget_writers()
    assert Witness().lookup(origin_of(plan)) == witnessed  # the evidence left in place
    code, document = verify_cli(str(plan))
    assert (code, codes(document), document["witness"]["size"]) == (1, [(None, None, "fork")], 12)


def test_no_run_is_appended_to_a_rolled_back_ledger(tmp_path: Path, trusted_home: Path) -> None:
    plan = tmp_path / "plan"
    append_run(plan, "run-a", RUN_A)
    saved = save_pair(plan, tmp_path / "after-run-1")
    append_run(plan, "run-b", RUN_B)
    restore_pair(saved, plan)
    before = (plan / "_steps.jsonl").read_bytes()
    with pytest.raises(LedgerRolledBack, match="saw this ledger at 12 lines and the file holds"):
        append_run(plan, "run-c", RUN_C)
    ledger_module._forget_writers()
    assert (plan / "_steps.jsonl").read_bytes() == before


# --- what verification records -----------------------------------------------------------


def test_verify_advances_only_for_a_checkpoint_a_trusted_key_signed(
    tmp_path: Path, groundskeeper_home: Path
) -> None:
    plan = tmp_path / "plan"
    plan.mkdir()
    Ledger(plan, OTHER, "run-x", trusted=[], clock=fixed_clock()).record(*RUN_A[0])
    ledger_module._forget_writers()
    origin = origin_of(plan)
    shutil.rmtree(groundskeeper_home / "witness")  # as if the ledger came from elsewhere
    code, document = verify_cli(str(plan))
    assert code == 1
    assert document["witness"]["advanced"] is False
    assert Witness().lookup(origin) is None
    other_pub = tmp_path / "other.pub"
    other_pub.write_text(OTHER.public.to_openssh() + "\n")
    code, document = verify_cli(str(plan), "--key", str(other_pub))
    assert (code, document["witness"]["advanced"]) == (0, True)
    entry = Witness().lookup(origin)
    assert entry is not None and entry.size == 1


def test_a_stale_checkpoint_advances_the_witness_to_what_it_signs(
    tmp_path: Path, groundskeeper_home: Path, trusted_home: Path
) -> None:
    plan = tmp_path / "plan"
    append_run(plan, "run-a", RUN_A)
    old_checkpoint = (plan / "_steps.checkpoint").read_bytes()
    append_run(plan, "run-b", RUN_B)
    (plan / "_steps.checkpoint").write_bytes(old_checkpoint)  # a crash before the rewrite
    shutil.rmtree(groundskeeper_home / "witness")
    _, document = verify_cli(str(plan))
    assert codes(document) == [(None, None, "checkpoint-stale")]
    entry = Witness().lookup(origin_of(plan))
    assert entry is not None and entry.size == 7  # only what a trusted key signed


# --- a damaged witness -------------------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [b"", b"not a checkpoint\n", b"\xff\xfe", b"x" * 5000],
    ids=["empty", "text", "binary", "huge"],
)
def test_a_corrupt_witness_entry_is_a_finding_not_a_traceback(
    tmp_path: Path, trusted_home: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    plan = tmp_path / "plan"
    append_run(plan, "run-a", RUN_A)
    entry_path = Witness().entry_path(origin_of(plan))
    entry_path.write_bytes(content)
    code, document = verify_cli(str(plan))
    assert code == 1
    assert codes(document) == [(None, None, "witness-unreadable")]
    assert str(entry_path) in document["findings"][0]["reason"]
    assert document["witness"]["consulted"] is False
    with caplog.at_level(logging.WARNING, logger="groundskeeper.record.ledger"):
        append_run(plan, "run-b", RUN_B)  # the run goes on
    assert entry_path.read_bytes() == content  # and never overwrites what it cannot compare
    assert str(entry_path) in caplog.text


def test_an_entry_naming_another_ledger_is_corrupt(tmp_path: Path, trusted_home: Path) -> None:
    append_run(tmp_path / "one", "run-a", RUN_A)
    append_run(tmp_path / "two", "run-a", RUN_B)
    one, two = Witness().entry_path(origin_of(tmp_path / "one")), origin_of(tmp_path / "two")
    shutil.copy(one, Witness().entry_path(two))
    _, document = verify_cli(str(tmp_path / "two"))
    assert codes(document) == [(None, None, "witness-unreadable")]
    assert "names another ledger" in document["findings"][0]["reason"]


# --- never shrinking ---------------------------------------------------------------------


def entry(size: int, tag: int = 0) -> WitnessEntry:
    origin = "groundskeeper-ledger/" + "ab" * 32
    root = bytes([tag]) * 32
    return WitnessEntry(origin, size, root, format_checkpoint(origin, size, root, KEY))


def test_a_smaller_or_equal_head_never_replaces_a_larger_one(tmp_path: Path) -> None:
    witness = Witness(tmp_path / "w")
    assert witness.record(entry(10), expected=None, sync=False).size == 10
    assert witness.record(entry(5), expected=entry(10), sync=False).size == 10
    kept = witness.record(entry(10, tag=1), expected=entry(10), sync=False)
    assert (kept.size, kept.root) == (10, bytes(32))
    looked = witness.lookup(entry(0).origin)
    assert looked is not None and looked.size == 10


def test_a_head_proved_against_another_entry_is_not_recorded(tmp_path: Path) -> None:
    witness = Witness(tmp_path / "w")
    witness.record(entry(10), expected=None, sync=True)
    kept = witness.record(entry(20), expected=entry(5), sync=False)
    assert kept.size == 10
    assert witness.record(entry(20), expected=entry(10), sync=False).size == 20


def test_a_shorter_note_replaces_a_longer_one_whole(tmp_path: Path) -> None:
    # A checkpoint co-signed by a second key, recorded by verify, then the writer's own
    # one-signature checkpoint of a larger size: the file must not keep the old tail.
    witness = Witness(tmp_path / "w")
    cosigned = entry(9)
    other_line = format_checkpoint(cosigned.origin, 9, cosigned.root, OTHER).split(b"\n\n")[1]
    cosigned = WitnessEntry(cosigned.origin, 9, cosigned.root, cosigned.note + other_line)
    witness.record(cosigned, expected=None, sync=False)
    witness.record(entry(10), expected=cosigned, sync=False)
    looked = witness.lookup(cosigned.origin)
    assert looked is not None
    assert (looked.size, looked.note) == (10, entry(10).note)


@given(st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=20))
def test_the_entry_is_the_largest_head_recorded(sizes: list[int]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        witness = Witness(Path(scratch))
        seen = []
        for size in sizes:
            current = witness.lookup(entry(0).origin)
            witness.record(entry(size), expected=current, sync=False)
            now = witness.lookup(entry(0).origin)
            assert now is not None
            seen.append(now.size)
        assert seen == sorted(seen)
        assert seen[-1] == max(sizes)


def _record_many(directory: str, worker: int, start: Any) -> None:
    witness = Witness(Path(directory))
    start.wait()
    for n in range(40):
        new = entry(1 + worker + 4 * n, tag=worker)
        while True:
            current = witness.lookup(new.origin)
            if current is not None and current.size >= new.size:
                break
            if witness.record(new, expected=current, sync=False).size >= new.size:
                break


def _watch(directory: str, start: Any, stop: Any, out: Any) -> None:
    witness = Witness(Path(directory))
    start.wait()
    sizes = []
    while not stop.is_set():
        current = witness.lookup(entry(0).origin)
        sizes.append(current.size if current is not None else 0)
    out.put(sizes)


def test_processes_recording_at_once_never_shrink_the_entry(tmp_path: Path) -> None:
    context: Any = multiprocessing.get_context("fork")
    start, stop, out = context.Event(), context.Event(), context.Queue()
    writers = [
        context.Process(target=_record_many, args=(str(tmp_path), w, start)) for w in range(4)
    ]
    watcher = context.Process(target=_watch, args=(str(tmp_path), start, stop, out))
    for process in [*writers, watcher]:
        process.start()
    start.set()
    for process in writers:
        process.join(60)
        assert process.exitcode == 0
    stop.set()
    sizes = out.get(timeout=60)
    watcher.join(60)
    assert watcher.exitcode == 0  # a torn or corrupt read would have raised in the watcher
    assert sizes == sorted(sizes)
    final = Witness(tmp_path).lookup(entry(0).origin)
    assert final is not None and final.size == 4 + 4 * 39
