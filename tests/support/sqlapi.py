"""The SQL interface's tests read the database as root: job and run rows, what a refusal
must leave alone, and a runner pool serving the calls.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pymysql

from jobtui.core.runner.pool import RunnerPool
from support.accounts import Server, sql_call
from support.mariadb import admin_connection


def root_rows(server: Server, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    conn = admin_connection(server.database)
    try:
        return sql_call(conn, sql, args)
    finally:
        conn.close()


def database_state(server: Server) -> tuple[Any, ...]:
    """Every job row and every routine of the database: what a refusal must not change."""
    jobs = root_rows(server, "SELECT * FROM jobtui_job ORDER BY id")
    runs = root_rows(server, "SELECT * FROM jobtui_run ORDER BY id")
    made = root_rows(
        server,
        "SELECT ROUTINE_TYPE, ROUTINE_NAME, ROUTINE_DEFINITION FROM information_schema.ROUTINES "
        "WHERE ROUTINE_SCHEMA = %s ORDER BY 1, 2",
        (server.database,),
    )
    return tuple(jobs), tuple(runs), tuple(made)


@contextmanager
def serving_pool(server: Server, heartbeat_timeout: float = 30.0) -> Iterator[RunnerPool]:
    store = server.store("run")
    pool = RunnerPool(
        store, threads=2, poll=0.1, name="sqlprocs", heartbeat_timeout=heartbeat_timeout
    )
    pool.start()
    try:
        yield pool
    finally:
        pool.stop(grace=0)
        store.close()


def job_row(server: Server, job_id: int) -> dict[str, Any]:
    conn = admin_connection(server.database)
    try:
        with conn.cursor(pymysql.cursors.DictCursor) as cur:
            cur.execute("SELECT * FROM jobtui_job WHERE id = %s", (job_id,))
            return dict(cur.fetchone() or {})
    finally:
        conn.close()


def run_rows(server: Server, job_id: int) -> list[dict[str, Any]]:
    conn = admin_connection(server.database)
    try:
        with conn.cursor(pymysql.cursors.DictCursor) as cur:
            cur.execute("SELECT * FROM jobtui_run WHERE job_id = %s ORDER BY id", (job_id,))
            return [dict(r) for r in cur.fetchall()]
    finally:
        conn.close()
