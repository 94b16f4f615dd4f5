"""Steering a job from SQL (issue 26): pause, resume, abort and run_now.

Real MariaDB accounts (``server`` from tests/support/accounts.py: alice and bob are
operators, adm an admin, run a runner, each made by `jobtui grant --apply`),
called through PyMySQL sessions as the `mariadb` client would. Each verb must
write what the command line's verb writes, refuse what it refuses, and show
in the views. docs/sql.md, "pause, resume, abort, run_now".
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pymysql
import pytest
from support.accounts import Server, sql_call, sql_refused, sql_submit
from support.mariadb import admin_connection
from support.procs import wait_for
from support.sqlapi import database_state as _state
from support.sqlapi import job_row as _job
from support.sqlapi import serving_pool as _runner

from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore

pytestmark = pytest.mark.mariadb

STEERED = ("intent", "phase", "status", "next_run", "run_now", "abort_requested", "broken")


def _steered(server: Server, job_id: int) -> dict[str, Any]:
    row = _job(server, job_id)
    return {k: row[k] for k in STEERED}


def _view(conn: Any, job_id: int) -> tuple[Any, ...]:
    rows = sql_call(
        conn,
        "SELECT status, intent, run_now, abort_requested, next_date FROM user_jobs WHERE job = %s",
        (job_id,),
    )
    assert len(rows) == 1
    return rows[0]


def _warnings(conn: Any, sql: str, args: tuple[Any, ...]) -> list[str]:
    with conn.cursor() as cur:
        cur.execute(sql, args)
        count = cur.warning_count
        shown = [str(r[2]) for r in conn.show_warnings()]

        assert len(shown) == count, (count, shown)
        return shown


def test_each_verb_writes_what_the_command_line_writes(server: Server) -> None:
    """Twin jobs: one steered by the store (the CLI's code), one by SQL; same rows."""
    db = server.database
    store = server.store("alice")
    conn = server.raw("alice")
    try:
        now = datetime.now(UTC)
        # an every-hour grid with now in the middle of a slot: rearm gives the same slot
        schedules = {
            "every": make_schedule("every", every=3600, start=now - timedelta(seconds=1800)),
            "once": make_schedule("once", start=now + timedelta(days=2)),
            "expr": make_schedule("expr", expr="NOW() + INTERVAL 1 DAY"),
        }
        steps = ("pause", "resume", "abort", "resume", "run_now", "abort", "resume")
        for kind, sched in schedules.items():
            cli = store.submit(f"cli-{kind}", What("sql", "DO 1"), sched)
            sql = store.submit(f"sql-{kind}", What("sql", "DO 1"), sched)
            for step in ("submit", *steps):
                if step != "submit":
                    getattr(store, step)(cli.name)
                    sql_call(conn, f"CALL `{db}`.`{step}`(%s)", (sql.id,))
                mine, theirs = _steered(server, cli.id), _steered(server, sql.id)
                # each twin's own "now" (its submit, its rearm): the same slot within seconds
                a, b = mine.pop("next_run"), theirs.pop("next_run")
                assert (a is None) == (b is None), (kind, step, a, b)
                assert a is None or abs(a - b) < timedelta(seconds=5), (kind, step, a, b)
                assert mine == theirs, (kind, step)
        # the store reads the rows SQL wrote without a problem
        for job in store.list_jobs():
            assert job.problem is None, job.name
    finally:
        conn.close()
        store.close()


def test_the_views_show_a_pause_a_run_now_request_and_an_abort_pending(server: Server) -> None:
    db = server.database
    conn = server.raw("alice")
    try:
        job = sql_submit(conn, db, "submit_job", "tick", "DO 1", "every 3600", None, None)
        assert _view(conn, job)[:4] == ("ENABLED", "ENABLED", "N", "N")
        sql_call(conn, f"CALL `{db}`.pause(%s)", (job,))
        assert _view(conn, job)[:4] == ("PAUSED", "PAUSED", "N", "N")
        # no runner alive: the request is kept and the caller is told
        warned = _warnings(conn, f"CALL `{db}`.run_now(%s)", (job,))
        assert any("no runner is alive" in w for w in warned), warned
        assert _view(conn, job)[:4] == ("PAUSED", "PAUSED", "Y", "N")
        sql_call(conn, f"CALL `{db}`.resume(%s)", (job,))
        assert _view(conn, job)[:4] == ("RESUMED", "ENABLED", "Y", "N")

        # an abort pending: a run in flight in another SQL session (no runner to kill it)
        slow = sql_submit(conn, db, "submit_named", "slow", "DO SLEEP(60)", "2030-01-01", None)
        other = server.raw("alice")
        cid = int(sql_call(other, "SELECT CONNECTION_ID()")[0][0])

        def run() -> None:
            try:
                sql_call(other, f"CALL `{db}`.run(%s)", (slow,))
            except pymysql.err.MySQLError:
                pass  # however the KILL QUERY below ends it

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        try:
            assert wait_for(lambda: _job(server, slow).get("running") == 1, 10)
            code, message = sql_refused(conn, f"CALL `{db}`.run_now(%s)", (slow,))
            assert code == 1644 and "is running now" in message
            sql_call(conn, f"CALL `{db}`.abort(%s)", (slow,))
            assert _view(conn, slow)[:4] == ("RUNNING", "ENABLED", "N", "Y")
            sql_call(conn, f"CALL `{db}`.pause(%s)", (slow,))
            assert _view(conn, slow)[:4] == ("RUNNING", "PAUSED", "N", "Y")
        finally:
            root = admin_connection()
            try:
                sql_call(root, f"KILL QUERY {cid}")
            finally:
                root.close()
            thread.join(15)
            other.close()
        assert not thread.is_alive()
        row = _job(server, slow)
        assert row["running"] == 0 and row["status"] == "PAUSED"
    finally:
        conn.close()


def test_refusals_name_the_problem_and_change_nothing(server: Server) -> None:
    db = server.database
    alice = server.store("alice")
    conn = server.raw("alice")
    try:
        live = alice.submit("live", What("sql", "DO 1"), make_schedule("every", every=60))
        # a run-once job whose window closed before its run: FINISHED at once
        done_id = sql_submit(conn, db, "submit_job", "done", "DO 1", "once", None, "2020-01-01")
        off = alice.submit(
            "off", What("sql", "DO 1"), make_schedule("every", every=60), disabled=True
        )
        cases = [
            ("pause", done_id, "job %d ('done') is FINISHED: there is nothing to pause"),
            ("pause", off.id, "job %d ('off') is DISABLED: enable it before pausing"),
            ("resume", off.id, "job %d ('off') is DISABLED: resume does not enable it"),
            ("pause", 987654321, "job 987654321 is not one of your jobs (no such job"),
            ("abort", None, "job NULL is not one of your jobs"),
        ]
        for verb, job_id, expected in cases:
            before = _state(server)
            code, message = sql_refused(conn, f"CALL `{db}`.`{verb}`(%s)", (job_id,))
            want = expected % job_id if "%d" in expected else expected
            assert code == 1644 and message.startswith(want), (verb, message)
            assert _state(server) == before

        # another owner's job: bob and the admin are refused every verb, as on the CLI
        for key in ("bob", "adm"):
            other = server.raw(key)
            try:
                for verb in ("pause", "resume", "abort", "run_now"):
                    before = _state(server)
                    code, message = sql_refused(other, f"CALL `{db}`.`{verb}`(%s)", (live.id,))
                    assert code == 1644 and "is not one of your jobs" in message, (key, verb)
                    assert _state(server) == before
            finally:
                other.close()
        # the runner account steers nothing: it may not read the operators' view
        runner = server.raw("run")
        try:
            before = _state(server)
            code, message = sql_refused(runner, f"CALL `{db}`.pause(%s)", (live.id,))
            assert code == 1142 and "denied" in message, message
            assert _state(server) == before
        finally:
            runner.close()
    finally:
        conn.close()
        alice.close()


def test_a_running_pool_obeys_them(server: Server) -> None:
    """run_now runs a paused job once; abort stops a run in flight; resume restarts."""
    db = server.database
    conn = server.raw("alice")
    store: JobStore = server.store("alice")
    try:
        job = sql_submit(
            conn, db, "submit_named", "later", "DO 1", "2030-01-01", "NOW() + INTERVAL 1 DAY"
        )
        slow = sql_submit(conn, db, "submit_job", "slow", "DO SLEEP(60)", "every 3600", None, None)
        sql_call(conn, f"CALL `{db}`.pause(%s)", (job,))
        with _runner(server):
            assert wait_for(lambda: _job(server, slow).get("running") == 1, 15)
            sql_call(conn, f"CALL `{db}`.abort(%s)", (slow,))
            assert wait_for(lambda: _job(server, slow).get("running") == 0, 10)
            row = _job(server, slow)
            assert row["status"] == "ABORTED" and row["last_outcome"] == "aborted"
            sql_call(conn, f"CALL `{db}`.run_now(%s)", (job,))  # paused: run-now runs it anyway
            assert wait_for(lambda: _job(server, job).get("cycles") == 1, 15)
            row = _job(server, job)
            assert row["run_now"] == 0 and row["intent"] == "PAUSED"
            runs = sql_call(
                conn, "SELECT outcome, manual FROM jobtui_user_run WHERE job_id = %s", (job,)
            )
            assert runs == [("ok", 1)]
            # a cron job resumed through SQL: its slot comes from a runner (croniter)
            cron = sql_submit(conn, db, "submit_job", "cron", "DO 1", "cron 0 3 * * *", None, None)
            assert wait_for(lambda: _job(server, cron)["next_run"], 10)
            sql_call(conn, f"CALL `{db}`.pause(%s)", (cron,))
            sql_call(conn, f"CALL `{db}`.resume(%s)", (cron,))
            row = _job(server, cron)
            assert row["next_run"] is None and row["status"] == "ENABLED"
            armed = wait_for(lambda: _job(server, cron)["next_run"], 10)
            assert (armed.hour, armed.minute, armed.second) == (3, 0, 0)
            sql_call(conn, f"CALL `{db}`.resume(%s)", (slow,))
            assert _job(server, slow)["status"] == "RESUMED"
            time.sleep(1.5)  # its next slot is an hour away: no run starts
            assert _job(server, slow)["running"] == 0
        assert store.get("slow").status.value == "RESUMED"
    finally:
        conn.close()
        store.close()


def test_grants_reach_the_four_verbs(server: Server) -> None:
    conn = server.raw("alice")
    try:
        rows = sql_call(
            conn,
            "SELECT ROUTINE_NAME, SECURITY_TYPE FROM information_schema.ROUTINES "
            "WHERE ROUTINE_SCHEMA = %s AND ROUTINE_NAME IN ('pause', 'resume', 'abort', 'run_now')",
            (server.database,),
        )
        assert sorted(rows) == [
            ("abort", "INVOKER"),
            ("pause", "INVOKER"),
            ("resume", "INVOKER"),
            ("run_now", "INVOKER"),
        ]
    finally:
        conn.close()
