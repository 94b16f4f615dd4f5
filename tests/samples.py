"""A sample Job (no database) for tests of what the model and its displays make of one."""

from __future__ import annotations

from datetime import UTC, datetime

from jobtui.core.model import Intent, Job, Outcome, Schedule, Status, What


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
