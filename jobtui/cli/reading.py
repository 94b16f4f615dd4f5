"""Reading jobs and runs: ``list``, ``show``, ``log``."""

from __future__ import annotations

import argparse
from typing import Any

from jobtui.cli.exits import EXIT_OK
from jobtui.cli.opening import store_for
from jobtui.cli.options import json_option, owner_option, whole
from jobtui.cli.output import (
    duration,
    job_dict,
    next_run_text,
    plain,
    print_json,
    print_line,
    table,
    time_text,
)
from jobtui.cli.verbs import CommandLine
from jobtui.core import alerts
from jobtui.core.model import Job, Run
from jobtui.core.showtime import zone_of
from jobtui.core.store.expressions import why_no_runs
from jobtui.core.timeutil import iso
from jobtui.core.transitions import status_marks

UPCOMING = 5
DEFAULT_LOG_LIMIT = 20


def add_verbs(cli: CommandLine) -> None:
    p = cli.verb("list", "list jobs", cmd_list)
    p.add_argument("--all", action="store_true", help="every owner's jobs (DBA_JOBS)")
    json_option(p, "the jobs")

    p = cli.verb("show", "show one job and its next 5 run times", cmd_show)
    p.add_argument("name", metavar="NAME")
    owner_option(p)
    json_option(p, "the job")

    p = cli.verb("log", "the run log, latest first", cmd_log)
    p.add_argument("name", metavar="NAME", nargs="?", help="only this job's runs")
    p.add_argument(
        "--limit",
        metavar="N",
        type=whole("--limit", 1, 100_000),
        default=DEFAULT_LOG_LIMIT,
        help=f"at most N runs (default {DEFAULT_LOG_LIMIT})",
    )
    p.add_argument(
        "--outcome",
        metavar="O",
        help="only runs with this outcome: running, ok, failed, aborted, skipped, lost",
    )
    p.add_argument("--all", action="store_true", help="every owner's runs")
    owner_option(p)
    json_option(p, "the runs")


def cmd_list(args: argparse.Namespace) -> int:
    with store_for(args) as store:
        if args.all:
            store.require_all()
        jobs = store.list_jobs(all_owners=args.all)
    if args.json:
        print_json([job_dict(j) for j in jobs])
        return EXIT_OK
    if not jobs:
        print_line("no jobs (define one with `jobtui submit NAME ...`)")
        return EXIT_OK
    # each time in the job's zone (--tz), else UTC, and labelled with it
    headers = ["NAME", "STATUS", "SCHEDULE", "NEXT RUN", "LAST RUN", "OUTCOME"]
    headers += ["FAILURES", "CYCLES"]
    if args.all:
        headers.insert(0, "OWNER")
    print_line(table(headers, [_list_row(j, args.all) for j in jobs]))
    marked = [(j, marks) for j in jobs if (marks := status_marks(j))]
    if marked:
        # after the table, as the problems below: STATUS keeps its one documented word
        print_line()
        print_line(f"{len(marked)} job(s) with more than their STATUS shows:")
        for j, marks in marked:
            who = f"{j.owner} " if args.all else ""
            print_line(f"  {who}{j.name}: {', '.join(marks)}")
    troubled = [j for j in jobs if j.problem]
    if troubled:
        # after the table: the documented columns stay as they are
        print_line()
        print_line(
            f"{len(troubled)} job(s) with a problem, shown BROKEN and never run until fixed:"
        )
        for j in troubled:
            who = f"{j.owner} " if args.all else ""
            print_line(f"  {who}{j.name}: {j.problem}")
    return EXIT_OK


def _list_row(j: Job, with_owner: bool) -> list[str]:
    row = [
        j.name,
        j.status.value,
        j.schedule.describe(),
        next_run_text(j),
        time_text(j.last_cycle_start or j.last_run, j.schedule.tz),
        "running" if j.running else (j.last_outcome.value if j.last_outcome else "-"),
        f"{j.failures}/{j.max_failures}",
        str(j.cycles),
    ]
    if with_owner:
        row.insert(0, j.owner)
    return row


def cmd_show(args: argparse.Namespace) -> int:
    with store_for(args) as store:
        job = store.get(args.name, owner=args.owner)
        upcoming = store.preview(job, UPCOMING)
        alert = store.alert_of(args.name, owner=args.owner)  # (a bad row shows another name)
    if args.json:
        data = job_dict(job)
        data["upcoming"] = [iso(t) for t in upcoming]
        data["alert"] = None if alert is None else [alerts.mask(t) for t in alert]
        print_json(data)
        return EXIT_OK
    data = job_dict(job)
    data["alert"] = (
        "the database's default" if alert is None else (" ".join(map(alerts.mask, alert)) or "none")
    )
    sched = data.pop("schedule")
    what = data.pop("what")
    fields: list[tuple[str, Any]] = [
        ("name", job.name),
        ("owner", job.owner),
        ("id", job.id),
        ("description", job.description or "-"),
        ("what", job.what.describe()),
        ("schedule", sched["text"]),
    ]
    fields += [(f"schedule.{k}", v) for k, v in sched.items() if k != "text"]
    fields += [(f"what.{k}", v) for k, v in what.items()]
    shown = {"name", "owner", "id", "description"}
    fields += [(k, v) for k, v in data.items() if k not in shown]
    # the next run as people read it: none while halted (the JSON keeps the stored one)
    fields = [(k, next_run_text(job) if k == "next_run" else v) for k, v in fields]
    width = max(len(k) for k, _ in fields)
    for key, value in fields:
        print_line(f"{key.ljust(width)}  {plain(value)}")
    # the same words as the console's details and edit form (expressions.why_no_runs)
    none = why_no_runs(job) + (", see above" if job.problem else "")
    zone = job.schedule.tz if zone_of(job.schedule.tz) is not None else None
    print_line(f"upcoming ({zone or 'UTC'}):" if upcoming else f"upcoming: none ({none})")
    for t in upcoming:
        print_line(f"  {time_text(t, zone)}")
    return EXIT_OK


def cmd_log(args: argparse.Namespace) -> int:
    with store_for(args) as store:
        if args.all:
            store.require_all()
        runs = store.runs(
            args.name,
            limit=args.limit,
            outcome=args.outcome,
            all_owners=args.all,
            owner=args.owner,
        )
    if args.json:
        print_json([r.to_dict() for r in runs])
        return EXIT_OK
    if not runs:
        print_line("no runs")
        return EXIT_OK
    headers = ["SCHEDULED (UTC)", "JOB", "OUTCOME", "STARTED (UTC)", "DURATION", "RUNNER", "ERROR"]
    if args.all:
        headers.insert(1, "OWNER")
    rows = [_log_row(r, args.all) for r in runs]
    print_line(table(headers, rows))
    return EXIT_OK


def _log_row(run: Run, with_owner: bool) -> list[str]:
    outcome = run.outcome.value
    if run.skipped:  # a skipped row counts the missed slots; another row coalesced them
        outcome += (
            f" ({run.skipped} slots)" if outcome == "skipped" else f" (+{run.skipped} skipped)"
        )
    if run.manual:
        outcome += " (run-now)"
    error = " ".join((run.error or "").split())
    row = [
        time_text(run.scheduled_for),
        run.job,
        outcome,
        time_text(run.started),
        duration(run.duration),
        run.runner or "-",
        (error[:77] + "...") if len(error) > 80 else (error or "-"),
    ]
    if with_owner:
        row.insert(1, run.owner)
    return row
