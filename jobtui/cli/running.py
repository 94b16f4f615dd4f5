"""Running jobs from the command line: ``worker`` (a headless runner pool) and ``run``
(one job's schedule in the foreground).

The runner is imported inside the verbs, so that the other verbs never load it.
"""

from __future__ import annotations

import argparse
import dataclasses

from jobtui.cli import metrics
from jobtui.cli.exits import missing
from jobtui.cli.opening import require_runner_account, store_for
from jobtui.cli.options import (
    owner_share,
    owner_text,
    retention_of,
    retention_options,
    seconds,
    whole,
)
from jobtui.cli.verbs import CommandLine
from jobtui.core import accounts
from jobtui.core.errors import PermissionDenied
from jobtui.core.runner.config import DEFAULTS as POOL_DEFAULTS
from jobtui.core.runner.config import PoolConfig

# `worker --allow-sql-owner`: accepted, without effect (every owner's ``sql`` job runs
# with that owner's rights, as its owner's routine: docs/privileges.md)
SQL_OWNER_POLICIES = ("admin", "any")


def add_worker_verb(cli: CommandLine) -> None:
    p = cli.verb("worker", "run a headless runner pool until SIGTERM or Ctrl-C", cmd_worker)
    _pool_options(p)
    _worker_options(p)
    retention_options(p)
    p.add_argument(
        "--prune-interval",
        metavar="SECONDS",
        type=seconds("--prune-interval", 0.1, 86_400),
        default=None,
        help="seconds between the worker's pruning passes (default 60)",
    )
    metrics.add_options(p)


def _pool_options(p: argparse.ArgumentParser) -> None:
    """The runner pool's size, pace and sharing."""
    p.add_argument(
        "--threads",
        metavar="N",
        type=whole("--threads", 1, 256),
        default=POOL_DEFAULTS.threads,
        help=f"runner threads (default {POOL_DEFAULTS.threads})",
    )
    p.add_argument(
        "--poll",
        metavar="SECONDS",
        type=seconds("--poll", 0.05, 3600),
        default=POOL_DEFAULTS.poll,
        help=f"longest sleep between looks at the job table (default {POOL_DEFAULTS.poll:g})",
    )
    p.add_argument("--name", metavar="NAME", help="the runner's name in the runner table")
    p.add_argument(
        "--grace",
        metavar="SECONDS",
        type=seconds("--grace", 0, 86_400),
        default=10.0,
        help="on stop, how long runs may finish before they are aborted (default 10)",
    )
    p.add_argument(
        "--heartbeat-timeout",
        metavar="SECONDS",
        type=seconds("--heartbeat-timeout", 1, 3600),
        default=POOL_DEFAULTS.heartbeat_timeout,
        help="a runner silent this long is taken for dead: its unfinished runs become lost "
        f"and its jobs run elsewhere (default {POOL_DEFAULTS.heartbeat_timeout:g}, as for the "
        "console's runners)",
    )
    p.add_argument(
        "--lead",
        metavar="SECONDS",
        type=seconds("--lead", 0, 5),
        default=POOL_DEFAULTS.lead,
        help="claim a run this long before its slot, so that only the execution is left "
        f"for the slot (default {POOL_DEFAULTS.lead:g}; 0 claims at the slot)",
    )
    p.add_argument(
        "--owner-share",
        metavar="FRACTION",
        type=owner_share,
        default=POOL_DEFAULTS.owner_share,
        help="the largest share of the threads one owner's jobs may hold at once (default "
        f"{POOL_DEFAULTS.owner_share:g}; at least one thread; 1 lets one owner take them all)",
    )
    p.add_argument(
        "--takeover-grace",
        metavar="SECONDS",
        type=seconds("--takeover-grace", 0, 3600),
        default=POOL_DEFAULTS.takeover_grace,
        help="how late another worker's job may be before this one runs it; the workers "
        f"share the jobs, each runs its own share (default {POOL_DEFAULTS.takeover_grace:g}; "
        "0: every worker tries every due job)",
    )


def _worker_options(p: argparse.ArgumentParser) -> None:
    """The worker process's SQL owners, log lines and alerts."""
    p.add_argument(
        "--allow-sql-owner",
        choices=SQL_OWNER_POLICIES,
        default="admin",
        help="accepted for compatibility, without effect: every job runs with its owner's "
        "rights (docs/privileges.md in jobtui's source tree)",
    )
    p.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="stderr lines as text (TS LEVEL EVENT key=value ...) or one JSON object each "
        "(default text; the same fields)",
    )
    p.add_argument(
        "--no-alerts",
        dest="alerts",
        action="store_false",
        help="send no alerts from this worker (others may)",
    )
    p.add_argument(
        "--alert-timeout",
        metavar="SECONDS",
        type=seconds("--alert-timeout", 0.1, 3600),
        default=10.0,
        help="how long one alert target may take; a command is killed then (default 10)",
    )


def add_run_verb(cli: CommandLine) -> None:
    p = cli.verb("run", "run one job's schedule in the foreground until it ends", cmd_run)
    p.description = (
        "Run one job's schedule in the foreground, like the job$run loop of a "
        "stored-procedure job runner: hold the job's lock, run each due slot and run-now "
        "request, and stop when the schedule has no more slots (exit 0), the job is "
        "aborted or removed (exit 3), or on Ctrl-C (exit 130; a run in flight is aborted). "
        "On MySQL/MariaDB it needs a runner account (jobtui grant ACCOUNT --runner), "
        "which names the job's owner with --owner."
    )
    p.add_argument("name", metavar="NAME")
    p.add_argument(
        "--owner",
        metavar="OWNER",
        type=owner_text,
        help="the job's owner (e.g. alice@%%, as `list --all` shows it); a runner account "
        "owns no jobs; default: the connecting account's own",
    )


def cmd_worker(args: argparse.Namespace) -> int:
    try:
        from jobtui.core.worker import worker_main
    except ImportError as exc:
        raise missing("runner", "jobtui.core.worker", exc) from None
    config = PoolConfig(
        threads=args.threads,
        poll=args.poll,
        name=args.name,
        heartbeat_timeout=args.heartbeat_timeout,
        lead=args.lead,
        owner_share=args.owner_share,
        takeover_grace=args.takeover_grace,
    )
    retention = retention_of(args)
    if args.prune_interval is not None:
        retention = dataclasses.replace(retention, interval=args.prune_interval)
    with store_for(args) as store:
        require_runner_account(store, "worker")
        store.sql_owners = args.allow_sql_owner
        served = metrics.start(args, store)
        try:
            code = worker_main(
                store,
                config,
                grace=args.grace,
                retention=retention,
                log_format=args.log_format,
                alerts=args.alerts,
                alert_timeout=args.alert_timeout,
                metrics=served,
            )
        finally:
            if served is not None:
                served.close()
        return int(code)


def cmd_run(args: argparse.Namespace) -> int:
    try:
        from jobtui.core.worker import run_foreground
    except ImportError as exc:
        raise missing("runner", "jobtui.core.worker", exc) from None
    with store_for(args) as store:
        require_runner_account(store, "run")
        problem = store.run_rights_problem()
        if problem is not None:
            raise PermissionDenied(
                f"`jobtui run` runs the job with this account's connection and needs a runner "
                f"account (role {accounts.runner_role(store.schema_name)}: `jobtui grant "
                f"ACCOUNT --runner`, docs/privileges.md); account {store.owner!r} cannot: "
                f"{problem}"
            )
        return int(run_foreground(store, args.name, owner=args.owner))
