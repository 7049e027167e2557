"""`_telemetry.db`: one row per verdict, tamper and dock events, WAL, safe from threads."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

from groundskeeper.diagnostics import Diagnostic
from groundskeeper.record.telemetry import Telemetry, iso_utc


def fixed_clock() -> datetime:
    return datetime(2026, 11, 22, 1, 2, 3, 456789, tzinfo=UTC)


def verdict(t: Telemetry, task_id: str, state: str, verified: bool | None = True) -> None:
    t.record_verdict(
        run_id="r1",
        task_id=task_id,
        idx=3,
        title=f"Title {task_id}",
        state=state,
        output="out",
        attempt=2,
        verified=verified,
        reason=None if state == "DONE" else "nonzero_status: x",
        duration_ms=17,
    )


def test_verdict_rows_have_every_column(tmp_path: Path) -> None:
    plan = tmp_path / "plan.org"
    with Telemetry.for_plan(plan, clock=fixed_clock) as t:
        verdict(t, "a", "FAILED")
        verdict(t, "a", "DONE")
        verdict(t, "b", "DONE", verified=False)
        assert [r["state"] for r in t.verdicts("a")] == ["FAILED", "DONE"]
        assert t.ever_passed("a") is True
        assert t.ever_passed("b") is False  # DONE, but unverified
        assert t.ever_passed("c") is False
    conn = sqlite3.connect(tmp_path / ".groundskeeper" / "plan.org" / "_telemetry.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.row_factory = sqlite3.Row
    row = dict(conn.execute("SELECT * FROM task_events ORDER BY rowid LIMIT 1").fetchone())
    assert row == {
        "run_id": "r1",
        "task_id": "a",
        "idx": 3,
        "title": "Title a",
        "state": "FAILED",
        "output": "out",
        "ts": "2026-11-22T01:02:03.456Z",
        "attempt": 2,
        "verified": 1,
        "reason": "nonzero_status: x",
        "duration_ms": 17,
        "committed": 1,
        "stop": None,
    }
    # "did this ever pass?" is one SQL query
    passed = conn.execute(
        "SELECT DISTINCT task_id FROM task_events WHERE state='DONE' AND verified=1"
    ).fetchall()
    assert [r[0] for r in passed] == ["a"]


def test_tamper_and_dock_events(tmp_path: Path) -> None:
    with Telemetry(tmp_path / "_telemetry.db", clock=fixed_clock) as t:
        t.record_tamper(
            run_id="r1", task_id="x", rejected_path="plan.org.rejected-1", sha256="ab", detail="d"
        )
        bad = Diagnostic("error", "c.wasm", "missing required export `run`", None, "C002")
        t.record_dock("r1", "x", "out/c.wasm", "cd", False, [bad])
        docks = list(t.db.table("dock_events").rows)
        tampers = list(t.db.table("tamper_events").rows)
    assert tampers[0]["rejected_path"] == "plan.org.rejected-1"
    assert docks[0]["ok"] == 0
    assert json.loads(docks[0]["diagnostics"]) == [bad.to_json()]


def test_reopening_keeps_rows(tmp_path: Path) -> None:
    with Telemetry(tmp_path / "_telemetry.db") as t:
        verdict(t, "a", "DONE")
    with Telemetry(tmp_path / "_telemetry.db") as t:
        verdict(t, "b", "DONE")
        assert [r["task_id"] for r in t.verdicts()] == ["a", "b"]


def test_threads_share_one_connection(tmp_path: Path) -> None:
    with Telemetry(tmp_path / "_telemetry.db") as t:

        def many(n: int) -> None:
            for i in range(50):
                verdict(t, f"t{n}-{i}", "DONE")

        threads = [threading.Thread(target=many, args=(n,)) for n in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(t.verdicts()) == 400


def test_iso_utc_converts_to_utc() -> None:
    from datetime import timedelta, timezone

    moment = datetime(2026, 1, 1, 12, 0, 0, tzinfo=timezone(timedelta(hours=2)))
    assert iso_utc(moment) == "2026-01-01T10:00:00.000Z"


def test_reconcile_settles_rows_a_crash_left_pending(tmp_path: Path) -> None:
    with Telemetry(tmp_path / "_telemetry.db") as t:
        landed = t.record_verdict(
            run_id="r", task_id="a", idx=0, title="A", state="DONE", output="", attempt=1,
            verified=True, reason=None, duration_ms=1, committed=False,
        )  # fmt: skip
        lost = t.record_verdict(
            run_id="r", task_id="b", idx=1, title="B", state="DONE", output="", attempt=1,
            verified=True, reason=None, duration_ms=1, committed=False,
        )  # fmt: skip
        assert t.ever_passed("a") is False  # pending rows do not count yet
        # the plan shows a's verdict (written, then killed before the commit), not b's
        assert t.reconcile({"a": "DONE", "b": "TODO"}) == 1
        rows = t.verdicts()
        assert [(r["task_id"], r["committed"]) for r in rows] == [("a", 1)]
        assert landed != lost and t.ever_passed("a") is True


REOPEN = """
import sys
from pathlib import Path
from groundskeeper.record.telemetry import Telemetry
t = Telemetry(Path(sys.argv[1]))
t.record_verdict(run_id="r2", task_id="b", idx=1, title="B", state="FAILED", output="o",
                 attempt=1, verified=True, reason="x", duration_ms=2)
t.close()
print("sqlite_utils" in sys.modules)
"""


def test_a_resume_writes_rows_without_importing_sqlite_utils(tmp_path: Path) -> None:
    """Reopening an existing database (every resume) is plain sqlite3: no ~0.2 s import."""
    with Telemetry(tmp_path / "_telemetry.db", clock=fixed_clock) as t:
        verdict(t, "a", "DONE")
    done = subprocess.run(
        [sys.executable, "-c", REOPEN, str(tmp_path / "_telemetry.db")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == "False"
    with Telemetry(tmp_path / "_telemetry.db") as t:
        rows = [(r["run_id"], r["task_id"], r["state"], r["reason"]) for r in t.verdicts()]
    assert rows == [("r1", "a", "DONE", None), ("r2", "b", "FAILED", "x")]


def test_model_call_rows_and_a_database_from_before_the_table(tmp_path: Path) -> None:
    """A database an earlier version made (no model_calls table) gains it when opened; a
    failed call is a row too, with its error and no stop reason."""
    from groundskeeper.models.model import ModelCall, Usage

    path = tmp_path / "_telemetry.db"
    with Telemetry(path) as t:
        verdict(t, "a", "DONE")
    conn = sqlite3.connect(path)
    conn.execute("DROP TABLE model_calls")
    conn.commit()
    conn.close()
    answered = ModelCall("worker", "tool_use", Usage(120, 30, 2048, 512, 840, "req_1", "m", 2))
    failed = ModelCall("worker", None, Usage(latency_ms=31, model="m"), "529 overloaded_error")
    with Telemetry(path, clock=fixed_clock) as t:
        t.record_model_call("r1", "a", 1, answered)
        t.record_model_call("r1", None, 0, failed)
        rows = t.model_calls("r1")
        assert len(t.verdicts()) == 1  # the earlier rows are kept
    assert [{k: r[k] for k in ("task_id", "purpose", "attempt", "stop_reason", "error",
                               "input_tokens", "output_tokens", "cache_read_tokens",
                               "cache_write_tokens", "latency_ms", "request_id", "retries")}
            for r in rows] == [
        {"task_id": "a", "purpose": "worker", "attempt": 1, "stop_reason": "tool_use",
         "error": None, "input_tokens": 120, "output_tokens": 30, "cache_read_tokens": 2048,
         "cache_write_tokens": 512, "latency_ms": 840, "request_id": "req_1", "retries": 2},
        {"task_id": None, "purpose": "worker", "attempt": 0, "stop_reason": None,
         "error": "529 overloaded_error", "input_tokens": 0, "output_tokens": 0,
         "cache_read_tokens": 0, "cache_write_tokens": 0, "latency_ms": 31,
         "request_id": None, "retries": 0},
    ]  # fmt: skip
    assert rows[0]["ts"] == iso_utc(fixed_clock())


CREATE = """
import sys
from pathlib import Path
from groundskeeper.record.telemetry import Telemetry
with Telemetry(Path(sys.argv[1])) as t:
    pass
print("sqlite_utils" in sys.modules)
"""


def _schema(path: Path) -> list[tuple[str, str, str]]:
    conn = sqlite3.connect(path)
    try:
        return sorted(conn.execute("SELECT type, name, sql FROM sqlite_master"))
    finally:
        conn.close()


def test_a_first_run_creates_the_schema_without_sqlite_utils(tmp_path: Path) -> None:
    """A plan's first run (every eval case) makes the tables with plain sqlite3, exactly as
    sqlite-utils declares them (the reference): the same SQL, so queries through `db` and
    databases made by earlier versions read alike."""
    import sqlite_utils

    from groundskeeper.record import telemetry

    done = subprocess.run(
        [sys.executable, "-c", CREATE, str(tmp_path / "ours.db")],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == "False"
    reference = sqlite_utils.Database(tmp_path / "reference.db")
    for name, columns in telemetry._TABLES.items():
        reference.table(name).create(columns, not_null={"run_id", "ts"}, if_not_exists=True)
    reference.table("task_events").create_index(
        ["task_id", "state"], index_name="idx_task_events_task", if_not_exists=True
    )
    reference.close()
    ours = _schema(tmp_path / "ours.db")
    assert ours == _schema(tmp_path / "reference.db")
    assert ("index", "idx_task_events_task") in {(kind, name) for kind, name, _ in ours}
    assert len(ours) == len(telemetry._TABLES) + 1
