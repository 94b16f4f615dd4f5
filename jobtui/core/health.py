"""``jobtui runners --check``: is the database served? Live runner pools, and jobs
overdue past a threshold (the scheduler's own "due" rule, docs/runners.md)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from jobtui.core.model import Intent, Job

DEFAULT_OVERDUE = 300.0  # seconds
FOREGROUND_PREFIX = "run:"  # `jobtui run NAME` pools serve one job, not the database


def is_overdue(job: Job, now: datetime, seconds: float) -> bool:
    """Due (as the scheduler pass reads it) and not started ``seconds`` after its time."""
    if job.running or job.problem is not None or job.next_run is None:
        return False
    due = job.run_now or (
        job.intent is Intent.ENABLED and not job.broken and job.phase not in ("ABORTED", "FINISHED")
    )
    return due and job.next_run < now - timedelta(seconds=seconds)


@dataclass
class Health:
    live_runners: list[str]
    overdue: list[dict[str, Any]] = field(default_factory=list)
    overdue_seconds: float = DEFAULT_OVERDUE

    @property
    def ok(self) -> bool:
        return bool(self.live_runners) and not self.overdue

    def problems(self) -> list[str]:
        out = []
        if not self.live_runners:
            out.append(
                "no live runner serves this database (start `jobtui worker`, or the "
                "console with --runners N)"
            )
        if self.overdue:
            names = ", ".join(j["name"] for j in self.overdue[:10])
            more = f" and {len(self.overdue) - 10} more" if len(self.overdue) > 10 else ""
            out.append(
                f"{len(self.overdue)} job(s) overdue by more than "
                f"{self.overdue_seconds:g} s: {names}{more}"
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "live_runners": self.live_runners,
            "overdue_seconds": self.overdue_seconds,
            "overdue": self.overdue,
            "problems": self.problems(),
        }


def check(
    runners: Iterable[Any], jobs: Iterable[Job], now: datetime, *, timeout: float, overdue: float
) -> Health:
    """``runners``: RunnerInfo rows; a live pool is alive, not stopping, not a foreground run."""
    live = [
        r.id
        for r in runners
        if r.alive(now, timeout) and not r.stopping and not r.name.startswith(FOREGROUND_PREFIX)
    ]
    late = [
        {
            "name": j.name,
            "owner": j.owner,
            "next_run": j.next_run.isoformat() if j.next_run else None,
            "late_seconds": round((now - j.next_run).total_seconds(), 3) if j.next_run else None,
        }
        for j in jobs
        if is_overdue(j, now, overdue)
    ]
    return Health(live_runners=live, overdue=late, overdue_seconds=overdue)
