"""``jobtui events``: the server's Event Scheduler events (list, enable, disable, adopt).

The work is jobtui.core.events'. docs/events.md, docs/cli.md.
"""

from __future__ import annotations

import argparse
from typing import Any

from sqlalchemy.engine import make_url

from jobtui.cli.exits import EXIT_OK
from jobtui.cli.opening import store_for
from jobtui.cli.options import db_option
from jobtui.cli.output import job_dict, print_json, print_line, table, time_text
from jobtui.cli.verbs import CommandLine
from jobtui.core import events
from jobtui.core.backends.registry import backend_class
from jobtui.core.db import mask_url, resolve_url
from jobtui.core.errors import DatabaseUnavailable, InvalidInput
from jobtui.core.store import JobStore, open_store

BODY_WIDTH = 60
SCHEDULER_STATES = {
    "ON": "event_scheduler is ON: the server runs its enabled events",
    "OFF": "event_scheduler is OFF: the server runs no event "
    "(SET GLOBAL event_scheduler = ON starts it)",
    "DISABLED": "event_scheduler is DISABLED by the server's options: no event runs until "
    "the server is restarted without --event-scheduler=DISABLED",
}


def add_verbs(cli: CommandLine) -> None:
    """Add ``events`` and its actions (each takes ``--db`` too)."""
    p = cli.verb(
        "events",
        "the server's own Event Scheduler events (MySQL/MariaDB): list (the default), "
        "enable, disable, adopt as a jobtui job",
        cmd_events,
    )
    _list_options(p, suppress=False)
    actions = p.add_subparsers(dest="events_action", metavar="ACTION")

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        a = actions.add_parser(name, help=help_text, description=help_text)
        db_option(a)
        return a

    _list_options(action("list", "the events this account sees (the default)"), suppress=True)
    for name, what in (("enable", "ENABLE"), ("disable", "DISABLE")):
        a = action(name, f"ALTER EVENT SCHEMA.NAME {what} (its definer kept)")
        a.add_argument("event", metavar="SCHEMA.NAME")
        _json(a, "the event after", suppress=True)
    a = action(
        "adopt",
        "make the event a jobtui job (same schedule and body, owned by its definer) and "
        "disable the event",
    )
    a.add_argument("event", metavar="SCHEMA.NAME")
    a.add_argument(
        "--keep-event",
        action="store_true",
        help="leave the event as it is and create the job DISABLED (enable it once the "
        "event is disabled or dropped)",
    )
    _json(a, "the job, the event and the notes", suppress=True)


def _json(parser: argparse.ArgumentParser, what: str, *, suppress: bool) -> None:
    # An action's options default to SUPPRESS, so that `jobtui events --json list` keeps it.
    parser.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS if suppress else False,
        help=f"print {what} as JSON",
    )


def _list_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    parser.add_argument(
        "--schema",
        metavar="SCHEMA",
        default=argparse.SUPPRESS if suppress else None,
        help="only the events of this schema",
    )
    _json(parser, "the scheduler's state and the events", suppress=suppress)


def _open(args: argparse.Namespace, *, read_only: bool) -> JobStore:
    """The store, without creating jobtui's tables: events need none (adopt opens the
    store as every defining verb does)."""
    url = resolve_url(getattr(args, "db", None))
    try:
        return open_store(url, read_only=read_only, init=False)
    except OSError as exc:
        raise DatabaseUnavailable(
            f"database unavailable: cannot open {mask_url(url)}: {exc.strerror or exc}"
        ) from None


def _require_events(args: argparse.Namespace) -> None:
    """Refuse before opening anything (no SQLite file made) where there are no events."""
    backend = backend_class(make_url(resolve_url(getattr(args, "db", None))).get_backend_name())
    if not backend.has_events:
        raise InvalidInput(backend.no_events)


def cmd_events(args: argparse.Namespace) -> int:
    action = args.events_action or "list"
    if action != "list":
        events.split_name(args.event)  # bad input is refused before anything is opened
    if action != "list" and args.schema is not None:
        raise InvalidInput(
            f"--schema is only accepted with `jobtui events list`, not with {action} "
            "(which takes SCHEMA.NAME)"
        )
    if args.schema is not None:
        events.check_schema(args.schema)
    _require_events(args)
    if action == "adopt":
        with store_for(args) as store:
            adoption = events.adopt(store, args.event, keep_event=args.keep_event)
        return _report_adoption(args, adoption)
    store = _open(args, read_only=action == "list")
    try:
        if action == "list":
            listed = events.list_events(store, schema=args.schema)
        else:
            event = events.set_enabled(store, args.event, action == "enable")
    finally:
        store.close()
    if action == "list":
        return _report_list(args, listed)
    if args.json:
        print_json(event.to_dict())
    else:
        print_line(
            f"{action}d event {event.full_name} (status {event.status}, definer "
            f"{event.definer} kept, next run {time_text(event.next_run)})"
        )
    return EXIT_OK


def _one_line(text: str, width: int = BODY_WIDTH) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def _report_list(args: argparse.Namespace, listed: events.EventList) -> int:
    if args.json:
        print_json(
            {
                "event_scheduler": listed.scheduler,
                "events": [e.to_dict() for e in listed.events],
            }
        )
        return EXIT_OK
    print_line(SCHEDULER_STATES.get(listed.scheduler, f"event_scheduler is {listed.scheduler}"))
    if not listed.events:
        where = f" in schema {args.schema}" if args.schema else ""
        print_line(
            f"no events{where} this account sees (it sees those of the schemas where it has "
            "the EVENT privilege)"
        )
        return EXIT_OK
    headers = [
        "EVENT",
        "STATUS",
        "SCHEDULE",
        "NEXT RUN (UTC)",
        "LAST RUN (UTC)",
        "ON COMPLETION",
        "DEFINER",
        "BODY",
    ]
    rows = [
        [
            e.full_name,
            e.status,
            e.schedule,
            time_text(e.next_run),
            time_text(e.last_executed),
            e.on_completion,
            e.definer,
            _one_line(e.body),
        ]
        for e in listed.events
    ]
    print_line(table(headers, rows))
    for e in listed.events:
        if e.overlap_warning:
            print_line(
                f"warning: {e.overlap_warning}; `jobtui events adopt {e.full_name}` gives it "
                "jobtui's overlap protection"
            )
    return EXIT_OK


def _report_adoption(args: argparse.Namespace, adoption: events.Adoption) -> int:
    job = adoption.job
    if args.json:
        data: dict[str, Any] = {
            "job": job_dict(job),
            "event": adoption.event.to_dict(),
            "notes": list(adoption.notes),
        }
        print_json(data)
        return EXIT_OK
    print_line(
        f"adopted event {adoption.event.full_name} as job {job.name} ({job.what.describe()}, "
        f"{job.schedule.describe()}; status {job.status.value}, next run "
        f"{time_text(job.next_run)})"
    )
    for note in adoption.notes:
        print_line(f"note: {note}")
    return EXIT_OK
