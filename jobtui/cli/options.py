"""The options many verbs share (``--db``, ``--json``, ``--owner``, the run-log
retention), the value types the verbs' options parse with, and what a verb reads
back from them (``retention_of``, ``when``).

A value type raises ``argparse.ArgumentTypeError`` with the option, the value
and what is accepted; argparse makes that a usage error (exit 2).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime

from jobtui.core import config
from jobtui.core.db import ENV_VAR
from jobtui.core.retention import DEFAULT_RETENTION, MAX_KEEP_DAYS, MAX_KEEP_RUNS, Retention
from jobtui.core.runner.config import DEFAULTS as POOL_DEFAULTS
from jobtui.core.timeutil import parse_when

HEARTBEAT_TIMEOUT = POOL_DEFAULTS.heartbeat_timeout  # older heartbeats are dead

# ---------------------------------------------------------------------- value types


def whole(label: str, minimum: int, maximum: int) -> Callable[[str], int]:
    """A whole number from ``minimum`` to ``maximum`` for the option ``label``."""

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


def seconds(label: str, minimum: float, maximum: float) -> Callable[[str], float]:
    """A number of seconds from ``minimum`` to ``maximum`` for the option ``label``."""

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


def owner_share(text: str) -> float:
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


def keep_runs(text: str) -> int | None:
    """``--keep-runs``: a whole number 0-100000000, or ``off`` (no count limit)."""
    if text.strip().lower() == "off":
        return None
    return whole("--keep-runs", 0, MAX_KEEP_RUNS)(text)


def keep_days(label: str) -> Callable[[str], float | None]:
    """``--keep-days``/``--keep-error-days``: days above 0 (fractions allowed), or ``off``."""

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


def owner_text(text: str) -> str:
    """``--owner``: an owner as ``jobtui list --all`` shows it."""
    if not text or len(text) > 190 or not text.isprintable():
        raise argparse.ArgumentTypeError(
            f"invalid --owner {text!r}: expected an owner as `jobtui list --all` shows it "
            "(1-190 printable characters, e.g. alice@%)"
        )
    return text


# ---------------------------------------------------------------------- shared options


def db_option(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    """``--db URL``: on the top parser, and on each verb (and action) for after the verb."""
    # On the verb the default is SUPPRESS so that `jobtui --db X list` keeps X.
    parser.add_argument(
        "--db",
        metavar="URL",
        default=None if top else argparse.SUPPRESS,
        help=f"database URL (sqlite:///PATH, a bare file path, or "
        f"mysql+pymysql://USER@HOST:PORT/DB); default ${ENV_VAR}, else the SQLite file in "
        "the user's data directory",
    )


def profile_option(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    """``--profile NAME`` (jobtui.cli.profiles applies it): on the top parser and each verb."""
    # On the verb the default is SUPPRESS so that `jobtui --profile X list` keeps X.
    parser.add_argument(
        "--profile",
        metavar="NAME",
        default=None if top else argparse.SUPPRESS,
        help=f"a [profiles.NAME] of the config file (default ${config.PROFILE_VAR}, else "
        "the file's default); command-line options and $JOBTUI_DB win over it",
    )


def json_option(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("--json", action="store_true", help=f"print {what} as JSON")


def owner_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--owner",
        metavar="OWNER",
        type=owner_text,
        help="another owner's job (an admin's; e.g. alice@%%, as `list --all` shows it); "
        "default: the connecting account's own",
    )


def retention_options(parser: argparse.ArgumentParser) -> None:
    """``--keep-runs``, ``--keep-days``, ``--keep-error-days`` (read by ``retention_of``)."""
    d = DEFAULT_RETENTION
    group = parser.add_argument_group("run-log retention (pruned by the runners)")
    group.add_argument(
        "--keep-runs",
        metavar="N",
        type=keep_runs,
        default=d.keep_runs,
        help=f"newest successful runs kept per job, and as many error runs (default "
        f"{d.keep_runs}; off: no count limit)",
    )
    group.add_argument(
        "--keep-days",
        metavar="DAYS",
        type=keep_days("--keep-days"),
        default=d.keep_days,
        help=f"successful runs older than this go (default {d.keep_days:g}; off: no age limit)",
    )
    group.add_argument(
        "--keep-error-days",
        metavar="DAYS",
        type=keep_days("--keep-error-days"),
        default=d.keep_error_days,
        help=f"failed, aborted and lost runs older than this go (default "
        f"{d.keep_error_days:g}; never less than --keep-days)",
    )


# ---------------------------------------------------------------------- reading them back


def retention_of(args: argparse.Namespace) -> Retention:
    """The run-log retention the ``retention_options`` of ``args`` give."""
    return Retention(
        keep_runs=args.keep_runs, keep_days=args.keep_days, keep_error_days=args.keep_error_days
    )


def when(value: str | None, label: str) -> datetime | None:
    """The time an option ``label`` gives (ISO 8601, no offset = UTC), or None."""
    return None if value is None else parse_when(value, label)
