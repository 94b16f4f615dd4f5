"""What each refresh tick asks the database: a cheap plan, so an idle console stays quiet.

One query per tick: most ticks fetch only the rows changed since the newest
``updated`` seen (with an overlap for clocks a little apart); every tenth
tick fetches the id set instead (to notice removals by other processes), the
fifth the runner heartbeats, and every minute a full reload heals anything a
badly skewed clock could have hidden. No Textual here: the app runs
``fetch`` in a thread worker.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from jobtui.core.model import Job
from jobtui.core.store import JobStore, RunnerInfo

OVERLAP = timedelta(seconds=3)
IDS_EVERY = 10
RUNNERS_AT = 5
FULL_EVERY = 60


@dataclass
class Fetched:
    changed: list[Job] = field(default_factory=list)
    ids: set[int] | None = None
    runners: list[RunnerInfo] | None = None
    full: bool = False


class RefreshPlan:
    """Decides, tick by tick, which single query to run."""

    def __init__(self) -> None:
        self.tick = 0
        self.newest: datetime | None = None
        self.need_full = True

    def reset(self) -> None:
        """After a reconnect: start again with a full load."""
        self.need_full = True

    def next_step(self) -> str:
        """ "full", "ids", "runners" or "changed"."""
        self.tick += 1
        if self.need_full or self.tick % FULL_EVERY == 0:
            return "full"
        if self.tick % IDS_EVERY == 0:
            return "ids"
        if self.tick % IDS_EVERY == RUNNERS_AT:
            return "runners"
        return "changed"

    def since(self) -> datetime | None:
        return None if self.newest is None else self.newest - OVERLAP

    def seen(self, jobs: list[Job]) -> None:
        for job in jobs:
            if job.updated is not None and (self.newest is None or job.updated > self.newest):
                self.newest = job.updated

    def fetch(self, store: JobStore, step: str, *, all_owners: bool) -> Fetched:
        """Run the step's query (in a worker thread)."""
        if step == "full":
            jobs = store.jobs_changed_since(None, all_owners=all_owners)
            runners = store.runners(poll=True)
            self.need_full = False
            return Fetched(jobs, {j.id for j in jobs}, runners, full=True)
        if step == "ids":
            return Fetched(ids=store.job_ids(all_owners=all_owners))
        if step == "runners":
            return Fetched(runners=store.runners(poll=True))
        return Fetched(store.jobs_changed_since(self.since(), all_owners=all_owners))
