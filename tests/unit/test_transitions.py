"""Status derivation, scheduled-run eligibility and DBMS_JOB's retry backoff."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobtui.core.model import Intent, Status
from jobtui.core.transitions import (
    BACKOFF_CAP,
    PHASES,
    backoff_delay,
    derive_status,
    is_due_for_schedule,
    retry_time,
)

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
INTENTS = [i.value for i in Intent]


def expected_status(intent: str, broken: bool, running: bool, phase: str) -> Status:
    """The precedence, written as a table: RUNNING, FINISHED, intent, BROKEN, phase."""
    if running:
        return Status.RUNNING
    if phase == "FINISHED":
        return Status.FINISHED
    return {
        "DISABLED": Status.DISABLED,
        "PAUSED": Status.PAUSED,
    }.get(intent, Status.BROKEN if broken else Status(phase))


@pytest.mark.parametrize(
    ("intent", "broken", "running", "phase"),
    list(itertools.product(INTENTS, [False, True], [False, True], PHASES)),
)
def test_derive_status_every_combination(
    intent: str, broken: bool, running: bool, phase: str
) -> None:
    got = derive_status(intent=intent, broken=broken, running=running, phase=phase)
    assert got is expected_status(intent, broken, running, phase)
    # the enum and its plain text value give the same answer (rows hold text)
    assert derive_status(intent=Intent(intent), broken=broken, running=running, phase=phase) is got


@pytest.mark.parametrize(
    ("intent", "broken", "running", "phase", "status"),
    [
        ("ENABLED", False, False, "ENABLED", Status.ENABLED),  # submitted
        ("ENABLED", False, True, "ENABLED", Status.RUNNING),
        ("PAUSED", True, True, "ERROR", Status.RUNNING),  # running outranks everything
        ("DISABLED", True, False, "FINISHED", Status.FINISHED),  # finished outranks intent
        ("DISABLED", True, False, "ERROR", Status.DISABLED),  # intent outranks broken
        ("PAUSED", True, False, "SLEEPING", Status.PAUSED),
        ("ENABLED", True, False, "ERROR", Status.BROKEN),  # broken outranks the phase
        ("ENABLED", True, False, "ABORTED", Status.BROKEN),
        ("ENABLED", False, False, "ERROR", Status.ERROR),
        ("ENABLED", False, False, "SLEEPING", Status.SLEEPING),
        ("ENABLED", False, False, "RESUMED", Status.RESUMED),
        ("ENABLED", False, False, "ABORTED", Status.ABORTED),
    ],
)
def test_derive_status_precedence(
    intent: str, broken: bool, running: bool, phase: str, status: Status
) -> None:
    assert derive_status(intent=intent, broken=broken, running=running, phase=phase) is status


def test_every_status_is_reachable() -> None:
    reached = {
        derive_status(intent=i, broken=b, running=r, phase=p)
        for i, b, r, p in itertools.product(INTENTS, [False, True], [False, True], PHASES)
    }
    assert reached == set(Status)


def test_unknown_phase_shows_broken() -> None:
    """A phase outside the set (a row written by hand) never raises: recording a run or
    steering such a row goes on, and the job shows BROKEN (tests/security/test_security_rows.py)."""
    assert (
        derive_status(intent="ENABLED", broken=False, running=False, phase="NAPPING")
        is Status.BROKEN
    )


@pytest.mark.parametrize(
    ("intent", "broken", "running", "phase", "next_run", "due"),
    [
        ("ENABLED", False, False, "ENABLED", NOW, True),
        ("ENABLED", False, False, "SLEEPING", NOW - timedelta(hours=1), True),
        ("ENABLED", False, False, "ERROR", NOW, True),  # the retry is a scheduled run
        ("ENABLED", False, False, "RESUMED", NOW, True),
        ("ENABLED", False, False, "SLEEPING", NOW + timedelta(microseconds=1), False),
        ("ENABLED", False, False, "SLEEPING", None, False),
        ("ENABLED", False, False, "ABORTED", NOW, False),
        ("ENABLED", False, False, "FINISHED", NOW, False),
        ("ENABLED", True, False, "SLEEPING", NOW, False),
        ("ENABLED", False, True, "SLEEPING", NOW, False),
        ("PAUSED", False, False, "SLEEPING", NOW, False),
        ("DISABLED", False, False, "SLEEPING", NOW, False),
    ],
)
def test_is_due_for_schedule(
    intent: str, broken: bool, running: bool, phase: str, next_run: datetime | None, due: bool
) -> None:
    got = is_due_for_schedule(
        intent=intent, broken=broken, running=running, phase=phase, next_run=next_run, now=NOW
    )
    assert got is due


def test_backoff_doubles_from_one_minute() -> None:
    assert [backoff_delay(n) for n in range(0, 7)] == [
        timedelta(0),
        timedelta(minutes=1),
        timedelta(minutes=2),
        timedelta(minutes=4),
        timedelta(minutes=8),
        timedelta(minutes=16),
        timedelta(minutes=32),
    ]
    assert backoff_delay(-3) == timedelta(0)


@settings(deadline=None)  # no timing under a loaded CI machine
@given(st.integers(min_value=1, max_value=10_000))
def test_backoff_is_capped_and_monotonic(failures: int) -> None:
    delay = backoff_delay(failures)
    assert timedelta(minutes=1) <= delay <= BACKOFF_CAP
    assert backoff_delay(failures + 1) >= delay
    if failures <= 11:  # 2**10 minutes < 1 day
        assert delay == timedelta(minutes=2 ** (failures - 1))
    if failures >= 12:
        assert delay == BACKOFF_CAP


@settings(deadline=None)  # no timing under a loaded CI machine
@given(
    failures=st.integers(min_value=1, max_value=64),
    finished=st.datetimes(
        min_value=datetime(2000, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC)
    ),
    gap=st.one_of(st.none(), st.floats(min_value=0, max_value=3 * 86400)),
)
def test_retry_time_never_after_the_next_regular_slot(
    failures: int, finished: datetime, gap: float | None
) -> None:
    next_regular = None if gap is None else finished + timedelta(seconds=gap)
    retry = retry_time(failures, finished, next_regular)
    assert retry <= finished + backoff_delay(failures)
    if next_regular is None:
        assert retry == finished + backoff_delay(failures)
    else:
        assert retry <= next_regular
        assert retry == min(finished + backoff_delay(failures), next_regular)


def test_retry_time_examples() -> None:
    assert retry_time(1, NOW, None) == NOW + timedelta(minutes=1)
    assert retry_time(3, NOW, NOW + timedelta(hours=1)) == NOW + timedelta(minutes=4)
    # an every-30s job retries on its own next slot, not after a minute
    assert retry_time(1, NOW, NOW + timedelta(seconds=30)) == NOW + timedelta(seconds=30)


def test_status_after_takes_written_values_over_the_current_row() -> None:
    from types import SimpleNamespace

    from jobtui.core.transitions import status_after

    row = SimpleNamespace(intent="ENABLED", broken=0, running=1, phase="SLEEPING")
    assert status_after(row, {}) == "RUNNING"
    assert status_after(row, {"running": False}) == "SLEEPING"
    assert status_after(row, {"running": False, "broken": True}) == "BROKEN"
    assert status_after(row, {"running": 0, "intent": "PAUSED"}) == "PAUSED"
    assert status_after(row, {"running": False, "phase": "FINISHED"}) == "FINISHED"
