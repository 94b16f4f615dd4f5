"""The edit form's "next 5 runs" and ``jobtui show``'s upcoming runs agree.

Both come from one function (``JobStore.preview`` of the job as saving the form
leaves it, ``jobdefs.as_changed``), for paused, disabled and broken jobs (none,
and the same reason) and for every kind of schedule. The core contract runs on
SQLite and MariaDB; the console's form is read on screen and compared with the
real ``jobtui show`` process on the same SQLite file.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from zoneinfo import ZoneInfo

from support.cli import Cli
from support.console import console, select_row, settle
from support.demo_db import make_demo

from jobtui.console.screens.edit import EditScreen
from jobtui.core.jobdefs import as_changed
from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore, open_store
from jobtui.core.store.expressions import why_no_runs

# A clock that moves one second per read: stamps stay apart, and the test knows them.
START = datetime(2026, 12, 2, 9, 30, 0, 250_000, tzinfo=UTC)


def ticking() -> object:
    now = [START]

    def clock() -> datetime:
        now[0] += timedelta(seconds=1)
        return now[0]

    return clock


def next_day_expr(store: JobStore) -> str:
    if store.backend.name == "sqlite":
        return "datetime(NOW(), '+1 day')"
    return "NOW() + INTERVAL 1 DAY"


def define(store: JobStore) -> list[str]:
    """One job per case; returns their names."""
    make_demo(store)
    sql = What("sql", "SELECT 1")
    now = store.now()
    store.submit("every", sql, make_schedule("every", every=7))
    store.submit("cron", sql, make_schedule("cron", cron="*/5 * * * *", tz="Europe/Paris"))
    store.submit("expr", sql, make_schedule("expr", expr=next_day_expr(store)))
    store.submit("once", sql, make_schedule("once", start=now + timedelta(hours=3)))
    store.submit(
        "window",
        sql,
        make_schedule(
            "every", every=600, start=now - timedelta(minutes=17), finish=now + timedelta(hours=1)
        ),
    )
    store.submit("paused", sql, make_schedule("every", every=30))
    store.pause("paused")
    store.submit("disabled", sql, make_schedule("cron", cron="0 3 * * *"), disabled=True)
    store.submit("broken", sql, make_schedule("every", every=60))
    store.broken("broken", True)
    return ["every", "cron", "expr", "once", "window", "paused", "disabled", "broken"]


HALTED = {
    "paused": "PAUSED: no run starts until resume",
    "disabled": "DISABLED: no run starts until enable",
    "broken": "BROKEN: no run starts until broken --off (or a successful run-now)",
}


def test_the_form_preview_of_an_unchanged_job_is_shows(store: JobStore) -> None:
    for name in define(store):
        job = store.get(name)
        shown = store.preview(job, 5)
        assert store.preview_change(job, job.schedule, 5) == shown, name
        if name in HALTED:
            assert shown == []
            assert why_no_runs(job) == HALTED[name]
        else:
            assert len(shown) == (1 if name == "once" else 5), name
            assert shown[0] == job.next_run, name


def test_a_changed_schedule_is_previewed_as_show_lists_it_once_saved(db_url: str) -> None:
    store = open_store(db_url, clock=ticking())  # type: ignore[arg-type]
    try:
        names = define(store)
        cron = make_schedule("cron", cron="15 4 * * *", tz="America/New_York")
        for name in names:
            job = store.get(name)
            previewed = store.preview_change(job, cron, 5)
            reason = why_no_runs(as_changed(job, cron, store.now()))
            store.change(name, kind="cron", cron=cron.cron, tz=cron.tz, start=None, finish=None)
            saved = store.get(name)
            assert saved.schedule == cron, name
            assert previewed == store.preview(saved, 5), name
            assert reason == why_no_runs(saved), name
            if name in HALTED:
                assert previewed == [] and reason == HALTED[name]
            else:
                assert len(previewed) == 5, name
        # a new job: as submit arms it (from the clock's next reading)
        every = make_schedule("every", every=45)
        previewed = store.preview_change(None, every, 5)
        steps = [b - a for a, b in pairwise(previewed)]
        assert steps == [timedelta(seconds=45)] * 4
    finally:
        store.close()


def _instants(local: list[str], zone: str | None) -> list[str]:
    """Wall-clock times shown in ``zone`` (UTC when None), as UTC instants to the second."""
    tz = ZoneInfo(zone) if zone else UTC
    return [
        datetime.fromisoformat(t).replace(tzinfo=tz).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
        for t in local
    ]


def _form_preview(text: str, zone: str | None) -> tuple[list[str], str | None]:
    """The form's preview as (UTC instants to the second, the 'none (...)' reason); the
    form shows each time in the schedule's zone, labelled."""
    local = re.findall(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) \S+", text)
    none = re.search(r"none \((.*)\)", text)
    return _instants(local, zone), none.group(1) if none else None


def _show_upcoming(out: str) -> tuple[list[str], str | None]:
    """``jobtui show``'s upcoming lines, the same way: shown in the zone that
    ``upcoming (ZONE):`` names, each time labelled or not."""
    tail = out[out.index("upcoming") :]
    zone = re.match(r"upcoming \(([^)]+)\):", tail)
    local = re.findall(r"^  (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)(?: \S+)?$", tail, re.MULTILINE)
    none = re.match(r"upcoming: none \((.*)\)", tail)
    return _instants(local, zone.group(1) if zone else None), none.group(1) if none else None


async def test_the_edit_form_and_jobtui_show_list_the_same_next_runs(
    sqlite_url: str, tmp_path: Path
) -> None:
    store0 = open_store(sqlite_url)
    names = define(store0)
    zones = {name: store0.get(name).schedule.tz for name in names}
    store0.close()
    cli = Cli(sqlite_url, tmp_path)
    async with console(sqlite_url, refresh=5.0) as (app, pilot, _store):
        for name in names:
            await select_row(app, pilot, name)
            await pilot.press("e")
            await settle(app, pilot, 3)
            form = app.screen
            assert isinstance(form, EditScreen)
            on_form = _form_preview(str(form.query_one("#preview").render()), zones[name])
            by_show = _show_upcoming(cli("show", name).stdout)
            assert on_form == by_show, name
            if name in HALTED:
                assert on_form == ([], HALTED[name]), name
            else:
                assert on_form[0] and on_form[1] is None, name
            await pilot.press("escape")
            await settle(app, pilot)
