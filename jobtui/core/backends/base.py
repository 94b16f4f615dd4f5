"""The backend contract: what the store and the runners ask of a database.

Capabilities are class attributes (as harlequin's adapters and APScheduler's
SQLAlchemy store keep them); everything else is a method whose statements
differ between databases. Each implementation (mysql/backend.py, sqlite/backend.py) is the one
place its database's dialect is spoken.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar

from sqlalchemy import Table
from sqlalchemy.engine import URL, Connection, Engine, RootTransaction

from jobtui.core import bookkeeping, schema
from jobtui.core.db import parse_url
from jobtui.core.errors import InvalidInput

if TYPE_CHECKING:
    from collections.abc import Iterable

    from jobtui.core import owner_code
    from jobtui.core.accounts import Rights
    from jobtui.core.model import Job, Schedule, What


T = TypeVar("T")


class Poller(Protocol):
    """Runs a caller's query again and again (the console, once a second): ``Backend.poller``."""

    def run(self, query: Callable[[Connection], T]) -> T:
        """Run ``query`` (one SELECT, its result read inside) and return what it returns."""
        ...

    def close(self) -> None:
        """Give back what the poller keeps (a connection); it may be used again after."""
        ...


#: Plans the claim of one locked, eligible-looking job row: ``(connection, row, Job,
#: lock name or None)`` -> ``(run, the job row's new values, its run-log rows)`` or None.
PlanClaim = Callable[
    [Connection, Any, "Job", "str | None"],
    "tuple[Any, dict[str, Any], list[dict[str, Any]]] | None",
]
#: The job row's new values once a run ended: ``(locked row, its Job, the caller's item)``
#: -> values, or None when the row is not the runner's any more.
FinishRow = Callable[[Any, "Job | None", Any], "dict[str, Any] | None"]
#: One run to record: (job id, slot as stored, the run row's outcome columns, caller's item).
RunOutcome = tuple[int, Any, dict[str, Any], Any]


class JobRoutines:
    """The routines a job runs as: an optional part of a backend (``Backend.job_routines``).

    This is its null form, for a database whose jobs run as they are (SQLite): nothing
    to create, hold or drop. MySQL/MariaDB's creates the owner's DEFINER routines in
    the owner's own session (backends/mysql/routines.py, docs/privileges.md).
    """

    #: Jobs run as routines of their own: a new row waits (next_run NULL) until they exist.
    present: ClassVar[bool] = False

    def needed(self, what: What, schedule: Schedule) -> bool:
        """Whether a job with this definition runs as routines of its own."""
        return False

    def install(
        self,
        job_id: int,
        what: What | None,
        schedule: Schedule | None,
        *,
        session_role: bool = True,
    ) -> tuple[list[Any], list[Any]]:
        """Create job ``job_id``'s routines for ``what`` and an expr ``schedule`` (either
        None: not given) in a session of the backend's engine (the owner's): (wanted,
        created). A refusal raises InvalidInput, nothing left behind."""
        return [], []

    def drop(
        self, job_id: int, *, keep: list[Any] | None = None, only: list[Any] | None = None
    ) -> None:
        """Drop the job's routines other than ``keep`` (or exactly ``only``); a failure is
        logged, never raised."""

    def drop_replaced(self, job_id: int, keep: list[Any], *, what: bool, expr: bool) -> None:
        """Drop the job's routines of the kinds a change replaced (``what``: its
        procedure, ``expr``: its expression's function) other than ``keep``."""

    def install_missing(self, jobs: Iterable[Job]) -> int:
        """Create the routines ``jobs`` need and lack; how many were created."""
        return 0


class SQLInterface:
    """What the runners tend of the SQL interface with DBMS_JOB's shape (docs/sql.md): an
    optional part of a backend (``Backend.sql_interface``).

    This is its null form, for a database without one (SQLite): no job is submitted
    through SQL, so none waits for a runner to give it its first slot, and no SQL
    session runs a job. MySQL/MariaDB's is ``mysql/sqlapi/interface.py``.
    """

    def unarmed(self, engine: Engine, now: datetime) -> list[int]:
        """The ids of cron jobs submitted through SQL that wait for their first slot as
        at ``now``: a plain read on a connection of ``engine``'s."""
        return []

    def arm(self, conn: Connection, job_id: int, now: datetime) -> bool:
        """Give unarmed cron job ``job_id`` its first slot, under its row lock, in the
        caller's transaction on ``conn`` (False: nothing to arm, or its row has a problem,
        which then marks it broken)."""
        return False

    def is_session(self, runner_id: str) -> bool:
        """Whether ``runner_id`` (a run's holder) is a SQL session's ``CALL run``, alive as
        long as it holds the job's named lock, rather than a runner."""
        return False


class Grants:
    """The grants that make an account a jobtui operator, admin or runner, and the Python
    actions its jobs may use: an optional part of a backend (``Backend.grants``).

    This is its null form, for a database without accounts (SQLite): nothing to grant,
    and asking for statements refuses. MySQL/MariaDB's builds the roles' GRANTs and
    the allow-list's rows (backends/mysql/grants.py, docs/privileges.md).
    """

    #: Accounts exist, so `jobtui grant` has statements to print.
    present: ClassVar[bool] = False

    def role_statements(self, kind: str, account: str, database: str) -> list[str]:
        """The statements that make ``account`` a jobtui ``kind`` (operator, admin or
        runner) of ``database``."""
        raise InvalidInput("this database has no accounts: there are no roles to grant")

    def action_statements(
        self,
        account: str,
        database: str,
        *,
        grant: Iterable[str] = (),
        revoke: Iterable[str] = (),
    ) -> list[str]:
        """The statements that allow (``grant``) or take back (``revoke``) action patterns
        for ``account``'s jobs."""
        raise InvalidInput(
            "this database has no accounts: every registered action is allowed to every job"
        )


class Backend(ABC):
    """One database's way of doing what jobtui needs."""

    #: "mysql" (MySQL and MariaDB) or "sqlite"
    name: ClassVar[str]
    #: Server accounts exist: owners, grants, roles, DEFINER routines, views per account.
    has_accounts: ClassVar[bool]
    #: Exclusivity rests on named locks (GET_LOCK) held by a connection; else on row leases.
    named_locks: ClassVar[bool]
    #: The admins' allow-list (``jobtui_action_grant``) binds each owner: an owner's own
    #: alert command runs only where a pattern allows it. Without accounts every job is
    #: the OS login's own and nobody is kept apart, so there is nobody to refuse.
    action_allow_list: ClassVar[bool] = False
    #: The server has its own scheduler's events (jobtui.core.events); else why not.
    has_events: ClassVar[bool] = True
    #: A Galera cluster (every node a primary): exclusivity by row leases certified at
    #: commit, a dead runner's statement killed on its node before its job is released.
    cluster: ClassVar[bool] = False
    #: Owner code (a job's routine, its expression) runs on a runner's second connection,
    #: the executor, apart from the bookkeeping's (jobtui.core.runner.session).
    separate_executor: ClassVar[bool] = False
    no_events: ClassVar[str] = ""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    @property
    def job_routines(self) -> JobRoutines:
        """The routines jobs run as (an optional part: ``JobRoutines``, null here)."""
        return JobRoutines()

    @property
    def sql_interface(self) -> SQLInterface:
        """The SQL interface's part in the runners' work (an optional part:
        ``SQLInterface``, null here)."""
        return SQLInterface()

    @property
    def grants(self) -> Grants:
        """The accounts' grants (an optional part: ``Grants``, null here)."""
        return Grants()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    # ---------------------------------------------------------------- connections

    @classmethod
    @abstractmethod
    def create_engine(cls, url: URL, *, pool_size: int) -> Engine:
        """An engine on ``url`` (validated by ``db.parse_url``) whose connections are set
        up as jobtui needs them (time zone, isolation, the pool)."""
        raise NotImplementedError

    @abstractmethod
    def begin(self, conn: Connection, *, write: bool = True) -> RootTransaction:
        """Begin a transaction on ``conn`` (none open); a ``write`` one queues for the
        database's write lock at once where writers queue (SQLite: BEGIN IMMEDIATE)."""
        raise NotImplementedError

    @abstractmethod
    def poller(self) -> Poller:
        """A new poller for a caller that asks again and again (``JobStore.poll``): as
        cheap a read as the database allows."""
        raise NotImplementedError

    # ---------------------------------------------------------------- store

    @abstractmethod
    def current_user(self) -> str:
        """The connecting account, the owner of the jobs it submits (the OS login where
        the database has no accounts)."""
        raise NotImplementedError

    @abstractmethod
    def schema_name(self) -> str:
        """The name of the database that holds the jobtui tables ("" where there is none)."""
        raise NotImplementedError

    @abstractmethod
    def readable_tables(self, owner: Callable[[], str]) -> tuple[Table, Table]:
        """The job and run tables this account reads: the tables (admin, runner) or the
        operators' views of their own rows; ``owner()`` names the account in a refusal
        (PermissionDenied when it may read neither)."""
        raise NotImplementedError

    def readable_runners(self, *, sees_all: bool) -> Table:
        """The runner table as this account reads it: the table itself, or (``sees_all``
        False, an operator) whatever this database gives operators instead."""
        return schema.runner  # a default: every account reads the table

    @abstractmethod
    def prune_lock(self, lock_key: Callable[[], str], wait: float) -> AbstractContextManager[bool]:
        """Hold the right to prune the run log for the ``with`` block: True when this
        process has it, False when another pruner held it for ``wait`` seconds.
        ``lock_key()`` is the key of the named locks' names, read only when needed."""
        raise NotImplementedError

    @abstractmethod
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
        """The raw value of the date expression ``expr`` as at ``now``, bounded in time
        (``owner_code.EXPR_TIMEOUT``) and size; with ``job``, the job's own expression
        (evaluated as its owner where routines exist, verified first in ``schema_name``).
        Errors are SQLAlchemy's (``timed_out`` tells a timeout) or RoutineRefused."""
        raise NotImplementedError

    @abstractmethod
    def timed_out(self, exc: BaseException) -> bool:
        """Whether ``exc`` is an evaluation stopped by ``evaluate_expr``'s time limit."""
        raise NotImplementedError

    @abstractmethod
    def check_sql(self, statement: str) -> None:
        """Compile ``statement`` without running it; the database's error (DBAPIError)
        when it rejects it."""
        raise NotImplementedError

    @abstractmethod
    def check_procedure(self, schema_name: str, procedure: str, args: Sequence[str]) -> None:
        """InvalidInput unless ``schema_name.procedure`` is a stored procedure this account
        sees, taking ``args`` as its IN arguments: as many, and each one its parameter's
        numeric type can take (``argtypes``), or unless the database has no procedures)."""
        raise NotImplementedError

    @abstractmethod
    def refuse_ungranted(self, account: str, action: str) -> None:
        """At submit/change: InvalidInput when the admins' allow-list of actions is
        readable and no pattern allows ``action`` to ``account`` (nothing to check
        where the database has no accounts)."""
        raise NotImplementedError

    @abstractmethod
    def check_action_granted(self, conn: Connection, job: Job) -> None:
        """Before an action job's run: ``actions.PermissionRefused`` unless the admins'
        allow-list lets the job's owner use it (every owner, every run; an allow-list
        the runner cannot read refuses too). Where there are no accounts, nothing."""
        raise NotImplementedError

    def finish_schema(self, conn: Connection) -> None:
        """Inside the baseline migration's transaction (``migrations``), after the tables
        and columns: what this database's tables need besides (may do nothing)."""
        return None  # a default: nothing to do

    def after_schema(self) -> None:
        """After ``migrations.upgrade``'s transactions: what lives beside the tables
        (keys, views; may do nothing)."""
        return None  # a default: nothing to do

    # ---------------------------------------------------------------- the server's events

    @abstractmethod
    def read_events(self, conn: Connection, schema: str | None) -> list[dict[str, Any]]:
        """The server's Event Scheduler events this account sees (of ``schema`` only when
        given), one dict per event (``mysql.events.read_events``'s columns); InvalidInput
        where the database has no events."""
        raise NotImplementedError

    def run_rights_problem(self, conn: Connection) -> str | None:
        """Why this account cannot run jobs here (None when it can, or when the database
        has no accounts): a pool it hosts would fail every run."""
        return None

    def server_time(self, conn: Connection) -> datetime | None:
        """The database server's clock (UTC, naive), or None where the database runs on
        this machine's clock (SQLite): ``jobtui doctor`` measures the skew."""
        return None

    def account_rights(self, conn: Connection, account: str | None) -> Rights | None:
        """The jobtui roles of ``account`` (None: the session's own), or None where the
        database has no accounts or this session may not read them."""
        return None

    def read_procedure_texts(
        self, conn: Connection, names: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], str | None]:
        """The text of each stored procedure (schema, name) that exists, None where this
        account may not read it; absent where there is no such procedure (or, as here,
        no procedures at all)."""
        return {}

    @abstractmethod
    def event_scheduler(self, conn: Connection) -> tuple[str, str]:
        """(the server's ``event_scheduler``: ON, OFF or DISABLED; its system time zone);
        InvalidInput where the database has no events."""
        raise NotImplementedError

    @abstractmethod
    def set_event_enabled(
        self, conn: Connection, schema: str, name: str, definer: str, enabled: bool
    ) -> None:
        """ALTER EVENT ``schema.name`` ENABLE or DISABLE, keeping its ``definer``
        (PermissionDenied when the account may not); InvalidInput where there are no
        events."""
        raise NotImplementedError

    # ---------------------------------------------------------------- runners: claim and record

    def connection_id(self, conn: Connection) -> int | None:
        """The server's id of a runner's new connection (what KILL QUERY names), or None
        where there is none. Leaves no transaction open."""
        return None

    def executor_session(self, conn: Connection, role: str | None) -> bool:
        """Narrow a runner's executor connection (new, or just reset) to ``role`` before
        owner code runs on it. Leaves no transaction open. False when the account does
        not hold the role (the connection keeps the account's default one)."""
        return True  # a default: nothing to narrow

    def reset_session(self, conn: Connection) -> None:
        """Give a runner's connection (no transaction open) back the session of a new
        one, so that nothing a run set reaches the next owner's claim or run."""
        return None  # a default: nothing to do

    def take_locks(self, conn: Connection, names: Sequence[str]) -> list[bool]:
        """Try once (no wait) to take each named lock on ``conn``: which ones it now holds
        (all, where exclusivity is leases: there is nothing to take)."""
        return [True] * len(names)

    def release_locks(self, conn: Connection, names: Sequence[str]) -> None:
        """Release the named locks ``conn`` holds (nothing where exclusivity is leases)."""
        return None  # a default: nothing to do

    def lock_holder(self, conn: Connection, name: str) -> int | None:
        """The connection id holding the named lock, or None (free, or no named locks)."""
        return None

    @abstractmethod
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
        """Foreground mode (``jobtui run NAME``): hold job ``job_id`` for this connection
        from now on. None when held (or the job is gone); else who holds it: (the job's
        name when read, else None; the holder, e.g. "runner X")."""
        raise NotImplementedError

    @abstractmethod
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
        """Claim, in one transaction on ``conn`` (the executing connection), the jobs of
        ``job_ids`` that nobody else holds and ``plan`` finds eligible; return the runs
        ``plan`` made for them.

        Each row is locked and read, mapped to a Job, and planned; a row with a problem
        (jobtui.core.row_checks) is never planned: it goes to ``problems`` (id -> problem)
        unless it is running. The claimed rows get ``plan``'s values (only while still
        idle), their run-log rows are inserted (UNIQUE slot: a duplicate raises). Named
        locks taken go to ``locked`` while held (the caller releases them after a
        failure); those of jobs not claimed are released before returning. ``busy``
        (MySQL/MariaDB): the jobs whose rows another transaction held locked, id -> (id,
        owner, name, next_run) as last committed; they are skipped, never waited for.
        """
        raise NotImplementedError

    def note_run(self, engine: Engine, values: dict[str, Any]) -> None:
        """Insert one run-log row of ``values`` (a report, e.g. a job the claims skip as
        busy) in a short transaction of its own; never waits long for a lock."""
        with engine.connect() as conn, self.begin(conn):
            conn.execute(schema.run.insert().values(**values))

    @abstractmethod
    def record_batch(
        self,
        conn: Connection,
        runner_id: str,
        outcomes: Sequence[RunOutcome],
        finish: FinishRow,
        *,
        release: Sequence[str],
    ) -> None:
        """Record ended runs, in one transaction on ``conn``: each run row (of
        ``runner_id``, running or lost) gets its outcome columns; each job row, locked
        and read, gets ``finish``'s values, or is deleted when its removal was asked
        while it ran (and ``finish`` found it ours). The named locks ``release`` are
        released inside the transaction, while the rows are still locked."""
        raise NotImplementedError

    @abstractmethod
    def recheck(
        self,
        own: Callable[[], Connection],
        engine: Engine,
        ids: Sequence[int],
        columns: Sequence[str],
    ) -> dict[int, Any]:
        """The job rows ``ids`` (those that exist) by id, ``columns`` of each, read at a
        run's slot: on the batch's own connection (``own()``) or one of ``engine``'s."""
        raise NotImplementedError

    def verify_routines(
        self, own: Callable[[], Connection], schema_name: str, jobs: Sequence[Job]
    ) -> dict[int, owner_code.Verdict]:
        """The verified routine of each call/sql job (job id -> verdict), on the batch's
        own connection; empty where jobs do not run as their owner's routines."""
        return {}

    @abstractmethod
    def run_statement(
        self,
        conn: Connection,
        what: What,
        *,
        routine: owner_code.Verdict | None,
        schema_name: str,
    ) -> None:
        """Run a call/sql job's statement on ``conn`` inside the caller's transaction,
        reading every row it returns."""
        raise NotImplementedError

    @abstractmethod
    def rollback_driver(self, raw: Any) -> None:
        """Roll back what a run left on the driver's own connection (no SQLAlchemy
        transaction open on it)."""
        raise NotImplementedError

    @abstractmethod
    def interrupt(self, engine: Engine, conn: Connection | None, cid: int | None) -> None:
        """Stop the statement running now on a runner's connection ``conn`` (server id
        ``cid``), from another thread."""
        raise NotImplementedError

    # ---------------------------------------------------------------- runners: heartbeats and reaping

    @abstractmethod
    def renew_leases(self, conn: Connection, runner_id: str, until: datetime) -> None:
        """Extend the claim leases runner ``runner_id`` holds to ``until``, on ``conn``
        in its heartbeat's transaction (nothing to do where named locks, held by the
        runner's connections, keep its jobs)."""
        raise NotImplementedError

    @abstractmethod
    def drop_leases(self, conn: Connection, runner_id: str) -> None:
        """Runner ``runner_id`` deregisters: free the leases of its jobs that are not
        running (a running job's lease runs out by itself), on ``conn`` in the
        deregistration's transaction; nothing to do without leases."""
        raise NotImplementedError

    @abstractmethod
    def reaping_lock(
        self, conn: Connection, lock_name: Callable[[], str]
    ) -> AbstractContextManager[bool]:
        """Around giving back a dead runner's job on ``conn``: True when nothing of the
        dead runner can still run it (on MySQL/MariaDB its named lock ``lock_name()``
        was free: taken here, released on leaving; an orphaned statement of the dead
        runner still holds it, and then it is False and the job stays taken); always
        True where exclusivity rests on leases (the reaper judged the runner dead)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- runners: starting and scheduling

    def pool_engine(self, url: str, pool_size: int) -> Engine:
        """The engine a runner pool claims, runs and records on: its own, with
        ``pool_size`` connections (its threads hold one each)."""
        return type(self).create_engine(parse_url(url), pool_size=pool_size)

    @abstractmethod
    def lock_scope(self, engine: Engine, lock_key: Callable[[], str]) -> tuple[str, str]:
        """What a pool's job lock names are made of (``lock_names.lock_name``), read once
        when it starts: the schema ``engine`` works in and the key ``lock_key()``; both
        empty where there are no named locks."""
        raise NotImplementedError

    def orphan_gone(self, node: str | None, cid: int | None, *, kill: bool = True) -> bool:
        """Whether a dead holder's executing connection ``cid`` (on ``node``, as claimed)
        is known gone, killed now if need be and ``kill`` (a cluster's, ``cluster``;
        ``kill=False``: a SQL session's ``CALL run``, alive while connected). Elsewhere the
        named lock (MySQL) or the holder's judged death (SQLite) decides: True."""
        return True

    def retrying(self, what: str, attempt: Callable[[], T]) -> T:
        """``attempt()`` (a transaction of its own); a Galera cluster tries it again after
        a certification abort or a node leaving (``galera.retried``)."""
        return attempt()

    def retried(self, what: str, attempt: Callable[[], T]) -> T:
        """``attempt()`` (a short transaction that comes again soon anyway: a heartbeat);
        a Galera cluster tries it again a few times, fewer than ``retrying``, after a
        certification abort or a node leaving (``galera.retried``)."""
        return attempt()

    def leased_elsewhere(self, row: Any, runner_id: str, now: datetime) -> bool:
        """Whether job ``row``'s claim lease (``locked_by``, ``locked_until``) belongs to
        another runner than ``runner_id`` and has not run out at ``now``: the scheduler
        pass leaves such a job alone (on every database, as it always did: jobtui writes
        leases on SQLite only, and a lease found elsewhere is still honoured)."""
        return bool(
            row.locked_by
            and row.locked_by != runner_id
            and row.locked_until is not None
            and (bookkeeping.row_time(row.locked_until) or now) > now
        )
