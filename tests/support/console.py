"""The console under Pilot: a real app on a real store, and what its table paints.

Shared by the console's test modules (tests/console/) and the tests elsewhere
that drive the console.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import insert, select, update
from textual.worker import WorkerCancelled, WorkerState

from jobtui.console.app import JobtuiApp, make_app
from jobtui.console.screens.main import MainScreen
from jobtui.core import schema
from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore, open_store
from jobtui.core.timeutil import to_db, utcnow
from support.demo_db import make_demo

SIZE = (110, 32)

BUSY = (WorkerState.PENDING, WorkerState.RUNNING)


def seed(store: JobStore) -> None:
    """Three jobs: alpha (every 5 s), beta (cron, paused), gamma (action, every 60 s)."""
    make_demo(store)  # the demo.* actions: a demo database
    store.submit("alpha", What("sql", "SELECT 1"), make_schedule("every", every=5))
    store.submit("beta", What("sql", "SELECT 2"), make_schedule("cron", cron="*/5 * * * *"))
    store.pause("beta")
    store.submit("gamma", What("action", "demo.noop"), make_schedule("every", every=60))


async def settle(app: JobtuiApp, pilot: Any, rounds: int = 2, timeout: float = 30.0) -> None:
    """Let workers finish and their messages be handled.

    Loops until no worker is pending or running: under load an exclusive
    refresh can be cancelled (replaced by a newer one) while it is awaited,
    and the newer one must be waited for too.
    """
    deadline = time.monotonic() + timeout
    for _ in range(rounds):
        while True:
            try:
                await app.workers.wait_for_complete()
            except WorkerCancelled:  # an exclusive refresh replaced by a newer one
                pass
            await pilot.pause()
            if not any(w.state in BUSY for w in app.workers):
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"workers still busy after {timeout:g} s: {list(app.workers)}")


async def wait_for(pilot: Any, predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await pilot.pause(0.05)


async def wait_for_thread(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    """Wait for a condition that a thread (no app running any more) makes true."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        await asyncio.sleep(0.05)


def notices(app: JobtuiApp) -> list[str]:
    return [n.message for n in app._notifications]


@asynccontextmanager
async def console(url: str, **kwargs: Any) -> AsyncIterator[tuple[JobtuiApp, Any, JobStore]]:
    store = open_store(url)
    kwargs.setdefault("refresh", 0.2)
    app = make_app(store, **kwargs)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(app, pilot)
            yield app, pilot, store
    finally:
        if app.pool is not None and app.pool.running:
            app.pool.stop(grace=0, abort=True)
        store.close()


def table_of(app: JobtuiApp) -> Any:
    main = app.main_screen
    assert isinstance(main, MainScreen)
    return main.table


def row_texts(app: JobtuiApp) -> dict[str, dict[str, str]]:
    table = table_of(app)
    out = {}
    for job in table.visible_jobs():
        values = {key: cell.plain for key, cell in table.cells(job.id).items()}
        out[values["name"]] = values
    return out


async def select_row(app: JobtuiApp, pilot: Any, name: str) -> None:
    table = table_of(app)
    job = next(j for j in table.jobs.values() if j.name == name)
    table.select_job(job.id)
    await pilot.pause()
    assert table.current_job().name == name


def many_jobs(store: JobStore, count: int) -> None:
    """Jobs job_0000 .. (every 60 s): one submitted through the store, copied in one INSERT."""
    store.submit("job_0000", What("sql", "SELECT 1"), make_schedule("every", every=60))
    with store.write() as conn:
        row = conn.execute(select(schema.job)).one()._mapping
        shape = {k: v for k, v in row.items() if k != "id"}
        conn.execute(
            insert(schema.job), [dict(shape, name=f"job_{i:04d}") for i in range(1, count)]
        )


def pause_many(store: JobStore, names: list[str]) -> None:
    """Pause jobs in one UPDATE, as another process would."""
    with store.write() as conn:
        conn.execute(
            update(schema.job)
            .where(schema.job.c.name.in_(names))
            .values(intent="PAUSED", status="PAUSED", updated=to_db(utcnow()))
        )


def painted(app: JobtuiApp) -> list[str]:
    """The job table's lines as it draws them now (the header first)."""
    table = table_of(app)
    return [table.render_line(y).text for y in range(table.size.height)]


def painted_row(app: JobtuiApp, name: str) -> str:
    return next(line for line in painted(app) if f" {name} " in line)


@asynccontextmanager
async def console_at(
    url: str, size: tuple[int, int], **kwargs: Any
) -> AsyncIterator[tuple[JobtuiApp, Any, JobStore]]:
    store = open_store(url)
    app = make_app(store, refresh=0.2, **kwargs)
    try:
        async with app.run_test(size=size) as pilot:
            await settle(app, pilot)
            yield app, pilot, store
    finally:
        store.close()
