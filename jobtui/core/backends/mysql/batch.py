"""The runner's hot path on MySQL/MariaDB: a batch's claim and recording in raw DB-API SQL
(the statements; ``MySQLBackend.claim_batch`` and ``record_batch`` put them together).

A batch of k jobs is claimed in five statements whatever k is (GET_LOCKs,
``SELECT <needed columns> ... FOR UPDATE``, one ``UPDATE ... CASE``, one
multi-row ``INSERT`` of run rows, ``COMMIT``) and recorded in five (``UPDATE
jobtui_run ... CASE``, ``SELECT ... FOR UPDATE``, ``UPDATE jobtui_job ...
CASE``, ``DO RELEASE_LOCK(...)``, ``COMMIT``). The statements go straight to
the PyMySQL cursor: compiling SQLAlchemy Core per batch and reading whole
48-column rows cost more Python time than the round trips themselves.

Only column names from ``schema`` appear in the text; every value is bound.
"""

from __future__ import annotations

import logging
from collections import namedtuple
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from jobtui.core import schema
from jobtui.core.backends.mysql.driver import write_datetime
from jobtui.core.dberrors import describe
from jobtui.core.model import Job, Outcome
from jobtui.core.rowmap import SCHEDULE_FIELDS, job_fields_getter, jobs_from_values

log = logging.getLogger("jobtui.runner")

JOB = schema.job.name
RUN = schema.run.name
# The rows a batch names are reached by their keys, never by a scan: asked for a large part
# of a small table, the optimizer scans it, and a locking scan locks every row it passes,
# so two threads' batches deadlock (seen in the tests on a busy machine, and in the
# benchmark). The hints keep each statement's locks to the rows it names.
BY_ID = "FORCE INDEX (PRIMARY)"
RUN_BY_SLOT = f"FORCE INDEX ({schema.RUN_SLOT_INDEX})"

# What a claim needs: the definition (to execute it, and to compute the next slot),
# the state the eligibility check reads, and what Job() requires, plus the counters
# and the last run's figures an action may read from ``ctx.job`` (recording reads
# them again under its own lock). The runner's own bookkeeping columns are not read.
CLAIM_COLUMNS = (
    "id",
    "owner",
    "name",
    "description",
    "failures",
    "max_failures",
    "cycles",
    "total_time",
    "last_run",
    "last_outcome",
    "last_error",
    "last_duration",
    "what_kind",
    "what_target",
    "what_args",
    *SCHEDULE_FIELDS,
    "status",
    "intent",
    "phase",
    "running",
    "broken",
    "run_now",
    "next_run",
    "created",
)
# Read with them (last), not to plan the run nor to make its Job: so that the claim writes
# them only when they change.
CLAIM_COLUMNS_READ = (*CLAIM_COLUMNS, "runner_id", "runner_connection_id", "abort_requested")

# What recording an outcome reads under the row lock: bookkeeping.finish_values' inputs (the
# state, and the schedule and its anchor for the next slot after an error) and whether
# the row is still ours. Not what it runs, nor its names: finish_values does not read them.
RECORD_COLUMNS = (
    "id",
    *SCHEDULE_FIELDS,
    "status",
    "intent",
    "phase",
    "running",
    "runner_id",
    "broken",
    "failures",
    "max_failures",
    "cycles",
    "next_run",
    "total_time",
    "created",
    "remove_requested",
)
# Read with them (last), not to compute the new values nor to make the Job: so that they
# are written only when they change.
RECORD_COLUMNS_READ = (
    *RECORD_COLUMNS,
    "last_outcome",
    "last_error",
    "broken_reason",
    "abort_requested",
    "run_now",
    "locked_by",
    "locked_until",
)

RUN_INSERT_COLUMNS = (
    "job_id",
    "job_name",
    "owner",
    "scheduled_for",
    "started",
    "outcome",
    "error",
    "runner",
    "skipped",
    "manual",
)

_JOB_COLUMNS = frozenset(c.name for c in schema.job.columns)


class _RowBase(tuple):
    """Absent job columns read as a full row's would (None; description "")."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name in _JOB_COLUMNS:
            return "" if name == "description" else None
        raise AttributeError(name)


_row_types: dict[tuple[str, ...], type] = {}


def row_type(columns: Sequence[str]) -> Any:
    """The row class for a list of the job table's columns: a named tuple (its fields are
    read at C speed, where a dict-backed view cost ~1 µs a column) whose absent job
    columns read as None, so code written for a full row reads a partial one."""
    key = tuple(columns)
    cls = _row_types.get(key)
    if cls is None:
        base = namedtuple("JobRow", key)  # type: ignore[misc]
        cls = type("JobRow", (base, _RowBase), {"__slots__": ()})
        _row_types[key] = cls
    return cls


def jobs(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[Job]:
    """``Job`` objects from rows of ``columns`` (absent columns as a full row reads them;
    a row may hold more values after those, which are left out); the definitions come
    from the store's shared cache."""
    n = len(columns)
    return jobs_from_values(
        map(job_fields_getter(tuple(columns), partial=True), (tuple(r)[:n] for r in rows))
    )


# PyMySQL's own literal for the types a batch binds most (ids, counters, flags, NULLs,
# naive UTC datetimes), built without its generic dispatch, which cost about 2 µs a
# value and was the largest part of building a batch's statements; every other value
# (text included) goes through the connection's ``escape`` as before.
_FAST_LITERALS: dict[type, Callable[[Any], str]] = {
    int: int.__repr__,
    bool: lambda value: "1" if value else "0",
    type(None): lambda _value: "NULL",
    datetime: write_datetime,
}


def literals(conn: Any, params: Sequence[Any]) -> tuple[str, ...]:
    """``params`` as the SQL literals PyMySQL's ``Cursor.mogrify`` would write (``conn``:
    the PyMySQL connection, whose ``escape`` knows the server's quoting mode)."""
    escape = conn.escape
    fast = _FAST_LITERALS
    return tuple([f(v) if (f := fast.get(type(v))) is not None else escape(v) for v in params])


def _execute(cur: Any, sql: str, params: Sequence[Any]) -> None:
    """``cur.execute(sql, params)``, the values escaped by ``literals``."""
    cur.execute(sql % literals(cur.connection, params))


def _marks(n: int) -> str:
    return ", ".join(["%s"] * n)


@contextmanager
def raw_transaction(conn: Connection, what: str) -> Iterator[Any]:
    """A DB-API cursor on ``conn`` for one transaction of raw statements: committed when
    the block ends, rolled back when it raises. (Through SQLAlchemy when a statement in
    the block went through it, e.g. an expression evaluated during a claim.)"""
    if conn.in_transaction():
        conn.rollback()
    raw: Any = conn.connection.dbapi_connection
    cur = raw.cursor()
    try:
        yield cur
        if conn.in_transaction():
            conn.commit()
        else:
            raw.commit()
    except BaseException:
        try:
            if conn.in_transaction():
                conn.rollback()
            else:
                raw.rollback()
        except Exception as exc:
            log.debug("rollback after a failed %s: %s", what, describe(exc))
        raise
    finally:
        cur.close()


# The named-lock statements (with the driver's %s marks), for a cursor here and for
# SQLAlchemy's exec_driver_sql in the backend.


def get_locks_sql(n: int) -> str:
    """``GET_LOCK(name, 0)`` of ``n`` names (try once, no wait), in one statement."""
    return "SELECT " + ", ".join(["GET_LOCK(%s, 0)"] * n)


def release_locks_sql(n: int) -> str:
    return "DO " + ", ".join(["RELEASE_LOCK(%s)"] * n)


LOCK_HOLDER_SQL = "SELECT IS_USED_LOCK(%s)"


def get_locks(cur: Any, names: Sequence[str]) -> list[bool]:
    """``GET_LOCK(name, 0)`` for each name, in one statement: which ones we now hold."""
    if not names:
        return []
    _execute(cur, get_locks_sql(len(names)), names)
    row = cur.fetchone()
    return [v == 1 for v in row]


def release_locks(cur: Any, names: Sequence[str]) -> None:
    if names:
        _execute(cur, release_locks_sql(len(names)), names)


def lock_rows(
    cur: Any,
    columns: Sequence[str],
    ids: Sequence[int],
    *,
    skip_locked: bool = False,
    bounded: bool = False,
) -> list[Any]:
    """``SELECT <columns> FROM jobtui_job WHERE id IN (...) ORDER BY id FOR UPDATE``: rows
    of ``row_type(columns)``. ``skip_locked``: rows another transaction holds are left out
    at once (``SKIP LOCKED``), never waited for; ``bounded``: waited for at most
    CLAIM_LOCK_WAIT (then error 1205)."""
    return read_rows(cur, columns, ids, lock=True, skip_locked=skip_locked, bounded=bounded)


def read_rows(
    cur: Any,
    columns: Sequence[str],
    ids: Sequence[int],
    *,
    lock: bool,
    skip_locked: bool = False,
    bounded: bool = False,
) -> list[Any]:
    """The job rows ``ids`` (those that exist), ``columns`` of each, by id; ``lock``: FOR UPDATE."""
    if not ids:
        return []
    cols = ", ".join(columns)
    tail = (" FOR UPDATE SKIP LOCKED" if skip_locked else " FOR UPDATE") if lock else ""
    head = f"SET STATEMENT innodb_lock_wait_timeout = {CLAIM_LOCK_WAIT} FOR " if bounded else ""
    _execute(
        cur,
        f"{head}SELECT {cols} FROM {JOB} {BY_ID} WHERE id IN ({_marks(len(ids))}) ORDER BY id{tail}",
        ids,
    )
    make = row_type(columns)._make
    return [make(row) for row in cur.fetchall()]


def update_jobs(cur: Any, values: dict[int, dict[str, Any]], *, only_idle: bool = False) -> int:
    """One ``UPDATE jobtui_job`` setting each row's own values; returns the rows matched.

    A column whose value is the same for every row is set plainly; the others
    by ``CASE id WHEN ... END`` (``ELSE`` the column itself, for rows that do
    not set it).
    """
    if not values:
        return 0
    ids = list(values)
    keys: dict[str, None] = {}
    for row in values.values():
        for k in row:
            if k not in _JOB_COLUMNS:
                raise ValueError(f"not a job column: {k}")
            keys.setdefault(k)
    sets: list[str] = []
    params: list[Any] = []
    for k in keys:
        first = values[ids[0]].get(k, _ABSENT)
        if first is not _ABSENT and all(values[i].get(k, _ABSENT) == first for i in ids[1:]):
            sets.append(f"{k} = %s")
            params.append(first)
            continue
        whens: list[str] = []
        for i in ids:
            if k in values[i]:
                whens.append("WHEN %s THEN %s")
                params.extend((i, values[i][k]))
        sets.append(f"{k} = CASE id {' '.join(whens)} ELSE {k} END")
    where = f"id IN ({_marks(len(ids))})" + (" AND running = 0" if only_idle else "")
    params.extend(ids)
    _execute(cur, f"UPDATE {JOB} {BY_ID} SET {', '.join(sets)} WHERE {where}", params)
    return int(cur.rowcount)


_ABSENT = object()


def changed(row: Any, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` without the columns that ``row`` (read under the row's lock) already
    holds: writing them again would change nothing, and each written column costs the
    server its work. A column the row was not read with is always written."""
    fields = row._fields
    return {k: v for k, v in values.items() if k not in fields or not _same(getattr(row, k), v)}


def _same(old: Any, new: Any) -> bool:
    """Whether the column holds ``new`` already (a flag reads back as 0/1; text compares
    as the tables' binary collation does)."""
    if old is None or new is None:
        return old is new
    if type(new) is bool:
        return type(old) in (int, bool) and old == int(new)
    if type(old) is not type(new):
        return False  # e.g. a zero date read back as text: write the value
    return bool(old == new)


# A claim waits at most this long (seconds; InnoDB's least) for a lock it cannot skip:
# the run-log rows it inserts fall in an index range that their owner may hold locked
# (``LOCK IN SHARE MODE`` on its run log). Error 1205 then: the claim is not made, and
# the job is reported busy (claiming.Claimer).
CLAIM_LOCK_WAIT = 1


def insert_runs(cur: Any, rows: Iterable[dict[str, Any]], *, bounded: bool = False) -> None:
    """One multi-row ``INSERT INTO jobtui_run`` (UNIQUE(job_id, scheduled_for) guards it);
    ``bounded``: waiting at most CLAIM_LOCK_WAIT for a lock."""
    params: list[Any] = []
    n = 0
    for row in rows:
        params.extend(row[k] for k in RUN_INSERT_COLUMNS)
        n += 1
    if not n:
        return
    one = f"({_marks(len(RUN_INSERT_COLUMNS))})"
    head = f"SET STATEMENT innodb_lock_wait_timeout = {CLAIM_LOCK_WAIT} FOR " if bounded else ""
    _execute(
        cur,
        f"{head}INSERT INTO {RUN} ({', '.join(RUN_INSERT_COLUMNS)}) VALUES {', '.join([one] * n)}",
        params,
    )


def record_runs(
    cur: Any,
    runner: str,
    outcomes: Sequence[tuple[int, Any, dict[str, Any], Any]],
    *,
    over_lost: bool = True,
) -> int:
    """Set outcome, started, finished, duration, error of each (job id, slot) run row of ``runner``.

    ``outcomes``: (job id, slot, values, anything) with distinct job ids. Rows a reaper
    marked ``lost`` while this runner was cut off are recorded too: it knows better
    (``over_lost=False``, a cluster's: a reaper marks a run lost only once it killed its
    statement or saw its node restart, and that verdict stands).
    """
    if not outcomes:
        return 0
    sets: list[str] = []
    params: list[Any] = []
    for col in ("outcome", "started", "finished", "duration", "error"):
        whens = " ".join(["WHEN %s THEN %s"] * len(outcomes))
        sets.append(f"{col} = CASE job_id {whens} ELSE {col} END")
        for jid, _slot, values, _item in outcomes:
            params.extend((jid, values[col]))
    match = " OR ".join(["(job_id = %s AND scheduled_for = %s)"] * len(outcomes))
    for jid, slot, _values, _item in outcomes:
        params.extend((jid, slot))
    params.extend((runner, Outcome.RUNNING.value, Outcome.LOST.value if over_lost else ""))
    # bounded: the owner may hold its run-log rows locked (its own locking read)
    _execute(
        cur,
        f"SET STATEMENT innodb_lock_wait_timeout = {CLAIM_LOCK_WAIT} FOR "
        f"UPDATE {RUN} {RUN_BY_SLOT} SET {', '.join(sets)} WHERE ({match}) AND runner = %s "
        "AND outcome IN (%s, %s)",
        params,
    )
    return int(cur.rowcount)


def existing(cur: Any, ids: Sequence[int]) -> list[Any]:
    """``id, owner, name, next_run`` of the job rows ``ids`` that exist, read without a lock
    (the last committed values; never waits)."""
    if not ids:
        return []
    _execute(
        cur,
        f"SELECT id, owner, name, next_run FROM {JOB} {BY_ID} WHERE id IN ({_marks(len(ids))})",
        ids,
    )
    return list(cur.fetchall())


def delete_jobs(cur: Any, ids: Sequence[int]) -> None:
    """``DELETE FROM jobtui_job WHERE id IN (...)``: jobs removed while their run was in
    flight, deleted as that run's end is recorded (their rows are locked)."""
    if ids:
        _execute(cur, f"DELETE FROM {JOB} WHERE id IN ({_marks(len(ids))})", ids)
