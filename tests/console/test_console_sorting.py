"""Moving and sorting in the job table: j/k, the sorted column marked, reversible, and the
jobs with no next run after those due soon."""

from __future__ import annotations

from datetime import timedelta

from support.console import console, select_row, settle, table_of

from jobtui.core.model import What
from jobtui.core.schedules import Schedule, make_schedule
from jobtui.core.store import open_store
from jobtui.core.timeutil import utcnow


def seed(url: str) -> None:
    store = open_store(url)
    now = utcnow()

    def every(seconds: int, first_in: int) -> Schedule:
        return make_schedule("every", every=seconds, start=now + timedelta(seconds=first_in))

    store.submit("a-hourly", What("sql", "SELECT 1"), every(3600, 3600))
    store.submit("b-soon", What("sql", "SELECT 1"), every(1, 1))
    store.submit("c-paused", What("sql", "SELECT 1"), every(1, 1))
    store.pause("c-paused")
    store.submit("d-broken", What("sql", "SELECT 1"), every(2, 2))
    store.broken("d-broken", True)
    store.submit("e-minute", What("sql", "SELECT 1"), every(60, 60))
    store.close()


def names(app: object) -> list[str]:
    return [j.name for j in table_of(app).visible_jobs()]  # type: ignore[arg-type]


async def test_j_and_k_move_the_cursor(sqlite_url: str) -> None:
    seed(sqlite_url)
    async with console(sqlite_url) as (app, pilot, _store):
        table = table_of(app)
        assert table.cursor_row == 0
        await pilot.press("j", "j")
        assert table.cursor_row == 2
        await pilot.press("k")
        assert table.cursor_row == 1
        assert table.current_job().name == "b-soon"


async def test_sort_is_marked_reversible_and_puts_no_next_run_last(sqlite_url: str) -> None:
    seed(sqlite_url)
    async with console(sqlite_url) as (app, pilot, _store):
        table = table_of(app)
        header = table.render_line(0).text
        assert "Job ▲" in header
        await pilot.press("s", "s")  # name -> status -> next run
        await settle(app, pilot)
        assert table.sort_by == "next"
        header = table.render_line(0).text
        assert "Next run ▲" in header and "Job ▲" not in header
        order = names(app)
        assert order[:3] == ["b-soon", "e-minute", "a-hourly"], order
        assert set(order[3:]) == {"c-paused", "d-broken"}
        await select_row(app, pilot, "e-minute")
        await pilot.press("S")
        await settle(app, pilot)
        assert table.sort_by == "-next"
        assert "Next run ▼" in table.render_line(0).text
        order = names(app)
        assert order[:3] == ["a-hourly", "e-minute", "b-soon"], order
        assert set(order[3:]) == {"c-paused", "d-broken"}  # still last
        assert table.current_job().name == "e-minute"  # the cursor follows its job
        await pilot.press("S")
        assert table.sort_by == "next"
        await pilot.press("s")  # the next sort starts in its own direction
        assert table.sort_by == "last"
        await pilot.press("S", "s")
        assert table.sort_by == "failures"
        await pilot.press("S")
        await settle(app, pilot)
        assert "Fail ▼" in table.render_line(0).text
