"""The store a verb works on: the database --db, $JOBTUI_DB, the profile or the
default names (``jobtui.core.db.resolve_url``), and who may run the runner verbs."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager

from jobtui.core import accounts
from jobtui.core.db import mask_url, resolve_url
from jobtui.core.errors import DatabaseUnavailable, PermissionDenied
from jobtui.core.store import JobStore, open_store


def open_for(args: argparse.Namespace, *, read_only: bool = False) -> JobStore:
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
def store_for(args: argparse.Namespace, *, read_only: bool = False) -> Iterator[JobStore]:
    """``open_for``'s store, closed when the block ends."""
    store = open_for(args, read_only=read_only)
    try:
        yield store
    finally:
        store.close()


def require_runner_account(store: JobStore, verb: str) -> None:
    """Runners work on the tables: an operator account is told so before anything starts."""
    if not store.sees_all:
        raise PermissionDenied(
            f"`jobtui {verb}` runs jobs and needs a runner or admin account (roles "
            f"{accounts.runner_role(store.schema_name)}, {accounts.admin_role(store.schema_name)}; "
            f"docs/privileges.md); account {store.owner!r} is an "
            "operator: it sees its own jobs only"
        )
