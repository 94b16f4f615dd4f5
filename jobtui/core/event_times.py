"""The Event Scheduler's schedule arithmetic: intervals, slots and time zones.

information_schema.EVENTS shows STARTS, ENDS, EXECUTE_AT and LAST_EXECUTED in
the event's own TIME_ZONE (whatever the session's), and the server steps an
event's slots in that zone's wall-clock time: ``STARTS + INTERVAL k*N unit``
(months clamped to the month's last day, as DATE_ADD does). These functions do
the same on naive local times; ``to_utc`` turns a local slot into aware UTC.
Pure: no database, no clock.
"""

from __future__ import annotations

import calendar
import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

# The parts of each interval field, most significant first (MySQL's INTERVAL units;
# events accept no MICROSECOND unit). A value with fewer parts fills the rightmost ones.
FIELD_PARTS: dict[str, tuple[str, ...]] = {
    "YEAR": ("YEAR",),
    "QUARTER": ("QUARTER",),
    "MONTH": ("MONTH",),
    "WEEK": ("WEEK",),
    "DAY": ("DAY",),
    "HOUR": ("HOUR",),
    "MINUTE": ("MINUTE",),
    "SECOND": ("SECOND",),
    "YEAR_MONTH": ("YEAR", "MONTH"),
    "DAY_HOUR": ("DAY", "HOUR"),
    "DAY_MINUTE": ("DAY", "HOUR", "MINUTE"),
    "DAY_SECOND": ("DAY", "HOUR", "MINUTE", "SECOND"),
    "HOUR_MINUTE": ("HOUR", "MINUTE"),
    "HOUR_SECOND": ("HOUR", "MINUTE", "SECOND"),
    "MINUTE_SECOND": ("MINUTE", "SECOND"),
}
_MONTHS = {"YEAR": 12, "QUARTER": 3, "MONTH": 1}
_SECONDS = {"WEEK": 7 * 86400, "DAY": 86400, "HOUR": 3600, "MINUTE": 60, "SECOND": 1}
CALENDAR_FIELDS = frozenset(f for f, parts in FIELD_PARTS.items() if parts[0] in _MONTHS)
_OFFSET_RE = re.compile(r"([+-])(\d{1,2}):(\d{2})")


@dataclass(frozen=True)
class Interval:
    """An event's EVERY: whole months (calendar fields) or whole seconds (the others)."""

    months: int
    seconds: int

    @property
    def fixed(self) -> bool:
        """Whether every step has the same length (no months, quarters, years)."""
        return self.months == 0


def parse_interval(value: str, field: str) -> Interval:
    """INTERVAL_VALUE (as the server shows it: '5', "'1:30'") of INTERVAL_FIELD.

    ValueError for a field or value the server would not have stored.
    """
    parts = FIELD_PARTS.get(field.upper())
    if parts is None:
        raise ValueError(f"unknown interval field {field!r}")
    numbers = [int(n) for n in re.findall(r"\d+", value.strip().strip("'\""))]
    if not numbers or len(numbers) > len(parts):
        raise ValueError(f"interval {value!r} does not fit {field}")
    named = dict(zip(parts[len(parts) - len(numbers) :], numbers, strict=True))
    months = sum(n * _MONTHS.get(unit, 0) for unit, n in named.items())
    seconds = sum(n * _SECONDS.get(unit, 0) for unit, n in named.items())
    if months <= 0 and seconds <= 0:
        raise ValueError(f"interval {value!r} {field} is not positive")
    return Interval(months, seconds)


def add_months(when: datetime, months: int) -> datetime:
    """``when + INTERVAL months MONTH``: the day clamped to the target month's last."""
    total = when.year * 12 + (when.month - 1) + months
    year, month = divmod(total, 12)
    day = min(when.day, calendar.monthrange(year, month + 1)[1])
    return when.replace(year=year, month=month + 1, day=day)


def step(starts: datetime, interval: Interval, k: int) -> datetime:
    """The k-th slot: ``STARTS + INTERVAL k*N unit`` (naive local times)."""
    if interval.months:
        return add_months(starts, k * interval.months)
    return starts + timedelta(seconds=k * interval.seconds)


def first_slot_at_or_after(starts: datetime, interval: Interval, when: datetime) -> datetime:
    """The first slot ``STARTS + k*N`` (k >= 0) that is not before ``when`` (naive local)."""
    if when <= starts:
        return starts
    if interval.months:
        elapsed = (when.year - starts.year) * 12 + (when.month - starts.month)
        k = max(0, elapsed // interval.months - 1)
        while step(starts, interval, k) < when:
            k += 1
        return step(starts, interval, k)
    seconds = (when - starts) / timedelta(seconds=1)
    k = max(0, math.ceil(seconds / interval.seconds) - 1)
    while step(starts, interval, k) < when:
        k += 1
    return step(starts, interval, k)


def zone(time_zone: str, system_zone: str = "") -> tzinfo | None:
    """The tzinfo of an event's TIME_ZONE ('+05:00', 'SYSTEM', 'Europe/Paris'), or None
    when Python does not know it (the caller then uses the offset the server gave)."""
    name = system_zone if time_zone.upper() == "SYSTEM" else time_zone
    match = _OFFSET_RE.fullmatch(name.strip())
    if match:
        sign, hours, minutes = match.groups()
        offset = timedelta(hours=int(hours), minutes=int(minutes))
        return timezone(-offset if sign == "-" else offset)
    if not name or "\x00" in name or name.startswith(("/", ".")):
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        return None


def fixed_offset(tz: tzinfo | None, year: int) -> bool:
    """Whether ``tz`` keeps one UTC offset all through ``year`` (no daylight saving)."""
    if tz is None:
        return False
    offsets = {tz.utcoffset(datetime(year, month, 1)) for month in (1, 4, 7, 10)}
    return len(offsets) == 1


def to_utc(local: datetime, tz: tzinfo | None, fallback: timedelta | None) -> datetime:
    """A naive local time of the event's zone as aware UTC: by ``tz``, else by the offset
    ``fallback`` (local minus UTC, as the server converted another of the event's times)."""
    if tz is not None:
        return local.replace(tzinfo=tz).astimezone(UTC)
    return (local - (fallback or timedelta(0))).replace(tzinfo=UTC)


def to_local(when: datetime, tz: tzinfo | None, fallback: timedelta | None) -> datetime:
    """Aware ``when`` as a naive local time of the event's zone (``to_utc``'s inverse)."""
    if tz is not None:
        return when.astimezone(tz).replace(tzinfo=None)
    return when.astimezone(UTC).replace(tzinfo=None) + (fallback or timedelta(0))
