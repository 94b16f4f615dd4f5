"""Setting a job's alert from SQL (issue 27): ``set_alert(job, targets)``.

Real MariaDB operator accounts (``server`` from tests/support/accounts.py, made by
`jobtui grant --apply`) through PyMySQL sessions, as the `mariadb` client would
call it. The procedure must write what ``jobtui change NAME --alert`` writes
(``JobStore.set_alert``), refuse another owner's job, refuse a command no
admin allowed, and show the targets in user_jobs. docs/sql.md, "set_alert".
"""

from __future__ import annotations

from typing import Any

import pytest
from support.accounts import Server, sql_call, sql_refused, sql_submit
from support.sqlapi import job_row as _job

from jobtui.cli import main

pytestmark = pytest.mark.mariadb


def _alert(server: Server, job_id: int) -> Any:
    return _job(server, job_id)["alert"]


def test_set_and_clear_write_what_the_command_line_writes(server: Server) -> None:
    db = server.database
    url = server.url_for("alice")
    conn = server.raw("alice")
    try:
        cli = sql_submit(conn, db, "submit_job", "cli", "DO 1", "every 3600", None, None)
        sql = sql_submit(conn, db, "submit_job", "sql", "DO 1", "every 3600", None, None)
        cases = [
            ["json://127.0.0.1:9/x", "mailto://u@example.com"],
            ["json://127.0.0.1:9/x json://127.0.0.1:9/x", 'json://h/\u00e9"q'],  # dup, escapes
            ["none"],
            ["default"],
        ]
        for values in cases:
            argv = [a for v in values for a in ("--alert", v)]
            assert main(["--db", url, "change", "cli", *argv]) == 0
            sql_call(conn, f"CALL `{db}`.`set_alert`(%s, %s)", (sql, "\t".join(values)))
            assert _alert(server, sql) == _alert(server, cli), values
        # NULL: the database's default, as `--alert default`
        sql_call(conn, f"CALL `{db}`.`set_alert`(%s, %s)", (sql, "none"))
        assert _alert(server, sql) == "[]"
        sql_call(conn, f"CALL `{db}`.`set_alert`(%s, NULL)", (sql,))
        assert _alert(server, sql) is None
        # shown in user_jobs, the last column
        sql_call(conn, f"CALL `{db}`.`set_alert`(%s, %s)", (sql, "json://127.0.0.1:9/x"))
        with conn.cursor() as cur:
            cur.execute("SELECT * FROM user_jobs WHERE job = %s", (sql,))
            names = [d[0] for d in cur.description]
            row = cur.fetchone()
        assert names[-1] == "alert"
        assert row[-1] == '["json://127.0.0.1:9/x"]'
    finally:
        conn.close()


def test_bad_targets_are_refused_with_the_command_lines_words(server: Server) -> None:
    db = server.database
    conn = server.raw("alice")
    try:
        job = sql_submit(conn, db, "submit_job", "j", "DO 1", "every 3600", None, None)
        before = _alert(server, job)
        call = f"CALL `{db}`.`set_alert`(%s, %s)"
        code, msg = sql_refused(conn, call, (job, "nonsense"))
        assert code == 1644 and "invalid alert target 'nonsense'" in msg, msg
        assert "command:/absolute/path" in msg
        code, msg = sql_refused(conn, call, (job, "command:relative/x"))
        assert "invalid alert command 'relative/x': an absolute path" in msg, msg
        code, msg = sql_refused(conn, call, (job, "command:/a/../b"))
        assert "no .. or //" in msg
        many = " ".join(f"json://h/{i}" for i in range(17))
        code, msg = sql_refused(conn, call, (job, many))
        assert "too many alert targets (17): at most 16" in msg
        code, msg = sql_refused(conn, call, (job, "json://h/x none"))
        assert "invalid alert target 'none'" in msg
        # a password in a refused URL is not echoed
        code, msg = sql_refused(conn, call, (job, "mail to://u:secret@h"))
        assert "secret" not in msg
        assert _alert(server, job) == before
    finally:
        conn.close()


def test_another_owners_job_is_refused(server: Server) -> None:
    db = server.database
    alice, bob = server.raw("alice"), server.raw("bob")
    try:
        theirs = sql_submit(bob, db, "submit_job", "b1", "DO 1", "every 3600", None, None)
        code, msg = sql_refused(
            alice, f"CALL `{db}`.`set_alert`(%s, %s)", (theirs, "json://127.0.0.1:9/x")
        )
        assert code == 1644
        assert f"job {theirs} is not one of your jobs" in msg
        assert _alert(server, theirs) is None
    finally:
        alice.close()
        bob.close()


def test_a_command_needs_the_admins_pattern(server: Server, tmp_path: Any) -> None:
    db = server.database
    alice = server.raw("alice")
    bob = server.raw("bob")
    name = server.names["alice"]
    try:
        job = sql_submit(alice, db, "submit_job", "a1", "DO 1", "every 3600", None, None)
        call = f"CALL `{db}`.`set_alert`(%s, %s)"
        code, msg = sql_refused(alice, call, (job, "command:/usr/local/bin/page"))
        assert code == 1644
        assert f"the job's owner '{name}@%' may not use action 'alert:/usr/local/bin/page'" in msg
        assert f"jobtui grant '{name}'@'%' --actions PATTERN --apply" in msg
        assert _alert(server, job) is None
        # a pattern of bob's allows nothing to alice
        bobs = ["--db", server.url, "grant", server.names["bob"], "--actions"]
        assert main([*bobs, "alert:/usr/local/bin/*", "--apply"]) == 0
        sql_refused(alice, call, (job, "command:/usr/local/bin/page"))
        # hers, as fnmatch reads it
        assert main(["--db", server.url, "grant", name, "--actions", "alert:/usr/local/bin/p?ge",
                     "--apply"]) == 0  # fmt: skip
        sql_call(alice, call, (job, "command:/usr/local/bin/page json://127.0.0.1:9/x"))
        assert _alert(server, job) == '["command:/usr/local/bin/page", "json://127.0.0.1:9/x"]'
        sql_refused(alice, call, (job, "command:/usr/local/bin/pager"))
        sql_refused(alice, call, (job, "command:/usr/local/bin/pXge/../page"))
        # the helper answers for the caller's own job only
        rows = sql_call(bob, f"SELECT `{db}`.`jobtui_alert_allowed`(%s, %s)", (job, "/x"))
        assert rows == [(None,)]
        # the admin's allow-list, read by the CLI as root, agrees
        code = main(
            ["--db", server.url, "change", "a1", "--owner", f"{name}@%", "--alert",
             "command:/usr/local/bin/page", "--alert", "json://127.0.0.1:9/x"]
        )  # fmt: skip
        assert code == 0
        assert _alert(server, job) == '["command:/usr/local/bin/page", "json://127.0.0.1:9/x"]'
    finally:
        alice.close()
        bob.close()
