"""Regenerate the console screenshots (SVG) by driving the real app headless.

    python screenshots/generate.py [--out screenshots] [--seconds 12] [--mysql URL]

Creates a fresh demo database in a temporary directory, opens the console
hosting runners on it (App.run_test), lets the jobs cycle for a few seconds,
and saves one SVG per screen with App.save_screenshot (the main screen also
at 80x24, main-80x24.svg). The events view
(events.svg) needs MySQL/MariaDB (SQLite has no events): a database
``jobtui_shots_events`` is made on the ``--mysql`` server (default
``$JOBTUI_SHOTS_MYSQL`` or root on 127.0.0.1:3306) with a few events, shot
filtered to that schema, and dropped; without a server that shot is skipped.
Nothing is drawn by hand; run it again after a visual change and commit the SVGs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from jobtui.console.app import JobtuiApp, make_app
from jobtui.console.demo import create_demo
from jobtui.core.store import open_store

SIZE = (120, 34)
SMALL = (80, 24)
MYSQL = os.environ.get("JOBTUI_SHOTS_MYSQL", "mysql+pymysql://root@127.0.0.1:3306")
EVENTS_DB = "jobtui_shots_events"
EVENTS = (
    "CREATE TABLE sessions (id INT PRIMARY KEY, expires DATETIME)",
    "CREATE TABLE orders (id INT PRIMARY KEY, day DATE, total DECIMAL(10,2))",
    "CREATE PROCEDURE rollup_orders() SELECT day, SUM(total) FROM orders GROUP BY day",
    "CREATE EVENT purge_sessions ON SCHEDULE EVERY 5 MINUTE STARTS '2026-01-01 00:00:00' "
    "DO DELETE FROM sessions WHERE expires < NOW()",
    "CREATE EVENT nightly_rollup ON SCHEDULE EVERY 1 DAY STARTS '2026-01-01 02:00:00' "
    "ON COMPLETION PRESERVE DO CALL rollup_orders()",
    "CREATE EVENT hourly_report ON SCHEDULE EVERY 1 HOUR STARTS '2026-01-01 00:00:00' DO "
    "BEGIN IF GET_LOCK('hourly_report', 0) THEN CALL rollup_orders(); "
    "DO RELEASE_LOCK('hourly_report'); END IF; END",
    "CREATE EVENT monthly_archive ON SCHEDULE EVERY 1 MONTH STARTS '2026-01-01 03:00:00' "
    "DISABLE DO DELETE FROM orders WHERE day < CURDATE() - INTERVAL 1 YEAR",
    "CREATE EVENT year_end ON SCHEDULE AT '2026-12-31 23:00:00' ON COMPLETION PRESERVE "
    "DO CALL rollup_orders()",
)


async def settle(app: JobtuiApp, pilot: Any) -> None:
    for _ in range(2):
        await app.workers.wait_for_complete()
        await pilot.pause()


async def select(app: JobtuiApp, pilot: Any, name: str) -> None:
    table = app.main_screen.table
    job = next(j for j in table.jobs.values() if j.name == name)
    table.select_job(job.id)
    await pilot.pause()


async def shoot(out: Path, seconds: float) -> list[Path]:
    with tempfile.TemporaryDirectory(prefix="jobtui-shots-") as tmp:
        url = create_demo(str(Path(tmp) / "demo.db"))
        store = open_store(url)
        app = make_app(store, runners=3)
        saved: list[Path] = []

        def save(name: str) -> None:
            app.save_screenshot(filename=f"{name}.svg", path=str(out))
            saved.append(out / f"{name}.svg")

        async with app.run_test(size=SIZE) as pilot:
            deadline = time.monotonic() + seconds
            while time.monotonic() < deadline:
                await pilot.pause(0.25)
            await select(app, pilot, "long-etl")
            await settle(app, pilot)
            save("main")

            await select(app, pilot, "always-fails")
            await pilot.press("enter")
            await settle(app, pilot)
            save("details")
            await pilot.press("escape")

            await select(app, pilot, "rollup-5min")
            await pilot.press("e")
            await settle(app, pilot)
            await pilot.pause(0.5)
            await settle(app, pilot)
            save("edit")
            await pilot.press("escape")

            await pilot.press("L")  # the run log of all jobs (l: the selected job's)
            await settle(app, pilot)
            await pilot.pause(0.5)
            save("runlog")
            await pilot.press("escape")

            await pilot.press("question_mark")
            await pilot.pause()
            save("help")
            await pilot.press("escape")

            await select(app, pilot, "long-etl")
            await pilot.press("a")
            await pilot.pause()
            save("abort-confirm")
            await pilot.press("y")
            await settle(app, pilot)

            # A common SSH window: the Job column and the most useful ones, ? and q shown.
            await pilot.resize_terminal(*SMALL)
            await select(app, pilot, "flaky")
            await settle(app, pilot)
            await pilot.pause(0.5)
            save("main-80x24")
            await pilot.resize_terminal(*SIZE)

            app.stop_runners(grace=0.0, abort=True)
            await settle(app, pilot)
        store.close()
        return saved


def _admin(server: str) -> Any:
    """A raw connection as ``server``'s account (autocommit), or None when unreachable."""
    import pymysql

    from jobtui.core.db import parse_url

    url = parse_url(server + "/mysql")
    try:
        return pymysql.connect(
            host=url.host or "127.0.0.1",
            port=url.port or 3306,
            user=url.username or "root",
            password=url.password or "",
            autocommit=True,
            connect_timeout=3,
        )
    except pymysql.Error as exc:
        print(f"events.svg skipped: no MySQL/MariaDB at {url.host}:{url.port} ({exc})")
        return None


async def shoot_events(out: Path, server: str) -> list[Path]:
    """events.svg: the events view on a MariaDB database made for it (dropped afterwards)."""
    conn = _admin(server)
    if conn is None:
        return []
    try:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{EVENTS_DB}`")
            cur.execute(f"CREATE DATABASE `{EVENTS_DB}`")
            cur.execute(f"USE `{EVENTS_DB}`")
            for statement in EVENTS:
                cur.execute(statement)
        store = open_store(f"{server}/{EVENTS_DB}")
        app = make_app(store)
        try:
            async with app.run_test(size=SIZE) as pilot:
                await settle(app, pilot)
                await pilot.press("v")
                await settle(app, pilot)
                # the server may hold other schemas' events: show this one's
                await pilot.press("slash", *EVENTS_DB, "enter")
                await settle(app, pilot)
                table = app.screen.query_one("#event-table")
                table.move_cursor(row=table.get_row_index(f"{EVENTS_DB}.purge_sessions"))
                await pilot.pause(0.5)
                await settle(app, pilot)
                app.save_screenshot(filename="events.svg", path=str(out))
        finally:
            store.close()
    finally:
        with conn.cursor() as cur:
            cur.execute(f"DROP DATABASE IF EXISTS `{EVENTS_DB}`")
        conn.close()
    return [out / "events.svg"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent))
    parser.add_argument("--seconds", type=float, default=12.0, help="let the demo run first")
    parser.add_argument("--mysql", default=MYSQL, help="server for events.svg (URL, no database)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for path in asyncio.run(shoot(out, args.seconds)):
        print(path)
    for path in asyncio.run(shoot_events(out, args.mysql)):
        print(path)


if __name__ == "__main__":
    main()
