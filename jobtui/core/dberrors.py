"""What the database drivers' errors mean: their codes, read once for every module."""

from __future__ import annotations

from typing import Any


def error_code(exc: BaseException) -> int | None:
    """The MySQL/MariaDB error number of ``exc`` (through SQLAlchemy or from a raw
    cursor), or None (SQLite, or not a server error)."""
    orig: Any = getattr(exc, "orig", None) or exc
    args = getattr(orig, "args", ())
    return args[0] if args and isinstance(args[0], int) else None
