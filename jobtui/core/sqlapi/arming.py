"""Cron jobs submitted through SQL get their first slot from a runner.

SQL cannot compute a cron slot as croniter does, so ``CALL submit_job(...,
'cron ...', ...)`` (and ``CALL broken(job, FALSE, NULL)`` of a cron job) leaves
``next_run`` NULL in phase ENABLED. A runner's heartbeat arms such rows: it
reads each one as it reads any row (a row with a problem is left to the
claim's checks) and writes its first slot (``schedules.first_run``), or
FINISHED when its window has closed. Rows written in the last
``ARM_DELAY`` seconds are left alone: the command line's submit holds a new
job's ``next_run`` NULL for a moment while it creates the job's routines.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from jobtui.core import schema
from jobtui.core.rowmap import job_from_row
from jobtui.core.schedules import first_run
from jobtui.core.timeutil import to_db
from jobtui.core.transitions import status_after

ARM_DELAY = 2.0  # seconds
ARM_BATCH = 100


def arm_cron_jobs(conn: Connection, now: datetime) -> int:
    """Give unarmed cron jobs their first slot, in the caller's transaction; how many."""
    j = schema.job
    rows = conn.execute(
        select(j)
        .where(
            j.c.next_run.is_(None),
            j.c.schedule_kind == "cron",
            j.c.phase == "ENABLED",
            j.c.running.is_(False),
            j.c.remove_requested.is_(False),
            j.c.updated < to_db(now - timedelta(seconds=ARM_DELAY)),
        )
        .limit(ARM_BATCH)
        .with_for_update()
    ).all()
    armed = 0
    for row in rows:
        job = job_from_row(row)
        if job.problem is not None or job.schedule.kind != "cron":
            continue  # the claim's row checks deal with it
        nxt = first_run(job.schedule, now)
        values = {"next_run": to_db(nxt), "phase": "ENABLED" if nxt else "FINISHED"}
        values["status"] = status_after(row, values)
        values["updated"] = to_db(now)
        conn.execute(update(j).where(j.c.id == job.id).values(**values))
        armed += 1
    return armed
