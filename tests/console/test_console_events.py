"""The console's events view (`v`): the server's own Event Scheduler events, live.

Pilot tests on real MariaDB events (each test creates its own in its own
database, as root; the console lists every event the account sees, so the
assertions look at this test's rows only), SQLite (no events: said once, no
error storm, no more reads), the idle cost (no event query while the main view
is shown), the one-way flow, and a snapshot at a fixed size.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from support import watching
from support.console import console, notices, settle, wait_for
from support.mariadb import admin_connection
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey

from jobtui.console.app import JobtuiApp, make_app
from jobtui.console.screens.confirm import AdoptScreen
from jobtui.console.screens.events import EventsScreen
from jobtui.console.screens.main import MainScreen
from jobtui.core import events as server_events
from jobtui.core.errors import JobNotFound
from jobtui.core.events import Event, EventList
from jobtui.core.model import Intent, What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore, open_store

# ---------------------------------------------------------------------- helpers


def database_of(url: str) -> str:
    return url.rsplit("/", 1)[1]


def make_events(url: str) -> str:
    """Three events in the test's database: purge_old (every 5 MINUTE, no lock), guarded
    (every 1 HOUR, GET_LOCK), once_off (AT, disabled). Returns the schema."""
    schema = database_of(url)
    conn = admin_connection(schema)
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT)")
        cur.execute(
            "CREATE EVENT purge_old ON SCHEDULE EVERY 5 MINUTE STARTS '2026-01-01 00:00:00' "
            "DO DELETE FROM t WHERE id < 0"
        )
        cur.execute(
            "CREATE EVENT guarded ON SCHEDULE EVERY 1 HOUR STARTS '2026-01-01 00:00:00' "
            "DO DO GET_LOCK('guarded', 0)"
        )
        cur.execute(
            "CREATE EVENT once_off ON SCHEDULE AT '2030-01-01 00:00:00' DISABLE DO DELETE FROM t"
        )
    conn.close()
    return schema


def event_status(schema: str, name: str) -> str | None:
    conn = admin_connection()
    with conn.cursor() as cur:
        cur.execute(
            "SELECT STATUS FROM information_schema.EVENTS WHERE EVENT_SCHEMA = %s "
            "AND EVENT_NAME = %s",
            (schema, name),
        )
        row = cur.fetchone()
    conn.close()
    return None if row is None else str(row[0])


def server_scheduler() -> str:
    conn = admin_connection()
    with conn.cursor() as cur:
        cur.execute("SELECT @@global.event_scheduler")
        (state,) = cur.fetchone()
    conn.close()
    return str(state)


def cells(app: JobtuiApp, key: str) -> dict[str, str]:
    """The events table's row ``key`` (schema.name) as plain texts by column key."""
    table = events_screen(app).query_one("#event-table")
    values = table.get_row(key)
    keys = [c.key.value for c in table.ordered_columns]
    return {k: getattr(v, "plain", str(v)) for k, v in zip(keys, values, strict=True)}


def events_screen(app: JobtuiApp) -> EventsScreen:
    screen = app.screen
    assert isinstance(screen, EventsScreen), screen
    return screen


def head(app: JobtuiApp) -> str:
    return str(events_screen(app).query_one("#events-head").render())


async def open_events(app: JobtuiApp, pilot: Any, schema: str | None = None) -> EventsScreen:
    await pilot.press("v")
    await settle(app, pilot)
    screen = events_screen(app)
    if schema is not None:
        await wait_for(pilot, lambda: f"{schema}.purge_old" in screen._cells)
    return screen


async def select_event(app: JobtuiApp, pilot: Any, key: str) -> None:
    table = events_screen(app).query_one("#event-table")
    table.move_cursor(row=table.get_row_index(key))
    await pilot.pause()
    selected = events_screen(app).selected_event()
    assert selected is not None and selected.full_name == key


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Every call of ``events.list_events`` (the console's only event read), by time."""
    calls: list[float] = []
    real = server_events.list_events

    def counting(*args: Any, **kwargs: Any) -> EventList:
        calls.append(datetime.now(UTC).timestamp())
        return real(*args, **kwargs)

    monkeypatch.setattr(server_events, "list_events", counting)
    return calls


# ---------------------------------------------------------------------- MariaDB


@pytest.mark.mariadb
async def test_the_view_lists_the_servers_events_and_the_scheduler_state(
    mariadb_url: str,
) -> None:
    schema = make_events(mariadb_url)
    state = server_scheduler()
    async with console(mariadb_url) as (app, pilot, _store):
        await wait_for(pilot, lambda: app.event_scheduler == state)
        status = str(app.main_screen.query_one("#status").render())
        assert f"event scheduler {state}" in status
        app.event_scheduler = "?"  # the view's reads keep the status line's state current
        await open_events(app, pilot, schema)
        await wait_for(pilot, lambda: app.event_scheduler == state)
        purge = cells(app, f"{schema}.purge_old")
        assert purge["schema"] == schema and purge["event"] == "purge_old"
        assert purge["schedule"] == "every 5 MINUTE"
        assert purge["status"] == "ENABLED"
        assert purge["last"] == "—"
        assert purge["next"].startswith("in ")  # a slot of the 5-minute grid, soon
        assert purge["overlap"] == "⚠ may overlap"
        assert "@" in purge["definer"]
        assert cells(app, f"{schema}.guarded")["overlap"] == "guarded (lock)"
        once = cells(app, f"{schema}.once_off")
        assert once["schedule"] == "at 2030-01-01 00:00"
        assert (once["status"], once["next"], once["overlap"]) == ("DISABLED", "—", "—")
        assert f"Event Scheduler {state}" in head(app)
        assert "may overlap (no named lock)" in head(app)
        # the highlighted event in full under the table, with the overlap warning
        await select_event(app, pilot, f"{schema}.purge_old")
        detail = str(events_screen(app).query_one("#event-detail").render())
        assert (
            "DELETE FROM t WHERE id < 0" in detail
            and "no named lock" in detail
            and "adopting it (a)" in detail
        )
        # an event created elsewhere shows up by itself (refresh every 2 s)
        conn = admin_connection(schema)
        with conn.cursor() as cur:
            cur.execute("CREATE EVENT `[b]later` ON SCHEDULE EVERY 1 DAY DO DELETE FROM t")
        conn.close()
        later = f"{schema}.[b]later"  # shown as written, not read as markup
        await wait_for(pilot, lambda: later in events_screen(app)._cells, 8)
        assert cells(app, later)["event"] == "[b]later"
        await select_event(app, pilot, later)
        detail = str(events_screen(app).query_one("#event-detail").render())
        assert f"{schema}.[b]later" in detail
        await pilot.press("escape")
        await settle(app, pilot)
        assert isinstance(app.screen, MainScreen)


@pytest.mark.mariadb
async def test_e_disables_and_enables_the_event(mariadb_url: str) -> None:
    schema = make_events(mariadb_url)
    async with console(mariadb_url) as (app, pilot, _store):
        await open_events(app, pilot, schema)
        await select_event(app, pilot, f"{schema}.purge_old")
        await pilot.press("e")
        await settle(app, pilot)
        assert event_status(schema, "purge_old") == "DISABLED"
        await wait_for(pilot, lambda: cells(app, f"{schema}.purge_old")["status"] == "DISABLED")
        assert cells(app, f"{schema}.purge_old")["next"] == "—"
        assert any(f"disable: event {schema}.purge_old is DISABLED" in n for n in notices(app))
        await pilot.press("e")
        await settle(app, pilot)
        assert event_status(schema, "purge_old") == "ENABLED"
        await wait_for(pilot, lambda: cells(app, f"{schema}.purge_old")["status"] == "ENABLED")


@pytest.mark.mariadb
async def test_a_status_that_grows_widens_its_column(mariadb_url: str) -> None:
    """Only ENABLED events at first: DISABLED, once switched, is shown whole, not cut to
    the column's first width ("DISABLE")."""
    schema = make_events(mariadb_url)
    conn = admin_connection(schema)
    with conn.cursor() as cur:
        cur.execute("DROP EVENT once_off")
    conn.close()
    async with console(mariadb_url) as (app, pilot, _store):
        screen = await open_events(app, pilot, schema)
        table = screen.query_one("#event-table", DataTable)
        await select_event(app, pilot, f"{schema}.purge_old")
        await pilot.press("e")
        await settle(app, pilot)
        await wait_for(pilot, lambda: cells(app, f"{schema}.purge_old")["status"] == "DISABLED")
        assert table.columns[ColumnKey("status")].content_width >= len("DISABLED")


async def test_adopt_asks_first_and_cancel_changes_nothing(mariadb_url: str) -> None:
    schema = make_events(mariadb_url)
    async with console(mariadb_url) as (app, pilot, store):
        await open_events(app, pilot, schema)
        await select_event(app, pilot, f"{schema}.purge_old")
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, AdoptScreen)
        await pilot.press("n")
        await settle(app, pilot)
        assert isinstance(app.screen, EventsScreen)
        assert event_status(schema, "purge_old") == "ENABLED"
        with pytest.raises(JobNotFound):
            store.get("purge_old")


@pytest.mark.mariadb
async def test_adopt_makes_a_job_and_disables_the_event(mariadb_url: str) -> None:
    schema = make_events(mariadb_url)
    async with console(mariadb_url) as (app, pilot, store):
        await open_events(app, pilot, schema)
        await select_event(app, pilot, f"{schema}.purge_old")
        await pilot.press("a")
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot)
        job = store.get("purge_old")
        assert job.what == What("sql", "DELETE FROM t WHERE id < 0")
        assert job.schedule.kind == "every" and job.schedule.every == 300
        assert job.intent is Intent.ENABLED
        assert job.next_run is not None and job.next_run.second == 0
        assert job.next_run.minute % 5 == 0  # the event's grid
        assert event_status(schema, "purge_old") == "DISABLED"
        assert any(f"adopted event {schema}.purge_old as job purge_old" in n for n in notices(app))
        await wait_for(pilot, lambda: cells(app, f"{schema}.purge_old")["status"] == "DISABLED")
        # the job is in the main table at once
        assert any(j.name == "purge_old" for j in app.main_screen.table.jobs.values())


@pytest.mark.mariadb
async def test_adopt_keeping_the_event_makes_a_disabled_job(mariadb_url: str) -> None:
    schema = make_events(mariadb_url)
    async with console(mariadb_url) as (app, pilot, store):
        await open_events(app, pilot, schema)
        await select_event(app, pilot, f"{schema}.purge_old")
        await pilot.press("a")
        await pilot.pause()
        await pilot.press("k")
        await settle(app, pilot)
        assert store.get("purge_old").intent is Intent.DISABLED
        assert event_status(schema, "purge_old") == "ENABLED"  # left as it was


@pytest.mark.mariadb
@pytest.mark.parametrize(
    ("create", "reason"),
    [
        ("CREATE EVENT refused ON SCHEDULE EVERY 1 MONTH DO DELETE FROM t", "no fixed length"),
        (
            "CREATE DEFINER = 'jt_someone_else'@'%' EVENT refused ON SCHEDULE EVERY 1 HOUR "
            "DO DELETE FROM t",
            "connect as jt_someone_else",
        ),
    ],
    ids=["month", "other-definer"],
)
async def test_an_event_adopt_refuses_says_why_and_nothing_changes(
    mariadb_url: str, create: str, reason: str
) -> None:
    schema = make_events(mariadb_url)
    conn = admin_connection(schema)
    with conn.cursor() as cur:
        cur.execute(create)
    conn.close()
    async with console(mariadb_url) as (app, pilot, store):
        screen = await open_events(app, pilot, schema)
        await wait_for(pilot, lambda: f"{schema}.refused" in screen._cells)
        await select_event(app, pilot, f"{schema}.refused")
        await pilot.press("a")
        await pilot.pause()
        await pilot.press("y")
        await settle(app, pilot)
        assert any(reason in n for n in notices(app)), notices(app)
        assert event_status(schema, "refused") == "ENABLED"
        with pytest.raises(JobNotFound):
            store.get("refused")
        assert isinstance(app.screen, EventsScreen)


@pytest.mark.mariadb
async def test_a_read_only_console_refuses_event_changes(mariadb_url: str) -> None:
    schema = make_events(mariadb_url)
    async with console(mariadb_url, read_only=True) as (app, pilot, _store):
        await open_events(app, pilot, schema)
        await select_event(app, pilot, f"{schema}.purge_old")
        await pilot.press("e")
        await pilot.press("a")
        await settle(app, pilot)
        assert not isinstance(app.screen, AdoptScreen)
        assert sum("read-only console" in n for n in notices(app)) == 2
        assert event_status(schema, "purge_old") == "ENABLED"


@pytest.mark.mariadb
async def test_the_idle_main_view_reads_no_events(mariadb_url: str, counted: list[float]) -> None:
    """One read at start (the status line), then none while only the main view is shown;
    every two seconds while the events view is open; none again once it is closed."""
    make_events(mariadb_url)
    async with console(mariadb_url) as (app, pilot, _store):
        await pilot.pause(3.0)  # 15 refresh ticks at 0.2 s
        await settle(app, pilot)
        assert len(counted) == 1
        await pilot.press("v")
        await pilot.pause(4.5)
        await settle(app, pilot)
        shown = len(counted) - 1
        assert 2 <= shown <= 4  # at open, then every 2 s
        await pilot.press("escape")
        await settle(app, pilot)
        closed = len(counted)
        await pilot.pause(3.0)
        await settle(app, pilot)
        assert len(counted) == closed


@pytest.mark.mariadb
async def test_no_events_method_runs_off_the_event_loop(
    mariadb_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    schema = make_events(mariadb_url)
    monkeypatch.setattr(watching, "WATCHED", (*watching.WATCHED, EventsScreen, AdoptScreen))
    calls = watching.watch_threads(monkeypatch)
    loop_thread = threading.get_ident()
    async with console(mariadb_url) as (app, pilot, _store):
        await open_events(app, pilot, schema)
        await select_event(app, pilot, f"{schema}.purge_old")
        await pilot.press("e")
        await settle(app, pilot)
        await pilot.press("a")
        await pilot.pause()
        await pilot.press("k")
        await settle(app, pilot)
        await pilot.pause(2.5)  # a timed reload
        await settle(app, pilot)
    names = {name for name, _ in calls}
    assert {"EventsScreen.on_events_loaded", "EventsScreen.render_rows"} <= names
    assert sorted({name for name, thread in calls if thread != loop_thread}) == []


# ---------------------------------------------------------------------- SQLite


async def test_sqlite_says_there_are_no_events_once(sqlite_url: str, counted: list[float]) -> None:
    async with console(sqlite_url) as (app, pilot, _store):
        assert app.event_scheduler is None
        assert "event scheduler" not in str(app.main_screen.query_one("#status").render())
        await open_events(app, pilot)
        await pilot.pause(2.5)  # past a refresh period: no more reads
        await settle(app, pilot)
        text = head(app)
        assert "No events here" in text and "SQLite" in text
        assert events_screen(app).query_one("#event-table").row_count == 0
        assert len(counted) == 1  # none at start, once for the view: then it stops asking
        assert not any("SQLite" in n for n in notices(app))  # said in place, no popups
        # no key that acts on an event is offered: not in the footer, help or palette
        screen = events_screen(app)
        footer = {getattr(w, "action", None) for w in screen.query("FooterKey")}
        assert not footer & {"switch", "adopt", "filter"}, footer
        assert "back" in footer
        titles = {c.title for c in app.get_system_commands(screen)}
        assert not titles & {"Enable/disable", "Adopt as a job", "Filter"}, titles
        assert not any("Adopt" in d for _, d in app.key_help(screen))
        await pilot.press("e", "a", "slash")  # and the keys do nothing
        await pilot.pause()
        assert "no event selected" not in notices(app)
        assert not screen.query_one("#event-filter").display


# ---------------------------------------------------------------------- the palette


async def test_the_palette_and_help_offer_the_events_view(sqlite_url: str) -> None:
    async with console(sqlite_url) as (app, _pilot, _store):
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert commands["Events"] == "key v"
        assert ("v", "Events") in app.key_help(app.screen)


# ---------------------------------------------------------------------- snapshot

SIZE = (120, 28)
FROZEN = datetime(2026, 12, 2, 9, 30, 0, tzinfo=UTC)


def frozen() -> datetime:
    return FROZEN


def fake_event(name: str, **kw: Any) -> Event:
    fields: dict[str, Any] = {
        "schema": "shop",
        "name": name,
        "definer": "etl@%",
        "status": "ENABLED",
        "kind": "every",
        "interval_value": "5",
        "interval_field": "MINUTE",
        "execute_at": None,
        "starts": datetime(2026, 1, 1, tzinfo=UTC),
        "ends": None,
        "on_completion": "PRESERVE",
        "last_executed": FROZEN - timedelta(minutes=2),
        "body": "DELETE FROM sessions WHERE expires < NOW()",
        "time_zone": "SYSTEM",
        "next_run": FROZEN + timedelta(minutes=3),
        "overlap_guard": False,
    }
    fields.update(kw)
    return Event(**fields)


LISTING = EventList(
    "ON",
    [
        fake_event("purge_sessions"),
        fake_event(
            "rollup_hourly",
            interval_value="1",
            interval_field="HOUR",
            body="BEGIN\n  DO GET_LOCK('rollup', 0);\n  CALL shop.rollup();\nEND",
            overlap_guard=True,
            last_executed=FROZEN - timedelta(minutes=30),
            next_run=FROZEN + timedelta(minutes=30),
        ),
        fake_event(
            "year_end",
            kind="at",
            interval_value=None,
            interval_field=None,
            execute_at=datetime(2026, 12, 31, 23, 0, tzinfo=UTC),
            starts=None,
            last_executed=None,
            next_run=datetime(2026, 12, 31, 23, 0, tzinfo=UTC),
            on_completion="NOT PRESERVE",
        ),
        fake_event("old_cleanup", schema="legacy", status="DISABLED", next_run=None),
        fake_event("replica_copy", schema="legacy", status="SLAVESIDE_DISABLED", next_run=None),
    ],
)


@pytest.fixture
def snap_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[JobStore]:
    """A SQLite store at a relative path with a frozen clock, and the events read as
    ``LISTING``: the view's rendering, the same on every machine (the Pilot tests above
    read real MariaDB events)."""
    monkeypatch.chdir(tmp_path)
    for var in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(var, "ops")
    store = open_store("sqlite:///db/jobtui.db", clock=frozen)
    store.submit("purge_sessions", What("sql", "SELECT 1"), make_schedule("every", every=300))
    fake: Callable[..., EventList] = lambda *_a, **_k: LISTING  # noqa: E731
    monkeypatch.setattr(server_events, "list_events", fake)
    yield store
    store.close()


def test_snapshot_events_view(snap_compare: Any, snap_store: JobStore) -> None:
    async def run_before(pilot: Any) -> None:
        app = pilot.app
        await settle(app, pilot)
        await pilot.press("v")
        await settle(app, pilot)
        assert isinstance(app.screen, EventsScreen)

    app = make_app(snap_store, refresh=1.0)
    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
