"""Retention of the run log: how much of it to keep, and pruning what is over.

``JobStore.prune_runs`` (``jobtui prune``) and the runners' housekeeping prune
with the same ``Retention``; one pruner at a time (on MySQL/MariaDB, the
backend's prune lock, ``prune_lock_name``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import and_, case, delete, func, not_, or_, select

from jobtui.core import claims, schema
from jobtui.core.errors import InvalidInput, JobtuiError, PermissionDenied
from jobtui.core.model import Outcome
from jobtui.core.timeutil import aware, to_db

if TYPE_CHECKING:
    from jobtui.core.store import JobStore

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


def prune_run_log(
    store: JobStore,
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
    """``JobStore.prune_runs``: check the request, take the prune lock, prune."""
    store.check_writable()
    if not store.sees_all:
        raise PermissionDenied(
            f"pruning the run log needs an admin or runner account (roles "
            f"{schema.admin_role(store.schema_name)}, {schema.runner_role(store.schema_name)}; "
            "docs/privileges.md); account "
            f"{store.owner!r} is an operator"
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
    with store.backend.prune_lock(store.lock_key, wait) as got:
        if not got:
            if wait > 0:
                err = JobtuiError(
                    f"another process has been pruning the run log for over {wait:g} s "
                    "(a runner's housekeeping): try again later"
                )
                err.exit_code = 1
                raise err
            return 0
        return _prune(store, retention, job_id, dry_run, max_batches, now)


def _prune(
    store: JobStore,
    retention: Retention,
    job_id: int | None,
    dry_run: bool,
    max_batches: int | None,
    now: datetime | None,
) -> int:
    r = schema.run
    now = aware(now) if now is not None else store.now()
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
        with store.read() as conn:
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
            with store.read() as conn:
                total += int(conn.execute(select(func.count()).where(where)).scalar_one())
            continue
        while max_batches is None or batches < max_batches:

            def one_batch(where: Any = where) -> tuple[int, int]:
                with store.write() as conn:
                    ids = [
                        int(x[0])
                        for x in conn.execute(
                            select(r.c.id).where(where).order_by(r.c.id).limit(retention.batch)
                        )
                    ]
                    if not ids:
                        return 0, 0
                    res = conn.execute(
                        delete(r).where(r.c.id.in_(ids), r.c.outcome != Outcome.RUNNING.value)
                    )
                    return len(ids), res.rowcount or 0

            # a cluster's pruners on two nodes may meet (the prune lock is node-local
            # there): a batch that loses certification is read and deleted again
            found, gone = store.backend.retrying("pruning the run log", one_batch)
            total += gone
            batches += 1
            if found < retention.batch:
                break
    return total
