"""Who is who: jobtui's kinds of account, the roles that name them on one database, and
account names (``user@host``) parsed and quoted safely.

The vocabulary only: SQLite has no accounts, and the statements that grant the roles
on MySQL/MariaDB live with that backend. docs/privileges.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from jobtui.core.errors import InvalidInput


class PermissionRefused(Exception):
    """The job's owner may not do what the job asks (e.g. an action no admin allowed it)."""


def split_account(account: str) -> tuple[str, str]:
    """``user@host`` -> (user, host), split at the LAST @ (user names may hold one)."""
    user, sep, host = account.rpartition("@")
    if not sep:
        return account, "%"
    return user, host


@dataclass(frozen=True)
class Rights:
    """The jobtui kinds an account holds (``jobtui doctor``): through its roles, granted
    and active (its default role), or as a superuser (ALL PRIVILEGES ON *.*)."""

    granted: tuple[str, ...]
    active: tuple[str, ...]
    superuser: bool
    exists: bool = True  # False: the server knows no such account
    executor: bool = False  # holds the executor role (a runner's executor connection sets it)


KINDS = ("operator", "admin", "runner")
_USER_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-$")
_HOST_CHARS = _USER_CHARS | frozenset("%:/")
MAX_USER = 80
MAX_HOST = 255


def parse_account(value: str) -> tuple[str, str]:
    """``user``, ``user@host`` or ``'user'@'host'`` -> (user, host); the host defaults to %.

    Only letters, digits and ``_ . - $`` in user names (plus ``% : /`` in host
    names) are accepted, so the quoted account can never close its quotes.
    """
    accepted = (
        "expected USER or USER@HOST (quotes allowed: 'USER'@'HOST'); user names of letters, "
        f"digits and _ . - $ (1-{MAX_USER} characters), host names of those and % : /"
    )
    if not isinstance(value, str):
        raise InvalidInput(f"invalid account {value!r}: {accepted}")
    user, sep, host = value.rpartition("@")
    if not sep:
        user, host = value, "%"
    user, host = _unquote(user), _unquote(host)
    if (
        not 1 <= len(user) <= MAX_USER
        or not set(user) <= _USER_CHARS
        or not 1 <= len(host) <= MAX_HOST
        or not set(host) <= _HOST_CHARS
    ):
        raise InvalidInput(f"invalid account {value!r}: {accepted}")
    return user, host


def _unquote(part: str) -> str:
    if len(part) >= 2 and part[0] == part[-1] and part[0] in "'\"`":
        return part[1:-1]
    return part


def quote_account(user: str, host: str) -> str:
    """``'user'@'host'``: only for names ``parse_account`` accepted (no quotes inside)."""
    return f"'{user}'@'{host}'"


# The roles jobtui documents (docs/privileges.md); `jobtui grant` prints their grants.
# Each belongs to ONE jobtui database (``jobtui_operator_<db>``): an operator of ``ops``
# is not thereby an operator of ``ops2`` on the same server.
ADMIN_ROLE = "jobtui_admin"  # prefixes: role_name() adds the database
OPERATOR_ROLE = "jobtui_operator"
RUNNER_ROLE = "jobtui_runner"
# The role of a runner's executor connections (owner code runs there): EXECUTE on the
# jobtui database and nothing else. Granted with the runner role, never a kind of its own.
EXECUTOR_ROLE = "jobtui_executor"
ROLE_PREFIXES = {"operator": OPERATOR_ROLE, "admin": ADMIN_ROLE, "runner": RUNNER_ROLE}


def role_name(kind: str, database: str) -> str:
    """``jobtui_<kind>_<database>``: the role of one kind of account on one database."""
    return f"{ROLE_PREFIXES[kind]}_{database}"


def operator_role(database: str) -> str:
    return role_name("operator", database)


def admin_role(database: str) -> str:
    return role_name("admin", database)


def runner_role(database: str) -> str:
    return role_name("runner", database)


def executor_role(database: str) -> str:
    """``jobtui_executor_<database>``: what a runner's executor connection sets as its
    role (``SET ROLE``) before it calls an owner's routine (docs/privileges.md)."""
    return f"{EXECUTOR_ROLE}_{database}"
