"""Connecting: where the database is (URL parsing and resolution), masking secrets.

The URL comes from ``--db``, else ``JOBTUI_DB``, else a SQLite file in the
user's data directory. MySQL/MariaDB credentials may come from an option file
(``?read_default_file=~/.my.cnf``). A password is never printed: use
``mask_url`` for anything a person may see.
"""

from __future__ import annotations

import configparser
import os
import re
from pathlib import Path
from typing import Any

from pymysql import optionfile
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from jobtui.core.errors import InvalidInput

ENV_VAR = "JOBTUI_DB"


def default_db_path() -> Path:
    """``$XDG_DATA_HOME/jobtui/jobtui.db`` (``~/.local/share/jobtui/jobtui.db``)."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return Path(base) / "jobtui" / "jobtui.db"


ACCEPTED_URLS = (
    "accepted are sqlite:///PATH, a bare file path, or "
    "mysql+pymysql://USER@HOST[:PORT]/DATABASE[?OPTION=VALUE&...] (a password: "
    "?read_default_file=~/.my.cnf, or USER:PASSWORD before the @)"
)
# A scheme-like prefix (``mysql+pymysql:``, ``sqlite:``); one letter is a Windows drive.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]+:")


def resolve_url(db: str | None = None, *, source: str = "--db") -> str:
    """The database URL to use: ``db`` if given, else ``$JOBTUI_DB``, else the default file.

    A bare path (no ``://``) means a SQLite file. What only looks like a path
    is refused (InvalidInput) before anything is created: an empty value, a
    URL missing a slash (``mysql+pymysql:/user:pw@host/db`` would otherwise be
    a SQLite file whose path holds the password), ``user:password@`` without
    a scheme, control characters. ``source`` names where ``db`` came from in errors
    (a profile's ``url`` in the config file).
    """
    if db is not None:
        value = db
    else:
        value, source = os.environ.get(ENV_VAR) or "", ENV_VAR
        if not value:
            return f"sqlite:///{default_db_path()}"
    if not value.strip():
        raise InvalidInput(f"invalid {source} {value!r}: empty; {ACCEPTED_URLS}")
    if any(not c.isprintable() for c in value):
        raise InvalidInput(
            f"invalid {source} {mask_value(value)!r}: it holds control characters; {ACCEPTED_URLS}"
        )
    if "://" in value:
        return value
    if _SCHEME.match(value):
        raise InvalidInput(
            f"invalid {source} {mask_value(value)!r}: a URL needs two slashes after its scheme "
            f"(SCHEME://...); for a SQLite file of that name write ./NAME; {ACCEPTED_URLS}"
        )
    if _looks_like_credentials(value):
        raise InvalidInput(
            f"invalid {source} {mask_value(value)!r}: it looks like USER:PASSWORD@HOST without "
            f"a scheme (for a SQLite file of that name write sqlite:///PATH); {ACCEPTED_URLS}"
        )
    return f"sqlite:///{Path(value).expanduser().absolute()}"


def _looks_like_credentials(value: str) -> bool:
    """A path segment holding ``something:something@``."""
    return any(":" in seg.rpartition("@")[0] for seg in value.split("/") if "@" in seg)


# The options jobtui passes on to PyMySQL from a MySQL URL's query string, and how
# each is checked (anything else is refused: PyMySQL would fail with a TypeError, or
# the option would undo what jobtui sets: autocommit, init_command, local_infile ...).
_BOOLS = ("1", "0", "true", "false", "yes", "no", "on", "off")
MYSQL_OPTIONS: dict[str, str] = {
    "read_default_file": "file",
    "read_default_group": "name",
    "unix_socket": "path",
    "charset": "utf8mb4",
    "connect_timeout": "seconds",
    "read_timeout": "seconds",
    "write_timeout": "seconds",
    "ssl_ca": "file",
    "ssl_capath": "directory",
    "ssl_cert": "file",
    "ssl_key": "file",
    "ssl_cipher": "name",
    "ssl_check_hostname": "bool",
    "program_name": "name",
    "password": "secret",
}
MAX_TIMEOUT = 31_536_000  # PyMySQL's limit for connect_timeout (a year)
_NAME = re.compile(r"[A-Za-z0-9_.:+\-]{1,200}")


def parse_url(value: str) -> URL:
    """A validated URL of a database jobtui knows (InvalidInput otherwise, password masked)."""
    shown = mask_value(value)
    netloc = value.split("://", 1)[-1].split("/", 1)[0]
    if netloc.count("@") > 1:
        # make_url would take part of the password for the host name (and show it)
        raise InvalidInput(
            f"invalid database URL {shown!r}: a password containing @ must be "
            "written %40 (URL-encoded), or put the credentials in an option file "
            "(?read_default_file=~/.my.cnf)"
        )
    try:
        url = make_url(value)
        port = url.port
    except (ArgumentError, ValueError):
        raise InvalidInput(f"invalid database URL {shown!r}: {ACCEPTED_URLS}") from None
    backend = url.get_backend_name()
    if backend not in ("sqlite", "mysql", "mariadb"):
        raise InvalidInput(f"unsupported database {backend!r} in {shown}: {ACCEPTED_URLS}")
    if backend == "sqlite":
        _check_sqlite_url(value, url, shown)
        return url
    if url.get_driver_name() not in ("pymysql",):
        url = url.set(drivername=f"{backend}+pymysql")
    if port is not None and not 1 <= port <= 65535:
        raise InvalidInput(
            f"invalid port {port} in database URL {shown!r}: a number from 1 to 65535"
        )
    if not url.database:
        raise InvalidInput(f"invalid database URL {shown!r}: no /DATABASE; {ACCEPTED_URLS}")
    if not url.host and not url.query.get("read_default_file") and not url.query.get("unix_socket"):
        raise InvalidInput(
            f"invalid database URL {shown!r}: no HOST (nor ?read_default_file= or "
            f"?unix_socket= to take it from); {ACCEPTED_URLS}"
        )
    if url.host and any(c.isspace() or not c.isprintable() for c in url.host):
        raise InvalidInput(f"invalid host {url.host!r} in database URL {shown!r}: {ACCEPTED_URLS}")
    for key, option in url.query.items():
        _check_mysql_option(key, option, shown)
    if option_file := url.query.get("read_default_file"):
        group = str(url.query.get("read_default_group") or "client")
        _check_option_file(str(option_file), group, port, shown)
    return url


def _check_option_file(path: str, group: str, port: int | None, shown: str) -> None:
    """Read the option file as PyMySQL will, so that a broken one is bad input, not a crash."""
    parser = optionfile.Parser()
    try:
        parser.read(os.path.expanduser(path), encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError) as exc:
        # never the text of a line: it may hold a password
        line = getattr(exc, "lineno", None)
        reason = type(exc).__name__ + (f" at line {line}" if line else "")
        raise InvalidInput(
            f"invalid option file {path!r} (?read_default_file= in {shown!r}): expected "
            f"[{group}] followed by key = value lines ({reason})"
        ) from None
    if port is None and parser.has_option(group, "port"):
        value = parser.get(group, "port")
        if not (value.isdigit() and 1 <= int(value) <= 65535):
            raise InvalidInput(
                f"invalid port {value!r} in option file {path!r} [{group}]: a number from 1 "
                "to 65535"
            )


def _check_sqlite_url(value: str, url: URL, shown: str) -> None:
    """``sqlite:///PATH`` (``sqlite://`` alone: in memory); no host, no options."""
    rest = value.split("://", 1)[1]
    if rest and not rest.startswith("/"):
        raise InvalidInput(
            f"invalid database URL {shown!r}: a SQLite URL is sqlite:///PATH (three slashes "
            "for a relative path, four for an absolute one)"
        )
    if rest == "/" or (rest and not url.database):
        raise InvalidInput(f"invalid database URL {shown!r}: sqlite:/// needs a file PATH")
    if url.query:
        raise InvalidInput(
            f"invalid database URL {shown!r}: a SQLite URL takes no ?options "
            f"({', '.join(sorted(url.query))})"
        )


def _check_mysql_option(key: str, option: Any, shown: str) -> None:
    kind = MYSQL_OPTIONS.get(key)
    if kind is None:
        raise InvalidInput(
            f"unknown connect option {key!r} in database URL {shown!r}: accepted are "
            f"{', '.join(sorted(MYSQL_OPTIONS))}"
        )
    if not isinstance(option, str):
        raise InvalidInput(f"connect option {key!r} given twice in database URL {shown!r}")
    ok = {
        "path": bool(option.strip()),
        "file": os.path.isfile(os.path.expanduser(option)),
        "directory": os.path.isdir(os.path.expanduser(option)),
        "name": bool(_NAME.fullmatch(option)),
        "utf8mb4": option == "utf8mb4",
        "seconds": option.isdigit() and 1 <= int(option) <= MAX_TIMEOUT,
        "bool": option.lower() in _BOOLS,
        "secret": True,
    }[kind]
    if ok:
        return
    accepted = {
        "path": "a file path",
        "file": "an existing file (none is there)",
        "directory": "an existing directory (none is there)",
        "name": "letters, digits and _ . : + -",
        "utf8mb4": "utf8mb4 (jobtui stores full UTF-8)",
        "seconds": f"whole seconds from 1 to {MAX_TIMEOUT}",
        "bool": "true or false",
    }[kind]
    raise InvalidInput(
        f"invalid connect option {key}={option!r} in database URL {shown!r}: {accepted}"
    )


def mask_url(url: URL | str) -> str:
    """The URL with any password (``user:PASSWORD@`` or ``?password=``) replaced by ***."""
    if isinstance(url, str):
        if url.split("://", 1)[-1].split("/", 1)[0].count("@") > 1:
            return mask_text(url)
        try:
            parsed = make_url(url)
        except (ArgumentError, ValueError):
            return mask_value(url)
        return mask_text(parsed.render_as_string(hide_password=True))
    return mask_text(url.render_as_string(hide_password=True))


def mask_value(value: str) -> str:
    """A value given as a database URL, safe to echo however malformed it is.

    Everything between the scheme and the last ``@`` (user and password, since
    where one ends cannot be told in a broken URL) becomes ***, and so does a
    ``?password=``.
    """
    head = m.group(0) if (m := re.match(r"[A-Za-z][A-Za-z0-9+.\-]*:/*", value)) else ""
    at = value.rfind("@")
    if at >= len(head):
        value = head + "***" + value[at:]
    return mask_text(value)


_PASSWORD_IN_URL = re.compile(r"(:/+[^:/@\s]*:)[^\s/]*@")  # greedy: up to the last @
# PyMySQL also takes the password as a query parameter (?password=, ?passwd=).
_PASSWORD_IN_QUERY = re.compile(r"([?&](?:password|passwd)=)[^&\s]*", re.IGNORECASE)


def mask_text(text: str) -> str:
    """Mask ``user:password@`` and ``?password=`` in free text (messages that quote a URL)."""
    return _PASSWORD_IN_QUERY.sub(r"\1***", _PASSWORD_IN_URL.sub(r"\1***@", text))
