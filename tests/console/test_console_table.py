"""The job table on the Line API (issue #16): keys to the ends, mouse, the first
screenful ahead of the full load, and a cost that follows the screen.

Pilot tests on real SQLite files, as tests/console/test_console.py's.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import update
from support.console import console, many_jobs, painted, seed, select_row, table_of, wait_for

import jobtui.console.widgets.job_table as job_table
from jobtui.console.app import JobtuiApp
from jobtui.console.screens.details import DetailsScreen
from jobtui.core import schema
from jobtui.core.model import Status
from jobtui.core.store import open_store


@pytest.mark.parametrize(
    ("bottom", "top"), [("G", "g"), ("end", "home"), ("ctrl+end", "ctrl+home")]
)
async def test_keys_go_to_the_last_and_first_row(sqlite_url: str, bottom: str, top: str) -> None:
    store = open_store(sqlite_url)
    many_jobs(store, 1200)
    async with console(sqlite_url) as (app, pilot, _store):
        table = table_of(app)
        await wait_for(pilot, lambda: table.row_count == 1200)
        await pilot.press(bottom)
        await pilot.pause()
        assert table.current_job().name == "job_1199"
        assert table.cursor_row == 1199
        assert any(" job_1199 " in line for line in painted(app))  # scrolled into view
        await pilot.press(top)
        await pilot.pause()
        assert table.current_job().name == "job_0000"
        assert table.scroll_y == 0
    store.close()


async def test_help_lists_the_keys_to_the_ends(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, _pilot, _store):
        keys = dict((description, keys) for keys, description in app.key_help(app.screen))
        assert keys["Top"].split() == ["home", "g", "^home"]
        assert keys["Bottom"].split() == ["end", "G", "^end"]


async def test_a_click_moves_the_cursor_and_a_click_on_it_opens_the_job(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, pilot, _store):
        table = table_of(app)
        assert table.current_job().name == "alpha"
        await pilot.click("#jobs", offset=(3, 2))  # line 0 is the header: beta's row
        await pilot.pause()
        assert table.current_job().name == "beta"
        assert isinstance(app.screen, type(app.main_screen))
        await pilot.click("#jobs", offset=(3, 2))
        await pilot.pause()
        assert isinstance(app.screen, DetailsScreen)
        assert app.screen.job.name == "beta"


async def test_enter_opens_the_job_under_the_cursor(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, pilot, _store):
        await select_row(app, pilot, "gamma")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, DetailsScreen)


async def test_the_first_screenful_comes_ahead_of_the_full_load(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(db_url)
    many_jobs(store, 1200)
    seen: list[tuple[bool, bool, int]] = []  # (page, full, rows)
    handler = JobtuiApp.on_jobs_refreshed

    def recorded(self: JobtuiApp, message: Any) -> None:
        seen.append((message.page, message.full, len(message.changed)))
        handler(self, message)

    monkeypatch.setattr(JobtuiApp, "on_jobs_refreshed", recorded)
    async with console(db_url) as (app, pilot, _store):
        table = table_of(app)
        await wait_for(pilot, lambda: table.row_count == 1200)
        assert seen[0] == (True, False, 200)  # the first 200 by name
        assert seen[1][:2] == (False, True)  # then the whole table
        assert [j.name for j in table.visible_jobs()[:3]] == ["job_0000", "job_0001", "job_0002"]
        assert table.counts[Status.ENABLED] == 1200  # each job counted once
    store.close()


def test_the_first_jobs_are_the_first_by_name(db_url: str) -> None:
    store = open_store(db_url)
    many_jobs(store, 30)
    with store.write() as conn:
        conn.execute(
            update(schema.job).where(schema.job.c.name == "job_0029").values(name="Aa_first")
        )
    names = [job.name for job in store.first_jobs(3, all_owners=False)]
    assert names == ["Aa_first", "job_0000", "job_0001"]
    store.close()


async def test_only_the_rows_on_screen_are_made(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1,200 jobs on a 32-line terminal: cells are made for the rows drawn, not for all."""
    store = open_store(sqlite_url)
    many_jobs(store, 1200)
    made: list[int] = []
    real = job_table.row_cells

    def counted(job: Any, *args: Any, **kwargs: Any) -> Any:
        made.append(job.id)
        return real(job, *args, **kwargs)

    monkeypatch.setattr(job_table, "row_cells", counted)
    async with console(sqlite_url) as (app, pilot, _store):
        table = table_of(app)
        await wait_for(pilot, lambda: table.row_count == 1200)
        await pilot.pause()
        made.clear()
        table.tick()  # the clock: the rows on screen are made again
        await pilot.pause()
        assert 0 < len(set(made)) <= table.size.height
    store.close()


async def test_scroll_and_cursor_survive_a_refresh_that_re_sorts(sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    many_jobs(store, 1200)
    other = open_store(sqlite_url)
    async with console(sqlite_url, refresh=0.1) as (app, pilot, _store):
        table = table_of(app)
        await wait_for(pilot, lambda: table.row_count == 1200)
        await select_row(app, pilot, "job_0600")
        top = table.scroll_y
        row = table.cursor_row
        other.pause("job_0001")  # sorted by name: its place does not change
        await wait_for(pilot, lambda: table.counts[Status.PAUSED] == 1)
        assert (table.scroll_y, table.cursor_row) == (top, row)
        assert table.current_job().name == "job_0600"
    other.close()
    store.close()
