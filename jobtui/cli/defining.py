"""Defining jobs: ``init`` (and ``upgrade``), ``submit``, ``change``, ``remove``."""

from __future__ import annotations

import argparse
from datetime import datetime, timedelta

from jobtui.cli import alerts
from jobtui.cli.exits import EXIT_OK
from jobtui.cli.opening import store_for
from jobtui.cli.options import json_option, owner_option, when
from jobtui.cli.output import job_dict, print_json, print_line, time_text
from jobtui.cli.verbs import CommandLine
from jobtui.core.errors import InvalidInput
from jobtui.core.jobdefs import DEFAULT_MAX_FAILURES, UNSET, JobChange, JobSpec
from jobtui.core.model import Job, What, check_job_name
from jobtui.core.schedules import make_schedule
from jobtui.core.schema import SCHEMA_VERSION
from jobtui.core.showtime import halted
from jobtui.core.timeutil import aware

FIRST_RUN_NOW = timedelta(seconds=1)  # submit says "first run now" within this of now

# what `change` may be given: at least one of these (the options of `submit`)
CHANGE_OPTIONS = ("call", "sql", "action", "args", "every", "cron", "tz", "expr", "once",
                  "start", "finish", "no_start", "no_finish", "description", "max_failures",
                  "disabled", "enable", "alert")  # fmt: skip


def add_verbs(cli: CommandLine) -> None:
    cli.verb("init", "create or upgrade the tables (applies the schema migrations)", cmd_init)
    cli.verb(
        "upgrade", "the same as init: apply the schema migrations this jobtui brings", cmd_init
    )

    p = cli.verb("submit", "define a new job", cmd_submit)
    p.add_argument("name", metavar="NAME")
    definition_options(p, change=False)

    p = cli.verb("change", "alter a job: only what is given changes", cmd_change)
    p.add_argument("name", metavar="NAME")
    owner_option(p)
    definition_options(p, change=True)

    p = cli.verb(
        "remove", "remove a job (a run in flight is aborted first; its log stays)", cmd_remove
    )
    p.add_argument("name", metavar="NAME")
    owner_option(p)


def definition_options(parser: argparse.ArgumentParser, *, change: bool) -> None:
    """What to run, its schedule and the rest of a job's definition (submit, change)."""
    what = parser.add_argument_group(
        "what to run" + (" (give one to replace it)" if change else " (give exactly one)")
    )
    what.add_argument("--call", metavar="SCHEMA.PROC", help="call a stored procedure (MySQL)")
    what.add_argument("--sql", metavar="STMT", help="run one SQL statement")
    what.add_argument("--action", metavar="NAME", help="run a registered Python action")
    what.add_argument(
        "--arg",
        metavar="V",
        action="append",
        dest="args",
        help="an argument for --call or --action (repeat for several; --arg=-x for a "
        "value starting with -)",
    )
    timing = parser.add_argument_group(
        "schedule" + (" (give one to replace it)" if change else " (give exactly one)")
    )
    timing.add_argument("--every", metavar="SECONDS", help="every N seconds (at least 0.1)")
    timing.add_argument("--cron", metavar="EXPR", help="cron: 5 fields, or 6 with seconds last")
    timing.add_argument("--tz", metavar="ZONE", help="IANA time zone of --cron (default UTC)")
    timing.add_argument("--expr", metavar="SQL", help="a SQL date expression (Oracle's INTERVAL)")
    timing.add_argument("--once", action="store_true", help="run once")
    timing.add_argument("--start", metavar="WHEN", help="window start, ISO 8601 (no offset = UTC)")
    timing.add_argument("--finish", metavar="WHEN", help="window end, ISO 8601 (no offset = UTC)")
    if change:
        timing.add_argument("--no-start", action="store_true", help="clear the window start")
        timing.add_argument("--no-finish", action="store_true", help="clear the window end")
    other = parser.add_argument_group("other")
    other.add_argument("--description", metavar="TEXT", help="free text")
    other.add_argument(
        "--max-failures",
        metavar="N",
        help="failures in a row before the job is BROKEN (1-1000000; default 16)",
    )
    other.add_argument("--disabled", action="store_true", help="the job does not run until enabled")
    if change:
        other.add_argument("--enable", action="store_true", help="enable the job")
    alerts.add_alert_option(other)
    json_option(parser, "the job")


def cmd_init(args: argparse.Namespace) -> int:
    with store_for(args) as store:  # opening applies the migrations (jobtui.core.migrations)
        store.ping()
        if not store.sees_all:
            print_line(
                f"{store.masked_url}: this operator account ({store.owner}) may not create or "
                f"upgrade the tables; it sees its own jobs through {store.job_table.name} (an admin "
                "runs `jobtui init`)"
            )
            return EXIT_OK
        done = store.upgraded.describe() if store.upgraded else f"schema version {SCHEMA_VERSION}"
        print_line(f"initialised {store.masked_url} ({done})")
    return EXIT_OK


def given(args: argparse.Namespace, *names: str) -> list[str]:
    """The options among ``names`` that ``args`` holds a value of, as ``--option``."""
    return [
        f"--{n.replace('_', '-')}" for n in names if getattr(args, n, None) not in (None, False)
    ]


def what_from_args(args: argparse.Namespace, *, required: bool) -> What | None:
    """What to run from --call/--sql/--action and --arg (None: not given)."""
    whats = given(args, "call", "sql", "action")
    if len(whats) > 1:
        raise InvalidInput(
            f"give one thing to run, not {' and '.join(whats)}: --call SCHEMA.PROC, "
            "--sql STATEMENT or --action NAME"
        )
    arg_values = tuple(args.args or ())
    if not whats:
        if required:
            raise InvalidInput(
                "nothing to run: give --call SCHEMA.PROC, --sql STATEMENT or --action NAME"
            )
        return None
    if args.call is not None:
        return What("call", args.call, arg_values)
    if args.action is not None:
        return What("action", args.action, arg_values)
    if arg_values:
        raise InvalidInput("--arg is only accepted with --call or --action, not with --sql")
    return What("sql", args.sql)


def schedule_kind(args: argparse.Namespace, *, required: bool) -> str | None:
    """The schedule's kind from --every/--cron/--expr/--once (None: not given)."""
    kinds = given(args, "every", "cron", "expr", "once")
    if len(kinds) > 1:
        raise InvalidInput(
            f"give one schedule, not {' and '.join(kinds)}: --every SECONDS, --cron EXPR, "
            "--expr SQL or --once"
        )
    if not kinds:
        if required:
            raise InvalidInput(
                "no schedule: give --every SECONDS, --cron EXPR [--tz ZONE], --expr SQL or --once"
            )
        return None
    return kinds[0][2:]


def cmd_submit(args: argparse.Namespace) -> int:
    check_job_name(args.name)
    what = what_from_args(args, required=True)
    assert what is not None
    kind = schedule_kind(args, required=True)
    assert kind is not None
    schedule = make_schedule(
        kind,
        every=args.every,
        cron=args.cron,
        tz=args.tz,
        expr=args.expr,
        start=when(args.start, "--start"),
        finish=when(args.finish, "--finish"),
    )
    alert_given, alert = alerts.alert_targets(args.alert)
    with store_for(args) as store:
        job = store.submit(
            JobSpec(
                args.name,
                what,
                schedule,
                description=args.description or "",
                max_failures=(
                    args.max_failures if args.max_failures is not None else DEFAULT_MAX_FAILURES
                ),
                disabled=args.disabled,
            )
        )
        if alert_given:
            job = store.set_alert(job.name, alert)
        now = store.now()
    return report_job(args, job, "submitted", now=now)


def cmd_change(args: argparse.Namespace) -> int:
    if args.start is not None and args.no_start:
        raise InvalidInput("give --start WHEN or --no-start, not both")
    if args.finish is not None and args.no_finish:
        raise InvalidInput("give --finish WHEN or --no-finish, not both")
    if args.disabled and args.enable:
        raise InvalidInput("give --disabled or --enable, not both")
    kind = schedule_kind(args, required=False)
    start = None if args.no_start else when(args.start, "--start")
    finish = None if args.no_finish else when(args.finish, "--finish")
    if not given(args, *CHANGE_OPTIONS):
        raise InvalidInput(
            f"nothing to change for job {args.name!r}: give at least one option of "
            "`jobtui submit` (see `jobtui change --help`)"
        )
    what = what_from_args(args, required=False)
    alert_given, alert = alerts.alert_targets(args.alert)
    with store_for(args) as store:
        if alert_given and given(args, *CHANGE_OPTIONS) == ["--alert"]:
            job = store.set_alert(args.name, alert, owner=args.owner)
            return report_job(args, job, "changed")
        if alert_given:  # checked before anything else is written
            store.get(args.name, owner=args.owner)
        if what is None and args.args is not None:
            # --arg alone: new arguments for the procedure or action the job already runs
            current = store.get(args.name, owner=args.owner).what
            if current.kind == "sql":
                raise InvalidInput("--arg is only accepted with --call or --action, not with --sql")
            what = What(current.kind, current.target, tuple(args.args))
        change = JobChange(
            what=what,
            kind="once" if kind == "once" else None,
            every=args.every,
            cron=args.cron,
            tz=args.tz if args.tz is not None else UNSET,
            expr=args.expr,
            start=start if (args.start is not None or args.no_start) else UNSET,
            finish=finish if (args.finish is not None or args.no_finish) else UNSET,
            description=args.description,
            max_failures=args.max_failures,
            disabled=True if args.disabled else (False if args.enable else None),
        )
        job = store.change(args.name, change, owner=args.owner)
        if alert_given:
            job = store.set_alert(args.name, alert, owner=args.owner)
    return report_job(args, job, "changed")


def cmd_remove(args: argparse.Namespace) -> int:
    with store_for(args) as store:
        job = store.remove(args.name, owner=args.owner)
    if job.remove_requested:
        print_line(
            f"removal of job {job.name} is pending: its run is being aborted and the job is "
            "deleted when that run has ended (its run log is kept; the name is free only then)"
        )
    else:
        print_line(f"removed job {job.name} (its run log is kept)")
    return EXIT_OK


def report_job(
    args: argparse.Namespace, job: Job, done: str, *, now: datetime | None = None
) -> int:
    """One line: the job's status and next run; with ``now`` (submit), its first run,
    saying "now" when that is now."""
    if getattr(args, "json", False):
        print_json(job_dict(job))
        return EXIT_OK
    next_run = time_text(job.next_run, job.schedule.tz)
    if now is None:
        print_line(f"{done} job {job.name} (status {job.status.value}, next run {next_run})")
        return EXIT_OK
    if halted(job):
        first = f"no run while {job.status.value}"
    elif job.next_run is None:
        first = "no run scheduled"
    elif aware(job.next_run) <= now + FIRST_RUN_NOW:
        first = f"first run now, {next_run}"
    else:
        first = f"first run {next_run}"
    print_line(f"{done} job {job.name} (status {job.status.value}, {first})")
    return EXIT_OK
