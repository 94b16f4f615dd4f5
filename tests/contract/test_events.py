"""The server's own Event Scheduler events (issue #15): listing, switching, adopting.

Pure tests of the schedule arithmetic (jobtui.core.event_times), checked against the
server's own ``STARTS + INTERVAL k unit``; then real MariaDB events, created by each
test in its own database (dropped with it), with real accounts where rights matter.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from support.accounts import Server
from support.mariadb import admin_connection

from jobtui.core import event_times as et
from jobtui.core import events
from jobtui.core.errors import InvalidInput, PermissionDenied
from jobtui.core.model import Intent
from jobtui.core.store import JobStore, open_store

# ---------------------------------------------------------------------- pure arithmetic


@pytest.mark.parametrize(
    ("value", "field", "months", "seconds"),
    [
        ("5", "MINUTE", 0, 300),
        ("'1:30'", "HOUR_MINUTE", 0, 5400),
        ("'1 02:03:04'", "DAY_SECOND", 0, 93784),
        ("'2:03:04'", "DAY_SECOND", 0, 7384),  # the leftmost parts left out
        ("'5:30'", "MINUTE_SECOND", 0, 330),
        ("2", "WEEK", 0, 14 * 86400),
        ("1", "QUARTER", 3, 0),
        ("'1-2'", "YEAR_MONTH", 14, 0),
        ("1", "YEAR", 12, 0),
    ],
)
def test_interval_values_are_read_as_the_server_shows_them(
    value: str, field: str, months: int, seconds: int
) -> None:
    assert et.parse_interval(value, field) == et.Interval(months, seconds)


@pytest.mark.parametrize(
    ("value", "field"), [("0", "MINUTE"), ("5", "MICROSECOND"), ("1:2:3", "HOUR")]
)
def test_an_interval_the_server_would_not_store_is_refused(value: str, field: str) -> None:
    with pytest.raises(ValueError):
        et.parse_interval(value, field)


def test_months_clamp_to_the_last_day_counted_from_starts() -> None:
    starts = datetime(2026, 1, 31, 10, 0)
    one = et.Interval(1, 0)
    assert et.step(starts, one, 1) == datetime(2026, 2, 28, 10, 0)
    assert et.step(starts, one, 2) == datetime(2026, 3, 31, 10, 0)  # not Mar 28
    assert et.first_slot_at_or_after(starts, one, datetime(2026, 3, 1)) == datetime(
        2026, 3, 31, 10, 0
    )


_FIELDS = st.sampled_from(["SECOND", "MINUTE", "HOUR", "DAY", "WEEK", "MONTH", "QUARTER", "YEAR"])
_LOCAL = st.datetimes(min_value=datetime(2000, 1, 1), max_value=datetime(2040, 12, 31)).map(
    lambda d: d.replace(microsecond=0)
)


@given(starts=_LOCAL, field=_FIELDS, n=st.integers(1, 90), when=_LOCAL)
def test_the_first_slot_at_or_after_a_time_is_the_first_of_the_grid(
    starts: datetime, field: str, n: int, when: datetime
) -> None:
    interval = et.parse_interval(str(n), field)
    slot = et.first_slot_at_or_after(starts, interval, when)
    assert slot >= when and slot >= starts
    # on the grid, and the slot before it (if any) is before ``when``
    if interval.months:
        k = ((slot.year - starts.year) * 12 + slot.month - starts.month) // interval.months
    else:
        k = int((slot - starts).total_seconds()) // interval.seconds
    assert et.step(starts, interval, k) == slot
    assert k == 0 or et.step(starts, interval, k - 1) < when


@pytest.mark.mariadb
@given(
    starts=_LOCAL,
    field=_FIELDS,
    n=st.integers(1, 40),
    k=st.integers(0, 400),
)
def test_slots_are_the_servers_own_starts_plus_interval(
    starts: datetime, field: str, n: int, k: int
) -> None:
    """``step`` is what the server computes for ``STARTS + INTERVAL k*N unit``."""
    interval = et.parse_interval(str(n), field)
    assume(k * interval.months < 12 * 5000)  # within year 9999
    conn = _server_connection()
    with conn.cursor() as cur:
        cur.execute(f"SELECT CAST(%s AS DATETIME) + INTERVAL %s {field}", (starts, k * n))
        (expected,) = cur.fetchone()
    assert et.step(starts, interval, k) == expected


_CONN: list[object] = []


def _server_connection():  # type: ignore[no-untyped-def]
    from support.mariadb import require_mysql

    require_mysql()
    if not _CONN:
        _CONN.append(admin_connection())
    return _CONN[0]


def test_zones_offsets_and_names() -> None:
    plus5 = et.zone("+05:00")
    assert plus5 is not None and et.fixed_offset(plus5, 2026)
    assert et.zone("SYSTEM", "UTC") is not None and et.fixed_offset(et.zone("SYSTEM", "UTC"), 2026)
    paris = et.zone("Europe/Paris")
    assert paris is not None and not et.fixed_offset(paris, 2026)
    assert et.zone("No/Such_Zone") is None
    local = datetime(2026, 1, 1, 10, 0)
    assert et.to_utc(local, plus5, None) == datetime(2026, 1, 1, 5, 0, tzinfo=UTC)
    assert et.to_utc(local, None, timedelta(hours=2)) == datetime(2026, 1, 1, 8, 0, tzinfo=UTC)
    assert et.to_local(datetime(2026, 1, 1, 5, 0, tzinfo=UTC), plus5, None) == local


def _event(**changes: object) -> events.Event:
    base: dict[str, object] = {
        "schema": "shop",
        "name": "purge",
        "definer": "alice@%",
        "status": "ENABLED",
        "kind": "every",
        "interval_value": "5",
        "interval_field": "MINUTE",
        "execute_at": None,
        "starts": datetime(2026, 1, 1, 0, 0, tzinfo=UTC),
        "ends": None,
        "on_completion": "NOT PRESERVE",
        "last_executed": None,
        "body": "DELETE FROM sessions WHERE expires < NOW()",
        "time_zone": "+00:00",
        "next_run": None,
        "overlap_guard": False,
    }
    base.update(changes)
    return events.Event(**base)  # type: ignore[arg-type]


def test_the_first_run_of_an_adopted_event_is_its_first_slot_after_its_last_run() -> None:
    now = datetime(2026, 6, 1, 12, 7, 30, tzinfo=UTC)
    ran = _event(last_executed=datetime(2026, 6, 1, 12, 5, 0, tzinfo=UTC))
    assert events.first_after(ran, now, scheduler_on=True) == datetime(
        2026, 6, 1, 12, 10, tzinfo=UTC
    )
    # a slot came due after the last run (12:00 ran, 12:05 did not yet): it runs at once
    late = _event(last_executed=datetime(2026, 6, 1, 12, 0, 0, tzinfo=UTC))
    assert events.first_after(late, now, scheduler_on=True) == datetime(
        2026, 6, 1, 12, 5, tzinfo=UTC
    )
    # the scheduler is off: the event would have run nothing since, so nothing is owed
    assert events.first_after(late, now, scheduler_on=False) == datetime(
        2026, 6, 1, 12, 10, tzinfo=UTC
    )
    # never ran: its first slot from now
    assert events.first_after(_event(), now, scheduler_on=True) == datetime(
        2026, 6, 1, 12, 10, tzinfo=UTC
    )


@pytest.mark.parametrize(
    ("body", "kind", "target", "args"),
    [
        ("CALL p()", "call", "shop.p", ()),
        ("call ops.rollup(30, 'a''b', 'c\\'d');", "call", "ops.rollup", ("30", "a'b", "c'd")),
        ("CALL `shop`.`p`", "call", "shop.p", ()),
        ("DO 1", "sql", "DO 1", ()),
    ],
)
def test_a_body_becomes_a_call_or_one_statement(
    body: str, kind: str, target: str, args: tuple[str, ...]
) -> None:
    what = events.adopted_what(_event(body=body), "shop")
    assert (what.kind, what.target, what.args) == (kind, target, args)


@pytest.mark.parametrize(
    ("body", "phrase"),
    [
        ("BEGIN DO 1; DO 2; END", "compound statement"),
        ("lbl: BEGIN DO 1; END lbl", "compound statement"),
        ("DELETE FROM sessions", "default schema"),  # the event is in shop, jobtui in ops
        ("CALL p(NOW())", "default schema"),  # not literal arguments
    ],
)
def test_a_body_jobtui_cannot_represent_is_refused_with_the_reason(body: str, phrase: str) -> None:
    with pytest.raises(InvalidInput, match=phrase):
        events.adopted_what(_event(body=body), "ops")


@pytest.mark.parametrize(
    ("changes", "phrase"),
    [
        ({"interval_value": "1", "interval_field": "MONTH"}, "no fixed length"),
        ({"ends": datetime(2020, 1, 1, tzinfo=UTC)}, "no slot left"),
        ({"fixed_zone": False, "time_zone": "Europe/Paris"}, "daylight saving"),
        (
            {
                "kind": "at",
                "execute_at": datetime(2026, 1, 1, tzinfo=UTC),
                "last_executed": datetime(2026, 1, 1, tzinfo=UTC),
            },
            "ran once already",
        ),
    ],
)
def test_a_schedule_jobtui_cannot_represent_is_refused(changes: dict, phrase: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(InvalidInput, match=phrase):
        events.adopted_schedule(_event(**changes), datetime(2026, 6, 1, tzinfo=UTC))


@pytest.mark.parametrize("name", ["", "a", "a.b.c", ".b", "a.", "a .b", "x" * 65 + ".b", "a\x00.b"])
def test_a_bad_event_name_is_refused(name: str) -> None:
    with pytest.raises(InvalidInput, match=r"expected SCHEMA\.NAME"):
        events.split_name(name)


# ---------------------------------------------------------------------- real MariaDB events


@pytest.fixture
def db(mariadb_url: str) -> Iterator[tuple[JobStore, str]]:
    """root's store on a fresh jobtui database, and the database's name."""
    store = open_store(mariadb_url)
    try:
        yield store, mariadb_url.rsplit("/", 1)[1]
    finally:
        store.close()


def _sql(database: str, *statements: str) -> None:
    conn = admin_connection(database)
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


def _one(store: JobStore, full_name: str) -> events.Event:
    return events.get_event(store, full_name)


@pytest.mark.mariadb
def test_times_are_shown_in_utc_whatever_the_events_time_zone(db: tuple[JobStore, str]) -> None:
    store, name = db
    _sql(
        name,
        "SET time_zone = '+05:00'",
        "CREATE EVENT e_every ON SCHEDULE EVERY '1:30' HOUR_MINUTE "
        "STARTS '2026-01-01 10:00:00' ENDS '2036-01-01 10:00:00' DO DO 1",
        "CREATE EVENT e_at ON SCHEDULE AT '2036-03-01 12:00:00' ON COMPLETION PRESERVE "
        "DO DO GET_LOCK('x', 0)",
    )
    now = datetime(2026, 1, 1, 6, 0, 1, tzinfo=UTC)
    listed = events.list_events(store, schema=name, now=now)
    assert listed.scheduler in ("ON", "OFF", "DISABLED")
    every, at = sorted(listed.events, key=lambda e: e.name, reverse=True)
    assert every.name == "e_every" and every.time_zone == "+05:00"
    assert every.starts == datetime(2026, 1, 1, 5, 0, tzinfo=UTC)
    assert every.ends == datetime(2036, 1, 1, 5, 0, tzinfo=UTC)
    assert every.next_run == datetime(2026, 1, 1, 6, 30, tzinfo=UTC)
    assert every.schedule.startswith("every 1:30 HOUR_MINUTE starts 2026-01-01 05:00:00 UTC")
    assert not every.overlap_guard and at.overlap_guard
    assert at.kind == "at" and at.execute_at == datetime(2036, 3, 1, 7, 0, tzinfo=UTC)
    assert at.next_run == at.execute_at and at.on_completion == "PRESERVE"
    row = every.to_dict()
    assert list(row)[:9] == [
        "schema",
        "name",
        "definer",
        "status",
        "schedule",
        "next_run",
        "last_executed",
        "body",
        "overlap_guard",
    ]
    assert row["next_run"] == "2026-01-01T06:30:00+00:00"


@pytest.mark.mariadb
def test_a_running_event_is_adopted_from_its_next_slot_after_its_last_run(
    db: tuple[JobStore, str],
) -> None:
    """information_schema shows LAST_EXECUTED in the event's zone too; adopt disables the
    event, reads it, and the job's first run is the next slot after it (already due here:
    it runs at once). Needs the scheduler: turned on for a moment when it is off, and back."""
    store, name = db
    _sql(name, "SET time_zone = '+05:00'", "CREATE EVENT tick ON SCHEDULE EVERY 1 SECOND DO DO 1")
    conn = admin_connection()
    with conn.cursor() as cur:
        cur.execute("SELECT @@global.event_scheduler")
        (before,) = cur.fetchone()
        if before == "DISABLED":
            pytest.skip("the server's event_scheduler is DISABLED")
        cur.execute("SET GLOBAL event_scheduler = ON")
    try:
        deadline = time.monotonic() + 10
        while (event := _one(store, f"{name}.tick")).last_executed is None:
            assert time.monotonic() < deadline, "the event never ran"
            time.sleep(0.2)
        assert event.last_executed is not None
        assert abs((event.last_executed - datetime.now(UTC)).total_seconds()) < 15
        time.sleep(1.5)  # a slot or two more
        adoption = events.adopt(store, f"{name}.tick")
    finally:
        _sql(name, "ALTER EVENT tick DISABLE")
        with conn.cursor() as cur:
            cur.execute(f"SET GLOBAL event_scheduler = {'ON' if before == 'ON' else 'OFF'}")
        conn.close()
    ran = adoption.event.last_executed
    assert adoption.event.status == "DISABLED" and ran is not None
    assert adoption.job.next_run == ran + timedelta(seconds=1)
    assert adoption.job.schedule.every == 1.0


@pytest.mark.mariadb
def test_enable_and_disable_switch_the_event(db: tuple[JobStore, str]) -> None:
    store, name = db
    _sql(name, "CREATE EVENT e ON SCHEDULE EVERY 1 HOUR DISABLE DO DO 1")
    full = f"{name}.e"
    assert _one(store, full).status == "DISABLED" and _one(store, full).next_run is None
    assert events.set_enabled(store, full, True).status == "ENABLED"
    assert _one(store, full).next_run is not None
    assert events.set_enabled(store, full, False).status == "DISABLED"
    assert events.set_enabled(store, full, False).status == "DISABLED"  # nothing to do
    with pytest.raises(InvalidInput, match="no event"):
        events.set_enabled(store, f"{name}.nope", True)


@pytest.mark.mariadb
def test_an_odd_event_name_is_quoted_not_pasted(db: tuple[JobStore, str]) -> None:
    store, name = db
    odd = "we`ird%s 'name"
    _sql(name, "CREATE EVENT `we``ird%s 'name` ON SCHEDULE EVERY 1 HOUR DISABLE DO DO 1")
    assert events.set_enabled(store, f"{name}.{odd}", True).status == "ENABLED"
    assert events.set_enabled(store, f"{name}.{odd}", False).status == "DISABLED"
    assert [e.name for e in events.list_events(store, schema=name).events] == [odd]


def test_sqlite_has_no_events(sqlite_url: str) -> None:
    store = open_store(sqlite_url)
    try:
        for call in (
            lambda: events.list_events(store),
            lambda: events.set_enabled(store, "a.b", True),
            lambda: events.adopt(store, "a.b"),
        ):
            with pytest.raises(InvalidInput, match="SQLite has no events"):
                call()
    finally:
        store.close()


# ---------------------------------------------------------------------- accounts


def _grant_event(server: Server, *keys: str) -> None:
    _sql(
        server.database,
        *(f"GRANT EVENT ON `{server.database}`.* TO '{server.names[k]}'@'%'" for k in keys),
    )


def _create_as(server: Server, key: str, statement: str) -> None:
    conn = server.raw(key)
    try:
        with conn.cursor() as cur:
            cur.execute(statement)
    finally:
        conn.close()


@pytest.mark.mariadb
def test_an_account_sees_only_the_events_of_schemas_where_it_has_event(server: Server) -> None:
    _sql(server.database, "CREATE EVENT e ON SCHEDULE EVERY 1 HOUR DISABLE DO DO 1")
    bob = server.store("bob")
    try:
        assert events.list_events(bob, schema=server.database).events == []
        with pytest.raises(InvalidInput, match="EVENT privilege"):
            events.set_enabled(bob, f"{server.database}.e", True)
    finally:
        bob.close()
    assert _one_root(server, "e").status == "DISABLED"


def _one_root(server: Server, event: str) -> events.Event:
    store = open_store(server.url)
    try:
        return _one(store, f"{server.database}.{event}")
    finally:
        store.close()


@pytest.mark.mariadb
def test_switching_another_accounts_event_keeps_its_definer(server: Server) -> None:
    """A plain ALTER EVENT by bob would make bob the definer: jobtui restates alice's, which
    root may (SET USER) and bob may not (refused, nothing changed)."""
    _grant_event(server, "alice", "bob")
    _create_as(server, "alice", "CREATE EVENT e ON SCHEDULE EVERY 1 HOUR DO DO 1")
    alice = f"{server.names['alice']}@%"
    full = f"{server.database}.e"
    bob = server.store("bob")
    try:
        assert _one(bob, full).definer == alice
        with pytest.raises(PermissionDenied, match="SET USER"):
            events.set_enabled(bob, full, False)
    finally:
        bob.close()
    event = _one_root(server, "e")
    assert (event.status, event.definer) == ("ENABLED", alice)
    root = open_store(server.url)
    try:
        after = events.set_enabled(root, full, False)
    finally:
        root.close()
    assert (after.status, after.definer) == ("DISABLED", alice)


@pytest.mark.mariadb
def test_adopt_makes_the_definer_a_job_and_disables_the_event(server: Server) -> None:
    _grant_event(server, "alice", "bob")
    _create_as(
        server,
        "alice",
        "CREATE EVENT `purge` ON SCHEDULE EVERY 5 MINUTE STARTS '2026-01-01 00:00:00' DO DO 1",
    )
    full = f"{server.database}.purge"
    bob = server.store("bob")
    try:  # bob is not the definer: refused, nothing changed
        with pytest.raises(PermissionDenied, match="connect as"):
            events.adopt(bob, full)
        assert bob.list_jobs() == []
    finally:
        bob.close()
    assert _one_root(server, "purge").status == "ENABLED"
    alice = server.store("alice")
    try:
        adoption = events.adopt(alice, full)
        job = adoption.job
        assert job.owner == f"{server.names['alice']}@%" and job.name == "purge"
        assert (job.what.kind, job.what.target) == ("sql", "DO 1")
        assert job.schedule.kind == "every" and job.schedule.every == 300.0
        assert job.schedule.start == datetime(2026, 1, 1, tzinfo=UTC)
        assert job.intent == Intent.ENABLED
        assert job.next_run is not None and job.next_run.minute % 5 == 0
        assert abs((job.next_run - alice.now()).total_seconds()) <= 300
        assert adoption.event.status == "DISABLED"
        # adopting it again: the name is taken, so it is schema_name
        again = events.adopt(alice, full, keep_event=True)
        assert again.job.name == f"{server.database}_purge"
        assert again.job.intent == Intent.DISABLED
    finally:
        alice.close()
    assert _one_root(server, "purge").definer == f"{server.names['alice']}@%"


@pytest.mark.mariadb
def test_adopt_enables_the_event_again_when_the_job_cannot_be_made(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    _grant_event(server, "alice")
    _create_as(server, "alice", "CREATE EVENT e ON SCHEDULE EVERY 1 HOUR DO DO 1")
    alice = server.store("alice")
    seen: list[str] = []

    def failing_submit(*args: object, **kwargs: object) -> None:
        seen.append(_one_root(server, "e").status)  # disabled before the job is made
        raise InvalidInput("no room")

    monkeypatch.setattr(alice, "submit", failing_submit)
    try:
        with pytest.raises(InvalidInput, match="no room"):
            events.adopt(alice, f"{server.database}.e")
    finally:
        alice.close()
    assert seen == ["DISABLED"]
    assert _one_root(server, "e").status == "ENABLED"


@pytest.mark.mariadb
def test_adopt_keep_event_leaves_the_event_and_makes_a_disabled_job(
    db: tuple[JobStore, str],
) -> None:
    store, name = db
    _sql(name, "CREATE EVENT once_e ON SCHEDULE AT '2036-01-01 00:00:00' DO CALL p(1)")
    _sql(name, "CREATE PROCEDURE p(IN x INT) DO x")
    adoption = events.adopt(store, f"{name}.once_e", keep_event=True)
    assert adoption.job.intent == Intent.DISABLED
    assert adoption.job.schedule.kind == "once"
    assert adoption.job.schedule.start == datetime(2036, 1, 1, tzinfo=UTC)
    assert (adoption.job.what.kind, adoption.job.what.target) == ("call", f"{name}.p")
    assert adoption.job.what.args == ("1",)
    assert _one(store, f"{name}.once_e").status == "ENABLED"
    assert any("enable" in note for note in adoption.notes)


@pytest.mark.mariadb
def test_a_refused_adoption_changes_nothing(db: tuple[JobStore, str]) -> None:
    store, name = db
    _sql(
        name,
        "CREATE EVENT monthly ON SCHEDULE EVERY 1 MONTH DO DO 1",
        "CREATE EVENT block ON SCHEDULE EVERY 1 HOUR DO BEGIN DO 1; DO 2; END",
    )
    for event, phrase in (("monthly", "no fixed length"), ("block", "compound")):
        with pytest.raises(InvalidInput, match=phrase):
            events.adopt(store, f"{name}.{event}")
        assert _one(store, f"{name}.{event}").status == "ENABLED"
    assert store.list_jobs() == []


@pytest.mark.mariadb
def test_adopting_a_not_preserve_one_time_event_keeps_it_disabled(
    db: tuple[JobStore, str],
) -> None:
    store, name = db
    _sql(name, "CREATE EVENT later ON SCHEDULE AT '2036-01-01 00:00:00' DO DO 1")
    adoption = events.adopt(store, f"{name}.later")
    assert adoption.job.schedule.kind == "once" and adoption.job.intent == Intent.ENABLED
    assert adoption.job.next_run == datetime(2036, 1, 1, tzinfo=UTC)
    assert any("NOT PRESERVE" in note for note in adoption.notes)
    assert _one(store, f"{name}.later").status == "DISABLED"  # still there, not dropped
