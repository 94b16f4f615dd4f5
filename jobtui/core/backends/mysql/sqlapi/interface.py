"""MySQL/MariaDB's ``SQLInterface``: what the runners tend of the SQL interface, the cron
jobs submitted through SQL (``arming``) and the SQL sessions' ``CALL run`` (``runlog``)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.engine import Connection, Engine

from jobtui.core.backends.base import SQLInterface
from jobtui.core.backends.mysql.sqlapi import arming, runlog


class InstalledSQLInterface(SQLInterface):
    def unarmed(self, engine: Engine, now: datetime) -> list[int]:
        with engine.connect() as conn:
            ids = arming.unarmed(conn, now)
            conn.rollback()
        return ids

    def arm(self, conn: Connection, job_id: int, now: datetime) -> bool:
        return arming.arm(conn, job_id, now)

    def is_session(self, runner_id: str) -> bool:
        return runner_id.startswith(runlog.SQL_SESSION_PREFIX)
