"""Schedule arithmetic: validate a schedule and compute its next run times.

Pure functions, no database: ``expr`` schedules are evaluated by the database
(see ``JobStore.evaluate_expr``), everything else here. Every function takes
the times it needs as arguments, so tests never touch the real clock.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter

from jobtui.core.errors import InvalidInput
from jobtui.core.model import Schedule
from jobtui.core.timeutil import aware, parse_when

MIN_EVERY = 0.1
MAX_EVERY = 366 * 24 * 3600.0 * 100  # a century: anything longer is a typo
MAX_EXPR_LENGTH = 1_000
_MAX_ROUNDING_STEPS = 64  # next_slot's steps past a float-rounded slot (one or two at most)
_FORBIDDEN_EXPR = re.compile(
    r";|--|#|/\*|\*/|:=|\b(select|insert|update|delete|replace|into|outfile|dumpfile|call|"
    r"create|drop|alter|grant|revoke|set|load_file|sleep|benchmark|handler|lock|unlock|"
    # functions with side effects: a runner evaluates the expression on the connection that
    # holds the job's GET_LOCK, so lock functions would break mutual exclusion
    r"get_lock|release_lock|release_all_locks|master_pos_wait|master_gtid_wait|"
    r"source_pos_wait|load_extension|nextval|setval|sys_exec|sys_eval)\b",
    re.IGNORECASE,
)


_CRON_NAMES = re.compile(
    r"jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec|mon|tue|wed|thu|fri|sat|sun",
    re.IGNORECASE,
)


def parse_every(value: float | str) -> float:
    """Seconds between runs: a number >= 0.1 (fractions allowed)."""
    try:
        if isinstance(value, bool):
            raise TypeError
        seconds = float(value)
    except (TypeError, ValueError):
        raise InvalidInput(
            f"invalid --every {value!r}: expected a number of seconds, at least {MIN_EVERY}"
        ) from None
    if not math.isfinite(seconds) or seconds < MIN_EVERY or seconds > MAX_EVERY:
        raise InvalidInput(
            f"invalid --every {value!r}: the interval must be between {MIN_EVERY} and "
            f"{MAX_EVERY:.0f} seconds"
        )
    return round(seconds, 6)


def check_tz(tz: str | None) -> ZoneInfo:
    """An IANA time zone name (default UTC)."""
    if tz is None or tz == "":
        return ZoneInfo("UTC")
    if not isinstance(tz, str) or "\x00" in tz or len(tz) > 64 or tz.startswith(("/", ".")):
        raise InvalidInput(f"invalid time zone {tz!r}: expected an IANA name such as Europe/Paris")
    try:
        return ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidInput(
            f"unknown time zone {tz!r}: expected an IANA name such as UTC or Europe/Paris"
        ) from None


def check_cron(expr: str, tz: str | None = None) -> str:
    """A cron expression of 5 fields, or 6 with seconds last (croniter's order)."""
    if not isinstance(expr, str) or "\x00" in expr or len(expr) > 200:
        raise InvalidInput(f"invalid cron expression {expr!r}")
    fields = expr.split()
    if len(fields) not in (5, 6):
        raise InvalidInput(
            f"invalid cron expression {expr!r}: expected 5 fields (minute hour day month "
            "weekday) or 6 with seconds last, e.g. '*/5 * * * *'"
        )
    normal = " ".join(fields)
    for spec in fields:
        if re.search(r"[RH]", _CRON_NAMES.sub("", spec), re.IGNORECASE):
            raise InvalidInput(
                f"invalid cron expression {expr!r}: random (R) and hashed (H) fields are not "
                "accepted, since every runner and the preview must compute the same slots"
            )
    try:
        valid = croniter.is_valid(normal)
    except Exception:  # croniter raises several types for odd input
        valid = False
    if not valid:
        raise InvalidInput(f"invalid cron expression {expr!r}: {_bad_cron_field(fields)}")
    check_tz(tz)
    try:
        croniter(normal, datetime(2026, 1, 1, tzinfo=UTC)).get_next(datetime)
    except Exception as exc:  # e.g. 31 February: never matches
        raise InvalidInput(f"invalid cron expression {expr!r}: it never fires ({exc})") from None
    return normal


_CRON_FIELDS = (
    ("minute", "0-59"),
    ("hour", "0-23"),
    ("day-of-month", "1-31"),
    ("month", "1-12 or jan-dec"),
    ("weekday", "0-7 or sun-sat"),
    ("seconds", "0-59"),
)


def _bad_cron_field(fields: list[str]) -> str:
    """Which field croniter refuses, and what that field accepts (croniter does not say)."""
    for i, spec in enumerate(fields):
        probe = ["*"] * len(fields)
        probe[i] = spec
        try:
            croniter(" ".join(probe), datetime(2026, 1, 1, tzinfo=UTC))
        except Exception as exc:  # croniter raises several types for odd input
            name, accepted = _CRON_FIELDS[i]
            what = "out of range" if "out of" in str(exc) else "not a valid field"
            return (
                f"the {name} field (field {i + 1}) {spec!r} is {what}: the {name} takes "
                f"{accepted}, with *, lists (a,b), ranges (a-b) and steps (*/n)"
            )
    return (
        "expected 5 fields (minute hour day month weekday) or 6 with seconds last, "
        "e.g. '*/5 * * * *'"
    )


def check_expr(expr: str) -> str:
    """A date expression the database evaluates (Oracle's INTERVAL), syntactic checks only.

    The store evaluates it once at submit to prove it yields a date.
    """
    if not isinstance(expr, str) or not expr.strip():
        raise InvalidInput(
            "empty --expr: expected a SQL date expression such as NOW() + INTERVAL 1 DAY"
        )
    if "\x00" in expr or len(expr) > MAX_EXPR_LENGTH:
        raise InvalidInput(f"invalid --expr: at most {MAX_EXPR_LENGTH} characters, no NUL")
    bad = _FORBIDDEN_EXPR.search(expr)
    if bad:
        raise InvalidInput(
            f"invalid --expr {expr!r}: {bad.group(0)!r} is not allowed; expected one date "
            "expression such as NOW() + INTERVAL 1 DAY (no statements, comments or semicolons)"
        )
    return expr.strip()


def _window_time(value: object, label: str) -> datetime | None:
    """A window bound: a datetime as it is, ISO text parsed, anything else refused."""
    if not value:
        return None
    if isinstance(value, datetime):
        return aware(value)
    return parse_when(value, label)  # type: ignore[arg-type]  # it refuses non-text


def make_schedule(
    kind: str,
    *,
    every: float | str | None = None,
    cron: str | None = None,
    tz: str | None = None,
    expr: str | None = None,
    start: datetime | None = None,
    finish: datetime | None = None,
) -> Schedule:
    """Build a validated Schedule."""
    start = _window_time(start, "--start")
    finish = _window_time(finish, "--finish")
    if start and finish and finish <= start:
        raise InvalidInput(
            f"finish {finish.isoformat()} is not after start {start.isoformat()}: "
            "the window must end after it begins"
        )
    if tz and kind != "cron":
        raise InvalidInput("--tz is only accepted with --cron")
    if kind == "every":
        if every is None:
            raise InvalidInput("--every needs a number of seconds")
        return Schedule("every", every=parse_every(every), start=start, finish=finish)
    if kind == "cron":
        if cron is None:
            raise InvalidInput("--cron needs an expression")
        normal = check_cron(cron, tz)
        return Schedule("cron", cron=normal, tz=tz or None, start=start, finish=finish)
    if kind == "expr":
        if expr is None:
            raise InvalidInput("--expr needs a SQL date expression")
        return Schedule("expr", expr=check_expr(expr), start=start, finish=finish)
    if kind == "once":
        return Schedule("once", start=start, finish=finish)
    raise InvalidInput(f"invalid schedule kind {kind!r}: accepted are every, cron, expr, once")


def check_schedule(schedule: Schedule) -> Schedule:
    """Re-validate a Schedule built elsewhere (import, the console form)."""
    return make_schedule(
        schedule.kind,
        every=schedule.every,
        cron=schedule.cron,
        tz=schedule.tz,
        expr=schedule.expr,
        start=schedule.start,
        finish=schedule.finish,
    )


def first_run(schedule: Schedule, now: datetime) -> datetime | None:
    """The first slot of a new (or re-armed) job, at or after ``now``."""
    now = aware(now)
    if schedule.kind in ("once", "expr") and schedule.finish and schedule.finish < now:
        return None  # the window closed before the job could run
    if schedule.kind == "once":
        when = schedule.start or now
        return _in_window(schedule, when)
    if schedule.kind == "every":
        anchor = schedule.start or now
        if anchor >= now:
            return _in_window(schedule, anchor)
        return next_slot(schedule, now - timedelta(microseconds=1), anchor)
    if schedule.kind == "cron":
        return next_slot(schedule, now - timedelta(microseconds=1), now)
    # expr: the first run is at start (or now); later runs come from the expression
    return _in_window(schedule, schedule.start or now)


def next_slot(schedule: Schedule, after: datetime, anchor: datetime) -> datetime | None:
    """The first slot strictly after ``after``, or None when the schedule has no more.

    ``anchor`` is where an ``every`` grid starts (the window start, else the
    job's creation time). ``expr`` and ``once`` schedules have no slot here:
    ``once`` has one run only, ``expr`` is evaluated by the database.
    """
    try:
        return _next_slot(schedule, after, anchor)
    except (OverflowError, CroniterBadDateError):
        return None  # past the last date Python can hold (year 9999): no more slots


def checked_interval(step: object) -> float:
    """An every-N schedule's interval, refused unless in the range ``--every`` accepts.

    Never trust it in slot arithmetic: a zero, negative or NaN interval (a row
    written by hand) made ``next_slot`` walk backwards for ever, one runner
    thread at 100 % CPU (attack 5 in docs/privileges.md). Rows are checked when read
    (jobtui.core.row_checks); this is the second guard.
    """
    if type(step) not in (float, int) or not MIN_EVERY <= step <= MAX_EVERY:  # type: ignore[operator]
        raise InvalidInput(
            f"invalid schedule interval {step!r}: expected a number of seconds from "
            f"{MIN_EVERY} to {MAX_EVERY:.0f}"
        )
    return float(step)  # type: ignore[arg-type]


def _next_slot(schedule: Schedule, after: datetime, anchor: datetime) -> datetime | None:
    after = aware(after)
    if schedule.kind == "every":
        assert schedule.every is not None
        grid_start = aware(schedule.start or anchor)
        if after < grid_start:
            return _in_window(schedule, grid_start)
        step = checked_interval(schedule.every)
        k = math.floor((after - grid_start).total_seconds() / step) + 1
        slot = grid_start + timedelta(seconds=k * step)
        for _ in range(_MAX_ROUNDING_STEPS):
            if slot > after:
                return _in_window(schedule, slot)
            k += 1  # float rounding at microsecond precision
            slot = grid_start + timedelta(seconds=k * step)
        raise InvalidInput(f"no slot of every {step!r} s found after {after.isoformat()}")
    if schedule.kind == "cron":
        assert schedule.cron is not None
        zone = check_tz(schedule.tz)
        base = after
        if schedule.start and base < schedule.start:
            base = schedule.start - timedelta(microseconds=1)
        it = croniter(schedule.cron, base.astimezone(zone))
        try:
            slot = aware(it.get_next(datetime))
        except ValueError:  # dateutil: "year 10000 is out of range"
            return None
        return _in_window(schedule, slot)
    return None


def upcoming(schedule: Schedule, after: datetime, anchor: datetime, n: int = 5) -> list[datetime]:
    """The next ``n`` slots strictly after ``after`` (every and cron schedules)."""
    result: list[datetime] = []
    cursor = aware(after)
    while len(result) < n:
        slot = next_slot(schedule, cursor, anchor)
        if slot is None:
            break
        result.append(slot)
        cursor = slot
    return result


def _in_window(schedule: Schedule, when: datetime) -> datetime | None:
    if schedule.start and when < schedule.start:
        when = schedule.start
    if schedule.finish and when > schedule.finish:
        return None
    return when
