"""What each refresh tick asks the database: a cheap plan, so an idle console stays quiet.

One query per tick: most ticks fetch only the rows changed since the newest
``updated`` seen (with an overlap for clocks a little apart); every tenth
tick fetches the id set instead (to notice removals by other processes), the
fifth the runner heartbeats, and every minute a full reload heals anything a
badly skewed clock could have hidden. No Textual here.

The plan lives on the event loop: the app asks it for the next step and
tells it what a step read (``read``). ``fetch`` runs in the refresh thread
and only reads the database: it neither reads nor changes the plan's state
(the step and ``since`` are handed to it).
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
FIRST_PAGE = 200  # rows read ahead of the first full load: a screenful, and then some


@dataclass
class Fetched:
    """One step's rows, as read."""

    changed: list[Job] = field(default_factory=list)
    ids: set[int] | None = None
    runners: list[RunnerInfo] | None = None
    full: bool = False

    @property
    def newest(self) -> datetime | None:
        """The newest ``updated`` among the rows read (None when there are none)."""
        return max((j.updated for j in self.changed if j.updated is not None), default=None)


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
        """Where the next "changed" step starts reading."""
        return None if self.newest is None else self.newest - OVERLAP

    def read(self, *, full: bool, newest: datetime | None) -> None:
        """A step's rows arrived: a full load is done, and ``newest`` was seen."""
        if full:
            self.need_full = False
        if newest is not None and (self.newest is None or newest > self.newest):
            self.newest = newest

    def first_page(self, store: JobStore, *, all_owners: bool) -> list[Job]:
        """The first screenful by name (the table's first sort), read ahead of the
        first full load (in the refresh thread; the plan is left alone)."""
        return store.first_jobs(FIRST_PAGE, all_owners=all_owners)

    def fetch(
        self, store: JobStore, step: str, *, since: datetime | None, all_owners: bool
    ) -> Fetched:
        """Run the step's query (in the refresh thread; the plan is left alone)."""
        if step == "full":
            jobs = store.jobs_changed_since(None, all_owners=all_owners)
            runners = store.runners(poll=True)
            return Fetched(jobs, {j.id for j in jobs}, runners, full=True)
        if step == "ids":
            return Fetched(ids=store.job_ids(all_owners=all_owners))
        if step == "runners":
            return Fetched(runners=store.runners(poll=True))
        return Fetched(store.jobs_changed_since(since, all_owners=all_owners))
