"""What the runner's routine check costs: one query on mysql.proc per batch, against a CALL.

One connection as the server's admin, on a database of its own (dropped
afterwards), with BATCH jobs submitted (each gets its owner's DEFINER
procedure): N verifications of one job's routine, N of a whole batch in one
query (``routines.verify``), N ``CALL`` of a job's routine and N of the empty
procedure it calls, for scale. docs/privileges.md quotes the figures.

    python bench/privilege_check.py [--n 300] [--batch 64] [--server mysql+pymysql://root@127.0.0.1:3306]
"""

from __future__ import annotations

import argparse
import secrets
import time

from sqlalchemy import create_engine, text

from jobtui.core.backends.mysql import routines
from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=300, help="repetitions of each")
    p.add_argument("--batch", type=int, default=64, help="jobs verified in one query")
    p.add_argument("--server", default="mysql+pymysql://root@127.0.0.1:3306")
    args = p.parse_args()
    db = f"jobtui_bench_priv_{secrets.token_hex(4)}"
    admin = create_engine(args.server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE `{db}`"))
        conn.execute(text(f"CREATE PROCEDURE `{db}`.noop() BEGIN END"))
    try:
        store = open_store(f"{args.server}/{db}")
        hourly = make_schedule("every", every=3600)
        jobs = [
            store.submit(f"n{i}", What("call", f"{db}.noop"), hourly) for i in range(args.batch)
        ]
        with store.engine.connect() as conn:

            def timed(fn: object) -> float:
                t = time.perf_counter()
                for _ in range(args.n):
                    fn()  # type: ignore[operator]
                return (time.perf_counter() - t) / args.n

            one = timed(lambda: routines.verify(conn, db, jobs[:1]))
            verdict = routines.verify(conn, db, jobs)
            assert all(v.name for v in verdict.values()), verdict
            batch = timed(lambda: routines.verify(conn, db, jobs))
            name = routines.check(verdict[jobs[0].id])
            call = routines.call_statement(db, name, 0)
            routine = timed(lambda: conn.exec_driver_sql(call))
            direct = timed(lambda: conn.exec_driver_sql(f"CALL `{db}`.`noop`()"))
            conn.rollback()
        store.close()
        print(
            f"verify one job's routine {one * 1e3:.3f} ms; a batch of {args.batch} in one query "
            f"{batch * 1e3:.3f} ms ({batch / args.batch * 1e3:.3f} ms a job); CALL of a job's "
            f"routine {routine * 1e3:.3f} ms, of the empty procedure directly "
            f"{direct * 1e3:.3f} ms (n={args.n})"
        )
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS `{db}`"))


if __name__ == "__main__":
    main()
