"""The job store: define, steer and read jobs (DBMS_JOB's SUBMIT, CHANGE, BROKEN, RUN ...).

Every method is one short transaction. Writes lock the job's row first
(``SELECT ... FOR UPDATE`` on MySQL/MariaDB, ``BEGIN IMMEDIATE`` on SQLite),
compute the new state with ``jobtui.core.transitions`` and write it back, so
operator actions from many processes and runner bookkeeping never interleave
half-way. Runners use the same tables (``jobtui.core.runner``).
"""

from __future__ import annotations

import getpass
import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache, wraps
from operator import itemgetter
from typing import Any, ParamSpec, TypeVar

from sqlalchemy import (
    Row,
    Table,
    and_,
    case,
    delete,
    func,
    insert,
    not_,
    or_,
    select,
    text,
    update,
)
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError, IntegrityError, OperationalError, SQLAlchemyError

from jobtui.core import actions, bookkeeping, builtin_actions, claims, routines, schema
from jobtui.core import rows as rows_
from jobtui.core.backends import backend_for
from jobtui.core.db import make_engine, mask_text, mask_url, resolve_url, sqlite_now_override
from jobtui.core.errors import (
    DatabaseUnavailable,
    InvalidInput,
    JobNotFound,
    JobtuiError,
    PermissionDenied,
    ReadOnlyError,
)
from jobtui.core.model import (
    JOB_NAME_RE,
    MAX_DESCRIPTION_LENGTH,
    Intent,
    Job,
    Outcome,
    Run,
    Schedule,
    Status,
    What,
    check_job_name,
    split_procedure,
)
from jobtui.core.schedules import check_schedule, first_run, make_schedule, next_slot, upcoming
from jobtui.core.timeutil import Clock, aware, from_db, to_db, utcnow
from jobtui.core.transitions import PHASES, derive_status, halted_reason

log = logging.getLogger("jobtui.store")

P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_MAX_FAILURES = 16
MAX_PREVIEW = 1000
MAX_MAX_FAILURES = 1_000_000
EXPR_MAX_VALUE = 100_000  # bytes an expr schedule's value may take on SQLite
UNSET: Any = object()

# MySQL client error codes that mean "the server is not there (any more)".
_CONNECTION_ERRORS = {
    1040,
    1042,
    1043,
    1044,
    1045,
    1049,
    1053,
    1152,
    1158,
    1159,
    1160,
    1161,
    2002,
    2003,
    2005,
    2006,
    2013,
    2055,
}


def _db_errors(fn: Callable[P, T]) -> Callable[P, T]:
    """Turn driver errors into jobtui errors with a masked, one-line message."""

    @wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return fn(*args, **kwargs)
        except JobtuiError:
            raise
        except SQLAlchemyError as exc:
            raise translate_db_error(exc) from exc
        except UnicodeEncodeError as exc:
            # e.g. argv bytes that were not UTF-8 (surrogate escapes): the driver cannot
            # send them; the statement never ran, its transaction is rolled back
            bad = exc.object[exc.start : exc.end] if isinstance(exc.object, str) else ""
            raise InvalidInput(
                f"invalid text: {bad!r} is not valid Unicode (bytes that are not UTF-8?); "
                "give names and values as UTF-8 text"
            ) from None

    return wrapper


def translate_db_error(exc: BaseException) -> JobtuiError:
    """A DatabaseUnavailable for lost or refused connections, else a DB error message."""
    orig = getattr(exc, "orig", None) or exc
    args = getattr(orig, "args", ())
    code = args[0] if args else None
    message = _short_error(exc)
    if isinstance(exc, OperationalError) and (
        code in _CONNECTION_ERRORS
        or (
            not isinstance(code, int)
            and ("unable to open" in message or "disk I/O" in message or "readonly" in message)
        )
    ):
        return DatabaseUnavailable(f"database unavailable: {message}{_sqlite_hint(message)}")
    if isinstance(exc, DBAPIError) and getattr(exc, "connection_invalidated", False):
        return DatabaseUnavailable(f"database unavailable: {message}")
    if code in schema.PERMISSION_ERRORS:
        return PermissionDenied(
            f"permission denied: {message}; this account lacks the privilege (an admin grants "
            "it with `jobtui grant ACCOUNT --operator|--admin|--runner`, docs/privileges.md)"
        )
    if code == 1146 or "no such table: jobtui_" in message:
        err = JobtuiError(
            f"database error: {message}; this database has no jobtui tables yet: run "
            "`jobtui init` (a read-only console or command does not create them)"
        )
        err.exit_code = 1
        return err
    err = JobtuiError(f"database error: {message}")
    err.exit_code = 1
    return err


def _sqlite_hint(message: str) -> str:
    """What to check when SQLite cannot open or write its file (docs/reliability.md)."""
    if "unable to open" in message or "readonly" in message:
        return (
            " (is the file and its directory writable? SQLite's WAL mode also creates "
            "-wal and -shm files next to it, even to read)"
        )
    if "disk I/O" in message:
        return " (is the disk full, or the file or its directory read-only?)"
    return ""


@dataclass(frozen=True)
class RunnerInfo:
    """One row of the runner table."""

    id: str
    name: str
    host: str
    pid: int
    threads: int
    connection_id: int | None
    started: datetime
    heartbeat: datetime
    stopping: bool

    def alive(self, now: datetime, timeout: float) -> bool:
        return (now - self.heartbeat).total_seconds() <= timeout


PRUNE_BATCH = 500
MAX_KEEP_RUNS = 100_000_000
MAX_KEEP_DAYS = 36_500.0


@dataclass(frozen=True)
class Retention:
    """How much of the run log to keep (``prune_runs``; runners prune with it).

    ``keep_runs`` newest successful runs per job and, apart, as many error runs
    (failed, aborted, lost); successful runs older than ``keep_days`` and error
    runs older than ``keep_error_days`` go. None switches a limit off. Running
    rows are never deleted.
    """

    keep_runs: int | None = 1000
    keep_days: float | None = 30.0
    keep_error_days: float | None = 90.0
    interval: float = 60.0  # seconds between a runner's pruning passes
    batch: int = PRUNE_BATCH  # rows per DELETE transaction

    def __post_init__(self) -> None:
        k = self.keep_runs
        if k is not None and (
            isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= MAX_KEEP_RUNS
        ):
            raise InvalidInput(
                f"invalid keep {k!r}: expected a whole number, 0 or more (at most {MAX_KEEP_RUNS})"
            )
        for label, days in (
            ("--keep-days", self.keep_days),
            ("--keep-error-days", self.keep_error_days),
        ):
            if days is not None and (
                isinstance(days, bool)
                or not isinstance(days, (int, float))
                or not 0 < days <= MAX_KEEP_DAYS  # NaN fails too
            ):
                raise InvalidInput(
                    f"invalid {label} {days!r}: expected a number of days above 0, at most "
                    f"{MAX_KEEP_DAYS:g}"
                )
        b = self.batch
        if isinstance(b, bool) or not isinstance(b, int) or not 1 <= b <= 100_000:
            raise InvalidInput(f"invalid batch {b!r}: expected a whole number from 1 to 100000")
        iv = self.interval
        if isinstance(iv, bool) or not isinstance(iv, (int, float)) or not 0 < iv <= 86_400:
            raise InvalidInput(f"invalid interval {iv!r}: seconds above 0, at most 86400")

    @property
    def error_days(self) -> float | None:
        """The age limit of error runs: never shorter than that of successful runs."""
        if self.keep_days is None or self.keep_error_days is None:
            return None  # no age limit (successful runs never age out: neither do errors)
        return max(self.keep_days, self.keep_error_days)

    @property
    def enabled(self) -> bool:
        return self.keep_runs is not None or self.keep_days is not None


DEFAULT_RETENTION = Retention()


def prune_lock_name(key: str, schema_name: str) -> str:
    """The pruners' named lock: keyed like the jobs' (``claims.lock_name``), so that an
    operator can neither hold it to stop every pruning nor compute it."""
    return claims.lock_name(key, schema_name, "prune")


def open_store(
    db: str | None = None,
    *,
    clock: Clock = utcnow,
    read_only: bool = False,
    init: bool = True,
    pool_size: int = 5,
) -> JobStore:
    """Open the store at ``db`` (or ``$JOBTUI_DB``, or the default SQLite file)."""
    url = resolve_url(db)
    engine = make_engine(url, pool_size=pool_size)
    store = JobStore(engine, clock=clock, read_only=read_only, url=url)
    if init and not read_only:
        try:
            if store.sees_all:  # an operator account may not create or upgrade anything
                store.init()
        except DatabaseUnavailable as exc:
            store.close()
            raise DatabaseUnavailable(f"{exc} (database {store.masked_url})") from exc
        except BaseException:
            store.close()
            raise
        try:
            if store.is_demo():
                builtin_actions.register_demo()
        except BaseException:
            store.close()
            raise
    return store


class JobStore:
    """Jobs, runs and runners in one SQL database."""

    # What runner pools on this store keep of the run log (the CLI's --keep-* options
    # set it before a console builds its pool); RunnerPool(retention=...) overrides it.
    retention: Retention = DEFAULT_RETENTION
    # `jobtui worker --allow-sql-owner`: kept for compatibility, without effect (every
    # job runs with its owner's rights, as its owner's routine: jobtui/core/routines.py).
    sql_owners: str = "admin"

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock = utcnow,
        read_only: bool = False,
        url: str | None = None,
    ) -> None:
        self.engine = engine
        self.clock = clock
        self.read_only = read_only
        self.url = url or engine.url.render_as_string(hide_password=False)
        self.backend = backend_for(engine)
        self._owner: str | None = None
        self._owner_lock = threading.Lock()
        self._lock_key: str | None = None
        self._tables: tuple[Table, Table] | None = None
        self._tables_lock = threading.Lock()
        self._poller: Connection | None = None  # see poll()
        self._poller_lock = threading.Lock()
        self._schema_name: str | None = None

    # ------------------------------------------------------------------ basics

    @property
    def masked_url(self) -> str:
        return mask_url(self.url)

    @property
    def is_sqlite(self) -> bool:
        return self.backend.name == "sqlite"

    def close(self) -> None:
        self._drop_poller()
        self.engine.dispose()

    @_db_errors
    def init(self) -> None:
        """Create or upgrade the tables (idempotent); an operator account only checks its views."""
        self._check_writable()
        if not self.sees_all:
            with self.read() as conn:
                conn.execute(select(self.job_table.c.id).limit(1)).all()
            return
        schema.ensure_schema(self.engine)

    # ------------------------------------------------------------------ whose jobs

    @property
    def job_table(self) -> Table:
        """``jobtui_job``, or an operator account's view of its own jobs."""
        return self._access()[0]

    @property
    def run_table(self) -> Table:
        """``jobtui_run``, or an operator account's view of its own runs."""
        return self._access()[1]

    @property
    def sees_all(self) -> bool:
        """True for accounts that read the tables (admin, runner; SQLite), like DBA_JOBS."""
        return self._access()[0] is schema.job

    def _access(self) -> tuple[Table, Table]:
        with self._tables_lock:
            if self._tables is None:
                self._tables = self._detect_access()
            return self._tables

    @_db_errors
    def _detect_access(self) -> tuple[Table, Table]:
        """Which the account may read: the tables (admin, runner) or the views (operator).

        The database decides, not jobtui: an operator account has no privilege
        on the tables (docs/privileges.md). Missing tables count as "the
        tables" (``jobtui init`` creates them).
        """
        if self.is_sqlite:
            return schema.job, schema.run
        with self.engine.connect() as conn:
            try:
                conn.execute(select(schema.job.c.id).limit(0)).all()
                return schema.job, schema.run
            except DBAPIError as exc:
                if schema.error_code(exc) not in schema.PERMISSION_ERRORS:
                    if schema.error_code(exc) == 1146:
                        return schema.job, schema.run
                    raise
                conn.rollback()
            try:
                conn.execute(select(schema.user_job.c.id).limit(0)).all()
            except DBAPIError as exc:
                if schema.error_code(exc) in (1146, *schema.PERMISSION_ERRORS):
                    raise PermissionDenied(
                        f"permission denied: account {self.owner!r} may read neither the "
                        f"jobtui tables nor the operators' views ({schema.USER_JOB_VIEW}); an "
                        "admin runs `jobtui init` and `jobtui grant ACCOUNT --operator` "
                        "(docs/privileges.md)"
                    ) from None
                raise
            return schema.user_job, schema.user_run

    def require_all(self, option: str = "--all") -> None:
        """Refuse DBA_JOBS-style requests from an operator account (exit 2)."""
        if not self.sees_all:
            raise PermissionDenied(
                f"{option} shows every owner's jobs (DBA_JOBS) and needs an admin account "
                f"(role {schema.admin_role(self.schema_name)}, docs/privileges.md); account "
                f"{self.owner!r} sees "
                f"only its own jobs: leave out {option}"
            )

    @_db_errors
    def mark_demo(self) -> None:
        """Mark this database as a demo (`jobtui demo`): a process that opens it knows the
        demo actions (``builtin_actions``); no other database does."""
        with self.write() as conn:
            key = schema.meta.c.key
            conn.execute(schema.meta.delete().where(key == builtin_actions.DEMO_KEY))
            conn.execute(schema.meta.insert().values(key=builtin_actions.DEMO_KEY, value="1"))
        builtin_actions.register_demo()

    @_db_errors
    def is_demo(self) -> bool:
        """Whether `jobtui demo` made this database (False when jobtui_meta is unreadable)."""
        with self.engine.connect() as conn:
            try:
                found = conn.execute(schema.select_meta(builtin_actions.DEMO_KEY)).first()
            except DBAPIError as exc:
                if schema.error_code(exc) in (1146, *schema.PERMISSION_ERRORS):
                    return False
                raise
            return found is not None

    @_db_errors
    def ping(self) -> None:
        with self.engine.connect() as conn:
            conn.execute(text("SELECT 1"))

    @property
    def owner(self) -> str:
        """The connecting account (``CURRENT_USER()``), or the OS login on SQLite."""
        with self._owner_lock:
            if self._owner is None:
                self._owner = self._current_owner()
            return self._owner

    @property
    def schema_name(self) -> str:
        """The jobtui database (``DATABASE()``) on MySQL/MariaDB; "" on SQLite."""
        if self._schema_name is None:
            if self.is_sqlite:
                self._schema_name = ""
            else:
                with self.engine.connect() as conn:
                    self._schema_name = str(conn.exec_driver_sql("SELECT DATABASE()").scalar())
        return self._schema_name

    @property
    def _owns_routines(self) -> bool:
        """Jobs run as their owner's DEFINER routines here (MySQL/MariaDB)."""
        return not self.is_sqlite

    @_db_errors
    def _current_owner(self) -> str:
        if self.is_sqlite:
            try:
                return getpass.getuser()
            except (KeyError, OSError):
                return "unknown"
        with self.engine.connect() as conn:
            return str(conn.execute(text("SELECT CURRENT_USER()")).scalar_one())

    @_db_errors
    def lock_key(self) -> str:
        """The key of the named-lock names (``jobtui_secret``), read once per store.

        MySQL/MariaDB runner and admin accounts only: an operator's account may
        not read it (PermissionDenied), which is the point.
        """
        with self._owner_lock:
            if self._lock_key is None:
                with self.engine.connect() as conn:
                    try:
                        self._lock_key = claims.read_lock_key(conn)
                    finally:
                        conn.rollback()
            return self._lock_key

    def now(self) -> datetime:
        return aware(self.clock())

    def _check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError("read-only: this console or command may not change anything")

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction: BEGIN IMMEDIATE on SQLite, a plain transaction on MySQL."""
        self._check_writable()
        with self.engine.connect() as conn:
            if self.is_sqlite:
                conn = conn.execution_options(immediate=True)
            with conn.begin():
                yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn, conn.begin():
            yield conn

    def poll(self, query: Callable[[Connection], T]) -> T:
        """Run ``query`` (one SELECT, its result read inside) for a caller that asks again
        and again (the console, once a second).

        On MySQL/MariaDB it runs on one connection kept for the purpose, in
        autocommit: one round trip, where a pooled read costs four (the pool's
        pre-ping, the SELECT, the COMMIT, the pool's ROLLBACK on return). A
        connection the server dropped while it was kept (a restart, wait_timeout)
        is replaced once on the spot; a failure on a fresh connection goes to the
        caller, and the next call connects again. On SQLite it is a plain read
        transaction (nothing goes over a network).
        """
        if self.is_sqlite:
            with self.read() as conn:
                return query(conn)
        with self._poller_lock:
            while True:
                kept = self._poller is not None
                if self._poller is None:
                    self._poller = self.engine.connect().execution_options(
                        isolation_level="AUTOCOMMIT"
                    )
                conn = self._poller
                try:
                    return query(conn)
                except DBAPIError as exc:
                    self._drop_poller(locked=True)
                    if not (kept and exc.connection_invalidated):
                        raise

    def _drop_poller(self, *, locked: bool = False) -> None:
        if not locked:
            with self._poller_lock:
                self._drop_poller(locked=True)
            return
        conn, self._poller = self._poller, None
        if conn is not None:
            try:
                conn.close()
            except SQLAlchemyError:
                pass  # the connection is gone already: nothing to give back

    # ------------------------------------------------------------------ reading

    def _owner_filter(self, owner: str | None) -> Any:
        return self.job_table.c.owner == (owner or self.owner)

    @_db_errors
    def get(self, name: str, *, owner: str | None = None) -> Job:
        """One job by name (the caller's own unless ``owner`` is given)."""
        if not isinstance(name, str):
            raise InvalidInput(f"invalid job name {name!r}: expected text")
        with self.read() as conn:
            row = conn.execute(
                select(self.job_table).where(
                    self._owner_filter(owner), self.job_table.c.name == name
                )
            ).first()
        if row is None:
            raise JobNotFound(name, owner)
        return job_from_row(row)

    @_db_errors
    def get_by_id(self, job_id: int) -> Job | None:
        with self.read() as conn:
            row = conn.execute(select(self.job_table).where(self.job_table.c.id == job_id)).first()
        return job_from_row(row) if row else None

    @_db_errors
    def list_jobs(self, *, all_owners: bool = False, owner: str | None = None) -> list[Job]:
        """The caller's jobs (USER_JOBS), or every owner's with ``all_owners`` (DBA_JOBS)."""
        query = select(self.job_table).order_by(self.job_table.c.owner, self.job_table.c.name)
        if not all_owners:
            query = query.where(self._owner_filter(owner))
        with self.read() as conn:
            return jobs_from_result(conn.execute(query))

    @_db_errors
    def jobs_changed_since(self, since: datetime | None, *, all_owners: bool = True) -> list[Job]:
        """Jobs whose row changed after ``since`` (all jobs when None): the console's refresh
        (through ``poll``)."""
        query = select(self.job_table)
        if since is not None:
            query = query.where(self.job_table.c.updated > to_db(since))
        if not all_owners:
            query = query.where(self._owner_filter(None))
        return self.poll(lambda conn: jobs_from_result(conn.execute(query)))

    @_db_errors
    def job_ids(self, *, all_owners: bool = True) -> set[int]:
        query = select(self.job_table.c.id)
        if not all_owners:
            query = query.where(self._owner_filter(None))
        return self.poll(lambda conn: {int(r[0]) for r in conn.execute(query)})

    @_db_errors
    def runs(
        self,
        name: str | None = None,
        *,
        limit: int = 50,
        outcome: str | None = None,
        all_owners: bool = False,
        owner: str | None = None,
        job_id: int | None = None,
    ) -> list[Run]:
        """The run log, latest first."""
        if not isinstance(limit, int) or limit < 1 or limit > 100_000:
            raise InvalidInput(
                f"invalid --limit {limit!r}: expected a whole number from 1 to 100000"
            )
        r = self.run_table
        query = select(r).order_by(r.c.scheduled_for.desc(), r.c.id.desc()).limit(limit)
        if not all_owners:
            query = query.where(r.c.owner == (owner or self.owner))
        if name is not None:
            if job_id is None:
                job_id = self.get(name, owner=owner).id
            query = query.where(r.c.job_id == job_id)
        elif job_id is not None:
            query = query.where(r.c.job_id == job_id)
        if outcome is not None:
            try:
                Outcome(outcome)
            except ValueError:
                accepted = ", ".join(o.value for o in Outcome)
                raise InvalidInput(
                    f"invalid outcome {outcome!r}: accepted are {accepted}"
                ) from None
            query = query.where(r.c.outcome == outcome)
        with self.read() as conn:
            return [run_from_row(row) for row in conn.execute(query)]

    @_db_errors
    def runners(self, *, poll: bool = False) -> list[RunnerInfo]:
        """Registered runner processes with their heartbeats (``poll``: through ``poll``,
        for a caller that asks every few seconds)."""
        query = select(schema.runner).order_by(schema.runner.c.started)
        if poll:
            rows = self.poll(lambda conn: conn.execute(query).all())
        else:
            with self.read() as conn:
                rows = conn.execute(query).all()
        return [
            RunnerInfo(
                id=r.id,
                name=r.name,
                host=r.host,
                pid=r.pid,
                threads=r.threads,
                connection_id=r.connection_id,
                started=from_db(r.started) or self.now(),
                heartbeat=from_db(r.heartbeat) or self.now(),
                stopping=bool(r.stopping),
            )
            for r in rows
        ]

    # ------------------------------------------------------------------ defining

    @_db_errors
    def submit(
        self,
        name: str,
        what: What,
        schedule: Schedule,
        *,
        description: str = "",
        max_failures: int = DEFAULT_MAX_FAILURES,
        disabled: bool = False,
    ) -> Job:
        """Define a new job (DBMS_JOB.SUBMIT). Validates everything before writing."""
        self._check_writable()
        check_job_name(name)
        schedule = check_schedule(schedule)
        description = check_description(description)
        max_failures = check_max_failures(max_failures)
        self.check_what(what)
        now = self.now()
        self.check_expr_schedule(schedule, now)
        next_run = self._first_run(schedule, now)
        intent = Intent.DISABLED if disabled else Intent.ENABLED
        phase = "ENABLED" if next_run is not None else "FINISHED"
        values = {
            "owner": self.owner,
            "name": name,
            "description": description,
            **what_columns(what),
            **schedule_columns(schedule),
            "schedule_anchor": to_db(schedule.start or now),
            "status": derive_status(intent=intent, broken=False, running=False, phase=phase).value,
            "intent": intent.value,
            "phase": phase,
            "running": False,
            "broken": False,
            "failures": 0,
            "max_failures": max_failures,
            "cycles": 0,
            "run_now": False,
            "abort_requested": False,
            "total_time": 0.0,
            "next_run": to_db(next_run),
            "created": to_db(now),
            "updated": to_db(now),
        }
        # On MySQL/MariaDB the job runs as routines its owner's session creates once the
        # row has its id: until then next_run stays NULL, so no runner claims it.
        held = self._owns_routines and bool(routines.wanted(0, what, schedule, None))
        if held:
            values["next_run"] = None
        try:
            with self.write() as conn:
                conn.execute(insert(self.job_table).values(**values))
        except IntegrityError:
            try:
                existing = self.get(name)
            except JobNotFound:
                existing = None
            if existing is not None and existing.remove_requested:
                raise removal_pending(name) from None
            raise InvalidInput(
                f"job {name!r} already exists for owner {self.owner!r}: use `jobtui change` "
                "to alter it or choose another name"
            ) from None
        if held:
            job = self.get(name)
            try:
                self._install_routines(job.id, what, schedule)
            except BaseException:
                with self.write() as conn:
                    conn.execute(delete(self.job_table).where(self.job_table.c.id == job.id))
                raise
            with self.write() as conn:
                conn.execute(
                    update(self.job_table)
                    .where(self.job_table.c.id == job.id)
                    .values(next_run=to_db(next_run))
                )
        return self.get(name)

    @_db_errors
    def ensure_routines(self, job_ids: Iterable[int] | None = None) -> int:
        """Create the routines this account's own jobs need and lack (MySQL/MariaDB).

        For rows written by other means than submit, change and import (a job
        table from before owner-rights execution, a bulk INSERT): until then the
        runner refuses to run them. Another owner's jobs are left alone: only
        that owner's session can make routines that run with its rights.
        Returns how many routines were created.
        """
        self._check_writable()
        if not self._owns_routines:
            return 0
        wanted_ids = None if job_ids is None else set(job_ids)
        jobs = [j for j in self.list_jobs() if wanted_ids is None or j.id in wanted_ids]
        created = 0
        with self.engine.connect() as conn:
            try:
                role = routines.current_role(conn)
                want = [r for j in jobs for r in routines.wanted(j.id, j.what, j.schedule, role)]
                for i in range(0, len(want), 500):
                    created += len(routines.install(conn, want[i : i + 500]))
            finally:
                conn.rollback()
        return created

    def _install_routines(
        self, job_id: int, what: What | None, schedule: Schedule | None
    ) -> tuple[list[routines.Routine], list[routines.Routine]]:
        """Create the job's routines for ``what`` and an expr ``schedule`` (either may be
        None: not given) in this (the owner's) session: (wanted, created).

        A refusal raises InvalidInput with the server's reason, nothing left behind.
        """
        with self.engine.connect() as conn:
            try:
                role = routines.current_role(conn)
                want = []
                if what is not None:
                    want += [r for r in [routines.for_what(job_id, what, role)] if r is not None]
                if schedule is not None and schedule.kind == "expr" and schedule.expr is not None:
                    want.append(routines.for_expr(job_id, schedule.expr, role))
                return want, routines.install(conn, want)
            finally:
                conn.rollback()

    def _drop_routines(
        self,
        job_id: int,
        keep: list[routines.Routine] | None = None,
        *,
        only: list[routines.Routine] | None = None,
        types: list[str] | None = None,
    ) -> None:
        """Drop the job's routines other than ``keep`` (or exactly ``only``); a failure is
        logged, never raised: a routine that matches no job is never run."""
        try:
            with self.engine.connect() as conn:
                try:
                    if only is not None:
                        routines.drop(conn, only)
                    else:
                        left = routines.drop_stale(conn, job_id, keep or [], types=types)
                        if left:
                            log.info("routines left for an admin to drop: %s", ", ".join(left))
                finally:
                    conn.rollback()
        except SQLAlchemyError as exc:
            log.warning("could not drop the routines of job %s: %s", job_id, _short_error(exc))

    @_db_errors
    def change(
        self,
        name: str,
        *,
        owner: str | None = None,
        what: What | None = None,
        kind: str | None = None,
        every: float | str | None = None,
        cron: str | None = None,
        tz: str | None = UNSET,
        expr: str | None = None,
        start: datetime | None = UNSET,
        finish: datetime | None = UNSET,
        description: str | None = None,
        max_failures: int | None = None,
        disabled: bool | None = None,
    ) -> Job:
        """Alter a job (DBMS_JOB.CHANGE): only what is given changes.

        A new schedule takes effect from its next slot, even while a run is in
        flight (the runner reads the row again when it finishes).
        """
        self._check_writable()
        current = self.get(name, owner=owner)
        partial = kind is None and every is None and cron is None and expr is None
        window = tz is not UNSET or start is not UNSET or finish is not UNSET
        if current.schedule is rows_.PLACEHOLDER_SCHEDULE and partial and window:
            # What the row's schedule was cannot be read (its problem says why): a window
            # or time zone alone would be merged into the placeholder, not into it.
            raise InvalidInput(
                f"job {current.name!r} has a problem ({current.problem}): give its whole "
                "schedule (--every, --cron, --expr or --once) to replace it"
            )
        if what is not None:
            self.check_what(what, owner=current.owner)
        if description is not None:
            description = check_description(description)
        if max_failures is not None:
            max_failures = check_max_failures(max_failures)
        schedule = merge_schedule(
            current.schedule,
            kind=kind,
            every=every,
            cron=cron,
            tz=tz,
            expr=expr,
            start=start,
            finish=finish,
        )
        schedule_changed = schedule != current.schedule
        expr_changed = schedule.kind == "expr" and (
            current.schedule.kind != "expr" or schedule.expr != current.schedule.expr
        )
        foreign = self._owns_routines and current.owner != self.owner
        if foreign and ((what is not None and what != current.what) or expr_changed):
            raise PermissionDenied(
                f"permission denied: only the owner's own session can change what job {name!r} "
                f"runs or its --expr, because the job runs with the owner's rights "
                f"({current.owner}); account {self.owner!r} may change its other settings, "
                "steer it or remove it"
            )
        now = self.now()
        if expr_changed:  # a stored expression is never evaluated again (it may be foreign)
            self.check_expr_schedule(schedule, now)
        # MySQL/MariaDB: routines only for what the owner gives here (a definition written
        # into the row by other means must not become the owner's by a schedule change);
        # the new ones first, so the row never names a routine that does not exist.
        give_what = what is not None
        give_expr = schedule.kind == "expr" and (expr is not None or expr_changed)
        drop_expr = current.schedule.kind == "expr" and (give_expr or schedule.kind != "expr")
        routines_ = self._owns_routines and not foreign
        created: list[routines.Routine] = []
        want: list[routines.Routine] = []
        if routines_ and (give_what or give_expr):
            want, created = self._install_routines(
                current.id, what if give_what else None, schedule if give_expr else None
            )
        try:
            self._change_row(
                current, what, description, max_failures, disabled, schedule, schedule_changed, now
            )
        except BaseException:
            if created:
                self._drop_routines(current.id, only=created)
            raise
        if routines_ and (give_what or drop_expr):
            replaced = ([routines.PROCEDURE] if give_what else []) + (
                [routines.FUNCTION] if drop_expr else []
            )
            self._drop_routines(current.id, keep=want, types=replaced)
        return self.get(name, owner=owner)

    def _change_row(
        self,
        current: Job,
        what: What | None,
        description: str | None,
        max_failures: int | None,
        disabled: bool | None,
        schedule: Schedule,
        schedule_changed: bool,
        now: datetime,
    ) -> None:
        with self.write() as conn:
            row = self._lock(conn, current.id)
            if row.remove_requested:
                raise removal_pending(current.name)
            job = job_from_row(row)
            values: dict[str, Any] = {"updated": to_db(now)}
            if what is not None:
                values.update(what_columns(what))
            if description is not None:
                values["description"] = description
            if max_failures is not None:
                values["max_failures"] = max_failures
            intent = job.intent
            if disabled is not None:
                intent = Intent.DISABLED if disabled else Intent.ENABLED
                values["intent"] = intent.value
            phase = row.phase
            if schedule_changed:
                values.update(schedule_columns(schedule))
                values["schedule_anchor"] = to_db(schedule.start or now)
                next_run = self._first_run(schedule, now, conn=conn)
                values["next_run"] = to_db(next_run)
                if next_run is None:
                    phase = "FINISHED"
                elif phase == "FINISHED":
                    phase = "ENABLED"
                values["phase"] = phase
            values["status"] = derive_status(
                intent=intent, broken=job.broken, running=bool(row.running), phase=phase
            ).value
            conn.execute(
                update(self.job_table).where(self.job_table.c.id == job.id).values(**values)
            )

    @_db_errors
    def remove(self, name: str, *, owner: str | None = None, wait: float = 10.0) -> Job:
        """Remove a job (DBMS_JOB.REMOVE); its run log stays.

        A job whose run is in flight is not deleted under it: the run is aborted
        and the row marked ``remove_requested``; the runner deletes the row when
        it records that run's end, and only then is the name free (a submit of it
        meanwhile is refused). Waits up to ``wait`` seconds for that; the Job
        returned has ``remove_requested`` set when the removal is still pending.
        """
        self._check_writable()
        job = self.get(name, owner=owner)
        removed = replace(job, remove_requested=False)
        deadline = time.monotonic() + wait
        if self._remove_or_mark(job):
            return self._removed(removed)
        while time.monotonic() < deadline:
            time.sleep(0.1)
            current = self.get_by_id(job.id)
            if current is None:
                return self._removed(
                    removed
                )  # the runner deleted it when it recorded the run's end
            if not current.running and self._remove_or_mark(current):
                return self._removed(
                    removed
                )  # ended without a runner to delete it (reaped, or an old runner)
        return replace(self.get_by_id(job.id) or job, remove_requested=True)

    def _removed(self, job: Job) -> Job:
        """The row is gone: its routines go too (MySQL/MariaDB; best effort)."""
        if self._owns_routines:
            self._drop_routines(job.id)
        return job

    def _remove_or_mark(self, job: Job) -> bool:
        """Delete the job's row if no run is in flight (True); else abort the run and mark
        the row ``remove_requested`` (False)."""
        now = self.now()
        with self.write() as conn:
            try:
                row = self._lock(conn, job.id)
            except JobNotFound:
                return True
            if not row.running:
                conn.execute(delete(self.job_table).where(self.job_table.c.id == job.id))
                return True
            if not row.remove_requested or not row.abort_requested:
                conn.execute(
                    update(self.job_table)
                    .where(self.job_table.c.id == job.id)
                    .values(
                        remove_requested=True,
                        abort_requested=True,
                        run_now=False,
                        phase="ABORTED",
                        status=derive_status(
                            intent=row.intent,
                            broken=bool(row.broken),
                            running=True,
                            phase="ABORTED",
                        ).value,
                        updated=to_db(now),
                    )
                )
        return False

    # ------------------------------------------------------------------ steering

    def _steer(
        self,
        name: str,
        owner: str | None,
        fn: Callable[[Connection, Row[Any], Job, datetime], dict[str, Any]],
    ) -> Job:
        self._check_writable()
        job = self.get(name, owner=owner)
        now = self.now()
        with self.write() as conn:
            row = self._lock(conn, job.id)
            if row.remove_requested:
                raise removal_pending(name)
            current = job_from_row(row)
            values = fn(conn, row, current, now)
            intent = values.get("intent", row.intent)
            broken = values.get("broken", bool(row.broken))
            phase = values.get("phase", row.phase)
            values["status"] = derive_status(
                intent=intent, broken=broken, running=bool(row.running), phase=phase
            ).value
            values["updated"] = to_db(now)
            conn.execute(
                update(self.job_table).where(self.job_table.c.id == job.id).values(**values)
            )
        return self.get(name, owner=owner)

    @_db_errors
    def pause(self, name: str, *, owner: str | None = None) -> Job:
        """No new runs start while PAUSED; a run in flight finishes."""

        def fn(conn: Connection, row: Row[Any], job: Job, now: datetime) -> dict[str, Any]:
            if row.phase == "FINISHED":
                raise InvalidInput(f"job {name!r} is FINISHED: there is nothing to pause")
            if row.intent == Intent.DISABLED:
                raise InvalidInput(f"job {name!r} is DISABLED: enable it before pausing")
            return {"intent": Intent.PAUSED.value}

        return self._steer(name, owner, fn)

    @_db_errors
    def resume(self, name: str, *, owner: str | None = None) -> Job:
        """Back on the schedule from the next slot (no burst of missed runs)."""

        def fn(conn: Connection, row: Row[Any], job: Job, now: datetime) -> dict[str, Any]:
            if row.intent == Intent.DISABLED:
                raise InvalidInput(f"job {name!r} is DISABLED: use `jobtui enable {name}`")
            if row.intent != Intent.PAUSED and row.phase != "ABORTED":
                return {}  # already running on its schedule: nothing to do
            values: dict[str, Any] = {
                "intent": Intent.ENABLED.value,
                "abort_requested": False,
                "phase": "RESUMED",
            }
            values.update(self._rearm(conn, job, now))
            return values

        return self._steer(name, owner, fn)

    @_db_errors
    def enable(self, name: str, *, owner: str | None = None) -> Job:
        """Enable a disabled, aborted or finished job; it runs from its next slot."""

        def fn(conn: Connection, row: Row[Any], job: Job, now: datetime) -> dict[str, Any]:
            values: dict[str, Any] = {"intent": Intent.ENABLED.value, "abort_requested": False}
            if row.intent != Intent.ENABLED or row.phase in ("ABORTED", "FINISHED"):
                values["phase"] = "ENABLED"
                if row.phase == "FINISHED" or job.next_run is None:
                    values["next_run"] = to_db(self._first_run(job.schedule, now, conn=conn))
                else:
                    values.update(self._rearm(conn, job, now))
                if values.get("next_run") is None:
                    values["phase"] = "FINISHED"
            return values

        return self._steer(name, owner, fn)

    @_db_errors
    def disable(self, name: str, *, owner: str | None = None) -> Job:
        """No runs at all until enabled (a run in flight finishes)."""
        return self._steer(name, owner, lambda c, r, j, n: {"intent": Intent.DISABLED.value})

    @_db_errors
    def abort(self, name: str, *, owner: str | None = None) -> Job:
        """Stop the run in flight (if any) and stop the schedule until resume/enable/run-now."""

        def fn(conn: Connection, row: Row[Any], job: Job, now: datetime) -> dict[str, Any]:
            if row.phase == "FINISHED" and not row.running:
                return {"run_now": False}  # no run and no schedule left to stop
            values: dict[str, Any] = {"phase": "ABORTED", "run_now": False}
            if row.running:
                values["abort_requested"] = True
            return values

        return self._steer(name, owner, fn)

    @_db_errors
    def run_now(self, name: str, *, owner: str | None = None) -> Job:
        """Ask a runner to run the job once, now, whatever its status (DBMS_JOB.RUN).

        Refused while the job is running: the runner would drop the request when
        the run in flight finishes, so the operator is told instead.
        """

        def fn(conn: Connection, row: Row[Any], job: Job, now: datetime) -> dict[str, Any]:
            if row.running:
                raise InvalidInput(
                    f"job {name!r} is running now: run-now starts a run only when none is in "
                    "flight; try again when it has finished (or abort it)"
                )
            return {"run_now": True}

        return self._steer(name, owner, fn)

    @_db_errors
    def broken(
        self,
        name: str,
        on: bool,
        *,
        owner: str | None = None,
        next_run: datetime | None = None,
        reason: str = "marked broken by the operator",
    ) -> Job:
        """DBMS_JOB.BROKEN: mark broken (no runs) or clear it (failures reset)."""
        if next_run is not None and on:
            raise InvalidInput("--next is only accepted with --off")

        def fn(conn: Connection, row: Row[Any], job: Job, now: datetime) -> dict[str, Any]:
            if on:
                return {"broken": True, "broken_reason": reason}
            values: dict[str, Any] = {"broken": False, "broken_reason": None, "failures": 0}
            if row.phase in ("ERROR",):
                values["phase"] = "ENABLED"
            if next_run is not None:
                values["next_run"] = to_db(aware(next_run))
                if row.phase == "FINISHED":
                    values["phase"] = "ENABLED"
            elif row.broken:
                values.update(self._rearm(conn, job, now))
            return values

        return self._steer(name, owner, fn)

    # ------------------------------------------------------------------ schedules

    def _first_run(
        self, schedule: Schedule, now: datetime, *, conn: Connection | None = None
    ) -> datetime | None:
        return first_run(schedule, now)

    def check_expr_schedule(self, schedule: Schedule, now: datetime) -> None:
        """Evaluate an expr schedule once (as at submit) to prove it yields a later date."""
        if schedule.kind != "expr":
            return
        assert schedule.expr is not None
        value = self.evaluate_expr(schedule.expr, now)
        if value is None:
            raise InvalidInput(
                f"invalid --expr {schedule.expr!r}: it gives NULL now, so the job would run "
                "once and never again; expected a later time such as NOW() + INTERVAL 1 DAY "
                "(NULL later, at a run, means that run was the last: use --once for one run)"
            )
        if value <= now:
            raise InvalidInput(
                f"invalid --expr {schedule.expr!r}: it gives {value.isoformat()}, which is not "
                "after NOW(); expected a later time such as NOW() + INTERVAL 1 DAY"
            )

    def _rearm(self, conn: Connection, job: Job, now: datetime) -> dict[str, Any]:
        """The next slot strictly after now: for resume and broken-off (no burst)."""
        sched = job.schedule
        if sched.kind in ("every", "cron"):
            nxt = next_slot(sched, now, bookkeeping.anchor(job))
        elif sched.kind == "once":
            nxt = None if job.phase == "FINISHED" else job.next_run
            if nxt is not None and nxt < now:
                nxt = now
        else:  # expr: evaluated at the start of each run; resume runs it now
            nxt = now if job.next_run is None or job.next_run < now else job.next_run
        if nxt is not None and sched.finish is not None and nxt > sched.finish:
            nxt = None  # the window closed while the job was paused or broken
        values: dict[str, Any] = {"next_run": to_db(nxt)}
        if nxt is None:
            values["phase"] = "FINISHED"
        return values

    @_db_errors
    def evaluate_expr(
        self,
        expr: str,
        now: datetime,
        *,
        conn: Connection | None = None,
        job: Job | None = None,
    ) -> datetime | None:
        """Evaluate an expr schedule as the database would at ``now`` (NULL -> None).

        Bounded: at most ``routines.EXPR_TIMEOUT`` seconds (MySQL/MariaDB:
        ``SET STATEMENT max_statement_time``; SQLite: a progress-handler
        deadline), and the result must be a date-time; else InvalidInput.

        MySQL/MariaDB: ``SET @@timestamp`` makes NOW() return ``now`` for this
        session. With ``job`` (the runner) the expression is the job's own
        FUNCTION, verified on ``mysql.proc`` and run with its owner's rights;
        without, it runs in this session, with this account's rights (the
        owner's own check at submit, or a preview of its own schedule).
        SQLite: jobtui's NOW() function returns ``now`` on this thread. The
        expression was checked by ``schedules.check_expr`` (one expression, no
        statements, comments or semicolons).
        """
        if conn is None:
            with self.engine.connect() as own:
                try:
                    return self.evaluate_expr(expr, now, conn=own, job=job)
                finally:
                    own.rollback()
        try:
            if self.is_sqlite:
                value = _sqlite_evaluate(conn, expr, now)
            else:
                if job is not None:
                    verdict = routines.verify(
                        conn, self.schema_name, [job], kind=routines.FUNCTION
                    ).get(job.id)
                    select_ = (
                        f"SELECT {routines.qualified(self.schema_name, routines.check(verdict))}()"
                    )
                else:
                    select_ = f"SELECT ({expr})"
                conn.execute(text("SET @@timestamp = :ts"), {"ts": aware(now).timestamp()})
                try:
                    value = routines.scalar(
                        conn,
                        f"SET STATEMENT max_statement_time={routines.EXPR_TIMEOUT:g} FOR {select_}",
                    )
                finally:
                    conn.execute(text("SET @@timestamp = DEFAULT"))
        except routines.RoutineRefused as exc:
            if exc.runner_side:
                raise PermissionDenied(f"--expr {expr!r} not evaluated: {exc}") from None
            raise InvalidInput(f"--expr {expr!r} not evaluated: {exc}") from None
        except (OperationalError, sqlite3.OperationalError) as exc:
            translated = translate_db_error(exc) if isinstance(exc, DBAPIError) else None
            if isinstance(translated, DatabaseUnavailable):
                raise translated from exc
            if _is_timeout(exc):
                raise InvalidInput(
                    f"invalid --expr {expr!r}: its evaluation took longer than "
                    f"{routines.EXPR_TIMEOUT:g} s (the limit for a date expression)"
                ) from None
            raise InvalidInput(
                f"invalid --expr {expr!r}: the database rejected it ({_short_error(exc)})"
            ) from None
        except DBAPIError as exc:
            raise InvalidInput(
                f"invalid --expr {expr!r}: the database rejected it ({_short_error(exc)})"
            ) from None
        return _to_datetime(value, expr)

    def preview(self, job: Job, n: int = 5) -> list[datetime]:
        """The next ``n`` run times of a job (the console's preview, ``show``).

        Empty for a job that is paused, disabled, broken, aborted or finished:
        its schedule starts nothing until an operator acts (``halted_reason``).
        """
        if job.problem or halted_reason(intent=job.intent, broken=job.broken, phase=job.phase):
            return []  # a job with a problem never runs until its row is fixed
        if self._owns_routines and job.schedule.kind == "expr" and job.owner != self.owner:
            # Another owner's expression is never evaluated with this account's rights
            # (its runs evaluate it as the owner's own function): only the next run.
            return [job.next_run][:n] if job.next_run is not None else []
        return self.preview_schedule(
            job.schedule,
            n,
            first=job.next_run,
            anchor=bookkeeping.anchor(job),
            finished=job.status is Status.FINISHED,
        )

    @_db_errors
    def preview_schedule(
        self,
        schedule: Schedule,
        n: int = 5,
        *,
        first: datetime | None = None,
        anchor: datetime | None = None,
        finished: bool = False,
    ) -> list[datetime]:
        """The next ``n`` run times of a schedule, starting from ``first`` when given."""
        if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_PREVIEW:
            raise InvalidInput(
                f"invalid count {n!r}: expected a whole number from 0 to {MAX_PREVIEW}"
            )
        if finished or n == 0:
            return []
        now = self.now()
        anchor = anchor or schedule.start or now
        if first is None:
            first = first_run(schedule, now)
            if first is None:
                return []
        result = [first]
        if schedule.kind in ("every", "cron"):
            result += upcoming(schedule, first, anchor, n - 1)
        elif schedule.kind == "expr":
            assert schedule.expr is not None
            cursor = first
            with self.engine.connect() as conn:
                try:
                    while len(result) < n:
                        nxt = self.evaluate_expr(schedule.expr, cursor, conn=conn)
                        if nxt is None or nxt <= cursor:
                            break
                        if schedule.finish and nxt > schedule.finish:
                            break
                        result.append(nxt)
                        cursor = nxt
                finally:
                    conn.rollback()
        return result[:n]

    # ------------------------------------------------------------------ validation

    @_db_errors
    def check_what(self, what: What, *, owner: str | None = None) -> None:
        """Validate what a job runs against this database (procedure exists, action registered
        and, where the account may read the allow-list, allowed to the job's owner)."""
        if what.kind == "action":
            actions.check_registered(what.target)
            if not self.is_sqlite:
                with self.read() as conn:
                    actions.refuse_ungranted(conn, owner or self.owner, what.target)
            return
        if what.kind == "call":
            schema_name, proc = split_procedure(what.target)
            if self.is_sqlite:
                raise InvalidInput(
                    "--call runs a stored procedure, which needs MySQL/MariaDB; on SQLite use "
                    "--sql STATEMENT or --action NAME"
                )
            with self.read() as conn:
                found = conn.execute(
                    text(
                        "SELECT COUNT(*) FROM information_schema.ROUTINES "
                        "WHERE ROUTINE_SCHEMA = :s AND ROUTINE_NAME = :p "
                        "AND ROUTINE_TYPE = 'PROCEDURE'"
                    ),
                    {"s": schema_name, "p": proc},
                ).scalar_one()
                if not found:
                    raise InvalidInput(
                        f"procedure {schema_name}.{proc} does not exist (or you may not see "
                        f"it): create it first, e.g. CREATE PROCEDURE `{schema_name}`.`{proc}`() ..."
                    )
                params = conn.execute(
                    text(
                        "SELECT PARAMETER_MODE FROM information_schema.PARAMETERS "
                        "WHERE SPECIFIC_SCHEMA = :s AND SPECIFIC_NAME = :p "
                        "AND ROUTINE_TYPE = 'PROCEDURE' AND ORDINAL_POSITION > 0"
                    ),
                    {"s": schema_name, "p": proc},
                ).all()
            if len(params) != len(what.args):
                raise InvalidInput(
                    f"procedure {schema_name}.{proc} takes {len(params)} argument(s), "
                    f"{len(what.args)} given with --arg"
                )
            if any(p[0] != "IN" for p in params):
                raise InvalidInput(
                    f"procedure {schema_name}.{proc} has OUT/INOUT parameters: jobtui binds "
                    "literal arguments only, so use a procedure with IN parameters"
                )
            return
        self._check_sql(what.target)

    def _check_sql(self, statement: str) -> None:
        """Compile the statement without running it (EXPLAIN on SQLite, PREPARE on MySQL)."""
        try:
            with self.engine.connect() as conn:
                try:
                    if self.is_sqlite:
                        conn.exec_driver_sql("EXPLAIN " + statement)
                    else:
                        conn.execute(text("PREPARE jobtui_check FROM :s"), {"s": statement})
                        conn.execute(text("DEALLOCATE PREPARE jobtui_check"))
                finally:
                    conn.rollback()
        except DBAPIError as exc:
            translated = translate_db_error(exc)
            if isinstance(translated, DatabaseUnavailable):
                raise translated from exc
            raise InvalidInput(
                f"invalid --sql: the database rejected it ({_short_error(exc)})"
            ) from None

    # ------------------------------------------------------------------ export / import

    @_db_errors
    def export(self, *, all_owners: bool = False) -> list[dict[str, Any]]:
        """Job definitions (not runtime state), in the shape ``import_jobs`` reads."""
        out = []
        for job in self.list_jobs(all_owners=all_owners):
            sched = job.schedule
            out.append(
                {
                    "name": job.name,
                    "owner": job.owner,
                    "description": job.description,
                    "what": job.what.to_dict(),
                    "schedule": {
                        k: v for k, v in sched.to_dict().items() if k != "text" and v is not None
                    },
                    "max_failures": job.max_failures,
                    "disabled": job.intent is Intent.DISABLED,
                    # only on a job with a problem: `import` refuses such an entry,
                    # whose placeholders stand for what could not be read
                    **({"problem": job.problem} if job.problem else {}),
                }
            )
        return out

    @_db_errors
    def import_jobs(self, data: Any) -> tuple[int, int]:
        """Create or change jobs from ``export`` output. All are validated before any is written.

        Jobs are imported for the connecting owner. Returns (created, changed).
        """
        self._check_writable()
        from jobtui.core.importfile import check_shape  # (PyYAML only when importing)

        check_shape(data)  # nesting and size bounded, whoever calls
        if isinstance(data, dict) and "jobs" in data:
            data = data["jobs"]
        if not isinstance(data, list):
            raise InvalidInput("invalid import: expected a list of jobs (the output of export)")
        parsed = []
        seen: set[str] = set()
        for i, item in enumerate(data):
            try:
                parsed.append(parse_job_definition(item))
            except InvalidInput as exc:
                label = item.get("name") if isinstance(item, dict) else None
                shown = (
                    repr(label) if label else "no name"
                )  # repr: one line whatever the name holds
                raise InvalidInput(f"job #{i + 1} ({shown}): {exc}") from None
            if parsed[-1][0] in seen:
                raise InvalidInput(f"job #{i + 1}: the name {parsed[-1][0]!r} appears twice")
            seen.add(parsed[-1][0])
        for name, what, sched, _desc, _maxf, _dis in parsed:
            try:
                self.check_what(what)
                self.check_expr_schedule(sched, self.now())
            except InvalidInput as exc:
                raise InvalidInput(f"job {name!r}: {exc}") from None
        existing = {j.name: j for j in self.list_jobs()}
        now = self.now()
        # MySQL/MariaDB: the routines of the jobs that exist first, then the new rows
        # (held: next_run NULL) and their routines; a refusal undoes all of that, so
        # nothing changed. Only then are the rows changed and the new ones released.
        made: list[tuple[int, routines.Routine]] = []
        keep: dict[int, list[routines.Routine]] = {}
        new_ids: dict[str, int] = {}
        try:
            if self._owns_routines:
                for name, what, sched, *_ in parsed:
                    if name in existing:
                        jid = existing[name].id
                        keep[jid], done = self._install_routines(jid, what, sched)
                        made += [(jid, r) for r in done]
            with self.write() as conn:
                for item in parsed:
                    if item[0] not in existing:
                        conn.execute(
                            insert(self.job_table).values(**self._import_values(item, now))
                        )
            if self._owns_routines:
                ids = self._ids_by_name([p[0] for p in parsed if p[0] not in existing])
                new_ids.update(ids)
                for name, what, sched, *_ in parsed:
                    if name in ids:
                        keep[ids[name]], done = self._install_routines(ids[name], what, sched)
                        made += [(ids[name], r) for r in done]
        except BaseException:
            for jid, routine in made:
                self._drop_routines(jid, only=[routine])
            fresh = self._ids_by_name([p[0] for p in parsed if p[0] not in existing])
            if fresh:
                with self.write() as conn:
                    conn.execute(
                        delete(self.job_table).where(self.job_table.c.id.in_(fresh.values()))
                    )
            raise
        created = changed = 0
        with self.write() as conn:
            for item in parsed:
                name = item[0]
                values = self._import_values(item, now, held=False)
                if name in existing:
                    job = existing[name]
                    row = self._lock(conn, job.id)
                    if row.remove_requested:
                        raise removal_pending(name)
                    values["status"] = derive_status(
                        intent=Intent(values["intent"]),
                        broken=bool(row.broken),
                        running=bool(row.running),
                        phase=values["phase"],
                    ).value
                    conn.execute(
                        update(self.job_table).where(self.job_table.c.id == job.id).values(**values)
                    )
                    changed += 1
                else:
                    if name in new_ids:  # held until its routines existed: released now
                        conn.execute(
                            update(self.job_table)
                            .where(self.job_table.c.id == new_ids[name])
                            .values(next_run=values["next_run"])
                        )
                    created += 1
        for jid, want in keep.items():
            if jid not in new_ids.values():
                self._drop_routines(jid, keep=want)
        return created, changed

    def _import_values(
        self, item: tuple[str, What, Schedule, str, int, bool], now: datetime, *, held: bool = True
    ) -> dict[str, Any]:
        """The columns an imported job's row gets (with ``held``: a new row, next_run NULL
        on MySQL/MariaDB until its routines exist)."""
        name, what, sched, desc, maxf, dis = item
        intent = Intent.DISABLED if dis else Intent.ENABLED
        nxt = first_run(sched, now)
        phase = "ENABLED" if nxt else "FINISHED"
        values: dict[str, Any] = {
            "description": desc,
            "max_failures": maxf,
            **what_columns(what),
            **schedule_columns(sched),
            "schedule_anchor": to_db(sched.start or now),
            "updated": to_db(now),
            "intent": intent.value,
            "phase": phase,
            "next_run": to_db(nxt),
        }
        if not held:
            return values
        if self._owns_routines:
            values["next_run"] = None
        values.update(
            owner=self.owner,
            name=name,
            status=derive_status(intent=intent, broken=False, running=False, phase=phase).value,
            running=False,
            broken=False,
            failures=0,
            cycles=0,
            run_now=False,
            abort_requested=False,
            total_time=0.0,
            created=to_db(now),
        )
        return values

    def _ids_by_name(self, names: list[str]) -> dict[str, int]:
        """The ids of this account's jobs with these names."""
        if not names:
            return {}
        t = self.job_table
        with self.read() as conn:
            rows = conn.execute(
                select(t.c.name, t.c.id).where(t.c.owner == self.owner, t.c.name.in_(names))
            ).all()
        return {str(n): int(i) for n, i in rows}

    # ------------------------------------------------------------------ internals

    def _lock(self, conn: Connection, job_id: int) -> Row[Any]:
        row = conn.execute(
            select(self.job_table).where(self.job_table.c.id == job_id).with_for_update()
        ).first()
        if row is None:
            raise JobNotFound(str(job_id))
        return row

    @_db_errors
    def counts_by_status(self, *, all_owners: bool = True) -> dict[str, int]:
        query = select(self.job_table.c.status, func.count()).group_by(self.job_table.c.status)
        if not all_owners:
            query = query.where(self._owner_filter(None))
        with self.read() as conn:
            return {str(s): int(n) for s, n in conn.execute(query)}

    @_db_errors
    def prune_runs(
        self,
        *,
        keep: int | None = 1000,
        job_id: int | None = None,
        keep_days: float | None = None,
        keep_error_days: float | None = None,
        dry_run: bool = False,
        batch: int = PRUNE_BATCH,
        max_batches: int | None = None,
        wait: float = 0.0,
        now: datetime | None = None,
    ) -> int:
        """Delete old finished runs; return how many were (or, ``dry_run``, would be) deleted.

        - ``keep``: each job keeps its ``keep`` newest successful runs (ok, skipped)
          and, counted apart, its ``keep`` newest error runs (failed, aborted, lost),
          so a flood of successes never pushes the last errors out (None: no count limit);
        - ``keep_days``: successful runs older than this go (None: no age limit);
        - ``keep_error_days``: error runs older than this go; never less than
          ``keep_days`` (None, or ``keep_days`` None: no age limit for errors).

        ``running`` rows are never deleted. Deletes go in transactions of at most
        ``batch`` rows (runners claim in between); ``max_batches`` bounds one call
        (the runners' housekeeping; the rest goes next time). On MySQL/MariaDB one
        pruner at a time holds the named lock ``prune_lock_name``: when another
        holds it, this returns 0 at once (``wait`` 0, the runners) or raises a
        JobtuiError (exit 1) after ``wait`` seconds.
        Ages count back from ``now`` (default: the store's clock).
        """
        self._check_writable()
        if not self.sees_all:
            raise PermissionDenied(
                f"pruning the run log needs an admin or runner account (roles "
                f"{schema.admin_role(self.schema_name)}, {schema.runner_role(self.schema_name)}; "
                "docs/privileges.md); account "
                f"{self.owner!r} is an operator"
            )
        retention = Retention(
            keep_runs=keep, keep_days=keep_days, keep_error_days=keep_error_days, batch=batch
        )
        if max_batches is not None and (
            isinstance(max_batches, bool) or not isinstance(max_batches, int) or max_batches < 1
        ):
            raise InvalidInput(f"invalid max_batches {max_batches!r}: a whole number, 1 or more")
        if job_id is not None and (isinstance(job_id, bool) or not isinstance(job_id, int)):
            raise InvalidInput(f"invalid job_id {job_id!r}: a whole number")
        if self.is_sqlite:
            return self._prune(retention, job_id, dry_run, max_batches, now)
        with self.engine.connect() as lock_conn:
            name = prune_lock_name(
                self.lock_key(), str(lock_conn.execute(text("SELECT DATABASE()")).scalar())
            )
            got = lock_conn.execute(
                text("SELECT GET_LOCK(:n, :w)"), {"n": name, "w": max(0.0, float(wait))}
            ).scalar()
            lock_conn.commit()
            if got != 1:
                if wait > 0:
                    err = JobtuiError(
                        f"another process has been pruning the run log for over {wait:g} s "
                        "(a runner's housekeeping): try again later"
                    )
                    err.exit_code = 1
                    raise err
                return 0
            try:
                return self._prune(retention, job_id, dry_run, max_batches, now)
            finally:
                lock_conn.execute(text("DO RELEASE_LOCK(:n)"), {"n": name})
                lock_conn.commit()

    def _prune(
        self,
        retention: Retention,
        job_id: int | None,
        dry_run: bool,
        max_batches: int | None,
        now: datetime | None,
    ) -> int:
        r = schema.run
        now = aware(now) if now is not None else self.now()
        ok_class = [Outcome.OK.value, Outcome.SKIPPED.value]
        err_class = [Outcome.FAILED.value, Outcome.ABORTED.value, Outcome.LOST.value]
        scope = [r.c.job_id == job_id] if job_id is not None else []
        aged: list[Any] = []
        if retention.keep_days is not None:
            cut = to_db(now - timedelta(days=retention.keep_days))
            aged.append(and_(r.c.outcome.in_(ok_class), r.c.scheduled_for < cut))
        error_days = retention.error_days
        if error_days is not None:
            cut = to_db(now - timedelta(days=error_days))
            aged.append(and_(r.c.outcome.in_(err_class), r.c.scheduled_for < cut))
        by_age = and_(*scope, or_(*aged)) if aged else None
        counted: list[Any] = []  # one predicate per (job, class) over its count limit
        keep = retention.keep_runs
        if keep is not None:
            is_error = case((r.c.outcome.in_(err_class), 1), else_=0)
            with self.read() as conn:
                over = conn.execute(
                    select(r.c.job_id, is_error.label("err"), func.count())
                    .where(*scope, r.c.outcome != Outcome.RUNNING.value)
                    .group_by(r.c.job_id, is_error)
                    .having(func.count() > keep)
                ).all()
                for jid, err, _n in over:
                    outcomes = err_class if err else ok_class
                    # UNIQUE(job_id, scheduled_for): the cutoff row is exactly the first to go
                    cutoff = conn.execute(
                        select(r.c.scheduled_for)
                        .where(r.c.job_id == jid, r.c.outcome.in_(outcomes))
                        .order_by(r.c.scheduled_for.desc())
                        .offset(keep)
                        .limit(1)
                    ).scalar()
                    if cutoff is not None:
                        counted.append(
                            and_(
                                r.c.job_id == jid,
                                r.c.outcome.in_(outcomes),
                                r.c.scheduled_for <= cutoff,
                            )
                        )
        groups: list[Any] = []
        if by_age is not None:
            groups.append(by_age)
        for i in range(0, len(counted), 50):
            chunk = or_(*counted[i : i + 50])
            groups.append(chunk if by_age is None else and_(chunk, not_(by_age)))
        total = 0
        batches = 0
        for where in groups:
            if dry_run:
                with self.read() as conn:
                    total += int(conn.execute(select(func.count()).where(where)).scalar_one())
                continue
            while max_batches is None or batches < max_batches:
                with self.write() as conn:
                    ids = [
                        int(x[0])
                        for x in conn.execute(
                            select(r.c.id).where(where).order_by(r.c.id).limit(retention.batch)
                        )
                    ]
                    if ids:
                        res = conn.execute(
                            delete(r).where(r.c.id.in_(ids), r.c.outcome != Outcome.RUNNING.value)
                        )
                        total += res.rowcount or 0
                batches += 1
                if len(ids) < retention.batch:
                    break
        return total


# ---------------------------------------------------------------------- row mapping


def what_columns(what: What) -> dict[str, Any]:
    return {"what_kind": what.kind, "what_target": what.target, "what_args": what.args_json()}


def schedule_columns(s: Schedule) -> dict[str, Any]:
    return {
        "schedule_kind": s.kind,
        "schedule_interval": s.every,
        "schedule_cron": s.cron,
        "schedule_tz": s.tz,
        "schedule_expr": s.expr,
        "schedule_start": to_db(s.start),
        "schedule_finish": to_db(s.finish),
    }


# The columns a job's Schedule is made from, and the anchor of its slots.
SCHEDULE_FIELDS = (
    "schedule_kind",
    "schedule_interval",
    "schedule_cron",
    "schedule_tz",
    "schedule_expr",
    "schedule_start",
    "schedule_finish",
    "schedule_anchor",
)

# The columns a Job is read from, in the order ``_jobs_from_values`` unpacks them.
JOB_FIELDS = _JOB_FIELDS = (
    "id",
    "owner",
    "name",
    "description",
    "what_kind",
    "what_target",
    "what_args",
    *SCHEDULE_FIELDS,
    "status",
    "intent",
    "broken",
    "failures",
    "max_failures",
    "cycles",
    "created",
    "last_run",
    "this_run",
    "next_run",
    "total_time",
    "last_outcome",
    "last_error",
    "last_duration",
    "last_cycle_start",
    "last_cycle_finish",
    "runner_id",
    "runner_connection_id",
    "runner_start",
    "runner_finish",
    "run_now",
    "abort_requested",
    "broken_reason",
    "updated",
    "phase",
    "running",
    "remove_requested",
)
_STATUSES = {s.value: s for s in Status}
_INTENTS = {i.value: i for i in Intent}
_OUTCOMES = {o.value: o for o in Outcome}


@lru_cache(maxsize=64)
def job_fields_getter(
    keys: tuple[str, ...], *, partial: bool = False
) -> Callable[[Any], tuple[Any, ...]]:
    """A row's values in ``JOB_FIELDS`` order, by position (a result's keys: the table's
    or the operators' view's columns, whichever order they come in).

    ``partial``: the row may lack job columns (the runner reads only what it needs);
    those read as a full row's would, None (and "" for ``description``). Otherwise
    a missing column is an error (KeyError).
    """
    at = {key: i for i, key in enumerate(keys)}
    if not partial:
        return itemgetter(*(at[name] for name in _JOB_FIELDS))
    pad: list[Any] = []
    positions: list[int] = []
    for name in _JOB_FIELDS:
        if name in at:
            positions.append(at[name])
        else:
            positions.append(len(keys) + len(pad))
            pad.append("" if name == "description" else None)
    get = itemgetter(*positions)
    padding = tuple(pad)
    return lambda row: get(tuple(row) + padding)


def jobs_from_result(result: Any) -> list[Job]:
    """Every row of a job query as a Job.

    Built for 10,000 rows (the console's first table): values are taken by
    position (a SQLAlchemy ``Row``'s attributes cost ~0.5 µs each, at 41
    columns a row), and the rows' schedules and targets, mostly alike, are
    made once each.
    """
    getter = job_fields_getter(tuple(result.keys()))
    return _jobs_from_values(map(getter, result))


def job_from_row(row: Any) -> Job:
    """One job row: a SQLAlchemy ``Row`` or a named tuple with the job table's columns (read
    by position), or any object with them as attributes."""
    fields = getattr(row, "_fields", None)
    if fields is not None:
        values = job_fields_getter(tuple(fields))(row)
    else:
        values = tuple(getattr(row, name) for name in _JOB_FIELDS)
    return _jobs_from_values([values])[0]


def _utc(value: Any) -> datetime | None:
    """``from_db`` for the values a driver returns (``datetime.combine`` is several times
    cheaper than ``replace(tzinfo=...)``, which counts at ten columns by 10,000 rows)."""
    if value is None:
        return None
    if type(value) is datetime and value.tzinfo is None:
        return datetime.combine(value.date(), value.time(), UTC)
    return from_db(value)


class _Unreadable:
    """A time column's value that is no date (a zero date, text on SQLite)."""


_UNREADABLE = _Unreadable()


def _time(value: Any) -> datetime | _Unreadable | None:
    """``_utc``, or ``_UNREADABLE`` for what is no date-time (never an exception)."""
    if value is None:
        return None
    if type(value) is datetime and value.tzinfo is None:
        return datetime.combine(value.date(), value.time(), UTC)
    try:
        return from_db(value)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return _UNREADABLE


def _note(value: Any) -> datetime | None:
    """A bookkeeping time the runner rewrites at every run (this_run, runner_start ...):
    unreadable reads as None, it neither runs nor schedules anything."""
    found = _time(value)
    return None if found is _UNREADABLE else found  # type: ignore[return-value]


# What and Schedule are frozen and made only from their own columns' raw values, so one
# made for a set of values serves every later row with the same values: a runner that
# claims and records the same jobs again and again does not re-parse their definitions.
# A definition that does not validate is cached as its problem (text).
# Bounded: cleared when full (a console over many distinct jobs just rebuilds them).
_CACHE_LIMIT = 20_000
_whats: dict[tuple[Any, ...], What | str] = {}
_schedules: dict[tuple[Any, ...], Schedule | str] = {}

_PHASES = frozenset(PHASES)
_INT_TYPES = (int, bool)  # a Boolean column reads as bool, or as 0/1 from a raw cursor
_NUMBER_TYPES = (float, int)
MAX_FAILURES_COUNT = 2**31 - 1  # the column's INT
MAX_CYCLES = 2**63 - 1  # the column's BIGINT
MAX_SECONDS = 1e15  # total_time, last_duration: thirty million years is corrupt
_OWNER_ACCEPTED = "expected the owning account, 1-190 printable characters"
_NAME_ACCEPTED = (
    "expected 1-64 characters from A-Z a-z 0-9 _ . -, starting with a letter, digit or underscore"
)
_DESCRIPTION_ACCEPTED = f"expected text of at most {MAX_DESCRIPTION_LENGTH} characters without NUL"


def jobs_from_values(rows: Iterable[tuple[Any, ...]]) -> list[Job]:
    """Jobs from rows of values in ``JOB_FIELDS`` order."""
    return _jobs_from_values(rows)


def _jobs_from_values(rows: Iterable[tuple[Any, ...]]) -> list[Job]:
    """Jobs from rows of values, each checked as strictly as CLI input (jobtui.core.rows).

    A row that does not validate gives a Job whose ``problem`` names the first
    column that is wrong, with placeholders for what could not be read: reading
    never raises. A column that is None where the table says NOT NULL was not
    read (the runner reads only the columns it needs): it is not checked.
    """
    whats = _whats
    schedules = _schedules
    if len(whats) > _CACHE_LIMIT:
        whats.clear()
    if len(schedules) > _CACHE_LIMIT:
        schedules.clear()
    time_ = _time
    note = _note
    unreadable = _UNREADABLE
    name_ok = JOB_NAME_RE.fullmatch
    jobs: list[Job] = []
    for (
        id_,
        owner,
        name,
        description,
        what_kind,
        what_target,
        what_args,
        schedule_kind,
        schedule_interval,
        schedule_cron,
        schedule_tz,
        schedule_expr,
        schedule_start,
        schedule_finish,
        schedule_anchor,
        status,
        intent,
        broken,
        failures,
        max_failures,
        cycles,
        created,
        last_run,
        this_run,
        next_run,
        total_time,
        last_outcome,
        last_error,
        last_duration,
        last_cycle_start,
        last_cycle_finish,
        runner_id,
        runner_connection_id,
        runner_start,
        runner_finish,
        run_now,
        abort_requested,
        broken_reason,
        updated,
        phase,
        running,
        remove_requested,
    ) in rows:
        problems: list[str] = []
        if owner is not None and not (
            type(owner) is str and 0 < len(owner) <= 190 and owner.isprintable()
        ):
            problems.append(rows_.bad("owner", owner, _OWNER_ACCEPTED))
            owner = rows_.PLACEHOLDER_OWNER
        if name is not None and not (type(name) is str and name_ok(name)):
            problems.append(rows_.bad("name", name, _NAME_ACCEPTED))
            name = f"#{id_}"
        if description and not (
            type(description) is str
            and len(description) <= MAX_DESCRIPTION_LENGTH
            and "\x00" not in description
        ):
            problems.append(rows_.bad("description", description, _DESCRIPTION_ACCEPTED))
            description = ""
        # Frozen and equal for equal columns: rows with the same target or schedule share one.
        what_key = (what_kind, what_target, what_args)
        what = whats.get(what_key)
        if what is None:
            if what_kind is None:  # not read (the runner's recording reads no definition)
                what = What.__new__(What)
                object.__setattr__(what, "kind", None)
                object.__setattr__(what, "target", what_target)
                object.__setattr__(what, "args", ())
            else:
                what = rows_.what_from_columns(what_kind, what_target, what_args)
            whats[what_key] = what
        if type(what) is str:
            problems.append(what)
            what = rows_.placeholder_what(what_kind)
        schedule_key = (
            schedule_kind,
            schedule_interval,
            schedule_cron,
            schedule_tz,
            schedule_expr,
            schedule_start,
            schedule_finish,
        )
        sched = schedules.get(schedule_key)
        if sched is None:
            if schedule_kind is None:  # not read
                sched = rows_.PLACEHOLDER_SCHEDULE
            else:
                sched = rows_.schedule_from_columns(
                    schedule_kind,
                    schedule_interval,
                    schedule_cron,
                    schedule_tz,
                    schedule_expr,
                    schedule_start,
                    schedule_finish,
                )
            schedules[schedule_key] = sched
        if type(sched) is str:
            problems.append(sched)
            sched = rows_.PLACEHOLDER_SCHEDULE
        anchor = time_(schedule_anchor)
        if anchor is unreadable:
            problems.append(rows_.bad("schedule_anchor", schedule_anchor, "expected a date-time"))
            anchor = None
        status_ = _STATUSES.get(status)
        if status_ is None:
            problems.append(rows_.bad("status", status, "expected one of " + ", ".join(_STATUSES)))
            status_ = Status.BROKEN
        intent_ = _INTENTS.get(intent)
        if intent_ is None:
            problems.append(rows_.bad("intent", intent, "expected one of " + ", ".join(_INTENTS)))
            intent_ = Intent.DISABLED
        if broken is None:
            broken = False
        elif not isinstance(broken, _INT_TYPES):
            problems.append(rows_.bad("broken", broken, "expected 0 or 1"))
            broken = True
        if failures is None:
            failures = 0
        elif type(failures) not in _INT_TYPES or not 0 <= failures <= MAX_FAILURES_COUNT:
            problems.append(
                rows_.bad(
                    "failures", failures, f"expected a whole number from 0 to {MAX_FAILURES_COUNT}"
                )
            )
            failures = 0
        if max_failures is None:
            max_failures = DEFAULT_MAX_FAILURES
        elif type(max_failures) not in _INT_TYPES or not 1 <= max_failures <= MAX_MAX_FAILURES:
            problems.append(
                rows_.bad(
                    "max_failures",
                    max_failures,
                    f"expected a whole number from 1 to {MAX_MAX_FAILURES}",
                )
            )
            max_failures = DEFAULT_MAX_FAILURES
        if cycles is None:
            cycles = 0
        elif type(cycles) not in _INT_TYPES or not 0 <= cycles <= MAX_CYCLES:
            problems.append(
                rows_.bad("cycles", cycles, f"expected a whole number from 0 to {MAX_CYCLES}")
            )
            cycles = 0
        created_ = time_(created)
        if created_ is unreadable:
            problems.append(rows_.bad("created", created, "expected a date-time"))
            created_ = None
        last_run_ = time_(last_run)
        if last_run_ is unreadable:
            problems.append(rows_.bad("last_run", last_run, "expected a date-time or NULL"))
            last_run_ = None
        next_run_ = time_(next_run)
        if next_run_ is unreadable:
            problems.append(rows_.bad("next_run", next_run, "expected a date-time or NULL"))
            next_run_ = None
        if total_time is None:
            total_time = 0.0
        elif type(total_time) not in _NUMBER_TYPES or not 0 <= total_time <= MAX_SECONDS:
            problems.append(
                rows_.bad("total_time", total_time, "expected a number of seconds, 0 or more")
            )
            total_time = 0.0
        outcome = _OUTCOMES.get(last_outcome) if last_outcome is not None else None
        if outcome is None and last_outcome is not None:
            problems.append(
                rows_.bad(
                    "last_outcome", last_outcome, "expected NULL or one of " + ", ".join(_OUTCOMES)
                )
            )
        if last_duration is not None and (
            type(last_duration) not in _NUMBER_TYPES or not 0 <= last_duration <= MAX_SECONDS
        ):
            problems.append(
                rows_.bad(
                    "last_duration",
                    last_duration,
                    "expected NULL or a number of seconds, 0 or more",
                )
            )
            last_duration = None
        if run_now is None:
            run_now = False
        elif not isinstance(run_now, _INT_TYPES):
            problems.append(rows_.bad("run_now", run_now, "expected 0 or 1"))
            run_now = False
        if phase is not None and phase not in _PHASES:
            problems.append(rows_.bad("phase", phase, "expected one of " + ", ".join(PHASES)))
            phase = "ENABLED"
        if running is None:
            running = False
        elif not isinstance(running, _INT_TYPES):
            problems.append(rows_.bad("running", running, "expected 0 or 1"))
            running = False
        problem = problems[0] if problems else None
        jobs.append(
            Job(
                id=int(id_),
                owner=owner,
                name=name,
                description=description or "",
                what=what,  # type: ignore[arg-type]  # a problem (str) was replaced above
                schedule=sched,  # type: ignore[arg-type]
                status=Status.BROKEN if problem else status_,
                intent=intent_,
                broken=bool(broken),
                failures=failures,
                max_failures=max_failures,
                cycles=cycles,
                created=created_ or utcnow(),  # type: ignore[arg-type]
                last_run=last_run_,  # type: ignore[arg-type]
                this_run=note(this_run),
                next_run=next_run_,  # type: ignore[arg-type]
                total_time=float(total_time),
                last_outcome=outcome,
                last_error=last_error if isinstance(last_error, str) else None,
                last_duration=last_duration,
                last_cycle_start=note(last_cycle_start),
                last_cycle_finish=note(last_cycle_finish),
                runner_id=runner_id if isinstance(runner_id, str) else None,
                runner_connection_id=runner_connection_id
                if type(runner_connection_id) is int
                else None,
                runner_start=note(runner_start),
                runner_finish=note(runner_finish),
                run_now=bool(run_now),
                abort_requested=bool(abort_requested)
                if isinstance(abort_requested, _INT_TYPES)
                else False,
                broken_reason=broken_reason if isinstance(broken_reason, str) else None,
                updated=note(updated),
                phase=phase,
                running=bool(running),
                anchor=anchor,  # type: ignore[arg-type]
                remove_requested=bool(remove_requested)
                if isinstance(remove_requested, _INT_TYPES)
                else False,
                problem=problem,
            )
        )
    return jobs


def run_from_row(row: Any) -> Run:
    return Run(
        id=int(row.id),
        job_id=int(row.job_id),
        job=row.job_name,
        owner=row.owner,
        scheduled_for=from_db(row.scheduled_for) or utcnow(),
        started=from_db(row.started),
        finished=from_db(row.finished),
        outcome=Outcome(row.outcome),
        error=row.error,
        runner=row.runner,
        skipped=int(row.skipped or 0),
        manual=bool(row.manual),
    )


# ---------------------------------------------------------------------- validation helpers


def removal_pending(name: str) -> InvalidInput:
    """The refusal of anything but ``remove`` on a job whose removal waits for its run."""
    return InvalidInput(
        f"job {name!r} is being removed: its run in flight is being aborted, and the job is "
        "deleted when that run has ended; its name is free only then (try again in a moment; "
        "`jobtui show` shows remove_requested)"
    )


def check_description(description: str | None) -> str:
    if description is None:
        return ""
    if not isinstance(description, str) or "\x00" in description:
        raise InvalidInput("invalid --description: text without NUL characters")
    if len(description) > MAX_DESCRIPTION_LENGTH:
        raise InvalidInput(
            f"--description too long ({len(description)} characters): at most "
            f"{MAX_DESCRIPTION_LENGTH}"
        )
    return description


def check_max_failures(value: Any) -> int:
    try:
        if isinstance(value, bool):
            raise ValueError
        n = int(value)
        if isinstance(value, float) and value != n:
            raise ValueError
    except (TypeError, ValueError):
        raise InvalidInput(
            f"invalid --max-failures {value!r}: expected a whole number from 1 to {MAX_MAX_FAILURES}"
        ) from None
    if not 1 <= n <= MAX_MAX_FAILURES:
        raise InvalidInput(
            f"invalid --max-failures {value!r}: expected a whole number from 1 to {MAX_MAX_FAILURES}"
        )
    return n


def merge_schedule(
    current: Schedule,
    *,
    kind: str | None = None,
    every: float | str | None = None,
    cron: str | None = None,
    tz: str | None = UNSET,
    expr: str | None = None,
    start: datetime | None = UNSET,
    finish: datetime | None = UNSET,
) -> Schedule:
    """Apply a partial change to a schedule ("only what is given changes")."""
    given = [k for k, v in (("every", every), ("cron", cron), ("expr", expr)) if v is not None]
    if kind is not None and kind not in given:
        given.append(kind)  # "once", or a kind whose value is missing (make_schedule says so)
    if len(given) > 1:
        raise InvalidInput("give one schedule: --every, --cron, --expr or --once")
    new_kind = given[0] if given else current.kind
    new_start = current.start if start is UNSET else start
    new_finish = current.finish if finish is UNSET else finish
    if new_kind == current.kind and not given:
        new_tz = current.tz if tz is UNSET else tz
        return make_schedule(
            new_kind,
            every=current.every,
            cron=current.cron,
            tz=new_tz,
            expr=current.expr,
            start=new_start,
            finish=new_finish,
        )
    new_tz = None if tz is UNSET else tz
    if new_kind == "cron" and tz is UNSET and current.kind == "cron":
        new_tz = current.tz
    return make_schedule(
        new_kind, every=every, cron=cron, tz=new_tz, expr=expr, start=new_start, finish=new_finish
    )


def parse_job_definition(item: Any) -> tuple[str, What, Schedule, str, int, bool]:
    """One entry of an export file, validated."""
    from jobtui.core.timeutil import parse_when

    if not isinstance(item, dict):
        raise InvalidInput("expected a mapping with name, what and schedule")
    if item.get("problem") is not None:
        raise InvalidInput(
            f"exported with a problem ({str(item['problem'])[:200]}): its values are "
            "placeholders; fix the entry and delete its 'problem' field"
        )
    name = check_job_name(item.get("name", ""))
    w = item.get("what")
    if not isinstance(w, dict):
        raise InvalidInput("'what' must be a mapping with kind, target and args")
    args = w.get("args") or []
    if not isinstance(args, list):
        raise InvalidInput("'what.args' must be a list")
    what = What(w.get("kind", ""), w.get("target", ""), tuple(str(a) for a in args))
    s = item.get("schedule")
    if not isinstance(s, dict):
        raise InvalidInput("'schedule' must be a mapping with kind and its value")
    sched = make_schedule(
        str(s.get("kind", "")),
        every=s.get("every"),
        cron=s.get("cron"),
        tz=s.get("tz"),
        expr=s.get("expr"),
        start=parse_when(s["start"], "schedule.start") if s.get("start") else None,
        finish=parse_when(s["finish"], "schedule.finish") if s.get("finish") else None,
    )
    desc = check_description(item.get("description", ""))
    maxf = check_max_failures(item.get("max_failures", DEFAULT_MAX_FAILURES))
    disabled = item.get("disabled", False)
    if not isinstance(disabled, bool):
        raise InvalidInput("'disabled' must be true or false")
    return name, what, sched, desc, maxf, disabled


def _short_error(exc: BaseException) -> str:
    orig = getattr(exc, "orig", None) or exc
    args: tuple[Any, ...] = tuple(getattr(orig, "args", ()))
    msg = str(args[1]) if len(args) > 1 and isinstance(args[0], int) else str(orig)
    return mask_text(msg.splitlines()[0] if msg else type(orig).__name__)


def _to_datetime(value: Any, expr: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return aware(value)
    if isinstance(value, date):
        return aware(datetime(value.year, value.month, value.day))
    if isinstance(value, (bytes, str)):
        textual = value.decode(errors="replace") if isinstance(value, bytes) else value
        try:
            return aware(datetime.fromisoformat(textual.strip()))
        except ValueError:
            pass
    raise InvalidInput(
        f"invalid --expr {expr!r}: it gave {value!r}, not a date-time; expected e.g. "
        "NOW() + INTERVAL 1 DAY (MySQL) or datetime(NOW(), '+1 day') (SQLite)"
    )


def _sqlite_evaluate(conn: Connection, expr: str, now: datetime) -> Any:
    """``SELECT (expr)`` on SQLite, bounded in size and in time (``EXPR_TIMEOUT``)."""
    # A date needs a few bytes: cap text and blobs (randomblob(1e9) would
    # take a gigabyte of memory) for this evaluation only.
    raw: Any = conn.connection.dbapi_connection
    old_limit = raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, EXPR_MAX_VALUE)
    deadline = time.monotonic() + routines.EXPR_TIMEOUT
    raw.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    try:
        with sqlite_now_override(now):
            return conn.execute(text(f"SELECT ({expr})")).scalar()
    finally:
        raw.set_progress_handler(None, 0)
        raw.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, old_limit)


def _is_timeout(exc: BaseException) -> bool:
    """max_statement_time exceeded (MariaDB 1969), or SQLite's progress handler stopped it."""
    orig = getattr(exc, "orig", None) or exc
    args = getattr(orig, "args", ())
    if args and args[0] == 1969:
        return True
    return isinstance(orig, sqlite3.OperationalError) and "interrupted" in str(orig)
