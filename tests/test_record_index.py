"""The record index (`groundskeeper.record.record_index`): a resume reads the record from it
and the lines after it, exactly as from every line; an index that is altered, another key's,
another ledger's, or stale is never taken at its word — the record is read from the ledger
(or from the lines it does not cover) — so it cannot back a DONE the ledger does not."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path
from typing import Any

from groundskeeper.record.backing import RecordReader, read_record
from groundskeeper.record.keys import SigningKey, ensure_signing_key
from groundskeeper.record.ledger_format import history_steps
from groundskeeper.record.record_index import INDEX_FILE, load_record, save_record
from groundskeeper.record.signed_file import canonical as _canonical
from tests.test_cli_run import control, resume, setup, states, steps, task

WORK = """workers:
  a: [{tool: write_file, input: {path: a.txt, content: a}}, {say: DONE}]
  b: [{say: DONE}]
  c: [{tool: write_file, input: {path: c.txt, content: c}}, {say: DONE}]
"""
PLAN = (
    task("A", "a", "grep -q a a.txt")
    + task("B", "b", "grep -q b b.txt", max_attempts="1")
    + task("C", "c", "grep -q c c.txt")
)


def _ran(tmp_path: Path) -> tuple[Path, Path]:
    """A plan run twice: A and C DONE, B FAILED (its worker only claims), all sealed."""
    plan, script = setup(tmp_path, PLAN, WORK)
    resume(plan, script)
    (tmp_path / "c.txt").unlink()  # undone between runs: the second run's sweep demotes C
    resume(plan, script)
    return plan, script


def _ledger(plan: Path) -> Path:
    return control(plan) / "_steps.jsonl"


def _full(plan: Path) -> Any:
    return read_record(history_steps(_ledger(plan).read_bytes()))


def _key() -> SigningKey:
    return ensure_signing_key().key


def test_a_run_leaves_an_index_the_next_reads_the_same_record_from(tmp_path: Path) -> None:
    plan, _ = _ran(tmp_path)
    assert (control(plan) / INDEX_FILE).is_file()
    loaded = load_record(_ledger(plan), _key())
    assert loaded.source == "index"
    assert loaded.offset == _ledger(plan).stat().st_size  # nothing left to read after it
    assert loaded.record == _full(plan)
    assert loaded.record.tasks["b"].state == "FAILED"
    assert loaded.record.tasks["a"].state == "DONE"


def test_the_reader_continues_from_any_line_as_from_the_first(tmp_path: Path) -> None:
    """Its state after any line, written and read back, goes on to the same record."""
    plan, _ = _ran(tmp_path)
    steps = history_steps(_ledger(plan).read_bytes())
    whole = read_record(steps)
    assert len(steps) > 20 and whole.tasks and whole.runs
    for cut in range(len(steps) + 1):
        reader = RecordReader()
        for step in steps[:cut]:
            reader.feed(*step)
        again = RecordReader.from_json(json.loads(json.dumps(reader.to_json())))
        for step in steps[cut:]:
            again.feed(*step)
        assert again.record == whole, cut


def test_a_stale_index_reads_the_lines_after_it(tmp_path: Path) -> None:
    plan, _ = _ran(tmp_path)
    ledger = _ledger(plan)
    data = ledger.read_bytes()
    first_run_end = data.index(b'"step":"run-end"')
    cut = data.index(b"\n", first_run_end) + 1
    ledger.write_bytes(data[:cut])  # the index of the first run only
    (control(plan) / INDEX_FILE).unlink()
    save_record(load_record(ledger, _key()), ledger, _key())
    ledger.write_bytes(data)  # the second run's lines are not in it
    loaded = load_record(ledger, _key())
    assert loaded.source == "index"
    assert loaded.record == _full(plan)
    assert loaded.record.tasks["c"].state != "DONE"  # the second run's demotion is seen


def _forge(index: Path, key: SigningKey | None, change: dict[str, Any]) -> None:
    """Rewrite the index's state with `change`; sign it with `key`, or keep the old sig."""
    signed = json.loads(index.read_bytes())
    old = signed.pop("sig")
    signed["state"]["tasks"].update(change)
    sig = old if key is None else base64.b64encode(
        key.sign(b"groundskeeper record index v1\n" + _canonical(signed))
    ).decode()  # fmt: skip
    index.write_bytes(_canonical({**signed, "sig": sig}) + b"\n")


def _backs_b_done(plan: Path, key: SigningKey | None) -> None:
    index = control(plan) / INDEX_FILE
    record = _full(plan)
    b = record.tasks["b"]
    forged = ["DONE", b.check_sha256, b.run_id, None, b.rules, b.workdir]
    _forge(index, key, {"b": forged})
    loaded = load_record(_ledger(plan), _key())
    assert loaded.source == "ledger"
    assert loaded.record.tasks["b"].state == "FAILED"
    assert not loaded.record.backs_done("b", b.check_sha256, b.rules or "")


def test_an_altered_index_is_not_used(tmp_path: Path) -> None:
    plan, _ = _ran(tmp_path)
    _backs_b_done(plan, None)


def test_an_index_signed_by_another_key_is_not_used(tmp_path: Path) -> None:
    plan, _ = _ran(tmp_path)
    _backs_b_done(plan, SigningKey.generate())


def test_a_forged_done_in_the_index_does_not_back_a_done_headline(tmp_path: Path) -> None:
    """End to end: B FAILED; its headline turned DONE by hand and the index forged to say
    DONE: the resume re-verifies B (its check fails), as it would with no index."""
    plan, script = _ran(tmp_path)
    b = _full(plan).tasks["b"]
    _forge(control(plan) / INDEX_FILE, SigningKey.generate(),
           {"b": ["DONE", b.check_sha256, b.run_id, None]})  # fmt: skip
    plan.write_text(plan.read_text().replace("* FAILED B", "* DONE B", 1))
    _, doc = resume(plan, script)
    state, _, verified = states(doc)["b"]
    assert state != "DONE" and verified is True
    last_run = steps(plan, "run-start")[-1]["run_id"]
    started = [(s["task_id"], s["kind"]) for s in steps(plan, "task-start")
               if s["run_id"] == last_run]  # fmt: skip
    assert ("b", "reverify") in started


def test_another_ledgers_index_or_a_cut_ledger_is_not_used(tmp_path: Path) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    plan, _ = _ran(tmp_path / "one")
    other, other_script = setup(tmp_path / "two", PLAN, WORK)
    resume(other, other_script)
    # the other plan's index (same key, same task ids) beside this plan's ledger
    shutil.copy(control(other) / INDEX_FILE, control(plan) / INDEX_FILE)
    loaded = load_record(_ledger(plan), _key())
    assert loaded.source == "ledger" and loaded.record == _full(plan)
    # this plan's own index, over a ledger cut shorter than the bytes it covers
    save_record(load_record(_ledger(plan), _key()), _ledger(plan), _key())
    data = _ledger(plan).read_bytes()
    cut = data.rfind(b"\n", 0, len(data) - 1) + 1
    _ledger(plan).write_bytes(data[:cut])
    loaded = load_record(_ledger(plan), _key())
    assert loaded.source == "ledger" and loaded.record == _full(plan)


def test_a_torn_or_foreign_index_is_not_used(tmp_path: Path) -> None:
    plan, _ = _ran(tmp_path)
    index = control(plan) / INDEX_FILE
    whole = index.read_bytes()
    for text in (whole[: len(whole) // 2], b"", b"[1, 2]\n", b'{"sig": "!!"}\n'):
        index.write_bytes(text)
        loaded = load_record(_ledger(plan), _key())
        assert loaded.source == "ledger" and loaded.record == _full(plan)


def test_the_reader_state_holds_every_field_of_the_record() -> None:
    """A field added to Record (or to the reader) must travel through the index: one left
    out would come back empty after a resume read from it (as `watched`, the baseline of
    `changed` contracts, did when it was added)."""
    from dataclasses import fields

    from groundskeeper.record.backing import Record

    state = RecordReader().to_json()
    names = {f.name for f in fields(Record)} | {f.name for f in fields(RecordReader)} - {"record"}
    assert names <= set(state)
    reader = RecordReader()
    reader.feed("r1", "task-start", {"task_id": "t", "kind": "leaf", "check_sha256": "c",
                                     "watched_patterns": ["out/*"], "watched": [],
                                     "watched_sha256": "w"})  # fmt: skip
    again = RecordReader.from_json(json.loads(json.dumps(reader.to_json())))
    assert again == reader and again.record.watched["t"]["watched_sha256"] == "w"


def test_an_index_of_a_record_with_other_fields_is_not_read(tmp_path: Path) -> None:
    plan, _ = _ran(tmp_path)
    index = control(plan) / INDEX_FILE
    signed = json.loads(index.read_bytes())
    signed.pop("sig")
    signed["shape"] = "an older record's"
    sig = base64.b64encode(_key().sign(b"groundskeeper record index v1\n" + _canonical(signed)))
    index.write_bytes(_canonical({**signed, "sig": sig.decode()}) + b"\n")
    loaded = load_record(_ledger(plan), _key())
    assert loaded.source == "ledger" and loaded.record == _full(plan)
