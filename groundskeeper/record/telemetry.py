"""`_telemetry.db`: the queryable history of verdicts, tampering and docks of a plan.

One SQLite file (sqlite-utils, WAL) with tables `task_events` (one row per verdict),
`tamper_events`, `dock_events`, `check_events` and `model_calls` (one row per model call,
with its tokens and latency). It records; it decides nothing (the runner does).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from groundskeeper.diagnostics import Diagnostic
from groundskeeper.errors import UsageError

if TYPE_CHECKING:
    import sqlite_utils

log = logging.getLogger(__name__)


class TelemetryUnusable(UsageError):
    """The database cannot be used: not SQLite, corrupt, or another program's tables."""


Clock = Callable[[], datetime]


class CallUsage(Protocol):
    """What a model call cost, as `record_model_call` reads it (`models.model.Usage` is one)."""

    @property
    def input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...
    @property
    def cache_read_tokens(self) -> int: ...
    @property
    def cache_write_tokens(self) -> int: ...
    @property
    def latency_ms(self) -> int: ...
    @property
    def request_id(self) -> str | None: ...
    @property
    def model(self) -> str: ...
    @property
    def retries(self) -> int: ...


class RecordedCall(Protocol):
    """One model call as `record_model_call` reads it (`models.model.ModelCall` is one): the
    record takes the call's plain fields and knows nothing of the models behind it."""

    @property
    def purpose(self) -> str: ...
    @property
    def stop_reason(self) -> str | None: ...
    @property
    def error(self) -> str | None: ...
    @property
    def usage(self) -> CallUsage: ...


def utc_now() -> datetime:
    return datetime.now(UTC)


def iso_utc(moment: datetime) -> str:
    """ISO-8601 in UTC with a `Z`, millisecond precision: sortable as text."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


_TASK_EVENTS: dict[str, type] = {
    "run_id": str,
    "task_id": str,
    "idx": int,
    "title": str,
    "state": str,
    "output": str,
    "ts": str,
    "attempt": int,
    "verified": int,
    "reason": str,
    "duration_ms": int,
    "committed": int,
    "stop": str,  # why the fix loop ended without DONE (`groundskeeper.acceptance.loops`), or null
}
# Columns added after a table was first shipped: a database that lacks them gains them.
_ADDED_LATER: dict[str, frozenset[str]] = {"task_events": frozenset({"stop"})}
_TAMPER_EVENTS: dict[str, type] = {
    "run_id": str,
    "task_id": str,
    "ts": str,
    "rejected_path": str,
    "sha256": str,
    "detail": str,
}
_DOCK_EVENTS: dict[str, type] = {
    "run_id": str,
    "task_id": str,
    "ts": str,
    "component": str,
    "sha256": str,
    "ok": int,
    "diagnostics": str,
}
# The checks a run makes besides a worker's attempts: red-first (before any work), a parent's
# roll-up re-checking its children, and the final sweep over what became DONE.
_CHECK_EVENTS: dict[str, type] = {
    "run_id": str,
    "task_id": str,
    "ts": str,
    "phase": str,
    "verdict": str,
    "reason": str,
}
# Every model call, answered or failed (`error`), the same columns for every backend: the
# scripted model's tokens are zeros, its latency measured. Cache tokens the API left out are 0.
_MODEL_CALLS: dict[str, type] = {
    "run_id": str,
    "task_id": str,
    "ts": str,
    "purpose": str,
    "attempt": int,
    "model": str,
    "stop_reason": str,
    "error": str,
    "input_tokens": int,
    "output_tokens": int,
    "cache_read_tokens": int,
    "cache_write_tokens": int,
    "latency_ms": int,
    "request_id": str,
    "retries": int,
}
# One row per contract or evidence field judged on a claim: hard or soft, held or failed.
_CONTRACT_EVENTS: dict[str, type] = {
    "run_id": str,
    "task_id": str,
    "ts": str,
    "attempt": int,
    "kind": str,  # "contract" or "evidence"
    "spec": str,  # the contract line, or the field's `name:type`
    "soft": int,
    "ok": int,
    "code": str,
    "message": str,
    "detail": str,  # JSON: what the judge extracted (a script's config, missing sections)
}
_TABLES = {
    "task_events": _TASK_EVENTS,
    "contract_events": _CONTRACT_EVENTS,
    "tamper_events": _TAMPER_EVENTS,
    "dock_events": _DOCK_EVENTS,
    "check_events": _CHECK_EVENTS,
    "model_calls": _MODEL_CALLS,
}


def _create_table_sql(name: str, columns: Mapping[str, type]) -> str:
    """sqlite-utils' CREATE TABLE for `columns` (int: INTEGER, str: TEXT; run_id and ts
    NOT NULL), with IF NOT EXISTS (which SQLite leaves out of the SQL it keeps)."""
    lines = [
        f'   "{column}" {"INTEGER" if kind is int else "TEXT"}'
        + (" NOT NULL" if column in ("run_id", "ts") else "")
        for column, kind in columns.items()
    ]
    return f'CREATE TABLE IF NOT EXISTS "{name}" (\n' + ",\n".join(lines) + "\n)"


class Telemetry:
    """One connection guarded by a lock, so any thread may record (see NOTES.md).

    Writes are plain parameterised INSERTs on the stdlib connection: they are on every
    verdict's path, and importing sqlite-utils (and its plugin scan) cost ~0.2 s a process here.
    So is the schema (`_create_table_sql`, sqlite-utils' own SQL); sqlite-utils serves `db`
    and the queries.
    """

    def __init__(self, path: Path, *, clock: Clock = utc_now) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()
        self.failure: str | None = None
        self._inserted = 0  # task_events rows this connection wrote (a shrinking table is damage)
        self.conn = sqlite3.connect(str(path), check_same_thread=False)
        self._db: sqlite_utils.Database | None = None
        # The database sits where a worker's read-write sandbox can reach it: remember which
        # file this connection writes, so a run can tell when its rows went to an unlinked one.
        st = os.stat(path)
        self._identity = (st.st_dev, st.st_ino)
        # WAL + NORMAL survives a killed process (only power loss can drop the last commits)
        # and spares an fsync per verdict.
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        present = {
            name
            for (name,) in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
        }
        for table in set(_TABLES) & present:
            columns = {row[1] for row in self.conn.execute(f"PRAGMA table_info({table})")}
            later = _ADDED_LATER.get(table, frozenset())
            missing = sorted(set(_TABLES[table]) - columns - later)
            if not missing:  # ours, from before a column was added: it gains the column
                for column in sorted(later - columns):
                    sql_type = "INTEGER" if _TABLES[table][column] is int else "TEXT"
                    with self.conn:
                        self.conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {sql_type}")
            if missing:
                self.conn.close()
                raise TelemetryUnusable(
                    f"{path}: its table {table} lacks {', '.join(missing)}: not groundskeeper's"
                    " telemetry (or an older one); move it aside and run again"
                )
        if not set(_TABLES) <= present:
            self._create_schema()
        self._inserts = {
            table: f"INSERT INTO {table} ({', '.join(columns)})"
            f" VALUES ({', '.join('?' for _ in columns)})"
            for table, columns in _TABLES.items()
        }

    def displaced(self) -> str | None:
        """Why the rows written through this connection are no longer at `path` (or could not
        be written at all), or None."""
        if self.failure is not None:
            return self.failure
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return f"{self.path} was deleted during the run: its verdict rows are lost"
        if (st.st_dev, st.st_ino) != self._identity:
            return f"{self.path} was replaced during the run: its verdict rows are not in it"
        try:  # as the next reader will see it: a fresh connection, not this one's page cache
            uri = Path(self.path).absolute().as_uri() + "?mode=ro"
            with self._lock, contextlib.closing(sqlite3.connect(uri, uri=True)) as fresh:
                (check,) = fresh.execute("PRAGMA quick_check").fetchone()
                (rows,) = fresh.execute("SELECT count(*) FROM task_events").fetchone()
        except sqlite3.Error as exc:
            return f"{self.path} was damaged during the run ({exc}): its rows cannot be trusted"
        if check != "ok" or rows < self._inserted:
            return f"{self.path} was damaged during the run ({check}): its rows cannot be trusted"
        return None

    @property
    def db(self) -> sqlite_utils.Database:
        """The same connection through sqlite-utils, for queries."""
        if self._db is None:
            import sqlite_utils

            self._db = sqlite_utils.Database(self.conn)
        return self._db

    def _create_schema(self) -> None:
        # The SQL sqlite-utils writes for these tables (tests compare the two), issued on the
        # stdlib connection: a plan's first run is every eval case's, and the import is not
        # worth paying there. IF NOT EXISTS: two processes may open a fresh directory at once.
        with self._lock, self.conn:
            for name, columns in _TABLES.items():
                self.conn.execute(_create_table_sql(name, columns))
            self.conn.execute(
                'CREATE INDEX IF NOT EXISTS "idx_task_events_task"\n'
                '    ON "task_events" ("task_id", "state")'
            )

    @classmethod
    def for_plan(cls, plan_path: Path, *, clock: Clock = utc_now) -> Telemetry:
        """The plan's telemetry, in its control directory (created if missing)."""
        from groundskeeper.record.control import ControlDir

        return cls(ControlDir.for_plan(plan_path).ensure().telemetry, clock=clock)

    def _insert(self, table: str, row: dict[str, Any]) -> int:
        """The new row's rowid; -1 when it could not be written (latched in `failure`: the
        record is secondary to the ledger, so a broken database never stops a verdict)."""
        values = [row.get(column) for column in _TABLES[table]]
        try:
            with self._lock, self.conn:
                rowid = self.conn.execute(self._inserts[table], values).lastrowid
        except sqlite3.Error as exc:
            self._latch(exc)
            return -1
        if table == "task_events":
            self._inserted += 1
        if rowid is None:  # sqlite always gives an insert a rowid; None would be a bug
            raise RuntimeError(f"no rowid for an insert into {table}")
        return rowid

    def _latch(self, exc: sqlite3.Error) -> None:
        log.error("telemetry %s: %s", self.path, exc)
        if self.failure is None:
            self.failure = f"{self.path} could not be written during the run ({exc}): rows are lost"

    def commit_verdicts(self, rowids: Sequence[int]) -> None:
        try:
            with self._lock, self.conn:
                self.conn.executemany(
                    "UPDATE task_events SET committed = 1 WHERE rowid = ?", [(r,) for r in rowids]
                )
        except sqlite3.Error as exc:
            self._latch(exc)

    def reconcile(self, plan_states: Mapping[str, str]) -> int:
        """Settle rows a killed run left uncommitted: kept if the plan shows that verdict,
        else deleted (the verdict never reached the plan). Returns how many were deleted."""
        try:
            with self._lock, self.conn:
                rows = self.conn.execute(
                    "SELECT rowid, task_id, state FROM task_events WHERE committed = 0"
                ).fetchall()
                return self._settle_rows(rows, plan_states)
        except sqlite3.Error as exc:
            self._latch(exc)
            return 0

    def _settle_rows(self, rows: list[Any], plan_states: Mapping[str, str]) -> int:
        keep = [(r,) for r, task, state in rows if plan_states.get(task) == state]
        drop = [(r,) for r, task, state in rows if plan_states.get(task) != state]
        self.conn.executemany("UPDATE task_events SET committed = 1 WHERE rowid = ?", keep)
        self.conn.executemany("DELETE FROM task_events WHERE rowid = ?", drop)
        return len(drop)

    def record_verdict(
        self,
        *,
        run_id: str,
        task_id: str,
        idx: int,
        title: str,
        state: str,
        output: str,
        attempt: int,
        verified: bool | None,
        reason: str | None,
        duration_ms: int,
        committed: bool = True,
        stop: str | None = None,
    ) -> int:
        """One row per verdict written into the plan; returns its rowid.

        A runner records a verdict uncommitted before writing it into the plan and commits it
        after (`commit_verdicts`); `reconcile` settles rows a crash left in between.
        """
        return self._insert(
            "task_events",
            {
                "run_id": run_id,
                "task_id": task_id,
                "idx": idx,
                "title": title,
                "state": state,
                "output": output,
                "ts": iso_utc(self._clock()),
                "attempt": attempt,
                "verified": None if verified is None else int(verified),
                "reason": reason,
                "duration_ms": duration_ms,
                "committed": int(committed),
                "stop": stop,
            },
        )

    def record_tamper(
        self, *, run_id: str, task_id: str | None, rejected_path: str, sha256: str, detail: str
    ) -> None:
        self._insert(
            "tamper_events",
            {
                "run_id": run_id,
                "task_id": task_id,
                "ts": iso_utc(self._clock()),
                "rejected_path": rejected_path,
                "sha256": sha256,
                "detail": detail,
            },
        )

    def record_dock(
        self,
        run_id: str,
        task_id: str | None,
        component: str,
        sha256: str | None,
        ok: bool,
        diagnostics: Sequence[Diagnostic],
    ) -> None:
        """A dock or a refusal; diagnostics are stored as a JSON array."""
        self._insert(
            "dock_events",
            {
                "run_id": run_id,
                "task_id": task_id,
                "ts": iso_utc(self._clock()),
                "component": component,
                "sha256": sha256,
                "ok": int(ok),
                "diagnostics": json.dumps([d.to_json() for d in diagnostics]),
            },
        )

    def record_check_event(
        self, run_id: str, task_id: str, phase: str, verdict: str, reason: str | None
    ) -> None:
        """A check made outside a worker's attempts (`red-first`, `rollup`, `sweep`)."""
        self._insert(
            "check_events",
            {
                "run_id": run_id,
                "task_id": task_id,
                "ts": iso_utc(self._clock()),
                "phase": phase,
                "verdict": verdict,
                "reason": reason,
            },
        )

    def record_contract_events(
        self, run_id: str, task_id: str, attempt: int, rows: Sequence[Mapping[str, Any]]
    ) -> None:
        """The verdicts of one claim's contracts and evidence, in one commit; each row has
        `kind`, `spec`, `soft`, `ok`, `code`, `message` and `detail` (a JSON-native value)."""
        ts = iso_utc(self._clock())
        columns = _TABLES["contract_events"]
        values = []
        for row in rows:
            full = {**row, "run_id": run_id, "task_id": task_id, "ts": ts, "attempt": attempt,
                    "soft": int(bool(row.get("soft"))), "ok": int(bool(row.get("ok"))),
                    "detail": json.dumps(row.get("detail") or {}, default=repr)}  # fmt: skip
            values.append([full.get(c) for c in columns])
        try:
            with self._lock, self.conn:
                self.conn.executemany(self._inserts["contract_events"], values)
        except sqlite3.Error as exc:
            self._latch(exc)

    def record_check_events(
        self, run_id: str, events: Sequence[tuple[str, str, str, str | None]]
    ) -> None:
        """Many `record_check_event`s, (task id, phase, verdict, reason) each, in one commit."""
        ts = iso_utc(self._clock())
        columns = _TABLES["check_events"]
        rows = [
            [{"run_id": run_id, "task_id": t, "ts": ts, "phase": p, "verdict": v,
              "reason": r}.get(c) for c in columns]
            for t, p, v, r in events
        ]  # fmt: skip
        try:
            with self._lock, self.conn:
                self.conn.executemany(self._inserts["check_events"], rows)
        except sqlite3.Error as exc:
            self._latch(exc)

    def record_model_call(
        self, run_id: str, task_id: str | None, attempt: int, call: RecordedCall
    ) -> None:
        """One model call; `task_id` None for a call made for no task (the author's)."""
        usage = call.usage
        self._insert(
            "model_calls",
            {
                "run_id": run_id,
                "task_id": task_id,
                "ts": iso_utc(self._clock()),
                "purpose": call.purpose,
                "attempt": attempt,
                "model": usage.model,
                "stop_reason": call.stop_reason,
                "error": call.error,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cache_read_tokens": usage.cache_read_tokens,
                "cache_write_tokens": usage.cache_write_tokens,
                "latency_ms": usage.latency_ms,
                "request_id": usage.request_id,
                "retries": usage.retries,
            },
        )

    def model_calls(self, run_id: str | None = None) -> list[dict[str, Any]]:
        """Model-call rows in insertion order, optionally of one run."""
        with self._lock:
            table = self.db.table("model_calls")
            if run_id is None:
                return list(table.rows_where(order_by="rowid"))
            return list(table.rows_where("run_id = ?", [run_id], order_by="rowid"))

    def verdicts(self, task_id: str | None = None) -> list[dict[str, Any]]:
        """Verdict rows in insertion order, optionally for one task."""
        with self._lock:
            if task_id is None:
                return list(self.db.table("task_events").rows_where(order_by="rowid"))
            return list(
                self.db.table("task_events").rows_where("task_id = ?", [task_id], order_by="rowid")
            )

    def ever_passed(self, task_id: str) -> bool:
        """ "Did this ever pass?" — a verified DONE row exists for the task."""
        with self._lock:
            row = self.db.execute(
                "SELECT 1 FROM task_events WHERE task_id = ? AND state = 'DONE' AND verified = 1"
                " AND committed = 1 LIMIT 1",
                [task_id],
            ).fetchone()
        return row is not None

    def close(self) -> None:
        with self._lock:
            self.conn.close()

    def __enter__(self) -> Telemetry:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
