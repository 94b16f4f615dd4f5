"""The prepared UPDATEs of the runners' hot path, built once and executed with parameters
(``update_job``, ``run_update_stmt``): building an UPDATE with literal values costs more
Python time than the round trip. SQLAlchemy Core on the schema's tables, one text for
every database; the claimer and SQLite's claim and record use them. (MySQL/MariaDB
batches write their rows in raw SQL: backends/mysql/batch.py.)
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, update
from sqlalchemy.engine import Connection

from jobtui.core import schema
from jobtui.core.model import Outcome

_statements: dict[Any, Any] = {}


def update_job(
    c: Connection, job_id: int, values: dict[str, Any], *, only_idle: bool = False
) -> Any:
    """``UPDATE jobtui_job SET <values> WHERE id = job_id [AND running = 0]``."""
    keys = tuple(sorted(values))
    key = ("job", keys, only_idle)
    stmt = _statements.get(key)
    if stmt is None:
        j = schema.job
        where = [j.c.id == bindparam("w_id", type_=j.c.id.type)]
        if only_idle:
            where.append(j.c.running.is_(False))
        stmt = (
            update(j)
            .where(*where)
            .values({k: bindparam(f"v_{k}", type_=j.c[k].type) for k in keys})
        )
        _statements[key] = stmt
    params = {f"v_{k}": v for k, v in values.items()}
    params["w_id"] = job_id
    return c.execute(stmt, params)


def run_update_stmt() -> Any:
    """``UPDATE jobtui_run SET outcome, started, finished, duration, error`` of one run
    (parameters ``w_job_id``, ``w_slot``, ``w_runner`` and ``v_<column>``)."""
    stmt = _statements.get("run")
    if stmt is None:
        r = schema.run
        stmt = (
            update(r)
            # A reaper may have called it lost while we were cut off: we know better.
            .where(
                r.c.job_id == bindparam("w_job_id", type_=r.c.job_id.type),
                r.c.scheduled_for == bindparam("w_slot", type_=r.c.scheduled_for.type),
                r.c.runner == bindparam("w_runner", type_=r.c.runner.type),
                r.c.outcome.in_([Outcome.RUNNING.value, Outcome.LOST.value]),
            )
            .values(
                outcome=bindparam("v_outcome", type_=r.c.outcome.type),
                started=bindparam("v_started", type_=r.c.started.type),
                finished=bindparam("v_finished", type_=r.c.finished.type),
                duration=bindparam("v_duration", type_=r.c.duration.type),
                error=bindparam("v_error", type_=r.c.error.type),
            )
        )
        _statements["run"] = stmt
    return stmt
