"""DBMS_JOB's bookkeeping: what a job row becomes once a run ended, and coalescing.

``finish_values`` is the row's new state after a run (failure counting, backoff,
BROKEN after ``max_failures``, next run); ``coalesce`` folds the slots a job
missed into one run; ``anchor`` is the origin of an every-N job's grid. The
statuses they derive come from ``transitions``; runners and the store share
these, so the rules exist once.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from croniter import croniter

from jobtui.core.model import Job, Outcome, Schedule
from jobtui.core.schedules import check_tz, checked_interval, next_slot
from jobtui.core.timeutil import aware, from_db, to_db
from jobtui.core.transitions import derive_status, retry_time

MAX_ERROR_LENGTH = 8000
MAX_COALESCE_STEPS = 10_000


def anchor(job: Job) -> datetime:
    """The origin of an every-N job's grid: its anchor, else its window's start, else its creation."""
    return job.anchor or job.schedule.start or job.created


def row_time(value: Any, unreadable: datetime | None = None) -> datetime | None:
    """A time column read without the Job (the scheduler's query): ``from_db``, but a
    value that is no date (a zero date, text) gives ``unreadable`` instead of raising."""
    try:
        return from_db(value)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return unreadable


def coalesce(
    schedule: Schedule, first: datetime, now: datetime, anchor: datetime
) -> tuple[datetime, int]:
    """The slot to run now and how many earlier due slots it swallows.

    ``first`` is the job's next_run (due). Every later slot that is also due
    by ``now`` means ``first`` and those before the latest were missed: one
    run covers the latest, and the others are logged as one skipped row.
    """
    if schedule.kind not in ("every", "cron"):
        return first, 0
    latest, skipped = first, 0
    if schedule.kind == "every":
        every = checked_interval(schedule.every)  # never a spin on a hand-written interval
        # jump straight to the last grid slot at or before now
        grid = aware(schedule.start or anchor)
        if now >= grid and latest >= grid:
            k_now = int((now - grid).total_seconds() // every)
            k_first = int((latest - grid).total_seconds() // every)
            if k_now - k_first > 2:
                cand = next_slot(schedule, grid + timedelta(seconds=(k_now - 1) * every), anchor)
                if cand is not None and latest < cand <= now:
                    skipped = k_now - k_first
                    latest = cand
    for _ in range(MAX_COALESCE_STEPS):
        nxt = next_slot(schedule, latest, anchor)
        if nxt is None or nxt > now:
            break
        latest = nxt
        skipped += 1
    else:
        # A very long gap (a per-second cron down for days): jump to the last slot
        # before now instead of walking there; `skipped` is then a lower bound.
        last = next_slot(schedule, _cron_prev(schedule, now) - timedelta(microseconds=1), anchor)
        if last is not None and latest < last <= now:
            latest = last
            skipped += 1
    return latest, skipped


def _cron_prev(schedule: Schedule, now: datetime) -> datetime:
    """The latest cron time at or before ``now`` (every schedules: ``now`` itself)."""
    if schedule.kind != "cron" or schedule.cron is None:
        return now
    zone = check_tz(schedule.tz)
    it = croniter(schedule.cron, (now + timedelta(microseconds=1)).astimezone(zone))
    return aware(it.get_prev(datetime))


def finish_values(
    job: Job,
    phase: str,
    *,
    outcome: Outcome,
    error: str | None,
    started: datetime,
    finished: datetime,
    manual: bool,
    shutdown: bool = False,
) -> dict[str, Any]:
    """The job row's new state after a run: outcome, cycles, failures, broken, next run
    (DBMS_JOB's bookkeeping, with the latest run's start and end)."""
    duration = max(0.0, (finished - started).total_seconds())
    broken = job.broken
    failures = job.failures
    next_run = job.next_run
    finished_db = to_db(finished)
    values: dict[str, Any] = {
        # every run that ran counts, whatever its outcome (DBMS_JOB's TOTAL_TIME)
        "total_time": job.total_time + duration,
        "running": False,
        "this_run": None,
        "runner_finish": finished_db,
        "last_outcome": outcome.value,
        "last_error": error,
        "last_duration": duration,
        "last_cycle_finish": finished_db,
        "abort_requested": False,
        "updated": finished_db,
    }
    # ABORTED on a scheduled run's row: an operator aborted while it ran (a scheduled
    # run is never claimed in that phase) and it ended before the interrupt did. The
    # abort still stops the schedule until resume/enable/run-now.
    keep_phase = (manual and phase in ("FINISHED", "ABORTED")) or phase == "ABORTED"
    if outcome is Outcome.OK:
        failures = 0
        broken = False
        values.update(
            broken_reason=None,
            cycles=job.cycles + 1,
            last_run=to_db(started),
        )
        if not keep_phase:
            if phase == "ERROR" and job.schedule.kind in ("every", "cron"):
                next_run = next_slot(job.schedule, finished, anchor(job))
                values["next_run"] = to_db(next_run)
            phase = "FINISHED" if next_run is None else "SLEEPING"
    elif outcome is Outcome.FAILED:
        failures += 1
        if failures >= job.max_failures:
            broken = True
            values["broken_reason"] = f"failed {failures} times in a row; last error: {error}"[
                :MAX_ERROR_LENGTH
            ]
        if not keep_phase:
            retry = retry_time(failures, finished, _regular_next(job, phase, manual, finished))
            finish = job.schedule.finish
            if finish is not None and retry > aware(finish):
                # the window is over before the retry: no run after it (DBMS_JOB has no
                # window; a retry is a run like the others)
                values["next_run"] = None
                phase = "FINISHED"
            else:
                values["next_run"] = to_db(retry)
                phase = "ERROR"
    elif outcome is Outcome.ABORTED and not shutdown:
        phase = "ABORTED"
        values["run_now"] = False
    elif outcome is Outcome.ABORTED and next_run is None and phase != "FINISHED" and not manual:
        # A shutdown cut the only slot off (a once job) and rolled it back: run it
        # again as soon as a runner is up, rather than leaving it with no next run.
        values["next_run"] = finished_db
    values.update(
        failures=failures,
        broken=broken,
        phase=phase,
        status=derive_status(intent=job.intent, broken=broken, running=False, phase=phase).value,
    )
    return values


def _regular_next(job: Job, phase: str, manual: bool, finished: datetime) -> datetime | None:
    """The job's next regular slot, which a failed run's retry never comes after.

    A scheduled run's claim planned it (``job.next_run``). A manual run (run-now,
    ``CALL run``) leaves ``next_run`` as it was, and in phase ERROR that is the last
    failure's retry, not a slot: the next slot is then computed from the schedule (every,
    cron), and an expr or once job has none known (its backoff alone counts). Otherwise
    a manual failure would be retried at the last retry again, a minute later for ever,
    instead of after 1, 2, 4 ... minutes."""
    if not (manual and phase == "ERROR"):
        return job.next_run
    if job.schedule.kind in ("every", "cron"):
        return next_slot(job.schedule, finished, anchor(job))
    return None
