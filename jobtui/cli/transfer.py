"""Moving job definitions: ``export`` (JSON, YAML or the SQL CALLs) and ``import``."""

from __future__ import annotations

import argparse
import sys

from jobtui.cli.exits import EXIT_OK
from jobtui.cli.opening import store_for
from jobtui.cli.output import PROG, print_json, print_line
from jobtui.cli.verbs import CommandLine
from jobtui.core.store import JobStore


def add_verbs(cli: CommandLine) -> None:
    p = cli.verb("export", "print job definitions (for import)", cmd_export)
    p.add_argument(
        "--format",
        choices=("json", "yaml", "sql"),
        default="json",
        help="output format (default json); sql: the CALLs that recreate the jobs",
    )
    p.add_argument("--all", action="store_true", help="every owner's jobs")

    p = cli.verb("import", "create or change jobs from an export file", cmd_import)
    p.add_argument("file", metavar="FILE", help="a JSON or YAML export file, or - for stdin")


def cmd_export(args: argparse.Namespace) -> int:
    with store_for(args) as store:
        if args.all:
            store.require_all()
        if args.format == "sql":
            return _export_sql(store, all_owners=args.all)
        jobs = store.export(all_owners=args.all)
    if args.format == "yaml":
        import yaml  # only here: every other command starts without it

        sys.stdout.write(yaml.safe_dump(jobs, sort_keys=False, allow_unicode=True))
    else:
        print_json(jobs)
    return EXIT_OK


def _export_sql(store: JobStore, *, all_owners: bool) -> int:
    text, skipped = store.export_sql(all_owners=all_owners)
    sys.stdout.write(text)
    if skipped:
        print(
            f"{PROG}: {skipped} job(s) left out of the SQL export: see its comments",
            file=sys.stderr,
        )
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
    # only here: the import file's reader (YAML) is loaded by this command alone
    from jobtui.core.store.importfile import read_definitions

    data = read_definitions(args.file)
    with store_for(args) as store:
        created, changed = store.import_jobs(data)
    print_line(f"imported {created + changed} job(s): {created} created, {changed} changed")
    return EXIT_OK
