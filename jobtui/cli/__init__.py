# PYTHON_ARGCOMPLETE_OK  (argcomplete: this console script answers completion requests)
"""The ``jobtui`` command line: thin verbs over ``jobtui.core.store.JobStore``.

Every verb opens the store, does one thing and prints either a human line or
table, or (``--json``) the stable shapes of ``Job.to_dict`` / ``Run.to_dict``.
Errors are one line on stderr, ``jobtui: error: <message>``, with the exit
code of the error (2 bad input, unknown job or refused; 1 database
unreachable or failing; 130 on Ctrl-C). docs/cli.md documents every verb,
option, field and exit code.

The package: ``parser`` builds the command line from the verb modules
(``defining``, ``reading``, ``steering``, ``transfer``, ``runners``, ``running``,
``prune``, ``grant``, ``events``, ``alerts``, ``completion``, ``profiles``,
``doctor``, ``console``), each adding its verbs through ``verbs.CommandLine``;
they share ``options`` (value types, common options), ``output`` (lines,
tables, JSON), ``opening`` (the store a verb names) and ``exits``. This module
runs one command (``main``, the console script).

The runner and the console are imported lazily inside the verbs that need
them, so list/show/submit never load Textual.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from jobtui.cli.exits import (
    EXIT_BROKEN_PIPE,
    EXIT_DB,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
)
from jobtui.cli.output import PROG
from jobtui.cli.parser import build, parse
from jobtui.core.db import mask_text
from jobtui.core.dberrors import translate_db_error
from jobtui.core.errors import JobtuiError

DEBUG_VAR = "JOBTUI_DEBUG"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit code (the console script exits with it)."""
    try:
        try:
            cli = build()
            args = parse(cli, argv)
        except SystemExit as exc:  # --help and --version
            return exc.code if isinstance(exc.code, int) else EXIT_OK
        return cli.run(args)
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
