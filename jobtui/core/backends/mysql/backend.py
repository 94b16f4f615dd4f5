"""MySQL and MariaDB: accounts and DEFINER routines, exclusivity by GET_LOCK."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import sqlalchemy
from sqlalchemy import Table, select, text
from sqlalchemy.engine import URL, Connection, Engine, RootTransaction
from sqlalchemy.exc import DBAPIError, SQLAlchemyError

from jobtui.core import owner_code, schema
from jobtui.core.argtypes import check_arg
from jobtui.core.backends.base import Backend, FinishRow, PlanClaim, RunOutcome
from jobtui.core.backends.mysql import batch as sql
from jobtui.core.backends.mysql import events as mysql_events
from jobtui.core.backends.mysql import grants as mysql_grants
from jobtui.core.backends.mysql import lock_key, operator_views, owner_index, routines, sqlapi
from jobtui.core.backends.mysql import rights as mysql_rights
from jobtui.core.backends.mysql.driver import mysql_conversions, reset_mysql_session
from jobtui.core.backends.mysql.owner_routines import OwnerRoutines
from jobtui.core.backends.mysql.sqlapi.interface import InstalledSQLInterface
from jobtui.core.cursors import drain
from jobtui.core.dberrors import LOCK_WAIT_TIMEOUT, NO_SUCH_TABLE, PERMISSION_ERRORS, error_code
from jobtui.core.errors import InvalidInput, PermissionDenied
from jobtui.core.model import quote_identifier
from jobtui.core.retention import prune_lock_name
from jobtui.core.timeutil import aware

if TYPE_CHECKING:
    from jobtui.core.accounts import Rights
    from jobtui.core.model import Job, What


T = TypeVar("T")


class KeptConnectionPoller:
    """MySQL's poller: one connection kept for the purpose, in autocommit.

    One round trip a query, where a pooled read costs four (the pool's
    pre-ping, the SELECT, the COMMIT, the pool's ROLLBACK on return). A
    connection the server dropped while it was kept (a restart, wait_timeout)
    is replaced once on the spot; a failure on a fresh connection goes to the
    caller, and the next call connects again.
    """

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._conn: Connection | None = None
        self._lock = threading.Lock()

    def run(self, query: Callable[[Connection], T]) -> T:
        with self._lock:
            while True:
                kept = self._conn is not None
                if self._conn is None:
                    self._conn = self.engine.connect().execution_options(
                        isolation_level="AUTOCOMMIT"
                    )
                conn = self._conn
                try:
                    return query(conn)
                except DBAPIError as exc:
                    self._drop()
                    if not (kept and exc.connection_invalidated):
                        raise

    def close(self) -> None:
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            try:
                conn.close()
            except SQLAlchemyError:
                pass  # the connection is gone already: nothing to give back


def _database(conn: Connection) -> str:
    """The connection's current database (``DATABASE()``): jobtui's."""
    return str(conn.exec_driver_sql("SELECT DATABASE()").scalar() or "")


log = logging.getLogger("jobtui.runner")

INVALID_ROLE = 1959  # SET ROLE of a role the account does not hold

_role_warned: set[str] = set()  # the executor roles a pool of this process lacked (told once)


def connection_gone(
    conn: Connection,
    cid: int,
    *,
    kill: bool,
    attempts: int,
    killing: Callable[[], None] | None = None,
) -> bool:
    """Whether the server no longer lists connection ``cid`` (a dead runner's), asked on
    ``conn``: with ``kill``, ``KILL CONNECTION`` first (which reaches a thread this
    account cannot list too; ``killing`` is told when it found one), then looked for
    up to ``attempts`` times 0.1 s. Without, looked for once (a SQL session still
    connected is alive). An unknown id (1094) is gone. Other errors go to the caller."""
    if kill:
        try:
            conn.exec_driver_sql(f"KILL CONNECTION {int(cid)}")  # an int we read
        except DBAPIError as exc:
            if error_code(exc) == 1094:  # unknown thread: gone already
                return True
            raise
        if killing is not None:
            killing()
    for _attempt in range(attempts if kill else 1):
        present = conn.exec_driver_sql(
            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = %s", (int(cid),)
        ).scalar()
        conn.rollback()
        if not present:
            return True
        time.sleep(0.1)
    return False


class MySQLBackend(Backend):
    name: ClassVar[str] = "mysql"
    has_accounts: ClassVar[bool] = True
    action_allow_list: ClassVar[bool] = True
    named_locks: ClassVar[bool] = True
    separate_executor: ClassVar[bool] = True

    @property
    def job_routines(self) -> OwnerRoutines:
        return OwnerRoutines(self.engine)

    @property
    def sql_interface(self) -> InstalledSQLInterface:
        return InstalledSQLInterface()

    @property
    def grants(self) -> mysql_grants.AccountGrants:
        return mysql_grants.AccountGrants(cluster=self.cluster)

    # ---------------------------------------------------------------- connections

    @classmethod
    def create_engine(cls, url: URL, *, pool_size: int) -> Engine:
        query = dict(url.query)
        option_file = query.get("read_default_file")
        if isinstance(option_file, str):
            query["read_default_file"] = os.path.expanduser(option_file)
        query.setdefault("charset", "utf8mb4")
        url = url.set(query=query)
        return sqlalchemy.create_engine(
            url,
            pool_pre_ping=True,
            pool_recycle=3600,
            pool_size=pool_size,
            max_overflow=pool_size * 2,
            connect_args={
                # All DATETIME values are UTC; NOW() in expr schedules is UTC too.
                "init_command": "SET time_zone = '+00:00'",
                "connect_timeout": 5,
                "autocommit": False,
                "conv": mysql_conversions(),  # PyMySQL's codec, with fast datetimes
            },
        )

    def begin(self, conn: Connection, *, write: bool = True) -> RootTransaction:
        return conn.begin()

    def poller(self) -> KeptConnectionPoller:
        return KeptConnectionPoller(self.engine)

    # ---------------------------------------------------------------- store

    def current_user(self) -> str:
        with self.engine.connect() as conn:
            return str(conn.execute(text("SELECT CURRENT_USER()")).scalar_one())

    def schema_name(self) -> str:
        with self.engine.connect() as conn:
            return _database(conn)

    def readable_tables(self, owner: Callable[[], str]) -> tuple[Table, Table]:
        """The database decides, not jobtui: an operator account has no privilege on the
        tables (docs/privileges.md). Missing tables count as "the tables" (``jobtui
        init`` creates them)."""
        with self.engine.connect() as conn:
            try:
                conn.execute(select(schema.job.c.id).limit(0)).all()
                return schema.job, schema.run
            except DBAPIError as exc:
                if error_code(exc) not in PERMISSION_ERRORS:
                    if error_code(exc) == NO_SUCH_TABLE:
                        return schema.job, schema.run
                    raise
                conn.rollback()
            try:
                conn.execute(select(operator_views.user_job.c.id).limit(0)).all()
            except DBAPIError as exc:
                if error_code(exc) in (NO_SUCH_TABLE, *PERMISSION_ERRORS):
                    raise PermissionDenied(
                        f"permission denied: account {owner()!r} may read neither the "
                        f"jobtui tables nor the operators' views ({operator_views.USER_JOB_VIEW}); an "
                        "admin runs `jobtui init` and `jobtui grant ACCOUNT --operator` "
                        "(docs/privileges.md)"
                    ) from None
                raise
            return operator_views.user_job, operator_views.user_run

    def readable_runners(self, *, sees_all: bool) -> Table:
        # operators read it through a view that cannot lock the table (operator_views.RUNNERS_VIEW)
        return schema.runner if sees_all else operator_views.runners_view

    @contextmanager
    def prune_lock(self, lock_key: Callable[[], str], wait: float) -> Iterator[bool]:
        """The named lock ``retention.prune_lock_name``, held by a connection of its own."""
        with self.engine.connect() as lock_conn:
            name = prune_lock_name(
                lock_key(), str(lock_conn.execute(text("SELECT DATABASE()")).scalar())
            )
            got = lock_conn.execute(
                text("SELECT GET_LOCK(:n, :w)"), {"n": name, "w": max(0.0, float(wait))}
            ).scalar()
            lock_conn.commit()
            if got != 1:
                yield False
                return
            try:
                yield True
            finally:
                lock_conn.execute(text("DO RELEASE_LOCK(:n)"), {"n": name})
                lock_conn.commit()

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
        """``SET @@timestamp`` makes NOW() return ``now`` for this session. With ``job``
        (the runner) the expression is the job's own FUNCTION, verified on ``mysql.proc``
        and run with its owner's rights; without, it runs in this session, with this
        account's rights (the owner's own check at submit, or a preview of its own
        schedule). ``SET STATEMENT max_statement_time`` bounds it.

        ``run_conn`` (the runner's executor): the function is verified on ``conn`` and
        runs on ``run_conn``, committed there (as it was with the claim before)."""
        if job is not None:
            verdict = routines.verify(conn, schema_name, [job], kind=routines.FUNCTION).get(job.id)
            select_ = f"SELECT {routines.qualified(schema_name, routines.check(verdict))}()"
        else:
            select_ = f"SELECT ({expr})"
        on = conn if run_conn is None else run_conn
        on.execute(text("SET @@timestamp = :ts"), {"ts": aware(now).timestamp()})
        try:
            return routines.scalar(
                on, f"SET STATEMENT max_statement_time={owner_code.EXPR_TIMEOUT:g} FOR {select_}"
            )
        finally:
            on.execute(text("SET @@timestamp = DEFAULT"))
            if run_conn is not None:
                run_conn.commit()

    def timed_out(self, exc: BaseException) -> bool:
        return error_code(exc) == 1969  # max_statement_time exceeded

    def check_sql(self, statement: str) -> None:
        with self.engine.connect() as conn:
            try:
                conn.execute(text("PREPARE jobtui_check FROM :s"), {"s": statement})
                conn.execute(text("DEALLOCATE PREPARE jobtui_check"))
            finally:
                conn.rollback()

    def check_procedure(self, schema_name: str, procedure: str, args: Sequence[str]) -> None:
        nargs = len(args)
        with self.engine.connect() as conn, conn.begin():
            found = conn.execute(
                text(
                    "SELECT COUNT(*) FROM information_schema.ROUTINES "
                    "WHERE ROUTINE_SCHEMA = :s AND ROUTINE_NAME = :p "
                    "AND ROUTINE_TYPE = 'PROCEDURE'"
                ),
                {"s": schema_name, "p": procedure},
            ).scalar_one()
            if not found:
                raise InvalidInput(
                    f"procedure {schema_name}.{procedure} does not exist (or you may not see "
                    f"it): create it first, e.g. CREATE PROCEDURE `{schema_name}`.`{procedure}`() ..."
                )
            params = conn.execute(
                text(
                    "SELECT PARAMETER_MODE, PARAMETER_NAME, DATA_TYPE, DTD_IDENTIFIER "
                    "FROM information_schema.PARAMETERS "
                    "WHERE SPECIFIC_SCHEMA = :s AND SPECIFIC_NAME = :p "
                    "AND ROUTINE_TYPE = 'PROCEDURE' AND ORDINAL_POSITION > 0 "
                    "ORDER BY ORDINAL_POSITION"
                ),
                {"s": schema_name, "p": procedure},
            ).all()
        if len(params) != nargs:
            raise InvalidInput(
                f"procedure {schema_name}.{procedure} takes {len(params)} argument(s), "
                f"{nargs} given with --arg"
            )
        if any(p[0] != "IN" for p in params):
            raise InvalidInput(
                f"procedure {schema_name}.{procedure} has OUT/INOUT parameters: jobtui binds "
                "literal arguments only, so use a procedure with IN parameters"
            )
        for i, (value, param) in enumerate(zip(args, params, strict=True), start=1):
            check_arg(
                value,
                position=i,
                name=param[1],
                data_type=str(param[2]),
                dtd=str(param[3]),
                target=f"{schema_name}.{procedure}",
            )

    def refuse_ungranted(self, account: str, action: str) -> None:
        with self.engine.connect() as conn, conn.begin():
            mysql_grants.refuse_ungranted(conn, account, action)

    def check_action_granted(self, conn: Connection, job: Job) -> None:
        mysql_grants.check_granted(conn, job)

    def after_schema(self) -> None:
        lock_key.ensure_lock_key(self.engine)
        owner_index.ensure_owner_index(self.engine)
        operator_views.ensure_views(self.engine)
        sqlapi.ensure_sql_api(self.engine)

    # ---------------------------------------------------------------- the server's events

    def read_events(self, conn: Connection, schema: str | None) -> list[dict[str, Any]]:
        return mysql_events.read_events(conn, schema)

    def run_rights_problem(self, conn: Connection) -> str | None:
        # A runner verifies each job's routine on mysql.proc before running it
        # (routines.verify): without SELECT there, every run is refused.
        try:
            conn.execute(text("SELECT 1 FROM mysql.proc WHERE 1 = 0")).all()
        except DBAPIError as exc:
            if error_code(exc) not in PERMISSION_ERRORS:
                raise
            return (
                "it may not read mysql.proc, where a runner verifies each job's routines "
                "before running them, so every run would fail"
            )
        finally:
            conn.rollback()
        return None

    def read_procedure_texts(
        self, conn: Connection, names: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], str | None]:
        return mysql_events.read_procedure_texts(conn, names)

    def server_time(self, conn: Connection) -> datetime | None:
        found: datetime = conn.execute(text("SELECT UTC_TIMESTAMP(6)")).scalar_one()
        conn.rollback()
        return found

    def account_rights(self, conn: Connection, account: str | None) -> Rights | None:
        database = _database(conn)
        if account is None:
            return mysql_rights.current_rights(conn, database)
        return mysql_rights.account_rights(conn, account, database)

    def event_scheduler(self, conn: Connection) -> tuple[str, str]:
        return mysql_events.scheduler_state(conn)

    def set_event_enabled(
        self, conn: Connection, schema: str, name: str, definer: str, enabled: bool
    ) -> None:
        mysql_events.set_enabled(conn, schema, name, definer, enabled)

    # ---------------------------------------------------------------- runners: claim and record

    def connection_id(self, conn: Connection) -> int | None:
        cid = int(conn.execute(text("SELECT CONNECTION_ID()")).scalar_one())
        conn.commit()
        return cid

    def reset_session(self, conn: Connection) -> None:
        reset_mysql_session(conn.connection.dbapi_connection)

    def executor_session(self, conn: Connection, role: str | None) -> bool:
        """``SET ROLE`` the executor role (EXECUTE on the jobtui database, nothing else):
        owner code runs on a connection that can do nothing worth borrowing. One round
        trip: the statement goes through the driver's own cursor, as a SET opens no
        transaction and leaves nothing to commit. An account that does not hold the
        role (granted before it existed, or not a runner account) keeps its default
        role, told once: `jobtui grant ACCOUNT --runner` grants it; then False."""
        if role is None:
            return True
        raw: Any = conn.connection.dbapi_connection  # PyMySQL's
        try:
            with raw.cursor() as cur:
                cur.execute(f"SET ROLE {quote_identifier(role)}")  # our own name
        except Exception as exc:  # the driver's own error: no statement of ours is open
            if error_code(exc) != INVALID_ROLE:
                raise
            if role not in _role_warned:
                _role_warned.add(role)
                log.warning(
                    "the runner's account holds no role %s: owner code runs on a connection "
                    "of its own, but with the account's default role; run `jobtui grant "
                    "ACCOUNT --runner --apply` again to narrow that connection to EXECUTE "
                    "on the jobtui database (docs/privileges.md)",
                    role,
                )
            return False
        return True

    def take_locks(self, conn: Connection, names: Sequence[str]) -> list[bool]:
        """Try once (no wait) to take each named lock on ``conn``, in one round trip:
        which ones it now holds. (Named locks are not transactional.)"""
        if not names:
            return []
        row = conn.exec_driver_sql(sql.get_locks_sql(len(names)), tuple(names)).one()
        return [v == 1 for v in row]

    def release_locks(self, conn: Connection, names: Sequence[str]) -> None:
        if names:
            conn.exec_driver_sql(sql.release_locks_sql(len(names)), tuple(names))

    def lock_holder(self, conn: Connection, name: str) -> int | None:
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
        busy: dict[int, Any] | None = None,
    ) -> list[Any]:
        """A batch in five statements (GET_LOCKs, ``SELECT ... FOR UPDATE``, one
        ``UPDATE ... CASE``, one multi-row ``INSERT``, ``COMMIT``) whatever its size:
        the named lock of each job on this (the executing) connection, each row
        re-checked under its lock, the run-log rows (UNIQUE slot) written in the
        claim's transaction."""
        with sql.raw_transaction(conn, "claim") as cur:
            wanted = [(jid, lock_name(jid)) for jid in job_ids]
            got = sql.get_locks(cur, [n for _, n in wanted])
            names = {jid: n for (jid, n), ok in zip(wanted, got, strict=True) if ok}
            locked.extend(names.values())
            # SKIP LOCKED: a row another transaction holds (its owner's open locking read
            # through the operators' views, a steering in progress) is never waited for.
            rows = sql.lock_rows(cur, sql.CLAIM_COLUMNS_READ, list(names), skip_locked=True)
            if len(rows) < len(names):
                rows += self._held_rows(cur, sql.CLAIM_COLUMNS_READ, rows, list(names), busy)
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
                values[job.id] = sql.changed(row, vals)
                run_rows.extend(rows_)
            if runs:
                # Every row is locked and was seen idle: all of them must match.
                matched = sql.update_jobs(cur, values, only_idle=True)
                if matched != len(runs):
                    raise RuntimeError(f"claim matched {matched} of {len(runs)} locked rows")
                sql.insert_runs(cur, run_rows, bounded=True)
            unused = [n for jid, n in names.items() if jid not in values]
            sql.release_locks(cur, unused)
        for n in unused:
            locked.remove(n)
        return runs

    @staticmethod
    def _held_rows(
        cur: Any,
        columns: Sequence[str],
        rows: list[Any],
        ids: Sequence[int],
        busy: dict[int, Any] | None,
    ) -> list[Any]:
        """The rows the claim skipped as locked, waited for at most CLAIM_LOCK_WAIT: a
        recording releases its named locks just before its COMMIT, so a row can be held
        for a moment by the runner that ran it. Still held then: ``busy`` (batches hold
        one owner's jobs, so the wait is never for another owner's lock)."""
        seen = {int(row.id) for row in rows}
        skipped = [jid for jid in ids if jid not in seen]
        try:
            return sql.lock_rows(cur, columns, skipped, bounded=True)
        except Exception as exc:
            if error_code(exc) != LOCK_WAIT_TIMEOUT:  # only the statement is rolled back
                raise
        if busy is not None:
            for found in sql.existing(cur, skipped):
                busy[int(found[0])] = found
        return []

    def note_run(self, engine: Engine, values: dict[str, Any]) -> None:
        """Bounded (``CLAIM_LOCK_WAIT``): the row falls in its owner's run-log range,
        which the owner may hold locked."""
        with engine.connect() as conn, sql.raw_transaction(conn, "note") as cur:
            sql.insert_runs(cur, [values], bounded=True)

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
        with sql.raw_transaction(conn, "recording") as cur:
            sql.record_runs(cur, runner_id, outcomes, over_lost=not self.cluster)
            # bounded: only the jobs' owner (or an admin) can hold their rows; a recording
            # that times out is retried, and logged (runner._finish)
            locked = sql.lock_rows(
                cur, sql.RECORD_COLUMNS_READ, [o[0] for o in outcomes], bounded=True
            )
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
                    updates[jid] = sql.changed(row, new)
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
        with sql.raw_transaction(own(), "re-check") as cur:
            found = sql.read_rows(cur, columns, ids, lock=False)
        return {int(row.id): row for row in found}

    def verify_routines(
        self, own: Callable[[], Connection], schema_name: str, jobs: Sequence[Job]
    ) -> dict[int, owner_code.Verdict]:
        """In one query. No transaction of its own (no COMMIT to pay): the first run's
        transaction starts with this read of mysql.proc, a non-transactional table."""
        return routines.verify(own(), schema_name, jobs)

    def run_statement(
        self,
        conn: Connection,
        what: What,
        *,
        routine: owner_code.Verdict | None,
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

    def renew_leases(self, conn: Connection, runner_id: str, until: datetime) -> None:
        pass  # the named locks live as long as the connections that hold them

    def drop_leases(self, conn: Connection, runner_id: str) -> None:
        pass  # no leases: closing its connections frees a runner's named locks

    @contextmanager
    def reaping_lock(self, conn: Connection, lock_name: Callable[[], str]) -> Iterator[bool]:
        name = lock_name()
        if not self.take_locks(conn, [name])[0]:
            conn.rollback()
            yield False  # an orphaned statement still runs: keep the job taken
            return
        conn.commit()
        try:
            yield True
        finally:
            self.release_locks(conn, [name])
            conn.commit()

    def orphan_gone(self, node: str | None, cid: int | None, *, kill: bool = True) -> bool:
        """A dead runner's executor connection ``cid`` (where its run executed), asked
        once its named lock is free (its bookkeeping connection is gone): killed now
        (``KILL CONNECTION``, the runner's CONNECTION ADMIN) unless ``kill=False``, and
        True once the server no longer lists it (a statement whose client vanished runs
        on until it ends). False while it still runs or cannot be killed: the job stays
        held. An id of a connection gone long ago is unknown (1094): gone."""
        del node
        if cid is None:
            return True
        try:
            with self.engine.connect() as conn:
                return connection_gone(conn, cid, kill=kill, attempts=50)
        except DBAPIError as exc:
            log.warning(
                "cannot tell whether connection %s of a dead runner still runs (%s): its job "
                "stays held",
                cid,
                exc.orig if exc.orig is not None else exc,
            )
            return False

    # ---------------------------------------------------------------- runners: starting and scheduling

    def lock_scope(self, engine: Engine, lock_key: Callable[[], str]) -> tuple[str, str]:
        with engine.connect() as conn:
            return _database(conn), lock_key()
