"""Numbered schema migrations: what ``jobtui init`` (alias ``jobtui upgrade``) applies.

Version 1 is the baseline: the tables of ``jobtui.core.schema`` as jobtui made
them before it numbered its migrations, by creating missing tables and adding
missing columns and indexes. Every database made then says version 1 (or,
older still, nothing) yet may lack a column added since, so the baseline runs
on every upgrade: it is idempotent. Each later migration runs once, in order,
in its own transaction with the version it brings.

On SQLite DDL is transactional: a migration that fails leaves the previous
version whole. On MySQL/MariaDB each DDL statement commits implicitly, so a
migration there is applied statement by statement; its DDL checks first
(``checkfirst``) so that running it again after a failure finishes the job,
and the version is written last. docs/operations.md, "Upgrades".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, insert, select
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.exc import DBAPIError

from jobtui.core import schema
from jobtui.core.backends.registry import backend_for
from jobtui.core.dberrors import NO_SUCH_TABLE, PERMISSION_ERRORS, error_code
from jobtui.core.errors import PermissionDenied, SchemaTooNew
from jobtui.core.timeutil import to_db, utcnow


@dataclass(frozen=True)
class Migration:
    version: int
    title: str
    apply: Callable[[Connection], None]


def _baseline(conn: Connection) -> None:
    schema.metadata.create_all(conn, checkfirst=True)
    schema.add_missing_columns(conn)
    schema.add_missing_indexes(conn)
    backend_for(conn.engine).finish_schema(conn)


def _history(conn: Connection) -> None:
    schema.history_metadata.create_all(conn, checkfirst=True)
    log = schema.migration_log
    conn.execute(delete(log).where(log.c.version == 1))
    conn.execute(insert(log).values(version=1, title=MIGRATIONS[0].title, applied=None))


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "baseline: the tables, columns and indexes", _baseline),
    Migration(2, "the migration history (jobtui_migration)", _history),
)
LATEST = MIGRATIONS[-1].version


@dataclass(frozen=True)
class Upgrade:
    """What an upgrade found and did (``found``: None for a new database)."""

    found: int | None
    version: int
    applied: tuple[int, ...]

    def describe(self) -> str:
        """``schema version 2, up to date`` or ``schema version 2, from version 1:
        applied migration(s) 2``."""
        if not self.applied:
            return f"schema version {self.version}, up to date"
        was = "a new database" if self.found is None else f"from version {self.found}"
        steps = ", ".join(str(v) for v in self.applied)
        return f"schema version {self.version}, {was}: applied migration(s) {steps}"


def read_version(conn: Connection) -> int | None:
    """The version stored in jobtui_meta; None when there is none (no tables yet, or a
    database made before jobtui stored one) or this account may not read it."""
    try:
        value = conn.execute(schema.select_meta(schema.VERSION_KEY)).scalar()
    except DBAPIError as exc:
        if error_code(exc) in (NO_SUCH_TABLE, *PERMISSION_ERRORS) or "no such table" in str(
            exc.orig
        ):
            return None
        raise
    return None if value is None else int(value)


def refuse_newer(found: int | None) -> None:
    """SchemaTooNew when the database is of a version this code does not know."""
    if found is not None and found > LATEST:
        raise SchemaTooNew(found, LATEST)


def check_version(engine: Engine) -> int | None:
    """Read the stored version and refuse a newer one (any account that reads jobtui_meta)."""
    with engine.connect() as conn:
        try:
            found = read_version(conn)
        finally:
            conn.rollback()
    refuse_newer(found)
    return found


def upgrade(engine: Engine) -> Upgrade:
    """Apply the baseline and every migration the database lacks; refuse a newer schema."""
    backend = backend_for(engine)
    found = check_version(engine)
    applied: list[int] = []
    for migration in MIGRATIONS:
        with engine.connect() as conn, backend.begin(conn):
            # read again inside the write transaction: two inits at once apply it once
            current = read_version(conn)
            refuse_newer(current)
            if migration.version > 1 and (current or 0) >= migration.version:
                continue
            try:
                migration.apply(conn)
            except DBAPIError as exc:
                if error_code(exc) in PERMISSION_ERRORS:
                    raise PermissionDenied(
                        f"the database's schema is version {current or 0} and this jobtui "
                        f"needs version {LATEST}; this account may not apply migration "
                        f"{migration.version} ({migration.title}): an admin runs "
                        "`jobtui upgrade`"
                    ) from exc
                raise
            if (current or 0) < migration.version:
                _record(conn, migration)
                applied.append(migration.version)
    backend.after_schema()
    return Upgrade(found=found, version=LATEST, applied=tuple(applied))


def _record(conn: Connection, migration: Migration) -> None:
    schema.put_meta(conn, schema.VERSION_KEY, str(migration.version))
    if migration.version >= 2:  # the history exists from migration 2 on
        log = schema.migration_log
        conn.execute(delete(log).where(log.c.version == migration.version))
        conn.execute(
            insert(log).values(
                version=migration.version, title=migration.title, applied=to_db(utcnow())
            )
        )


def history(conn: Connection) -> list[tuple[int, str, datetime | None]]:
    """(version, title, applied) of the migrations applied, oldest first ([] before 2)."""
    log = schema.migration_log
    try:
        rows = conn.execute(select(log).order_by(log.c.version))
        return [(int(r.version), str(r.title), r.applied) for r in rows]
    except DBAPIError as exc:
        if error_code(exc) in (NO_SUCH_TABLE, *PERMISSION_ERRORS) or "no such table" in str(
            exc.orig
        ):
            return []
        raise
