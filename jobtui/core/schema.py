"""The tables, defined once with SQLAlchemy Core for SQLite and MySQL/MariaDB.

``jobtui.core.migrations`` creates them, adds columns a newer version defines and
applies the numbered migrations, so it is safe to run on every start (``jobtui
init`` runs it explicitly). On MySQL/MariaDB the backend then adds what lives only
there: the lock key (``backends.mysql.lock_key``), the owner index
(``backends.mysql.owner_index``) and the operators' views (``backends.mysql.operator_views``)
when the connecting account may. docs/architecture.md
describes every column, docs/privileges.md the views and roles.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
    func,
    inspect,
    literal,
    select,
    text,
)
from sqlalchemy.dialects import mysql, sqlite
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.schema import CreateColumn

# The version of the tables this code defines: the last of jobtui.core.migrations, stored
# in jobtui_meta under VERSION_KEY. A database of a newer version is refused.
SCHEMA_VERSION = 2
VERSION_KEY = "schema_version"


class _SQLiteTimestamp(sqlite.DATETIME):
    """SQLite's DATETIME, but a value that is no date-time (any text fits in a SQLite
    column) reads back as it is stored instead of failing the whole query: the store
    then reports that row's problem (jobtui.core.row_checks) and shows every other row."""

    def result_processor(self, dialect: Dialect, coltype: object) -> Any:
        parse = super().result_processor(dialect, coltype)
        if parse is None:
            return None

        def process(value: Any) -> Any:
            try:
                return parse(value)
            except (TypeError, ValueError):
                return value

        return process


# Microsecond precision on MySQL/MariaDB (plain DATETIME drops fractions).
Timestamp = (
    DateTime()
    .with_variant(mysql.DATETIME(fsp=6), "mysql", "mariadb")
    .with_variant(_SQLiteTimestamp(), "sqlite")
)
Double = Float(precision=53).with_variant(mysql.DOUBLE(asdecimal=False), "mysql", "mariadb")
Id = BigInteger().with_variant(Integer(), "sqlite")
LongText = Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")

metadata = MetaData()

# Binary collation on MySQL/MariaDB: names compare case-sensitively, as on SQLite
# ("Nightly" and "nightly" are two jobs on both backends), and text is full UTF-8
# whatever the server's default character set.
# InnoDB whatever the server's default engine: row locks and transactions are the design.
MYSQL_TABLE_OPTIONS: dict[str, Any] = {
    "mysql_engine": "InnoDB",
    "mysql_charset": "utf8mb4",
    "mysql_collate": "utf8mb4_bin",
}

job = Table(
    "jobtui_job",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    # definition: whose job, what it runs, when
    Column("owner", String(190), nullable=False),
    Column("name", String(64), nullable=False),
    Column("description", String(2000), nullable=False, default=""),
    Column("what_kind", String(10), nullable=False),  # call | sql | action
    Column("what_target", Text, nullable=False),  # schema.proc, the statement, or action name
    Column("what_args", Text, nullable=False, default="[]"),  # JSON list of text arguments
    # schedule
    Column("schedule_kind", String(10), nullable=False),  # every | cron | expr | once
    Column("schedule_interval", Double),  # seconds, for every
    Column("schedule_cron", String(200)),
    Column("schedule_tz", String(64)),
    Column("schedule_expr", String(1000)),  # DBMS_JOB's INTERVAL: a date expression
    Column("schedule_start", Timestamp),
    Column("schedule_finish", Timestamp),
    Column("schedule_anchor", Timestamp, nullable=False),  # grid origin of every-N jobs
    # state
    Column("status", String(10), nullable=False),  # derived: see transitions.derive_status
    Column("intent", String(10), nullable=False),  # operator: ENABLED | DISABLED | PAUSED
    Column(
        "phase", String(10), nullable=False
    ),  # lifecycle: ENABLED|SLEEPING|ERROR|RESUMED|ABORTED|FINISHED
    Column("running", Boolean, nullable=False, default=False),  # a runner is executing it
    Column("broken", Boolean, nullable=False, default=False),
    Column("broken_reason", Text),
    Column("failures", Integer, nullable=False, default=0),
    Column("max_failures", Integer, nullable=False, default=16),
    Column("cycles", BigInteger, nullable=False, default=0),
    Column("run_now", Boolean, nullable=False, default=False),
    Column("abort_requested", Boolean, nullable=False, default=False),
    # `remove` of a running job: the runner deletes the row when it records the run's end
    # (the name stays taken until then, so no new job runs inside the old run).
    Column("remove_requested", Boolean, nullable=False, default=False, server_default=text("0")),
    # DBMS_JOB's dates
    Column("last_run", Timestamp),  # LAST_DATE: start of the last successful run
    Column("this_run", Timestamp),  # THIS_DATE: start of the run in flight
    Column("next_run", Timestamp),  # NEXT_DATE
    Column("total_time", Double, nullable=False, default=0.0),
    Column("last_outcome", String(10)),
    Column("last_error", Text),
    Column("last_duration", Double),
    Column("last_cycle_start", Timestamp),
    Column("last_cycle_finish", Timestamp),
    # the runner executing it now
    Column("runner_id", String(190)),
    Column("runner_connection_id", BigInteger),
    Column("runner_node", String(255)),  # Galera: the claim's node, host:port/gcomm-uuid
    Column("runner_start", Timestamp),
    Column("runner_finish", Timestamp),
    Column("locked_by", String(190)),  # SQLite claim lease holder
    Column("locked_until", Timestamp),  # SQLite claim lease expiry
    # where to send alerts (JSON list of targets, jobtui.core.alerts); NULL: the
    # database's default (jobtui_setting alert_default); "[]": none
    Column("alert", Text),
    Column("created", Timestamp, nullable=False),
    Column("updated", Timestamp, nullable=False),
    UniqueConstraint("owner", "name", name="uq_jobtui_job_owner_name"),
    Index("ix_jobtui_job_next_run", "next_run"),
    Index("ix_jobtui_job_updated", "updated"),
    # SQLite would otherwise reuse the id of a removed job (the largest one) for the
    # next job, mixing the two jobs' run logs (job_id outlives the job).
    sqlite_autoincrement=True,
    **MYSQL_TABLE_OPTIONS,
)

# the run log's UNIQUE (job_id, scheduled_for): the slot guard, and how a run row is found
RUN_SLOT_INDEX = "uq_jobtui_run_job_slot"

run = Table(
    "jobtui_run",
    metadata,
    Column("id", Id, primary_key=True, autoincrement=True),
    Column("job_id", BigInteger, nullable=False),  # no foreign key: history outlives the job
    Column("job_name", String(64), nullable=False),
    Column("owner", String(190), nullable=False),
    Column("scheduled_for", Timestamp, nullable=False),
    Column("started", Timestamp),
    Column("finished", Timestamp),
    Column("duration", Double),
    Column("outcome", String(10), nullable=False),  # running|ok|failed|aborted|skipped|lost
    Column("error", LongText),
    Column("runner", String(190)),
    Column("skipped", Integer, nullable=False, default=0),  # slots coalesced into this row
    Column("manual", Boolean, nullable=False, default=False),  # run-now
    UniqueConstraint("job_id", "scheduled_for", name=RUN_SLOT_INDEX),
    Index("ix_jobtui_run_started", "started"),
    Index("ix_jobtui_run_outcome", "outcome"),
    # the alert dispatchers' look at the latest failed and lost runs (core/alerting.py)
    Index("ix_jobtui_run_outcome_finished", "outcome", "finished"),
    **MYSQL_TABLE_OPTIONS,
)

runner = Table(
    "jobtui_runner",
    metadata,
    Column("id", String(190), primary_key=True),
    Column("name", String(64), nullable=False),
    Column("host", String(255), nullable=False),
    Column("pid", Integer, nullable=False),
    Column("threads", Integer, nullable=False, default=0),
    Column("connection_id", BigInteger),
    Column("started", Timestamp, nullable=False),
    Column("heartbeat", Timestamp, nullable=False),
    Column("stopping", Boolean, nullable=False, default=False),
    **MYSQL_TABLE_OPTIONS,
)

meta = Table(
    "jobtui_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", String(255), nullable=False),
    **MYSQL_TABLE_OPTIONS,
)


# The migrations applied (jobtui.core.migrations), one row each. Not in ``metadata``:
# migration 2 makes it, so a database of version 1 has none.
history_metadata = MetaData()
migration_log = Table(
    "jobtui_migration",
    history_metadata,
    Column("version", Integer, primary_key=True, autoincrement=False),
    Column("title", String(200), nullable=False),
    Column("applied", Timestamp),  # NULL: applied before jobtui kept this history
    **MYSQL_TABLE_OPTIONS,
)


# Secrets only runners and admins may read (never the operators: docs/privileges.md),
# e.g. the key that makes the runners' named-lock names impossible to compute.
secret = Table(
    "jobtui_secret",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", String(255), nullable=False),
    **MYSQL_TABLE_OPTIONS,
)

LOCK_KEY = "lock_key"  # jobtui_secret: the key of the lock names' HMAC (lock_names.lock_name)

# Which accounts may use which Python actions (fnmatch patterns such as ``reports.*``):
# an admin's decision (`jobtui grant ACCOUNT --actions PATTERN`), read by the runners.
action_grant = Table(
    "jobtui_action_grant",
    metadata,
    Column("account", String(190), primary_key=True),
    Column("pattern", String(200), primary_key=True),
    **MYSQL_TABLE_OPTIONS,
)


# Settings of the whole database an admin writes (e.g. ``alert_default``), read by runners.
setting = Table(
    "jobtui_setting",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
    **MYSQL_TABLE_OPTIONS,
)

ALERT_DEFAULT = "alert_default"  # jobtui_setting: the targets of jobs whose alert is NULL

# The alert outbox: one row per event (its key is unique, so two runners that see the
# same failed run enqueue it once), claimed by one runner with a lease, then sent
# outside every job's path (jobtui.core.alerting).
alert_outbox = Table(
    "jobtui_alert",
    metadata,
    Column("event_key", String(190), primary_key=True),
    Column("kind", String(10), nullable=False),  # failed | broken | lost
    Column("job_id", BigInteger, nullable=False),
    Column("job_name", String(64), nullable=False),
    Column("owner", String(190), nullable=False),
    Column("run_id", BigInteger),
    Column("payload", LongText, nullable=False),  # the event as JSON
    Column("targets", Text, nullable=False),  # JSON list, resolved when enqueued
    Column("created", Timestamp, nullable=False),
    Column("claimed_by", String(190)),
    Column("claimed_until", Timestamp),
    Column("attempts", Integer, nullable=False, default=0),
    Column("sent", Timestamp),
    Column("result", Text),  # per target: ok, or what went wrong
    Index("ix_jobtui_alert_created", "created"),
    **MYSQL_TABLE_OPTIONS,
)


# The runner's bookkeeping of a job: what its runs did. Operators read these columns
# through their view and never write them (MySQL/MariaDB: their role has INSERT and UPDATE
# on the view's other columns only, docs/privileges.md): a forged ``last_duration`` made
# an owner's long jobs pass for short ones and take more threads than its share.
# ``failures`` is not one of them: resetting it is the owner's DBMS_JOB.BROKEN(FALSE).
BOOKKEEPING_COLUMNS = (
    "running",
    "cycles",
    "total_time",
    "last_run",
    "this_run",
    "last_outcome",
    "last_error",
    "last_duration",
    "last_cycle_start",
    "last_cycle_finish",
    "runner_id",
    "runner_connection_id",
    "runner_start",
    "runner_finish",
    "locked_by",
    "locked_until",
)


def new_row_values(values: dict[str, Any], *, through_view: bool) -> dict[str, Any]:
    """A new job row's values as inserted: through the operators' view without the
    bookkeeping (the server's defaults fill it in; the view takes no other)."""
    if not through_view:
        return values
    return {k: v for k, v in values.items() if k not in BOOKKEEPING_COLUMNS}


def select_meta(key: str) -> Any:
    return meta.select().with_only_columns(meta.c.value).where(meta.c.key == key)


def put_meta(conn: Connection, key: str, value: str) -> None:
    """Set ``key`` in jobtui_meta (replacing its value), in the caller's transaction."""
    conn.execute(meta.delete().where(meta.c.key == key))
    conn.execute(meta.insert().values(key=key, value=value))


def add_missing_columns(conn: Connection) -> None:
    insp = inspect(conn)
    for table in metadata.sorted_tables:
        have = {c["name"] for c in insp.get_columns(table.name)}
        for column in table.columns:
            if column.name in have:
                continue
            ddl = _column_ddl(column, conn.dialect)
            conn.execute(text(f"ALTER TABLE {table.name} ADD COLUMN {ddl}"))


def add_missing_indexes(conn: Connection) -> None:
    """Indexes a newer version defines on a table that already exists (create_all
    makes a table's indexes only with the table)."""
    insp = inspect(conn)
    for table in metadata.sorted_tables:
        have = {i["name"] for i in insp.get_indexes(table.name)}
        for index in table.indexes:
            if index.name not in have:
                index.create(conn)


def _column_ddl(column: Column[Any], dialect: Dialect) -> str:
    """ADD COLUMN text; a NOT NULL column gets a DEFAULT so existing rows can be filled.

    SQLite refuses ``ADD COLUMN ... NOT NULL`` without a default, and on MySQL
    the implicit default would be whatever the server picks.
    """
    if column.nullable or column.server_default is not None:
        return str(CreateColumn(column).compile(dialect=dialect))
    default = getattr(column.default, "arg", None)
    if default is None or callable(default):
        default = _ZERO.get(column.type._type_affinity, "")
    if isinstance(default, float) and default.is_integer():
        default = int(default)  # SQLite rejects the parenthesised (0.0) form in ADD COLUMN
    fill = literal(default, column.type).compile(
        dialect=dialect, compile_kwargs={"literal_binds": True}
    )
    copy = Column(column.name, column.type, nullable=False, server_default=text(str(fill)))
    return str(CreateColumn(copy).compile(dialect=dialect))


# Fill values for NOT NULL columns added to existing rows (by type affinity).
_ZERO: dict[Any, Any] = {
    Boolean: False,
    Integer: 0,
    Float: 0,
    DateTime: datetime(1970, 1, 1),
}


def sqlite_job_ids_never_reused(conn: Connection) -> None:
    """Rebuild a job table made before ``sqlite_autoincrement`` so that ids are never reused.

    Without AUTOINCREMENT SQLite gives a new row the largest id + 1, so removing
    the newest job and submitting another handed out its id again, and the run
    log (whose job_id outlives the job) mixed the two jobs' histories. SQLite
    cannot add AUTOINCREMENT to a table: the rows move to a new one, in the
    caller's transaction, and the id sequence starts above every id the run
    log knows.
    """
    found = conn.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (job.name,)
    ).scalar()
    if found is None or "AUTOINCREMENT" in found.upper():
        return
    old = f"{job.name}__before_autoincrement"
    conn.exec_driver_sql(f"ALTER TABLE {job.name} RENAME TO {old}")
    for index in job.indexes:  # the renamed table keeps its indexes, and their names
        conn.exec_driver_sql(f"DROP INDEX IF EXISTS {index.name}")
    job.create(conn)
    columns = ", ".join(c.name for c in job.columns)
    conn.exec_driver_sql(f"INSERT INTO {job.name} ({columns}) SELECT {columns} FROM {old}")
    conn.exec_driver_sql(f"DROP TABLE {old}")
    top = conn.execute(
        select(func.max(run.c.job_id)).union_all(select(func.max(job.c.id)))
    ).scalars()
    highest = max((n for n in top if n is not None), default=0)
    conn.exec_driver_sql("DELETE FROM sqlite_sequence WHERE name = ?", (job.name,))
    conn.exec_driver_sql(
        "INSERT INTO sqlite_sequence (name, seq) VALUES (?, ?)", (job.name, highest)
    )
