"""SQLite, the embedded default: one file, no accounts, exclusivity by row leases written inside BEGIN IMMEDIATE."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy import delete, insert, select, update
from sqlalchemy.engine import Connection, Engine, RootTransaction

from jobtui.core import bookkeeping, schema
from jobtui.core.backends.base import Backend, FinishRow, PlanClaim, RunOutcome
from jobtui.core.executor import FETCH_BATCH
from jobtui.core.model import strip_trailing_semicolon
from jobtui.core.statements import run_update_stmt, update_job
from jobtui.core.timeutil import to_db

if TYPE_CHECKING:
    from jobtui.core import routines
    from jobtui.core.model import What


def lease_held_elsewhere(row: Any, runner_id: str, now: datetime) -> bool:
    """Whether a job row's lease (``locked_by``, ``locked_until``) is another runner's and
    has not run out. A ``locked_until`` that is no date does not hold the row."""
    return bool(
        row.locked_by
        and row.locked_by != runner_id
        and row.locked_until is not None
        and (bookkeeping.row_time(row.locked_until) or now) > now
    )


def _job_from_row(row: Any) -> Any:
    # The store's row mapping; imported here because the store imports the backends.
    from jobtui.core.store import job_from_row

    return job_from_row(row)


class SQLiteBackend(Backend):
    name: ClassVar[str] = "sqlite"
    has_accounts: ClassVar[bool] = False
    named_locks: ClassVar[bool] = False

    # ---------------------------------------------------------------- connections

    # ---------------------------------------------------------------- store

    # ---------------------------------------------------------------- runners: claim and record

    def begin(self, conn: Connection, *, write: bool = True) -> RootTransaction:
        if not write:
            return conn.begin()
        conn.execution_options(immediate=True)  # BEGIN IMMEDIATE (db._sqlite_engine)
        try:
            return conn.begin()
        finally:
            conn.execution_options(immediate=False)

    def take_hold(
        self,
        conn: Connection,
        job_id: int,
        *,
        lock_name: Callable[[int], str],
        runner_id: str,
        now: datetime,
        lease_until: datetime,
    ) -> tuple[str | None, str] | None:
        """The job row's lease, written for this runner inside BEGIN IMMEDIATE (renewed by
        its heartbeat) while the job is idle and nobody else's lease holds it."""
        j = schema.job
        if conn.in_transaction():
            conn.rollback()
        with self.begin(conn):
            row = conn.execute(select(j).where(j.c.id == job_id)).first()
            if row is None:
                return None
            if row.running or lease_held_elsewhere(row, runner_id, now):
                return row.name, f"runner {row.locked_by or row.runner_id}"
            conn.execute(
                update(j)
                .where(j.c.id == job_id)
                .values(locked_by=runner_id, locked_until=to_db(lease_until))
            )
        return None

    def claim_batch(
        self,
        conn: Connection,
        job_ids: Sequence[int],
        *,
        lock_name: Callable[[int], str],
        plan: PlanClaim,
        runner_id: str,
        now: datetime,
        lease_until: datetime,
        locked: list[str],
        problems: dict[int, str],
    ) -> list[Any]:
        """Inside BEGIN IMMEDIATE (one writer at a time): each row whose lease is free
        gets this runner's lease with its claim."""
        j, r = schema.job, schema.run
        runs: list[Any] = []
        if conn.in_transaction():
            conn.rollback()
        with self.begin(conn):
            rows = (
                conn.execute(select(j).where(j.c.id.in_(job_ids)).order_by(j.c.id)).all()
                if job_ids
                else []
            )
            run_rows: list[dict[str, Any]] = []
            lease = to_db(lease_until)
            for row in rows:
                job = _job_from_row(row)
                if job.problem is not None:
                    if not job.running:
                        problems[job.id] = job.problem
                    continue
                if lease_held_elsewhere(row, runner_id, now):
                    continue
                planned = plan(conn, row, job, None)
                if planned is None:
                    continue
                run, values, rows_ = planned
                values["locked_by"] = runner_id
                values["locked_until"] = lease
                if update_job(conn, job.id, values, only_idle=True).rowcount != 1:
                    continue
                runs.append(run)
                run_rows.extend(rows_)
            if run_rows:
                conn.execute(insert(r), run_rows)
        return runs

    def record_batch(
        self,
        conn: Connection,
        runner_id: str,
        outcomes: Sequence[RunOutcome],
        finish: FinishRow,
        *,
        release: Sequence[str],
    ) -> None:
        """One UPDATE per run row, the job rows read, one UPDATE (or DELETE) per job row,
        inside BEGIN IMMEDIATE. (No named locks: ``release`` is empty.)"""
        j = schema.job
        stmt = run_update_stmt()
        if conn.in_transaction():
            conn.rollback()
        with self.begin(conn):
            for jid, slot, values, _item in outcomes:
                conn.execute(
                    stmt,
                    {
                        "w_job_id": jid,
                        "w_slot": slot,
                        "w_runner": runner_id,
                        **{f"v_{k}": v for k, v in values.items()},
                    },
                )
            ids = [o[0] for o in outcomes]
            rows = {int(row.id): row for row in conn.execute(select(j).where(j.c.id.in_(ids)))}
            for jid, _slot, _values, item in outcomes:
                row = rows.get(jid)
                new = finish(row, _job_from_row(row) if row is not None else None, item)
                if new is None:
                    continue
                if row is not None and row.remove_requested:
                    # removed while it ran: now its name is free
                    conn.execute(delete(j).where(j.c.id == jid))
                    continue
                update_job(conn, jid, new)

    def recheck(
        self,
        own: Callable[[], Connection],
        engine: Engine,
        ids: Sequence[int],
        columns: Sequence[str],
    ) -> dict[int, Any]:
        j = schema.job
        query = select(*(j.c[name] for name in columns)).where(j.c.id.in_(ids))
        with engine.connect() as conn:
            rows = {int(row.id): row for row in conn.execute(query)}
            conn.rollback()
        return rows

    def run_statement(
        self,
        conn: Connection,
        what: What,
        *,
        routine: routines.Verdict | None,
        schema_name: str,
    ) -> None:
        """An ``sql`` job's statement as it is (no accounts, no routines: ``call`` jobs
        need MySQL/MariaDB), every row read."""
        if what.kind != "sql":
            raise RuntimeError(f"{what.kind} jobs need MySQL/MariaDB; on SQLite use sql or action")
        raw: Any = conn.connection.dbapi_connection
        if not raw.in_transaction:
            raw.execute("BEGIN")
        cur = raw.cursor()
        try:
            cur.execute(strip_trailing_semicolon(what.target))
            while cur.fetchmany(FETCH_BATCH):
                pass
        finally:
            cur.close()

    def rollback_driver(self, raw: Any) -> None:
        if raw.in_transaction:
            raw.execute("ROLLBACK")

    def interrupt(self, engine: Engine, conn: Connection | None, cid: int | None) -> None:
        """sqlite3's ``interrupt()`` of the run's own connection."""
        if conn is not None:
            conn.connection.dbapi_connection.interrupt()  # type: ignore[union-attr]

    # ---------------------------------------------------------------- runners: heartbeats and reaping
