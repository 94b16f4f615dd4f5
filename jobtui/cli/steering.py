"""Steering jobs: ``pause``, ``resume``, ``enable``, ``disable``, ``abort``, ``run-now``
and ``broken``."""

from __future__ import annotations

import argparse

from jobtui.cli.exits import EXIT_OK
from jobtui.cli.opening import store_for
from jobtui.cli.options import HEARTBEAT_TIMEOUT, json_option, owner_option, when
from jobtui.cli.output import job_dict, print_json, print_line, time_text
from jobtui.cli.verbs import CommandLine
from jobtui.core.errors import InvalidInput

STEERING = {
    # verb: (store method, what the line says was done)
    "pause": ("pause", "paused"),
    "resume": ("resume", "resumed"),
    "enable": ("enable", "enabled"),
    "disable": ("disable", "disabled"),
    "abort": ("abort", "aborted"),
    "run-now": ("run_now", "asked a runner to run"),
}


def add_verbs(cli: CommandLine) -> None:
    for name in STEERING:
        help_text = f"{name} a job" if name != "run-now" else "run a job once, now"
        p = cli.verb(name, help_text, cmd_steer)
        p.add_argument("name", metavar="NAME")
        owner_option(p)
        json_option(p, "the job")

    p = cli.verb("broken", "mark a job broken (--on) or clear it (--off)", cmd_broken)
    p.add_argument("name", metavar="NAME")
    owner_option(p)
    onoff = p.add_mutually_exclusive_group(required=True)
    onoff.add_argument("--on", action="store_true", help="mark broken: no runs until cleared")
    onoff.add_argument("--off", action="store_true", help="clear broken and reset failures")
    p.add_argument("--next", metavar="WHEN", help="with --off: the next run time (ISO 8601)")
    json_option(p, "the job")


def cmd_steer(args: argparse.Namespace) -> int:
    method, done = STEERING[args.command]
    with store_for(args) as store:
        job = getattr(store, method)(args.name, owner=args.owner)
        idle = args.command == "run-now" and not any(
            r.alive(store.now(), HEARTBEAT_TIMEOUT) and not r.stopping for r in store.runners()
        )
    if args.json:
        print_json(job_dict(job))
        return EXIT_OK
    line = f"{done} job {job.name}"
    if args.command == "run-now":
        line += " now"
    line += f" (status {job.status.value})"
    if args.command == "abort" and job.abort_requested:
        line += "; the run in flight is being stopped"
    if args.command in ("pause", "disable") and job.running:
        line += "; the run in flight finishes, then no new run starts"
    if idle:
        line += "; no runner is alive: start `jobtui worker` or `jobtui console --runners N`"
    print_line(line)
    return EXIT_OK


def cmd_broken(args: argparse.Namespace) -> int:
    next_run = when(args.next, "--next")
    if next_run is not None and args.on:
        raise InvalidInput("--next is only accepted with --off")
    with store_for(args) as store:
        job = store.broken(args.name, bool(args.on), next_run=next_run, owner=args.owner)
    if args.json:
        print_json(job_dict(job))
    elif args.on:
        print_line(f"marked job {job.name} broken (status {job.status.value})")
    else:
        print_line(
            f"cleared broken on job {job.name} (status {job.status.value}, "
            f"next run {time_text(job.next_run, job.schedule.tz)})"
        )
    return EXIT_OK
