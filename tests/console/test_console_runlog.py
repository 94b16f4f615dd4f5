"""``l`` opens the selected job's run log (from the table and from a job's details), ``L``
every job's; ``esc`` in the job filter clears the box before it leaves the screen."""

from __future__ import annotations

from support.console import console, seed, select_row, settle
from textual.widgets import DataTable, Input, Static

from jobtui.console.screens.details import DetailsScreen
from jobtui.console.screens.main import MainScreen
from jobtui.console.screens.runlog import RunLogScreen
from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store
from jobtui.core.worker import run_foreground


def make_runs(url: str) -> None:
    store = open_store(url)
    seed(store)
    for name in ("one-a", "one-b"):
        store.submit(name, What("action", "demo.noop"), make_schedule("once"))
        assert run_foreground(store, name, poll=0.1) == 0
    store.close()


def run_jobs(log: RunLogScreen) -> set[str]:
    table = log.query_one("#runs", DataTable)
    return {str(table.get_row_at(i)[0]) for i in range(table.row_count)}


async def test_l_opens_the_selected_jobs_log_and_L_every_jobs(sqlite_url: str) -> None:
    make_runs(sqlite_url)
    async with console(sqlite_url) as (app, pilot, _store):
        await select_row(app, pilot, "one-b")
        await pilot.press("l")
        await settle(app, pilot)
        log = app.screen
        assert isinstance(log, RunLogScreen) and log.job is not None
        assert run_jobs(log) == {"one-b"}
        assert "Runs of one-b" in str(log.query_one("#runlog-title", Static).render())
        await pilot.press("L")  # from one job's log to every job's
        await settle(app, pilot)
        log = app.screen
        assert isinstance(log, RunLogScreen) and log.job is None
        assert run_jobs(log) == {"one-a", "one-b"}
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)

        await select_row(app, pilot, "one-a")
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, DetailsScreen)
        await pilot.press("l")  # from the job's details: its log
        await settle(app, pilot)
        log = app.screen
        assert isinstance(log, RunLogScreen)
        assert run_jobs(log) == {"one-a"}
        await pilot.press("escape")
        assert isinstance(app.screen, DetailsScreen)


async def test_escape_in_the_job_filter_clears_it_first(sqlite_url: str) -> None:
    make_runs(sqlite_url)
    async with console(sqlite_url) as (app, pilot, _store):
        await pilot.press("L")
        await settle(app, pilot)
        log = app.screen
        assert isinstance(log, RunLogScreen)
        await pilot.press("slash", *"one-a")
        await pilot.pause()
        box = log.query_one("#job-filter", Input)
        assert box.value == "one-a" and run_jobs(log) == {"one-a"}
        await pilot.press("escape")
        assert app.screen is log  # still here, the box cleared
        assert box.value == "" and run_jobs(log) == {"one-a", "one-b"}
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)
