"""The whole command line's parser: the top options, then each verb module's verbs in
the order ``jobtui --help`` lists them (docs/cli.md mirrors it); parsing, with the
default verb and the config file's profile applied."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import NoReturn

from jobtui import __version__
from jobtui.cli import (
    alerts,
    completion,
    console,
    defining,
    doctor,
    events,
    grant,
    profiles,
    prune,
    reading,
    runners,
    running,
    steering,
    transfer,
)
from jobtui.cli.exits import UsageError
from jobtui.cli.options import db_option, profile_option
from jobtui.cli.output import PROG
from jobtui.cli.verbs import CommandLine

# Each adds its verbs; in this order `jobtui --help` lists them.
ADD_VERBS = (
    defining.add_verbs,  # init, upgrade, submit, change, remove
    reading.add_verbs,  # list, show, log
    steering.add_verbs,  # pause, resume, enable, disable, abort, run-now, broken
    transfer.add_verbs,  # export, import
    runners.add_verbs,  # runners
    running.add_worker_verb,  # worker
    prune.add_verbs,  # prune
    grant.add_verbs,  # grant
    events.add_verbs,  # events
    alerts.add_verbs,  # alerts
    completion.add_verbs,  # completion
    profiles.add_verbs,  # profiles
    doctor.add_verbs,  # doctor
    running.add_run_verb,  # run
    console.add_verbs,  # console, serve, demo
)

DESCRIPTION = (
    "jobtui: a database job scheduler (DBMS_JOB for MySQL/MariaDB and "
    "SQLite) with a live operator console. With no verb it starts the console."
)
EPILOG = (
    "Exit codes: 0 ok; 2 bad input, unknown job or refused; 1 database "
    "unreachable or failing; 3 `run`: the job was aborted or removed; 130 interrupted; "
    "141 stdout closed. Database: --db, else $JOBTUI_DB, else the profile's url (--profile, "
    "$JOBTUI_PROFILE or the config file's default), else the default SQLite file. "
    "`jobtui VERB --help` shows a verb's options; the full manual (docs/cli.md, "
    "docs/console.md) is in jobtui's source tree, not in an installed package."
)


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line that names the help to read."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def build() -> CommandLine:
    """The whole command line: the parser and each verb's handler."""
    parser = Parser(prog=PROG, description=DESCRIPTION, epilog=EPILOG)
    db_option(parser, top=True)
    profile_option(parser, top=True)
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    cli = CommandLine(parser)
    for add_verbs in ADD_VERBS:
        add_verbs(cli)
    return cli


def build_parser() -> argparse.ArgumentParser:
    """The whole command line's parser (docs/cli.md mirrors it)."""
    return build().parser


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
        elif token in ("-h", "--help", "--version") or not token.startswith("-"):
            return args  # a verb, or a word argparse then says is no verb
        else:
            return [*args[:i], "console", *args[i:]]
    return [*args, "console"]


def parse(cli: CommandLine, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse ``argv`` (default ``sys.argv[1:]``) with ``cli``'s parser, raising UsageError
    on bad usage; the chosen profile fills what the command line leaves open."""
    raw = normalize_argv(sys.argv[1:] if argv is None else argv)
    if argv is None:  # the shell asking for completions (_ARGCOMPLETE=1): answer, exit
        completion.autocomplete(cli)
    return profiles.apply(cli, raw, cli.parser.parse_args(raw))


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Parse ``argv`` (default ``sys.argv[1:]``), raising UsageError on bad usage."""
    return parse(build(), argv)
