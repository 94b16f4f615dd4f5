"""Issue 26: where jobtui disagreed with DBMS_JOB and with docs/sql.md, each item proved
through the SQL interface as an operator account (PyMySQL, ``server`` from
tests/support/accounts.py: alice is an operator made by `jobtui grant --apply`).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import pytest
from support.accounts import Server, sql_call, sql_refused, sql_submit
from support.mariadb import admin_connection
from support.sqlapi import job_row as _job
from support.sqlapi import root_rows as _root
from support.sqlapi import run_rows as _runs

pytestmark = pytest.mark.mariadb


@pytest.fixture
def app(server: Server) -> Iterator[str]:
    """An application schema with table ``t`` that alice may read and write."""
    name = f"{server.database}_app"
    alice = f"'{server.names['alice']}'@'%'"
    root = admin_connection()
    try:
        with root.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{name}`")
            cur.execute(f"CREATE TABLE `{name}`.t (x VARCHAR(10))")
            cur.execute(f"GRANT SELECT, INSERT, DELETE ON `{name}`.t TO {alice}")
            # two statements, the second fails: partial work unless rolled back
            cur.execute(
                f"CREATE PROCEDURE `{name}`.two() SQL SECURITY INVOKER BEGIN "
                f"INSERT INTO `{name}`.t VALUES ('first'); "
                f"INSERT INTO `{name}`.t VALUES (REPEAT('x', 99)); END"
            )
            cur.execute(f"GRANT EXECUTE ON PROCEDURE `{name}`.two TO {alice}")
        yield name
    finally:
        with root.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
            cur.execute("DELETE FROM mysql.tables_priv WHERE Db = %s", (name,))
            cur.execute("DELETE FROM mysql.procs_priv WHERE Db = %s", (name,))
            cur.execute("FLUSH PRIVILEGES")
        root.close()


# ---------------------------------------------------------------------- item 1


def test_run_evaluates_the_interval_before_the_job_runs(server: Server, app: str) -> None:
    """DBMS_JOB.RUN computes the next date from INTERVAL when the run starts (as the
    runners do), not from its end: a 3 s run of a NOW() + 1 day job is next due one
    day after its start."""
    db = server.database
    conn = server.raw("alice")
    try:
        job = sql_submit(conn, db, "submit", "DO SLEEP(3)", "2030-01-01", "NOW() + INTERVAL 1 DAY")
        sql_call(conn, f"CALL `{db}`.run(%s)", (job,))
    finally:
        conn.close()
    (run,) = _runs(server, job)
    assert run["outcome"] == "ok" and run["duration"] >= 2.9
    nxt: datetime = _job(server, job)["next_run"]
    # NOW() in the interval has whole seconds: within a second of start + 1 day
    assert abs((nxt - (run["started"] + timedelta(days=1))).total_seconds()) < 1.01
    assert nxt < run["finished"] + timedelta(days=1) - timedelta(seconds=1.5)


# ---------------------------------------------------------------------- item 2


def _minutes_to_retry(server: Server, job: int) -> float:
    row = _job(server, job)
    return float((row["next_run"] - row["last_cycle_finish"]).total_seconds() / 60)


def test_failed_sql_runs_back_off_1_2_4_minutes(server: Server, app: str) -> None:
    """Each failed CALL run(job) counts a failure and the retry backs off 1, 2, 4 minutes
    after the run's end (never after the next date), as docs/sql.md promises; it was
    always the first retry's time, a minute after the first failure."""
    db = server.database
    conn = server.raw("alice")
    try:
        job = sql_submit(
            conn,
            db,
            "submit",
            f"INSERT INTO `{app}`.t VALUES (REPEAT('x', 99))",
            "2030-01-01",
            "NOW() + INTERVAL 1 DAY",
        )
        waits = []
        for _ in range(3):
            code, _message = sql_refused(conn, f"CALL `{db}`.run(%s)", (job,))
            assert code == 1406
            waits.append(_minutes_to_retry(server, job))
    finally:
        conn.close()
    assert waits == [pytest.approx(m, abs=0.01) for m in (1, 2, 4)]
    row = _job(server, job)
    assert row["failures"] == 3 and row["phase"] == "ERROR"
    assert [r["outcome"] for r in _runs(server, job)] == ["failed"] * 3


# ---------------------------------------------------------------------- item 3


def test_a_failing_run_in_an_autocommit_session_rolls_back_all_its_work(
    server: Server, app: str
) -> None:
    """The job's procedure inserts a row, then fails: in the client's autocommit session
    the first insert is rolled back too, as docs/sql.md says; the run log keeps the
    failure."""
    db = server.database
    conn = server.raw("alice")  # autocommit, as the mariadb client
    try:
        assert sql_call(conn, "SELECT @@autocommit") == [(1,)]
        job = sql_submit(conn, db, "submit", f"CALL `{app}`.two()", "2030-01-01", None)
        code, message = sql_refused(conn, f"CALL `{db}`.run(%s)", (job,))
        assert code == 1406 and "Data too long" in message
        assert sql_call(conn, f"SELECT x FROM `{app}`.t") == []
    finally:
        conn.close()
    assert _root(server, f"SELECT x FROM `{app}`.t") == []
    assert [r["outcome"] for r in _runs(server, job)] == ["failed"]
    assert _job(server, job)["failures"] == 1
    # a good run in the same kind of session commits its work
    conn = server.raw("alice")
    try:
        ok = sql_submit(
            conn, db, "submit", f"INSERT INTO `{app}`.t VALUES ('ok')", "2030-01-01", None
        )
        sql_call(conn, f"CALL `{db}`.run(%s)", (ok,))
    finally:
        conn.close()
    assert _root(server, f"SELECT x FROM `{app}`.t") == [("ok",)]


# ---------------------------------------------------------------------- item 4


def test_a_failed_sql_run_is_not_retried_after_the_window(server: Server, app: str) -> None:
    db = server.database
    conn = server.raw("alice")
    try:
        finish = sql_call(conn, "SELECT UTC_TIMESTAMP(6) + INTERVAL 30 SECOND")[0][0]
        job = sql_submit(
            conn,
            db,
            "submit_job",
            "windowed",
            f"INSERT INTO `{app}`.t VALUES (REPEAT('x', 99))",
            "every 3600",
            None,
            finish,
        )
        # the first failure: its slot (due now, inside the window) stays the next run
        code, _message = sql_refused(conn, f"CALL `{db}`.run(%s)", (job,))
        assert code == 1406
        row = _job(server, job)
        assert row["phase"] == "ERROR" and row["next_run"] is not None
        assert row["next_run"] <= finish
        # the second: the next grid slot is past the window, the retry (2 minutes) too
        code, _message = sql_refused(conn, f"CALL `{db}`.run(%s)", (job,))
        assert code == 1406
    finally:
        conn.close()
    row = _job(server, job)
    assert row["next_run"] is None
    assert row["phase"] == "FINISHED" and row["status"] == "FINISHED"
    assert row["failures"] == 2 and row["last_outcome"] == "failed"


# ---------------------------------------------------------------------- item 5


def test_user_export_keeps_an_interval_jobs_next_date(server: Server, app: str) -> None:
    """An interval job due in 2030, exported (user_export, export --format sql and as
    JSON) and recreated from the CALL, is still due in 2030 (it ran at once before)."""
    from jobtui.core.calltext import recreate_call

    db = server.database
    conn = server.raw("alice")
    try:
        job = sql_submit(
            conn,
            db,
            "submit_named",
            "yearly",
            f"INSERT INTO `{app}`.t VALUES ('y')",
            "2030-01-01 03:00:00",
            "NOW() + INTERVAL 1 YEAR",
        )
        sql_call(conn, f"CALL `{db}`.user_export(%s, @mycall)", (job,))
        mycall = str(sql_call(conn, "SELECT @mycall")[0][0])
        store = server.store("alice")
        try:
            stored = store.get("yearly")
            assert mycall == recreate_call(stored)  # the command line's line, byte for byte
            (exported,) = [e for e in store.export() if e["name"] == "yearly"]
            assert exported["schedule"]["start"].startswith("2030-01-01T03:00:00")
        finally:
            store.close()
        assert "'2030-01-01 03:00:00.000000'" in mycall
        sql_call(conn, f"CALL `{db}`.remove(%s)", (job,))
        sql_call(conn, "SET @recreate = @mycall")
        sql_call(conn, "PREPARE recreate FROM @recreate")
        sql_call(conn, "EXECUTE recreate")
        again = int(sql_call(conn, "SELECT @job")[0][0])
    finally:
        conn.close()
    row = _job(server, again)
    assert row["name"] == "yearly" and row["schedule_kind"] == "expr"
    assert row["next_run"] == datetime(2030, 1, 1, 3, 0)
    assert row["schedule_expr"] == "NOW() + INTERVAL 1 YEAR"


# ---------------------------------------------------------------------- item 7


def test_total_time_counts_a_failed_sql_run(server: Server, app: str) -> None:
    db = server.database
    conn = server.raw("alice")
    try:
        job = sql_submit(
            conn,
            db,
            "submit",
            f"INSERT INTO `{app}`.t SELECT REPEAT('x', 99) FROM (SELECT SLEEP(1)) AS s",
            "2030-01-01",
            None,
        )
        code, _message = sql_refused(conn, f"CALL `{db}`.run(%s)", (job,))
        assert code == 1406
        (row,) = sql_call(conn, f"SELECT total_time FROM `{db}`.user_jobs WHERE job = %s", (job,))
    finally:
        conn.close()
    (run,) = _runs(server, job)
    assert run["outcome"] == "failed" and run["duration"] >= 0.9
    assert row[0] == pytest.approx(run["duration"], abs=1e-3)


# ---------------------------------------------------------------------- item 8


def _routines_of(server: Server, job: int) -> list[tuple[Any, ...]]:
    return _root(
        server,
        "SELECT ROUTINE_NAME FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = %s "
        "AND (ROUTINE_NAME LIKE %s OR ROUTINE_NAME LIKE %s)",
        (server.database, f"jobtui\\_w\\_{job}\\_%", f"jobtui\\_x\\_{job}\\_%"),
    )


def test_removing_a_running_job_drops_its_routines(server: Server, app: str) -> None:
    """CALL remove of a job a runner is running: the run is aborted, the runner deletes the
    row when it records the end, and remove (waiting for that, as the command line does)
    drops the job's routines; they were left behind before."""
    from support.procs import wait_for

    from jobtui.core.runner.pool import RunnerPool

    db = server.database
    conn = server.raw("alice")
    store = server.store("run")
    pool = RunnerPool(store, threads=2, poll=0.1, name="remove26")
    pool.start()
    try:
        job = sql_submit(conn, db, "submit", "DO SLEEP(30)", None, "NOW() + INTERVAL 1 DAY")
        assert _routines_of(server, job)  # the what and the interval routines
        assert wait_for(lambda: bool(_job(server, job).get("running")), 15)
        with conn.cursor() as cur:
            cur.execute(f"CALL `{db}`.remove(%s)", (job,))
            warnings = cur.connection.show_warnings()
    finally:
        pool.stop(grace=0)
        store.close()
        conn.close()
    assert _job(server, job) == {}
    assert _routines_of(server, job) == []
    assert not [w for w in warnings if w[1] == 1644 or "is running" in str(w[2])]
    assert [r["outcome"] for r in _runs(server, job)] == ["aborted"]


# ---------------------------------------------------------------------- item 10


def test_dbms_jobs_job_parameter_is_refused_at_submit_with_a_clear_message(
    server: Server, app: str
) -> None:
    """'p(job);' (DBMS_JOB passes the job's number as `job`): jobtui binds no such
    parameter, so submit refuses it, saying what to write instead; it failed every run
    with Unknown column 'job' before. A quoted 'job' or a column t.job is no such use."""
    from jobtui.core.errors import InvalidInput
    from jobtui.core.model import What

    db = server.database
    conn = server.raw("alice")
    try:
        before = _root(server, "SELECT COUNT(*) FROM jobtui_job")
        for what in (f"CALL `{app}`.two(job)", f"CALL {app}.two(1, job);"):
            for proc, args in (
                ("submit", (what, None, None)),
                ("submit_named", ("j", what, None, None)),
            ):
                marks = ", ".join(["%s"] * len(args))
                code, message = sql_refused(conn, f"CALL `{db}`.`{proc}`(@j, {marks})", args)
                assert code == 1644 and "DBMS_JOB's job number" in message, (proc, what)
                assert "CALL what(@j, CONCAT(" in message
        assert _root(server, "SELECT COUNT(*) FROM jobtui_job") == before
        # a string 'job' is an ordinary literal argument
        ok = sql_submit(conn, db, "submit", f"INSERT INTO `{app}`.t VALUES ('job')", None, None)
        assert _job(server, ok)["what_kind"] == "sql"
    finally:
        conn.close()
    store = server.store("alice")
    try:
        with pytest.raises(InvalidInput, match="DBMS_JOB's job number"):
            store.submit("k", What("sql", f"CALL {app}.two(job)"), _once())
    finally:
        store.close()


def _once():  # type: ignore[no-untyped-def]
    from jobtui.core.schedules import make_schedule

    return make_schedule("once")
