"""Time helpers: one clock type, ISO 8601 in and out, UTC in storage.

The database keeps naive UTC ``DATETIME(6)`` values; everything above the
store works with timezone-aware datetimes.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

from jobtui.core.errors import InvalidInput

Clock = Callable[[], datetime]


def utcnow() -> datetime:
    """The real clock (aware, UTC). Inject another ``Clock`` in tests."""
    return datetime.now(UTC)


def iso(value: datetime | None) -> str | None:
    """ISO 8601 with offset, or None."""
    if value is None:
        return None
    return aware(value).isoformat()


def aware(value: datetime) -> datetime:
    """Treat a naive datetime as UTC; convert an aware one to UTC."""
    tz = value.tzinfo
    if tz is UTC:
        return value
    if tz is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def to_db(value: datetime | None) -> datetime | None:
    """Aware datetime to the naive UTC value the tables store."""
    if value is None:
        return None
    if value.tzinfo is None:
        return value
    return aware(value).replace(tzinfo=None)


def from_db(value: datetime | str | None) -> datetime | None:
    """A stored naive UTC value (or SQLite text) back to an aware datetime."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return aware(value)


def parse_when(text: str, what: str = "WHEN") -> datetime:
    """Parse an ISO 8601 date-time from the command line; a value without offset is UTC."""
    if isinstance(text, datetime):
        return aware(text)
    try:
        value = datetime.fromisoformat(text.strip())
    except (ValueError, AttributeError):
        raise InvalidInput(
            f"invalid {what} {text!r}: expected an ISO 8601 date-time such as "
            "2026-12-24T18:00:00+01:00 (no offset means UTC)"
        ) from None
    if not 1970 < value.year < 9999:
        raise InvalidInput(f"invalid {what} {text!r}: the year must be between 1971 and 9998")
    return aware(value)
