"""Who may `jobtui run NAME` on MariaDB (issue 26, DBMS_JOB item 9): a runner account,
naming the job's owner with --owner; an admin or operator is refused before anything
runs. Real accounts from tests/support/accounts.py, the real verb in-process."""

from __future__ import annotations

from typing import Any

import pytest
from support.accounts import Server
from support.mariadb import admin_connection

from jobtui.cli import main
from jobtui.core.model import What
from jobtui.core.schedules import make_schedule

pytestmark = pytest.mark.mariadb


def _rows(server: Server, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = admin_connection(server.database)
    try:
        with conn.cursor() as cur:
            cur.execute(sql, args)
            return list(cur.fetchall())
    finally:
        conn.close()


def test_a_runner_runs_an_owners_job_and_admins_and_operators_are_refused(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    db = server.database
    conn = admin_connection(db)
    try:
        with conn.cursor() as cur:
            cur.execute("CREATE TABLE seen (who VARCHAR(200))")
            cur.execute(f"GRANT INSERT ON `{db}`.seen TO '{server.names['alice']}'@'%'")
    finally:
        conn.close()
    alice = server.store("alice")
    try:
        alice.submit(
            "once",
            What("sql", f"INSERT INTO `{db}`.seen VALUES (CURRENT_USER())"),
            make_schedule("once"),
        )
        owner = alice.owner
    finally:
        alice.close()
    before = _rows(server, "SELECT * FROM jobtui_job ORDER BY id")

    # an admin: refused up front, exit 2, nothing run
    code = main(["--db", server.url_for("adm"), "run", "once", "--owner", owner])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert "`jobtui run` runs the job with this account's connection and needs a runner" in err
    assert "may not read mysql.proc" in err and "jobtui grant ACCOUNT --runner" in err
    # an operator: refused as before (it sees its own jobs only)
    code = main(["--db", server.url_for("alice"), "run", "once"])
    out, err = capsys.readouterr()
    assert code == 2 and "needs a runner or admin account" in err
    # a runner without --owner owns no such job: told so
    code = main(["--db", server.url_for("run"), "run", "once"])
    out, err = capsys.readouterr()
    assert code == 2 and "unknown job 'once'" in err
    assert _rows(server, "SELECT * FROM jobtui_job ORDER BY id") == before
    assert _rows(server, "SELECT * FROM seen") == []

    # the runner, naming the owner: the job runs once, as alice, and the schedule ends
    assert main(["--db", server.url_for("run"), "run", "once", "--owner", owner]) == 0
    capsys.readouterr()
    assert _rows(server, "SELECT * FROM seen") == [(owner,)]
    runs = _rows(server, "SELECT outcome, runner FROM jobtui_run")
    assert [r[0] for r in runs] == ["ok"] and ":run:once:" in runs[0][1]
