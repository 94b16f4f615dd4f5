"""The runner wing's statements, each named once: what the pool, the claimer, the
reaper and the abort watch read and write (SQLAlchemy Core, one text for every
database; what differs between databases is the backend's).

The hot path's prepared UPDATEs, which SQLite's claim and record share with the
claimer, are below the backends: ``jobtui.core.statements``. This module imports the
schema, the model and timeutil only.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Select, and_, case, delete, func, insert, or_, select, update

from jobtui.core import schema
from jobtui.core.model import Outcome
from jobtui.core.timeutil import to_db


def due(soon: datetime | None, limit: int, only_job: int | None) -> tuple[Select[Any], Select[Any]]:
    """The scheduler pass's two reads: the jobs due by ``soon`` (at most ``limit``), and the first
    next run after it."""
    j = schema.job
    eligible = and_(
        j.c.intent == "ENABLED",
        j.c.broken.is_(False),
        j.c.phase.notin_(["ABORTED", "FINISHED"]),
        j.c.next_run.is_not(None),
    )
    # Only the jobs due by `soon` (a busy pool would otherwise re-read every job
    # due within the next poll on each pass), and the earliest of the others.
    query = (
        select(
            j.c.id,
            j.c.owner,
            j.c.next_run,
            j.c.run_now,
            j.c.locked_by,
            j.c.locked_until,
            j.c.last_duration,
            # what a job never run yet is like (its owner's, same kind and target):
            # for the others not read, as targets may be long statements
            case((j.c.last_duration.is_(None), j.c.what_kind), else_=None).label("kind"),
            case((j.c.last_duration.is_(None), j.c.what_target), else_=None).label("target"),
        )
        .where(
            j.c.running.is_(False),
            or_(j.c.run_now.is_(True), and_(eligible, j.c.next_run <= soon)),
        )
        .order_by(j.c.run_now.desc(), j.c.next_run)
        # more than we can take: pools sharing a database pick different random ones
        .limit(limit)
    )
    later = select(func.min(j.c.next_run)).where(
        j.c.running.is_(False), eligible, j.c.next_run > soon
    )
    if only_job is not None:
        query = query.where(j.c.id == only_job)
        later = later.where(j.c.id == only_job)
    return query, later


# ---------------------------------------------------------------------- jobs


def lock_job(job_id: int) -> Select[Any]:
    """A job's whole row, locked (``FOR UPDATE``)."""
    j = schema.job
    return select(j).where(j.c.id == job_id).with_for_update()


def running_jobs_of(runner_id: str) -> Select[Any]:
    """The ids of the jobs runner ``runner_id`` holds running."""
    j = schema.job
    return select(j.c.id).where(j.c.running.is_(True), j.c.runner_id == runner_id)


def running_job_holders() -> Select[Any]:
    """The runners that hold a job running (distinct)."""
    j = schema.job
    return select(j.c.runner_id).where(j.c.running.is_(True)).distinct()


def job_holder(job_id: int) -> Select[Any]:
    """Who runs a job, as its claim recorded it: runner, node and connection."""
    j = schema.job
    return select(j.c.running, j.c.runner_id, j.c.runner_node, j.c.runner_connection_id).where(
        j.c.id == job_id
    )


def delete_job(job_id: int) -> Any:
    j = schema.job
    return delete(j).where(j.c.id == job_id)


def set_job(job_id: int, values: dict[str, Any]) -> Any:
    """``UPDATE jobtui_job SET <values> WHERE id = job_id`` (literal values)."""
    j = schema.job
    return update(j).where(j.c.id == job_id).values(**values)


# ---------------------------------------------------------------------- the run log


def running_run_holders() -> Select[Any]:
    """The runners a run-log row names as running a run now (distinct)."""
    r = schema.run
    return select(r.c.runner).where(r.c.outcome == Outcome.RUNNING.value).distinct()


def running_runs_of(runner_id: str) -> Select[Any]:
    """The run-log rows (``id``, ``job_id``, ``started``) runner ``runner_id`` runs."""
    r = schema.run
    return select(r.c.id, r.c.job_id, r.c.started).where(
        r.c.runner == runner_id, r.c.outcome == Outcome.RUNNING.value
    )


def mark_run_lost(run_id: int, values: dict[str, Any]) -> Any:
    """A running run-log row becomes ``values`` (lost), unless it ended meanwhile."""
    r = schema.run
    return update(r).where(r.c.id == run_id, r.c.outcome == Outcome.RUNNING.value).values(**values)


# ---------------------------------------------------------------------- the runner table


def insert_runner(values: dict[str, Any]) -> Any:
    return insert(schema.runner).values(**values)


def beat(runner_id: str, now: datetime, *, stopping: bool) -> Any:
    """A runner's heartbeat (and whether it is stopping)."""
    rn = schema.runner
    return update(rn).where(rn.c.id == runner_id).values(heartbeat=to_db(now), stopping=stopping)


def runner_members() -> Select[Any]:
    """The runner table as the share reads it: ``id``, ``name``, ``heartbeat``,
    ``stopping``."""
    rn = schema.runner
    return select(rn.c.id, rn.c.name, rn.c.heartbeat, rn.c.stopping)


def runner_liveness() -> Select[Any]:
    """The runner table as the reaper reads it: ``id``, ``heartbeat``, ``host``, ``pid``."""
    rn = schema.runner
    return select(rn.c.id, rn.c.heartbeat, rn.c.host, rn.c.pid)


def delete_runner(runner_id: str, *, silent_since: datetime | None = None) -> Any:
    """A runner's row; with ``silent_since``, only while its heartbeat is older."""
    rn = schema.runner
    stmt = delete(rn).where(rn.c.id == runner_id)
    if silent_since is not None:
        stmt = stmt.where(rn.c.heartbeat < to_db(silent_since))
    return stmt


# ---------------------------------------------------------------------- claiming


def job_names(job_ids: list[int]) -> Select[Any]:
    """``id``, ``owner``, ``name`` of the jobs."""
    j = schema.job
    return select(j.c.id, j.c.owner, j.c.name).where(j.c.id.in_(job_ids))


def lock_job_unless_locked(job_id: int) -> Select[Any]:
    """A job's whole row, locked, or nothing while another transaction holds it
    (``FOR UPDATE SKIP LOCKED``)."""
    j = schema.job
    return select(j).where(j.c.id == job_id).with_for_update(skip_locked=True)


def lock_jobs_unless_locked(job_ids: list[int]) -> Select[Any]:
    """The jobs' whole rows in id order, locked, leaving out those another transaction
    holds (``FOR UPDATE SKIP LOCKED``)."""
    j = schema.job
    query = select(j).where(j.c.id.in_(sorted(job_ids))).order_by(j.c.id)
    return query.with_for_update(skip_locked=True)


# ---------------------------------------------------------------------- aborts


def flagged_jobs(job_ids: list[int]) -> Select[Any]:
    """Of the jobs, those an operator aborted or removed: ``id``, ``abort_requested``,
    ``remove_requested``, ``runner_id``."""
    j = schema.job
    flagged = or_(j.c.abort_requested.is_(True), j.c.remove_requested.is_(True))
    return select(j.c.id, j.c.abort_requested, j.c.remove_requested, j.c.runner_id).where(
        j.c.id.in_(job_ids), flagged
    )


def count_jobs(job_ids: list[int]) -> Select[Any]:
    """How many of the jobs are still there."""
    j = schema.job
    return select(func.count()).where(j.c.id.in_(job_ids))


def present_jobs(job_ids: list[int]) -> Select[Any]:
    """The ids of the jobs that are still there."""
    j = schema.job
    return select(j.c.id).where(j.c.id.in_(job_ids))
