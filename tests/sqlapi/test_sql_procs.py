"""The SQL interface's procedures (issue #14): submit, change, broken, run ... called from SQL.

Real MariaDB accounts (``server`` from tests/support/accounts.py: alice and bob are
operators, adm an admin, run a runner, each made by `jobtui grant --apply`),
called through PyMySQL sessions and through the real `mariadb` client.
docs/sql.md.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest
from support.accounts import Server, sql_call, sql_refused, sql_submit
from support.mariadb import admin_connection
from support.procs import wait_for
from support.sqlapi import database_state as _state
from support.sqlapi import job_row as _job
from support.sqlapi import root_rows as _root_rows
from support.sqlapi import serving_pool as _runner

from jobtui.core.backends.mysql import routines
from jobtui.core.backends.mysql.grants import grant_statements
from jobtui.core.backends.mysql.sqlapi import calls, keeper, owngrant, procedures, runlog, setalert
from jobtui.core.lock_names import lock_name
from jobtui.core.model import What, check_sql

pytestmark = pytest.mark.mariadb


# ---------------------------------------------------------------------- helpers


@pytest.fixture
def app(server: Server) -> Iterator[str]:
    """An application schema: table ``who`` that only alice may write, procedure ``ins``
    (SQL SECURITY INVOKER) that alice may execute."""
    name = f"{server.database}_app"
    alice = f"'{server.names['alice']}'@'%'"
    root = admin_connection()
    try:
        with root.cursor() as cur:
            cur.execute(f"CREATE DATABASE `{name}`")
            cur.execute(f"CREATE TABLE `{name}`.who (who VARCHAR(200), tag VARCHAR(50))")
            cur.execute(f"CREATE TABLE `{name}`.other (x INT)")  # alice may not write it
            cur.execute(
                f"CREATE PROCEDURE `{name}`.ins(IN t TEXT) SQL SECURITY INVOKER "
                f"INSERT INTO `{name}`.who VALUES (CURRENT_USER(), t)"
            )
            cur.execute(f"GRANT SELECT, INSERT ON `{name}`.who TO {alice}")
            cur.execute(f"GRANT EXECUTE ON PROCEDURE `{name}`.ins TO {alice}")
        yield name
    finally:
        with root.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{name}`")
            cur.execute(
                "DELETE FROM mysql.procs_priv WHERE Db = %s", (name,)
            )  # grants on a dropped schema's routines
            cur.execute("DELETE FROM mysql.tables_priv WHERE Db = %s", (name,))
            cur.execute("FLUSH PRIVILEGES")
        root.close()


def _session(server: Server, key: str) -> pymysql.connections.Connection:
    return server.raw(key)


# ---------------------------------------------------------------------- grants


def test_grant_gives_execute_on_exactly_the_procedures() -> None:
    for kind in ("operator", "admin"):
        lines = grant_statements(kind, "eve", "my_db")
        execs = [line for line in lines if "EXECUTE" in line]
        names = (
            *procedures.PUBLIC,
            calls.USER_EXPORT,
            *runlog.HELPERS,
            *keeper.HELPERS,
            owngrant.GRANT_OWN,
        )
        assert execs == [
            *(f"GRANT EXECUTE ON PROCEDURE `my_db`.`{n}` TO `jobtui_{kind}_my_db`" for n in names),
            f"GRANT EXECUTE ON FUNCTION `my_db`.`{keeper.WHO}` TO `jobtui_{kind}_my_db`",
            f"GRANT EXECUTE ON FUNCTION `my_db`.`{setalert.ALLOWED}` TO `jobtui_{kind}_my_db`",
        ]
    assert not [line for line in grant_statements("runner", "eve", "my_db") if "PROCEDURE" in line]


def test_the_procedures_are_invoker_and_the_helpers_definer(server: Server) -> None:
    rows = dict(
        _root_rows(
            server,
            "SELECT ROUTINE_NAME, SECURITY_TYPE FROM information_schema.ROUTINES "
            "WHERE ROUTINE_SCHEMA = %s",
            (server.database,),
        )
    )
    assert {n: rows[n] for n in procedures.PUBLIC} == dict.fromkeys(procedures.PUBLIC, "INVOKER")
    assert {n: rows[n] for n in runlog.HELPERS} == dict.fromkeys(runlog.HELPERS, "DEFINER")
    assert rows[owngrant.GRANT_OWN] == "DEFINER"


# ---------------------------------------------------------------------- submit and the runners


def test_sql_submitted_call_sql_and_expr_jobs_run_through_a_runner_as_their_owner(
    server: Server, app: str
) -> None:
    db, alice = server.database, server.names["alice"]
    conn = _session(server, "alice")
    try:
        call_job = sql_submit(conn, db, "submit", f"CALL {app}.ins('c''1')", None, None)
        sql_job = sql_submit(
            conn,
            db,
            "submit_named",
            "sqljob",
            f"INSERT INTO {app}.who VALUES (CURRENT_USER(), 'sql');",
            None,
            "",
        )
        expr_job = sql_submit(
            conn,
            db,
            "submit_job",
            "exprjob",
            f"INSERT INTO {app}.who VALUES (CURRENT_USER(), 'expr')",
            "expr NOW() + INTERVAL 1 HOUR",
            None,
            None,
        )
    finally:
        conn.close()
    call_row = _job(server, call_job)
    assert call_row["name"] == f"job{call_job}" and call_row["owner"] == f"{alice}@%"
    assert (call_row["what_kind"], call_row["what_target"]) == ("call", f"{app}.ins")
    assert call_row["what_args"] == '["c\'1"]'
    assert _job(server, sql_job)["what_kind"] == "sql"
    assert _job(server, expr_job)["schedule_expr"] == "NOW() + INTERVAL 1 HOUR"
    # the same routines the command line would have created (names, digests, bodies)
    role = f"jobtui_operator_{db}"
    want = {
        routines.for_what(call_job, What("call", f"{app}.ins", ("c'1",)), role).name,
        routines.for_what(sql_job, What("sql", _job(server, sql_job)["what_target"]), role).name,
        routines.for_expr(expr_job, "NOW() + INTERVAL 1 HOUR", role).name,
    }
    made = {
        r[0]
        for r in _root_rows(
            server,
            "SELECT name FROM mysql.proc WHERE db = %s AND name LIKE 'jobtui\\_w\\_%%' "
            "OR db = %s AND name LIKE 'jobtui\\_x\\_%%'",
            (db, db),
        )
    }
    assert want <= made
    with _runner(server):
        done = wait_for(
            lambda: (
                len(_root_rows(server, f"SELECT * FROM `{app}`.who")) >= 3
                and _root_rows(server, f"SELECT who, tag FROM `{app}`.who ORDER BY tag")
            ),
            30,
        )
    assert done == [(f"{alice}@%", "c'1"), (f"{alice}@%", "expr"), (f"{alice}@%", "sql")]
    assert _job(server, expr_job)["status"] == "SLEEPING"


def test_digest_of_unusual_text_matches_the_command_lines(server: Server) -> None:
    """JSON escaping (quotes, backslashes, control characters, non-ASCII, astral) as
    Python's json.dumps does it, so the runner's check accepts the routine."""
    db = server.database
    statement = "SELECT 'hé \"q\" \\\\ back\ttab\nline 😀 ✓' AS x, `id` FROM jobtui_user_job  ;"
    conn = _session(server, "alice")
    try:
        job = sql_submit(conn, db, "submit_named", "odd", statement, None, None)
    finally:
        conn.close()
    row = _job(server, job)
    assert row["what_target"] == check_sql(statement)
    name = routines.for_what(job, What("sql", row["what_target"]), f"jobtui_operator_{db}").name
    found = _root_rows(
        server, "SELECT body_utf8 FROM mysql.proc WHERE db = %s AND name = %s", (db, name)
    )
    assert found, name


# ---------------------------------------------------------------------- one's own jobs only


def test_bob_and_an_admin_cannot_call_anything_on_alices_job(server: Server, app: str) -> None:
    db = server.database
    conn = _session(server, "alice")
    try:
        job = sql_submit(conn, db, "submit", f"CALL {app}.ins('a')", None, "NOW() + INTERVAL 1 DAY")
    finally:
        conn.close()
    before = _state(server)
    for key in ("bob", "adm"):  # an admin too acts only on its own jobs, as in DBMS_JOB
        _refuse_all(server, key, job)
    assert _state(server) == before


def _refuse_all(server: Server, key: str, job: int) -> None:
    db = server.database
    bob = _session(server, key)
    try:
        for sql, args in [
            (f"CALL `{db}`.remove(%s)", (job,)),
            (f"CALL `{db}`.`change`(%s, 'SELECT 1', NULL, NULL)", (job,)),
            (f"CALL `{db}`.what(%s, 'SELECT 1')", (job,)),
            (f"CALL `{db}`.next_date(%s, '2030-01-01')", (job,)),
            (f"CALL `{db}`.set_interval(%s, 'NOW() + INTERVAL 2 DAY')", (job,)),
            (f"CALL `{db}`.broken(%s, TRUE, NULL)", (job,)),
            (f"CALL `{db}`.run(%s)", (job,)),
            (f"CALL `{db}`.jobtui_sql_run_begin(%s, @s)", (job,)),
        ]:
            code, message = sql_refused(bob, sql, args)
            assert code == 1644, (sql, code, message)
            assert message == (
                f"job {job} is not one of your jobs (no such job, or another account owns it)"
            ), sql
    finally:
        bob.close()


def test_an_operator_reaches_no_table_the_helpers_write(server: Server) -> None:
    bob = _session(server, "bob")
    try:
        for table in ("jobtui_run", "jobtui_job", "jobtui_secret"):
            code, _ = sql_refused(bob, f"SELECT * FROM `{server.database}`.{table}")
            assert code == 1142, table
    finally:
        bob.close()


# ---------------------------------------------------------------------- bad arguments


def test_bad_arguments_are_refused_and_change_nothing(server: Server, app: str) -> None:
    db = server.database
    conn = _session(server, "alice")
    try:
        job = sql_submit(conn, db, "submit_named", "good", "SELECT 1", None, None)
        before = _state(server)
        submit = f"CALL `{db}`.submit(@j, %s, %s, %s)"
        native = f"CALL `{db}`.submit_job(@j, %s, 'SELECT 1', %s, %s, %s)"
        cases: list[tuple[str, tuple[Any, ...], str]] = [
            (submit, ("SELECT 1; SELECT 2", None, None), "more than one SQL statement"),
            (submit, ("   ", None, None), "empty what"),
            (submit, (None, None, None), "what is NULL"),
            (submit, (f"CALL {app}.nope()", None, None), "does not exist"),
            (submit, (f"CALL {app}.ins()", None, None), "takes 1 argument(s), 0 given"),
            (submit, ("SELEC 1", None, None), "the database rejected it"),
            (submit, ("SELECT 1", None, "NULL"), "gives NULL now"),
            (submit, ("SELECT 1", None, "NOW() - INTERVAL 1 DAY"), "not after NOW()"),
            (submit, ("SELECT 1", None, "'tomorrow'"), "not a date-time"),
            (submit, ("SELECT 1", None, "NOW() + INTERVAL SLEEP(1) SECOND"), "is not allowed"),
            (submit, ("SELECT 1", None, "NOW() +"), "the database rejected it"),
            (
                f"CALL `{db}`.submit_named(@j, %s, 'SELECT 1', NULL, NULL)",
                ("bad name",),
                "invalid job name",
            ),
            (
                f"CALL `{db}`.submit_named(@j, %s, 'SELECT 1', NULL, NULL)",
                ("good",),
                "already exists",
            ),
            (native, ("n1", "every 0.01", None, None), "between 0.1 and"),
            (native, ("n1", "every soon", None, None), "expected every <seconds>"),
            (native, ("n1", "cron * * *", None, None), "expected 5 fields"),
            (native, ("n1", "cron H * * * *", None, None), "random (R) and hashed (H)"),
            (native, ("n1", "cron * * * * * Not/A/Zone!", None, None), "invalid time zone"),
            (native, ("n1", "weekly", None, None), "expected every <seconds>, cron"),
            (
                native,
                ("n1", "once", "2030-01-02", "2030-01-01"),
                "is not after start",
            ),
            (submit, ("SELECT 1", "0000-00-00", None), "invalid next_date '0000-00-00"),
            (submit, ("SELECT 1", "2026-00-10", None), "invalid next_date '2026-00-10"),
            (submit, ("SELECT 1", "0999-12-31", "NOW() + INTERVAL 1 DAY"), "invalid next_date"),
            (native, ("n1", "once", "0000-00-00", None), "invalid start '0000-00-00"),
            (native, ("n1", "once", None, "2030-01-00"), "invalid finish '2030-01-00"),
            (f"CALL `{db}`.next_date(%s, '0000-00-00')", (job,), "invalid next_date"),
            (f"CALL `{db}`.change(%s, NULL, '2030-00-00', NULL)", (job,), "invalid next_date"),
            (f"CALL `{db}`.broken(%s, FALSE, '0000-00-00')", (job,), "invalid next_date"),
            (f"CALL `{db}`.next_date(%s, NULL)", (job,), "next_date is NULL"),
            (f"CALL `{db}`.broken(%s, NULL, NULL)", (job,), "broken is NULL"),
            (f"CALL `{db}`.broken(%s, TRUE, '2030-01-01')", (job,), "only accepted with"),
            (f"CALL `{db}`.what(%s, 'SELECT 1; DROP TABLE x')", (job,), "more than one"),
            (f"CALL `{db}`.set_interval(%s, 'NOW()')", (job,), "not after NOW()"),
        ]
        for sql, args, expected in cases:
            code, message = sql_refused(conn, sql, args)
            assert code == 1644 and expected in message, (args, message)
            assert _state(server) == before, args
    finally:
        conn.close()


# ---------------------------------------------------------------------- run


def test_run_runs_in_the_callers_session_records_it_and_raises_the_jobs_error(
    server: Server, app: str
) -> None:
    db = server.database
    conn = _session(server, "alice")
    try:
        good = sql_submit(
            conn, db, "submit_named", "good", f"CALL {app}.ins('run')", "2030-01-01", None
        )
        bad = sql_submit(
            conn,
            db,
            "submit_named",
            "bad",
            f"INSERT INTO {app}.who VALUES ('x', REPEAT('x', 99))",
            None,
            None,
        )
        sql_call(conn, f"CALL `{db}`.broken(%s, TRUE, NULL)", (good,))
        assert _job(server, good)["status"] == "BROKEN"
        cid = int(sql_call(conn, "SELECT CONNECTION_ID()")[0][0])
        sql_call(conn, f"CALL `{db}`.run(%s)", (good,))  # even when broken
        assert _root_rows(server, f"SELECT who, tag FROM `{app}`.who") == [
            (f"{server.names['alice']}@%", "run")
        ]
        row = _job(server, good)
        assert row["broken"] == 0 and row["failures"] == 0 and row["cycles"] == 1
        assert row["running"] == 0 and row["last_outcome"] == "ok"
        assert str(row["next_run"]).startswith("2030-01-01")  # the once job's slot stays
        # the job's own error, errno and text, and a failure counted
        code, message = sql_refused(conn, f"CALL `{db}`.run(%s)", (bad,))
        assert code == 1406 and "Data too long" in message
        row = _job(server, bad)
        assert row["failures"] == 1 and row["last_outcome"] == "failed"
        assert row["phase"] == "ERROR" and row["running"] == 0
        runs = _root_rows(
            server,
            "SELECT job_id, outcome, manual, runner, error FROM jobtui_run ORDER BY id",
        )
        assert [(r[0], r[1], r[2], r[3]) for r in runs] == [
            (good, "ok", 1, f"sql-session:{cid}"),
            (bad, "failed", 1, f"sql-session:{cid}"),
        ]
        assert runs[1][4].startswith("(1406) Data too long")
        # never while someone holds the job's lock (a runner's claim): the same name
        key = _root_rows(server, "SELECT value FROM jobtui_secret")[0][0]
        holder = admin_connection(db)
        try:
            got = sql_call(holder, "SELECT GET_LOCK(%s, 0)", (lock_name(key, db, good),))
            assert got == [(1,)]
            before = _state(server)
            code, message = sql_refused(conn, f"CALL `{db}`.run(%s)", (good,))
            assert code == 1644 and "is running now" in message
            assert _state(server) == before
        finally:
            holder.close()
        sql_call(conn, f"CALL `{db}`.run(%s)", (good,))  # the lock went with its session
        assert _job(server, good)["cycles"] == 2
    finally:
        conn.close()


def test_a_killed_sql_run_is_recorded_lost_and_a_live_one_is_left_alone(
    server: Server,
) -> None:
    db = server.database
    conn = _session(server, "alice")
    job = sql_submit(conn, db, "submit_named", "slow", "DO SLEEP(60)", "2030-01-01", None)
    cid = int(sql_call(conn, "SELECT CONNECTION_ID()")[0][0])
    errors: list[BaseException] = []

    def run() -> None:
        try:
            sql_call(conn, f"CALL `{db}`.run(%s)", (job,))
        except BaseException as exc:  # the KILL ends it
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert wait_for(lambda: _job(server, job).get("running") == 1, 10)
    with _runner(server, heartbeat_timeout=1.0):
        time.sleep(4)  # several reaps: the session holds the job's lock, so it is alive
        row = _job(server, job)
        assert row["running"] == 1 and row["runner_id"] == f"sql-session:{cid}"
        assert _root_rows(server, "SELECT outcome FROM jobtui_run") == [("running",)]
        root = admin_connection()
        try:
            sql_call(root, f"KILL CONNECTION {cid}")
        finally:
            root.close()
        thread.join(10)
        assert wait_for(
            lambda: (
                _root_rows(server, "SELECT outcome FROM jobtui_run") == [("lost",)]
                and _job(server, job)["running"] == 0
            ),
            15,
        )
    assert errors
    row = _job(server, job)
    assert row["last_outcome"] == "lost" and "SQL session" in row["last_error"]


# ---------------------------------------------------------------------- steering a running pool


def test_changes_through_sql_reach_a_running_pool_within_a_second(server: Server, app: str) -> None:
    db = server.database

    def count() -> int:
        return int(_root_rows(server, f"SELECT COUNT(*) FROM `{app}`.who")[0][0])

    conn = _session(server, "alice")
    try:
        with _runner(server):
            job = sql_submit(
                conn,
                db,
                "submit_job",
                "often",
                f"CALL {app}.ins('e')",
                "every 0.5",
                None,
                None,
            )
            assert wait_for(lambda: count() >= 2, 10)
            sql_call(conn, f"CALL `{db}`.broken(%s, TRUE, NULL)", (job,))
            time.sleep(1.0)  # a run claimed before the change may still end
            stopped = count()
            time.sleep(2.0)
            assert count() == stopped
            sql_call(conn, f"CALL `{db}`.broken(%s, FALSE, NULL)", (job,))
            assert wait_for(lambda: count() >= stopped + 2, 5)
            # a new statement through what(): the runner runs the new routine
            sql_call(conn, f"CALL `{db}`.what(%s, %s)", (job, f"CALL {app}.ins('w')"))
            assert wait_for(
                lambda: (
                    _root_rows(server, f"SELECT COUNT(*) FROM `{app}`.who WHERE tag = 'w'")[0][0]
                    >= 1
                ),
                5,
            )
            sql_call(conn, f"CALL `{db}`.remove(%s)", (job,))
            assert wait_for(lambda: not _job(server, job), 5)
            cron = sql_submit(
                conn, db, "submit_job", "cronjob", "SELECT 1", "cron 0 3 * * * UTC", None, None
            )
            assert _job(server, cron)["next_run"] is None
            armed = wait_for(lambda: _job(server, cron)["next_run"], 10)
            assert armed.hour == 3 and armed.minute == 0 and armed.second == 0
            # a zone only the runners can check: the arming marks the job BROKEN, saying why
            bad = sql_submit(
                conn,
                db,
                "submit_job",
                "badzone",
                "SELECT 1",
                "cron 0 3 * * * Mars/Olympus",
                None,
                None,
            )
            assert wait_for(lambda: _job(server, bad)["broken"], 10)
            row = _job(server, bad)
            assert row["status"] == "BROKEN" and "Mars/Olympus" in row["broken_reason"]
            assert row["next_run"] is None
    finally:
        conn.close()
    left = _root_rows(
        server,
        "SELECT name FROM mysql.proc WHERE db = %s AND name LIKE %s",
        (db, f"jobtui\\_w\\_{job}\\_%"),
    )
    assert left == []  # remove dropped the job's routines


# ---------------------------------------------------------------------- the mariadb client


@pytest.fixture
def client_options(server: Server) -> Iterator[Any]:
    """A 0600 option file per account for the `mariadb` client (no password on argv)."""
    if shutil.which("mariadb") is None:
        pytest.skip("no mariadb command-line client")
    folder = Path(tempfile.mkdtemp(prefix="jobtui-sqlprocs-"))
    files = {}
    for key in ("alice", "bob"):
        path = folder / f"{key}.cnf"
        path.write_text(
            f"[client]\nuser={server.names[key]}\npassword={server.accounts[key]}\n"
            "host=127.0.0.1\nport=3306\n"
        )
        path.chmod(stat.S_IRUSR | stat.S_IWUSR)
        files[key] = path

    def run(key: str, sql: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["mariadb", f"--defaults-extra-file={files[key]}", "--batch", server.database],
            input=sql,
            capture_output=True,
            text=True,
            timeout=60,
            env={k: v for k, v in os.environ.items() if k != "MYSQL_PWD"},
        )

    try:
        yield run
    finally:
        shutil.rmtree(folder)


def test_submit_run_and_broken_through_the_mariadb_client(
    server: Server, app: str, client_options: Any
) -> None:
    db = server.database
    out = client_options(
        "alice",
        f"CALL {db}.submit(@j, 'CALL {app}.ins(''cli'')', NULL, 'NOW() + INTERVAL 1 DAY');\n"
        "SELECT @j AS job;\n"
        f"CALL {db}.run(@j);\n"
        f"CALL {db}.broken(@j, TRUE, NULL);\n",
    )
    assert out.returncode == 0, out.stderr
    job = int(out.stdout.split("job\n", 1)[1].split()[0])
    assert _root_rows(server, f"SELECT tag FROM `{app}`.who") == [("cli",)]
    row = _job(server, job)
    assert row["broken"] == 1 and row["cycles"] == 1 and row["status"] == "BROKEN"
    assert _root_rows(server, "SELECT outcome, manual FROM jobtui_run") == [("ok", 1)]
    assert server.accounts["alice"] not in out.stdout + out.stderr
    refused = client_options("bob", f"CALL {db}.run({job});\n")
    assert refused.returncode == 1
    assert f"job {job} is not one of your jobs" in refused.stderr
    assert _root_rows(server, "SELECT COUNT(*) FROM jobtui_run") == [(1,)]


# ---------------------------------------------------------------------- install and upgrade


def test_an_admins_init_recreates_them_with_its_role_as_definer_and_keeps_the_grants(
    server: Server, app: str
) -> None:
    from jobtui.cli import main

    db = server.database
    root = admin_connection(db)
    try:
        sql_call(root, "DELETE FROM jobtui_meta WHERE `key` = 'sql_api'")  # as after an upgrade
    finally:
        root.close()
    assert main(["--db", server.url_for("adm"), "init"]) == 0
    definers = dict(
        _root_rows(
            server,
            "SELECT ROUTINE_NAME, DEFINER FROM information_schema.ROUTINES "
            "WHERE ROUTINE_SCHEMA = %s AND ROUTINE_NAME LIKE 'jobtui\\_sql\\_%%'",
            (db,),
        )
    )
    assert definers == dict.fromkeys(runlog.HELPERS, f"jobtui_admin_{db}")  # a role
    # alice's EXECUTE survived the CREATE OR REPLACE, and run works with the new helpers
    conn = _session(server, "alice")
    try:
        job = sql_submit(conn, db, "submit", f"CALL {app}.ins('after')", "2030-01-01", None)
        sql_call(conn, f"CALL `{db}`.run(%s)", (job,))
    finally:
        conn.close()
    assert _root_rows(server, f"SELECT tag FROM `{app}`.who") == [("after",)]
    assert _root_rows(server, "SELECT outcome FROM jobtui_run") == [("ok",)]


# ---------------------------------------------------------------------- the setters


def test_setters_write_rows_and_routines_the_command_line_reads(server: Server, app: str) -> None:
    db, role = server.database, f"jobtui_operator_{server.database}"

    def functions(job: int) -> set[str]:
        rows = _root_rows(
            server,
            "SELECT name FROM mysql.proc WHERE db = %s AND type = 'FUNCTION' AND name LIKE %s",
            (db, f"jobtui\\_x\\_{job}\\_%"),
        )
        return {r[0] for r in rows}

    conn = _session(server, "alice")
    store = server.store("alice")
    try:
        job = sql_submit(
            conn, db, "submit_named", "setme", "SELECT 1", None, "NOW() + INTERVAL 1 DAY"
        )
        assert functions(job) == {routines.for_expr(job, "NOW() + INTERVAL 1 DAY", role).name}
        before = _state(server)
        sql_call(conn, f"CALL `{db}`.`change`(%s, NULL, NULL, NULL)", (job,))
        assert _state(server) == before  # nothing given, nothing changed
        sql_call(conn, f"CALL `{db}`.next_date(%s, '2031-05-05 10:00:00')", (job,))
        got = store.get("setme")
        assert got.problem is None and got.next_run is not None
        assert got.next_run.isoformat() == "2031-05-05T10:00:00+00:00"
        sql_call(conn, f"CALL `{db}`.set_interval(%s, 'NOW() + INTERVAL 2 HOUR')", (job,))
        got = store.get("setme")
        assert got.problem is None and got.schedule.expr == "NOW() + INTERVAL 2 HOUR"
        assert functions(job) == {routines.for_expr(job, "NOW() + INTERVAL 2 HOUR", role).name}
        assert got.next_run is not None and got.next_run.year == 2031  # DBMS_JOB: next stays
        sql_call(conn, f"CALL `{db}`.set_interval(%s, NULL)", (job,))
        got = store.get("setme")
        assert got.problem is None and got.schedule.kind == "once" and functions(job) == set()
        sql_call(conn, f"CALL `{db}`.what(%s, %s)", (job, f"CALL {app}.ins('w')"))
        got = store.get("setme")
        assert got.what == What("call", f"{app}.ins", ("w",)) and got.problem is None
    finally:
        store.close()
        conn.close()


def test_remove_of_a_job_running_in_a_sql_session_deletes_it_when_the_run_ends(
    server: Server,
) -> None:
    db = server.database
    runner_conn, other = _session(server, "alice"), _session(server, "alice")
    try:
        job = sql_submit(runner_conn, db, "submit_named", "nap", "DO SLEEP(2)", "2030-01-01", None)
        thread = threading.Thread(
            target=lambda: sql_call(runner_conn, f"CALL `{db}`.run(%s)", (job,)), daemon=True
        )
        thread.start()
        assert wait_for(lambda: _job(server, job).get("running") == 1, 10)
        with other.cursor() as cur:
            # waits (up to 10 s, issue 26) for the 2 s run's end, then drops the routines
            cur.execute(f"CALL `{db}`.remove(%s)", (job,))
            cur.execute("SHOW WARNINGS")
            warnings = cur.fetchall()
        assert not any("deleted when that run has ended" in str(w[2]) for w in warnings)
        assert _job(server, job) == {}
        thread.join(15)
        assert _root_rows(server, "SELECT outcome FROM jobtui_run") == [("ok",)]
        assert not _root_rows(
            server,
            "SELECT 1 FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = %s "
            "AND ROUTINE_NAME LIKE %s",
            (db, f"jobtui\\_w\\_{job}\\_%"),
        )
    finally:
        runner_conn.close()
        other.close()


def test_the_callers_time_zone_does_not_matter(server: Server) -> None:
    """Times are UTC whatever the session's time_zone: NOW() in an interval is evaluated
    under '+00:00' (as the runners evaluate it), and "now" is UTC_TIMESTAMP()."""
    db = server.database
    conn = _session(server, "alice")
    try:
        sql_call(conn, "SET time_zone = '-05:00'")
        job = sql_submit(conn, db, "submit", "SELECT 1", None, "NOW() + INTERVAL 1 MINUTE")
        utc_now = _root_rows(server, "SELECT UTC_TIMESTAMP(6)")[0][0]
        next_run = _job(server, job)["next_run"]
        assert abs((utc_now - next_run).total_seconds()) < 60
        code, message = sql_refused(
            conn, f"CALL `{db}`.submit(@j, 'SELECT 1', NULL, 'NOW() - INTERVAL 1 MINUTE')"
        )
        assert code == 1644 and "(UTC), which is not after NOW()" in message
    finally:
        conn.close()
