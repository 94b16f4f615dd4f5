"""Schedule arithmetic (jobtui.core.schedules): properties checked with hypothesis.

No database and no real clock: every function takes the instants it needs.
Cron results are checked against an independent brute-force matcher written
here (not croniter), walking local wall-clock time across DST changes.
"""

from __future__ import annotations

import itertools
import math
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from jobtui.core.errors import InvalidInput
from jobtui.core.model import Schedule, describe_schedule, format_seconds
from jobtui.core.schedules import (
    MIN_EVERY,
    check_cron,
    first_run,
    make_schedule,
    next_slot,
    parse_every,
    upcoming,
)

US = timedelta(microseconds=1)
# timedelta(seconds=k * step) rounds to the microsecond: one tick of slack
TOLERANCE = timedelta(microseconds=1)

instants = st.datetimes(
    min_value=datetime(2000, 1, 1),
    max_value=datetime(2100, 1, 1),
    timezones=st.just(UTC),
)
steps = st.one_of(
    st.floats(min_value=MIN_EVERY, max_value=10.0),
    st.floats(min_value=10.0, max_value=7 * 86400.0),
    st.integers(min_value=1, max_value=86400).map(float),
    st.sampled_from([0.1, 0.3, 0.7, 1.1, 2.5, 59.9, 3600.0, 86400.0]),
).map(parse_every)  # the stored value: rounded to the microsecond
offsets = st.floats(min_value=-1e6, max_value=1e8)  # seconds from the grid start


def grid(start: datetime, step: float, k: int) -> datetime:
    return start + timedelta(seconds=k * step)


# ---------------------------------------------------------------------- every N seconds


@settings(deadline=None)  # no timing under a loaded CI machine
@given(start=instants, step=steps, offset=offsets)
def test_every_next_is_the_first_grid_point_after(
    start: datetime, step: float, offset: float
) -> None:
    schedule = make_schedule("every", every=step)
    after = start + timedelta(seconds=offset)
    slot = next_slot(schedule, after, start)
    assert slot is not None
    assert slot > after
    if after < start:
        assert slot == start
        return
    k = round((slot - start).total_seconds() / step)
    assert abs(slot - grid(start, step, k)) <= TOLERANCE  # on the grid
    assert grid(start, step, k - 1) <= after + TOLERANCE  # and no grid point was skipped


@settings(deadline=None)  # no timing under a loaded CI machine
@given(start=instants, step=steps, offset=st.floats(min_value=0, max_value=1e7))
def test_every_upcoming_is_increasing_and_evenly_spaced(
    start: datetime, step: float, offset: float
) -> None:
    schedule = make_schedule("every", every=step)
    times = upcoming(schedule, start + timedelta(seconds=offset), start, 8)
    assert len(times) == 8
    for a, b in itertools.pairwise(times):
        assert b > a
        assert abs((b - a) - timedelta(seconds=step)) <= 2 * TOLERANCE


@settings(deadline=None)  # no timing under a loaded CI machine
@given(
    start=instants,
    step=steps,
    slots=st.integers(min_value=0, max_value=10_000),
    lateness=st.floats(min_value=0, max_value=0.999),
)
def test_every_no_drift_when_asking_late(
    start: datetime, step: float, slots: int, lateness: float
) -> None:
    """A runner that looks late still gets the grid slot, never 'late + N'."""
    schedule = make_schedule("every", every=step)
    on_time = next_slot(schedule, grid(start, step, slots), start)
    late = next_slot(schedule, grid(start, step, slots) + timedelta(seconds=lateness * step), start)
    assert on_time is not None and late is not None
    if late != on_time:
        # only when lateness reached the very next slot (microsecond rounding)
        assert late == next_slot(schedule, on_time, start)
    assert abs(on_time - grid(start, step, slots + 1)) <= TOLERANCE


@settings(deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    start=instants,
    step=steps,
    length=st.floats(min_value=0.2, max_value=1e6),
    offset=st.floats(min_value=-1e5, max_value=1e6),
)
def test_every_stays_inside_the_window(
    start: datetime, step: float, length: float, offset: float
) -> None:
    finish = start + timedelta(seconds=length)
    assume(finish > start)
    schedule = make_schedule("every", every=step, start=start, finish=finish)
    after = start + timedelta(seconds=offset)
    times = upcoming(schedule, after, start - timedelta(days=3), 20)
    for t in times:
        assert start <= t <= finish
        assert t > after
    if after >= finish:
        assert times == []
    if after < start:
        assert times[0] == start  # the window start is the grid start
    room = (finish - max(after, start)).total_seconds()
    assert len(times) <= max(0, min(20, math.floor(room / step) + 2))


@settings(deadline=None)  # no timing under a loaded CI machine
@given(now=instants, step=steps, offset=st.floats(min_value=-1e7, max_value=1e7))
def test_every_first_run(now: datetime, step: float, offset: float) -> None:
    start = now + timedelta(seconds=offset)
    schedule = make_schedule("every", every=step, start=start)
    first = first_run(schedule, now)
    assert first is not None and first >= now - US
    if start >= now:
        assert first == start
    else:
        k = round((first - start).total_seconds() / step)
        assert abs(first - grid(start, step, k)) <= TOLERANCE
        assert first - timedelta(seconds=step) < now


def test_every_first_run_without_start_is_now() -> None:
    now = datetime(2026, 5, 1, 8, 0, tzinfo=UTC)
    assert first_run(make_schedule("every", every=5), now) == now


def test_every_grid_ignores_the_anchor_when_a_start_is_given() -> None:
    start = datetime(2026, 1, 1, tzinfo=UTC)
    schedule = make_schedule("every", every=10, start=start)
    anchor = datetime(2026, 1, 1, 0, 0, 3, tzinfo=UTC)
    after = datetime(2026, 1, 1, 0, 1, 1, tzinfo=UTC)
    assert next_slot(schedule, after, anchor) == datetime(2026, 1, 1, 0, 1, 10, tzinfo=UTC)


# ---------------------------------------------------------------------- parse_every


@pytest.mark.parametrize(
    ("value", "seconds"),
    [(0.1, 0.1), ("0.1", 0.1), (5, 5.0), ("2.5", 2.5), (86400, 86400.0), (1.23456789, 1.234568)],
)
def test_parse_every_accepts(value: object, seconds: float) -> None:
    assert parse_every(value) == seconds  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "value",
    [
        0,
        0.0,
        0.09,
        0.0999999,
        -1,
        -0.5,
        math.nan,
        math.inf,
        -math.inf,
        "nan",
        "inf",
        "",
        "x",
        None,
        "5s",
        True,
        1e12,
    ],
)
def test_parse_every_refuses(value: object) -> None:
    with pytest.raises(InvalidInput, match=r"--every .*(at least 0\.1|between 0\.1)"):
        parse_every(value)  # type: ignore[arg-type]


@settings(deadline=None)  # no timing under a loaded CI machine
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_parse_every_bounds(value: float) -> None:
    if math.isfinite(value) and MIN_EVERY <= value <= 366 * 24 * 3600.0 * 100:
        assert parse_every(value) == round(value, 6)
    else:
        with pytest.raises(InvalidInput):
            parse_every(value)


# ---------------------------------------------------------------------- cron: a reference matcher


def field_values(spec: str, lo: int, hi: int) -> set[int]:
    values: set[int] = set()
    for part in spec.split(","):
        step = 1
        if "/" in part:
            part, step_text = part.split("/")
            step = int(step_text)
        if part == "*":
            a, b = lo, hi
        elif "-" in part:
            a, b = (int(x) for x in part.split("-"))
        else:
            a = int(part)
            b = hi if step > 1 else a
        values.update(range(a, b + 1, step))
    return values


def cron_matcher(cron: str):  # type: ignore[no-untyped-def]
    fields = cron.split()
    minute = field_values(fields[0], 0, 59)
    hour = field_values(fields[1], 0, 23)
    dom = field_values(fields[2], 1, 31)
    month = field_values(fields[3], 1, 12)
    dow = {d % 7 for d in field_values(fields[4], 0, 7)}
    second = field_values(fields[5], 0, 59) if len(fields) == 6 else {0}
    assert fields[2] == "*" or fields[4] == "*", "the matcher does not do dom OR dow"

    def match(wall: datetime) -> bool:
        return (
            wall.second in second
            and wall.minute in minute
            and wall.hour in hour
            and wall.day in dom
            and wall.month in month
            and (wall.weekday() + 1) % 7 in dow
        )

    return match, sorted(second)


def brute_force(cron: str, zone: ZoneInfo, after: datetime, until: datetime) -> list[datetime]:
    """Every instant in (after, until] whose local wall time matches ``cron``.

    A matching wall time that does not exist (the hour skipped in spring) fires
    at the first instant after the gap, as cron (and croniter) do.
    """
    match, seconds = cron_matcher(cron)
    found: set[datetime] = set()
    minute = after.replace(second=0, microsecond=0)
    while minute <= until:
        wall = minute.astimezone(zone).replace(tzinfo=None)
        for s in seconds:
            instant = minute + timedelta(seconds=s)
            if after < instant <= until and match(wall + timedelta(seconds=s)):
                found.add(instant)
        nxt = minute + timedelta(minutes=1)
        next_wall = nxt.astimezone(zone).replace(tzinfo=None)
        gap = wall + timedelta(minutes=1)
        while gap < next_wall:  # wall-clock minutes that never happen
            for s in seconds:
                # croniter moves a skipped time to the end of the gap, keeping its seconds
                if (
                    match(gap + timedelta(seconds=s))
                    and after < nxt + timedelta(seconds=s) <= until
                ):
                    found.add(nxt + timedelta(seconds=s))
            gap += timedelta(minutes=1)
        minute = nxt
    return sorted(found)


def slots_until(schedule: Schedule, after: datetime, until: datetime) -> list[datetime]:
    result = []
    cursor = after
    while True:
        slot = next_slot(schedule, cursor, after)
        assert slot is not None
        assert slot > cursor, "not strictly after the previous slot"
        if slot > until:
            return result
        result.append(slot)
        cursor = slot


# (zone, the UTC instant of a DST change)
DST_CHANGES = [
    ("Europe/Berlin", datetime(2026, 3, 29, 1, 0, tzinfo=UTC)),  # 02:00 -> 03:00
    ("Europe/Berlin", datetime(2026, 10, 25, 1, 0, tzinfo=UTC)),  # 03:00 -> 02:00
    ("America/New_York", datetime(2026, 3, 8, 7, 0, tzinfo=UTC)),  # 02:00 -> 03:00
    ("America/New_York", datetime(2026, 11, 1, 6, 0, tzinfo=UTC)),  # 02:00 -> 01:00
    ("Australia/Lord_Howe", datetime(2026, 4, 4, 15, 0, tzinfo=UTC)),  # half-hour shift
]
DST_CRONS = [
    "0 * * * *",
    "*/30 * * * *",
    "30 2 * * *",
    "15 1-3 * * *",
    "0 2 * * *",
    "45 0,1,2,3 * * *",
    "*/20 2 * * *",
    "59 1 * * *",
    "0 3 * * 0",
    "*/30 * * * * 0,30",
    "0 2 * * * 15",
]


@settings(max_examples=60, deadline=None)
@given(
    change=st.sampled_from(DST_CHANGES),
    cron=st.sampled_from(DST_CRONS),
    before=st.integers(min_value=0, max_value=30 * 60),  # minutes before the change
)
def test_cron_with_tz_across_dst(change: tuple[str, datetime], cron: str, before: int) -> None:
    zone_name, instant = change
    zone = ZoneInfo(zone_name)
    schedule = make_schedule("cron", cron=cron, tz=zone_name)
    after = instant - timedelta(minutes=before, seconds=7)
    until = instant + timedelta(hours=30)
    got = slots_until(schedule, after, until)
    assert got == sorted(set(got))  # strictly increasing, no duplicates
    assert got == brute_force(cron, zone, after, until)


def test_cron_spring_forward_fires_once_after_the_gap() -> None:
    schedule = make_schedule("cron", cron="30 2 * * *", tz="Europe/Berlin")
    after = datetime(2026, 3, 28, 12, 0, tzinfo=UTC)
    got = upcoming(schedule, after, after, 2)
    berlin = ZoneInfo("Europe/Berlin")
    # 02:30 does not exist on 29 March: it runs at 03:00 CEST, then 02:30 as usual
    assert got[0] == datetime(2026, 3, 29, 3, 0, tzinfo=berlin)
    assert got[1] == datetime(2026, 3, 30, 2, 30, tzinfo=berlin)


def test_cron_fall_back_hourly_keeps_every_hour() -> None:
    schedule = make_schedule("cron", cron="0 * * * *", tz="Europe/Berlin")
    after = datetime(2026, 10, 24, 22, 30, tzinfo=UTC)
    got = upcoming(schedule, after, after, 5)
    assert [t.hour for t in got] == [23, 0, 1, 2, 3]  # UTC: one hour apart throughout
    assert [t.astimezone(ZoneInfo("Europe/Berlin")).hour for t in got] == [1, 2, 2, 3, 4]


@settings(max_examples=60, deadline=None)
@given(
    cron=st.sampled_from(
        [
            "*/5 * * * *",
            "0 9 * * 1-5",
            "30 */6 * * *",
            "0 0 1 * *",
            "0 0 * 2 *",
            "* * * * * */15",
            "*/2 * * * * 0,20,40",
            "0 12 * * * 30",
        ]
    ),
    tz=st.sampled_from(["UTC", "Asia/Kolkata", "America/New_York", "Pacific/Chatham"]),
    after=instants,
)
def test_cron_matches_fields_in_local_time(cron: str, tz: str, after: datetime) -> None:
    schedule = make_schedule("cron", cron=cron, tz=tz)
    match, _ = cron_matcher(cron)
    times = upcoming(schedule, after, after, 6)
    assert len(times) == 6
    previous = after
    for t in times:
        assert t > previous
        assert t.utcoffset() == timedelta(0)  # slots are UTC instants
        wall = t.astimezone(ZoneInfo(tz))
        assert match(wall.replace(tzinfo=None))
        previous = t
    # nothing matching was skipped between the first and the last (when cheap to walk)
    if times[-1] - after <= timedelta(days=3):
        assert times == brute_force(cron, ZoneInfo(tz), after, times[-1])


def test_cron_six_fields_are_seconds_last() -> None:
    after = datetime(2026, 6, 1, 10, 0, 0, tzinfo=UTC)
    schedule = make_schedule("cron", cron="*/10 * * * * 30")
    assert upcoming(schedule, after, after, 3) == [
        datetime(2026, 6, 1, 10, 0, 30, tzinfo=UTC),
        datetime(2026, 6, 1, 10, 10, 30, tzinfo=UTC),
        datetime(2026, 6, 1, 10, 20, 30, tzinfo=UTC),
    ]
    every_15s = make_schedule("cron", cron="* * * * * */15")
    assert upcoming(every_15s, after, after, 4) == [
        after + timedelta(seconds=s) for s in (15, 30, 45, 60)
    ]


def test_cron_window() -> None:
    start = datetime(2026, 6, 1, 10, 7, tzinfo=UTC)
    finish = datetime(2026, 6, 1, 10, 31, tzinfo=UTC)
    schedule = make_schedule("cron", cron="*/10 * * * *", start=start, finish=finish)
    before = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)
    assert upcoming(schedule, before, before, 9) == [
        datetime(2026, 6, 1, 10, m, tzinfo=UTC) for m in (10, 20, 30)
    ]
    assert next_slot(schedule, finish, before) is None
    # the start itself counts when it is on a slot
    on = make_schedule("cron", cron="*/10 * * * *", start=datetime(2026, 6, 1, 10, 10, tzinfo=UTC))
    assert next_slot(on, before, before) == datetime(2026, 6, 1, 10, 10, tzinfo=UTC)


def test_cron_first_run_at_a_slot_is_now() -> None:
    now = datetime(2026, 6, 1, 10, 10, tzinfo=UTC)
    assert first_run(make_schedule("cron", cron="*/5 * * * *"), now) == now
    later = now + timedelta(seconds=1)
    assert first_run(make_schedule("cron", cron="*/5 * * * *"), later) == now + timedelta(minutes=5)


@pytest.mark.parametrize(
    "cron",
    [
        "* * * *",
        "* * * * * * *",
        "60 * * * *",
        "* 24 * * *",
        "* * 32 * *",
        "* * * 13 *",
        "0 0 30 2 *",
        "@daily",
        "",
        "a b c d e",
        "*/0 * * * *",
        "* * * * * 60",
        "R * * * *",
        "0 R(1-5) * * *",
        "H * * * *",
        "0 0 * * r",
    ],
)
def test_check_cron_refuses(cron: str) -> None:
    with pytest.raises(InvalidInput, match="cron expression"):
        check_cron(cron)


def test_check_cron_normalises_spacing() -> None:
    assert check_cron("  */5   *  * * * ") == "*/5 * * * *"


@pytest.mark.parametrize(
    "cron",
    ["0 0 * * MON-FRI", "0 0 1 JAN,MAR *", "0 0 * * THU", "0 0 L * *", "0 0 * * 5#3", "0 0 ? * *"],
)
def test_check_cron_accepts_names_and_croniter_extensions(cron: str) -> None:
    assert check_cron(cron) == cron


# ---------------------------------------------------------------------- once, expr


def test_once_and_expr_have_no_next_slot_here() -> None:
    now = datetime(2026, 6, 1, tzinfo=UTC)
    once = make_schedule("once", start=now + timedelta(hours=1))
    assert first_run(once, now) == now + timedelta(hours=1)
    assert next_slot(once, now, now) is None
    expr = make_schedule("expr", expr="NOW() + INTERVAL 1 DAY")
    assert first_run(expr, now) == now
    assert next_slot(expr, now, now) is None
    late = make_schedule("once", start=now - timedelta(days=2), finish=now - timedelta(days=1))
    assert first_run(late, now) is None  # the window is over before it could run


# ---------------------------------------------------------------------- describe


@pytest.mark.parametrize(
    ("schedule", "text"),
    [
        (make_schedule("every", every=5), "every 5 s"),
        (make_schedule("every", every=0.5), "every 0.5 s"),
        (make_schedule("every", every=300), "every 5 min"),
        (make_schedule("every", every=90), "every 90 s"),
        (make_schedule("every", every=7200), "every 2 h"),
        (make_schedule("every", every=86400), "every 1 d"),
        (make_schedule("cron", cron="*/5 * * * *"), "cron */5 * * * * UTC"),
        (
            make_schedule("cron", cron="0 9 * * 1-5", tz="Europe/Berlin"),
            "cron 0 9 * * 1-5 Europe/Berlin",
        ),
        (make_schedule("expr", expr="NOW() + INTERVAL 1 DAY"), "expr NOW() + INTERVAL 1 DAY"),
        (make_schedule("once"), "once"),
        (
            make_schedule("once", start=datetime(2026, 12, 24, 17, 0, tzinfo=UTC)),
            "once at 2026-12-24 17:00:00 UTC",
        ),
        (
            make_schedule(
                "every",
                every=60,
                start=datetime(2026, 1, 1, tzinfo=UTC),
                finish=datetime(2026, 2, 1, tzinfo=UTC),
            ),
            "every 1 min from 2026-01-01 00:00:00 UTC until 2026-02-01 00:00:00 UTC",
        ),
        (
            make_schedule(
                "every", every=5, start=datetime(2026, 1, 1, 1, 0, tzinfo=ZoneInfo("Europe/Berlin"))
            ),
            "every 5 s from 2026-01-01 00:00:00 UTC",
        ),
    ],
)
def test_describe(schedule: Schedule, text: str) -> None:
    assert describe_schedule(schedule) == text == schedule.describe()


@settings(deadline=None)  # no timing under a loaded CI machine
@given(st.floats(min_value=MIN_EVERY, max_value=1e7).map(parse_every))
def test_format_seconds_round_trips(seconds: float) -> None:
    text = format_seconds(seconds)
    number, unit = text.split(" ")
    size = {"s": 1, "min": 60, "h": 3600, "d": 86400}[unit]
    assert math.isclose(float(number) * size, seconds, rel_tol=1e-5)


def test_no_slot_beyond_the_calendar() -> None:
    """Near year 9999 the schedule simply ends: no OverflowError reaches a runner."""
    start = datetime(9998, 6, 1, tzinfo=UTC)
    century = make_schedule("every", every=100 * 366 * 86400, start=start)
    assert next_slot(century, start + timedelta(days=30), start) is None
    yearly = make_schedule("cron", cron="0 0 1 1 *", start=start)
    assert next_slot(yearly, start, start) == datetime(9999, 1, 1, tzinfo=UTC)
    assert next_slot(yearly, datetime(9999, 1, 1, tzinfo=UTC), start) is None
