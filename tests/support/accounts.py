"""Real MariaDB accounts for the privilege and security tests.

``server`` makes alice and bob (operators), an admin and a runner account
(``jt_<key>_<random>``) on a fresh database, each granted its kind by the
real `jobtui grant --apply`, and drops them afterwards, with the database's
roles (``jobtui_<kind>_<db>``) and any grant on the database.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pymysql
import pytest

from jobtui.cli import main
from jobtui.core import accounts
from jobtui.core.store import JobStore, open_store
from support.mariadb import admin_connection


@dataclass
class Server:
    """The test database and its accounts (name -> password)."""

    url: str  # as root
    database: str
    names: dict[str, str] = field(default_factory=dict)  # alice -> jt_alice_<random>
    accounts: dict[str, str] = field(default_factory=dict)  # alice -> password

    def url_for(self, key: str) -> str:
        return self.url.replace("://root@", f"://{self.names[key]}:{self.accounts[key]}@")

    def store(self, key: str) -> JobStore:
        return open_store(self.url_for(key))

    def raw(self, key: str) -> pymysql.connections.Connection:
        """A plain client connection, as the `mariadb` command-line client would make."""
        return pymysql.connect(
            host="127.0.0.1",
            port=3306,
            user=self.names[key],
            password=self.accounts[key],
            database=self.database,
            autocommit=True,
        )


def grant_kind(server: Server, kind: str, name: str) -> None:
    """`jobtui grant NAME --KIND --apply`, as root (the real verb)."""
    assert main(["--db", server.url, "grant", name, f"--{kind}", "--apply"]) == 0


@pytest.fixture
def server(mariadb_url: str) -> Iterator[Server]:
    """alice and bob (operators), an admin and a runner account on a fresh database."""
    sfx = secrets.token_hex(3)
    database = mariadb_url.rsplit("/", 1)[1]
    srv = Server(mariadb_url, database)
    kinds = {"alice": "operator", "bob": "operator", "adm": "admin", "run": "runner"}
    names = srv.names = {k: f"jt_{k}_{sfx}" for k in kinds}
    conn = admin_connection()
    try:
        with conn.cursor() as cur:
            for key, name in names.items():
                pw = f"pw-{secrets.token_hex(4)}"
                cur.execute(f"CREATE USER '{name}'@'%%' IDENTIFIED BY %s", (pw,))
                srv.accounts[key] = pw
        assert main(["--db", mariadb_url, "init"]) == 0  # as root: tables and views
        for key, kind in kinds.items():
            grant_kind(srv, kind, names[key])
        yield srv
    finally:
        with conn.cursor() as cur:
            for name in names.values():
                cur.execute(f"DROP USER IF EXISTS '{name}'@'%'")
            _revoke_database_grants(cur, database)
            for kind in set(kinds.values()):  # the roles belong to this database only
                cur.execute(f"DROP ROLE IF EXISTS `{accounts.role_name(kind, database)}`")
        conn.close()


def _revoke_database_grants(cur: pymysql.cursors.Cursor, database: str) -> None:
    """Revoke what the roles were granted on this (soon dropped) database only."""
    cur.execute(
        "SELECT User, Table_name FROM mysql.tables_priv WHERE Db = %s AND Host = ''", (database,)
    )
    for role, table in cur.fetchall():
        cur.execute(f"REVOKE ALL PRIVILEGES ON `{database}`.`{table}` FROM `{role}`")
    cur.execute(
        "SELECT User, Db FROM mysql.db WHERE Db = %s AND Host = ''", (database.replace("_", "\\_"),)
    )
    for role, db in cur.fetchall():
        cur.execute(f"REVOKE ALL PRIVILEGES ON `{db}`.* FROM `{role}`")


def sql_call(conn: Any, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run one statement (a CALL may return several result sets) and its first rows."""
    with conn.cursor() as cur:
        cur.execute(sql, args)
        rows = list(cur.fetchall())
        while cur.nextset():
            pass
        return rows


def sql_submit(conn: Any, db: str, proc: str, *args: Any) -> int:
    """CALL one of the SQL interface's submit procedures; the new job's number."""
    marks = ", ".join(["%s"] * len(args))
    sql_call(conn, f"CALL `{db}`.`{proc}`(@jobtui_t_job, {marks})", args)
    return int(sql_call(conn, "SELECT @jobtui_t_job")[0][0])


def sql_refused(conn: Any, sql: str, args: tuple[Any, ...] = ()) -> tuple[int, str]:
    """The error code and message of a statement that must be refused."""
    with pytest.raises(pymysql.err.MySQLError) as info:
        sql_call(conn, sql, args)
    return int(info.value.args[0]), str(info.value.args[1])


def root_sql(server: Server, *statements: str) -> None:
    conn = admin_connection(server.database)
    try:
        with conn.cursor() as cur:
            for statement in statements:
                cur.execute(statement)
    finally:
        conn.close()


def grant_execute(server: Server, proc: str, *keys: str) -> None:
    root_sql(
        server,
        *(
            f"GRANT EXECUTE ON PROCEDURE `{server.database}`.`{proc}` TO '{server.names[k]}'@'%'"
            for k in keys
        ),
    )
