"""MySQL/MariaDB: the raw statements of a batch's claim and recording
(jobtui/core/backends/mysql/batch.py) and the runner connection's pieces: partial rows,
the batch's literals, the datetime codec, lost pooled connections."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.mariadb import admin_connection

from jobtui.core import dberrors
from jobtui.core.backends.mysql.batch import changed, jobs, row_type, update_jobs
from jobtui.core.backends.registry import backend_for, make_engine


def test_partial_row_reads_absent_columns_as_empty() -> None:
    row = row_type(("id", "name"))(7, "x")
    assert (row.id, row.name, row.last_error, row.description) == (7, "x", None, "")
    with pytest.raises(AttributeError):
        _ = row.not_a_column


def test_jobs_from_partial_rows_share_definitions_and_keep_state() -> None:
    cols = ("id", "status", "intent", "phase", "cycles", "schedule_kind", "schedule_interval")
    rows = [
        row_type(cols)(i, "SLEEPING", "ENABLED", "SLEEPING", i * 10, "every", 5.0) for i in (1, 2)
    ]
    a, b = jobs(cols, rows)
    assert (a.id, a.cycles, b.id, b.cycles) == (1, 10, 2, 20)
    assert a.schedule is b.schedule and a.schedule.every == 5.0
    assert (a.description, a.name, a.last_error, a.running) == ("", None, None, False)
    # a changed definition is a different schedule, not the cached one
    (c,) = jobs(cols, [row_type(cols)(3, "SLEEPING", "ENABLED", "SLEEPING", 0, "every", 6.0)])
    assert c.schedule.every == 6.0


def test_jobs_leave_out_the_values_read_after_their_columns() -> None:
    cols = ("id", "status", "intent", "phase", "schedule_kind", "schedule_interval")
    read = (*cols, "last_outcome", "runner_id")
    (job,) = jobs(
        cols, [row_type(read)(4, "SLEEPING", "ENABLED", "SLEEPING", "every", 5.0, "bad", "r")]
    )
    assert (job.id, job.problem, job.last_outcome, job.runner_id) == (4, None, None, None)


def test_changed_leaves_out_only_what_the_row_already_holds() -> None:
    when = datetime(2026, 12, 3, 12, 0, 0, 250000)
    row = row_type(("id", "running", "failures", "last_error", "next_run", "phase"))(
        1, 1, 0, None, when, "SLEEPING"
    )
    values = {
        "running": True,  # 1 read back: the same
        "failures": 0,  # the same
        "last_error": None,  # the same
        "next_run": when,  # the same
        "phase": "ERROR",  # changed
        "cycles": 3,  # not read: always written
        "broken": False,  # not read: always written
    }
    assert changed(row, values) == {"phase": "ERROR", "cycles": 3, "broken": False}
    assert changed(row, {"running": False, "last_error": "x", "failures": 1}) == {
        "running": False,
        "last_error": "x",
        "failures": 1,
    }
    # a value of another type (a zero date read back as text) is written
    odd = row_type(("id", "next_run"))(1, "0000-00-00 00:00:00")
    assert changed(odd, {"next_run": when}) == {"next_run": when}
    assert changed(row, {"next_run": when + timedelta(microseconds=1)}) != {}


def test_update_jobs_refuses_a_name_that_is_not_a_column() -> None:
    with pytest.raises(ValueError, match="not a job column"):
        update_jobs(None, {1: {"cycles; DROP TABLE x": 1}})


@pytest.mark.parametrize(
    "text",
    [
        "2007-02-25 23:06:20",
        "2007-02-25 23:06:20.123456",
        "2007-02-25 23:06:20.12",
        "2007-02-25T23:06:20",
        "9999-12-31 23:59:59.999999",
        "2007-02-31 23:06:20",
        "0000-00-00 00:00:00",
        "2007-W08-7 23:06:20",
        "2007-02-25 23:06:20,123456",
        "2007-02-25 23:06:20.123+05",
        b"2007-02-25 23:06:20",
    ],
)
def test_datetime_decoder_reads_what_pymysql_reads(text: str | bytes) -> None:
    from pymysql.converters import convert_datetime

    from jobtui.core.backends.mysql.driver import _read_datetime

    ours, theirs = _read_datetime(text), convert_datetime(text)
    assert (type(ours), ours) == (type(theirs), theirs)


@given(
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59)),
    st.sampled_from([None, UTC, timezone(timedelta(hours=5, minutes=30))]),
)
def test_datetime_encoder_writes_what_pymysql_writes(value: datetime, tz: Any) -> None:
    from pymysql.converters import escape_datetime

    from jobtui.core.backends.mysql.driver import write_datetime

    value = value.replace(tzinfo=tz)
    assert write_datetime(value) == escape_datetime(value)


@pytest.mark.mariadb
def test_datetime_encoder_round_trips_through_mariadb(mariadb_url: str) -> None:
    """What the runner binds is what the server stores: with and without microseconds."""
    engine = make_engine(mariadb_url)
    values = [datetime(2026, 12, 2, 16, 0, 0), datetime(2026, 12, 2, 16, 0, 0, 1)]
    try:
        with engine.connect() as conn:
            cur = conn.connection.dbapi_connection.cursor()
            for value in values:
                cur.execute("SELECT CAST(%s AS DATETIME(6))", (value,))
                assert cur.fetchone()[0] == value
    finally:
        engine.dispose()


@given(
    st.lists(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(min_value=-(2**63), max_value=2**64),
            st.floats(allow_nan=False, allow_infinity=False),
            st.text(),
            st.datetimes(),
            st.datetimes(timezones=st.just(UTC)),
        ),
        max_size=20,
    ),
    st.booleans(),
)
def test_batch_literals_are_what_pymysql_writes(params: list[Any], no_backslash: bool) -> None:
    """The batch statements' values are escaped exactly as PyMySQL's mogrify does,
    in both of the server's quoting modes."""
    import pymysql
    from pymysql.constants import SERVER_STATUS

    from jobtui.core.backends.mysql.batch import literals
    from jobtui.core.backends.mysql.driver import mysql_conversions

    conn = pymysql.connections.Connection(defer_connect=True, conv=mysql_conversions())
    conn.server_status = SERVER_STATUS.SERVER_STATUS_NO_BACKSLASH_ESCAPES if no_backslash else 0
    cur = conn.cursor()
    sql = ", ".join(["%s"] * len(params))
    assert sql % literals(conn, params) == cur.mogrify(sql, params)


@pytest.mark.mariadb
def test_a_pooled_connection_lost_on_its_return_is_one_warning_not_a_traceback(
    mariadb_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The server ends a connection (a restart, KILL) while it sits checked out; the pool's
    rollback on its return fails: a worker's log gets one line, not an ERROR traceback."""
    import logging

    dberrors.quiet_lost_resets()
    engine = make_engine(mariadb_url)
    try:
        conn = engine.connect()
        cid = backend_for(engine).connection_id(conn)
        conn.commit()  # idle, as a runner's connections are between statements
        admin = admin_connection()
        with admin.cursor() as cur:
            cur.execute("KILL CONNECTION %s", (cid,))
        admin.close()
        with caplog.at_level(logging.WARNING, logger=dberrors.POOL_LOGGER):
            conn.close()  # back to the pool: the reset finds the connection gone
    finally:
        engine.dispose()
    records = [r for r in caplog.records if r.name == dberrors.POOL_LOGGER]
    assert [(r.levelname, r.exc_info) for r in records] == [("WARNING", None)]
    assert "lost while it was returned" in records[0].getMessage()
