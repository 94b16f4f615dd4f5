"""Pruning the run log down to a ``Retention`` (``JobStore.prune_runs``, ``jobtui prune``,
the runners' housekeeping), under the prune lock: one pruner at a time.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, case, delete, func, not_, or_, select

from jobtui.core import accounts, schema
from jobtui.core.errors import InvalidInput, JobtuiError, PermissionDenied
from jobtui.core.model import Outcome
from jobtui.core.retention import Retention
from jobtui.core.store.context import StoreContext
from jobtui.core.timeutil import aware, to_db

# What ``prune_runs`` keeps when given no Retention (``jobtui prune``'s defaults differ:
# cli.py): each job's 1000 newest runs of each class, no age limit.
PRUNE_DEFAULT = Retention(keep_runs=1000, keep_days=None, keep_error_days=None)


def prune_retention(limits: Mapping[str, Any]) -> Retention:
    """``PRUNE_DEFAULT`` with ``limits`` (Retention's fields; ``keep`` is ``keep_runs``)."""
    fields = {("keep_runs" if key == "keep" else key): value for key, value in limits.items()}
    return replace(PRUNE_DEFAULT, **fields)


def prune_run_log(
    ctx: StoreContext,
    retention: Retention | Mapping[str, Any],
    *,
    job_id: int | None = None,
    dry_run: bool = False,
    max_batches: int | None = None,
    wait: float = 0.0,
    now: datetime | None = None,
) -> int:
    """``JobStore.prune_runs``: check the request, take the prune lock, prune (``retention``,
    or ``prune_retention`` of the limits given)."""
    ctx.check_writable()
    if not ctx.sees_all:
        raise PermissionDenied(
            f"pruning the run log needs an admin or runner account (roles "
            f"{accounts.admin_role(ctx.schema_name)}, {accounts.runner_role(ctx.schema_name)}; "
            "docs/privileges.md); account "
            f"{ctx.owner!r} is an operator"
        )
    if not isinstance(retention, Retention):
        retention = prune_retention(retention)
    if max_batches is not None and (
        isinstance(max_batches, bool) or not isinstance(max_batches, int) or max_batches < 1
    ):
        raise InvalidInput(f"invalid max_batches {max_batches!r}: a whole number, 1 or more")
    if job_id is not None and (isinstance(job_id, bool) or not isinstance(job_id, int)):
        raise InvalidInput(f"invalid job_id {job_id!r}: a whole number")
    with ctx.backend.prune_lock(ctx.lock_key, wait) as got:
        if not got:
            if wait > 0:
                err = JobtuiError(
                    f"another process has been pruning the run log for over {wait:g} s "
                    "(a runner's housekeeping): try again later"
                )
                err.exit_code = 1
                raise err
            return 0
        return _prune(ctx, retention, job_id, dry_run, max_batches, now)


def _prune(
    ctx: StoreContext,
    retention: Retention,
    job_id: int | None,
    dry_run: bool,
    max_batches: int | None,
    now: datetime | None,
) -> int:
    r = schema.run
    now = aware(now) if now is not None else ctx.now()
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
        with ctx.read() as conn:
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
            with ctx.read() as conn:
                total += int(conn.execute(select(func.count()).where(where)).scalar_one())
            continue
        while max_batches is None or batches < max_batches:

            def one_batch(where: Any = where) -> tuple[int, int]:
                with ctx.write() as conn:
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
            found, gone = ctx.backend.retrying("pruning the run log", one_batch)
            total += gone
            batches += 1
            if found < retention.batch:
                break
    return total
