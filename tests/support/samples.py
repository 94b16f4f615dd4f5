"""Samples: a Job (no database) for tests of what the model and its displays make of one,
a schedule the tests of accounts share, and the run-log row of an ended run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import Insert

from jobtui.core import schema
from jobtui.core.model import Intent, Job, Outcome, Schedule, Status, What
from jobtui.core.schedules import make_schedule

HOURLY = make_schedule("every", every=3600)


def sample_job(**over: object) -> Job:
    """A sleeping every-5-s job; ``over`` replaces any field."""
    base: dict[str, object] = {
        "id": 1,
        "owner": "root@localhost",
        "name": "j",
        "description": "",
        "what": What("sql", "SELECT 1"),
        "schedule": Schedule("every", every=5.0),
        "status": Status.SLEEPING,
        "intent": Intent.ENABLED,
        "broken": False,
        "failures": 0,
        "max_failures": 16,
        "cycles": 3,
        "created": datetime(2026, 1, 1, tzinfo=UTC),
        "next_run": datetime(2026, 1, 1, 0, 0, 5, tzinfo=UTC),
        "last_outcome": Outcome.OK,
    }
    base.update(over)
    return Job(**base)  # type: ignore[arg-type]


def ended_run(job: Job, now: datetime, *, ago: float, outcome: str, error: str) -> Insert:
    """The run-log row of a run of ``job`` due ``ago`` s before ``now`` that ended at ``now``
    (what the alert dispatcher reads)."""
    return schema.run.insert().values(
        job_id=job.id,
        job_name=job.name,
        owner=job.owner,
        scheduled_for=now - timedelta(seconds=ago),
        finished=now,
        outcome=outcome,
        error=error,
        skipped=0,
        manual=False,
    )
