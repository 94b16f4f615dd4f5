"""Rows and models: the columns a Job, its What and its Schedule are written to, and
the Jobs and Runs read back from rows (``job_from_row``, ``jobs_from_result``).

Reading is the console's and the runners' hot path (10,000 rows a refresh,
every claim and recording): values are taken by position and checked as
strictly as CLI input (``jobtui.core.row_checks``); a row that does not validate
gives a Job with a ``problem``, never an exception.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from functools import lru_cache
from operator import itemgetter
from typing import Any

from jobtui.core import row_checks
from jobtui.core.jobdefs import DEFAULT_MAX_FAILURES, MAX_MAX_FAILURES
from jobtui.core.model import (
    JOB_NAME_RE,
    MAX_DESCRIPTION_LENGTH,
    Intent,
    Job,
    Outcome,
    Run,
    Schedule,
    Status,
    What,
)
from jobtui.core.timeutil import from_db, to_db, utcnow
from jobtui.core.transitions import PHASES, derive_status


def what_columns(what: What) -> dict[str, Any]:
    return {"what_kind": what.kind, "what_target": what.target, "what_args": what.args_json()}


def schedule_columns(s: Schedule) -> dict[str, Any]:
    return {
        "schedule_kind": s.kind,
        "schedule_interval": s.every,
        "schedule_cron": s.cron,
        "schedule_tz": s.tz,
        "schedule_expr": s.expr,
        "schedule_start": to_db(s.start),
        "schedule_finish": to_db(s.finish),
    }


def new_job_values(
    *,
    owner: str,
    name: str,
    what: What,
    schedule: Schedule,
    description: str,
    max_failures: int,
    disabled: bool,
    next_run: datetime | None,
    now: datetime,
) -> dict[str, Any]:
    """Every column of a new job's row (submit, import): no run yet, no failure, its
    first slot ``next_run`` (None: the schedule has none, the job is FINISHED)."""
    intent = Intent.DISABLED if disabled else Intent.ENABLED
    phase = "ENABLED" if next_run is not None else "FINISHED"
    return {
        "owner": owner,
        "name": name,
        "description": description,
        **what_columns(what),
        **schedule_columns(schedule),
        "schedule_anchor": to_db(schedule.start or now),
        "status": derive_status(intent=intent, broken=False, running=False, phase=phase).value,
        "intent": intent.value,
        "phase": phase,
        "running": False,
        "broken": False,
        "failures": 0,
        "max_failures": max_failures,
        "cycles": 0,
        "run_now": False,
        "abort_requested": False,
        "total_time": 0.0,
        "next_run": to_db(next_run),
        "created": to_db(now),
        "updated": to_db(now),
    }


# The columns a job's Schedule is made from, and the anchor of its slots.
SCHEDULE_FIELDS = (
    "schedule_kind",
    "schedule_interval",
    "schedule_cron",
    "schedule_tz",
    "schedule_expr",
    "schedule_start",
    "schedule_finish",
    "schedule_anchor",
)

# The columns a Job is read from, in the order ``_jobs_from_values`` unpacks them.
JOB_FIELDS = (
    "id",
    "owner",
    "name",
    "description",
    "what_kind",
    "what_target",
    "what_args",
    *SCHEDULE_FIELDS,
    "status",
    "intent",
    "broken",
    "failures",
    "max_failures",
    "cycles",
    "created",
    "last_run",
    "this_run",
    "next_run",
    "total_time",
    "last_outcome",
    "last_error",
    "last_duration",
    "last_cycle_start",
    "last_cycle_finish",
    "runner_id",
    "runner_connection_id",
    "runner_start",
    "runner_finish",
    "run_now",
    "abort_requested",
    "broken_reason",
    "updated",
    "phase",
    "running",
    "remove_requested",
)
_STATUSES = {s.value: s for s in Status}
_INTENTS = {i.value: i for i in Intent}
_OUTCOMES = {o.value: o for o in Outcome}


@lru_cache(maxsize=64)
def job_fields_getter(
    keys: tuple[str, ...], *, partial: bool = False
) -> Callable[[Any], tuple[Any, ...]]:
    """A row's values in ``JOB_FIELDS`` order, by position (a result's keys: the table's
    or the operators' view's columns, whichever order they come in).

    ``partial``: the row may lack job columns (the runner reads only what it needs);
    those read as a full row's would, None (and "" for ``description``). Otherwise
    a missing column is an error (KeyError).
    """
    at = {key: i for i, key in enumerate(keys)}
    if not partial:
        return itemgetter(*(at[name] for name in JOB_FIELDS))
    pad: list[Any] = []
    positions: list[int] = []
    for name in JOB_FIELDS:
        if name in at:
            positions.append(at[name])
        else:
            positions.append(len(keys) + len(pad))
            pad.append("" if name == "description" else None)
    get = itemgetter(*positions)
    padding = tuple(pad)
    return lambda row: get(tuple(row) + padding)


def jobs_from_result(result: Any) -> list[Job]:
    """Every row of a job query as a Job.

    Built for 10,000 rows (the console's first table): values are taken by
    position (a SQLAlchemy ``Row``'s attributes cost ~0.5 µs each, at 41
    columns a row), and the rows' schedules and targets, mostly alike, are
    made once each.
    """
    getter = job_fields_getter(tuple(result.keys()))
    return _jobs_from_values(map(getter, result))


def job_from_row(row: Any) -> Job:
    """One job row: a SQLAlchemy ``Row`` or a named tuple with the job table's columns (read
    by position), or any object with them as attributes."""
    fields = getattr(row, "_fields", None)
    if fields is not None:
        values = job_fields_getter(tuple(fields))(row)
    else:
        values = tuple(getattr(row, name) for name in JOB_FIELDS)
    return _jobs_from_values([values])[0]


def _utc(value: Any) -> datetime | None:
    """``from_db`` for the values a driver returns (``datetime.combine`` is several times
    cheaper than ``replace(tzinfo=...)``, which counts at ten columns by 10,000 rows)."""
    if value is None:
        return None
    if type(value) is datetime and value.tzinfo is None:
        return datetime.combine(value.date(), value.time(), UTC)
    return from_db(value)


class _Unreadable:
    """A time column's value that is no date (a zero date, text on SQLite)."""


_UNREADABLE = _Unreadable()


def _time(value: Any) -> datetime | _Unreadable | None:
    """``_utc``, or ``_UNREADABLE`` for what is no date-time (never an exception)."""
    if value is None:
        return None
    if type(value) is datetime and value.tzinfo is None:
        return datetime.combine(value.date(), value.time(), UTC)
    try:
        return from_db(value)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return _UNREADABLE


def _note(value: Any) -> datetime | None:
    """A bookkeeping time the runner rewrites at every run (this_run, runner_start ...):
    unreadable reads as None, it neither runs nor schedules anything."""
    found = _time(value)
    return None if found is _UNREADABLE else found  # type: ignore[return-value]


# What and Schedule are frozen and made only from their own columns' raw values, so one
# made for a set of values serves every later row with the same values: a runner that
# claims and records the same jobs again and again does not re-parse their definitions.
# A definition that does not validate is cached as its problem (text).
# Bounded: cleared when full (a console over many distinct jobs just rebuilds them).
_CACHE_LIMIT = 20_000
_whats: dict[tuple[Any, ...], What | str] = {}
_schedules: dict[tuple[Any, ...], Schedule | str] = {}

_PHASES = frozenset(PHASES)
_INT_TYPES = (int, bool)  # a Boolean column reads as bool, or as 0/1 from a raw cursor
_NUMBER_TYPES = (float, int)
MAX_FAILURES_COUNT = 2**31 - 1  # the column's INT
MAX_CYCLES = 2**63 - 1  # the column's BIGINT
MAX_SECONDS = 1e15  # total_time, last_duration: thirty million years is corrupt
_OWNER_ACCEPTED = "expected the owning account, 1-190 printable characters"
_NAME_ACCEPTED = (
    "expected 1-64 characters from A-Z a-z 0-9 _ . -, starting with a letter, digit or underscore"
)
_DESCRIPTION_ACCEPTED = f"expected text of at most {MAX_DESCRIPTION_LENGTH} characters without NUL"


def jobs_from_values(rows: Iterable[tuple[Any, ...]]) -> list[Job]:
    """Jobs from rows of values in ``JOB_FIELDS`` order."""
    return _jobs_from_values(rows)


def _jobs_from_values(rows: Iterable[tuple[Any, ...]]) -> list[Job]:
    """Jobs from rows of values, each checked as strictly as CLI input (jobtui.core.row_checks).

    A row that does not validate gives a Job whose ``problem`` names the first
    column that is wrong, with placeholders for what could not be read: reading
    never raises. A column that is None where the table says NOT NULL was not
    read (the runner reads only the columns it needs): it is not checked.
    """
    whats = _whats
    schedules = _schedules
    if len(whats) > _CACHE_LIMIT:
        whats.clear()
    if len(schedules) > _CACHE_LIMIT:
        schedules.clear()
    time_ = _time
    note = _note
    unreadable = _UNREADABLE
    name_ok = JOB_NAME_RE.fullmatch
    jobs: list[Job] = []
    # Texts most rows share (owner, description, phase) kept once: 100,000 rows read by the
    # console would otherwise hold 300,000 copies (~15 MB).
    texts: dict[str, str] = {}
    shared = texts.setdefault
    for (
        id_,
        owner,
        name,
        description,
        what_kind,
        what_target,
        what_args,
        schedule_kind,
        schedule_interval,
        schedule_cron,
        schedule_tz,
        schedule_expr,
        schedule_start,
        schedule_finish,
        schedule_anchor,
        status,
        intent,
        broken,
        failures,
        max_failures,
        cycles,
        created,
        last_run,
        this_run,
        next_run,
        total_time,
        last_outcome,
        last_error,
        last_duration,
        last_cycle_start,
        last_cycle_finish,
        runner_id,
        runner_connection_id,
        runner_start,
        runner_finish,
        run_now,
        abort_requested,
        broken_reason,
        updated,
        phase,
        running,
        remove_requested,
    ) in rows:
        problems: list[str] = []
        if owner is not None and not (
            type(owner) is str and 0 < len(owner) <= 190 and owner.isprintable()
        ):
            problems.append(row_checks.bad("owner", owner, _OWNER_ACCEPTED))
            owner = row_checks.PLACEHOLDER_OWNER
        if name is not None and not (type(name) is str and name_ok(name)):
            problems.append(row_checks.bad("name", name, _NAME_ACCEPTED))
            name = f"#{id_}"
        if description and not (
            type(description) is str
            and len(description) <= MAX_DESCRIPTION_LENGTH
            and "\x00" not in description
        ):
            problems.append(row_checks.bad("description", description, _DESCRIPTION_ACCEPTED))
            description = ""
        # Frozen and equal for equal columns: rows with the same target or schedule share one.
        what_key = (what_kind, what_target, what_args)
        what = whats.get(what_key)
        if what is None:
            if what_kind is None:  # not read (the runner's recording reads no definition)
                what = What.__new__(What)
                object.__setattr__(what, "kind", None)
                object.__setattr__(what, "target", what_target)
                object.__setattr__(what, "args", ())
            else:
                what = row_checks.what_from_columns(what_kind, what_target, what_args)
            whats[what_key] = what
        if type(what) is str:
            problems.append(what)
            what = row_checks.placeholder_what(what_kind)
        schedule_key = (
            schedule_kind,
            schedule_interval,
            schedule_cron,
            schedule_tz,
            schedule_expr,
            schedule_start,
            schedule_finish,
        )
        sched = schedules.get(schedule_key)
        if sched is None:
            if schedule_kind is None:  # not read
                sched = row_checks.PLACEHOLDER_SCHEDULE
            else:
                sched = row_checks.schedule_from_columns(
                    schedule_kind,
                    schedule_interval,
                    schedule_cron,
                    schedule_tz,
                    schedule_expr,
                    schedule_start,
                    schedule_finish,
                )
            schedules[schedule_key] = sched
        if type(sched) is str:
            problems.append(sched)
            sched = row_checks.PLACEHOLDER_SCHEDULE
        anchor = time_(schedule_anchor)
        if anchor is unreadable:
            problems.append(
                row_checks.bad("schedule_anchor", schedule_anchor, "expected a date-time")
            )
            anchor = None
        status_ = _STATUSES.get(status)
        if status_ is None:
            problems.append(
                row_checks.bad("status", status, "expected one of " + ", ".join(_STATUSES))
            )
            status_ = Status.BROKEN
        intent_ = _INTENTS.get(intent)
        if intent_ is None:
            problems.append(
                row_checks.bad("intent", intent, "expected one of " + ", ".join(_INTENTS))
            )
            intent_ = Intent.DISABLED
        if broken is None:
            broken = False
        elif not isinstance(broken, _INT_TYPES):
            problems.append(row_checks.bad("broken", broken, "expected 0 or 1"))
            broken = True
        if failures is None:
            failures = 0
        elif type(failures) not in _INT_TYPES or not 0 <= failures <= MAX_FAILURES_COUNT:
            problems.append(
                row_checks.bad(
                    "failures", failures, f"expected a whole number from 0 to {MAX_FAILURES_COUNT}"
                )
            )
            failures = 0
        if max_failures is None:
            max_failures = DEFAULT_MAX_FAILURES
        elif type(max_failures) not in _INT_TYPES or not 1 <= max_failures <= MAX_MAX_FAILURES:
            problems.append(
                row_checks.bad(
                    "max_failures",
                    max_failures,
                    f"expected a whole number from 1 to {MAX_MAX_FAILURES}",
                )
            )
            max_failures = DEFAULT_MAX_FAILURES
        if cycles is None:
            cycles = 0
        elif type(cycles) not in _INT_TYPES or not 0 <= cycles <= MAX_CYCLES:
            problems.append(
                row_checks.bad("cycles", cycles, f"expected a whole number from 0 to {MAX_CYCLES}")
            )
            cycles = 0
        created_ = time_(created)
        if created_ is unreadable:
            problems.append(row_checks.bad("created", created, "expected a date-time"))
            created_ = None
        last_run_ = time_(last_run)
        if last_run_ is unreadable:
            problems.append(row_checks.bad("last_run", last_run, "expected a date-time or NULL"))
            last_run_ = None
        next_run_ = time_(next_run)
        if next_run_ is unreadable:
            problems.append(row_checks.bad("next_run", next_run, "expected a date-time or NULL"))
            next_run_ = None
        if total_time is None:
            total_time = 0.0
        elif type(total_time) not in _NUMBER_TYPES or not 0 <= total_time <= MAX_SECONDS:
            problems.append(
                row_checks.bad("total_time", total_time, "expected a number of seconds, 0 or more")
            )
            total_time = 0.0
        outcome = _OUTCOMES.get(last_outcome) if last_outcome is not None else None
        if outcome is None and last_outcome is not None:
            problems.append(
                row_checks.bad(
                    "last_outcome", last_outcome, "expected NULL or one of " + ", ".join(_OUTCOMES)
                )
            )
        if last_duration is not None and (
            type(last_duration) not in _NUMBER_TYPES or not 0 <= last_duration <= MAX_SECONDS
        ):
            problems.append(
                row_checks.bad(
                    "last_duration",
                    last_duration,
                    "expected NULL or a number of seconds, 0 or more",
                )
            )
            last_duration = None
        if run_now is None:
            run_now = False
        elif not isinstance(run_now, _INT_TYPES):
            problems.append(row_checks.bad("run_now", run_now, "expected 0 or 1"))
            run_now = False
        if phase is not None and phase not in _PHASES:
            problems.append(row_checks.bad("phase", phase, "expected one of " + ", ".join(PHASES)))
            phase = "ENABLED"
        if running is None:
            running = False
        elif not isinstance(running, _INT_TYPES):
            problems.append(row_checks.bad("running", running, "expected 0 or 1"))
            running = False
        problem = problems[0] if problems else None
        jobs.append(
            Job(
                id=int(id_),
                owner=shared(owner, owner) if type(owner) is str else owner,
                name=name,
                description=shared(description, description) if description else "",
                what=what,  # type: ignore[arg-type]  # a problem (str) was replaced above
                schedule=sched,  # type: ignore[arg-type]
                status=Status.BROKEN if problem else status_,
                intent=intent_,
                broken=bool(broken),
                failures=failures,
                max_failures=max_failures,
                cycles=cycles,
                created=created_ or utcnow(),  # type: ignore[arg-type]
                last_run=last_run_,  # type: ignore[arg-type]
                this_run=note(this_run),
                next_run=next_run_,  # type: ignore[arg-type]
                total_time=float(total_time),
                last_outcome=outcome,
                last_error=last_error if isinstance(last_error, str) else None,
                last_duration=last_duration,
                last_cycle_start=note(last_cycle_start),
                last_cycle_finish=note(last_cycle_finish),
                runner_id=runner_id if isinstance(runner_id, str) else None,
                runner_connection_id=runner_connection_id
                if type(runner_connection_id) is int
                else None,
                runner_start=note(runner_start),
                runner_finish=note(runner_finish),
                run_now=bool(run_now),
                abort_requested=bool(abort_requested)
                if isinstance(abort_requested, _INT_TYPES)
                else False,
                broken_reason=broken_reason if isinstance(broken_reason, str) else None,
                updated=note(updated),
                phase=shared(phase, phase) if type(phase) is str else phase,
                running=bool(running),
                anchor=anchor,  # type: ignore[arg-type]
                remove_requested=bool(remove_requested)
                if isinstance(remove_requested, _INT_TYPES)
                else False,
                problem=problem,
            )
        )
    return jobs


def run_from_row(row: Any) -> Run:
    return Run(
        id=int(row.id),
        job_id=int(row.job_id),
        job=row.job_name,
        owner=row.owner,
        scheduled_for=from_db(row.scheduled_for) or utcnow(),
        started=from_db(row.started),
        finished=from_db(row.finished),
        outcome=Outcome(row.outcome),
        error=row.error,
        runner=row.runner,
        skipped=int(row.skipped or 0),
        manual=bool(row.manual),
    )
