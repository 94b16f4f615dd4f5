"""A job's definition as given by a person: its checks (description, max failures), a
partial schedule change merged into the current one, and an export file's entry.

The requests the store's defining verbs take live here: a ``JobSpec`` (a new job, for
``submit``, ``import`` and event adoption) and a ``JobChange`` (what ``change`` alters).
The console's edit form and the CLI check their input with the same functions
the store applies before writing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from jobtui.core.errors import InvalidInput
from jobtui.core.model import MAX_DESCRIPTION_LENGTH, Job, Schedule, What, check_job_name
from jobtui.core.schedules import check_schedule, first_run, make_schedule
from jobtui.core.timeutil import utcnow
from jobtui.core.transitions import derive_status

DEFAULT_MAX_FAILURES = 16
MAX_MAX_FAILURES = 1_000_000
UNSET: Any = object()  # "not given" where None means something (a time zone, a window end)


@dataclass(frozen=True)
class JobSpec:
    """A new job as ``JobStore.submit`` writes it (DBMS_JOB.SUBMIT), as an import file's
    entry gives it and as an adopted event becomes it.

    ``first``: the first run, when not the schedule's first slot from now (an adopted
    event's first slot after its last run, even if that is past: it runs at once).
    ``session_role`` False (MySQL/MariaDB): the job's routines set no role, so it runs
    with the owner's own grants only, as the event it was adopted from did.
    """

    name: str
    what: What
    schedule: Schedule
    description: str = ""
    max_failures: int = DEFAULT_MAX_FAILURES
    disabled: bool = False
    first: datetime | None = None
    session_role: bool = True

    def checked(self) -> JobSpec:
        """The spec with its name, schedule, description and max failures validated (the
        values normalised), or InvalidInput naming what is wrong."""
        check_job_name(self.name)
        return replace(
            self,
            schedule=check_schedule(self.schedule),
            description=check_description(self.description),
            max_failures=check_max_failures(self.max_failures),
        )


@dataclass(frozen=True)
class JobChange:
    """What ``JobStore.change`` alters (DBMS_JOB.CHANGE): only what is given changes.

    None leaves a value as it is; for ``tz``, ``start`` and ``finish``, where None
    means something (no zone, an open window), ``UNSET`` does. A schedule is given
    as its kind's value (``every``, ``cron``, ``expr``; ``kind`` "once"), merged into
    the job's current one (``merge_schedule``).
    """

    what: What | None = None
    kind: str | None = None
    every: float | str | None = None
    cron: str | None = None
    tz: str | None = UNSET
    expr: str | None = None
    start: datetime | None = UNSET
    finish: datetime | None = UNSET
    description: str | None = None
    max_failures: int | None = None
    disabled: bool | None = None

    @classmethod
    def replacing(cls, schedule: Schedule, **others: Any) -> JobChange:
        """A change that gives a whole schedule (the edit form's), and ``others``."""
        s = schedule
        return cls(
            kind=s.kind,
            every=s.every if s.kind == "every" else None,
            cron=s.cron if s.kind == "cron" else None,
            expr=s.expr if s.kind == "expr" else None,
            tz=s.tz,
            start=s.start,
            finish=s.finish,
            **others,
        )

    @property
    def window_only(self) -> bool:
        """A time zone or window end given without a schedule to apply it to."""
        partial = self.kind is None and self.every is None and self.cron is None
        window = self.tz is not UNSET or self.start is not UNSET or self.finish is not UNSET
        return partial and self.expr is None and window

    def checked(self) -> JobChange:
        """The change with its description and max failures validated where given."""
        return replace(
            self,
            description=None if self.description is None else check_description(self.description),
            max_failures=(
                None if self.max_failures is None else check_max_failures(self.max_failures)
            ),
        )

    def schedule_over(self, current: Schedule) -> Schedule:
        """``current`` with this change's schedule values merged in."""
        return merge_schedule(
            current,
            kind=self.kind,
            every=self.every,
            cron=self.cron,
            tz=self.tz,
            expr=self.expr,
            start=self.start,
            finish=self.finish,
        )


def removal_pending(name: str) -> InvalidInput:
    """The refusal of anything but ``remove`` on a job whose removal waits for its run."""
    return InvalidInput(
        f"job {name!r} is being removed: its run in flight is being aborted, and the job is "
        "deleted when that run has ended; its name is free only then (try again in a moment; "
        "`jobtui show` shows remove_requested)"
    )


def exported_schedule(job: Job, now: datetime | None = None) -> Schedule:
    """The schedule an export writes for ``job`` (JSON, YAML, ``--format sql``,
    ``user_export``): its own, except that an expr or once job's next date is carried as
    its window start when it is still ahead (after ``now``, default the clock) and later
    than its start. Such a job's first run is its start (or now, without one): without
    this, a job whose next date is years ahead, exported and recreated, would run at
    once (DBMS_JOB's USER_EXPORT keeps NEXT_DATE too). A next date already due needs
    nothing carried: the recreated job runs at once either way."""
    sched = job.schedule
    nxt = job.next_run
    ahead = nxt is not None and nxt > (now or utcnow())
    later = nxt is not None and (sched.start is None or nxt > sched.start)
    if sched.kind in ("expr", "once") and ahead and later:
        return replace(sched, start=nxt)
    return sched


def check_description(description: str | None) -> str:
    if description is None:
        return ""
    if not isinstance(description, str) or "\x00" in description:
        raise InvalidInput("invalid --description: text without NUL characters")
    if len(description) > MAX_DESCRIPTION_LENGTH:
        raise InvalidInput(
            f"--description too long ({len(description)} characters): at most "
            f"{MAX_DESCRIPTION_LENGTH}"
        )
    return description


def check_max_failures(value: Any) -> int:
    try:
        if isinstance(value, bool):
            raise ValueError
        n = int(value)
        if isinstance(value, float) and value != n:
            raise ValueError
    except (TypeError, ValueError):
        raise InvalidInput(
            f"invalid --max-failures {value!r}: expected a whole number from 1 to {MAX_MAX_FAILURES}"
        ) from None
    if not 1 <= n <= MAX_MAX_FAILURES:
        raise InvalidInput(
            f"invalid --max-failures {value!r}: expected a whole number from 1 to {MAX_MAX_FAILURES}"
        )
    return n


def merge_schedule(
    current: Schedule,
    *,
    kind: str | None = None,
    every: float | str | None = None,
    cron: str | None = None,
    tz: str | None = UNSET,
    expr: str | None = None,
    start: datetime | None = UNSET,
    finish: datetime | None = UNSET,
) -> Schedule:
    """Apply a partial change to a schedule ("only what is given changes")."""
    given = [k for k, v in (("every", every), ("cron", cron), ("expr", expr)) if v is not None]
    if kind is not None and kind not in given:
        given.append(kind)  # "once", or a kind whose value is missing (make_schedule says so)
    if len(given) > 1:
        raise InvalidInput("give one schedule: --every, --cron, --expr or --once")
    new_kind = given[0] if given else current.kind
    new_start = current.start if start is UNSET else start
    new_finish = current.finish if finish is UNSET else finish
    if new_kind == current.kind and not given:
        new_tz = current.tz if tz is UNSET else tz
        return make_schedule(
            new_kind,
            every=current.every,
            cron=current.cron,
            tz=new_tz,
            expr=current.expr,
            start=new_start,
            finish=new_finish,
        )
    new_tz = None if tz is UNSET else tz
    if new_kind == "cron" and tz is UNSET and current.kind == "cron":
        new_tz = current.tz
    return make_schedule(
        new_kind, every=every, cron=cron, tz=new_tz, expr=expr, start=new_start, finish=new_finish
    )


def rearmed(schedule: Schedule, phase: str, now: datetime) -> tuple[datetime, datetime | None, str]:
    """What a new schedule writes over a job at ``now``: the origin of its grid, its first
    slot, and its phase (FINISHED when it has no slot; out of FINISHED when it has one).

    ``change`` writes these; ``as_changed`` previews them.
    """
    next_run = first_run(schedule, now)
    if next_run is None:
        phase = "FINISHED"
    elif phase == "FINISHED":
        phase = "ENABLED"
    return schedule.start or now, next_run, phase


def as_changed(job: Job, schedule: Schedule, now: datetime) -> Job:
    """``job`` as ``change`` would leave it at ``now`` with ``schedule`` (the edit form's):
    itself when the schedule is the same, else re-armed from ``now``. Its intent, broken
    flag and run in flight stay, so a paused, disabled or broken job stays halted."""
    if schedule == job.schedule:
        return job
    anchor, next_run, phase = rearmed(schedule, job.phase, now)
    status = derive_status(intent=job.intent, broken=job.broken, running=job.running, phase=phase)
    return replace(
        job, schedule=schedule, anchor=anchor, next_run=next_run, phase=phase, status=status
    )


def parse_job_definition(item: Any) -> JobSpec:
    """One entry of an export file, validated."""
    from jobtui.core.timeutil import parse_when

    if not isinstance(item, dict):
        raise InvalidInput("expected a mapping with name, what and schedule")
    if item.get("problem") is not None:
        raise InvalidInput(
            f"exported with a problem ({str(item['problem'])[:200]}): its values are "
            "placeholders; fix the entry and delete its 'problem' field"
        )
    name = check_job_name(item.get("name", ""))
    w = item.get("what")
    if not isinstance(w, dict):
        raise InvalidInput("'what' must be a mapping with kind, target and args")
    args = w.get("args") or []
    if not isinstance(args, list):
        raise InvalidInput("'what.args' must be a list")
    what = What(w.get("kind", ""), w.get("target", ""), tuple(str(a) for a in args))
    s = item.get("schedule")
    if not isinstance(s, dict):
        raise InvalidInput("'schedule' must be a mapping with kind and its value")
    sched = make_schedule(
        str(s.get("kind", "")),
        every=s.get("every"),
        cron=s.get("cron"),
        tz=s.get("tz"),
        expr=s.get("expr"),
        start=parse_when(s["start"], "schedule.start") if s.get("start") else None,
        finish=parse_when(s["finish"], "schedule.finish") if s.get("finish") else None,
    )
    desc = check_description(item.get("description", ""))
    maxf = check_max_failures(item.get("max_failures", DEFAULT_MAX_FAILURES))
    disabled = item.get("disabled", False)
    if not isinstance(disabled, bool):
        raise InvalidInput("'disabled' must be true or false")
    return JobSpec(name, what, sched, desc, maxf, disabled)
