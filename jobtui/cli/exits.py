"""The command line's exit codes, and the errors only the command line raises.

Every other error is a ``jobtui.core.errors.JobtuiError``, which carries its own
exit code; ``jobtui.cli.main`` turns each into one line on stderr.
"""

from __future__ import annotations

from jobtui.core.errors import JobtuiError

EXIT_OK = 0
EXIT_DB = 1
EXIT_UNHEALTHY = 1  # `runners --check`: no live runner, or jobs overdue
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports it


class UsageError(Exception):
    """A command-line usage error (argparse's), reported in one line with exit 2."""


class NotInstalled(JobtuiError):
    """A part of jobtui (runner, console) cannot be imported."""

    exit_code = EXIT_DB


def missing(part: str, module: str, exc: ImportError) -> NotInstalled:
    """The error for a ``part`` of jobtui whose ``module`` failed to import."""
    return NotInstalled(
        f"the {part} is not available in this installation ({module} failed to import: {exc})"
    )
