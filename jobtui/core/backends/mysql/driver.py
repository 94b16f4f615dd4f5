"""PyMySQL as jobtui sets it up: a faster datetime codec (the engine's ``conv``) and
the session reset a runner does after each batch (``reset_mysql_session``)."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

from pymysql import converters as pymysql_converters
from pymysql.constants import FIELD_TYPE


def _read_datetime(value: Any) -> Any:
    """PyMySQL's DATETIME/TIMESTAMP decoder with a C fast path for what the server sends.

    A runner reads about six datetimes a row at every claim and recording, and
    PyMySQL's regular-expression decoder was 7 % of its CPU. The server's text is
    ``YYYY-MM-DD hh:mm:ss`` with an optional ``.ffffff``; ``fromisoformat`` gives
    the same naive datetime for it. Anything else (zero dates, a shorter fraction)
    goes to PyMySQL's decoder as before.
    """
    if (
        type(value) is str
        and (len(value) == 19 or (len(value) == 26 and value[19] == "."))
        and value[4] == value[7] == "-"
        and value[10] == " "
        and value[13] == value[16] == ":"
    ):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            if parsed.tzinfo is None:
                return parsed
    return pymysql_converters.convert_datetime(value)


def write_datetime(value: datetime, mapping: Any = None) -> str:
    """PyMySQL's datetime literal, built by ``isoformat`` (C) instead of ``str.format``.

    The runner binds five or six datetimes a run; PyMySQL's encoder was the
    largest single item of its CPU. A naive value's ``isoformat(" ")`` is the
    same text PyMySQL writes (``YYYY-MM-DD hh:mm:ss`` and ``.ffffff`` when
    there are microseconds); an aware one goes to PyMySQL, which drops the offset.
    """
    if value.tzinfo is None:
        return "'" + value.isoformat(" ") + "'"
    return pymysql_converters.escape_datetime(value, mapping)


def mysql_conversions() -> dict[Any, Any]:
    conv = dict(pymysql_converters.conversions)
    conv[FIELD_TYPE.DATETIME] = _read_datetime
    conv[FIELD_TYPE.TIMESTAMP] = _read_datetime
    conv[datetime] = write_datetime
    return conv


# COM_RESET_CONNECTION: the server-side session back to a new connection's state.
COM_RESET_CONNECTION = 0x1F


def reset_mysql_session(raw: Any) -> None:
    """Give a PyMySQL connection the session a new connection of the engine would have.

    COM_RESET_CONNECTION rolls back, sets every session variable back to its
    global value (time_zone, sql_mode, character sets ...), drops user
    variables, temporary tables and prepared statements, releases named locks
    and sets autocommit to the server's default. Then what connecting set up
    is applied again, from the connection's own parameters (``MySQLBackend.create_engine``'s
    ``connect_args`` and ``charset``, as PyMySQL's connect applies them: SET
    NAMES, sql_mode, ``init_command`` (the UTC time zone), autocommit), in one
    SET statement when ``init_command`` is a SET. Two round trips in all.

    The runner calls it after each batch (docs/runners.md), so that nothing a
    run set reaches another owner's claim or run.
    """
    raw._execute_command(COM_RESET_CONNECTION, b"")
    raw._read_ok_packet()
    setting = [f"NAMES {raw.charset}" + (f" COLLATE {raw.collation}" if raw.collation else "")]
    if raw.sql_mode is not None:
        setting.append(f"sql_mode = {raw.escape(raw.sql_mode)}")
    init = raw.init_command
    if init is not None and _SET_STATEMENT.match(init):
        setting.append(_SET_STATEMENT.sub("", init, count=1))
        init = None
    if raw.autocommit_mode is not None:
        setting.append(f"autocommit = {int(bool(raw.autocommit_mode))}")
    cur = raw.cursor()
    try:
        cur.execute("SET " + ", ".join(setting))
        if init is not None:
            cur.execute(init)
    finally:
        cur.close()


_SET_STATEMENT = re.compile(r"\s*SET\s+", re.IGNORECASE)
