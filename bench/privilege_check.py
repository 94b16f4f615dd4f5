"""What the runner's privilege check costs per run: unremembered, remembered, and a no-op CALL.

One connection as the server's admin, on a database of its own (dropped
afterwards): N checks that ask the grant tables (``privileges._check``), N
that hit the remembered result (``check_may_run``), and N ``CALL`` of an
empty procedure for scale. docs/privileges.md quotes the figures.

    python bench/privilege_check.py [--n 300] [--server mysql+pymysql://root@127.0.0.1:3306]
"""

from __future__ import annotations

import argparse
import secrets
import time

from sqlalchemy import create_engine, text

from jobtui.core import privileges
from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import open_store


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=300, help="repetitions of each")
    p.add_argument("--server", default="mysql+pymysql://root@127.0.0.1:3306")
    args = p.parse_args()
    db = f"jobtui_bench_priv_{secrets.token_hex(4)}"
    admin = create_engine(args.server, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f"CREATE DATABASE `{db}`"))
        conn.execute(text(f"CREATE PROCEDURE `{db}`.noop() BEGIN END"))
    try:
        store = open_store(f"{args.server}/{db}")
        job = store.submit("n", What("call", f"{db}.noop"), make_schedule("every", every=60))
        with store.engine.connect() as conn:
            t = time.perf_counter()
            for _ in range(args.n):
                privileges._check(conn, job)
            asked = (time.perf_counter() - t) / args.n
            privileges.check_may_run(conn, job)
            t = time.perf_counter()
            for _ in range(args.n):
                privileges.check_may_run(conn, job)
            remembered = (time.perf_counter() - t) / args.n
            t = time.perf_counter()
            for _ in range(args.n):
                conn.exec_driver_sql(f"CALL `{db}`.`noop`()")
            call = (time.perf_counter() - t) / args.n
        store.close()
        print(
            f"check asking the grant tables {asked * 1e3:.3f} ms; remembered "
            f"{remembered * 1e6:.1f} us; CALL of an empty procedure {call * 1e3:.3f} ms "
            f"(n={args.n})"
        )
    finally:
        with admin.connect() as conn:
            conn.execute(text(f"DROP DATABASE IF EXISTS `{db}`"))
        admin.dispose()


if __name__ == "__main__":
    main()
