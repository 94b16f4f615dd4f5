"""Runner pools started in the test process, stopped by the test's ``pools`` fixture."""

from __future__ import annotations

from jobtui.core.runner.pool import RunnerPool
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore

POLL = 0.2


def start_pool(pools: list[RunnerPool], store: JobStore, **kw: object) -> RunnerPool:
    kw.setdefault("poll", POLL)
    kw.setdefault("threads", 2)
    pool = RunnerPool(store, **kw)  # type: ignore[arg-type]
    pool.start()
    pools.append(pool)
    return pool


def every(seconds: float) -> object:
    return make_schedule("every", every=seconds)


def runs_of(store: JobStore, name: str) -> list:  # type: ignore[type-arg]
    """The runs logged under a job name (of every job that had it), oldest first."""
    runs = [r for r in store.runs(limit=10_000) if r.job == name]
    return sorted(runs, key=lambda r: r.scheduled_for)
