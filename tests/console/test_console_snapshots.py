"""Snapshot tests (pytest-textual-snapshot) of the console at a fixed size and a frozen clock.

Regenerate the baselines with ``pytest tests/console/test_console_snapshots.py
--snapshot-update`` after an intended visual change, and review the SVGs.
The database is a relative SQLite path inside the test's own directory so
the status line (and any error text) is the same on every machine; the
clock is frozen through ``open_store(..., clock=...)``; no runner ids (host
names, pids) appear on any captured screen.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from support.demo_db import make_demo

from jobtui.console.app import JobtuiApp, make_app
from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore, open_store

SIZE = (100, 30)
FROZEN = datetime(2026, 12, 2, 9, 30, 0, tzinfo=UTC)
URL = "sqlite:///db/jobtui.db"


def frozen() -> datetime:
    return FROZEN


@pytest.fixture
def snap_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[JobStore]:
    monkeypatch.chdir(tmp_path)
    for var in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(var, "ops")  # the SQLite owner is the OS login
    store = open_store(URL, clock=frozen)
    populate(store, monkeypatch)
    yield store
    store.close()


def populate(store: JobStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Jobs in every interesting state, made by the store and a real runner pool."""
    make_demo(store)  # the demo.* actions: a demo database
    every = make_schedule("every", every=5)
    store.submit("heartbeat", What("sql", "SELECT 1"), every, description="a trivial query")
    store.submit(
        "nightly-rollup",
        What("sql", "SELECT 2"),
        make_schedule("cron", cron="0 2 * * *", tz="Europe/Paris"),
        description="rolls up yesterday's orders",
    )
    store.submit(
        "daily-expr",
        What("action", "demo.noop"),
        make_schedule("expr", expr="datetime(NOW(), '+1 day')"),
    )
    store.submit("paused-job", What("action", "demo.noop"), make_schedule("every", every=60))
    store.pause("paused-job")
    store.submit(
        "broken-job",
        What("action", "demo.noop"),
        make_schedule("every", every=30),
        description="marked broken by hand",
    )
    store.broken("broken-job", True)
    store.submit(
        "switched-off", What("sql", "SELECT 3"), make_schedule("every", every=600), disabled=True
    )
    store.submit("aborted-job", What("action", "demo.noop"), make_schedule("every", every=10))
    store.abort("aborted-job")
    store.submit("once-off", What("action", "demo.noop"), make_schedule("once"))
    store.submit(
        "always-fails",
        What("action", "demo.fail", ("upstream API returned 503",)),
        make_schedule("every", every=3600),
        max_failures=3,
    )
    # One real pass of a runner at the frozen instant: the due jobs run once (their next
    # slots never come on a frozen clock); always-fails fails once and waits for its retry.
    # The runner's host and pid are pinned so the run history reads the same everywhere.
    import jobtui.core.runner.pool as runner

    with monkeypatch.context() as patch:
        patch.setattr(runner.socket, "gethostname", lambda: "runner-host")
        patch.setattr(runner.os, "getpid", lambda: 4242)
        pool = runner.RunnerPool(store, threads=2, poll=0.1)
    pool.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            done = {j.name: j for j in store.list_jobs()}
            if (
                done["once-off"].cycles == 1
                and done["heartbeat"].cycles == 1
                and done["daily-expr"].cycles == 1
                and done["always-fails"].failures == 1
                and not any(j.running for j in done.values())
            ):
                break
            time.sleep(0.1)
    finally:
        pool.stop(grace=5, abort=True)


async def settle(pilot: Any) -> None:
    app = pilot.app
    for _ in range(3):
        await app.workers.wait_for_complete()
        await pilot.pause()


def app_for(store: JobStore, **kwargs: Any) -> JobtuiApp:
    return make_app(store, refresh=1.0, **kwargs)


def test_snapshot_main_screen(snap_compare: Any, snap_store: JobStore) -> None:
    assert snap_compare(app_for(snap_store), terminal_size=SIZE, run_before=settle)


def test_snapshot_main_screen_at_80x24(snap_compare: Any, snap_store: JobStore) -> None:
    assert snap_compare(app_for(snap_store), terminal_size=(80, 24), run_before=settle)


def test_snapshot_details(snap_compare: Any, snap_store: JobStore) -> None:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        table = pilot.app.main_screen.table
        table.select_job(next(j.id for j in table.jobs.values() if j.name == "always-fails"))
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(app_for(snap_store), terminal_size=SIZE, run_before=run_before)


def test_snapshot_edit_form(snap_compare: Any, snap_store: JobStore) -> None:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        table = pilot.app.main_screen.table
        table.select_job(next(j.id for j in table.jobs.values() if j.name == "nightly-rollup"))
        await pilot.press("e")
        await settle(pilot)

    assert snap_compare(app_for(snap_store), terminal_size=SIZE, run_before=run_before)


def test_snapshot_new_job_form_with_an_error(snap_compare: Any, snap_store: JobStore) -> None:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        await pilot.press(*"report")
        await pilot.press("tab", "tab", *"SELEC 1")
        await settle(pilot)

    assert snap_compare(app_for(snap_store), terminal_size=SIZE, run_before=run_before)


def test_snapshot_help(snap_compare: Any, snap_store: JobStore) -> None:
    assert snap_compare(
        app_for(snap_store), terminal_size=SIZE, press=["question_mark"], run_before=settle
    )


def test_snapshot_disconnected_banner(
    snap_compare: Any, snap_store: JobStore, tmp_path: Path
) -> None:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        (tmp_path / "db").rename(tmp_path / "db-away")
        snap_store.engine.dispose()
        deadline = time.monotonic() + 10
        while pilot.app.connected and time.monotonic() < deadline:
            await pilot.pause(0.1)
        await settle(pilot)

    assert snap_compare(app_for(snap_store), terminal_size=SIZE, run_before=run_before)


def test_snapshot_main_screen_at_200x50(snap_compare: Any, snap_store: JobStore) -> None:
    assert snap_compare(app_for(snap_store), terminal_size=(200, 50), run_before=settle)


def test_snapshot_main_screen_at_80x24_scrolled_right(
    snap_compare: Any, snap_store: JobStore
) -> None:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press(*["right"] * 60)
        await settle(pilot)

    assert snap_compare(app_for(snap_store), terminal_size=(80, 24), run_before=run_before)


def test_snapshot_help_at_80x24(snap_compare: Any, snap_store: JobStore) -> None:
    assert snap_compare(
        app_for(snap_store), terminal_size=(80, 24), press=["question_mark"], run_before=settle
    )
