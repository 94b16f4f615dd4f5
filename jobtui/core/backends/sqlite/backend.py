"""SQLite, the embedded default: one file, no accounts, exclusivity by row leases written inside BEGIN IMMEDIATE."""

from __future__ import annotations

import getpass
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from sqlalchemy import Table, delete, insert, select, text, update
from sqlalchemy.engine import URL, Connection, Engine, RootTransaction
from sqlalchemy.exc import OperationalError

from jobtui.core import owner_code, schema
from jobtui.core.backends.base import Backend, FinishRow, PlanClaim, RunOutcome
from jobtui.core.backends.sqlite.engine import sqlite_engine, sqlite_now_override
from jobtui.core.cursors import FETCH_BATCH
from jobtui.core.errors import InvalidInput
from jobtui.core.model import strip_trailing_semicolon
from jobtui.core.rowmap import job_from_row
from jobtui.core.statements import run_update_stmt, update_job
from jobtui.core.timeutil import to_db

if TYPE_CHECKING:
    from jobtui.core.model import Job, What


T = TypeVar("T")

EXPR_MAX_VALUE = 100_000  # bytes an expr schedule's value may take


class ReadPoller:
    """SQLite's poller: a plain read transaction each time (nothing goes over a network)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def run(self, query: Callable[[Connection], T]) -> T:
        with self.engine.connect() as conn, conn.begin():
            return query(conn)

    def close(self) -> None:
        pass


class SQLiteBackend(Backend):
    name: ClassVar[str] = "sqlite"
    has_accounts: ClassVar[bool] = False
    named_locks: ClassVar[bool] = False
    has_events: ClassVar[bool] = False
    no_events: ClassVar[str] = (
        "SQLite has no events: the Event Scheduler is MySQL/MariaDB's (jobtui's own jobs "
        "are listed by `jobtui list`)"
    )

    # ---------------------------------------------------------------- connections

    @classmethod
    def create_engine(cls, url: URL, *, pool_size: int) -> Engine:
        return sqlite_engine(url)  # one writer at a time: no pool to size

    def begin(self, conn: Connection, *, write: bool = True) -> RootTransaction:
        if not write:
            return conn.begin()
        conn.execution_options(immediate=True)  # BEGIN IMMEDIATE (engine.py: its "begin" hook)
        try:
            return conn.begin()
        finally:
            conn.execution_options(immediate=False)

    def poller(self) -> ReadPoller:
        return ReadPoller(self.engine)

    # ---------------------------------------------------------------- store

    def current_user(self) -> str:
        try:
            return getpass.getuser()
        except (KeyError, OSError):
            return "unknown"

    def schema_name(self) -> str:
        return ""

    def readable_tables(self, owner: Callable[[], str]) -> tuple[Table, Table]:
        return schema.job, schema.run  # whoever may open the file reads every row

    @contextmanager
    def prune_lock(self, lock_key: Callable[[], str], wait: float) -> Iterator[bool]:
        yield True  # each pruning transaction is BEGIN IMMEDIATE: pruners take turns

    def evaluate_expr(
        self,
        conn: Connection,
        expr: str,
        now: datetime,
        *,
        job: Job | None,
        schema_name: str,
        run_conn: Connection | None = None,
    ) -> Any:
        """``SELECT (expr)``, jobtui's NOW() returning ``now``; bounded in size and in time.
        (``run_conn`` is always ``conn`` here: SQLite runs nothing apart.)"""
        del run_conn
        # A date needs a few bytes: cap text and blobs (randomblob(1e9) would
        # take a gigabyte of memory) for this evaluation only.
        raw: Any = conn.connection.dbapi_connection
        old_limit = raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, EXPR_MAX_VALUE)
        deadline = time.monotonic() + owner_code.EXPR_TIMEOUT
        raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        statement = f"SELECT ({expr})"
        try:
            with sqlite_now_override(now):
                return conn.execute(text(statement)).scalar()
        except sqlite3.OperationalError as exc:  # raised past SQLAlchemy: its error
            raise OperationalError(statement, None, exc) from exc
        finally:
            raw.set_progress_handler(None, 0)
            raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, old_limit)

    def timed_out(self, exc: BaseException) -> bool:
        orig = getattr(exc, "orig", None) or exc
        return isinstance(orig, sqlite3.OperationalError) and "interrupted" in str(orig)

    def check_sql(self, statement: str) -> None:
        with self.engine.connect() as conn:
            try:
                conn.exec_driver_sql("EXPLAIN " + statement)
            finally:
                conn.rollback()

    def check_procedure(self, schema_name: str, procedure: str, args: Sequence[str]) -> None:
        raise InvalidInput(
            "--call runs a stored procedure, which needs MySQL/MariaDB; on SQLite use "
            "--sql STATEMENT or --action NAME"
        )

    def refuse_ungranted(self, account: str, action: str) -> None:
        return  # no accounts: every registered action is allowed

    def check_action_granted(self, conn: Connection, job: Job) -> None:
        return  # no accounts: every registered action is allowed

    def finish_schema(self, conn: Connection) -> None:
        schema.sqlite_job_ids_never_reused(conn)

    # ---------------------------------------------------------------- the server's events

    def read_events(self, conn: Connection, schema: str | None) -> list[dict[str, Any]]:
        raise InvalidInput(self.no_events)

    def event_scheduler(self, conn: Connection) -> tuple[str, str]:
        raise InvalidInput(self.no_events)

    def set_event_enabled(
        self, conn: Connection, schema: str, name: str, definer: str, enabled: bool
    ) -> None:
        raise InvalidInput(self.no_events)

    # ---------------------------------------------------------------- runners: claim and record

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
            if row.running or self.leased_elsewhere(row, runner_id, now):
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
        busy: dict[int, Any] | None = None,
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
                job = job_from_row(row)
                if job.problem is not None:
                    if not job.running:
                        problems[job.id] = job.problem
                    continue
                if self.leased_elsewhere(row, runner_id, now):
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
                new = finish(row, job_from_row(row) if row is not None else None, item)
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
        routine: owner_code.Verdict | None,
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

    def renew_leases(self, conn: Connection, runner_id: str, until: datetime) -> None:
        j = schema.job
        conn.execute(update(j).where(j.c.locked_by == runner_id).values(locked_until=to_db(until)))

    def drop_leases(self, conn: Connection, runner_id: str) -> None:
        j = schema.job
        conn.execute(
            update(j)
            .where(j.c.locked_by == runner_id, j.c.running.is_(False))
            .values(locked_by=None, locked_until=None)
        )

    @contextmanager
    def reaping_lock(self, conn: Connection, lock_name: Callable[[], str]) -> Iterator[bool]:
        yield True  # no lock to wait for: the reaper judged the holder dead (reaping.py)

    # ---------------------------------------------------------------- runners: starting and scheduling

    def pool_engine(self, url: str, pool_size: int) -> Engine:
        if ":memory:" in url or url.rstrip("/") == "sqlite:":
            return self.engine  # an in-memory database exists on the store's engine only
        return super().pool_engine(url, pool_size)

    def lock_scope(self, engine: Engine, lock_key: Callable[[], str]) -> tuple[str, str]:
        return "", ""  # jobs are exclusive by their rows' leases
