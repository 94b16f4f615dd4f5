"""JobStore: the store's verbs and reads over one database (see the package's docstring)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Row, Table, select, text, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from jobtui.core import accounts, alerting, alerts, builtin_actions, migrations, schema
from jobtui.core.backends.base import Backend
from jobtui.core.backends.registry import make_engine
from jobtui.core.db import mask_url, resolve_url
from jobtui.core.dberrors import NO_SUCH_TABLE, PERMISSION_ERRORS, db_errors, error_code
from jobtui.core.errors import (
    DatabaseUnavailable,
    InvalidInput,
    JobtuiError,
    PermissionDenied,
    SchemaTooNew,
)
from jobtui.core.jobdefs import JobChange, JobSpec, removal_pending
from jobtui.core.model import Job, Run, Schedule, What
from jobtui.core.retention import DEFAULT_RETENTION, Retention
from jobtui.core.rowmap import job_from_row
from jobtui.core.store import defining, expressions, reading, steering, transfer, validation
from jobtui.core.store.context import StoreContext
from jobtui.core.store.pruning import prune_run_log
from jobtui.core.store.reading import RunnerInfo
from jobtui.core.timeutil import Clock, to_db, utcnow
from jobtui.core.transitions import status_after

T = TypeVar("T")


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
    # job runs with its owner's rights, as its owner's routine: jobtui/core/backends/mysql/routines.py).
    sql_owners: str = "admin"

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock = utcnow,
        read_only: bool = False,
        url: str | None = None,
    ) -> None:
        # what the store's helpers are handed (reading, defining, transfer, pruning ...)
        self.context = StoreContext(engine, clock=clock, read_only=read_only)
        self.url = url or engine.url.render_as_string(hide_password=False)
        self.upgraded: migrations.Upgrade | None = None  # what init() found and applied

    # ------------------------------------------------------------------ basics

    @property
    def engine(self) -> Engine:
        return self.context.engine

    @property
    def backend(self) -> Backend:
        return self.context.backend

    @property
    def clock(self) -> Clock:
        return self.context.clock

    @property
    def read_only(self) -> bool:
        return self.context.read_only

    @property
    def masked_url(self) -> str:
        return mask_url(self.url)

    def close(self) -> None:
        self.context.close()

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
        return self.context.job_table

    @property
    def run_table(self) -> Table:
        """``jobtui_run``, or an operator account's view of its own runs."""
        return self.context.run_table

    @property
    def sees_all(self) -> bool:
        """True for accounts that read the tables (admin, runner; SQLite), like DBA_JOBS."""
        return self.context.sees_all

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
                f"(role {accounts.admin_role(self.schema_name)}, docs/privileges.md); account "
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
        return self.context.owner

    @property
    def _owner(self) -> str | None:
        """The owner as read once (the context's), None before; setting it makes the
        store act as that owner (SQLite: as another login would)."""
        return self.context._owner

    @_owner.setter
    def _owner(self, value: str | None) -> None:
        self.context._owner = value

    @property
    def schema_name(self) -> str:
        """The jobtui database (``DATABASE()``) on MySQL/MariaDB; "" on SQLite."""
        return self.context.schema_name

    def lock_key(self) -> str:
        """The key of the named-lock names (``jobtui_secret``), read once per store
        (MySQL/MariaDB runner and admin accounts only: ``StoreContext.lock_key``)."""
        return self.context.lock_key()

    def now(self) -> datetime:
        return self.context.now()

    def check_writable(self) -> None:
        self.context.check_writable()

    def write(self) -> AbstractContextManager[Connection]:
        """A write transaction: BEGIN IMMEDIATE on SQLite, a plain transaction on MySQL."""
        return self.context.write()

    def read(self) -> AbstractContextManager[Connection]:
        return self.context.read()

    def poll(self, query: Callable[[Connection], T]) -> T:
        """Run ``query`` (one SELECT) for a caller that asks again and again (the console,
        once a second), as cheaply as the database allows (``StoreContext.poll``)."""
        return self.context.poll(query)

    def lock_row(self, conn: Connection, job_id: int) -> Row[Any]:
        """The job's row, locked for this transaction's write (JobNotFound if it is gone)."""
        return self.context.lock_row(conn, job_id)

    # ------------------------------------------------------------------ reading

    @db_errors
    def get(self, name: str, *, owner: str | None = None) -> Job:
        """One job by name (the caller's own unless ``owner`` is given)."""
        return reading.get_job(self.context, name, owner=owner)

    @db_errors
    def get_by_id(self, job_id: int) -> Job | None:
        return reading.job_by_id(self.context, job_id)

    @db_errors
    def list_jobs(self, *, all_owners: bool = False, owner: str | None = None) -> list[Job]:
        """The caller's jobs (USER_JOBS), or every owner's with ``all_owners`` (DBA_JOBS)."""
        return reading.list_jobs(self.context, all_owners=all_owners, owner=owner)

    @db_errors
    def jobs_changed_since(self, since: datetime | None, *, all_owners: bool = True) -> list[Job]:
        """Jobs whose row changed after ``since`` (all jobs when None): the console's refresh
        (through ``poll``)."""
        return reading.jobs_changed_since(self.context, since, all_owners=all_owners)

    @db_errors
    def first_jobs(self, limit: int, *, all_owners: bool = True) -> list[Job]:
        """The first ``limit`` jobs by name (then owner): the console's first screenful,
        shown before the whole table is read (through ``poll``)."""
        return reading.first_jobs(self.context, limit, all_owners=all_owners)

    @db_errors
    def job_ids(self, *, all_owners: bool = True) -> set[int]:
        return reading.job_ids(self.context, all_owners=all_owners)

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
        return reading.runs(
            self.context,
            name,
            limit=limit,
            outcome=outcome,
            all_owners=all_owners,
            owner=owner,
            job_id=job_id,
        )

    @db_errors
    def runners(self, *, poll: bool = False) -> list[RunnerInfo]:
        """Registered runner processes with their heartbeats (``poll``: through ``poll``,
        for a caller that asks every few seconds)."""
        return reading.runners(self.context, poll=poll)

    @db_errors
    def counts_by_status(self, *, all_owners: bool = True) -> dict[str, int]:
        return reading.counts_by_status(self.context, all_owners=all_owners)

    # ------------------------------------------------------------------ defining

    @db_errors
    def submit(
        self,
        spec: JobSpec | str,
        what: What | None = None,
        schedule: Schedule | None = None,
        **options: Any,
    ) -> Job:
        """Define a new job (DBMS_JOB.SUBMIT). Validates everything before writing.

        Takes a ``JobSpec``, or its fields (``submit(name, what, schedule, **options)``).
        """
        if not isinstance(spec, JobSpec):  # a name (checked as one: check_job_name)
            spec = JobSpec(spec, what, schedule, **options)  # type: ignore[arg-type]
        elif what is not None or schedule is not None or options:
            raise TypeError("submit takes a JobSpec or its fields, not both")
        return defining.submit_job(self.context, spec)

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
        job_routines = self.backend.job_routines
        if not job_routines.present:  # SQLite: jobs run as they are
            return 0
        wanted_ids = None if job_ids is None else set(job_ids)
        jobs = [j for j in self.list_jobs() if wanted_ids is None or j.id in wanted_ids]
        return job_routines.install_missing(jobs)

    @db_errors
    def change(
        self,
        name: str,
        change: JobChange | None = None,
        *,
        owner: str | None = None,
        **fields: Any,
    ) -> Job:
        """Alter a job (DBMS_JOB.CHANGE): only what ``change`` gives changes (or, without
        one, the ``JobChange`` fields given as keywords).

        A new schedule takes effect from its next slot, even while a run is in
        flight (the runner reads the row again when it finishes).
        """
        if change is None:
            change = JobChange(**fields)
        elif fields:
            raise TypeError("change takes a JobChange or its fields, not both")
        return defining.change_job(self.context, name, change, owner=owner)

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
        return defining.remove_job(self.context, name, owner=owner, wait=wait)

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
        expressions.check_expr_schedule(self.context, schedule, now)

    @db_errors
    def evaluate_expr(
        self,
        expr: str,
        now: datetime,
        *,
        conn: Connection | None = None,
        job: Job | None = None,
        run_conn: Connection | None = None,
    ) -> datetime | None:
        """Evaluate an expr schedule as the database would at ``now`` (NULL -> None).

        Bounded: at most ``owner_code.EXPR_TIMEOUT`` seconds (MySQL/MariaDB:
        ``SET STATEMENT max_statement_time``; SQLite: a progress-handler
        deadline), and the result must be a date-time; else InvalidInput.

        MySQL/MariaDB: ``SET @@timestamp`` makes NOW() return ``now`` for this
        session. With ``job`` (the runner) the expression is the job's own
        FUNCTION, verified on ``mysql.proc`` and run with its owner's rights;
        without, it runs in this session, with this account's rights (the
        owner's own check at submit, or a preview of its own schedule).
        SQLite: jobtui's NOW() function returns ``now`` on this thread. The
        expression was checked by ``schedules.check_expr`` (one expression, no
        statements, comments or semicolons). (``Backend.evaluate_expr``.) ``run_conn``:
        the runner's executor, where the function runs (verified on ``conn``).
        """
        return expressions.evaluate_expr(
            self.context, expr, now, conn=conn, job=job, run_conn=run_conn
        )

    def preview(self, job: Job, n: int = 5) -> list[datetime]:
        """The next ``n`` run times of a job (the console's preview, ``show``).

        Empty for a job that is paused, disabled, broken, aborted or finished:
        its schedule starts nothing until an operator acts (``halted_reason``).
        """
        return expressions.preview(self.context, job, n)

    @db_errors
    def preview_change(self, job: Job | None, schedule: Schedule, n: int = 5) -> list[datetime]:
        """The next ``n`` run times of ``job`` with ``schedule`` (a new job's with ``job``
        None), as ``preview`` lists them once ``change`` (or ``submit``) has written it:
        the edit form's preview, so that it agrees with ``show`` (empty for a paused,
        disabled or broken job; ``expressions.why_no_runs`` says why)."""
        return expressions.preview_change(self.context, job, schedule, n)

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
            self.context, schedule, n, first=first, anchor=anchor, finished=finished
        )

    # ------------------------------------------------------------------ validation

    @db_errors
    def check_what(self, what: What, *, owner: str | None = None) -> None:
        """Validate what a job runs against this database (procedure exists, action registered
        and, where the account may read the allow-list, allowed to the job's owner)."""
        validation.check_what(self.context, what, owner=owner)

    # ------------------------------------------------------------------ export / import

    @db_errors
    def export(self, *, all_owners: bool = False) -> list[dict[str, Any]]:
        """Job definitions (not runtime state), in the shape ``import_jobs`` reads."""
        return transfer.export_jobs(self.context, all_owners=all_owners)

    @db_errors
    def import_jobs(self, data: Any) -> tuple[int, int]:
        """Create or change jobs from ``export`` output. All are validated before any is written.

        Jobs are imported for the connecting owner. Returns (created, changed).
        """
        return transfer.import_jobs(self.context, data)

    def export_sql(self, *, all_owners: bool = False) -> tuple[str, int]:
        """``jobtui export --format sql``: the CALLs that recreate the jobs, and how many
        were left out (``transfer.export_sql``)."""
        return transfer.export_sql(self.context, all_owners=all_owners)

    # ------------------------------------------------------------------ pruning

    @db_errors
    def prune_runs(
        self,
        retention: Retention | None = None,
        *,
        job_id: int | None = None,
        dry_run: bool = False,
        max_batches: int | None = None,
        wait: float = 0.0,
        now: datetime | None = None,
        **limits: Any,
    ) -> int:
        """Delete old finished runs; return how many were (or, ``dry_run``, would be) deleted.

        What is kept is ``retention`` (``Retention``), or without one ``PRUNE_DEFAULT``
        with the ``limits`` given as keywords (``keep``, ``keep_days``,
        ``keep_error_days``, ``batch``: ``pruning.prune_retention``):

        - ``keep_runs``: each job keeps its ``keep_runs`` newest successful runs (ok,
          skipped) and, counted apart, as many newest error runs (failed, aborted, lost),
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
        if retention is not None and limits:
            raise TypeError("prune_runs takes a Retention or its limits, not both")
        return prune_run_log(
            self.context,
            retention if retention is not None else limits,
            job_id=job_id,
            dry_run=dry_run,
            max_batches=max_batches,
            wait=wait,
            now=now,
        )
