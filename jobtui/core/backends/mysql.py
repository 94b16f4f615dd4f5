"""MySQL and MariaDB: accounts and DEFINER routines, exclusivity by GET_LOCK."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy import text
from sqlalchemy.engine import Connection, Engine, RootTransaction

from jobtui.core import routines
from jobtui.core.backends.base import Backend, FinishRow, PlanClaim, RunOutcome
from jobtui.core.db import reset_mysql_session
from jobtui.core.executor import drain

if TYPE_CHECKING:
    from jobtui.core.model import Job, What

# backends/mysql_batch.py reads rows into Jobs with the store's row mapping, and the store
# imports the backends: the claim and record methods import it when they first run.


class MySQLBackend(Backend):
    name: ClassVar[str] = "mysql"
    has_accounts: ClassVar[bool] = True
    named_locks: ClassVar[bool] = True

    # ---------------------------------------------------------------- connections

    # ---------------------------------------------------------------- store

    # ---------------------------------------------------------------- runners: claim and record

    def begin(self, conn: Connection, *, write: bool = True) -> RootTransaction:
        return conn.begin()

    def connection_id(self, conn: Connection) -> int | None:
        cid = int(conn.execute(text("SELECT CONNECTION_ID()")).scalar_one())
        conn.commit()
        return cid

    def reset_session(self, conn: Connection) -> None:
        reset_mysql_session(conn.connection.dbapi_connection)

    def take_locks(self, conn: Connection, names: Sequence[str]) -> list[bool]:
        """Try once (no wait) to take each named lock on ``conn``, in one round trip:
        which ones it now holds. (Named locks are not transactional.)"""
        from jobtui.core.backends import mysql_batch as sql

        if not names:
            return []
        row = conn.exec_driver_sql(sql.get_locks_sql(len(names)), tuple(names)).one()
        return [v == 1 for v in row]

    def release_locks(self, conn: Connection, names: Sequence[str]) -> None:
        from jobtui.core.backends import mysql_batch as sql

        if names:
            conn.exec_driver_sql(sql.release_locks_sql(len(names)), tuple(names))

    def lock_holder(self, conn: Connection, name: str) -> int | None:
        from jobtui.core.backends import mysql_batch as sql

        value = conn.exec_driver_sql(sql.LOCK_HOLDER_SQL, (name,)).scalar()
        return None if value is None else int(value)

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
        name = lock_name(job_id)
        held = None
        if not self.take_locks(conn, [name])[0]:
            held = (None, f"connection {self.lock_holder(conn, name)}")
        conn.commit()
        return held

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
        """A batch in five statements (GET_LOCKs, ``SELECT ... FOR UPDATE``, one
        ``UPDATE ... CASE``, one multi-row ``INSERT``, ``COMMIT``) whatever its size:
        the named lock of each job on this (the executing) connection, each row
        re-checked under its lock, the run-log rows (UNIQUE slot) written in the
        claim's transaction."""
        from jobtui.core.backends import mysql_batch as sql

        with sql.raw_transaction(conn, "claim") as cur:
            wanted = [(jid, lock_name(jid)) for jid in job_ids]
            got = sql.get_locks(cur, [n for _, n in wanted])
            names = {jid: n for (jid, n), ok in zip(wanted, got, strict=True) if ok}
            locked.extend(names.values())
            rows = sql.lock_rows(cur, sql.CLAIM_COLUMNS, list(names))
            jobs = sql.jobs(sql.CLAIM_COLUMNS, rows)
            runs: list[Any] = []
            values: dict[int, dict[str, Any]] = {}
            run_rows: list[dict[str, Any]] = []
            for row, job in zip(rows, jobs, strict=True):
                if job.problem is not None:  # never claimed: marked BROKEN after the claim
                    if not job.running:
                        problems[job.id] = job.problem
                    continue
                planned = plan(conn, row, job, names[job.id])
                if planned is None:
                    continue
                run, vals, rows_ = planned
                runs.append(run)
                values[job.id] = vals
                run_rows.extend(rows_)
            if runs:
                # Every row is locked and was seen idle: all of them must match.
                matched = sql.update_jobs(cur, values, only_idle=True)
                if matched != len(runs):
                    raise RuntimeError(f"claim matched {matched} of {len(runs)} locked rows")
                sql.insert_runs(cur, run_rows)
            unused = [n for jid, n in names.items() if jid not in values]
            sql.release_locks(cur, unused)
        for n in unused:
            locked.remove(n)
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
        """A batch's outcomes in five statements (``UPDATE jobtui_run ... CASE``,
        ``SELECT ... FOR UPDATE``, ``UPDATE jobtui_job ... CASE``, ``DO
        RELEASE_LOCK(...)``, ``COMMIT``)."""
        from jobtui.core.backends import mysql_batch as sql

        with sql.raw_transaction(conn, "recording") as cur:
            sql.record_runs(cur, runner_id, outcomes)
            locked = sql.lock_rows(cur, sql.RECORD_COLUMNS, [o[0] for o in outcomes])
            rows = {
                int(row.id): (row, job)
                for row, job in zip(locked, sql.jobs(sql.RECORD_COLUMNS, locked), strict=True)
            }
            updates: dict[int, dict[str, Any]] = {}
            removed: list[int] = []
            for jid, _slot, _values, item in outcomes:
                row, job = rows.get(jid, (None, None))
                new = finish(row, job, item)
                if new is not None and row is not None and row.remove_requested:
                    removed.append(jid)  # removed while it ran: now its name is free
                elif new is not None:
                    updates[jid] = new
            sql.update_jobs(cur, updates)
            sql.delete_jobs(cur, removed)
            # Inside the transaction: the job rows stay locked until the commit, so a
            # runner that takes a named lock now still waits for the row.
            sql.release_locks(cur, release)

    def recheck(
        self,
        own: Callable[[], Connection],
        engine: Engine,
        ids: Sequence[int],
        columns: Sequence[str],
    ) -> dict[int, Any]:
        """On the batch's own (idle) connection, in a transaction of its own: no pool
        checkout at the slot, when every thread re-checks at once."""
        from jobtui.core.backends import mysql_batch as sql

        with sql.raw_transaction(own(), "re-check") as cur:
            found = sql.read_rows(cur, columns, ids, lock=False)
        return {int(row.id): row for row in found}

    def verify_routines(
        self, own: Callable[[], Connection], schema_name: str, jobs: Sequence[Job]
    ) -> dict[int, routines.Verdict]:
        """In one query. No transaction of its own (no COMMIT to pay): the first run's
        transaction starts with this read of mysql.proc, a non-transactional table."""
        return routines.verify(own(), schema_name, jobs)

    def run_statement(
        self,
        conn: Connection,
        what: What,
        *,
        routine: routines.Verdict | None,
        schema_name: str,
    ) -> None:
        """Only as the owner's verified DEFINER procedure: ``CALL `db`.`jobtui_w_…`(%s, …)``,
        the job's arguments bound, every result set drained."""
        name = routines.check(routine)
        cur = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        try:
            cur.execute(routines.call_statement(schema_name, name, len(what.args)), list(what.args))
            drain(cur)
        finally:
            cur.close()

    def rollback_driver(self, raw: Any) -> None:
        raw.rollback()

    def interrupt(self, engine: Engine, conn: Connection | None, cid: int | None) -> None:
        """``KILL QUERY`` from another connection of ``engine``."""
        if cid is not None:
            with engine.connect() as other:
                other.execute(text(f"KILL QUERY {int(cid)}"))  # an int we read

    # ---------------------------------------------------------------- runners: heartbeats and reaping
