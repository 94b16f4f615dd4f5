"""The backend contract: what the store and the runners ask of a database.

Capabilities are class attributes (as harlequin's adapters and APScheduler's
SQLAlchemy store keep them); everything else is a method whose statements
differ between databases. Each implementation (mysql.py, sqlite.py) is the one
place its database's dialect is spoken.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from sqlalchemy.engine import Connection, Engine, RootTransaction

if TYPE_CHECKING:
    from jobtui.core import routines
    from jobtui.core.model import Job, What

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


class Backend:
    """One database's way of doing what jobtui needs."""

    #: "mysql" (MySQL and MariaDB) or "sqlite"
    name: ClassVar[str]
    #: Server accounts exist: owners, grants, roles, DEFINER routines, views per account.
    has_accounts: ClassVar[bool]
    #: Exclusivity rests on named locks (GET_LOCK) held by a connection; else on row leases.
    named_locks: ClassVar[bool]

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"

    # ---------------------------------------------------------------- connections

    # ---------------------------------------------------------------- store

    # ---------------------------------------------------------------- runners: claim and record

    def begin(self, conn: Connection, *, write: bool = True) -> RootTransaction:
        """Begin a transaction on ``conn`` (none open); a ``write`` one queues for the
        database's write lock at once where writers queue (SQLite: BEGIN IMMEDIATE)."""
        raise NotImplementedError

    def connection_id(self, conn: Connection) -> int | None:
        """The server's id of a runner's new connection (what KILL QUERY names), or None
        where there is none. Leaves no transaction open."""
        return None

    def reset_session(self, conn: Connection) -> None:
        """Give a runner's connection (no transaction open) back the session of a new
        one, so that nothing a run set reaches the next owner's claim or run."""

    def take_locks(self, conn: Connection, names: Sequence[str]) -> list[bool]:
        """Try once (no wait) to take each named lock on ``conn``: which ones it now holds
        (all, where exclusivity is leases: there is nothing to take)."""
        return [True] * len(names)

    def release_locks(self, conn: Connection, names: Sequence[str]) -> None:
        """Release the named locks ``conn`` holds (nothing where exclusivity is leases)."""

    def lock_holder(self, conn: Connection, name: str) -> int | None:
        """The connection id holding the named lock, or None (free, or no named locks)."""
        return None

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
        """Claim, in one transaction on ``conn`` (the executing connection), the jobs of
        ``job_ids`` that nobody else holds and ``plan`` finds eligible; return the runs
        ``plan`` made for them.

        Each row is locked and read, mapped to a Job, and planned; a row with a problem
        (jobtui.core.rows) is never planned: it goes to ``problems`` (id -> problem)
        unless it is running. The claimed rows get ``plan``'s values (only while still
        idle), their run-log rows are inserted (UNIQUE slot: a duplicate raises). Named
        locks taken go to ``locked`` while held (the caller releases them after a
        failure); those of jobs not claimed are released before returning.
        """
        raise NotImplementedError

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
    ) -> dict[int, routines.Verdict]:
        """The verified routine of each call/sql job (job id -> verdict), on the batch's
        own connection; empty where jobs do not run as their owner's routines."""
        return {}

    def run_statement(
        self,
        conn: Connection,
        what: What,
        *,
        routine: routines.Verdict | None,
        schema_name: str,
    ) -> None:
        """Run a call/sql job's statement on ``conn`` inside the caller's transaction,
        reading every row it returns."""
        raise NotImplementedError

    def rollback_driver(self, raw: Any) -> None:
        """Roll back what a run left on the driver's own connection (no SQLAlchemy
        transaction open on it)."""
        raise NotImplementedError

    def interrupt(self, engine: Engine, conn: Connection | None, cid: int | None) -> None:
        """Stop the statement running now on a runner's connection ``conn`` (server id
        ``cid``), from another thread."""
        raise NotImplementedError

    # ---------------------------------------------------------------- runners: heartbeats and reaping
