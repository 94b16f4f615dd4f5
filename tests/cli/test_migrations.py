"""Numbered schema migrations (jobtui.core.migrations): a database of an older schema
version is upgraded by `jobtui init` / `jobtui upgrade` with its rows intact; a newer
one is refused by every command. On SQLite and MariaDB."""

from __future__ import annotations

import pytest
from sqlalchemy import inspect, select, text
from support.accounts import Server
from support.mariadb import admin_connection

from jobtui.cli import main
from jobtui.core import migrations, schema
from jobtui.core.backends.registry import backend_for, make_engine
from jobtui.core.errors import SchemaTooNew
from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store


@pytest.fixture(params=["sqlite", pytest.param("mariadb", marks=pytest.mark.mariadb)])
def url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(f"{request.param}_url"))


def make_version_1(url: str) -> None:
    """The database as jobtui made it before numbered migrations: the baseline only,
    version 1 in jobtui_meta, and no migration history."""
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            migrations.MIGRATIONS[0].apply(conn)
            schema.put_meta(conn, schema.VERSION_KEY, "1")
        backend_for(engine).after_schema()  # MariaDB: keys, views, the SQL interface
    finally:
        engine.dispose()


def stored(url: str) -> tuple[int | None, list[int], set[str]]:
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            version = migrations.read_version(conn)
            done = [v for v, _, _ in migrations.history(conn)]
            conn.rollback()
        return version, done, set(inspect(engine).get_table_names())
    finally:
        engine.dispose()


def test_the_migrations_are_numbered_one_by_one() -> None:
    assert [m.version for m in migrations.MIGRATIONS] == list(range(1, migrations.LATEST + 1))
    assert migrations.LATEST == schema.SCHEMA_VERSION


def test_a_new_database_passes_every_migration(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--db", url, "init"]) == 0
    assert "a new database: applied migration(s) 1, 2" in capsys.readouterr().out
    assert stored(url)[:2] == (2, [1, 2])
    assert main(["--db", url, "upgrade"]) == 0
    assert f"schema version {migrations.LATEST}, up to date" in capsys.readouterr().out


def test_upgrade_from_version_1_keeps_the_rows(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    make_version_1(url)
    old = open_store(url, init=False)
    try:
        old.submit("kept", What("sql", "SELECT 1"), make_schedule("every", every="60"))
        kept = old.get("kept")
    finally:
        old.close()
    assert stored(url)[:2] == (1, [])
    assert "jobtui_migration" not in stored(url)[2]

    assert main(["--db", url, "upgrade"]) == 0
    assert "from version 1: applied migration(s) 2" in capsys.readouterr().out
    version, done, tables = stored(url)
    assert (version, done) == (2, [1, 2]) and "jobtui_migration" in tables
    store = open_store(url)
    try:
        again = store.get("kept")
        assert (again.id, again.what, again.next_run) == (kept.id, kept.what, kept.next_run)
    finally:
        store.close()


def test_a_database_without_a_version_is_the_baseline(url: str) -> None:
    make_version_1(url)
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(schema.meta.delete().where(schema.meta.c.key == schema.VERSION_KEY))
    finally:
        engine.dispose()
    assert stored(url)[0] is None
    assert main(["--db", url, "init"]) == 0
    assert stored(url)[:2] == (2, [1, 2])


def test_a_newer_schema_is_refused(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--db", url, "init"]) == 0
    newer = migrations.LATEST + 1
    engine = make_engine(url)
    try:
        with engine.begin() as conn:
            schema.put_meta(conn, schema.VERSION_KEY, str(newer))
    finally:
        engine.dispose()
    capsys.readouterr()
    for argv in (["init"], ["upgrade"], ["list"], ["runners", "--check"], ["log"]):
        assert main(["--db", url, *argv]) == 2, argv
        err = capsys.readouterr().err
        assert f"schema is version {newer}" in err, argv
        assert f"(schema version {migrations.LATEST})" in err and "upgrade jobtui" in err
    with pytest.raises(SchemaTooNew):
        open_store(url, read_only=True, init=False)
    assert stored(url)[0] == newer  # nothing was written


def test_a_failing_migration_leaves_sqlite_as_it_was(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLite's DDL is transactional: the table the failing migration made is gone."""
    assert main(["--db", sqlite_url, "init"]) == 0

    def half_done(conn: object) -> None:
        conn.execute(text("CREATE TABLE jobtui_half (x INTEGER)"))  # type: ignore[attr-defined]
        raise RuntimeError("migration 3 failed")

    bad = migrations.Migration(3, "fails halfway", half_done)
    monkeypatch.setattr(migrations, "MIGRATIONS", (*migrations.MIGRATIONS, bad))
    monkeypatch.setattr(migrations, "LATEST", 3)
    engine = make_engine(sqlite_url)
    try:
        with pytest.raises(RuntimeError, match="migration 3 failed"):
            migrations.upgrade(engine)
        with engine.connect() as conn:
            assert migrations.read_version(conn) == 2
            assert conn.execute(select(schema.migration_log.c.version)).scalars().all() == [1, 2]
        assert "jobtui_half" not in inspect(engine).get_table_names()
    finally:
        engine.dispose()


@pytest.mark.mariadb
def test_a_runner_account_may_not_migrate(
    server: Server, capsys: pytest.CaptureFixture[str]
) -> None:
    """A runner of an older schema says an admin must upgrade; the admin can."""
    conn = admin_connection(server.database)
    try:
        with conn.cursor() as cur:
            cur.execute("DROP TABLE jobtui_migration")
            cur.execute("UPDATE jobtui_meta SET value = '1' WHERE `key` = 'schema_version'")
    finally:
        conn.close()
    capsys.readouterr()
    assert main(["--db", server.url_for("run"), "runners"]) == 2
    err = capsys.readouterr().err
    assert "schema is version 1 and this jobtui needs version 2" in err
    assert "an admin runs `jobtui upgrade`" in err
    assert main(["--db", server.url_for("adm"), "upgrade"]) == 0
    assert "from version 1: applied migration(s) 2" in capsys.readouterr().out
    assert stored(server.url)[:2] == (2, [1, 2])
    assert main(["--db", server.url_for("run"), "runners"]) == 0
