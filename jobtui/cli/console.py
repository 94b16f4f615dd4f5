"""The verbs that start the operator console: ``console`` (the default verb),
``serve`` (in a browser, jobtui.cli.serve) and ``demo``.

The console (Textual) is imported inside the verbs, so that the other verbs never
load it.
"""

from __future__ import annotations

import argparse
from typing import Any

from jobtui.cli import metrics, profiles, serve
from jobtui.cli.exits import EXIT_OK, missing
from jobtui.cli.opening import require_runner_account, store_for
from jobtui.cli.options import retention_of, retention_options, seconds, whole
from jobtui.cli.verbs import CommandLine
from jobtui.core.db import resolve_url
from jobtui.core.errors import DatabaseUnavailable, InvalidInput
from jobtui.core.store import JobStore, open_store


def add_verbs(cli: CommandLine) -> None:
    p = cli.verb("console", "the operator console (the default verb)", cmd_console)
    console_options(p, default_runners=0)
    metrics.add_options(p)

    p = cli.verb(
        "serve", "the operator console in a browser (textual-serve), on loopback", cmd_serve
    )
    p.description = (
        "Serve the operator console to a web browser: each tab that opens the page runs its "
        "own `jobtui console` on the same database. Listens on 127.0.0.1 unless "
        "--allow-remote is given (the page has no login: reach it through an SSH tunnel or "
        "an authenticating reverse proxy)."
    )
    console_options(p, default_runners=0)
    serve.add_options(p)

    p = cli.verb("demo", "create a demo SQLite database and open the console on it", cmd_demo)
    console_options(p, default_runners=4, demo=True)
    p.add_argument(
        "--path", metavar="FILE", help="the demo database file (default: in the data directory)"
    )


def console_options(
    parser: argparse.ArgumentParser, *, default_runners: int, demo: bool = False
) -> None:
    parser.add_argument(
        "--runners",
        metavar="N",
        type=whole("--runners", 0, 256),
        default=default_runners,
        help=f"runner threads hosted by the console (default {default_runners})",
    )
    retention_options(parser)
    if demo:
        return
    parser.add_argument("--read-only", action="store_true", help="watch only: no changes")
    parser.add_argument(
        "--refresh",
        metavar="SECONDS",
        type=seconds("--refresh", 0.1, 3600),
        default=1.0,
        help="refresh interval (default 1)",
    )
    parser.add_argument("--all", action="store_true", help="every owner's jobs")


def _run_console(store: JobStore, **options: Any) -> int:
    try:
        from jobtui.console.app import make_app
    except ImportError as exc:
        raise missing("console", "jobtui.console.app", exc) from None
    app = make_app(store, **options)
    app.run()
    code = getattr(app, "return_code", None)
    return int(code) if isinstance(code, int) else EXIT_OK


def cmd_console(args: argparse.Namespace) -> int:
    if args.read_only and args.runners:
        raise InvalidInput("--read-only watches only: it cannot host runners (--runners 0)")
    with store_for(args, read_only=args.read_only) as store:
        if args.all:
            store.require_all()
        if args.runners:
            require_runner_account(store, "console --runners")
        store.retention = retention_of(args)  # the pool the console hosts prunes with it
        served = metrics.start(args, store)
        try:
            return _run_console(
                store,
                runners=args.runners,
                read_only=args.read_only,
                refresh=args.refresh,
                all_owners=args.all,
                metrics=served,
                theme=getattr(args, "theme", None),
            )
        finally:
            if served is not None:
                served.close()


def console_argv(args: argparse.Namespace) -> list[str]:
    """The command each of ``serve``'s browser tabs runs: this Python's ``jobtui console``
    with the console options of ``args`` (no database URL: serve hands that on in the
    environment)."""

    def keep(value: float | None) -> str:
        return "off" if value is None else repr(value)

    options = ["--runners", str(args.runners), "--refresh", repr(args.refresh)]
    options += ["--keep-runs", keep(args.keep_runs), "--keep-days", keep(args.keep_days)]
    options += ["--keep-error-days", keep(args.keep_error_days)]
    options += ["--read-only"] * args.read_only + ["--all"] * args.all
    options += profiles.profile_argv(args)  # the tabs' theme
    return serve.tab_command(options)


def cmd_serve(args: argparse.Namespace) -> int:
    if args.read_only and args.runners:
        raise InvalidInput("--read-only watches only: it cannot host runners (--runners 0)")
    public_url = serve.check_listen(
        args.host, args.port, allow_remote=args.allow_remote, public_url=args.public_url
    )
    url = resolve_url(getattr(args, "db", None))
    # Refuse here what each tab's console would refuse, before anyone opens the page.
    with store_for(args, read_only=args.read_only) as store:
        if args.all:
            store.require_all()
        if args.runners:
            require_runner_account(store, "serve --runners")
        retention_of(args)
    return serve.serve(
        url, console_argv(args), host=args.host, port=args.port, public_url=public_url
    )


def cmd_demo(args: argparse.Namespace) -> int:
    if getattr(args, "db", None):
        raise InvalidInput("demo makes its own SQLite database: use --path FILE, not --db")
    try:
        from jobtui.console.demo import create_demo
    except ImportError as exc:
        raise missing("console", "jobtui.console.demo", exc) from None
    try:
        url = create_demo(args.path)
    except OSError as exc:
        raise DatabaseUnavailable(
            f"cannot create the demo database {args.path or ''}: {exc.strerror or exc}"
        ) from None
    store = open_store(url)
    store.retention = retention_of(args)
    try:
        return _run_console(store, runners=args.runners, theme=getattr(args, "theme", None))
    finally:
        store.close()
