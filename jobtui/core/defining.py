"""Defining jobs: submit, change and remove (DBMS_JOB's SUBMIT, CHANGE, REMOVE) with their
checks, the row writes, and on MySQL/MariaDB the owner's routines each job runs as
(created in the owner's session before a row may name them, dropped after).

``JobStore.submit``, ``change`` and ``remove`` are these functions.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, insert, update
from sqlalchemy.exc import IntegrityError

from jobtui.core import routines, schema
from jobtui.core import rows as rows_
from jobtui.core.errors import InvalidInput, JobNotFound, PermissionDenied
from jobtui.core.jobdefs import (
    UNSET,
    check_description,
    check_max_failures,
    merge_schedule,
    rearmed,
    removal_pending,
)
from jobtui.core.model import Intent, Job, Schedule, What, check_job_name
from jobtui.core.rowmap import job_from_row, new_job_values, schedule_columns, what_columns
from jobtui.core.schedules import check_schedule, first_run
from jobtui.core.timeutil import to_db
from jobtui.core.transitions import status_after

if TYPE_CHECKING:
    from jobtui.core.store import JobStore


def submit_job(
    store: JobStore,
    name: str,
    what: What,
    schedule: Schedule,
    *,
    description: str,
    max_failures: int,
    disabled: bool,
    first: datetime | None = None,
    session_role: bool = True,
) -> Job:
    """``JobStore.submit``."""
    store.check_writable()
    check_job_name(name)
    schedule = check_schedule(schedule)
    description = check_description(description)
    max_failures = check_max_failures(max_failures)
    store.check_what(what)
    now = store.now()
    store.check_expr_schedule(schedule, now)
    next_run = first_run(schedule, now) if first is None else first
    values = new_job_values(
        owner=store.owner,
        name=name,
        what=what,
        schedule=schedule,
        description=description,
        max_failures=max_failures,
        disabled=disabled,
        next_run=next_run,
        now=now,
    )
    # On MySQL/MariaDB the job runs as routines its owner's session creates once the
    # row has its id: until then next_run stays NULL, so no runner claims it.
    held = store.backend.has_accounts and bool(routines.wanted(0, what, schedule, None))
    if held:
        values["next_run"] = None
    values = schema.new_row_values(values, through_view=not store.sees_all)
    try:
        with store.write() as conn:
            conn.execute(insert(store.job_table).values(**values))
    except IntegrityError:
        try:
            existing = store.get(name)
        except JobNotFound:
            existing = None
        if existing is not None and existing.remove_requested:
            raise removal_pending(name) from None
        raise InvalidInput(
            f"job {name!r} already exists for owner {store.owner!r}: use `jobtui change` "
            "to alter it or choose another name"
        ) from None
    if held:
        job = store.get(name)
        try:
            routines.install_for_job(
                store.engine, job.id, what, schedule, session_role=session_role
            )
        except BaseException:
            with store.write() as conn:
                conn.execute(delete(store.job_table).where(store.job_table.c.id == job.id))
            raise
        with store.write() as conn:
            conn.execute(
                update(store.job_table)
                .where(store.job_table.c.id == job.id)
                .values(next_run=to_db(next_run))
            )
    return store.get(name)


def change_job(
    store: JobStore,
    name: str,
    *,
    owner: str | None,
    what: What | None,
    kind: str | None,
    every: float | str | None,
    cron: str | None,
    tz: str | None,
    expr: str | None,
    start: datetime | None,
    finish: datetime | None,
    description: str | None,
    max_failures: int | None,
    disabled: bool | None,
) -> Job:
    """``JobStore.change``."""
    store.check_writable()
    current = store.get(name, owner=owner)
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
        store.check_what(what, owner=current.owner)
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
    foreign = store.backend.has_accounts and current.owner != store.owner
    if foreign and ((what is not None and what != current.what) or expr_changed):
        raise PermissionDenied(
            f"permission denied: only the owner's own session can change what job {name!r} "
            f"runs or its --expr, because the job runs with the owner's rights "
            f"({current.owner}); account {store.owner!r} may change its other settings, "
            "steer it or remove it"
        )
    now = store.now()
    if expr_changed:  # a stored expression is never evaluated again (it may be foreign)
        store.check_expr_schedule(schedule, now)
    # MySQL/MariaDB: routines only for what the owner gives here (a definition written
    # into the row by other means must not become the owner's by a schedule change);
    # the new ones first, so the row never names a routine that does not exist.
    give_what = what is not None
    give_expr = schedule.kind == "expr" and (expr is not None or expr_changed)
    drop_expr = current.schedule.kind == "expr" and (give_expr or schedule.kind != "expr")
    routines_ = store.backend.has_accounts and not foreign
    created: list[routines.Routine] = []
    want: list[routines.Routine] = []
    if routines_ and (give_what or give_expr):
        want, created = routines.install_for_job(
            store.engine,
            current.id,
            what if give_what else None,
            schedule if give_expr else None,
        )
    try:
        _change_row(
            store,
            current,
            what,
            description,
            max_failures,
            disabled,
            schedule,
            schedule_changed,
            now,
        )
    except BaseException:
        if created:
            routines.drop_for_job(store.engine, current.id, only=created)
        raise
    if routines_ and (give_what or drop_expr):
        replaced = ([routines.PROCEDURE] if give_what else []) + (
            [routines.FUNCTION] if drop_expr else []
        )
        routines.drop_for_job(store.engine, current.id, keep=want, types=replaced)
    return store.get(name, owner=owner)


def _change_row(
    store: JobStore,
    current: Job,
    what: What | None,
    description: str | None,
    max_failures: int | None,
    disabled: bool | None,
    schedule: Schedule,
    schedule_changed: bool,
    now: datetime,
) -> None:
    with store.write() as conn:
        row = store.lock_row(conn, current.id)
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
        if disabled is not None:
            values["intent"] = (Intent.DISABLED if disabled else Intent.ENABLED).value
        if schedule_changed:
            values.update(schedule_columns(schedule))
            # the same as the edit form's preview (jobdefs.as_changed)
            anchor, next_run, values["phase"] = rearmed(schedule, row.phase, now)
            values["schedule_anchor"] = to_db(anchor)
            values["next_run"] = to_db(next_run)
        # the intent and broken flag as read (a value that does not validate reads
        # as DISABLED, broken), running and phase as they are in the row
        values["status"] = status_after(row, {"intent": job.intent, "broken": job.broken, **values})
        conn.execute(update(store.job_table).where(store.job_table.c.id == job.id).values(**values))


def remove_job(store: JobStore, name: str, *, owner: str | None, wait: float) -> Job:
    """``JobStore.remove``."""
    store.check_writable()
    job = store.get(name, owner=owner)
    removed = replace(job, remove_requested=False)
    deadline = time.monotonic() + wait
    if _remove_or_mark(store, job):
        return _removed(store, removed)
    while time.monotonic() < deadline:
        time.sleep(0.1)
        current = store.get_by_id(job.id)
        if current is None:  # the runner deleted it when it recorded the run's end
            return _removed(store, removed)
        if not current.running and _remove_or_mark(store, current):
            # ended without a runner to delete it (reaped, or an old runner)
            return _removed(store, removed)
    return replace(store.get_by_id(job.id) or job, remove_requested=True)


def _removed(store: JobStore, job: Job) -> Job:
    """The row is gone: its routines go too (MySQL/MariaDB; best effort)."""
    if store.backend.has_accounts:
        routines.drop_for_job(store.engine, job.id)
    return job


def _remove_or_mark(store: JobStore, job: Job) -> bool:
    """Delete the job's row if no run is in flight (True); else abort the run and mark
    the row ``remove_requested`` (False)."""
    now = store.now()
    with store.write() as conn:
        try:
            row = store.lock_row(conn, job.id)
        except JobNotFound:
            return True
        if not row.running:
            conn.execute(delete(store.job_table).where(store.job_table.c.id == job.id))
            return True
        if not row.remove_requested or not row.abort_requested:
            conn.execute(
                update(store.job_table)
                .where(store.job_table.c.id == job.id)
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
