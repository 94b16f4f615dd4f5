"""Expr schedules: a date expression evaluated by the database (DBMS_JOB's INTERVAL), its
check at submit, and the preview of a job's next run times.

The evaluation itself differs between databases (``Backend.evaluate_expr``);
what a result means, and the refusals a person reads, are the same on both.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, OperationalError

from jobtui.core import bookkeeping, owner_code
from jobtui.core.dberrors import db_errors, short_error, translate_db_error
from jobtui.core.errors import DatabaseUnavailable, InvalidInput, PermissionDenied
from jobtui.core.jobdefs import as_changed
from jobtui.core.model import Job, Schedule, Status
from jobtui.core.schedules import first_run, upcoming
from jobtui.core.store.context import StoreContext
from jobtui.core.timeutil import aware
from jobtui.core.transitions import halted_reason

MAX_PREVIEW = 1000


@db_errors
def evaluate_expr(
    ctx: StoreContext,
    expr: str,
    now: datetime,
    *,
    conn: Connection | None = None,
    job: Job | None = None,
    run_conn: Connection | None = None,
) -> datetime | None:
    """``JobStore.evaluate_expr``: the expression's value at ``now`` (NULL -> None)."""
    if conn is None:
        with ctx.engine.connect() as own:
            try:
                return evaluate_expr(ctx, expr, now, conn=own, job=job)
            finally:
                own.rollback()
    try:
        value = ctx.backend.evaluate_expr(
            conn,
            expr,
            now,
            job=job,
            schema_name=ctx.schema_name if job is not None else "",
            run_conn=run_conn,
        )
    except owner_code.RoutineRefused as exc:
        if exc.runner_side:
            raise PermissionDenied(f"--expr {expr!r} not evaluated: {exc}") from None
        raise InvalidInput(f"--expr {expr!r} not evaluated: {exc}") from None
    except OperationalError as exc:
        translated = translate_db_error(exc)
        if isinstance(translated, DatabaseUnavailable):
            raise translated from exc
        if ctx.backend.timed_out(exc):
            raise InvalidInput(
                f"invalid --expr {expr!r}: its evaluation took longer than "
                f"{owner_code.EXPR_TIMEOUT:g} s (the limit for a date expression)"
            ) from None
        raise InvalidInput(
            f"invalid --expr {expr!r}: the database rejected it ({short_error(exc)})"
        ) from None
    except DBAPIError as exc:
        raise InvalidInput(
            f"invalid --expr {expr!r}: the database rejected it ({short_error(exc)})"
        ) from None
    return _to_datetime(value, expr)


def check_expr_schedule(ctx: StoreContext, schedule: Schedule, now: datetime) -> None:
    """Evaluate an expr schedule once (as at submit) to prove it yields a later date."""
    if schedule.kind != "expr":
        return
    assert schedule.expr is not None
    value = evaluate_expr(ctx, schedule.expr, now)
    if value is None:
        raise InvalidInput(
            f"invalid --expr {schedule.expr!r}: it gives NULL now, so the job would run "
            "once and never again; expected a later time such as NOW() + INTERVAL 1 DAY "
            "(NULL later, at a run, means that run was the last: use --once for one run)"
        )
    if value <= now:
        raise InvalidInput(
            f"invalid --expr {schedule.expr!r}: it gives {value.isoformat()}, which is not "
            "after NOW(); expected a later time such as NOW() + INTERVAL 1 DAY"
        )


def preview(ctx: StoreContext, job: Job, n: int = 5) -> list[datetime]:
    """``JobStore.preview``: the next ``n`` run times of a job."""
    if job.problem or halted_reason(intent=job.intent, broken=job.broken, phase=job.phase):
        return []  # a job with a problem never runs until its row is fixed
    foreign = ctx.backend.job_routines.present and job.owner != ctx.owner
    if foreign and job.schedule.kind == "expr":
        # Another owner's expression is never evaluated with this account's rights
        # (its runs evaluate it as the owner's own function): only the next run.
        return [job.next_run][:n] if job.next_run is not None else []
    return preview_schedule(
        ctx,
        job.schedule,
        n,
        first=job.next_run,
        anchor=bookkeeping.anchor(job),
        finished=job.status is Status.FINISHED,
    )


def preview_change(
    ctx: StoreContext, job: Job | None, schedule: Schedule, n: int = 5
) -> list[datetime]:
    """``JobStore.preview_change``: the next ``n`` run times of ``job`` once its schedule is
    ``schedule``, or of a new job with it (``job`` None): what ``show`` lists once the edit
    form has saved it. ``preview`` of the job as ``change`` leaves it (``as_changed``), so a
    paused, disabled or broken job has none, as in ``show``."""
    if job is None:  # as submit arms a new job: first slot from now, grid from start or now
        return preview_schedule(ctx, schedule, n)
    return preview(ctx, as_changed(job, schedule, ctx.now()), n)


def why_no_runs(job: Job | None) -> str:
    """Why ``preview`` of ``job`` is empty, in words (``show``, details, the edit form)."""
    if job is not None and job.problem:
        return "the job's row has a problem"
    if job is not None:
        halted = halted_reason(intent=job.intent, broken=job.broken, phase=job.phase)
        if halted:
            return halted
    return "no further run is scheduled"


@db_errors
def preview_schedule(
    ctx: StoreContext,
    schedule: Schedule,
    n: int = 5,
    *,
    first: datetime | None = None,
    anchor: datetime | None = None,
    finished: bool = False,
) -> list[datetime]:
    """``JobStore.preview_schedule``: the next ``n`` run times of a schedule."""
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= MAX_PREVIEW:
        raise InvalidInput(f"invalid count {n!r}: expected a whole number from 0 to {MAX_PREVIEW}")
    if finished or n == 0:
        return []
    now = ctx.now()
    anchor = anchor or schedule.start or now
    if first is None:
        first = first_run(schedule, now)
        if first is None:
            return []
    result = [first]
    if schedule.kind in ("every", "cron"):
        result += upcoming(schedule, first, anchor, n - 1)
    elif schedule.kind == "expr":
        assert schedule.expr is not None
        cursor = first
        with ctx.engine.connect() as conn:
            try:
                while len(result) < n:
                    nxt = evaluate_expr(ctx, schedule.expr, cursor, conn=conn)
                    if nxt is None or nxt <= cursor:
                        break
                    if schedule.finish and nxt > schedule.finish:
                        break
                    result.append(nxt)
                    cursor = nxt
            finally:
                conn.rollback()
    return result[:n]


def _to_datetime(value: Any, expr: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return aware(value)
    if isinstance(value, date):
        return aware(datetime(value.year, value.month, value.day))
    if isinstance(value, (bytes, str)):
        textual = value.decode(errors="replace") if isinstance(value, bytes) else value
        try:
            return aware(datetime.fromisoformat(textual.strip()))
        except ValueError:
            pass
    raise InvalidInput(
        f"invalid --expr {expr!r}: it gave {value!r}, not a date-time; expected e.g. "
        "NOW() + INTERVAL 1 DAY (MySQL) or datetime(NOW(), '+1 day') (SQLite)"
    )
