"""The DBMS_JOB views, user_export and `jobtui export --format sql` (docs/sql.md).

Real MariaDB accounts (``server`` from tests/support/accounts.py: alice and bob are
operators, adm an admin, run a runner, each made by `jobtui grant --apply`),
read through PyMySQL sessions and the real `mariadb` command-line client;
the SQL export also on a real SQLite file.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pymysql
import pytest
from sqlalchemy import text
from support.accounts import Server
from support.mariadb import admin_connection
from support.procs import wait_for

from jobtui.cli import main
from jobtui.core import actions, calltext
from jobtui.core.backends.mysql.sqlapi import sqltext
from jobtui.core.jobdefs import exported_schedule
from jobtui.core.model import Job, What
from jobtui.core.runner.pool import RunnerPool
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore, open_store

JOB_COLUMNS = [
    "job",
    "log_user",
    "priv_user",
    "schema_user",
    "last_date",
    "last_sec",
    "this_date",
    "this_sec",
    "next_date",
    "next_sec",
    "total_time",
    "broken",
    "interval",
    "failures",
    "what",
    "name",
    "status",
    "last_error",
    "what_kind",
    "schedule",
    "schedule_start",
    "schedule_finish",
    "max_failures",
    "description",
    "intent",
    "run_now",
    "abort_requested",
    "alert",  # appended after Oracle's and jobtui's earlier columns (issue 27)
]
RUNNING_COLUMNS = [
    "sid",
    "job",
    "failures",
    "last_date",
    "last_sec",
    "this_date",
    "this_sec",
    "name",
    "log_user",
    "runner",
    "run_start",
]
NASTY = 'it\'s \\ a "back\\slash"\nsecond line\r\x1a end'  # quotes, backslashes, newlines
START = datetime(2027, 1, 2, 3, 4, 5, 600_000, tzinfo=UTC)
FINISH = datetime(2030, 6, 1, tzinfo=UTC)


def _rows(server: Server, key: str, sql: str, args: Any = None) -> list[dict[str, Any]]:
    conn = server.raw(key)
    try:
        with conn.cursor(pymysql.cursors.DictCursor) as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())
    finally:
        conn.close()


def _denied(server: Server, key: str, sql: str) -> str:
    with pytest.raises(pymysql.err.MySQLError) as caught:
        _rows(server, key, sql)
    return str(caught.value)


def _alice_jobs(server: Server, alice: JobStore) -> dict[str, Job]:
    """alice's jobs of every kind: a call with nasty arguments, sql with a window, expr, once."""
    conn = server.raw("alice")
    try:
        with conn.cursor() as cur:  # her own procedure in the jobtui database
            cur.execute("CREATE PROCEDURE p(IN a TEXT, IN b TEXT) BEGIN DO 0; END")
    finally:
        conn.close()
    db = server.database
    alice.submit(
        "call-job",
        What("call", f"{db}.p", (NASTY, "")),
        make_schedule("every", every=90.5),
        description="has a description",
    )
    alice.submit(
        "sql-job",
        What("sql", f"SELECT '{NASTY.replace(chr(39), chr(39) * 2)}' FROM DUAL"),
        make_schedule("cron", cron="0 3 * * *", tz="Europe/Paris", start=START, finish=FINISH),
    )
    alice.submit(
        "expr-job", What("sql", "DO 1"), make_schedule("expr", expr="NOW() + INTERVAL 1 DAY")
    )
    alice.submit("once-job", What("sql", "DO 2"), make_schedule("once", start=START))
    return {j.name: j for j in alice.list_jobs()}


@pytest.fixture
def stores(server: Server) -> Iterator[dict[str, JobStore]]:
    opened = {key: server.store(key) for key in ("alice", "bob", "adm")}
    try:
        yield opened
    finally:
        for store in opened.values():
            store.close()


# ---------------------------------------------------------------------- the views


@pytest.mark.mariadb
def test_user_jobs_has_dbms_jobs_columns_and_only_the_callers_jobs(
    server: Server, stores: dict[str, JobStore]
) -> None:
    alice, bob = stores["alice"], stores["bob"]
    mine = _alice_jobs(server, alice)
    bob.submit("bobs-job", What("sql", "DO 3"), make_schedule("every", every=60))
    rows = _rows(server, "alice", "SELECT * FROM user_jobs ORDER BY job")
    assert list(rows[0]) == JOB_COLUMNS
    assert sorted(r["name"] for r in rows) == sorted(mine)
    owner = f"{server.names['alice']}@%"
    for row in rows:
        job = mine[row["name"]]
        assert row["job"] == job.id
        assert row["log_user"] == row["priv_user"] == owner
        assert row["broken"] == "N" and row["failures"] == 0 and row["status"] == "ENABLED"
        # the same text as the Python side writes (export --format sql, user_export)
        assert row["what"] == calltext.what_text(job.what)
        assert row["schedule"] == calltext.schedule_text(job.schedule)
        assert row["interval"] == calltext.interval_text(job.schedule)
        assert row["next_date"] == job.next_run.replace(tzinfo=None)  # type: ignore[union-attr]
        assert row["next_sec"] == row["next_date"].strftime("%H:%M:%S")
    by_name = {r["name"]: r for r in rows}
    assert by_name["call-job"]["what"] == (
        f"CALL {server.database}.p('it\\'s \\\\ a \"back\\\\slash\"\\nsecond line\\r\\Z end', '')"
    )
    assert "\n" not in by_name["call-job"]["what"]
    assert by_name["call-job"]["schema_user"] == server.database
    assert by_name["call-job"]["interval"] == "every 90.5"
    assert by_name["call-job"]["description"] == "has a description"
    assert by_name["sql-job"]["interval"] == "cron 0 3 * * * Europe/Paris"
    assert by_name["sql-job"]["schedule_start"] == START.replace(tzinfo=None)
    assert by_name["sql-job"]["schedule_finish"] == FINISH.replace(tzinfo=None)
    assert by_name["expr-job"]["interval"] == "NOW() + INTERVAL 1 DAY"
    assert by_name["expr-job"]["schedule"] == "expr NOW() + INTERVAL 1 DAY"
    assert by_name["once-job"]["interval"] is None and by_name["once-job"]["schedule"] == "once"
    alice.broken("expr-job", True)
    assert _rows(server, "alice", "SELECT broken FROM user_jobs WHERE name = 'expr-job'") == [
        {"broken": "Y"}
    ]

    # bob: his own job, none of alice's through any view he may read; dba_* denied
    assert [r["name"] for r in _rows(server, "bob", "SELECT * FROM user_jobs")] == ["bobs-job"]
    ids = ", ".join(str(j.id) for j in mine.values())
    for view in ("user_jobs", "all_jobs", "user_jobs_running"):
        assert _rows(server, "bob", f"SELECT * FROM {view} WHERE job IN ({ids})") == []
    for view in ("dba_jobs", "dba_jobs_running"):
        assert "SELECT command denied" in _denied(server, "bob", f"SELECT * FROM {view}")
        assert "SELECT command denied" in _denied(server, "alice", f"SELECT job FROM {view}")
    # the runner account reads none of the views (it needs the table only)
    assert "denied" in _denied(server, "run", "SELECT * FROM user_jobs")

    # the admin: every job in dba_jobs, the rows alice sees in hers; its own (none) in user_jobs
    rows = _rows(server, "alice", "SELECT * FROM user_jobs ORDER BY job")
    every = _rows(server, "adm", "SELECT * FROM dba_jobs ORDER BY job")
    assert sorted(r["name"] for r in every) == sorted([*mine, "bobs-job"])
    assert [r for r in every if r["name"] in mine] == rows
    assert _rows(server, "adm", "SELECT * FROM user_jobs") == []

    # all_jobs (DBMS_JOB's ALL_JOBS): the jobs the caller may act on, which in jobtui
    # are its own, admins included (every verb acts on the caller's own jobs only)
    assert _rows(server, "alice", "SELECT * FROM all_jobs ORDER BY job") == rows
    assert [r["name"] for r in _rows(server, "bob", "SELECT * FROM all_jobs")] == ["bobs-job"]
    assert _rows(server, "adm", "SELECT * FROM all_jobs") == []
    assert "denied" in _denied(server, "run", "SELECT * FROM all_jobs")


@contextmanager
def _runner(server: Server) -> Iterator[RunnerPool]:
    store = server.store("run")
    pool = RunnerPool(store, threads=1, poll=0.1, name="views")
    pool.start()
    try:
        yield pool
    finally:
        pool.stop(grace=0)
        store.close()


@pytest.mark.mariadb
def test_running_views_show_the_run_in_flight_to_its_owner_and_the_admins(
    server: Server, stores: dict[str, JobStore]
) -> None:
    alice = stores["alice"]
    conn = server.raw("alice")
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE PROCEDURE slow30() BEGIN DO SLEEP(30); END")
    finally:
        conn.close()
    alice.submit("slow", What("call", f"{server.database}.slow30"), make_schedule("once"))
    job_id = alice.get("slow").id
    with _runner(server):
        assert wait_for(lambda: alice.get("slow").running, 15)
        rows = _rows(server, "alice", "SELECT * FROM user_jobs_running")
        assert len(rows) == 1 and list(rows[0]) == RUNNING_COLUMNS
        row = rows[0]
        job = alice.get("slow")
        assert row["job"] == job_id and row["name"] == "slow"
        assert row["sid"] == job.runner_connection_id and row["runner"] == job.runner_id
        assert row["this_date"] is not None and row["run_start"] is not None
        assert row["log_user"] == f"{server.names['alice']}@%"
        # sid is the runner's connection, as DBA_JOBS_RUNNING's SID is the session's: the
        # one executing the job (its USER shows alice, the routine's definer, meanwhile)
        root = admin_connection()
        try:
            with root.cursor() as cur:
                cur.execute(
                    "SELECT USER, INFO FROM information_schema.PROCESSLIST WHERE ID = %s",
                    (row["sid"],),
                )
                user, info = cur.fetchone()  # type: ignore[misc]
            assert user == server.names["alice"] and "SLEEP(30)" in info
        finally:
            root.close()
        assert _rows(server, "adm", "SELECT * FROM dba_jobs_running") == rows
        assert _rows(server, "bob", "SELECT * FROM user_jobs_running") == []
        assert "denied" in _denied(server, "bob", "SELECT * FROM dba_jobs_running")
        alice.abort("slow")
        assert wait_for(lambda: not alice.get("slow").running, 10)
    assert _rows(server, "alice", "SELECT * FROM user_jobs_running") == []


# ---------------------------------------------------------------------- user_export


def _user_export(server: Server, key: str, job_id: Any) -> str:
    conn = server.raw(key)
    try:
        with conn.cursor() as cur:
            cur.execute("SET time_zone = '+05:00'")  # the text must not depend on it
            cur.execute("CALL user_export(%s, @c)", (job_id,))
            cur.execute("SELECT @c")
            return str(cur.fetchone()[0])  # type: ignore[index]
    finally:
        conn.close()


def _export_sql(capsys: pytest.CaptureFixture[str], url: str, *more: str) -> list[str]:
    code = main(["--db", url, "export", "--format", "sql", *more])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out.splitlines()


@pytest.mark.mariadb
def test_user_export_and_export_format_sql_write_the_same_calls(
    server: Server, stores: dict[str, JobStore], capsys: pytest.CaptureFixture[str]
) -> None:
    alice = stores["alice"]
    mine = _alice_jobs(server, alice)
    lines = _export_sql(capsys, server.url_for("alice"))
    calls_printed = [line for line in lines if not line.startswith("-- ")]
    assert lines[0].startswith("-- jobtui export --format sql")
    assert len(calls_printed) == len(mine)
    export_order = [d["name"] for d in alice.export()]
    for line, name in zip(calls_printed, export_order, strict=True):
        job = mine[name]
        mycall = _user_export(server, "alice", job.id)
        assert mycall == calltext.recreate_call(job)
        assert line == mycall + ";"
        assert "\n" not in mycall and mycall.startswith(f"CALL submit_job(@job, '{name}', ")
    # not one of the caller's jobs: bob, the admin, a job that does not exist, NULL
    for key, job_id in (("bob", mine["sql-job"].id), ("adm", mine["sql-job"].id), ("bob", 10**9)):
        with pytest.raises(pymysql.err.MySQLError) as caught:
            _user_export(server, key, job_id)
        assert caught.value.args == (
            1644,
            f"job {job_id} is not one of your jobs (no such job, or another account owns it)",
        )
    with pytest.raises(pymysql.err.MySQLError, match="job NULL is not one of your jobs"):
        _user_export(server, "alice", None)
    # the runner may not call it
    with pytest.raises(pymysql.err.MySQLError, match="denied"):
        _user_export(server, "run", mine["sql-job"].id)


@pytest.mark.mariadb
def test_sql_literal_is_the_servers_quote_byte_for_byte(server: Server) -> None:
    """calltext.sql_literal (Python) and sqltext.literal_sql (SQL) agree on every character."""
    values = [
        "".join(chr(i) for i in range(0, 128)),
        NASTY,
        "é ü 日本 🙂 \u2028",
        "",
        "\\'",
        "''",
        "\\\\n",
    ]
    conn = admin_connection()
    try:
        with conn.cursor() as cur:
            cur.execute("SET NAMES utf8mb4")
            for value in values:
                cur.execute(
                    f"SELECT {sqltext.literal_sql('CAST(%s AS CHAR CHARACTER SET utf8mb4)')}",
                    (value,),
                )
                shown = cur.fetchone()[0]  # type: ignore[index]
                assert shown == calltext.sql_literal(value), repr(value)
                # and the literal reads back as the value
                cur.execute(f"SELECT {shown}")
                assert cur.fetchone()[0] == value  # type: ignore[index]
            cur.execute(
                f"SELECT {sqltext.literal_sql('CAST(%s AS DATETIME(6))')}",
                ("2027-01-02 03:04:05.6",),
            )
            assert cur.fetchone()[0] == calltext.sql_literal(START)  # type: ignore[index]
            # every's seconds: CAST(DOUBLE AS CHAR) is calltext.number_text
            for seconds in (0.1, 1 / 3, 0.1 + 0.2, 90.5, 60.0, 3155760000.0, 123456.789):
                cur.execute("SELECT CAST(CAST(%s AS DOUBLE) AS CHAR)", (seconds,))
                assert cur.fetchone()[0] == calltext.number_text(seconds), seconds  # type: ignore[index]
            cur.execute(f"SELECT {sqltext.literal_sql('NULL')}")
            assert cur.fetchone()[0] == calltext.sql_literal(None) == "NULL"  # type: ignore[index]
    finally:
        conn.close()


# ---------------------------------------------------------------------- the mariadb client


def _mariadb_client(
    server: Server, key: str, tmp_path: Path, *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    client = shutil.which("mariadb") or shutil.which("mysql")
    if client is None:
        pytest.skip("no mariadb command-line client on PATH")
    options = tmp_path / f"{key}.cnf"
    options.touch(mode=0o600)
    options.write_text(
        "[client]\n"
        f"user={server.names[key]}\npassword={server.accounts[key]}\n"
        "host=127.0.0.1\nport=3306\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "MYSQL_PWD"}
    return subprocess.run(
        [client, f"--defaults-extra-file={options}", "--batch", *args, server.database],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
        check=False,
    )


@pytest.mark.mariadb
def test_the_mariadb_client_reads_user_jobs(
    server: Server, stores: dict[str, JobStore], tmp_path: Path
) -> None:
    alice, bob = stores["alice"], stores["bob"]
    alice.submit(
        "a-job", What("sql", "DO 1"), make_schedule("expr", expr="NOW() + INTERVAL 1 HOUR")
    )
    bob.submit("b-job", What("sql", "DO 1"), make_schedule("every", every=60))
    query = "SELECT job, name, broken, `interval`, what FROM user_jobs ORDER BY job"
    done = _mariadb_client(server, "alice", tmp_path, "-e", query)
    assert done.returncode == 0, done.stderr
    header, *lines = done.stdout.splitlines()
    assert header.split("\t") == ["job", "name", "broken", "interval", "what"]
    job = alice.get("a-job")
    assert lines == [f"{job.id}\ta-job\tN\tNOW() + INTERVAL 1 HOUR\tDO 1"]
    assert server.accounts["alice"] not in done.stdout + done.stderr
    done = _mariadb_client(server, "alice", tmp_path, "-e", "SELECT * FROM dba_jobs")
    assert done.returncode != 0 and "SELECT command denied" in done.stderr


# ---------------------------------------------------------------------- export --format sql


def test_export_format_sql_on_sqlite(sqlite_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """On SQLite the CALLs are printed too (for a MySQL/MariaDB jobtui database);
    an action and a row with a problem are one comment line each, never SQL."""
    actions.register("views.noop", lambda ctx: None)
    try:
        store = open_store(sqlite_url)
        try:
            store.init()
            store.submit(
                "b-sql",
                What("sql", f"SELECT '{NASTY.replace(chr(39), chr(39) * 2)}'"),
                make_schedule("every", every=0.1, start=START, finish=FINISH),
            )
            store.submit(
                "a-cron",
                What("sql", "SELECT 1"),
                make_schedule("cron", cron="*/5 * * * * 30", tz="Asia/Tokyo"),
            )
            store.submit("c-act", What("action", "views.noop", ("x",)), make_schedule("once"))
            store.submit("d-bad", What("sql", "SELECT 2"), make_schedule("every", every=60))
            with store.write() as conn:  # a row written by hand: a name that breaks lines
                conn.execute(
                    text("UPDATE jobtui_job SET name = :n WHERE name = 'd-bad'"),
                    {"n": "d\nDROP TABLE jobtui_job; -- "},
                )
            jobs = store.list_jobs()
        finally:
            store.close()
    finally:
        actions.unregister("views.noop")
    code = main(["--db", sqlite_url, "export", "--format", "sql"])
    out, err = capsys.readouterr()
    assert code == 0
    lines = out.splitlines()
    assert all(line.startswith(("-- ", "CALL submit_job(@job, ")) for line in lines), lines
    body = lines[4:]
    by_name = {j.name: j for j in jobs}
    assert body[0] == calltext.recreate_call(by_name["a-cron"]) + ";"
    assert (
        body[0]
        == "CALL submit_job(@job, 'a-cron', 'SELECT 1', 'cron */5 * * * * 30 Asia/Tokyo', NULL, NULL);"
    )
    assert body[1] == calltext.recreate_call(by_name["b-sql"]) + ";"
    assert "'every 0.1', '2027-01-02 03:04:05.600000', '2030-06-01 00:00:00.000000');" in body[1]
    assert body[2].startswith("-- job 'c-act' left out: it runs the action views.noop")
    assert body[3].startswith(
        "-- job '#4' left out: its row has a problem: name = 'd\\nDROP TABLE jobtui_job; -- ': "
    )
    assert len(body) == 4
    assert "2 job(s) left out of the SQL export" in err
    # the default export is unchanged; a bad --format says what is accepted, exit 2
    assert main(["--db", sqlite_url, "export"]) == 0
    assert [j["name"] for j in json.loads(capsys.readouterr().out)][:2] == ["a-cron", "b-sql"]
    code = main(["--db", sqlite_url, "export", "--format", "xml"])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "invalid choice: 'xml'" in err and "'json', 'yaml', 'sql'" in err


@pytest.mark.mariadb
def test_export_as_sql_remove_and_run_the_calls_recreates_the_jobs(
    server: Server, stores: dict[str, JobStore], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The round trip: export --format sql, remove the jobs, run the file in the `mariadb`
    client as their owner: the same definitions (what, schedule, zone, window)."""
    alice = stores["alice"]
    before = _alice_jobs(server, alice)
    # the export's statements call submit_job, which alice may execute
    assert _rows(
        server,
        "alice",
        "SELECT 1 FROM information_schema.ROUTINES "
        "WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = 'submit_job'",
    )
    url = server.url_for("alice")
    dump = tmp_path / "jobs.sql"
    dump.write_text("\n".join(_export_sql(capsys, url)) + "\n")
    for name in before:
        assert main(["--db", url, "remove", name]) == 0
    capsys.readouterr()
    assert alice.list_jobs() == []
    done = _mariadb_client(server, "alice", tmp_path, stdin=dump.read_text())
    assert done.returncode == 0, done.stderr
    after = {j.name: j for j in alice.list_jobs()}
    assert sorted(after) == sorted(before)
    for name, job in before.items():
        assert after[name].what == job.what
        # an expr or once job's next date is carried as its start (issue 26)
        assert after[name].schedule == exported_schedule(job)
        if exported_schedule(job) != job.schedule:  # carried: due at the same date
            assert after[name].next_run == job.next_run
        assert calltext.recreate_call(after[name]) == calltext.recreate_call(job)


@pytest.mark.mariadb
def test_the_exported_calls_pass_each_jobs_values_through_the_mariadb_client(
    server: Server, stores: dict[str, JobStore], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The literals read back as the job's values in the real client: the export file, with
    its CALLs sent to a procedure of alice's that shows what it was given (in hex)."""
    alice = stores["alice"]
    mine = _alice_jobs(server, alice)
    conn = server.raw("alice")
    try:
        with conn.cursor() as cur:
            cur.execute(
                "CREATE PROCEDURE shown(OUT job BIGINT, IN name TEXT, IN what LONGTEXT, "
                "IN schedule TEXT, IN start DATETIME(6), IN finish DATETIME(6)) "
                "SELECT HEX(name), HEX(what), HEX(schedule), start, finish"
            )
    finally:
        conn.close()
    lines = _export_sql(capsys, server.url_for("alice"))
    script = "\n".join(lines).replace("CALL submit_job(", "CALL shown(") + "\n"
    done = _mariadb_client(server, "alice", tmp_path, "--skip-column-names", stdin=script)
    assert done.returncode == 0, done.stderr
    seen = [line.split("\t") for line in done.stdout.splitlines()]
    expected = [
        [
            part.encode().hex().upper()
            for part in (
                job.name,
                calltext.what_text(job.what),
                calltext.schedule_text(job.schedule),
            )
        ]
        + [
            "NULL" if t is None else t.strftime("%Y-%m-%d %H:%M:%S.%f")
            # an expr or once job's next date is carried as its start (issue 26)
            for t in (exported_schedule(job).start, job.schedule.finish)
        ]
        for job in (mine[d["name"]] for d in alice.export())
    ]
    assert seen == expected


def test_operators_are_granted_the_user_views_only() -> None:
    from jobtui.core.backends.mysql.grants import grant_statements

    operator = grant_statements("operator", "eve", "ops")
    role = "`jobtui_operator_ops`"
    for view in ("user_jobs", "all_jobs", "user_jobs_running"):
        assert f"GRANT SELECT ON `ops`.`{view}` TO {role}" in operator
    assert f"GRANT EXECUTE ON PROCEDURE `ops`.`user_export` TO {role}" in operator
    assert not [s for s in operator if "dba_jobs" in s]
    admin = grant_statements("admin", "eve", "ops")
    assert "GRANT EXECUTE ON PROCEDURE `ops`.`user_export` TO `jobtui_admin_ops`" in admin
    assert not [s for s in admin if "EXECUTE ON `ops`" in s]  # never on the schema


@pytest.mark.mariadb
def test_views_and_user_export_made_by_an_admin_role_still_show_each_caller_its_own(
    server: Server, stores: dict[str, JobStore], capsys: pytest.CaptureFixture[str]
) -> None:
    """`jobtui init` by an admin recreates them with DEFINER = its role; the grants stay."""
    alice, bob = stores["alice"], stores["bob"]
    alice.submit("a-job", What("sql", "DO 1"), make_schedule("every", every=60))
    bob.submit("b-job", What("sql", "DO 1"), make_schedule("every", every=60))
    root = admin_connection(server.database)
    try:
        with root.cursor() as cur:
            cur.execute("DELETE FROM jobtui_meta WHERE `key` = 'sql_api'")
        assert main(["--db", server.url_for("adm"), "init"]) == 0
        capsys.readouterr()
        with root.cursor() as cur:
            cur.execute(
                "SELECT TABLE_NAME, DEFINER FROM information_schema.VIEWS "
                "WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE '%%jobs%%'"
            )
            found = dict(cur.fetchall())
            cur.execute(
                "SELECT DEFINER FROM information_schema.ROUTINES "
                "WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME = 'user_export'"
            )
            proc_definer = cur.fetchone()[0]  # type: ignore[index]
    finally:
        root.close()
    role = f"jobtui_admin_{server.database}@"
    assert found == dict.fromkeys(
        ("user_jobs", "all_jobs", "dba_jobs", "user_jobs_running", "dba_jobs_running"), role
    )
    assert proc_definer == role.rstrip("@")  # (routines show a role without the @)
    assert [r["name"] for r in _rows(server, "alice", "SELECT name FROM user_jobs")] == ["a-job"]
    assert [r["name"] for r in _rows(server, "bob", "SELECT name FROM user_jobs")] == ["b-job"]
    job = alice.get("a-job")
    assert _user_export(server, "alice", job.id) == calltext.recreate_call(job)
    with pytest.raises(pymysql.err.MySQLError, match="not one of your jobs"):
        _user_export(server, "bob", job.id)
    assert len(_rows(server, "adm", "SELECT job FROM dba_jobs")) == 2
    # --all: every owner's jobs as CALLs (for the admin), refused to an operator
    lines = _export_sql(capsys, server.url_for("adm"), "--all")
    assert [line.split("'")[1] for line in lines if line.startswith("CALL ")] == ["a-job", "b-job"]
    code = main(["--db", server.url_for("alice"), "export", "--format", "sql", "--all"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and "needs an admin account" in err


@pytest.mark.mariadb
def test_rows_written_by_hand_break_no_view_and_no_call(
    server: Server, stores: dict[str, JobStore], capsys: pytest.CaptureFixture[str]
) -> None:
    """Every row is untrusted input: alice's hand-written values (through her view) neither
    break the admin's dba_jobs nor get out of user_export's literals."""
    alice = stores["alice"]
    mine = _alice_jobs(server, alice)
    hostile = {
        "call-job": {"what_args": "not json"},
        "sql-job": {"name": "x', 'y');\nDROP TABLE t; -- \\"},
        "expr-job": {"what_kind": "call", "what_target": "a.b", "what_args": '[1, null, {"a": 1}]'},
    }
    conn = server.raw("alice")
    try:
        with conn.cursor() as cur:
            for name, values in hostile.items():
                sets = ", ".join(f"`{column}` = %s" for column in values)
                cur.execute(
                    f"UPDATE jobtui_user_job SET {sets} WHERE id = %s",
                    (*values.values(), mine[name].id),
                )
    finally:
        conn.close()
    rows = {r["job"]: r for r in _rows(server, "adm", "SELECT * FROM dba_jobs")}
    assert rows[mine["call-job"].id]["what"] == f"CALL {server.database}.p()"
    assert rows[mine["expr-job"].id]["what"] == "CALL a.b('1', 'null', '{\"a\": 1}')"
    assert _rows(server, "alice", "SELECT job FROM user_jobs WHERE what IS NULL") == []
    # the CALL's literals hold exactly the row's values: nothing gets out of its quotes
    mycall = _user_export(server, "alice", mine["sql-job"].id)
    assert mycall.startswith("CALL submit_job(@job, ") and "\n" not in mycall
    values = _rows(server, "alice", "SELECT " + mycall.removeprefix("CALL submit_job(@job, ")[:-1])[
        0
    ]
    assert list(values.values())[:3] == [
        hostile["sql-job"]["name"],
        calltext.what_text(mine["sql-job"].what),
        calltext.schedule_text(mine["sql-job"].schedule),
    ]
    # the command line leaves the rows it refuses out, as one comment line each
    code = main(["--db", server.url_for("alice"), "export", "--format", "sql"])
    out, err = capsys.readouterr()
    assert code == 0 and "job(s) left out of the SQL export" in err
    assert all(line.startswith(("-- ", "CALL submit_job(@job, ")) for line in out.splitlines())
    assert "DROP TABLE t" not in "".join(
        line for line in out.splitlines() if not line.startswith("-- ")
    )
