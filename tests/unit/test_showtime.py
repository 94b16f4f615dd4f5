"""jobtui.core.showtime: which jobs show no next run, and times with their zone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from support.samples import sample_job

from jobtui.core.model import Intent, Job, Status
from jobtui.core.showtime import halted, show_time, shown_next_run

NEXT = datetime(2026, 12, 5, 2, 0, tzinfo=UTC)


def _job(**over: object) -> Job:
    return sample_job(**{"next_run": NEXT, **over})


@pytest.mark.parametrize(
    "status", [Status.BROKEN, Status.DISABLED, Status.PAUSED, Status.ABORTED, Status.FINISHED]
)
def test_halted_statuses_show_no_next_run(status: Status) -> None:
    job = _job(status=status)
    assert halted(job)
    assert shown_next_run(job) is None
    assert job.next_run == NEXT  # the stored value is kept


@pytest.mark.parametrize(
    "status", [Status.ENABLED, Status.SLEEPING, Status.RESUMED, Status.ERROR, Status.RUNNING]
)
def test_scheduled_statuses_show_the_stored_next_run(status: Status) -> None:
    job = _job(status=status, phase="ERROR" if status is Status.ERROR else "SLEEPING")
    assert not halted(job)
    assert shown_next_run(job) == NEXT


@pytest.mark.parametrize(
    "over",
    [
        {"intent": Intent.PAUSED},
        {"intent": Intent.DISABLED},
        {"broken": True},
        {"abort_requested": True},
        {"phase": "FINISHED"},
    ],
)
def test_a_running_job_already_halted_shows_no_next_run(over: dict[str, object]) -> None:
    job = _job(status=Status.RUNNING, running=True, **over)
    assert halted(job)
    assert shown_next_run(job) is None


def test_show_time_utc_label() -> None:
    assert show_time(NEXT) == "2026-12-05 02:00:00 UTC"
    assert show_time(NEXT, None) == "2026-12-05 02:00:00 UTC"
    assert show_time(NEXT, "") == "2026-12-05 02:00:00 UTC"
    assert show_time(NEXT, "UTC") == "2026-12-05 02:00:00 UTC"


def test_show_time_naive_is_utc_and_aware_is_converted() -> None:
    assert show_time(datetime(2026, 12, 5, 2, 0)) == "2026-12-05 02:00:00 UTC"
    plus2 = datetime(2026, 12, 5, 4, 0, tzinfo=timezone(timedelta(hours=2)))
    assert show_time(plus2) == "2026-12-05 02:00:00 UTC"


def test_show_time_in_the_jobs_zone() -> None:
    assert show_time(NEXT, "Europe/Paris") == "2026-12-05 03:00:00 CET"
    summer = datetime(2026, 7, 1, 2, 0, tzinfo=UTC)
    assert show_time(summer, "Europe/Paris") == "2026-07-01 04:00:00 CEST"
    assert show_time(NEXT, "America/New_York") == "2026-12-04 21:00:00 EST"


def test_show_time_numeric_abbreviation_shows_the_zone_name() -> None:
    assert show_time(NEXT, "Asia/Dubai") == "2026-12-05 06:00:00 Asia/Dubai"


def test_show_time_unknown_zone_falls_back_to_utc() -> None:
    # rows are untrusted: a bad zone name never raises and never claims a zone
    assert show_time(NEXT, "Mars/Olympus") == "2026-12-05 02:00:00 UTC"
    assert show_time(NEXT, "../etc/passwd") == "2026-12-05 02:00:00 UTC"


def test_show_time_none() -> None:
    assert show_time(None) == "-"
    assert show_time(None, "Europe/Paris") == "-"
