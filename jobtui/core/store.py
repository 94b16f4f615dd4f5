"""The job store: define, steer and read jobs (DBMS_JOB's SUBMIT, CHANGE, BROKEN, RUN ...).

Every method is one short transaction. Writes lock the job's row first
(``SELECT ... FOR UPDATE`` on MySQL/MariaDB, ``BEGIN IMMEDIATE`` on SQLite),
compute the new state with ``jobtui.core.transitions`` and write it back, so
operator actions from many processes and runner bookkeeping never interleave
half-way. Runners use the same tables (``jobtui.core.runner``).

``JobStore`` keeps the verbs and the reads; the work behind some verbs lives
in modules named after it: ``defining`` (submit, change, remove), ``steering``
(what each operator verb writes), ``expressions`` (expr evaluation, preview),
``transfer`` (export, import), ``retention`` (pruning the run log), ``rowmap``
(rows to Jobs and back). Whatever differs between databases is asked of
``self.backend`` (``jobtui.core.backends``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Row, Table, func, select, text, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from jobtui.core import (
    actions,
    alerting,
    alerts,
    builtin_actions,
    claims,
    defining,
    expressions,
    migrations,
    routines,
    schema,
    steering,
    transfer,
)
from jobtui.core.backends import backend_for
from jobtui.core.db import make_engine, mask_url, resolve_url
from jobtui.core.dberrors import (
    NO_SUCH_TABLE,
    PERMISSION_ERRORS,
    db_errors,
    error_code,
    short_error,
    translate_db_error,
)
from jobtui.core.errors import (
    DatabaseUnavailable,
    InvalidInput,
    JobNotFound,
    JobtuiError,
    PermissionDenied,
    ReadOnlyError,
    SchemaTooNew,
)
from jobtui.core.jobdefs import DEFAULT_MAX_FAILURES, UNSET, removal_pending
from jobtui.core.model import (
    JOB_PARAM_MESSAGE,
    Job,
    Outcome,
    Run,
    Schedule,
    What,
    passes_job_number,
    split_procedure,
)
from jobtui.core.retention import DEFAULT_RETENTION, PRUNE_BATCH, Retention, prune_run_log
from jobtui.core.rowmap import (
    job_from_row,
    jobs_from_result,
    run_from_row,
)
from jobtui.core.timeutil import Clock, aware, from_db, to_db, utcnow
from jobtui.core.transitions import status_after

T = TypeVar("T")


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
    if not init or read_only:
        try:
            store.schema_version()  # a newer schema is refused by every command
        except SchemaTooNew:
            store.close()
            raise
        except JobtuiError:
            pass  # unreachable or unreadable: the command's own queries say so
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
        self._poller = self.backend.poller()  # see poll()
        self._schema_name: str | None = None
        self.upgraded: migrations.Upgrade | None = None  # what init() found and applied

    # ------------------------------------------------------------------ basics

    @property
    def masked_url(self) -> str:
        return mask_url(self.url)

    def close(self) -> None:
        self._poller.close()
        self.engine.dispose()

    @db_errors
    def init(self) -> migrations.Upgrade | None:
        """Create or upgrade the tables (idempotent; refuses a schema newer than this code);
        an operator account only checks the version and its views (None)."""
        self.check_writable()
        if not self.sees_all:
            migrations.check_version(self.engine)
            with self.read() as conn:
                conn.execute(select(self.job_table.c.id).limit(1)).all()
            return None
        self.upgraded = migrations.upgrade(self.engine)
        return self.upgraded

    @db_errors
    def schema_version(self) -> int | None:
        """The database's schema version (None: no tables yet, or not readable); refuses
        (SchemaTooNew) a version newer than this code's."""
        return migrations.check_version(self.engine)

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

    @db_errors
    def _detect_access(self) -> tuple[Table, Table]:
        """Which the account may read: the tables (admin, runner) or the views (operator)."""
        return self.backend.readable_tables(lambda: self.owner)

    @db_errors
    def run_rights_problem(self) -> str | None:
        """Why this account cannot run jobs (None when it can): a runner account can, an
        admin or operator cannot (docs/privileges.md); SQLite has no accounts."""
        with self.engine.connect() as conn:
            return self.backend.run_rights_problem(conn)

    def require_all(self, option: str = "--all") -> None:
        """Refuse DBA_JOBS-style requests from an operator account (exit 2)."""
        if not self.sees_all:
            raise PermissionDenied(
                f"{option} shows every owner's jobs (DBA_JOBS) and needs an admin account "
                f"(role {schema.admin_role(self.schema_name)}, docs/privileges.md); account "
                f"{self.owner!r} sees "
                f"only its own jobs: leave out {option}"
            )

    @db_errors
    def mark_demo(self) -> None:
        """Mark this database as a demo (`jobtui demo`): a process that opens it knows the
        demo actions (``builtin_actions``); no other database does."""
        with self.write() as conn:
            schema.put_meta(conn, builtin_actions.DEMO_KEY, "1")
        builtin_actions.register_demo()

    @db_errors
    def is_demo(self) -> bool:
        """Whether `jobtui demo` made this database (False when jobtui_meta is unreadable)."""
        with self.engine.connect() as conn:
            try:
                found = conn.execute(schema.select_meta(builtin_actions.DEMO_KEY)).first()
            except DBAPIError as exc:
                if error_code(exc) in (NO_SUCH_TABLE, *PERMISSION_ERRORS):
                    return False
                raise
            return found is not None

    @db_errors
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
            self._schema_name = self.backend.schema_name()
        return self._schema_name

    @db_errors
    def _current_owner(self) -> str:
        return self.backend.current_user()

    @db_errors
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

    def check_writable(self) -> None:
        if self.read_only:
            raise ReadOnlyError("read-only: this console or command may not change anything")

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction: BEGIN IMMEDIATE on SQLite, a plain transaction on MySQL."""
        self.check_writable()
        with self.engine.connect() as conn, self.backend.begin(conn):
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn, conn.begin():
            yield conn

    def poll(self, query: Callable[[Connection], T]) -> T:
        """Run ``query`` (one SELECT, its result read inside) for a caller that asks again
        and again (the console, once a second), as cheaply as the database allows
        (``Backend.poller``: on MySQL/MariaDB one connection kept for the purpose, in
        autocommit; on SQLite a plain read transaction)."""
        return self._poller.run(query)

    # ------------------------------------------------------------------ reading

    def _owner_filter(self, owner: str | None) -> Any:
        return self.job_table.c.owner == (owner or self.owner)

    @db_errors
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

    @db_errors
    def get_by_id(self, job_id: int) -> Job | None:
        with self.read() as conn:
            row = conn.execute(select(self.job_table).where(self.job_table.c.id == job_id)).first()
        return job_from_row(row) if row else None

    @db_errors
    def list_jobs(self, *, all_owners: bool = False, owner: str | None = None) -> list[Job]:
        """The caller's jobs (USER_JOBS), or every owner's with ``all_owners`` (DBA_JOBS)."""
        query = select(self.job_table).order_by(self.job_table.c.owner, self.job_table.c.name)
        if not all_owners:
            query = query.where(self._owner_filter(owner))
        with self.read() as conn:
            return jobs_from_result(conn.execute(query))

    @db_errors
    def jobs_changed_since(self, since: datetime | None, *, all_owners: bool = True) -> list[Job]:
        """Jobs whose row changed after ``since`` (all jobs when None): the console's refresh
        (through ``poll``)."""
        query = select(self.job_table)
        if since is not None:
            query = query.where(self.job_table.c.updated > to_db(since))
        else:
            # Every row: made into Jobs as the driver reads them (PyMySQL would otherwise
            # hold all the raw rows first: ~150 MB more at 100,000 jobs).
            query = query.execution_options(stream_results=True)
        if not all_owners:
            query = query.where(self._owner_filter(None))
        return self.poll(lambda conn: jobs_from_result(conn.execute(query)))

    @db_errors
    def first_jobs(self, limit: int, *, all_owners: bool = True) -> list[Job]:
        """The first ``limit`` jobs by name (then owner): the console's first screenful,
        shown before the whole table is read (through ``poll``)."""
        c = self.job_table.c
        query = select(self.job_table).order_by(func.lower(c.name), c.owner, c.id).limit(limit)
        if not all_owners:
            query = query.where(self._owner_filter(None))
        return self.poll(lambda conn: jobs_from_result(conn.execute(query)))

    @db_errors
    def job_ids(self, *, all_owners: bool = True) -> set[int]:
        query = select(self.job_table.c.id)
        if not all_owners:
            query = query.where(self._owner_filter(None))
        return self.poll(lambda conn: {int(r[0]) for r in conn.execute(query)})

    @db_errors
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

    @db_errors
    def runners(self, *, poll: bool = False) -> list[RunnerInfo]:
        """Registered runner processes with their heartbeats (``poll``: through ``poll``,
        for a caller that asks every few seconds)."""
        # operators read them through a view that cannot lock the table (schema.RUNNERS_VIEW)
        table = schema.runner if self.sees_all else schema.runners_view
        query = select(table).order_by(table.c.started)
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

    @db_errors
    def submit(
        self,
        name: str,
        what: What,
        schedule: Schedule,
        *,
        description: str = "",
        max_failures: int = DEFAULT_MAX_FAILURES,
        disabled: bool = False,
        first: datetime | None = None,
        session_role: bool = True,
    ) -> Job:
        """Define a new job (DBMS_JOB.SUBMIT). Validates everything before writing.

        ``first``: the first run, when not the schedule's first slot from now (an adopted
        event's first slot after its last run, even if that is past: it runs at once).
        ``session_role`` False (MySQL/MariaDB): the job's routines set no role, so it runs
        with the owner's own grants only, as the event it was adopted from did.
        """
        return defining.submit_job(
            self,
            name,
            what,
            schedule,
            description=description,
            max_failures=max_failures,
            disabled=disabled,
            first=first,
            session_role=session_role,
        )

    @db_errors
    def ensure_routines(self, job_ids: Iterable[int] | None = None) -> int:
        """Create the routines this account's own jobs need and lack (MySQL/MariaDB).

        For rows written by other means than submit, change and import (a job
        table from before owner-rights execution, a bulk INSERT): until then the
        runner refuses to run them. Another owner's jobs are left alone: only
        that owner's session can make routines that run with its rights.
        Returns how many routines were created.
        """
        self.check_writable()
        if not self.backend.has_accounts:  # SQLite: jobs run as they are
            return 0
        wanted_ids = None if job_ids is None else set(job_ids)
        jobs = [j for j in self.list_jobs() if wanted_ids is None or j.id in wanted_ids]
        return routines.install_missing(self.engine, jobs)

    @db_errors
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
        return defining.change_job(
            self,
            name,
            owner=owner,
            what=what,
            kind=kind,
            every=every,
            cron=cron,
            tz=tz,
            expr=expr,
            start=start,
            finish=finish,
            description=description,
            max_failures=max_failures,
            disabled=disabled,
        )

    # ------------------------------------------------------------------ alerts

    @db_errors
    def alert_of(self, name: str, *, owner: str | None = None) -> list[str] | None:
        """The job's alert targets (None: the database's default applies; [] none)."""
        job = self.get(name, owner=owner)
        with self.read() as conn:
            text_ = conn.execute(
                select(self.job_table.c.alert).where(self.job_table.c.id == job.id)
            ).scalar()
        return alerts.decode(text_)[0]

    @db_errors
    def set_alert(self, name: str, targets: list[str] | None, *, owner: str | None = None) -> Job:
        """Set where the job's alerts go (None: the database's default). Owner rules as
        for ``change`` (an operator reaches its own jobs only); a command target must be
        allowed for the job's owner where the account may read the allow-list (the
        runner checks again before every send)."""
        self.check_writable()
        checked = alerts.parse(targets) if targets else ([] if targets is not None else None)
        job = self.get(name, owner=owner)
        for t in checked or []:
            if alerts.is_command(t):
                self.backend.refuse_ungranted(job.owner, alerts.grant_name(t))
        with self.write() as conn:
            self.lock_row(conn, job.id)
            conn.execute(
                update(self.job_table)
                .where(self.job_table.c.id == job.id)
                .values(alert=alerts.encode(checked), updated=to_db(self.now()))
            )
        return self.get(name, owner=owner)

    @db_errors
    def alert_default(self) -> list[str]:
        """The database's default alert targets (jobtui_setting ``alert_default``)."""
        with self.read() as conn:
            return alerting.read_default(conn)

    @db_errors
    def set_alert_default(self, targets: list[str]) -> list[str]:
        """Set (or, with [], clear) the database's default targets: an admin's decision."""
        self.check_writable()
        checked = alerts.parse(targets) if targets else []
        s = schema.setting
        with self.write() as conn:
            conn.execute(s.delete().where(s.c.key == schema.ALERT_DEFAULT))
            if checked:
                conn.execute(
                    s.insert().values(key=schema.ALERT_DEFAULT, value=alerts.encode(checked))
                )
        return checked

    @db_errors
    def remove(self, name: str, *, owner: str | None = None, wait: float = 10.0) -> Job:
        """Remove a job (DBMS_JOB.REMOVE); its run log stays.

        A job whose run is in flight is not deleted under it: the run is aborted
        and the row marked ``remove_requested``; the runner deletes the row when
        it records that run's end, and only then is the name free (a submit of it
        meanwhile is refused). Waits up to ``wait`` seconds for that; the Job
        returned has ``remove_requested`` set when the removal is still pending.
        """
        return defining.remove_job(self, name, owner=owner, wait=wait)

    # ------------------------------------------------------------------ steering

    def _steer(self, name: str, owner: str | None, steer: steering.Steer) -> Job:
        """Lock the job's row, write what ``steer`` gives over it (``steering``)."""
        self.check_writable()
        job = self.get(name, owner=owner)
        now = self.now()
        with self.write() as conn:
            row = self.lock_row(conn, job.id)
            if row.remove_requested:
                raise removal_pending(name)
            values = steer(name, row, job_from_row(row), now)
            values["status"] = status_after(row, values)
            values["updated"] = to_db(now)
            conn.execute(
                update(self.job_table).where(self.job_table.c.id == job.id).values(**values)
            )
        return self.get(name, owner=owner)

    @db_errors
    def pause(self, name: str, *, owner: str | None = None) -> Job:
        """No new runs start while PAUSED; a run in flight finishes."""
        return self._steer(name, owner, steering.pause)

    @db_errors
    def resume(self, name: str, *, owner: str | None = None) -> Job:
        """Back on the schedule from the next slot (no burst of missed runs)."""
        return self._steer(name, owner, steering.resume)

    @db_errors
    def enable(self, name: str, *, owner: str | None = None) -> Job:
        """Enable a disabled, aborted or finished job; it runs from its next slot."""
        return self._steer(name, owner, steering.enable)

    @db_errors
    def disable(self, name: str, *, owner: str | None = None) -> Job:
        """No runs at all until enabled (a run in flight finishes)."""
        return self._steer(name, owner, steering.disable)

    @db_errors
    def abort(self, name: str, *, owner: str | None = None) -> Job:
        """Stop the run in flight (if any) and stop the schedule until resume/enable/run-now."""
        return self._steer(name, owner, steering.abort)

    @db_errors
    def run_now(self, name: str, *, owner: str | None = None) -> Job:
        """Ask a runner to run the job once, now, whatever its status (DBMS_JOB.RUN).

        Refused while the job is running: the runner would drop the request when
        the run in flight finishes, so the operator is told instead.
        """
        return self._steer(name, owner, steering.run_now)

    @db_errors
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
        return self._steer(name, owner, steering.broken(on, next_run, reason))

    # ------------------------------------------------------------------ schedules

    def check_expr_schedule(self, schedule: Schedule, now: datetime) -> None:
        """Evaluate an expr schedule once (as at submit) to prove it yields a later date."""
        expressions.check_expr_schedule(self, schedule, now)

    @db_errors
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
        statements, comments or semicolons). (``Backend.evaluate_expr``.)
        """
        return expressions.evaluate_expr(self, expr, now, conn=conn, job=job)

    def preview(self, job: Job, n: int = 5) -> list[datetime]:
        """The next ``n`` run times of a job (the console's preview, ``show``).

        Empty for a job that is paused, disabled, broken, aborted or finished:
        its schedule starts nothing until an operator acts (``halted_reason``).
        """
        return expressions.preview(self, job, n)

    @db_errors
    def preview_change(self, job: Job | None, schedule: Schedule, n: int = 5) -> list[datetime]:
        """The next ``n`` run times of ``job`` with ``schedule`` (a new job's with ``job``
        None), as ``preview`` lists them once ``change`` (or ``submit``) has written it:
        the edit form's preview, so that it agrees with ``show`` (empty for a paused,
        disabled or broken job; ``expressions.why_no_runs`` says why)."""
        return expressions.preview_change(self, job, schedule, n)

    @db_errors
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
        return expressions.preview_schedule(
            self, schedule, n, first=first, anchor=anchor, finished=finished
        )

    # ------------------------------------------------------------------ validation

    @db_errors
    def check_what(self, what: What, *, owner: str | None = None) -> None:
        """Validate what a job runs against this database (procedure exists, action registered
        and, where the account may read the allow-list, allowed to the job's owner)."""
        if what.kind == "action":
            actions.check_registered(what.target)
            self.backend.refuse_ungranted(owner or self.owner, what.target)
            return
        if what.kind == "call":
            schema_name, proc = split_procedure(what.target)
            self.backend.check_procedure(schema_name, proc, what.args)
            return
        if passes_job_number(what.target):
            raise InvalidInput(f"invalid --sql {what.target!r}: {JOB_PARAM_MESSAGE}")
        self._check_sql(what.target)

    def _check_sql(self, statement: str) -> None:
        """Compile the statement without running it (EXPLAIN on SQLite, PREPARE on MySQL)."""
        try:
            self.backend.check_sql(statement)
        except DBAPIError as exc:
            translated = translate_db_error(exc)
            if isinstance(translated, DatabaseUnavailable):
                raise translated from exc
            raise InvalidInput(
                f"invalid --sql: the database rejected it ({short_error(exc)})"
            ) from None

    # ------------------------------------------------------------------ export / import

    @db_errors
    def export(self, *, all_owners: bool = False) -> list[dict[str, Any]]:
        """Job definitions (not runtime state), in the shape ``import_jobs`` reads."""
        return transfer.export_jobs(self, all_owners=all_owners)

    @db_errors
    def import_jobs(self, data: Any) -> tuple[int, int]:
        """Create or change jobs from ``export`` output. All are validated before any is written.

        Jobs are imported for the connecting owner. Returns (created, changed).
        """
        return transfer.import_jobs(self, data)

    # ------------------------------------------------------------------ internals

    def lock_row(self, conn: Connection, job_id: int) -> Row[Any]:
        """The job's row, locked for this transaction's write (JobNotFound if it is gone)."""
        row = conn.execute(
            select(self.job_table).where(self.job_table.c.id == job_id).with_for_update()
        ).first()
        if row is None:
            raise JobNotFound(str(job_id))
        return row

    @db_errors
    def counts_by_status(self, *, all_owners: bool = True) -> dict[str, int]:
        query = select(self.job_table.c.status, func.count()).group_by(self.job_table.c.status)
        if not all_owners:
            query = query.where(self._owner_filter(None))
        with self.read() as conn:
            return {str(s): int(n) for s, n in conn.execute(query)}

    @db_errors
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
        (the runners' housekeeping; the rest goes next time). One pruner at a time
        (``Backend.prune_lock``; on MySQL/MariaDB the named lock
        ``retention.prune_lock_name``): when another holds it, this returns 0 at once
        (``wait`` 0, the runners) or raises a JobtuiError (exit 1) after ``wait`` seconds.
        Ages count back from ``now`` (default: the store's clock).
        """
        return prune_run_log(
            self,
            keep=keep,
            job_id=job_id,
            keep_days=keep_days,
            keep_error_days=keep_error_days,
            dry_run=dry_run,
            batch=batch,
            max_batches=max_batches,
            wait=wait,
            now=now,
        )
