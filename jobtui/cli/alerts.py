"""``jobtui alerts``: the database's default alert targets, and test alerts; the
``--alert`` option of ``submit`` and ``change`` (docs/cli.md, docs/operations.md)."""

from __future__ import annotations

import argparse
import json
import sys

from jobtui.cli.opening import store_for
from jobtui.cli.options import db_option
from jobtui.cli.output import print_line
from jobtui.cli.verbs import CommandLine
from jobtui.core import alerts
from jobtui.core.alerting import test_event
from jobtui.core.errors import InvalidInput
from jobtui.core.store import JobStore

DEFAULT = "default"  # --alert default: the job follows the database's default again


def add_alert_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--alert",
        metavar="TARGET",
        action="append",
        help="where to send an alert when a run fails, the job turns BROKEN or a run is "
        "lost: command:/absolute/path or a notification URL (apprise: json://, mailtos://, "
        "slack:// ...); repeat for several; 'none' for no alerts, 'default' for the "
        "database's default (`jobtui alerts`)",
    )


def alert_targets(values: list[str] | None) -> tuple[bool, list[str] | None]:
    """(given, targets) from --alert values: targets None means the database's default."""
    if not values:
        return False, None
    if [v.strip() for v in values] == [DEFAULT]:
        return True, None
    return True, alerts.parse(values)


def add_verbs(cli: CommandLine) -> None:
    p = cli.verb(
        "alerts",
        "the database's default alert targets: show (the default), set, clear, test",
        cmd_alerts,
    )
    p.add_argument("--json", action="store_true", help="print the targets as JSON")
    sub = p.add_subparsers(dest="alerts_action", metavar="ACTION")

    def action(name: str, help_text: str) -> argparse.ArgumentParser:
        a = sub.add_parser(name, help=help_text, description=help_text)
        db_option(a)
        a.add_argument("--json", action="store_true", help="print the result as JSON")
        return a

    action("show", "the default targets, secrets masked (the default action)")
    a = action("set", "set the default targets of jobs whose alert is not set (an admin)")
    a.add_argument("targets", metavar="TARGET", nargs="*")
    a.add_argument(
        "--file",
        metavar="FILE",
        help="read the targets from FILE, one a line (# comments), so that a URL's "
        "secret stays off the command line; - for stdin",
    )
    action("clear", "no default targets")
    a = action(
        "test",
        "send a test alert now, from this process: to the job's targets (NAME), the given "
        "--target, or the default; exit 1 if one failed",
    )
    a.add_argument("name", metavar="NAME", nargs="?")
    a.add_argument("--owner", metavar="ACCOUNT", help="the job's owner (default: you)")
    a.add_argument("--target", metavar="TARGET", action="append", help="send to this target")
    a.add_argument(
        "--timeout",
        metavar="SECONDS",
        type=float,
        default=alerts.DEFAULT_TIMEOUT,
        help=f"how long a target may take (default {alerts.DEFAULT_TIMEOUT:g})",
    )


def cmd_alerts(args: argparse.Namespace) -> int:
    with store_for(args) as store:
        return _alerts(args, store)


def _alerts(args: argparse.Namespace, store: JobStore) -> int:
    action = args.alerts_action or "show"
    as_json = bool(getattr(args, "json", False))
    if action == "test":
        return _test(args, store, as_json)
    if action == "set":
        given = list(args.targets) + (_read_targets(args.file) if args.file else [])
        if not given:
            raise InvalidInput("no alert target given: give TARGET... or --file FILE")
        targets = store.set_alert_default(alerts.parse(given))
    elif action == "clear":
        targets = store.set_alert_default([])
    else:
        targets = store.alert_default()
    shown = [alerts.mask(t) for t in targets]
    if as_json:
        print_line(json.dumps({"default": shown}, indent=2))
    elif shown:
        print_line("default alert targets:")
        for t in shown:
            print_line(f"  {t}")
    else:
        print_line("no default alert targets (set them with `jobtui alerts set TARGET...`)")
    return 0


def _test(args: argparse.Namespace, store: JobStore, as_json: bool) -> int:
    if not 0.1 <= args.timeout <= 3600:
        raise InvalidInput(f"invalid --timeout {args.timeout:g}: 0.1 to 3600 seconds")
    job = store.get(args.name, owner=args.owner) if args.name else None
    if args.target:
        targets = alerts.parse(args.target)
    elif job is not None:
        own = store.alert_of(job.name, owner=job.owner)
        targets = own if own is not None else store.alert_default()
    else:
        targets = store.alert_default()
    if not targets:
        raise InvalidInput(
            "no alert target to test: give --target TARGET, or set the job's "
            "(--alert) or the default (`jobtui alerts set`)"
        )
    event = test_event(job, store.schema_name)
    results = alerts.send(event, targets, timeout=args.timeout)
    if as_json:
        print_line(json.dumps({"results": results}, indent=2))
    else:
        for target, outcome in results.items():
            print_line(f"{target}: {outcome}")
    return 0 if all(v == "ok" for v in results.values()) else 1


def _read_targets(path: str) -> list[str]:
    try:
        if path == "-":
            text = sys.stdin.read(1_000_000)
        else:
            with open(path, encoding="utf-8") as f:
                text = f.read(1_000_000)
    except OSError as exc:
        raise InvalidInput(f"cannot read --file {path!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InvalidInput(f"cannot read --file {path!r}: not UTF-8 text") from None
    return [
        line.strip()
        for line in text.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
