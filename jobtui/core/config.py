"""The configuration file and its named profiles (docs/configuration.md).

``$JOBTUI_CONFIG``, else ``$XDG_CONFIG_HOME/jobtui/config.toml``
(``~/.config/jobtui/config.toml``)::

    default = "prod"

    [profiles.prod]
    url = "mysql+pymysql://ops@db1/jobs"
    option_file = "~/.my.cnf"      # the password: never in this file
    theme = "nord"
    refresh = 2
    keep_days = 60

    [profiles.local]
    url = "~/jobs.db"
    runners = 2

A profile is chosen by ``--profile NAME``, else ``$JOBTUI_PROFILE``, else
``default``. What it holds only fills what the command line and the
environment leave open: command-line options > environment (``JOBTUI_DB``)
> profile > built-in defaults.

Everything in the file is checked when it is read, every profile: an unknown
key, a value of the wrong type or range, a ``default`` naming no profile, or
broken TOML is an ``InvalidInput`` (exit 2) naming the file, the key and
what is accepted, before anything is opened.
"""

from __future__ import annotations

import math
import os
import re
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from jobtui.core.db import mask_url, resolve_url
from jobtui.core.errors import InvalidInput
from jobtui.core.retention import MAX_KEEP_DAYS, MAX_KEEP_RUNS

CONFIG_VAR = "JOBTUI_CONFIG"
PROFILE_VAR = "JOBTUI_PROFILE"
CONFIG_FILE = "config.toml"
TOP_KEYS = ("default", "profiles")
PROFILE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
PROFILE_NAME_ACCEPTED = "1-64 letters, digits and _ . -"
MAX_RUNNERS = 256  # as --runners
MIN_REFRESH, MAX_REFRESH = 0.1, 3600.0  # as --refresh
OFF = "off"


def config_path() -> Path:
    """``$JOBTUI_CONFIG``, else ``$XDG_CONFIG_HOME/jobtui/config.toml`` (``~/.config``
    when unset or not absolute, as the XDG base directory spec says)."""
    given = os.environ.get(CONFIG_VAR)
    if given:
        return Path(given).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".config"
    return root / "jobtui" / CONFIG_FILE


# ---------------------------------------------------------------------- checking values


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() and value.isprintable() else None


def _refresh(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    ok = math.isfinite(value) and MIN_REFRESH <= value <= MAX_REFRESH
    return float(value) if ok else None


def _runners(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_RUNNERS else None


class _Off:
    """The value ``off`` (no limit), told apart from a value that is wrong (None)."""


def _keep_runs(value: Any) -> Any:
    if value == OFF:
        return _Off
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_KEEP_RUNS else None


def _keep_days(value: Any) -> Any:
    if value == OFF:
        return _Off
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) and 0 < value <= MAX_KEEP_DAYS else None


# key -> (check: the value or None when wrong, what is accepted)
PROFILE_KEYS: dict[str, tuple[Any, str]] = {
    "url": (_text, "a database URL as --db takes it (sqlite:///PATH, a file path, "
            "mysql+pymysql://USER@HOST/DB), its password in option_file, not here"),
    "option_file": (_text, "the path of a MySQL option file holding the credentials "
                    "([client] user/password), e.g. \"~/.my.cnf\""),
    "theme": (_text, "the name of a Textual theme, e.g. \"nord\" (the console's ctrl+p lists them)"),
    "refresh": (_refresh, f"a number of seconds from {MIN_REFRESH:g} to {MAX_REFRESH:g}, as --refresh"),
    "runners": (_runners, f"a whole number from 0 to {MAX_RUNNERS}, as the console's --runners"),
    "keep_runs": (_keep_runs, f"a whole number from 0 to {MAX_KEEP_RUNS}, or \"off\", as --keep-runs"),
    "keep_days": (_keep_days, f"a number of days above 0, at most {MAX_KEEP_DAYS:g}, or \"off\", "
                  "as --keep-days"),
    "keep_error_days": (_keep_days, f"a number of days above 0, at most {MAX_KEEP_DAYS:g}, or "
                        "\"off\", as --keep-error-days"),
}  # fmt: skip
# the keys that stand for a command-line option of that name (argparse's dest)
OPTION_KEYS = ("refresh", "runners", "keep_runs", "keep_days", "keep_error_days")


@dataclass(frozen=True)
class Profile:
    """One ``[profiles.NAME]``: only the keys the file gives (``options``: by the dest of
    the command-line option each stands for; ``off`` is None, as the options read it)."""

    name: str
    url: str | None = None
    theme: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def shown(self) -> dict[str, Any]:
        """The profile fit to print: the URL's password masked."""
        return {
            "name": self.name,
            "url": None if self.url is None else mask_url(self.url),
            "theme": self.theme,
            **self.options,
        }


@dataclass(frozen=True)
class Config:
    """The file's profiles (none when there is no file) and what to warn about."""

    path: Path
    exists: bool
    profiles: Mapping[str, Profile]
    default: str | None = None
    warnings: tuple[str, ...] = ()

    def select(self, name: str | None = None) -> Profile | None:
        """The profile named by ``name`` (``--profile``), else ``$JOBTUI_PROFILE``, else
        the file's ``default``; None when none is named. InvalidInput for an unknown name."""
        source = "--profile"
        if name is None:
            name, source = os.environ.get(PROFILE_VAR) or None, PROFILE_VAR
        if name is None:
            return self.profiles[self.default] if self.default else None
        if name in self.profiles:
            return self.profiles[name]
        if not self.exists:
            raise InvalidInput(
                f"unknown profile {name!r} ({source}): there is no config file {self.path} "
                f"(docs/configuration.md; ${CONFIG_VAR} names another file)"
            )
        known = ", ".join(sorted(self.profiles)) or "none"
        raise InvalidInput(
            f"unknown profile {name!r} ({source}): {self.path} defines {known} "
            "([profiles.NAME] tables)"
        )


def load(path: Path | None = None) -> Config:
    """Read and check the config file (no file: no profiles; a ``$JOBTUI_CONFIG`` that
    names no file is an error)."""
    path = path or config_path()
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        if os.environ.get(CONFIG_VAR):
            raise InvalidInput(
                f"invalid ${CONFIG_VAR} {str(path)!r}: no such file (a TOML file with "
                "[profiles.NAME] tables; unset it for the default "
                f"$XDG_CONFIG_HOME/jobtui/{CONFIG_FILE})"
            ) from None
        return Config(path, False, {})
    except OSError as exc:
        raise InvalidInput(f"cannot read the config file {path}: {exc.strerror or exc}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(
            f'invalid config file {path}: not TOML ({exc}); expected default = "NAME" and '
            "[profiles.NAME] tables of key = value lines"
        ) from None
    return _check(path, data)


def _check(path: Path, data: dict[str, Any]) -> Config:
    for key in data:
        if key not in TOP_KEYS:
            raise InvalidInput(
                f'unknown key {key!r} in {path}: accepted at the top are default = "NAME" '
                "and [profiles.NAME] tables"
            )
    tables = data.get("profiles", {})
    if not isinstance(tables, dict):
        raise InvalidInput(f"invalid profiles in {path}: expected [profiles.NAME] tables")
    profiles: dict[str, Profile] = {}
    passwords: list[str] = []
    for name, table in tables.items():
        if not PROFILE_NAME.fullmatch(name):
            raise InvalidInput(f"invalid profile name {name!r} in {path}: {PROFILE_NAME_ACCEPTED}")
        if not isinstance(table, dict):
            raise InvalidInput(
                f"invalid profiles.{name} in {path}: expected a table [profiles.{name}] "
                f"of keys {', '.join(PROFILE_KEYS)}"
            )
        profiles[name] = profile = _profile(path, name, table)
        if profile.url is not None and _has_password(profile.url):
            passwords.append(name)
    default = data.get("default")
    if default is not None and (not isinstance(default, str) or default not in profiles):
        known = ", ".join(sorted(profiles)) or "none"
        raise InvalidInput(
            f"invalid default = {default!r} in {path}: expected the name of a profile "
            f"(defined: {known})"
        )
    warnings: tuple[str, ...] = ()
    if passwords and _readable_by_others(path):
        warnings = (
            f"{path} holds a database password (profile {', '.join(passwords)}) and is "
            f"readable by other users: chmod 600 {path}, or better, put the password in an "
            'option file (option_file = "~/.my.cnf")',
        )
    return Config(path, True, profiles, default, warnings)


def _profile(path: Path, name: str, table: dict[str, Any]) -> Profile:
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in PROFILE_KEYS:
            raise InvalidInput(
                f"unknown key {key!r} in [profiles.{name}] of {path}: accepted are "
                f"{', '.join(PROFILE_KEYS)}"
            )
        check, accepted = PROFILE_KEYS[key]
        checked = check(value)
        if checked is None:
            shown = mask_url(value) if key == "url" and isinstance(value, str) else value
            raise InvalidInput(
                f"invalid profiles.{name}.{key} = {shown!r} in {path}: expected {accepted}"
            )
        values[key] = None if checked is _Off else checked
    url = _url(path, name, values.get("url"), values.get("option_file"))
    options = {k: values[k] for k in OPTION_KEYS if k in values}
    return Profile(name, url, values.get("theme"), options)


def _url(path: Path, name: str, url: str | None, option_file: str | None) -> str | None:
    """The profile's URL as --db would resolve it, with the option file as
    ``?read_default_file=``."""
    where = f"profiles.{name}.url in {path}"
    if url is None:
        if option_file is not None:
            raise InvalidInput(
                f"invalid [profiles.{name}] in {path}: option_file needs a url = "
                '"mysql+pymysql://[USER@]HOST/DATABASE" to read the credentials for'
            )
        return None
    resolved = resolve_url(url, source=where)
    if option_file is None:
        return resolved
    try:
        parsed = make_url(resolved)
    except (ArgumentError, ValueError):
        raise InvalidInput(f"invalid {where}: {mask_url(resolved)!r} is no URL") from None
    if parsed.get_backend_name() not in ("mysql", "mariadb"):
        raise InvalidInput(
            f"invalid profiles.{name}.option_file in {path}: an option file is for "
            f"MySQL/MariaDB, and the url is {mask_url(resolved)!r}"
        )
    if "read_default_file" in parsed.query:
        raise InvalidInput(
            f"invalid [profiles.{name}] in {path}: give the option file once, either "
            "option_file or ?read_default_file= in the url"
        )
    file = os.path.expanduser(option_file)
    return resolved + ("&" if "?" in resolved else "?") + "read_default_file=" + quote(file)


def _has_password(url: str) -> bool:
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):
        return False
    return bool(parsed.password) or any(k.lower() in ("password", "passwd") for k in parsed.query)


def _readable_by_others(path: Path) -> bool:
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return bool(mode & (stat.S_IRGRP | stat.S_IROTH))
