"""Notices say what an action left, not what was there before, and never cover the counts."""

from __future__ import annotations

from support.console import console, notices, painted_row, select_row, settle, wait_for
from support.demo_db import make_demo

from jobtui.console.app import make_app
from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store


async def test_notices_describe_the_state_after_the_action(sqlite_url: str) -> None:
    store0 = open_store(sqlite_url)
    make_demo(store0)
    store0.submit("long", What("action", "demo.sleep", ("60",)), make_schedule("every", every=120))
    store0.submit("idle", What("sql", "SELECT 1"), make_schedule("every", every=3600))
    async with console(sqlite_url, runners=1) as (app, pilot, _store):
        await wait_for(pilot, lambda: "RUNNING" in painted_row(app, "long"), 20)
        await select_row(app, pilot, "long")
        await pilot.press("a")
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot)
        said = [n for n in notices(app) if "long" in n]
        assert any(n.startswith("aborting long: its run in flight is being stopped") for n in said)
        assert not any("is RUNNING" in n for n in said), said
        await select_row(app, pilot, "idle")
        await pilot.press("p")
        await settle(app, pilot)
        assert "paused idle: no run starts until resumed (p)" in notices(app)
        await pilot.press("p")
        await settle(app, pilot)
        assert any(n.startswith("resumed idle: next run in ") for n in notices(app)), notices(app)
        await pilot.press("b")
        await settle(app, pilot)
        assert any(n.startswith("marked idle broken: no run on schedule") for n in notices(app))


async def test_notices_do_not_cover_the_status_counts(sqlite_url: str) -> None:
    store0 = open_store(sqlite_url)
    store0.submit("idle", What("sql", "SELECT 1"), make_schedule("every", every=3600))
    app = make_app(open_store(sqlite_url), refresh=0.2)
    async with app.run_test(size=(80, 24), notifications=True) as pilot:
        await settle(app, pilot)
        await pilot.press("p")
        await settle(app, pilot)
        await wait_for(pilot, lambda: bool(app.screen.query("Toast")))
        await pilot.pause(0.3)
        status = app.main_screen.query_one("#status").region
        toasts = list(app.screen.query("Toast"))
        for toast in toasts:
            assert not toast.region.overlaps(status), (toast.region, status)
            assert toast.region.bottom <= status.y
    app.store.close()
