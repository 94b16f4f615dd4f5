"""Throughput ceiling: how many runs per second a jobtui worker sustains, and at what cost.

M no-op jobs (``call jobtui_bench.noop()``, a procedure whose body is empty)
every 0.1 s, so far more work is due than a worker can do: every job is
always overdue, and the worker runs flat out. Measured over a window after a
warm-up, for one worker process and then for two:

- runs/s: run-log rows with outcome ``ok`` that finished in the window;
- CPU per run: the worker processes' CPU (psutil) and mariadbd's, divided by runs;
- round trips per run: MariaDB's ``Questions`` (statements clients sent) and
  ``Com_admin_commands`` (pings) deltas, with the ``Com_*`` breakdown, divided
  by runs. These are server-wide counters: run it on a quiet server.

Then, unless ``--no-profile``, a RunnerPool runs in this process for a few
seconds while every command PyMySQL sends is counted (statements, raw or
through SQLAlchemy, COMMIT, ROLLBACK, pre-ping COM_PING), and the script prints
them per run by statement shape: where the round trips go.

    python bench/throughput.py --jobs 300 --seconds 10
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import tempfile
import threading
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import _common as c
from dispatch import _ps, start_workers, stop_processes, wait_registered

COM_KEYS = (
    "Com_select",
    "Com_insert",
    "Com_update",
    "Com_delete",
    "Com_call_procedure",
    "Com_commit",
    "Com_rollback",
    "Com_begin",
    "Com_do",
    "Com_set_option",
    "Com_show_status",
    "Com_admin_commands",
)


def setup(server: str, jobs: int, every: float) -> str:
    """A fresh jobtui_bench with the no-op procedure and M jobs calling it."""
    from sqlalchemy import insert, select

    from jobtui.core import schema
    from jobtui.core.model import What
    from jobtui.core.schedules import make_schedule
    from jobtui.core.store import open_store

    c.recreate_database(server)
    conn = c.admin_connect(server, c.BENCH_DB)
    with conn.cursor() as cur:
        cur.execute("CREATE PROCEDURE noop() BEGIN END")
    conn.close()
    url = c.db_url(server)
    store = open_store(url)
    try:
        store.submit(
            "noop_0", What("call", f"{c.BENCH_DB}.noop"), make_schedule("every", every=every)
        )
        with store.write() as sconn:
            row = sconn.execute(select(schema.job).where(schema.job.c.name == "noop_0")).one()
            template = {k: v for k, v in row._mapping.items() if k != "id"}
            batch = [dict(template, name=f"noop_{i}") for i in range(1, jobs)]
            if batch:
                sconn.execute(insert(schema.job), batch)
        # the copies run as the owner's routines too (jobs run with their owner's rights)
        store.ensure_routines()
    finally:
        store.close()
    return url


def ok_runs_between(conn: Any, t0: datetime, t1: datetime) -> int:
    with conn.cursor() as cur:
        cur.execute(
            "SELECT COUNT(*) FROM jobtui_run WHERE outcome = 'ok' AND finished >= %s "
            "AND finished < %s",
            (t0.replace(tzinfo=None), t1.replace(tzinfo=None)),
        )
        return int(cur.fetchone()[0])


def outcome_counts(conn: Any) -> Counter[str]:
    """Run-log rows by outcome (``skipped`` rows have no start time, so count them all)."""
    with conn.cursor() as cur:
        cur.execute("SELECT outcome, COUNT(*) FROM jobtui_run GROUP BY outcome")
        return Counter({str(o): int(n) for o, n in cur.fetchall()})


def measure_processes(
    server: str, url: str, processes: int, args: argparse.Namespace
) -> dict[str, Any]:
    conn = c.admin_connect(server, c.BENCH_DB)
    with conn.cursor() as cur:
        cur.execute("DELETE FROM jobtui_runner")  # the previous phase's, if any lingered
    logdir = Path(tempfile.mkdtemp(prefix="jobtui-throughput-"))
    procs = start_workers(url, processes, args.threads, args.poll, logdir)
    try:
        wait_registered(conn, procs)
        time.sleep(args.warmup)
        meter = c.CpuMeter([_ps(p.pid) for p in procs])
        server_proc = c.mariadb_process(conn)
        server_meter = c.CpuMeter([server_proc] if server_proc else [])
        status0 = c.global_status(conn)
        outcomes0 = outcome_counts(conn)
        t0 = datetime.now(UTC)
        meter.start()
        server_meter.start()
        time.sleep(args.seconds)
        t1 = datetime.now(UTC)
        client_cpu = meter.stop()
        server_cpu = server_meter.stop() if server_proc else math.nan
        status1 = c.global_status(conn)
        outcomes1 = outcome_counts(conn)
    finally:
        stop_processes(procs)
    time.sleep(0.5)  # runs that finished in the window are committed by now
    runs = ok_runs_between(conn, t0, t1)
    outcomes = outcomes1 - outcomes0
    conn.close()
    delta = c.status_delta(status0, status1)
    elapsed = (t1 - t0).total_seconds()
    return {
        "processes": processes,
        "runs": runs,
        "elapsed": elapsed,
        "client_cpu": client_cpu,
        "server_cpu": server_cpu,
        "status": delta,
        "outcomes": outcomes,
        "logs": str(logdir),
    }


_LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\b\d+(?:\.\d+)?\b")
_SPACES = re.compile(r"\s+")
_REPEATED_CALL = re.compile(r"(\w+\([^()]*\))(?:, \1)+")
_LIST = re.compile(r"\(\?(?:, \?)+\)(?:, \(\?(?:, \?)+\))*")


_PAIRS = re.compile(r"\((?:\(job_id = \? AND scheduled_for = \?\)(?: OR )?)+\)")


def normalise(statement: str) -> str:
    """The statement's shape: literals replaced by ?, long column lists elided."""
    text = _SPACES.sub(" ", _LITERAL.sub("?", statement)).strip()
    text = _LIST.sub("(?, …)", text)  # IN lists and multi-row VALUES of any length
    text = _REPEATED_CALL.sub(r"\1, …", text)  # GET_LOCK(…), GET_LOCK(…), …
    head = text.split(" FROM ", 1)
    if len(head) == 2 and head[0].upper().startswith("SELECT") and len(head[0]) > 50:
        text = "SELECT … FROM " + head[1]
    if text.upper().startswith("UPDATE") and " SET " in text and " WHERE " in text:
        table, rest = text.split(" SET ", 1)
        sets = rest.split(" WHERE ", 1)
        n = len(sets[0].split(", "))  # a CASE … END has no comma inside
        kind = " by CASE" if " CASE " in sets[0] else ""
        where = _PAIRS.sub("(job_id, scheduled_for) in (?, …)", sets[1])
        text = f"{table} SET ({n} columns{kind}) WHERE {where}"
    return text[:120]


class WireCounter:
    """Counts every command PyMySQL sends (one request/response each): the round trips.

    Patches ``pymysql.connections.Connection._execute_command`` in this process
    only, so it sees SQLAlchemy's statements, the executor's raw CALL, COMMIT,
    ROLLBACK and pre-ping COM_PINGs alike.
    """

    def __init__(self) -> None:
        import pymysql.connections

        self.counts: Counter[str] = Counter()
        self.active = threading.Event()
        self._lock = threading.Lock()
        self._cls = pymysql.connections.Connection
        self._original = self._cls._execute_command
        counter = self

        def counted(conn: Any, command: int, sql: Any) -> Any:
            if counter.active.is_set():
                if command == 3:  # COM_QUERY
                    text = (
                        bytes(sql).decode("utf8", "replace")
                        if isinstance(sql, (bytes, bytearray))
                        else str(sql)
                    )
                    key = normalise(text)
                else:
                    key = {14: "(COM_PING)", 2: "(COM_INIT_DB)"}.get(
                        command, f"(command {command})"
                    )
                with counter._lock:
                    counter.counts[key] += 1
            return counter._original(conn, command, sql)

        self._cls._execute_command = counted  # type: ignore[method-assign]

    def close(self) -> None:
        self._cls._execute_command = self._original  # type: ignore[method-assign]


def profile_in_process(url: str, args: argparse.Namespace) -> dict[str, Any]:
    """Run a RunnerPool here, counting every command it sends to the server."""
    from jobtui.core.runner.pool import RunnerPool
    from jobtui.core.store import open_store

    wire = WireCounter()
    store = open_store(url)
    conn = c.admin_connect(c.server_url(args.server), c.BENCH_DB)
    with conn.cursor() as cur:
        cur.execute("DELETE FROM jobtui_runner")
    pool = RunnerPool(store, threads=args.threads, poll=args.poll, name="profile")
    pool.start()
    try:
        time.sleep(args.warmup)
        t0 = datetime.now(UTC)
        wire.active.set()
        time.sleep(args.profile_seconds)
        wire.active.clear()
        t1 = datetime.now(UTC)
    finally:
        pool.stop(grace=5.0)
        store.close()
        wire.close()
    time.sleep(0.3)
    runs = ok_runs_between(conn, t0, t1)
    conn.close()
    return {"runs": runs, "counts": wire.counts, "elapsed": (t1 - t0).total_seconds()}


def render(results: list[dict[str, Any]], profile: dict[str, Any] | None, header: list[str]) -> str:
    out = list(header)
    out.append("")
    rows = []
    for r in results:
        runs = r["runs"]
        st = r["status"]
        trips = st.get("Questions", 0) + st.get("Com_admin_commands", 0)

        def per(v: float, runs: int = runs) -> str:
            return f"{v / runs:.2f}" if runs else "-"

        rows.append(
            [
                r["processes"],
                runs,
                f"{runs / r['elapsed']:.0f}",
                f"{runs / r['elapsed'] / r['processes']:.0f}",
                f"{r['client_cpu'] / runs * 1000:.2f}" if runs else "-",
                f"{r['server_cpu'] / runs * 1000:.2f}" if runs else "-",
                per(trips),
                per(st.get("Questions", 0)),
                per(st.get("Com_admin_commands", 0)),
                per(sum(n for o, n in r["outcomes"].items() if o == "skipped")),
            ]
        )
    out.append(
        c.table(
            [
                "worker procs",
                "runs ok",
                "runs/s",
                "runs/s per proc",
                "worker CPU ms/run",
                "server CPU ms/run",
                "round trips/run",
                "Questions/run",
                "pings/run",
                "skipped rows/run",
            ],
            rows,
        )
    )
    out.append("")
    out.append("Server statement counters per run (SHOW GLOBAL STATUS deltas / runs ok):")
    keys = [k for k in COM_KEYS if any(r["status"].get(k) for r in results)]
    srows = []
    for k in keys:
        srows.append(
            [k]
            + [f"{r['status'].get(k, 0) / r['runs']:.2f}" if r["runs"] else "-" for r in results]
        )
    out.append(c.table(["counter"] + [f"{r['processes']} proc" for r in results], srows))
    if profile is not None:
        out.append("")
        runs = profile["runs"]
        out.append(
            f"Where the round trips go: one in-process RunnerPool, {runs} runs in "
            f"{profile['elapsed']:.1f} s; commands PyMySQL sent, per run:"
        )
        prow = []
        total = 0
        for statement, n in profile["counts"].most_common():
            total += n
            prow.append([f"{n / runs:.2f}" if runs else "-", statement])
        prow.append([f"{total / runs:.2f}" if runs else "-", "TOTAL round trips per run"])
        out.append(c.table(["per run", "statement"], prow))
    return "\n".join(out)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=300, help="no-op jobs (M)")
    p.add_argument("--every", type=float, default=0.1, help="their interval, seconds")
    p.add_argument("--seconds", type=float, default=10.0, help="measured window per phase")
    p.add_argument("--warmup", type=float, default=3.0, help="seconds before measuring")
    p.add_argument("--processes", default="1,2", help="worker process counts to measure")
    p.add_argument("--threads", type=int, default=10, help="threads per worker")
    p.add_argument("--poll", type=float, default=1.0, help="worker --poll")
    p.add_argument("--profile-seconds", type=float, default=5.0)
    p.add_argument("--no-profile", action="store_true", help="skip the in-process statement count")
    p.add_argument("--server", default=None, help="MariaDB URL without database")
    p.add_argument(
        "--database", default="jobtui_bench", help="scratch database (created and dropped)"
    )
    p.add_argument("--keep", action="store_true", help="leave the jobtui_bench database")
    args = p.parse_args(argv)
    try:
        args.process_counts = [int(x) for x in args.processes.split(",") if x.strip()]
    except ValueError:
        p.error(f"invalid --processes {args.processes!r}: expected e.g. 1,2")
    if args.jobs < 1 or args.seconds <= 0 or not args.process_counts:
        p.error("--jobs, --seconds and --processes must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    c.use_database(args.database)
    server = c.server_url(args.server)
    header = [*c.machine_lines(server), f"jobtui revision: {c.git_revision()}"]
    header.append(c.server_noise_line())
    header.append(
        f"settings: {args.jobs} no-op call jobs every {args.every} s, {args.threads} threads per "
        f"worker, --poll {args.poll}, {args.warmup} s warm-up, {args.seconds} s measured"
    )
    results = []
    profile = None
    try:
        url = setup(server, args.jobs, args.every)
        for n in args.process_counts:
            c.log(f"measuring {n} worker process(es) for {args.seconds} s")
            results.append(measure_processes(server, url, n, args))
            c.log(f"{n} process(es): {results[-1]['runs'] / results[-1]['elapsed']:.0f} runs/s")
        if not args.no_profile:
            c.log(f"profiling statements in-process for {args.profile_seconds} s")
            profile = profile_in_process(url, args)
    finally:
        if not args.keep:
            c.drop_database(server)
    print(render(results, profile, header))
    return 0


if __name__ == "__main__":
    sys.exit(main())
