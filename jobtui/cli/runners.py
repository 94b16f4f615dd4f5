"""``runners``: the registered runners and their heartbeat age, and ``runners --check``,
the health check (``jobtui.core.health``)."""

from __future__ import annotations

import argparse
from datetime import datetime
from typing import Any

from jobtui.cli.exits import EXIT_OK, EXIT_UNHEALTHY
from jobtui.cli.opening import store_for
from jobtui.cli.options import HEARTBEAT_TIMEOUT, json_option, seconds
from jobtui.cli.output import print_json, print_line, table, time_text
from jobtui.cli.verbs import CommandLine
from jobtui.core import health
from jobtui.core.errors import InvalidInput
from jobtui.core.store import RunnerInfo
from jobtui.core.timeutil import iso


def add_verbs(cli: CommandLine) -> None:
    p = cli.verb("runners", "the registered runners and their heartbeat age", cmd_runners)
    json_option(p, "the runners")
    p.add_argument(
        "--check",
        action="store_true",
        help="a health check: exit 1 when no live runner serves the database or a job is "
        "overdue past --overdue (0 when healthy)",
    )
    p.add_argument(
        "--overdue",
        metavar="SECONDS",
        type=seconds("--overdue", 0, 31_536_000),
        default=None,
        help="with --check: how late a due job may be (default 300)",
    )


def runner_dict(info: RunnerInfo, now: datetime) -> dict[str, Any]:
    """The ``runners --json`` shape."""
    age = (now - info.heartbeat).total_seconds()
    return {
        "id": info.id,
        "name": info.name,
        "host": info.host,
        "pid": info.pid,
        "threads": info.threads,
        "connection_id": info.connection_id,
        "started": iso(info.started),
        "heartbeat": iso(info.heartbeat),
        "heartbeat_age": round(age, 3),
        "alive": info.alive(now, HEARTBEAT_TIMEOUT),
        "stopping": info.stopping,
    }


def cmd_runners(args: argparse.Namespace) -> int:
    if args.overdue is not None and not args.check:
        raise InvalidInput("--overdue is only accepted with --check")
    if args.check:
        return _check_health(args)
    with store_for(args) as store:
        infos = store.runners()
        now = store.now()
    rows = [runner_dict(i, now) for i in infos]
    if args.json:
        print_json(rows)
        return EXIT_OK
    if not rows:
        print_line("no runners (start one with `jobtui worker` or the console's --runners N)")
        return EXIT_OK
    headers = ["NAME", "HOST", "PID", "THREADS", "STARTED (UTC)", "HEARTBEAT AGE", "STATE", "ID"]
    table_rows = [
        [
            r["name"],
            r["host"],
            str(r["pid"]),
            str(r["threads"]),
            time_text(info.started),
            f"{r['heartbeat_age']:.1f}s",
            "stopping" if r["stopping"] else ("alive" if r["alive"] else "dead"),
            r["id"],
        ]
        for r, info in zip(rows, infos, strict=True)
    ]
    print_line(table(headers, table_rows))
    return EXIT_OK


def _check_health(args: argparse.Namespace) -> int:
    overdue = health.DEFAULT_OVERDUE if args.overdue is None else args.overdue
    with store_for(args, read_only=True) as store:
        result = health.check(
            store.runners(),
            store.list_jobs(all_owners=store.sees_all),
            store.now(),
            timeout=HEARTBEAT_TIMEOUT,
            overdue=overdue,
        )
    if args.json:
        print_json(result.to_dict())
    else:
        print_line(
            f"{'ok' if result.ok else 'FAIL'}: {len(result.live_runners)} live runner(s), "
            f"{len(result.overdue)} job(s) overdue by more than {overdue:g} s"
        )
        for problem in result.problems():
            print_line(f"  {problem}")
    return EXIT_OK if result.ok else EXIT_UNHEALTHY
