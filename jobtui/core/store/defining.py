"""Defining jobs: submit, change and remove (DBMS_JOB's SUBMIT, CHANGE, REMOVE) with their
checks, the row writes, and on MySQL/MariaDB the owner's routines each job runs as
(created in the owner's session before a row may name them, dropped after).

``JobStore.submit``, ``change`` and ``remove`` are these functions.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import delete, insert, update
from sqlalchemy.exc import IntegrityError

from jobtui.core import row_checks, schema
from jobtui.core.errors import InvalidInput, JobNotFound, PermissionDenied
from jobtui.core.jobdefs import JobChange, JobSpec, rearmed, removal_pending
from jobtui.core.model import Intent, Job, Schedule
from jobtui.core.rowmap import job_from_row, new_job_values, schedule_columns, what_columns
from jobtui.core.schedules import first_run
from jobtui.core.store import expressions, reading, validation
from jobtui.core.store.context import StoreContext
from jobtui.core.timeutil import to_db
from jobtui.core.transitions import status_after


def submit_job(ctx: StoreContext, spec: JobSpec) -> Job:
    """``JobStore.submit``."""
    ctx.check_writable()
    spec = spec.checked()
    name, what, schedule = spec.name, spec.what, spec.schedule
    validation.check_what(ctx, what)
    now = ctx.now()
    expressions.check_expr_schedule(ctx, schedule, now)
    next_run = first_run(schedule, now) if spec.first is None else spec.first
    values = new_job_values(
        owner=ctx.owner,
        name=name,
        what=what,
        schedule=schedule,
        description=spec.description,
        max_failures=spec.max_failures,
        disabled=spec.disabled,
        next_run=next_run,
        now=now,
    )
    # On MySQL/MariaDB the job runs as routines its owner's session creates once the
    # row has its id: until then next_run stays NULL, so no runner claims it.
    held = ctx.backend.job_routines.needed(what, schedule)
    if held:
        values["next_run"] = None
    values = schema.new_row_values(values, through_view=not ctx.sees_all)
    try:
        with ctx.write() as conn:
            conn.execute(insert(ctx.job_table).values(**values))
    except IntegrityError:
        try:
            existing = reading.get_job(ctx, name)
        except JobNotFound:
            existing = None
        if existing is not None and existing.remove_requested:
            raise removal_pending(name) from None
        raise InvalidInput(
            f"job {name!r} already exists for owner {ctx.owner!r}: use `jobtui change` "
            "to alter it or choose another name"
        ) from None
    if held:
        job = reading.get_job(ctx, name)
        try:
            ctx.backend.job_routines.install(job.id, what, schedule, session_role=spec.session_role)
        except BaseException:
            with ctx.write() as conn:
                conn.execute(delete(ctx.job_table).where(ctx.job_table.c.id == job.id))
            raise
        with ctx.write() as conn:
            conn.execute(
                update(ctx.job_table)
                .where(ctx.job_table.c.id == job.id)
                .values(next_run=to_db(next_run))
            )
    return reading.get_job(ctx, name)


def change_job(ctx: StoreContext, name: str, change: JobChange, *, owner: str | None) -> Job:
    """``JobStore.change``."""
    ctx.check_writable()
    current = reading.get_job(ctx, name, owner=owner)
    if current.schedule is row_checks.PLACEHOLDER_SCHEDULE and change.window_only:
        # What the row's schedule was cannot be read (its problem says why): a window
        # or time zone alone would be merged into the placeholder, not into it.
        raise InvalidInput(
            f"job {current.name!r} has a problem ({current.problem}): give its whole "
            "schedule (--every, --cron, --expr or --once) to replace it"
        )
    what = change.what
    if what is not None:
        validation.check_what(ctx, what, owner=current.owner)
    change = change.checked()
    schedule = change.schedule_over(current.schedule)
    schedule_changed = schedule != current.schedule
    expr_changed = schedule.kind == "expr" and (
        current.schedule.kind != "expr" or schedule.expr != current.schedule.expr
    )
    # A job runs as its owner's routines: what it runs is the owner's alone to give.
    foreign = ctx.backend.job_routines.present and current.owner != ctx.owner
    if foreign and ((what is not None and what != current.what) or expr_changed):
        raise PermissionDenied(
            f"permission denied: only the owner's own session can change what job {name!r} "
            f"runs or its --expr, because the job runs with the owner's rights "
            f"({current.owner}); account {ctx.owner!r} may change its other settings, "
            "steer it or remove it"
        )
    now = ctx.now()
    if expr_changed:  # a stored expression is never evaluated again (it may be foreign)
        expressions.check_expr_schedule(ctx, schedule, now)
    # MySQL/MariaDB: routines only for what the owner gives here (a definition written
    # into the row by other means must not become the owner's by a schedule change);
    # the new ones first, so the row never names a routine that does not exist.
    give_what = what is not None
    give_expr = schedule.kind == "expr" and (change.expr is not None or expr_changed)
    drop_expr = current.schedule.kind == "expr" and (give_expr or schedule.kind != "expr")
    job_routines = ctx.backend.job_routines  # none on SQLite: its jobs run as they are
    created: list[Any] = []
    want: list[Any] = []
    if not foreign and (give_what or give_expr):
        want, created = job_routines.install(
            current.id,
            what if give_what else None,
            schedule if give_expr else None,
        )
    try:
        _change_row(ctx, current, change, schedule if schedule_changed else None, now)
    except BaseException:
        if created:
            job_routines.drop(current.id, only=created)
        raise
    if not foreign and (give_what or drop_expr):
        job_routines.drop_replaced(current.id, want, what=give_what, expr=drop_expr)
    return reading.get_job(ctx, name, owner=owner)


def _change_row(
    ctx: StoreContext, current: Job, change: JobChange, schedule: Schedule | None, now: datetime
) -> None:
    """Write ``change`` over the job's locked row (``schedule``: the new one, if it is)."""
    with ctx.write() as conn:
        row = ctx.lock_row(conn, current.id)
        if row.remove_requested:
            raise removal_pending(current.name)
        job = job_from_row(row)
        values: dict[str, Any] = {"updated": to_db(now)}
        if change.what is not None:
            values.update(what_columns(change.what))
        if change.description is not None:
            values["description"] = change.description
        if change.max_failures is not None:
            values["max_failures"] = change.max_failures
        if change.disabled is not None:
            values["intent"] = (Intent.DISABLED if change.disabled else Intent.ENABLED).value
        if schedule is not None:
            values.update(schedule_columns(schedule))
            # the same as the edit form's preview (jobdefs.as_changed)
            anchor, next_run, values["phase"] = rearmed(schedule, row.phase, now)
            values["schedule_anchor"] = to_db(anchor)
            values["next_run"] = to_db(next_run)
        # the intent and broken flag as read (a value that does not validate reads
        # as DISABLED, broken), running and phase as they are in the row
        values["status"] = status_after(row, {"intent": job.intent, "broken": job.broken, **values})
        conn.execute(update(ctx.job_table).where(ctx.job_table.c.id == job.id).values(**values))


def remove_job(ctx: StoreContext, name: str, *, owner: str | None, wait: float) -> Job:
    """``JobStore.remove``."""
    ctx.check_writable()
    job = reading.get_job(ctx, name, owner=owner)
    removed = replace(job, remove_requested=False)
    deadline = time.monotonic() + wait
    if _remove_or_mark(ctx, job):
        return _removed(ctx, removed)
    while time.monotonic() < deadline:
        time.sleep(0.1)
        current = reading.job_by_id(ctx, job.id)
        if current is None:  # the runner deleted it when it recorded the run's end
            return _removed(ctx, removed)
        if not current.running and _remove_or_mark(ctx, current):
            # ended without a runner to delete it (reaped, or an old runner)
            return _removed(ctx, removed)
    return replace(reading.job_by_id(ctx, job.id) or job, remove_requested=True)


def _removed(ctx: StoreContext, job: Job) -> Job:
    """The row is gone: its routines go too (MySQL/MariaDB; best effort)."""
    ctx.backend.job_routines.drop(job.id)
    return job


def _remove_or_mark(ctx: StoreContext, job: Job) -> bool:
    """Delete the job's row if no run is in flight (True); else abort the run and mark
    the row ``remove_requested`` (False)."""
    now = ctx.now()
    with ctx.write() as conn:
        try:
            row = ctx.lock_row(conn, job.id)
        except JobNotFound:
            return True
        if not row.running:
            conn.execute(delete(ctx.job_table).where(ctx.job_table.c.id == job.id))
            return True
        if not row.remove_requested or not row.abort_requested:
            conn.execute(
                update(ctx.job_table)
                .where(ctx.job_table.c.id == job.id)
                .values(
                    remove_requested=True,
                    abort_requested=True,
                    run_now=False,
                    phase="ABORTED",
                    status=status_after(row, {"running": True, "phase": "ABORTED"}),
                    updated=to_db(now),
                )
            )
    return False
