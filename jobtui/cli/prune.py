"""``prune``: delete old runs from the run log now (the runners prune by themselves)."""

from __future__ import annotations

import argparse

from jobtui.cli.exits import EXIT_OK
from jobtui.cli.opening import store_for
from jobtui.cli.options import json_option, retention_of, retention_options
from jobtui.cli.output import print_json, print_line
from jobtui.cli.verbs import CommandLine

PRUNE_LOCK_WAIT = 30.0  # seconds `jobtui prune` waits for a runner's pruning pass to end


def add_verbs(cli: CommandLine) -> None:
    p = cli.verb(
        "prune", "delete old runs from the run log now (the runners do it by themselves)", cmd_prune
    )
    retention_options(p)
    p.add_argument("--dry-run", action="store_true", help="only count what would be deleted")
    json_option(p, "the result")


def _days(value: float | None) -> str:
    return "no limit" if value is None else f"{value:g} days"


def cmd_prune(args: argparse.Namespace) -> int:
    ret = retention_of(args)
    with store_for(args) as store:
        deleted = store.prune_runs(ret, dry_run=args.dry_run, wait=PRUNE_LOCK_WAIT)
    if args.json:
        print_json(
            {
                "deleted": deleted,
                "dry_run": bool(args.dry_run),
                "keep_runs": ret.keep_runs,
                "keep_days": ret.keep_days,
                "keep_error_days": ret.error_days,
            }
        )
        return EXIT_OK
    keep = "no count limit" if ret.keep_runs is None else f"{ret.keep_runs} per job"
    print_line(
        f"{'would delete' if args.dry_run else 'deleted'} {deleted} run(s) from the run log "
        f"(kept: {keep}; ok runs {_days(ret.keep_days)}; errors {_days(ret.error_days)})"
    )
    return EXIT_OK
