"""What the screens say about time and failures agrees with itself (issue 26): a halted
job shows no next run, failures past the limit read honestly, a running job's "Last run"
is the previous run's, and every time carries its zone (the job's own where it has one)."""

from __future__ import annotations

import dataclasses
from datetime import timedelta

from support.console import console, painted_row, row_texts, select_row, settle, wait_for
from support.demo_db import make_demo
from textual.widgets import Static

from jobtui.console import formatting as fmt
from jobtui.console.screens.details import DetailsScreen
from jobtui.core.model import Intent, Outcome, Status, What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store
from jobtui.core.timeutil import utcnow


def details_text(app: object) -> str:
    screen = app.screen  # type: ignore[attr-defined]
    assert isinstance(screen, DetailsScreen)
    return "\n".join(str(s.render()) for s in screen.query(Static))


async def test_a_broken_job_shows_no_next_run_in_its_details(sqlite_url: str) -> None:
    store0 = open_store(sqlite_url)
    store0.submit("snapped", What("sql", "SELECT 1"), make_schedule("every", every=60))
    store0.broken("snapped", True)
    assert store0.get("snapped").next_run is not None  # the stored next run is kept
    async with console(sqlite_url) as (app, pilot, _store):
        assert row_texts(app)["snapped"]["next"] == fmt.DASH
        await select_row(app, pilot, "snapped")
        await pilot.press("enter")
        await settle(app, pilot)
        text = details_text(app)
        line = next(x for x in text.splitlines() if "Next run" in x and "Next 5 runs" not in x)
        assert fmt.DASH in line and "none" in line and "UTC" not in line, line
        assert "Next 5 runs" in text and "none (" in text


def test_failures_past_the_limit_do_not_read_as_a_contradiction(sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    job = store.submit("f", What("sql", "SELECT 1"), make_schedule("every", every=60))
    below = dataclasses.replace(job, failures=1, max_failures=3)
    assert fmt.failures_text(below) == "1/3"
    assert fmt.failures_detail(below) == "1 in a row (BROKEN at 3)"
    at = dataclasses.replace(job, failures=3, max_failures=3, broken=True)
    assert fmt.failures_text(at) == "3/3"
    over = dataclasses.replace(job, failures=4, max_failures=3, broken=True)
    assert fmt.failures_text(over) == "4, max 3"
    assert "4/3" not in fmt.failures_text(over)
    assert fmt.failures_detail(over).startswith("4 in a row, limit 3 reached")
    store.close()


def test_last_run_of_a_running_job_is_the_previous_run(sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    job = store.submit("r", What("sql", "SELECT 1"), make_schedule("every", every=60))
    now = utcnow()
    running = dataclasses.replace(
        job,
        running=True,
        status=Status.RUNNING,
        this_run=now - timedelta(seconds=45),
        last_cycle_start=now - timedelta(seconds=45),
        last_cycle_finish=now - timedelta(seconds=120),
        last_outcome=Outcome.OK,
    )
    text, outcome = fmt.last_run_text(running, now)
    assert text == "ended 2 min ago ok" and outcome is Outcome.OK  # not "45 s ago ok"
    first = dataclasses.replace(running, last_cycle_finish=None, last_outcome=None)
    assert fmt.last_run_text(first, now) == (fmt.DASH, None)
    store.close()


async def test_a_paused_running_job_shows_no_next_run(sqlite_url: str) -> None:
    store0 = open_store(sqlite_url)
    make_demo(store0)
    store0.submit("long", What("action", "demo.sleep", ("60",)), make_schedule("every", every=30))
    async with console(sqlite_url, runners=1) as (app, pilot, store):
        await wait_for(pilot, lambda: "RUNNING" in painted_row(app, "long"), 20)
        assert row_texts(app)["long"]["next"].startswith("in ")
        await select_row(app, pilot, "long")
        await pilot.press("p")
        await settle(app, pilot)
        assert store.get("long").intent is Intent.PAUSED and store.get("long").running
        await wait_for(pilot, lambda: row_texts(app)["long"]["next"] == fmt.DASH)
        await pilot.press("enter")
        await settle(app, pilot)
        text = details_text(app)
        assert "Next run in" not in text
        line = next(x for x in text.splitlines() if "Next run" in x and "Next 5 runs" not in x)
        assert fmt.DASH in line, line


async def test_times_carry_their_zone_the_jobs_own_where_it_has_one(sqlite_url: str) -> None:
    store0 = open_store(sqlite_url)
    store0.submit(
        "paris", What("sql", "SELECT 1"), make_schedule("cron", cron="0 2 * * *", tz="Europe/Paris")
    )
    store0.submit("plain", What("sql", "SELECT 1"), make_schedule("every", every=3600))
    async with console(sqlite_url) as (app, pilot, _store):
        await select_row(app, pilot, "paris")
        await pilot.press("enter")
        await settle(app, pilot)
        text = details_text(app)
        upcoming = text[text.index("Next 5 runs") :].splitlines()[1:6]
        assert all(" 02:00:00 CE" in x for x in upcoming), upcoming  # CET or CEST, local 02:00
        line = next(x for x in text.splitlines() if "Next run" in x and "Next 5 runs" not in x)
        assert "02:00:00 CE" in line, line
        await pilot.press("escape")
        await select_row(app, pilot, "plain")
        await pilot.press("enter")
        await settle(app, pilot)
        text = details_text(app)
        upcoming = text[text.index("Next 5 runs") :].splitlines()[1:6]
        assert len(upcoming) == 5 and all(x.endswith(" UTC") for x in upcoming), upcoming
