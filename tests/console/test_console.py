"""Pilot tests of the operator console against real databases (SQLite; MariaDB subset).

Every key and form path runs the real app headless (App.run_test) on a real
store; assertions read the database back, not only the screen.
"""

from __future__ import annotations

import gc
import time
from pathlib import Path
from typing import Any

import pytest
from support.console import (
    SIZE,
    console,
    many_jobs,
    notices,
    painted,
    painted_row,
    pause_many,
    row_texts,
    seed,
    select_row,
    settle,
    table_of,
    wait_for,
    wait_for_thread,
)
from support.demo_db import make_demo
from textual.color import Color
from textual.widgets import Button, Input, Select

from jobtui.console.app import css_paths, make_app
from jobtui.console.demo import create_demo
from jobtui.console.screens.confirm import ConfirmScreen, QuitScreen
from jobtui.console.screens.details import DetailsScreen
from jobtui.console.screens.edit import EditScreen
from jobtui.console.screens.help import HelpScreen
from jobtui.console.screens.main import MainScreen
from jobtui.console.screens.runlog import RunLogScreen
from jobtui.core.model import Intent, Outcome, Status, What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store

# ---------------------------------------------------------------------- main screen


async def test_main_table_shows_every_job_with_schedule_and_status(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, _pilot, _store):
        rows = row_texts(app)
        assert set(rows) == {"alpha", "beta", "gamma"}
        assert rows["alpha"]["status"] == "ENABLED"
        assert rows["alpha"]["schedule"] == "every 5 s"
        assert rows["beta"]["status"] == "PAUSED"
        assert rows["beta"]["schedule"] == "cron */5 * * * * UTC"
        assert rows["beta"]["next"] == "—"  # paused: nothing will run
        assert rows["gamma"]["next"].startswith(("in ", "due"))
        assert "owner" not in rows["alpha"]
        status = str(app.main_screen.query_one("#status").render())
        assert "connected" in status and "1 paused" in status and "2 enabled" in status


async def test_the_status_line_wraps_when_its_text_stops_fitting_and_unwraps(
    sqlite_url: str,
) -> None:
    """The status line skips the layout pass while its text fits on one line; a text that
    stops (or starts) fitting still changes its height."""
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, pilot, store):
        line = app.main_screen.query_one("#status")
        one_line = len(str(line.render()).strip())
        # padding 0 1: room for the current text and a few more cells, not for "1 disabled"
        await pilot.resize_terminal(one_line + 2 + 4, SIZE[1])
        await wait_for(pilot, lambda: line.outer_size.height == 1)
        store.disable("gamma")  # ", 1 disabled": no longer fits
        await wait_for(pilot, lambda: "1 disabled" in str(line.render()))
        await wait_for(pilot, lambda: line.outer_size.height == 2)
        store.enable("gamma")
        await wait_for(pilot, lambda: "disabled" not in str(line.render()))
        await wait_for(pilot, lambda: line.outer_size.height == 1)


async def test_columns_widen_to_fit_new_and_changed_cells(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    long_name = "a-job-with-a-rather-long-name-for-the-table"
    async with console(sqlite_url, refresh=0.1) as (app, pilot, store):
        table = table_of(app)
        assert table.columns["name"].content_width == len("alpha")
        store.submit(long_name, What("sql", "SELECT 1"), make_schedule("every", every=5))
        await wait_for(pilot, lambda: long_name in row_texts(app))
        await pilot.pause()
        assert table.columns["name"].content_width == len(long_name)
        store.pause("alpha")
        await wait_for(pilot, lambda: row_texts(app)["alpha"]["status"] == "PAUSED")
        store.broken("alpha", True)  # "PAUSED broken": wider than any status so far
        await wait_for(pilot, lambda: row_texts(app)["alpha"]["status"] == "PAUSED broken")
        await pilot.pause()
        assert table.columns["status"].content_width == len("PAUSED broken")


async def test_all_owners_shows_the_owner_column(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url, all_owners=True) as (app, _pilot, store):
        assert row_texts(app)["alpha"]["owner"] == store.owner


async def test_pause_and_resume_with_p(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, pilot, store):
        await select_row(app, pilot, "alpha")
        await pilot.press("p")
        await settle(app, pilot)
        assert store.get("alpha").status is Status.PAUSED
        assert row_texts(app)["alpha"]["status"] == "PAUSED"
        await pilot.press("p")
        await settle(app, pilot)
        assert store.get("alpha").intent is Intent.ENABLED
        assert row_texts(app)["alpha"]["status"] == "RESUMED"


async def test_abort_asks_first_and_cancel_changes_nothing(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, pilot, store):
        await select_row(app, pilot, "alpha")
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        await settle(app, pilot)
        assert store.get("alpha").status is Status.ENABLED
        await pilot.press("a")
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot)
        assert store.get("alpha").status is Status.ABORTED
        assert row_texts(app)["alpha"]["status"] == "ABORTED"
        # p resumes an aborted job
        await pilot.press("p")
        await settle(app, pilot)
        assert store.get("alpha").phase == "RESUMED"


async def test_run_now_with_r(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, pilot, store):
        await select_row(app, pilot, "gamma")
        await pilot.press("r")
        await settle(app, pilot)
        assert store.get("gamma").run_now is True
        assert row_texts(app)["gamma"]["next"] == "run now"


async def test_broken_on_and_off_with_b(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, pilot, store):
        await select_row(app, pilot, "alpha")
        await pilot.press("b")
        await settle(app, pilot)
        assert store.get("alpha").status is Status.BROKEN
        assert row_texts(app)["alpha"]["status"] == "BROKEN"
        await pilot.press("b")
        await settle(app, pilot)
        assert store.get("alpha").broken is False
        assert row_texts(app)["alpha"]["status"] != "BROKEN"


@pytest.mark.parametrize("key", ["d", "delete"])
async def test_remove_asks_then_removes(sqlite_url: str, key: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, pilot, store):
        await select_row(app, pilot, "gamma")
        await pilot.press(key)
        await pilot.pause()
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("escape")
        await settle(app, pilot)
        assert "gamma" in {j.name for j in store.list_jobs()}
        await pilot.press(key)
        await pilot.pause()
        await pilot.click("#yes")
        await settle(app, pilot)
        assert "gamma" not in {j.name for j in store.list_jobs()}
        assert "gamma" not in row_texts(app)


async def test_filter_by_name_owner_or_status(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, pilot, _store):
        await pilot.press("slash")
        await pilot.press(*"paus")
        await pilot.pause()
        assert set(row_texts(app)) == {"beta"}
        await pilot.press("enter")  # keep the filter, back to the table
        await settle(app, pilot)
        assert set(row_texts(app)) == {"beta"}  # refreshes respect the filter
        await pilot.press("escape")
        await pilot.pause()
        assert set(row_texts(app)) == {"alpha", "beta", "gamma"}
        await pilot.press("slash", *"gam")
        await pilot.pause()
        assert set(row_texts(app)) == {"gamma"}


async def test_sort_key_cycles_columns_and_keeps_the_cursor(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, pilot, _store):
        assert list(row_texts(app)) == ["alpha", "beta", "gamma"]
        await select_row(app, pilot, "gamma")
        await pilot.press("s")  # by status: ENABLED before PAUSED
        await pilot.pause()
        table = table_of(app)
        assert table.sort_by == "status"
        assert list(row_texts(app))[-1] == "beta"
        assert table.current_job().name == "gamma"


async def test_refresh_shows_changes_made_elsewhere_and_keeps_the_cursor(
    sqlite_url: str,
) -> None:
    seed(open_store(sqlite_url))
    other = open_store(sqlite_url)
    async with console(sqlite_url, refresh=0.1) as (app, pilot, _store):
        await select_row(app, pilot, "gamma")
        other.pause("alpha")
        await wait_for(pilot, lambda: row_texts(app)["alpha"]["status"] == "PAUSED")
        other.submit("delta", What("sql", "SELECT 4"), make_schedule("every", every=9))
        await wait_for(pilot, lambda: "delta" in row_texts(app))
        other.remove("beta")
        await wait_for(pilot, lambda: "beta" not in row_texts(app))
        assert table_of(app).current_job().name == "gamma"
    other.close()


async def test_a_theme_change_repaints_the_cells_in_its_colours(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, pilot, _store):
        table = table_of(app)
        await select_row(app, pilot, "gamma")  # the cursor row has the cursor's colours

        def status_colour() -> Any:
            y = painted(app).index(painted_row(app, "alpha"))
            strip = table.render_line(y)
            return next(seg.style.color for seg in strip if seg.text.strip() == "ENABLED")

        for theme in ("textual-dark", "nord", "gruvbox"):
            app.theme = theme
            await pilot.pause()
            expected = Color.parse(app.theme_variables["success"]).rich_color
            assert status_colour() == expected, theme


async def test_a_refresh_changing_1000_rows_keeps_the_cursor_and_repaints_them(
    sqlite_url: str,
) -> None:
    store = open_store(sqlite_url)
    many_jobs(store, 1200)
    async with console(sqlite_url, refresh=0.1) as (app, pilot, _store):
        table = table_of(app)
        await wait_for(pilot, lambda: table.row_count == 1200)
        assert "ENABLED" in painted_row(app, "job_0001")  # drawn once at the top
        await select_row(app, pilot, "job_0500")  # scrolls job_0001 off screen
        index = table.cursor_row
        assert "ENABLED" in painted_row(app, "job_0500")
        pause_many(store, [f"job_{i:04d}" for i in range(1000)])
        await wait_for(pilot, lambda: table.counts[Status.PAUSED] == 1000)
        await pilot.pause()
        assert table.current_job().name == "job_0500"
        assert table.cursor_row == index
        assert "PAUSED" in painted_row(app, "job_0500")  # on screen: repainted
        table.scroll_home(animate=False)
        await pilot.pause()
        assert "PAUSED" in painted_row(app, "job_0001")  # drawn before the change: not stale
        status = str(app.main_screen.query_one("#status").render())
        assert "1000 paused" in status and "200 enabled" in status
        assert gc.get_freeze_count() > 0  # the first big load was frozen (console/bulk.py)
    # and given back to the collector on exit (once a refresh thread still running is done)
    await wait_for_thread(lambda: gc.get_freeze_count() == 0 and gc.isenabled())
    store.close()


async def test_a_change_to_the_sort_column_re_sorts_and_keeps_the_cursor(
    sqlite_url: str,
) -> None:
    seed(open_store(sqlite_url))
    other = open_store(sqlite_url)
    async with console(sqlite_url, refresh=0.1) as (app, pilot, _store):
        table = table_of(app)
        await pilot.press("s")  # by status: ENABLED before PAUSED, then by name
        await pilot.pause()
        assert [j.name for j in table.visible_jobs()] == ["alpha", "gamma", "beta"]
        await select_row(app, pilot, "gamma")
        other.pause("alpha")
        await wait_for(
            pilot, lambda: [j.name for j in table.visible_jobs()] == ["gamma", "alpha", "beta"]
        )
        assert table.current_job().name == "gamma"
        assert "PAUSED" in painted_row(app, "alpha")
        other.change("beta", owner=other.owner, description="a change that keeps its place")
        await wait_for(pilot, lambda: table.jobs[other.get("beta").id].description != "")
        assert [j.name for j in table.visible_jobs()] == ["gamma", "alpha", "beta"]
    other.close()


async def test_a_filtered_table_drops_1000_rows_that_stop_matching_at_once(
    sqlite_url: str,
) -> None:
    store = open_store(sqlite_url)
    many_jobs(store, 1200)
    async with console(sqlite_url, refresh=0.1) as (app, pilot, _store):
        table = table_of(app)
        await wait_for(pilot, lambda: table.row_count == 1200)
        await pilot.press("slash", *"enabled", "enter")
        await pilot.pause()
        await select_row(app, pilot, "job_1100")
        pause_many(store, [f"job_{i:04d}" for i in range(1000)])
        await wait_for(pilot, lambda: table.row_count == 200)
        assert {j.status for j in table.visible_jobs()} == {Status.ENABLED}
        assert table.visible_jobs()[0].name == "job_1000"
        assert table.current_job().name == "job_1100"
        # the cursor is scrolled into view once the shorter table is laid out
        await wait_for(pilot, lambda: any(" job_1100 " in line for line in painted(app)))
        assert "ENABLED" in painted_row(app, "job_1100")
        await pilot.press("escape")
        await pilot.pause()
        assert table.row_count == 1200
        assert table.current_job().name == "job_1100"
        assert row_texts(app)["job_0000"]["status"] == "PAUSED"
    store.close()


# ---------------------------------------------------------------------- forms


async def test_new_job_form_validates_as_you_type_and_saves(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, pilot, store):
        await pilot.press("n")
        await settle(app, pilot)
        form = app.screen
        assert isinstance(form, EditScreen)
        save = form.query_one("#save", Button)
        assert save.disabled  # no name yet
        await pilot.press(*"bad name")
        await settle(app, pilot)
        assert form.query_one("#name", Input).has_class("-invalid")
        assert "invalid job name" in str(form.query_one("#form-error").render())
        await pilot.press("ctrl+s")  # cannot save invalid input
        await pilot.pause()
        assert isinstance(app.screen, EditScreen)
        form.query_one("#name", Input).value = "delta"
        form.query_one("#target", Input).value = "SELECT 42"
        form.query_one("#schedule-value", Input).value = "0"  # below the minimum
        await settle(app, pilot)
        assert save.disabled
        assert "--every" in str(form.query_one("#form-error").render())
        form.query_one("#schedule-value", Input).value = "30"
        form.query_one("#description", Input).value = "made in the form"
        await settle(app, pilot, 3)
        assert not save.disabled
        assert str(form.query_one("#preview").render()).count("UTC") == 5
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        job = store.get("delta")
        assert job.schedule.every == 30
        assert job.description == "made in the form"
        assert "delta" in row_texts(app)
        assert table_of(app).current_job().name == "delta"


async def test_form_asks_the_database_about_sql(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, pilot, store):
        await pilot.press("n")
        await settle(app, pilot)
        form = app.screen
        form.query_one("#name", Input).value = "broken-sql"
        form.query_one("#target", Input).value = "SELECT * FROM no_such_table"
        await settle(app, pilot, 3)
        assert form.query_one("#save", Button).disabled
        assert "no_such_table" in str(form.query_one("#form-error").render())
        await pilot.press("escape")
        await settle(app, pilot)
        assert not isinstance(app.screen, EditScreen)
        assert "broken-sql" not in {j.name for j in store.list_jobs()}


async def test_form_cron_with_time_zone_and_action_with_args(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, pilot, store):
        await pilot.press("n")
        await settle(app, pilot)
        form = app.screen
        form.query_one("#name", Input).value = "nightly"
        form.query_one("#what-kind", Select).value = "action"
        form.query_one("#schedule-kind", Select).value = "cron"
        await pilot.pause()
        form.query_one("#target", Input).value = "demo.sleep"
        form.query_one("#args", Input).value = "0.1"
        form.query_one("#schedule-value", Input).value = "not cron"
        await settle(app, pilot, 3)
        assert "invalid cron expression" in str(form.query_one("#form-error").render())
        form.query_one("#schedule-value", Input).value = "0 2 * * *"
        form.query_one("#tz", Input).value = "Mars/Olympus"
        await settle(app, pilot, 3)
        assert "unknown time zone" in str(form.query_one("#form-error").render())
        form.query_one("#tz", Input).value = "Europe/Paris"
        form.query_one("#finish", Input).value = "yesterday"
        await settle(app, pilot, 3)
        assert "ISO 8601" in str(form.query_one("#form-error").render())
        form.query_one("#finish", Input).value = ""
        form.query_one("#max-failures", Input).value = "3"
        await settle(app, pilot, 3)
        assert not form.query_one("#save", Button).disabled
        await pilot.click("#save")
        await settle(app, pilot)
        job = store.get("nightly")
        assert job.what == What("action", "demo.sleep", ("0.1",))
        assert job.schedule.cron == "0 2 * * *" and job.schedule.tz == "Europe/Paris"
        assert job.max_failures == 3


async def test_edit_form_changes_the_schedule(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, pilot, store):
        await select_row(app, pilot, "alpha")
        await pilot.press("e")
        await settle(app, pilot)
        form = app.screen
        assert isinstance(form, EditScreen)
        assert form.query_one("#name", Input).disabled
        assert form.query_one("#schedule-value", Input).value == "5"
        form.query_one("#schedule-value", Input).value = "12.5"
        await settle(app, pilot, 3)
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert store.get("alpha").schedule.every == 12.5
        assert row_texts(app)["alpha"]["schedule"] == "every 12.5 s"


async def test_edit_form_alert_field(sqlite_url: str) -> None:
    """One field: the job's targets as stored (loaded in a thread), checked as typed
    (apprise's verdict from the form's check thread), saved with the definition."""
    store0 = open_store(sqlite_url)
    seed(store0)
    store0.set_alert("alpha", ["command:/usr/local/bin/page"])
    store0.close()
    async with console(sqlite_url) as (app, pilot, store):
        await select_row(app, pilot, "alpha")
        await pilot.press("e")
        await settle(app, pilot, 3)
        form = app.screen
        assert isinstance(form, EditScreen)
        field = form.query_one("#alert", Input)
        assert field.value == "command:/usr/local/bin/page" and not field.disabled
        field.value = "command:relative"
        await settle(app, pilot, 3)
        assert "invalid alert command" in str(form.query_one("#form-error").render())
        assert form.query_one("#save", Button).disabled
        field.value = "nosuchscheme://x"
        await settle(app, pilot, 3)
        assert "apprise does not accept" in str(form.query_one("#form-error").render())
        field.value = "json://127.0.0.1:9/hook none"
        await settle(app, pilot, 3)
        field.value = "json://127.0.0.1:9/hook"
        await settle(app, pilot, 3)
        assert not form.query_one("#save", Button).disabled
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert store.alert_of("alpha") == ["json://127.0.0.1:9/hook"]
        # empty: the database's default again
        await pilot.press("e")
        await settle(app, pilot, 3)
        app.screen.query_one("#alert", Input).value = ""
        await settle(app, pilot, 3)
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert store.alert_of("alpha") is None


async def test_edit_expr_schedule_is_previewed_by_the_database(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, pilot, store):
        await select_row(app, pilot, "gamma")
        await pilot.press("e")
        await settle(app, pilot)
        form = app.screen
        form.query_one("#schedule-kind", Select).value = "expr"
        await pilot.pause()
        form.query_one("#schedule-value", Input).value = "datetime(NOW(), '+1 day')"
        await settle(app, pilot, 3)
        assert str(form.query_one("#preview").render()).count("UTC") == 5
        form.query_one("#schedule-value", Input).value = "datetime(NOW(), '-1 day')"
        await settle(app, pilot, 3)
        assert "not after NOW()" in str(form.query_one("#form-error").render())
        assert form.query_one("#save", Button).disabled
        form.query_one("#schedule-value", Input).value = "datetime(NOW(), '+2 days')"
        await settle(app, pilot, 3)
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert store.get("gamma").schedule.expr == "datetime(NOW(), '+2 days')"


# ---------------------------------------------------------------------- other screens


async def test_details_screen_shows_fields_history_and_takes_action_keys(
    sqlite_url: str,
) -> None:
    from jobtui.core.worker import run_foreground

    store0 = open_store(sqlite_url)
    seed(store0)
    store0.submit(
        "once-off", What("action", "demo.noop"), make_schedule("once"), description="one go"
    )
    assert run_foreground(store0, "once-off", poll=0.1) == 0
    async with console(sqlite_url) as (app, pilot, store):
        await select_row(app, pilot, "once-off")
        await pilot.press("enter")
        await settle(app, pilot)
        details = app.screen
        assert isinstance(details, DetailsScreen)
        fields = str(details.query_one("#fields").render())
        assert "once-off" in fields and "FINISHED" in fields and "one go" in fields
        history = details.query_one("#history")
        await wait_for(pilot, lambda: history.row_count == 1)
        assert "ok" in str(history.get_row_at(0))
        await pilot.press("escape")
        await select_row(app, pilot, "alpha")
        await pilot.press("enter")
        await settle(app, pilot)
        await wait_for(
            pilot, lambda: str(app.screen.query_one("#upcoming").render()).count("UTC") == 5
        )
        await pilot.press("p")
        await settle(app, pilot)
        assert store.get("alpha").status is Status.PAUSED
        await wait_for(pilot, lambda: "PAUSED" in str(app.screen.query_one("#fields").render()))
        # a paused job has no next runs until it is resumed, and the screen says why
        await wait_for(
            pilot,
            lambda: (
                "none (PAUSED: no run starts until resume)"
                in str(app.screen.query_one("#upcoming").render())
            ),
        )
        await pilot.press("b")
        await settle(app, pilot)
        assert store.get("alpha").broken
        await pilot.press("d")
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot)
        # the removed job's details closed
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen))
        assert "alpha" not in row_texts(app)


async def test_run_log_lists_runs_filterable_by_job_and_outcome(sqlite_url: str) -> None:
    from jobtui.core.worker import run_foreground

    store0 = open_store(sqlite_url)
    seed(store0)
    for name in ("one-a", "one-b"):
        store0.submit(name, What("action", "demo.noop"), make_schedule("once"))
        assert run_foreground(store0, name, poll=0.1) == 0
    async with console(sqlite_url) as (app, pilot, _store):
        await pilot.press("L")  # all jobs' runs (l: the selected job's)
        await settle(app, pilot)
        log = app.screen
        assert isinstance(log, RunLogScreen)
        assert log.job is None
        assert log.query_one("#runs").row_count == 2
        log.query_one("#job-filter", Input).value = "one-b"
        await pilot.pause()
        assert log.query_one("#runs").row_count == 1
        log.query_one("#job-filter", Input).value = ""
        log.query_one("#outcome-filter", Select).value = Outcome.FAILED.value
        await settle(app, pilot)
        assert log.query_one("#runs").row_count == 0
        log.query_one("#outcome-filter", Select).value = Outcome.OK.value
        await settle(app, pilot)
        assert log.query_one("#runs").row_count == 2
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_help_screen_and_command_palette_list_every_key(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url) as (app, pilot, _store):
        wanted = {
            "Details",
            "Pause/resume",
            "Abort",
            "Run now",
            "Broken on/off",
            "Edit",
            "New job",
            "Remove",
            "Filter",
            "Job's runs",
            "All runs",
            "Runners",
            "Help",
            "Quit",
            "Sort",
        }
        commands = {c.title for c in app.get_system_commands(app.screen)}
        assert wanted <= commands
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        text = "\n".join(str(s.render()) for s in app.screen.query("Static"))
        for description in wanted:
            assert description in text
        assert "BROKEN" in text and "d del" in text
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_read_only_console_refuses_every_change(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    async with console(sqlite_url, read_only=True) as (app, pilot, store):
        await select_row(app, pilot, "alpha")
        for key in ("p", "a", "r", "b", "e", "n", "d", "w"):
            await pilot.press(key)
            await settle(app, pilot)
            assert isinstance(app.screen, MainScreen), key
        assert store.get("alpha").status is Status.ENABLED
        assert store.get("alpha").run_now is False
        assert sum("read-only" in n for n in notices(app)) >= 8
        assert app.pool is None


# ---------------------------------------------------------------------- robustness


async def test_database_loss_shows_a_banner_refuses_writes_and_recovers(tmp_path: Path) -> None:
    folder = tmp_path / "dbdir"
    folder.mkdir()
    url = f"sqlite:///{folder / 'jobtui.db'}"
    seed(open_store(url))
    async with console(url, refresh=0.1) as (app, pilot, store):
        banner = app.main_screen.query_one("#banner")
        assert not banner.display
        moved = tmp_path / "moved"
        folder.rename(moved)
        store.engine.dispose()
        await wait_for(pilot, lambda: not app.connected)
        assert banner.display
        assert "Database unreachable" in str(banner.render())
        assert "reconnecting" in str(app.main_screen.query_one("#status").render())
        assert set(row_texts(app)) == {"alpha", "beta", "gamma"}  # stale rows stay
        await select_row(app, pilot, "alpha")
        await pilot.press("p")
        await settle(app, pilot)
        assert any("no database connection" in n for n in notices(app))
        await pilot.press("l")  # the run log says so in place, and does not crash
        await settle(app, pilot)
        log = app.screen
        assert isinstance(log, RunLogScreen)
        await wait_for(pilot, lambda: "unavailable" in str(log.query_one("#runlog-count").render()))
        await pilot.press("escape")
        moved.rename(folder)
        await wait_for(pilot, lambda: app.connected)
        assert not banner.display
        assert store.get("alpha").status is Status.ENABLED  # nothing half-done
        await pilot.press("p")
        await settle(app, pilot)
        assert store.get("alpha").status is Status.PAUSED


async def test_works_at_80x24_in_every_theme(sqlite_url: str) -> None:
    seed(open_store(sqlite_url))
    store = open_store(sqlite_url)
    app = make_app(store, refresh=0.2)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(app, pilot)
        for theme in sorted(app.available_themes):
            app.theme = theme
            await pilot.pause()
            assert row_texts(app)["alpha"]["status"] == "ENABLED"
        await pilot.press("enter")
        await settle(app, pilot)
        await pilot.press("e")
        await settle(app, pilot)
        assert isinstance(app.screen, EditScreen)
        assert app.screen.query_one("#save").region.bottom <= 24
    store.close()


def test_css_comes_from_the_styles_package() -> None:
    paths = css_paths()
    assert [p.name for p in paths] == ["app.tcss", "screens.tcss"]
    assert all(p.is_file() for p in paths)


def test_demo_database_has_a_dozen_varied_jobs(tmp_path: Path) -> None:
    url = create_demo(str(tmp_path / "demo.db"))
    store = open_store(url)
    jobs = {j.name: j for j in store.list_jobs()}
    assert len(jobs) >= 12
    kinds = {j.schedule.kind for j in jobs.values()}
    assert {"every", "cron", "expr", "once"} <= kinds
    assert jobs["cleanup-paused"].status is Status.PAUSED
    assert jobs["always-fails"].max_failures <= 3
    assert jobs["long-etl"].what.args == ("60",)
    assert not [j for j in jobs.values() if j.what.target == "demo.export_csv"]
    assert store.is_demo()
    store.pause("heartbeat")
    store.close()
    url2 = create_demo(str(tmp_path / "demo.db"))  # resets
    store = open_store(url2)
    assert store.get("heartbeat").status is Status.ENABLED
    store.close()


# ---------------------------------------------------------------------- hosted runners


@pytest.mark.slow
async def test_w_starts_and_stops_hosted_runners_that_run_jobs(sqlite_url: str) -> None:
    store0 = open_store(sqlite_url)
    make_demo(store0)  # the demo.* actions: a demo database
    store0.submit("quick", What("action", "demo.noop"), make_schedule("every", every=1))
    store0.submit(
        "failing",
        What("action", "demo.fail", ("boom",)),
        make_schedule("every", every=1),
        max_failures=1,
    )
    async with console(sqlite_url, refresh=0.2) as (app, pilot, store):
        await pilot.press("w")
        await settle(app, pilot)
        assert app.pool is not None and app.pool.running
        await wait_for(pilot, lambda: store.get("quick").cycles >= 1, timeout=20)
        await wait_for(pilot, lambda: row_texts(app)["failing"]["status"] == "BROKEN", 20)
        await wait_for(pilot, lambda: row_texts(app)["quick"]["last"].endswith("ok"), 20)
        assert "here" in str(app.main_screen.query_one("#status").render())
        await pilot.press("w")
        await settle(app, pilot)
        await wait_for(pilot, lambda: not app.pool.running, timeout=20)


@pytest.mark.slow
async def test_quit_with_runs_in_flight_asks_and_can_abort_them(sqlite_url: str) -> None:
    store0 = open_store(sqlite_url)
    make_demo(store0)  # the demo.* actions: a demo database
    store0.submit("long", What("action", "demo.sleep", ("60",)), make_schedule("every", every=120))
    async with console(sqlite_url, runners=1) as (app, pilot, _store):
        await wait_for(pilot, lambda: row_texts(app)["long"]["status"] == "RUNNING", 20)
        await wait_for(pilot, lambda: " on " in row_texts(app)["long"]["runner"], 5)
        await pilot.press("q")  # a long run: asked once the short wait is over
        await wait_for(pilot, lambda: isinstance(app.screen, QuitScreen), 10)
        await pilot.press("c")  # cancel: stay
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)
        await pilot.press("q")
        await wait_for(pilot, lambda: isinstance(app.screen, QuitScreen), 10)
        await pilot.press("a")
        await wait_for(pilot, lambda: app.return_code is not None, 20)
    runs = store0.runs("long")
    assert runs[0].outcome in (Outcome.ABORTED, Outcome.LOST)
    assert not store0.get("long").running
    store0.close()


@pytest.mark.slow
async def test_quit_waits_briefly_for_short_runs_instead_of_asking(sqlite_url: str) -> None:
    store0 = open_store(sqlite_url)
    make_demo(store0)  # the demo.* actions: a demo database
    store0.submit("short", What("action", "demo.sleep", ("2",)), make_schedule("every", every=120))
    # a 0 ms job every second: often claimed ahead of its slot when q is pressed
    store0.submit("heartbeat", What("sql", "SELECT 1"), make_schedule("every", every=1))
    async with console(sqlite_url, runners=2) as (app, pilot, _store):
        await wait_for(pilot, lambda: "short" in app.pool.in_flight(), 20)
        await pilot.press("q")
        seen_quit_screen = False
        deadline = time.monotonic() + 15
        while app.return_code is None and time.monotonic() < deadline:
            seen_quit_screen = seen_quit_screen or isinstance(app.screen, QuitScreen)
            await pilot.pause(0.02)
        assert app.return_code is not None, "the console did not quit"
        assert not seen_quit_screen
    runs = store0.runs("short")
    assert runs[0].outcome is Outcome.OK  # waited for, not aborted
    store0.close()


# ---------------------------------------------------------------------- MariaDB subset


@pytest.mark.mariadb
async def test_mariadb_keys_and_form(mariadb_url: str) -> None:
    seed(open_store(mariadb_url))
    async with console(mariadb_url) as (app, pilot, store):
        assert set(row_texts(app)) == {"alpha", "beta", "gamma"}
        await select_row(app, pilot, "alpha")
        await pilot.press("p")
        await settle(app, pilot)
        assert store.get("alpha").status is Status.PAUSED
        await pilot.press("b")
        await settle(app, pilot)
        assert store.get("alpha").broken
        await pilot.press("n")
        await settle(app, pilot)
        form = app.screen
        form.query_one("#name", Input).value = "maria"
        form.query_one("#target", Input).value = "SELECT * FROM nope_table"
        await settle(app, pilot, 3)
        assert form.query_one("#save", Button).disabled
        form.query_one("#target", Input).value = "SELECT NOW()"
        form.query_one("#schedule-kind", Select).value = "expr"
        await pilot.pause()
        form.query_one("#schedule-value", Input).value = "NOW() + INTERVAL 1 DAY"
        await settle(app, pilot, 3)
        assert str(form.query_one("#preview").render()).count("UTC") == 5
        await pilot.press("ctrl+s")
        await settle(app, pilot)
        assert store.get("maria").schedule.kind == "expr"
        await pilot.press("enter")
        await settle(app, pilot)
        assert isinstance(app.screen, DetailsScreen)
