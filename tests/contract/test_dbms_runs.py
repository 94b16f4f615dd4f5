"""DBMS_JOB's run bookkeeping through the store and a real pool, on SQLite and MariaDB
(issue 26): a failed run-now backs off 1, 2, 4 minutes as a scheduled run's failure
does; no retry after the job's window; total_time counts every run."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text
from support.procs import wait_for

from jobtui.core.bookkeeping import finish_values
from jobtui.core.model import Intent, Job, Outcome, Schedule, Status, What
from jobtui.core.runner.pool import RunnerPool
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore
from jobtui.core.timeutil import from_db


@pytest.fixture
def pool(store: JobStore) -> Iterator[RunnerPool]:
    p = RunnerPool(store, threads=2, poll=0.2, name="manual")
    p.start()
    yield p
    p.stop(grace=0)


def _failing(store: JobStore, name: str, schedule: Schedule) -> None:
    """A job whose statement compiles at submit and fails at run time (its table is gone)."""
    with store.write() as conn:
        conn.execute(text(f"CREATE TABLE gone_{name} (x INT)"))
    store.submit(name, What("sql", f"INSERT INTO gone_{name} (x) VALUES (1)"), schedule)
    with store.write() as conn:
        conn.execute(text(f"DROP TABLE gone_{name}"))


def _run_now_and_wait(store: JobStore, name: str) -> Job:
    before = len(store.runs(name, limit=100))
    store.run_now(name)
    assert wait_for(
        lambda: len([r for r in store.runs(name, limit=100) if r.finished]) > before, 15
    )
    assert wait_for(lambda: not store.get(name).running, 5)
    return store.get(name)


def test_failed_run_now_backs_off_1_2_4_minutes(store: JobStore, pool: RunnerPool) -> None:
    """A once job far ahead, run now three times, failing: retries 1, 2 and 4 minutes
    after each run's end (before: always the first retry, a minute after the first
    failure)."""
    far = datetime.now(UTC) + timedelta(days=400)
    _failing(store, "once", make_schedule("once", start=far))
    waits = []
    for _ in range(3):
        job = _run_now_and_wait(store, "once")
        assert job.last_outcome is Outcome.FAILED
        assert job.next_run is not None and job.last_cycle_finish is not None
        waits.append((job.next_run - job.last_cycle_finish).total_seconds() / 60)
    assert waits == [pytest.approx(m, abs=0.01) for m in (1, 2, 4)]
    assert store.get("once").failures == 3


def _job(**over: object) -> Job:
    base: dict[str, object] = {
        "id": 1,
        "owner": "o",
        "name": "j",
        "description": "",
        "what": What("sql", "SELECT 1"),
        "schedule": Schedule("every", every=300.0),
        "status": Status.ERROR,
        "intent": Intent.ENABLED,
        "broken": False,
        "failures": 3,
        "max_failures": 16,
        "cycles": 0,
        "created": datetime(2026, 1, 1, tzinfo=UTC),
        "anchor": datetime(2026, 1, 1, tzinfo=UTC),
        "phase": "ERROR",
    }
    base.update(over)
    return Job(**base)  # type: ignore[arg-type]


def test_a_manual_failure_in_error_is_capped_by_the_next_grid_slot_not_the_last_retry() -> None:
    t0 = datetime(2026, 1, 1, 0, 0, 30, tzinfo=UTC)
    job = _job(next_run=t0 + timedelta(seconds=60))  # the last failure's retry
    ended = t0 + timedelta(seconds=1)
    values = finish_values(
        job, "ERROR", outcome=Outcome.FAILED, error="e", started=t0, finished=ended, manual=True
    )
    # 4th failure: 8 minutes, but the every-300 grid's next slot (00:05:00) comes first
    assert from_db(values["next_run"]) == datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
    # a scheduled run's claim planned next_run: that one caps it
    values = finish_values(
        job, "ERROR", outcome=Outcome.FAILED, error="e", started=t0, finished=ended, manual=False
    )
    assert from_db(values["next_run"]) == t0 + timedelta(seconds=60)


def test_no_retry_after_the_window_has_finished(store: JobStore, pool: RunnerPool) -> None:
    """A failed run whose retry (a minute later) would come after the window's finish:
    no next run, FINISHED (it ran 4 minutes past `finish` before)."""
    now = datetime.now(UTC)
    _failing(store, "late", make_schedule("once", start=now, finish=now + timedelta(seconds=20)))
    assert wait_for(lambda: store.get("late").last_outcome is Outcome.FAILED, 15)
    assert wait_for(lambda: not store.get("late").running, 5)
    job = store.get("late")
    assert job.next_run is None
    assert job.status is Status.FINISHED and job.failures == 1


def test_a_retry_inside_the_window_stays() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    inside = _job(
        schedule=Schedule("every", every=300.0, finish=t0 + timedelta(hours=1)),
        next_run=t0 + timedelta(seconds=300),
        phase="SLEEPING",
        failures=0,
    )
    values = finish_values(
        inside,
        "SLEEPING",
        outcome=Outcome.FAILED,
        error="e",
        started=t0,
        finished=t0,
        manual=False,
    )
    assert from_db(values["next_run"]) == t0 + timedelta(minutes=1)
    assert values["phase"] == "ERROR"
    past = _job(
        schedule=Schedule("every", every=300.0, finish=t0 + timedelta(seconds=30)),
        next_run=None,
        phase="SLEEPING",
        failures=0,
    )
    values = finish_values(
        past,
        "SLEEPING",
        outcome=Outcome.FAILED,
        error="e",
        started=t0,
        finished=t0,
        manual=False,
    )
    assert values["next_run"] is None and values["phase"] == "FINISHED"
    assert values["status"] == "FINISHED" and values["failures"] == 1


def test_total_time_counts_failed_runs_too(store: JobStore, pool: RunnerPool) -> None:
    """total_time is the seconds spent in all runs (DBMS_JOB's TOTAL_TIME), failed ones
    included, as docs say: it ignored them before."""
    far = datetime.now(UTC) + timedelta(days=400)
    _failing(store, "fails", make_schedule("once", start=far))
    job = _run_now_and_wait(store, "fails")
    assert job.last_outcome is Outcome.FAILED
    (run,) = [r for r in store.runs("fails", limit=10) if r.outcome is Outcome.FAILED]
    assert run.duration is not None and run.duration > 0
    assert job.total_time > 0
    assert job.total_time == pytest.approx(run.duration, rel=1e-3)


def test_total_time_adds_every_outcome() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    for outcome in (Outcome.OK, Outcome.FAILED, Outcome.ABORTED):
        values = finish_values(
            _job(total_time=10.0, phase="SLEEPING", next_run=t0 + timedelta(hours=1)),
            "SLEEPING",
            outcome=outcome,
            error=None,
            started=t0,
            finished=t0 + timedelta(seconds=2.5),
            manual=False,
        )
        assert values["total_time"] == pytest.approx(12.5), outcome
