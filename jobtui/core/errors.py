"""Errors a user can act on.

Every error says what was wrong and what is accepted. The command line maps
``exit_code`` straight to its process exit status: 2 for bad input or an
unknown job, 1 for a database that cannot be reached.
"""

from __future__ import annotations


class JobtuiError(Exception):
    """Base class of every error jobtui raises on purpose."""

    exit_code = 2


class InvalidInput(JobtuiError, ValueError):
    """A value given by the user (CLI, API, console form) is not acceptable."""


class JobNotFound(JobtuiError, LookupError):
    """No job with that name (for this owner) exists."""

    def __init__(self, name: str, owner: str | None = None) -> None:
        self.name = name
        self.owner = owner
        where = f" for owner {owner!r}" if owner else ""
        listing = "`jobtui list --all` shows every owner's" if owner else "`jobtui list` shows the"
        super().__init__(f"unknown job {name!r}{where}; {listing} jobs there are")


class JobLocked(JobtuiError):
    """Another runner holds the job's lock."""

    def __init__(self, name: str, holder: str) -> None:
        self.name = name
        self.holder = holder
        super().__init__(f"job {name!r} already locked by {holder}")


class DatabaseUnavailable(JobtuiError):
    """The database cannot be reached (the message never contains a password)."""

    exit_code = 1


class ReadOnlyError(JobtuiError):
    """A change was refused because the store was opened read-only."""


class PermissionDenied(JobtuiError):
    """The database (or jobtui on its behalf) refused: the account lacks a privilege.

    Exit code 2, like any refusal: nothing was changed.
    """


class SchemaTooNew(JobtuiError):
    """The database's tables are of a newer schema version than this jobtui knows:
    refused by every command that opens the store (exit 2), so that an older jobtui
    never writes rows a newer one would misread."""

    def __init__(self, found: int, known: int) -> None:
        self.found = found
        self.known = known
        super().__init__(
            f"the database's schema is version {found}, newer than this jobtui's "
            f"(schema version {known}): upgrade jobtui (a release that knows schema "
            f"version {found}) to use this database"
        )


class RunAborted(Exception):
    """A run was stopped on request (operator abort, runner shutdown): no JobtuiError,
    since no command ends with it."""
