"""``jobtui doctor``: the verb's options, and its lines or ``--json`` (the checks
themselves are jobtui.core.doctor). Exit 0 when every line is ok or warn, 1 when one
fails, 2 for bad input."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from jobtui.cli.options import seconds
from jobtui.cli.output import print_line
from jobtui.cli.verbs import CommandLine
from jobtui.core import doctor, health
from jobtui.core.accounts import parse_account
from jobtui.core.backends.registry import make_engine
from jobtui.core.db import mask_url, parse_url, resolve_url
from jobtui.core.store import JobStore

EXIT_HEALTHY = 0  # every line ok or warn
EXIT_FAILING = 1  # a line fails


def add_verbs(cli: CommandLine) -> None:
    p = cli.verb(
        "doctor",
        "check this set-up: connection, schema version, grants, Event Scheduler, runners, "
        "overdue and BROKEN jobs, clock skew; exit 1 when a check fails (0 ok or warn)",
        cmd_doctor,
    )
    p.add_argument("--json", action="store_true", help="print the checks as a JSON list")
    p.add_argument(
        "--overdue",
        metavar="SECONDS",
        type=seconds("--overdue", 0, 31_536_000),
        default=health.DEFAULT_OVERDUE,
        help=f"how late a due job may be (default {health.DEFAULT_OVERDUE:g})",
    )
    p.add_argument(
        "--runner-account",
        metavar="ACCOUNT",
        help="also check this account's runner grants (USER or USER@HOST; MySQL/MariaDB: "
        "SHOW GRANTS FOR, which needs SELECT on the mysql database)",
    )


def cmd_doctor(args: argparse.Namespace) -> int:
    if args.runner_account is not None:
        parse_account(args.runner_account)  # bad input: exit 2 before connecting
    url = resolve_url(args.db)
    missing = _missing_sqlite_file(url)
    if missing is not None:
        checks = [missing]  # connecting would create an empty file
    else:
        # not open_store: no tables are created, and a newer schema is a line, not a refusal
        store = JobStore(make_engine(url), read_only=True, url=url)
        try:
            options = doctor.Options(overdue=args.overdue, runner_account=args.runner_account)
            checks = doctor.run(store, options)
        finally:
            store.close()
    if args.json:
        print_line(json.dumps([c.to_dict() for c in checks], indent=2, ensure_ascii=False))
    else:
        width = max(len(c.check) for c in checks)
        for c in checks:
            print_line(f"{c.status:<4}  {c.check:<{width}}  {c.detail}")
            if c.hint and c.status != doctor.OK:
                print_line(f"{'':<4}  {'':<{width}}  -> {c.hint}")
            elif c.hint:
                print_line(f"{'':<4}  {'':<{width}}  ({c.hint})")
    return EXIT_FAILING if doctor.worst(checks) == doctor.FAIL else EXIT_HEALTHY


def _missing_sqlite_file(url: str) -> doctor.Check | None:
    parsed = parse_url(url)
    path = parsed.database
    if parsed.get_backend_name() != "sqlite" or not path or Path(path).exists():
        return None
    return doctor.Check(
        "connect",
        doctor.FAIL,
        f"{mask_url(url)}: no such SQLite file",
        "check the path (--db, $JOBTUI_DB); `jobtui init` creates a new database",
    )
