"""The store's reads: jobs, runs, runners (USER_JOBS, DBA_JOBS and the run log).

Each takes the store's context; ``JobStore`` offers them as its reads, and the
defining verbs read through them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import func, select

from jobtui.core.dberrors import db_errors
from jobtui.core.errors import InvalidInput, JobNotFound
from jobtui.core.model import Job, Outcome, Run
from jobtui.core.rowmap import job_from_row, jobs_from_result, run_from_row
from jobtui.core.store.context import StoreContext
from jobtui.core.timeutil import from_db, to_db


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


@db_errors
def get_job(ctx: StoreContext, name: str, *, owner: str | None = None) -> Job:
    """``JobStore.get``: one job by name (the caller's own unless ``owner`` is given)."""
    if not isinstance(name, str):
        raise InvalidInput(f"invalid job name {name!r}: expected text")
    with ctx.read() as conn:
        row = conn.execute(
            select(ctx.job_table).where(ctx.owner_filter(owner), ctx.job_table.c.name == name)
        ).first()
    if row is None:
        raise JobNotFound(name, owner)
    return job_from_row(row)


@db_errors
def job_by_id(ctx: StoreContext, job_id: int) -> Job | None:
    with ctx.read() as conn:
        row = conn.execute(select(ctx.job_table).where(ctx.job_table.c.id == job_id)).first()
    return job_from_row(row) if row else None


@db_errors
def list_jobs(
    ctx: StoreContext, *, all_owners: bool = False, owner: str | None = None
) -> list[Job]:
    """``JobStore.list_jobs``: the caller's jobs, or every owner's."""
    query = select(ctx.job_table).order_by(ctx.job_table.c.owner, ctx.job_table.c.name)
    if not all_owners:
        query = query.where(ctx.owner_filter(owner))
    with ctx.read() as conn:
        return jobs_from_result(conn.execute(query))


def jobs_changed_since(
    ctx: StoreContext, since: datetime | None, *, all_owners: bool = True
) -> list[Job]:
    """``JobStore.jobs_changed_since``: jobs whose row changed after ``since`` (polled)."""
    query = select(ctx.job_table)
    if since is not None:
        query = query.where(ctx.job_table.c.updated > to_db(since))
    else:
        # Every row: made into Jobs as the driver reads them (PyMySQL would otherwise
        # hold all the raw rows first: ~150 MB more at 100,000 jobs).
        query = query.execution_options(stream_results=True)
    if not all_owners:
        query = query.where(ctx.owner_filter(None))
    return ctx.poll(lambda conn: jobs_from_result(conn.execute(query)))


def first_jobs(ctx: StoreContext, limit: int, *, all_owners: bool = True) -> list[Job]:
    """``JobStore.first_jobs``: the first ``limit`` jobs by name, then owner (polled)."""
    c = ctx.job_table.c
    query = select(ctx.job_table).order_by(func.lower(c.name), c.owner, c.id).limit(limit)
    if not all_owners:
        query = query.where(ctx.owner_filter(None))
    return ctx.poll(lambda conn: jobs_from_result(conn.execute(query)))


def job_ids(ctx: StoreContext, *, all_owners: bool = True) -> set[int]:
    query = select(ctx.job_table.c.id)
    if not all_owners:
        query = query.where(ctx.owner_filter(None))
    return ctx.poll(lambda conn: {int(r[0]) for r in conn.execute(query)})


def runs(
    ctx: StoreContext,
    name: str | None = None,
    *,
    limit: int = 50,
    outcome: str | None = None,
    all_owners: bool = False,
    owner: str | None = None,
    job_id: int | None = None,
) -> list[Run]:
    """``JobStore.runs``: the run log, latest first."""
    if not isinstance(limit, int) or limit < 1 or limit > 100_000:
        raise InvalidInput(f"invalid --limit {limit!r}: expected a whole number from 1 to 100000")
    r = ctx.run_table
    query = select(r).order_by(r.c.scheduled_for.desc(), r.c.id.desc()).limit(limit)
    if not all_owners:
        query = query.where(r.c.owner == (owner or ctx.owner))
    if name is not None:
        if job_id is None:
            job_id = get_job(ctx, name, owner=owner).id
        query = query.where(r.c.job_id == job_id)
    elif job_id is not None:
        query = query.where(r.c.job_id == job_id)
    if outcome is not None:
        try:
            Outcome(outcome)
        except ValueError:
            accepted = ", ".join(o.value for o in Outcome)
            raise InvalidInput(f"invalid outcome {outcome!r}: accepted are {accepted}") from None
        query = query.where(r.c.outcome == outcome)
    with ctx.read() as conn:
        return [run_from_row(row) for row in conn.execute(query)]


def runners(ctx: StoreContext, *, poll: bool = False) -> list[RunnerInfo]:
    """``JobStore.runners``: registered runner processes with their heartbeats."""
    table = ctx.backend.readable_runners(sees_all=ctx.sees_all)
    query = select(table).order_by(table.c.started)
    if poll:
        rows = ctx.poll(lambda conn: conn.execute(query).all())
    else:
        with ctx.read() as conn:
            rows = conn.execute(query).all()
    return [
        RunnerInfo(
            id=r.id,
            name=r.name,
            host=r.host,
            pid=r.pid,
            threads=r.threads,
            connection_id=r.connection_id,
            started=from_db(r.started) or ctx.now(),
            heartbeat=from_db(r.heartbeat) or ctx.now(),
            stopping=bool(r.stopping),
        )
        for r in rows
    ]


def counts_by_status(ctx: StoreContext, *, all_owners: bool = True) -> dict[str, int]:
    query = select(ctx.job_table.c.status, func.count()).group_by(ctx.job_table.c.status)
    if not all_owners:
        query = query.where(ctx.owner_filter(None))
    with ctx.read() as conn:
        return {str(s): int(n) for s, n in conn.execute(query)}
