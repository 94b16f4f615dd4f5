"""A demo database: a dozen varied jobs to watch, steer and break in the console.

``jobtui demo`` calls :func:`create_demo` and opens the console hosting
runners on it. The jobs use the ``demo.*`` actions (known only in a database
marked as a demo, as this one is: ``JobStore.mark_demo``) and SQL against
three small demo tables, so nothing outside the file is touched.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from jobtui.core.db import default_db_path
from jobtui.core.jobdefs import JobSpec
from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store

DEMO_TABLES = (
    "CREATE TABLE IF NOT EXISTS demo_orders (id INTEGER PRIMARY KEY, item TEXT NOT NULL, "
    "qty INTEGER NOT NULL, placed TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS demo_events (id INTEGER PRIMARY KEY, kind TEXT NOT NULL, "
    "at TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS demo_stats (day TEXT PRIMARY KEY, orders INTEGER NOT NULL)",
)
DEMO_ROWS = (
    "INSERT INTO demo_orders (item, qty, placed) VALUES "
    "('tea', 2, '2026-01-05'), ('coffee', 1, '2026-01-05'), ('scones', 6, '2026-01-06'), "
    "('jam', 3, '2026-01-07'), ('tea', 1, '2026-01-08')",
)

# name, what, schedule kind, schedule value, description, max failures
DEMO_JOBS: tuple[tuple[str, What, str, float | str | None, str, int], ...] = (
    ("heartbeat", What("sql", "SELECT 1"), "every", 5, "fast: a trivial query", 16),
    ("tick", What("action", "demo.noop"), "every", 2, "fast: does nothing", 16),
    (
        "count-events",
        What("sql", "INSERT INTO demo_events (kind, at) VALUES ('tick', NOW())"),
        "every",
        15,
        "appends a row to demo_events",
        16,
    ),
    (
        "slow-report",
        What("action", "demo.sleep", ("8",)),
        "every",
        30,
        "slow: takes about 8 s",
        16,
    ),
    (
        "long-etl",
        What("action", "demo.sleep", ("60",)),
        "every",
        90,
        "long: a minute of work, watch it RUN and abort it (a)",
        16,
    ),
    (
        "always-fails",
        What("action", "demo.fail", ("upstream API returned 503",)),
        "every",
        10,
        "fails every time: BROKEN after 3 failures (b clears it)",
        3,
    ),
    ("flaky", What("action", "demo.flaky"), "every", 7, "fails about one run in three", 16),
    (
        "restock-tea",
        What("sql", "UPDATE demo_orders SET qty = qty + 1 WHERE item = 'tea'"),
        "every",
        20,
        "updates demo_orders rows in place",
        16,
    ),
    (
        "rollup-5min",
        What(
            "sql",
            "INSERT OR REPLACE INTO demo_stats (day, orders) "
            "SELECT placed, COUNT(*) FROM demo_orders GROUP BY placed",
        ),
        "cron",
        "*/5 * * * *",
        "cron: rolls orders up by day every 5 minutes",
        16,
    ),
    (
        "nightly-vacuum",
        What("sql", "DELETE FROM demo_events WHERE at < datetime(NOW(), '-1 day')"),
        "cron",
        "0 2 * * *",
        "cron: trims old events at 02:00 UTC",
        16,
    ),
    (
        "daily-expr",
        What("action", "demo.noop"),
        "expr",
        "datetime(NOW(), '+1 day')",
        "expr: next run = NOW() + 1 day, evaluated by the database",
        16,
    ),
    (
        "cleanup-paused",
        What("sql", "DELETE FROM demo_events WHERE kind = 'tick'"),
        "every",
        60,
        "paused: resume it with p",
        16,
    ),
    ("bootstrap-once", What("action", "demo.noop"), "once", None, "runs once", 16),
)


def default_demo_path() -> Path:
    """``demo.db`` next to the default database, in the user's data directory."""
    return default_db_path().parent / "demo.db"


def create_demo(path: str | None = None) -> str:
    """Create (or reset) the demo SQLite database at ``path`` and return its URL."""
    db = Path(path).expanduser().absolute() if path else default_demo_path()
    db.parent.mkdir(parents=True, exist_ok=True)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    url = f"sqlite:///{db}"
    store = open_store(url)
    try:
        store.mark_demo()  # the demo.* actions exist in this database only
        with store.write() as conn:
            for statement in DEMO_TABLES + DEMO_ROWS:
                conn.execute(text(statement))
        for name, what, kind, value, description, max_failures in DEMO_JOBS:
            schedule = make_schedule(
                kind,
                every=value if kind == "every" else None,
                cron=value if kind == "cron" else None,  # type: ignore[arg-type]
                expr=value if kind == "expr" else None,  # type: ignore[arg-type]
            )
            store.submit(
                JobSpec(name, what, schedule, description=description, max_failures=max_failures)
            )
        store.pause("cleanup-paused")
    finally:
        store.close()
    return url
