# PYTHON_ARGCOMPLETE_OK  (argcomplete: this console script answers completion requests)
"""The ``jobtui`` command line: thin verbs over ``jobtui.core.store.JobStore``.

Every verb opens the store, does one thing and prints either a human line or
table, or (``--json``) the stable shapes of ``Job.to_dict`` / ``Run.to_dict``.
Errors are one line on stderr, ``jobtui: error: <message>``, with the exit
code of the error (2 bad input, unknown job or refused; 1 database
unreachable or failing; 130 on Ctrl-C). docs/cli.md documents every verb,
option, field and exit code.

The runner and the console are imported lazily inside the verbs that need
them, so list/show/submit never load Textual.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any, NoReturn

from jobtui import (
    __version__,
    cli_alerts,
    cli_completion,
    cli_config,
    cli_doctor,
    cli_events,
    cli_metrics,
    cli_serve,
)
from jobtui.core import alerts, schema
from jobtui.core.db import ENV_VAR, mask_text, mask_url, resolve_url
from jobtui.core.dberrors import translate_db_error
from jobtui.core.errors import DatabaseUnavailable, InvalidInput, JobtuiError
from jobtui.core.expressions import why_no_runs
from jobtui.core.jobdefs import UNSET
from jobtui.core.model import Job, Run, What, check_job_name
from jobtui.core.showtime import halted, show_time, shown_next_run, zone_of
from jobtui.core.store import JobStore, RunnerInfo, open_store
from jobtui.core.timeutil import aware, iso, parse_when
from jobtui.core.transitions import status_marks

PROG = "jobtui"
DEBUG_VAR = "JOBTUI_DEBUG"
HEARTBEAT_TIMEOUT = 15.0  # seconds; the runner pool's default: older heartbeats are dead
UPCOMING = 5
FIRST_RUN_NOW = timedelta(seconds=1)  # submit says "first run now" within this of now
DEFAULT_LOG_LIMIT = 20

EXIT_OK = 0
EXIT_DB = 1
EXIT_UNHEALTHY = 1  # `runners --check`: no live runner, or jobs overdue
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports it


class UsageError(Exception):
    """A command-line usage error (argparse's), reported in one line with exit 2."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line that names the help to read."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


# ---------------------------------------------------------------------- argument types


def _whole(label: str, minimum: int, maximum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(
                f"invalid {label} {text!r}: expected a whole number from {minimum} to {maximum}"
            )
        return value

    return parse


def _seconds(label: str, minimum: float, maximum: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not minimum <= value <= maximum:  # NaN fails both comparisons
            raise argparse.ArgumentTypeError(
                f"invalid {label} {text!r}: expected a number of seconds from {minimum:g} "
                f"to {maximum:g}"
            )
        return value

    return parse


def _owner_share(text: str) -> float:
    """``--owner-share``: a fraction above 0 and at most 1."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 1:  # NaN fails both comparisons
        raise argparse.ArgumentTypeError(
            f"invalid --owner-share {text!r}: expected a fraction of the threads above 0 and at "
            "most 1, e.g. 0.5 (one owner's jobs then hold at most half of them, at least one)"
        )
    return value


def _keep_runs(text: str) -> int | None:
    """``--keep-runs``: a whole number 0-100000000, or ``off`` (no count limit)."""
    from jobtui.core.retention import MAX_KEEP_RUNS

    if text.strip().lower() == "off":
        return None
    return _whole("--keep-runs", 0, MAX_KEEP_RUNS)(text)


def _keep_days(label: str) -> Callable[[str], float | None]:
    """``--keep-days``/``--keep-error-days``: days above 0 (fractions allowed), or ``off``."""
    from jobtui.core.retention import MAX_KEEP_DAYS

    def parse(text: str) -> float | None:
        if text.strip().lower() == "off":
            return None
        try:
            value = float(text)
        except ValueError:
            value = float("nan")
        if not 0 < value <= MAX_KEEP_DAYS:  # NaN fails too
            raise argparse.ArgumentTypeError(
                f"invalid {label} {text!r}: expected a number of days above 0, at most "
                f"{MAX_KEEP_DAYS:g}, or off"
            )
        return value

    return parse


def _retention_options(parser: argparse.ArgumentParser) -> None:
    from jobtui.core.retention import DEFAULT_RETENTION as d

    group = parser.add_argument_group("run-log retention (pruned by the runners)")
    group.add_argument(
        "--keep-runs",
        metavar="N",
        type=_keep_runs,
        default=d.keep_runs,
        help=f"newest successful runs kept per job, and as many error runs (default "
        f"{d.keep_runs}; off: no count limit)",
    )
    group.add_argument(
        "--keep-days",
        metavar="DAYS",
        type=_keep_days("--keep-days"),
        default=d.keep_days,
        help=f"successful runs older than this go (default {d.keep_days:g}; off: no age limit)",
    )
    group.add_argument(
        "--keep-error-days",
        metavar="DAYS",
        type=_keep_days("--keep-error-days"),
        default=d.keep_error_days,
        help=f"failed, aborted and lost runs older than this go (default "
        f"{d.keep_error_days:g}; never less than --keep-days)",
    )


# ---------------------------------------------------------------------- the parser

VERBS = (
    "init",
    "upgrade",
    "doctor",
    "submit",
    "change",
    "remove",
    "list",
    "show",
    "log",
    "pause",
    "resume",
    "enable",
    "disable",
    "abort",
    "run-now",
    "broken",
    "export",
    "import",
    "runners",
    "worker",
    "run",
    "console",
    "demo",
    "serve",
    "prune",
    "grant",
    "events",
    "completion",
    "profiles",
)

STEERING = {
    # verb: (store method, what the line says was done)
    "pause": ("pause", "paused"),
    "resume": ("resume", "resumed"),
    "enable": ("enable", "enabled"),
    "disable": ("disable", "disabled"),
    "abort": ("abort", "aborted"),
    "run-now": ("run_now", "asked a runner to run"),
}


def _owner_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--owner",
        metavar="OWNER",
        type=_owner_text,
        help="another owner's job (an admin's; e.g. alice@%%, as `list --all` shows it); "
        "default: the connecting account's own",
    )


def _owner_text(text: str) -> str:
    if not text or len(text) > 190 or not text.isprintable():
        raise argparse.ArgumentTypeError(
            f"invalid --owner {text!r}: expected an owner as `jobtui list --all` shows it "
            "(1-190 printable characters, e.g. alice@%)"
        )
    return text


def _db_option(parser: argparse.ArgumentParser, *, top: bool) -> None:
    # On the verb the default is SUPPRESS so that `jobtui --db X list` keeps X.
    parser.add_argument(
        "--db",
        metavar="URL",
        default=None if top else argparse.SUPPRESS,
        help=f"database URL (sqlite:///PATH, a bare file path, or "
        f"mysql+pymysql://USER@HOST:PORT/DB); default ${ENV_VAR}, else the SQLite file in "
        "the user's data directory",
    )


def _json_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON")


def _definition_options(parser: argparse.ArgumentParser, *, change: bool) -> None:
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
    when = parser.add_argument_group(
        "schedule" + (" (give one to replace it)" if change else " (give exactly one)")
    )
    when.add_argument("--every", metavar="SECONDS", help="every N seconds (at least 0.1)")
    when.add_argument("--cron", metavar="EXPR", help="cron: 5 fields, or 6 with seconds last")
    when.add_argument("--tz", metavar="ZONE", help="IANA time zone of --cron (default UTC)")
    when.add_argument("--expr", metavar="SQL", help="a SQL date expression (Oracle's INTERVAL)")
    when.add_argument("--once", action="store_true", help="run once")
    when.add_argument("--start", metavar="WHEN", help="window start, ISO 8601 (no offset = UTC)")
    when.add_argument("--finish", metavar="WHEN", help="window end, ISO 8601 (no offset = UTC)")
    if change:
        when.add_argument("--no-start", action="store_true", help="clear the window start")
        when.add_argument("--no-finish", action="store_true", help="clear the window end")
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
    cli_alerts.add_alert_option(other)
    _json_option(parser, "the job")


def build_parser() -> argparse.ArgumentParser:
    """The whole command line (docs/cli.md mirrors it)."""
    parser = _Parser(
        prog=PROG,
        description="jobtui: a database job scheduler (DBMS_JOB for MySQL/MariaDB and "
        "SQLite) with a live operator console. With no verb it starts the console.",
        epilog="Exit codes: 0 ok; 2 bad input, unknown job or refused; 1 database "
        "unreachable or failing; 3 `run`: the job was aborted or removed; 130 interrupted; "
        "141 stdout closed. Database: --db, else $JOBTUI_DB, else the profile's url (--profile, "
        "$JOBTUI_PROFILE or the config file's default), else the default SQLite file. "
        "`jobtui VERB --help` shows a verb's options; the full manual (docs/cli.md, "
        "docs/console.md) is in jobtui's source tree, not in an installed package.",
    )
    _db_option(parser, top=True)
    cli_config.add_profile_option(parser, top=True)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="VERB")

    def verb(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        _db_option(p, top=False)
        cli_config.add_profile_option(p, top=False)
        return p

    verb("init", "create or upgrade the tables (applies the schema migrations)")
    verb("upgrade", "the same as init: apply the schema migrations this jobtui brings")

    p = verb("submit", "define a new job")
    p.add_argument("name", metavar="NAME")
    _definition_options(p, change=False)

    p = verb("change", "alter a job: only what is given changes")
    p.add_argument("name", metavar="NAME")
    _owner_option(p)
    _definition_options(p, change=True)

    p = verb("remove", "remove a job (a run in flight is aborted first; its log stays)")
    p.add_argument("name", metavar="NAME")
    _owner_option(p)

    p = verb("list", "list jobs")
    p.add_argument("--all", action="store_true", help="every owner's jobs (DBA_JOBS)")
    _json_option(p, "the jobs")

    p = verb("show", "show one job and its next 5 run times")
    p.add_argument("name", metavar="NAME")
    _owner_option(p)
    _json_option(p, "the job")

    p = verb("log", "the run log, latest first")
    p.add_argument("name", metavar="NAME", nargs="?", help="only this job's runs")
    p.add_argument(
        "--limit",
        metavar="N",
        type=_whole("--limit", 1, 100_000),
        default=DEFAULT_LOG_LIMIT,
        help=f"at most N runs (default {DEFAULT_LOG_LIMIT})",
    )
    p.add_argument(
        "--outcome",
        metavar="O",
        help="only runs with this outcome: running, ok, failed, aborted, skipped, lost",
    )
    p.add_argument("--all", action="store_true", help="every owner's runs")
    _owner_option(p)
    _json_option(p, "the runs")

    for name in STEERING:
        p = verb(name, f"{name} a job" if name != "run-now" else "run a job once, now")
        p.add_argument("name", metavar="NAME")
        _owner_option(p)
        _json_option(p, "the job")

    p = verb("broken", "mark a job broken (--on) or clear it (--off)")
    p.add_argument("name", metavar="NAME")
    _owner_option(p)
    onoff = p.add_mutually_exclusive_group(required=True)
    onoff.add_argument("--on", action="store_true", help="mark broken: no runs until cleared")
    onoff.add_argument("--off", action="store_true", help="clear broken and reset failures")
    p.add_argument("--next", metavar="WHEN", help="with --off: the next run time (ISO 8601)")
    _json_option(p, "the job")

    p = verb("export", "print job definitions (for import)")
    p.add_argument(
        "--format",
        choices=("json", "yaml", "sql"),
        default="json",
        help="output format (default json); sql: the CALLs that recreate the jobs",
    )
    p.add_argument("--all", action="store_true", help="every owner's jobs")

    p = verb("import", "create or change jobs from an export file")
    p.add_argument("file", metavar="FILE", help="a JSON or YAML export file, or - for stdin")

    p = verb("runners", "the registered runners and their heartbeat age")
    _json_option(p, "the runners")
    p.add_argument(
        "--check",
        action="store_true",
        help="a health check: exit 1 when no live runner serves the database or a job is "
        "overdue past --overdue (0 when healthy)",
    )
    p.add_argument(
        "--overdue",
        metavar="SECONDS",
        type=_seconds("--overdue", 0, 31_536_000),
        default=None,
        help="with --check: how late a due job may be (default 300)",
    )

    p = verb("worker", "run a headless runner pool until SIGTERM or Ctrl-C")
    p.add_argument(
        "--threads",
        metavar="N",
        type=_whole("--threads", 1, 256),
        default=4,
        help="runner threads (default 4)",
    )
    p.add_argument(
        "--poll",
        metavar="SECONDS",
        type=_seconds("--poll", 0.05, 3600),
        default=1.0,
        help="longest sleep between looks at the job table (default 1)",
    )
    p.add_argument("--name", metavar="NAME", help="the runner's name in the runner table")
    p.add_argument(
        "--grace",
        metavar="SECONDS",
        type=_seconds("--grace", 0, 86_400),
        default=10.0,
        help="on stop, how long runs may finish before they are aborted (default 10)",
    )
    p.add_argument(
        "--heartbeat-timeout",
        metavar="SECONDS",
        type=_seconds("--heartbeat-timeout", 1, 3600),
        default=15.0,
        help="a runner silent this long is taken for dead: its unfinished runs become lost "
        "and its jobs run elsewhere (default 15, as for the console's runners)",
    )
    p.add_argument(
        "--lead",
        metavar="SECONDS",
        type=_seconds("--lead", 0, 5),
        default=0.25,
        help="claim a run this long before its slot, so that only the execution is left "
        "for the slot (default 0.25; 0 claims at the slot)",
    )
    p.add_argument(
        "--owner-share",
        metavar="FRACTION",
        type=_owner_share,
        default=0.5,
        help="the largest share of the threads one owner's jobs may hold at once (default "
        "0.5; at least one thread; 1 lets one owner take them all)",
    )
    p.add_argument(
        "--takeover-grace",
        metavar="SECONDS",
        type=_seconds("--takeover-grace", 0, 3600),
        default=2.0,
        help="how late another worker's job may be before this one runs it; the workers "
        "share the jobs, each runs its own share (default 2; 0: every worker tries every "
        "due job)",
    )
    p.add_argument(
        "--allow-sql-owner",
        choices=("admin", "any"),
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
        type=_seconds("--alert-timeout", 0.1, 3600),
        default=10.0,
        help="how long one alert target may take; a command is killed then (default 10)",
    )
    _retention_options(p)
    p.add_argument(
        "--prune-interval",
        metavar="SECONDS",
        type=_seconds("--prune-interval", 0.1, 86_400),
        default=None,
        help="seconds between the worker's pruning passes (default 60)",
    )
    cli_metrics.add_options(p)

    p = verb("prune", "delete old runs from the run log now (the runners do it by themselves)")
    _retention_options(p)
    p.add_argument("--dry-run", action="store_true", help="only count what would be deleted")
    _json_option(p, "the result")

    p = verb(
        "grant", "print (or --apply) the grants that make ACCOUNT an operator, admin or runner"
    )
    p.add_argument("account", metavar="ACCOUNT", help="USER or 'USER'@'HOST' (host default %%)")
    kind = p.add_mutually_exclusive_group()
    kind.add_argument(
        "--operator",
        dest="kind",
        action="store_const",
        const="operator",
        help="sees and steers its own jobs only, through the views (the default)",
    )
    kind.add_argument(
        "--admin",
        dest="kind",
        action="store_const",
        const="admin",
        help="sees and steers every owner's jobs, creates and upgrades the tables",
    )
    kind.add_argument(
        "--runner",
        dest="kind",
        action="store_const",
        const="runner",
        help="what `jobtui worker` needs (tables, EXECUTE on the owners' routines, "
        "mysql.proc to verify them, CONNECTION ADMIN to abort)",
    )
    p.add_argument(
        "--actions",
        action="append",
        metavar="PATTERN",
        help="allow ACCOUNT's jobs the Python actions matching PATTERN (fnmatch, e.g. "
        "'reports.*'; repeat or comma-separate for several)",
    )
    p.add_argument(
        "--revoke-actions",
        action="append",
        metavar="PATTERN",
        help="take back patterns --actions gave (exactly as given)",
    )
    p.add_argument(
        "--apply", action="store_true", help="run the statements (needs an account that may grant)"
    )
    _json_option(p, "the statements")

    cli_events.add_verb(verb, lambda p: _db_option(p, top=False))
    cli_alerts.add_verb(verb, lambda p: _db_option(p, top=False))
    cli_completion.add_verb(verb)
    cli_config.add_verb(verb)
    cli_doctor.add_verb(verb, _seconds)

    p = verb("run", "run one job's schedule in the foreground until it ends")
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
        type=_owner_text,
        help="the job's owner (e.g. alice@%%, as `list --all` shows it); a runner account "
        "owns no jobs; default: the connecting account's own",
    )

    p = verb("console", "the operator console (the default verb)")
    _console_options(p, default_runners=0)
    cli_metrics.add_options(p)

    p = verb("serve", "the operator console in a browser (textual-serve), on loopback")
    p.description = (
        "Serve the operator console to a web browser: each tab that opens the page runs its "
        "own `jobtui console` on the same database. Listens on 127.0.0.1 unless "
        "--allow-remote is given (the page has no login: reach it through an SSH tunnel or "
        "an authenticating reverse proxy)."
    )
    _console_options(p, default_runners=0)
    cli_serve.add_options(p)

    p = verb("demo", "create a demo SQLite database and open the console on it")
    _console_options(p, default_runners=4, demo=True)
    p.add_argument(
        "--path", metavar="FILE", help="the demo database file (default: in the data directory)"
    )
    return parser


def _console_options(
    parser: argparse.ArgumentParser, *, default_runners: int, demo: bool = False
) -> None:
    parser.add_argument(
        "--runners",
        metavar="N",
        type=_whole("--runners", 0, 256),
        default=default_runners,
        help=f"runner threads hosted by the console (default {default_runners})",
    )
    _retention_options(parser)
    if demo:
        return
    parser.add_argument("--read-only", action="store_true", help="watch only: no changes")
    parser.add_argument(
        "--refresh",
        metavar="SECONDS",
        type=_seconds("--refresh", 0.1, 3600),
        default=1.0,
        help="refresh interval (default 1)",
    )
    parser.add_argument("--all", action="store_true", help="every owner's jobs")


def normalize_argv(argv: Sequence[str]) -> list[str]:
    """Insert the default verb ``console`` when no verb is given (``jobtui --db X``)."""
    args = list(argv)
    i = 0
    while i < len(args):
        token = args[i]
        if token in ("--db", "--profile"):
            i += 2
        elif token.startswith(("--db=", "--profile=")):
            i += 1
        elif token in ("-h", "--help", "--version") or token in VERBS:
            return args
        elif token.startswith("-"):
            return [*args[:i], "console", *args[i:]]
        else:
            return args  # not a verb: argparse says which verbs there are
    return [*args, "console"]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse ``argv`` (default ``sys.argv[1:]``), raising UsageError on bad usage."""
    raw = normalize_argv(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if argv is None:  # the shell asking for completions (_ARGCOMPLETE=1): answer, exit
        cli_completion.autocomplete(parser)
    return cli_config.apply(parser, raw, parser.parse_args(raw))


# ---------------------------------------------------------------------- main


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit code (the console script exits with it)."""
    try:
        try:
            args = parse_args(argv)
        except SystemExit as exc:  # --help and --version
            return exc.code if isinstance(exc.code, int) else EXIT_OK
        return run_command(args)
    except KeyboardInterrupt:
        print(file=sys.stderr)
        return EXIT_INTERRUPTED
    except UsageError as exc:
        return _fail(str(exc), EXIT_USAGE)
    except JobtuiError as exc:
        return _fail(str(exc), exc.exit_code)
    except BrokenPipeError:
        # The reader went away (`jobtui list | head -1`): nothing more to say.
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except Exception as exc:
        from sqlalchemy.exc import SQLAlchemyError

        if os.environ.get(DEBUG_VAR):
            raise
        if isinstance(exc, SQLAlchemyError):
            err = translate_db_error(exc)
            return _fail(str(err), err.exit_code)
        return _fail(
            f"unexpected {type(exc).__name__}: {exc} (set {DEBUG_VAR}=1 for a traceback)",
            EXIT_DB,
        )


def _fail(message: str, code: int) -> int:
    line = " ".join(mask_text(message).split())
    # Control characters (NUL, ESC ...) and undecodable argv bytes are shown escaped:
    # the message stays one plain line, whatever it quotes.
    line = "".join(c if c.isprintable() else repr(c)[1:-1] for c in line)
    print(f"{PROG}: error: {line}", file=sys.stderr)
    return code


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def run_command(args: argparse.Namespace) -> int:
    handler = HANDLERS[args.command]
    return handler(args)


def _open(args: argparse.Namespace, *, read_only: bool = False) -> JobStore:
    """Open the store named by --db / $JOBTUI_DB / the default, creating tables if needed."""
    url = resolve_url(getattr(args, "db", None))
    try:
        if read_only:
            return open_store(url, read_only=True, init=False)
        return open_store(url)
    except OSError as exc:  # e.g. the SQLite file's directory cannot be created
        raise DatabaseUnavailable(
            f"database unavailable: cannot open {mask_url(url)}: {exc.strerror or exc}"
        ) from None


@contextmanager
def _store(args: argparse.Namespace, *, read_only: bool = False) -> Iterator[JobStore]:
    store = _open(args, read_only=read_only)
    try:
        yield store
    finally:
        store.close()


def _print(text: str = "") -> None:
    print(text)


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


# ---------------------------------------------------------------------- defining


def cmd_init(args: argparse.Namespace) -> int:
    from jobtui.core.schema import SCHEMA_VERSION, USER_JOB_VIEW

    with _store(args) as store:  # opening applies the migrations (jobtui.core.migrations)
        store.ping()
        if not store.sees_all:
            _print(
                f"{store.masked_url}: this operator account ({store.owner}) may not create or "
                f"upgrade the tables; it sees its own jobs through {USER_JOB_VIEW} (an admin "
                "runs `jobtui init`)"
            )
            return EXIT_OK
        done = store.upgraded.describe() if store.upgraded else f"schema version {SCHEMA_VERSION}"
        _print(f"initialised {store.masked_url} ({done})")
    return EXIT_OK


def _given(args: argparse.Namespace, *names: str) -> list[str]:
    return [
        f"--{n.replace('_', '-')}" for n in names if getattr(args, n, None) not in (None, False)
    ]


def _what_from_args(args: argparse.Namespace, *, required: bool) -> What | None:
    """What to run from --call/--sql/--action and --arg (None: not given)."""
    whats = _given(args, "call", "sql", "action")
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


def _schedule_kind(args: argparse.Namespace, *, required: bool) -> str | None:
    kinds = _given(args, "every", "cron", "expr", "once")
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


def _when(value: str | None, label: str) -> datetime | None:
    return None if value is None else parse_when(value, label)


def cmd_submit(args: argparse.Namespace) -> int:
    from jobtui.core.jobdefs import DEFAULT_MAX_FAILURES
    from jobtui.core.schedules import make_schedule

    check_job_name(args.name)
    what = _what_from_args(args, required=True)
    assert what is not None
    kind = _schedule_kind(args, required=True)
    assert kind is not None
    schedule = make_schedule(
        kind,
        every=args.every,
        cron=args.cron,
        tz=args.tz,
        expr=args.expr,
        start=_when(args.start, "--start"),
        finish=_when(args.finish, "--finish"),
    )
    alert_given, alert = cli_alerts.alert_targets(args.alert)
    with _store(args) as store:
        job = store.submit(
            args.name,
            what,
            schedule,
            description=args.description or "",
            max_failures=(
                args.max_failures if args.max_failures is not None else DEFAULT_MAX_FAILURES
            ),
            disabled=args.disabled,
        )
        if alert_given:
            job = store.set_alert(job.name, alert)
        now = store.now()
    return _report_job(args, job, "submitted", now=now)


def cmd_change(args: argparse.Namespace) -> int:
    if args.start is not None and args.no_start:
        raise InvalidInput("give --start WHEN or --no-start, not both")
    if args.finish is not None and args.no_finish:
        raise InvalidInput("give --finish WHEN or --no-finish, not both")
    if args.disabled and args.enable:
        raise InvalidInput("give --disabled or --enable, not both")
    kind = _schedule_kind(args, required=False)
    start = None if args.no_start else _when(args.start, "--start")
    finish = None if args.no_finish else _when(args.finish, "--finish")
    options = ["call", "sql", "action", "args", "every", "cron", "tz", "expr", "once"]
    options += ["start", "finish", "no_start", "no_finish", "description", "max_failures"]
    options += ["disabled", "enable", "alert"]
    if not _given(args, *options):
        raise InvalidInput(
            f"nothing to change for job {args.name!r}: give at least one option of "
            "`jobtui submit` (see `jobtui change --help`)"
        )
    what = _what_from_args(args, required=False)
    alert_given, alert = cli_alerts.alert_targets(args.alert)
    with _store(args) as store:
        if alert_given and _given(args, *options) == ["--alert"]:
            job = store.set_alert(args.name, alert, owner=args.owner)
            return _report_job(args, job, "changed")
        if alert_given:  # checked before anything else is written
            store.get(args.name, owner=args.owner)
        if what is None and args.args is not None:
            # --arg alone: new arguments for the procedure or action the job already runs
            current = store.get(args.name, owner=args.owner).what
            if current.kind == "sql":
                raise InvalidInput("--arg is only accepted with --call or --action, not with --sql")
            what = What(current.kind, current.target, tuple(args.args))
        job = store.change(
            args.name,
            owner=args.owner,
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
        if alert_given:
            job = store.set_alert(args.name, alert, owner=args.owner)
    return _report_job(args, job, "changed")


def cmd_remove(args: argparse.Namespace) -> int:
    with _store(args) as store:
        job = store.remove(args.name, owner=args.owner)
    if job.remove_requested:
        _print(
            f"removal of job {job.name} is pending: its run is being aborted and the job is "
            "deleted when that run has ended (its run log is kept; the name is free only then)"
        )
    else:
        _print(f"removed job {job.name} (its run log is kept)")
    return EXIT_OK


def job_dict(job: Job) -> dict[str, Any]:
    """The ``--json`` shape of a job: ``Job.to_dict()`` plus the cycle times of the latest run."""
    data = job.to_dict()
    data.setdefault("last_cycle_start", iso(job.last_cycle_start))
    data.setdefault("last_cycle_finish", iso(job.last_cycle_finish))
    # next_run stays the stored value; a halted job shows none (jobtui.core.showtime)
    data.setdefault("halted", halted(job))
    return data


def _next_run_text(job: Job) -> str:
    """A job's next run for people: in its zone, labelled; ``-`` when halted or none."""
    return show_time(shown_next_run(job), job.schedule.tz)


def _report_job(
    args: argparse.Namespace, job: Job, done: str, *, now: datetime | None = None
) -> int:
    """One line: the job's status and next run; with ``now`` (submit), its first run,
    saying "now" when that is now."""
    if getattr(args, "json", False):
        _print_json(job_dict(job))
        return EXIT_OK
    when = _time(job.next_run, job.schedule.tz)
    if now is None:
        _print(f"{done} job {job.name} (status {job.status.value}, next run {when})")
        return EXIT_OK
    if halted(job):
        first = f"no run while {job.status.value}"
    elif job.next_run is None:
        first = "no run scheduled"
    elif aware(job.next_run) <= now + FIRST_RUN_NOW:
        first = f"first run now, {when}"
    else:
        first = f"first run {when}"
    _print(f"{done} job {job.name} (status {job.status.value}, {first})")
    return EXIT_OK


# ---------------------------------------------------------------------- steering


def cmd_steer(args: argparse.Namespace) -> int:
    method, done = STEERING[args.command]
    with _store(args) as store:
        job = getattr(store, method)(args.name, owner=args.owner)
        idle = args.command == "run-now" and not any(
            r.alive(store.now(), HEARTBEAT_TIMEOUT) and not r.stopping for r in store.runners()
        )
    if args.json:
        _print_json(job_dict(job))
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
    _print(line)
    return EXIT_OK


def cmd_broken(args: argparse.Namespace) -> int:
    next_run = _when(args.next, "--next")
    if next_run is not None and args.on:
        raise InvalidInput("--next is only accepted with --off")
    with _store(args) as store:
        job = store.broken(args.name, bool(args.on), next_run=next_run, owner=args.owner)
    if args.json:
        _print_json(job_dict(job))
    elif args.on:
        _print(f"marked job {job.name} broken (status {job.status.value})")
    else:
        _print(
            f"cleared broken on job {job.name} (status {job.status.value}, "
            f"next run {_time(job.next_run, job.schedule.tz)})"
        )
    return EXIT_OK


# ---------------------------------------------------------------------- reading


def _time(value: datetime | None, zone: str | None = None) -> str:
    """A time for people, to the second, with its zone's label: in ``zone`` (a job's
    ``--tz``) where given, else UTC (``showtime.show_time``)."""
    return show_time(value, zone)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 10:
        return f"{seconds:.3f}s"
    if seconds < 3600:
        return f"{seconds:.1f}s"
    return f"{seconds / 3600:.1f}h"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns separated by two spaces; the last column is not padded."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = []
    for row in (headers, *rows):
        cells = [c.ljust(widths[i]) for i, c in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def cmd_list(args: argparse.Namespace) -> int:
    with _store(args) as store:
        if args.all:
            store.require_all()
        jobs = store.list_jobs(all_owners=args.all)
    if args.json:
        _print_json([job_dict(j) for j in jobs])
        return EXIT_OK
    if not jobs:
        _print("no jobs (define one with `jobtui submit NAME ...`)")
        return EXIT_OK
    # each time in the job's zone (--tz), else UTC, and labelled with it
    headers = ["NAME", "STATUS", "SCHEDULE", "NEXT RUN", "LAST RUN", "OUTCOME"]
    headers += ["FAILURES", "CYCLES"]
    if args.all:
        headers.insert(0, "OWNER")
    rows = []
    for j in jobs:
        row = [
            j.name,
            j.status.value,
            j.schedule.describe(),
            _next_run_text(j),
            _time(j.last_cycle_start or j.last_run, j.schedule.tz),
            "running" if j.running else (j.last_outcome.value if j.last_outcome else "-"),
            f"{j.failures}/{j.max_failures}",
            str(j.cycles),
        ]
        if args.all:
            row.insert(0, j.owner)
        rows.append(row)
    _print(table(headers, rows))
    marked = [(j, marks) for j in jobs if (marks := status_marks(j))]
    if marked:
        # after the table, as the problems below: STATUS keeps its one documented word
        _print()
        _print(f"{len(marked)} job(s) with more than their STATUS shows:")
        for j, marks in marked:
            who = f"{j.owner} " if args.all else ""
            _print(f"  {who}{j.name}: {', '.join(marks)}")
    troubled = [j for j in jobs if j.problem]
    if troubled:
        # after the table: the documented columns stay as they are
        _print()
        _print(f"{len(troubled)} job(s) with a problem, shown BROKEN and never run until fixed:")
        for j in troubled:
            who = f"{j.owner} " if args.all else ""
            _print(f"  {who}{j.name}: {j.problem}")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    with _store(args) as store:
        job = store.get(args.name, owner=args.owner)
        upcoming = store.preview(job, UPCOMING)
        alert = store.alert_of(args.name, owner=args.owner)  # (a bad row shows another name)
    if args.json:
        data = job_dict(job)
        data["upcoming"] = [iso(t) for t in upcoming]
        data["alert"] = None if alert is None else [alerts.mask(t) for t in alert]
        _print_json(data)
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
    fields = [(k, _next_run_text(job) if k == "next_run" else v) for k, v in fields]
    width = max(len(k) for k, _ in fields)
    for key, value in fields:
        _print(f"{key.ljust(width)}  {_plain(value)}")
    # the same words as the console's details and edit form (expressions.why_no_runs)
    none = why_no_runs(job) + (", see above" if job.problem else "")
    zone = job.schedule.tz if zone_of(job.schedule.tz) is not None else None
    _print(f"upcoming ({zone or 'UTC'}):" if upcoming else f"upcoming: none ({none})")
    for t in upcoming:
        _print(f"  {_time(t, zone)}")
    return EXIT_OK


def _plain(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False)
    return " ".join(str(value).split()) if isinstance(value, str) else str(value)


def cmd_log(args: argparse.Namespace) -> int:
    with _store(args) as store:
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
        _print_json([r.to_dict() for r in runs])
        return EXIT_OK
    if not runs:
        _print("no runs")
        return EXIT_OK
    headers = ["SCHEDULED (UTC)", "JOB", "OUTCOME", "STARTED (UTC)", "DURATION", "RUNNER", "ERROR"]
    if args.all:
        headers.insert(1, "OWNER")
    rows = [_log_row(r, args.all) for r in runs]
    _print(table(headers, rows))
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
        _time(run.scheduled_for),
        run.job,
        outcome,
        _time(run.started),
        _duration(run.duration),
        run.runner or "-",
        (error[:77] + "...") if len(error) > 80 else (error or "-"),
    ]
    if with_owner:
        row.insert(1, run.owner)
    return row


def runner_dict(info: RunnerInfo, now: datetime) -> dict[str, Any]:
    """The ``runners --json`` shape."""
    age = (now - info.heartbeat).total_seconds()
    return {
        "id": info.id,
        "name": info.name,
        "host": info.host,
        "pid": info.pid,
        "threads": info.threads,
        "connection_id": info.connection_id,
        "started": iso(info.started),
        "heartbeat": iso(info.heartbeat),
        "heartbeat_age": round(age, 3),
        "alive": info.alive(now, HEARTBEAT_TIMEOUT),
        "stopping": info.stopping,
    }


def cmd_runners(args: argparse.Namespace) -> int:
    if args.overdue is not None and not args.check:
        raise InvalidInput("--overdue is only accepted with --check")
    if args.check:
        return _check_health(args)
    with _store(args) as store:
        infos = store.runners()
        now = store.now()
    rows = [runner_dict(i, now) for i in infos]
    if args.json:
        _print_json(rows)
        return EXIT_OK
    if not rows:
        _print("no runners (start one with `jobtui worker` or the console's --runners N)")
        return EXIT_OK
    headers = ["NAME", "HOST", "PID", "THREADS", "STARTED (UTC)", "HEARTBEAT AGE", "STATE", "ID"]
    table_rows = [
        [
            r["name"],
            r["host"],
            str(r["pid"]),
            str(r["threads"]),
            _time(info.started),
            f"{r['heartbeat_age']:.1f}s",
            "stopping" if r["stopping"] else ("alive" if r["alive"] else "dead"),
            r["id"],
        ]
        for r, info in zip(rows, infos, strict=True)
    ]
    _print(table(headers, table_rows))
    return EXIT_OK


def _check_health(args: argparse.Namespace) -> int:
    from jobtui.core import health

    overdue = health.DEFAULT_OVERDUE if args.overdue is None else args.overdue
    with _store(args, read_only=True) as store:
        result = health.check(
            store.runners(),
            store.list_jobs(all_owners=store.sees_all),
            store.now(),
            timeout=HEARTBEAT_TIMEOUT,
            overdue=overdue,
        )
    if args.json:
        _print_json(result.to_dict())
    else:
        _print(
            f"{'ok' if result.ok else 'FAIL'}: {len(result.live_runners)} live runner(s), "
            f"{len(result.overdue)} job(s) overdue by more than {overdue:g} s"
        )
        for problem in result.problems():
            _print(f"  {problem}")
    return EXIT_OK if result.ok else EXIT_UNHEALTHY


# ---------------------------------------------------------------------- export / import


def cmd_export(args: argparse.Namespace) -> int:
    with _store(args) as store:
        if args.all:
            store.require_all()
        if args.format == "sql":
            return _export_sql(store, all_owners=args.all)
        jobs = store.export(all_owners=args.all)
    if args.format == "yaml":
        import yaml

        sys.stdout.write(yaml.safe_dump(jobs, sort_keys=False, allow_unicode=True))
    else:
        _print_json(jobs)
    return EXIT_OK


def _export_sql(store: JobStore, *, all_owners: bool) -> int:
    from jobtui.core.transfer import export_sql

    text, skipped = export_sql(store, all_owners=all_owners)
    sys.stdout.write(text)
    if skipped:
        print(
            f"{PROG}: {skipped} job(s) left out of the SQL export: see its comments",
            file=sys.stderr,
        )
    return EXIT_OK


def read_definitions(path: str) -> Any:
    """The content of an export file (JSON or YAML; ``-`` is stdin), size and nesting bounded."""
    from jobtui.core.importfile import read_definitions as read

    return read(path)


def cmd_import(args: argparse.Namespace) -> int:
    data = read_definitions(args.file)
    with _store(args) as store:
        created, changed = store.import_jobs(data)
    _print(f"imported {created + changed} job(s): {created} created, {changed} changed")
    return EXIT_OK


# ---------------------------------------------------------------------- runners and console


class NotInstalled(JobtuiError):
    """A part of jobtui (runner, console) cannot be imported."""

    exit_code = EXIT_DB


def _missing(part: str, module: str, exc: ImportError) -> NotInstalled:
    return NotInstalled(
        f"the {part} is not available in this installation ({module} failed to import: {exc})"
    )


def cmd_worker(args: argparse.Namespace) -> int:
    try:
        from jobtui.core.worker import worker_main
    except ImportError as exc:
        raise _missing("runner", "jobtui.core.worker", exc) from None
    retention = _retention(args)
    if args.prune_interval is not None:
        retention = dataclasses.replace(retention, interval=args.prune_interval)
    with _store(args) as store:
        _require_runner_account(store, "worker")
        store.sql_owners = args.allow_sql_owner
        metrics = cli_metrics.start(args, store)
        try:
            code = worker_main(
                store,
                threads=args.threads,
                poll=args.poll,
                name=args.name,
                grace=args.grace,
                heartbeat_timeout=args.heartbeat_timeout,
                lead=args.lead,
                retention=retention,
                owner_share=args.owner_share,
                takeover_grace=args.takeover_grace,
                log_format=args.log_format,
                alerts=args.alerts,
                alert_timeout=args.alert_timeout,
                metrics=metrics,
            )
        finally:
            if metrics is not None:
                metrics.close()
        return int(code)


def cmd_run(args: argparse.Namespace) -> int:
    try:
        from jobtui.core.worker import run_foreground
    except ImportError as exc:
        raise _missing("runner", "jobtui.core.worker", exc) from None
    with _store(args) as store:
        _require_runner_account(store, "run")
        problem = store.run_rights_problem()
        if problem is not None:
            from jobtui.core.errors import PermissionDenied

            raise PermissionDenied(
                f"`jobtui run` runs the job with this account's connection and needs a runner "
                f"account (role {schema.runner_role(store.schema_name)}: `jobtui grant "
                f"ACCOUNT --runner`, docs/privileges.md); account {store.owner!r} cannot: "
                f"{problem}"
            )
        return int(run_foreground(store, args.name, owner=args.owner))


def _require_runner_account(store: JobStore, verb: str) -> None:
    """Runners work on the tables: an operator account is told so before anything starts."""
    if not store.sees_all:
        from jobtui.core.errors import PermissionDenied

        raise PermissionDenied(
            f"`jobtui {verb}` runs jobs and needs a runner or admin account (roles "
            f"{schema.runner_role(store.schema_name)}, {schema.admin_role(store.schema_name)}; "
            f"docs/privileges.md); account {store.owner!r} is an "
            "operator: it sees its own jobs only"
        )


def _run_console(store: JobStore, **options: Any) -> int:
    try:
        from jobtui.console.app import make_app
    except ImportError as exc:
        raise _missing("console", "jobtui.console.app", exc) from None
    app = make_app(store, **options)
    app.run()
    code = getattr(app, "return_code", None)
    return int(code) if isinstance(code, int) else EXIT_OK


def cmd_console(args: argparse.Namespace) -> int:
    if args.read_only and args.runners:
        raise InvalidInput("--read-only watches only: it cannot host runners (--runners 0)")
    with _store(args, read_only=args.read_only) as store:
        if args.all:
            store.require_all()
        if args.runners:
            _require_runner_account(store, "console --runners")
        store.retention = _retention(args)  # the pool the console hosts prunes with it
        metrics = cli_metrics.start(args, store)
        try:
            return _run_console(
                store,
                runners=args.runners,
                read_only=args.read_only,
                refresh=args.refresh,
                all_owners=args.all,
                metrics=metrics,
                theme=getattr(args, "theme", None),
            )
        finally:
            if metrics is not None:
                metrics.close()


def _console_argv(args: argparse.Namespace) -> list[str]:
    """The console options of ``args`` as a command line (``serve`` hands them on)."""

    def keep(value: float | None) -> str:
        return "off" if value is None else repr(value)

    options = ["--runners", str(args.runners), "--refresh", repr(args.refresh)]
    options += ["--keep-runs", keep(args.keep_runs), "--keep-days", keep(args.keep_days)]
    options += ["--keep-error-days", keep(args.keep_error_days)]
    options += ["--read-only"] * args.read_only + ["--all"] * args.all
    options += cli_config.profile_argv(args)  # the tabs' theme
    return cli_serve.console_argv(options)


def cmd_serve(args: argparse.Namespace) -> int:
    if args.read_only and args.runners:
        raise InvalidInput("--read-only watches only: it cannot host runners (--runners 0)")
    public_url = cli_serve.check_listen(
        args.host, args.port, allow_remote=args.allow_remote, public_url=args.public_url
    )
    url = resolve_url(getattr(args, "db", None))
    # Refuse here what each tab's console would refuse, before anyone opens the page.
    with _store(args, read_only=args.read_only) as store:
        if args.all:
            store.require_all()
        if args.runners:
            _require_runner_account(store, "serve --runners")
        _retention(args)
    return cli_serve.serve(
        url, _console_argv(args), host=args.host, port=args.port, public_url=public_url
    )


def cmd_demo(args: argparse.Namespace) -> int:
    if getattr(args, "db", None):
        raise InvalidInput("demo makes its own SQLite database: use --path FILE, not --db")
    try:
        from jobtui.console.demo import create_demo
    except ImportError as exc:
        raise _missing("console", "jobtui.console.demo", exc) from None
    try:
        url = create_demo(args.path)
    except OSError as exc:
        raise DatabaseUnavailable(
            f"cannot create the demo database {args.path or ''}: {exc.strerror or exc}"
        ) from None
    store = open_store(url)
    store.retention = _retention(args)
    try:
        return _run_console(store, runners=args.runners, theme=getattr(args, "theme", None))
    finally:
        store.close()


# ---------------------------------------------------------------------- retention


PRUNE_LOCK_WAIT = 30.0  # seconds `jobtui prune` waits for a runner's pruning pass to end


def _retention(args: argparse.Namespace) -> Any:
    from jobtui.core.retention import Retention

    return Retention(
        keep_runs=args.keep_runs, keep_days=args.keep_days, keep_error_days=args.keep_error_days
    )


def _days(value: float | None) -> str:
    return "no limit" if value is None else f"{value:g} days"


def cmd_prune(args: argparse.Namespace) -> int:
    ret = _retention(args)
    with _store(args) as store:
        deleted = store.prune_runs(
            keep=ret.keep_runs,
            keep_days=ret.keep_days,
            keep_error_days=ret.keep_error_days,
            dry_run=args.dry_run,
            wait=PRUNE_LOCK_WAIT,
        )
    if args.json:
        _print_json(
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
    _print(
        f"{'would delete' if args.dry_run else 'deleted'} {deleted} run(s) from the run log "
        f"(kept: {keep}; ok runs {_days(ret.keep_days)}; errors {_days(ret.error_days)})"
    )
    return EXIT_OK


# ---------------------------------------------------------------------- privileges


def cmd_grant(args: argparse.Namespace) -> int:

    from jobtui.core.actions import action_grant_statements, check_patterns
    from jobtui.core.privileges import grant_statements, parse_account, quote_account

    # --actions/--revoke-actions alone touch only the allow-list; with a kind, both
    patterns = args.actions or args.revoke_actions
    kind = args.kind or (None if patterns else "operator")
    user, host = parse_account(args.account)  # bad input: exit 2 before connecting
    if args.actions:
        check_patterns(args.actions)
    if args.revoke_actions:
        check_patterns(args.revoke_actions)
    with _store(args, read_only=not args.apply) as store:
        if not store.backend.has_accounts:
            raise InvalidInput(
                "SQLite has no accounts: whoever may open the file sees and changes every "
                "job (use file permissions); grants are for MySQL/MariaDB"
                + ("; on SQLite every registered action is allowed" if patterns else "")
            )
        database = store.schema_name
        if not database:
            raise InvalidInput(
                f"no database in {store.masked_url}: give one, e.g. mysql+pymysql://USER@HOST/DB"
            )
        statements = (
            grant_statements(kind, f"{user}@{host}", str(database), cluster=store.backend.cluster)
            if kind
            else []
        )
        if patterns:
            statements += action_grant_statements(
                f"{user}@{host}",
                str(database),
                grant=args.actions or (),
                revoke=args.revoke_actions or (),
            )
        if args.apply:
            with store.engine.connect() as conn:
                # the driver's own cursor without parameters: the % of a host stays as it is
                cur = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
                try:
                    for statement in statements:
                        cur.execute(statement)
                finally:
                    cur.close()
                # the driver's commit: the allow-list's rows are no DDL that commits by itself
                conn.connection.dbapi_connection.commit()  # type: ignore[union-attr]
    account = quote_account(user, host)
    if args.json:
        _print_json(
            {
                "account": account,
                "kind": kind,
                "database": database,
                "statements": statements,
                "applied": bool(args.apply),
                "actions": check_patterns(args.actions) if args.actions else [],
                "revoked_actions": (
                    check_patterns(args.revoke_actions) if args.revoke_actions else []
                ),
            }
        )
        return EXIT_OK
    for statement in statements:
        _print(f"{statement};")
    if args.apply:
        if kind:
            _print(f"-- applied: {account} is a jobtui {kind} of `{database}`")
        if args.actions:
            allowed = ", ".join(check_patterns(args.actions))
            _print(f"-- applied: {account}'s jobs may use the actions matching {allowed}")
        if args.revoke_actions:
            taken = ", ".join(check_patterns(args.revoke_actions))
            _print(f"-- applied: {account} no longer has the action patterns {taken}")
    return EXIT_OK


def cmd_alerts(args: argparse.Namespace) -> int:
    with _store(args) as store:
        return cli_alerts.cmd_alerts(args, store, _print)


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "alerts": cmd_alerts,
    "init": cmd_init,
    "upgrade": cmd_init,
    "submit": cmd_submit,
    "change": cmd_change,
    "remove": cmd_remove,
    "list": cmd_list,
    "show": cmd_show,
    "log": cmd_log,
    **dict.fromkeys(STEERING, cmd_steer),
    "broken": cmd_broken,
    "export": cmd_export,
    "import": cmd_import,
    "runners": cmd_runners,
    "worker": cmd_worker,
    "run": cmd_run,
    "console": cmd_console,
    "demo": cmd_demo,
    "serve": cmd_serve,
    "prune": cmd_prune,
    "grant": cmd_grant,
    "events": cli_events.cmd_events,
    "completion": lambda args: cli_completion.cmd_completion(args, PROG),
    "profiles": cli_config.cmd_profiles,
    "doctor": lambda args: cli_doctor.cmd_doctor(args, _print),
}
