"""What each operator verb writes over a job's row (DBMS_JOB's BROKEN, RUN ... and
jobtui's pause, resume, enable, disable, abort), as pure functions.

Each takes the job's name (for a refusal), its locked row, the Job read from
it and the time, and returns the columns to write (InvalidInput to refuse);
``JobStore`` locks the row, sets ``status`` (``transitions.status_after``)
and ``updated``, and writes them.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from jobtui.core import bookkeeping
from jobtui.core.errors import InvalidInput
from jobtui.core.model import Intent, Job
from jobtui.core.schedules import first_run, next_slot
from jobtui.core.timeutil import aware, to_db

Steer = Callable[[str, Any, Job, datetime], dict[str, Any]]


def rearm(job: Job, now: datetime) -> dict[str, Any]:
    """The next slot strictly after now: for resume and broken-off (no burst)."""
    sched = job.schedule
    if sched.kind in ("every", "cron"):
        nxt = next_slot(sched, now, bookkeeping.anchor(job))
    elif sched.kind == "once":
        nxt = None if job.phase == "FINISHED" else job.next_run
        if nxt is not None and nxt < now:
            nxt = now
    else:  # expr: evaluated at the start of each run; resume runs it now
        nxt = now if job.next_run is None or job.next_run < now else job.next_run
    if nxt is not None and sched.finish is not None and nxt > sched.finish:
        nxt = None  # the window closed while the job was paused or broken
    values: dict[str, Any] = {"next_run": to_db(nxt)}
    if nxt is None:
        values["phase"] = "FINISHED"
    return values


def pause(name: str, row: Any, job: Job, now: datetime) -> dict[str, Any]:
    if row.phase == "FINISHED":
        raise InvalidInput(f"job {name!r} is FINISHED: there is nothing to pause")
    if row.intent == Intent.DISABLED:
        raise InvalidInput(f"job {name!r} is DISABLED: enable it before pausing")
    return {"intent": Intent.PAUSED.value}


def resume(name: str, row: Any, job: Job, now: datetime) -> dict[str, Any]:
    if row.intent == Intent.DISABLED:
        raise InvalidInput(f"job {name!r} is DISABLED: use `jobtui enable {name}`")
    if row.intent != Intent.PAUSED and row.phase != "ABORTED":
        return {}  # already running on its schedule: nothing to do
    values: dict[str, Any] = {
        "intent": Intent.ENABLED.value,
        "abort_requested": False,
        "phase": "RESUMED",
    }
    values.update(rearm(job, now))
    return values


def enable(name: str, row: Any, job: Job, now: datetime) -> dict[str, Any]:
    values: dict[str, Any] = {"intent": Intent.ENABLED.value, "abort_requested": False}
    if row.intent != Intent.ENABLED or row.phase in ("ABORTED", "FINISHED"):
        values["phase"] = "ENABLED"
        if row.phase == "FINISHED" or job.next_run is None:
            values["next_run"] = to_db(first_run(job.schedule, now))
        else:
            values.update(rearm(job, now))
        if values.get("next_run") is None:
            values["phase"] = "FINISHED"
    return values


def disable(name: str, row: Any, job: Job, now: datetime) -> dict[str, Any]:
    return {"intent": Intent.DISABLED.value}


def abort(name: str, row: Any, job: Job, now: datetime) -> dict[str, Any]:
    if row.phase == "FINISHED" and not row.running:
        return {"run_now": False}  # no run and no schedule left to stop
    values: dict[str, Any] = {"phase": "ABORTED", "run_now": False}
    if row.running:
        values["abort_requested"] = True
    return values


def run_now(name: str, row: Any, job: Job, now: datetime) -> dict[str, Any]:
    if row.running:
        raise InvalidInput(
            f"job {name!r} is running now: run-now starts a run only when none is in "
            "flight; try again when it has finished (or abort it)"
        )
    return {"run_now": True}


def broken(on: bool, next_run: datetime | None, reason: str) -> Steer:
    """DBMS_JOB.BROKEN: mark broken, or clear it (failures reset, back on the schedule
    from ``next_run`` or the next slot)."""

    def steer(name: str, row: Any, job: Job, now: datetime) -> dict[str, Any]:
        if on:
            return {"broken": True, "broken_reason": reason}
        values: dict[str, Any] = {"broken": False, "broken_reason": None, "failures": 0}
        if row.phase in ("ERROR",):
            values["phase"] = "ENABLED"
        if next_run is not None:
            values["next_run"] = to_db(aware(next_run))
            if row.phase == "FINISHED":
                values["phase"] = "ENABLED"
        elif row.broken:
            values.update(rearm(job, now))
        return values

    return steer
