"""Cron jobs submitted through SQL get their first slot from a runner.

SQL cannot compute a cron slot as croniter does, so ``CALL submit_job(...,
'cron ...', ...)`` (and ``CALL broken(job, FALSE, NULL)`` of a cron job) leaves
``next_run`` NULL in phase ENABLED. A runner's heartbeat arms such rows: it
reads each one as it reads any row (a row with a problem is left to the
claim's checks) and writes its first slot (``schedules.first_run``), or
FINISHED when its window has closed; a row with a problem (a cron line or zone
that only croniter refuses) is marked BROKEN with the problem as its reason, as
a claim marks one, so it does not wait for a slot in silence. Rows written in
the last
``ARM_DELAY`` seconds are left alone: the command line's submit holds a new
job's ``next_run`` NULL for a moment while it creates the job's routines.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.engine import Connection

from jobtui.core import bookkeeping, schema
from jobtui.core.model import Intent, Status
from jobtui.core.rowmap import job_from_row
from jobtui.core.schedules import first_run
from jobtui.core.timeutil import to_db
from jobtui.core.transitions import PHASES, status_after

ARM_DELAY = 2.0  # seconds
ARM_BATCH = 100


def _unarmed(now: datetime) -> Any:
    j = schema.job
    return (
        j.c.next_run.is_(None),
        j.c.schedule_kind == "cron",
        j.c.phase == "ENABLED",
        j.c.running.is_(False),
        j.c.broken.is_(False),  # no slot needed until it is unbroken
        j.c.remove_requested.is_(False),
        j.c.updated < to_db(now - timedelta(seconds=ARM_DELAY)),
    )


def unarmed(conn: Connection, now: datetime) -> list[int]:
    """The ids of cron jobs waiting for their first slot: a plain read, no lock (a
    locking read over ``next_run IS NULL`` would lock other jobs' rows too)."""
    j = schema.job
    rows = conn.execute(select(j.c.id).where(*_unarmed(now)).limit(ARM_BATCH)).all()
    return [int(r[0]) for r in rows]


def arm(conn: Connection, job_id: int, now: datetime) -> bool:
    """Give one unarmed cron job its first slot, under its row lock, in the caller's
    transaction (False: it was armed or changed meanwhile, or its row has a problem:
    then it is marked BROKEN, the problem its reason)."""
    j = schema.job
    # SKIP LOCKED: the heartbeat never waits for a row its owner holds locked (the next
    # heartbeat arms it)
    query = select(j).where(j.c.id == job_id, *_unarmed(now))
    row = conn.execute(query.with_for_update(skip_locked=True)).first()
    if row is None:
        return False
    job = job_from_row(row)
    if job.problem is not None:
        valid = row.intent in Intent.__members__ and row.phase in PHASES
        broken = {"broken": True, "running": False}
        conn.execute(
            update(j)
            .where(j.c.id == job_id)
            .values(
                broken=True,
                broken_reason=job.problem[: bookkeeping.MAX_ERROR_LENGTH],
                status=status_after(row, broken) if valid else Status.BROKEN.value,
                updated=to_db(now),
            )
        )
        return False
    if job.schedule.kind != "cron":
        return False  # changed meanwhile: nothing to arm
    nxt = first_run(job.schedule, now)
    values: dict[str, Any] = {"next_run": to_db(nxt), "phase": "ENABLED" if nxt else "FINISHED"}
    values["status"] = status_after(row, values)
    values["updated"] = to_db(now)
    conn.execute(update(j).where(j.c.id == job_id).values(**values))
    return True
