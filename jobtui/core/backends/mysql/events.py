"""The Event Scheduler's statements (MySQL/MariaDB): read information_schema.EVENTS and
the server's ``event_scheduler``, switch an event on or off keeping its definer.

Identifiers are backtick-quoted (backticks doubled); values are bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from jobtui.core.dberrors import PERMISSION_ERRORS, error_code, short_error
from jobtui.core.errors import InvalidInput, PermissionDenied

UNKNOWN_EVENT = 1539
NEEDS_SET_USER = 1227

# The four times as the server shows them (in the event's TIME_ZONE) and converted by
# the server itself to UTC (NULL when the zone is unknown to it: Python converts then).
_TIMES = ("EXECUTE_AT", "STARTS", "ENDS", "LAST_EXECUTED")
_COLUMNS = (
    "EVENT_SCHEMA AS `schema`, EVENT_NAME AS name, DEFINER AS definer, "
    "TIME_ZONE AS time_zone, EVENT_DEFINITION AS body, EVENT_TYPE AS event_type, "
    "INTERVAL_VALUE AS interval_value, INTERVAL_FIELD AS interval_field, "
    "STATUS AS status, ON_COMPLETION AS on_completion, "
    + ", ".join(
        f"{c} AS {c.lower()}, CONVERT_TZ({c}, TIME_ZONE, '+00:00') AS {c.lower()}_utc"
        for c in _TIMES
    )
)


def quote(identifier: str) -> str:
    """Backtick-quote any identifier, doubling its backticks; ``%`` doubled for the
    driver's format-style parameters."""
    return "`" + identifier.replace("`", "``").replace("%", "%%") + "`"


def read_events(conn: Connection, schema: str | None) -> list[dict[str, Any]]:
    """The events this account sees (EVENT privilege on their schema), by schema and name."""
    sql = f"SELECT {_COLUMNS} FROM information_schema.EVENTS"
    params: dict[str, Any] = {}
    if schema is not None:
        sql += " WHERE EVENT_SCHEMA = :schema"
        params["schema"] = schema
    sql += " ORDER BY EVENT_SCHEMA, EVENT_NAME"
    return [dict(row._mapping) for row in conn.execute(text(sql), params)]


def read_procedure_texts(
    conn: Connection, names: Sequence[tuple[str, str]]
) -> dict[tuple[str, str], str | None]:
    """ROUTINE_DEFINITION of each procedure (schema, name) that exists: NULL (None) where
    this account may not read it (neither its definer nor allowed to see its text)."""
    found: dict[tuple[str, str], str | None] = {}
    for start in range(0, len(names), 100):
        chunk = names[start : start + 100]
        params: dict[str, Any] = {}
        pairs = []
        for i, (schema, name) in enumerate(chunk):
            params[f"s{i}"], params[f"n{i}"] = schema, name
            pairs.append(f"(:s{i}, :n{i})")
        rows = conn.execute(
            text(
                "SELECT ROUTINE_SCHEMA, ROUTINE_NAME, ROUTINE_DEFINITION "
                "FROM information_schema.ROUTINES WHERE ROUTINE_TYPE = 'PROCEDURE' "
                f"AND (ROUTINE_SCHEMA, ROUTINE_NAME) IN ({', '.join(pairs)})"
            ),
            params,
        )
        for schema, name, body in rows:
            found[(str(schema), str(name))] = None if body is None else str(body)
    return found


def scheduler_state(conn: Connection) -> tuple[str, str]:
    """(``@@global.event_scheduler``: ON, OFF or DISABLED; ``@@system_time_zone``)."""
    row = conn.execute(text("SELECT @@global.event_scheduler, @@system_time_zone")).one()
    return str(row[0] or "").upper(), str(row[1] or "")


def set_enabled(conn: Connection, schema: str, name: str, definer: str, enabled: bool) -> None:
    """``ALTER DEFINER = <its definer> EVENT s.n ENABLE|DISABLE``.

    A plain ALTER EVENT by another account makes that account the event's definer
    (verified on MariaDB 10.11), so that the event would run with other rights: the
    definer is restated. Restating another account needs SET USER (or SUPER).
    """
    user, at, host = definer.rpartition("@")
    if not at:
        raise InvalidInput(
            f"event {schema}.{name} has the definer {definer!r} (a role, not user@host): "
            "jobtui cannot alter it keeping its definer; use ALTER DEFINER = ... EVENT yourself"
        )
    sql = (
        f"ALTER DEFINER = %s@%s EVENT {quote(schema)}.{quote(name)} "
        f"{'ENABLE' if enabled else 'DISABLE'}"
    )
    verb = "enable" if enabled else "disable"
    try:
        conn.exec_driver_sql(sql, (user, host))
    except DBAPIError as exc:
        code = error_code(exc)
        if code == UNKNOWN_EVENT:
            raise InvalidInput(
                f"no event {schema}.{name}: `jobtui events list` shows those this account sees"
            ) from None
        if code == NEEDS_SET_USER:
            raise PermissionDenied(
                f"may not {verb} event {schema}.{name}: its definer is {definer}, and altering "
                "another account's event keeps its definer only with the SET USER (or SUPER) "
                f"privilege ({short_error(exc)}); connect as {definer}, or ask an admin"
            ) from None
        if code in PERMISSION_ERRORS:
            raise PermissionDenied(
                f"may not {verb} event {schema}.{name}: ALTER EVENT needs the EVENT privilege "
                f"on schema {schema} ({short_error(exc)}); e.g. GRANT EVENT ON "
                f"`{schema}`.* TO <account>"
            ) from None
        raise
