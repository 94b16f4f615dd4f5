"""What the SQL interface's procedures cost, side by side with the store's own calls.

One connection as the server's admin, on a database of its own (dropped
afterwards): N submits of a ``call`` job with an interval through ``CALL
submit`` (validation, the owner's DEFINER routines created in the session)
against N ``JobStore.submit`` (the command line's path), N ``CALL broken``
against N ``JobStore.broken``, and N ``CALL run`` of a job that calls an
empty procedure (lock, run log, execution, bookkeeping) against N ``CALL`` of
the job's own routine (what a runner's execution alone costs).
docs/sql.md quotes the figures.

    python bench/sql_procs.py [--n 100] [--server mysql+pymysql://root@127.0.0.1:3306]
"""

from __future__ import annotations

import argparse
import secrets
import time
from collections.abc import Callable

from sqlalchemy import create_engine, text

from jobtui.core.backends.mysql import routines
from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store


def _timed(n: int, fn: Callable[[int], object]) -> float:
    t = time.perf_counter()
    for i in range(n):
        fn(i)
    return (time.perf_counter() - t) / n * 1000


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=100, help="repetitions of each")
    p.add_argument("--server", default="mysql+pymysql://root@127.0.0.1:3306")
    args = p.parse_args()
    db = f"jobtui_bench_sql_{secrets.token_hex(4)}"
    admin = create_engine(args.server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE `{db}`"))
        conn.execute(text(f"CREATE PROCEDURE `{db}`.noop(IN a TEXT) BEGIN END"))
    try:
        store = open_store(f"{args.server}/{db}")
        store.init()
        expr = make_schedule("expr", expr="NOW() + INTERVAL 1 DAY")
        what = What("call", f"{db}.noop", ("x",))
        py_submit = _timed(args.n, lambda i: store.submit(f"py{i}", what, expr))
        py_broken = _timed(args.n, lambda i: store.broken(f"py{i}", True))
        raw = store.engine.raw_connection()
        cur = raw.cursor()

        def call(sql: str, *params: object) -> None:
            cur.execute(sql, params)
            while cur.nextset():
                pass

        stmt = f"CALL `{db}`.noop('x')"
        sql_submit = _timed(
            args.n,
            lambda i: call(f"CALL `{db}`.submit(@j, %s, NULL, 'NOW() + INTERVAL 1 DAY')", stmt),
        )
        cur.execute(f"SELECT MIN(id) FROM `{db}`.jobtui_job WHERE name LIKE 'job%%'")
        first = int(cur.fetchone()[0])
        sql_broken = _timed(
            args.n, lambda i: call(f"CALL `{db}`.broken(%s, TRUE, NULL)", first + i)
        )
        job = store.get("py0")
        routine = routines.check(routines.verify(store.engine.connect(), db, [job])[job.id])
        direct = _timed(args.n, lambda i: call(routines.call_statement(db, routine, 1), "x"))
        sql_run = _timed(args.n, lambda i: call(f"CALL `{db}`.run(%s)", first))
        raw.close()
        store.close()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS `{db}`"))
    print(f"n = {args.n} each, one connection, ms per call")
    print(f"{'':28}{'SQL procedure':>15}{'Python store':>15}")
    print(f"{'submit (call job, interval)':28}{sql_submit:>15.2f}{py_submit:>15.2f}")
    print(f"{'broken':28}{sql_broken:>15.2f}{py_broken:>15.2f}")
    print(f"{'run / CALL of its routine':28}{sql_run:>15.2f}{direct:>15.2f}")


if __name__ == "__main__":
    main()
