"""The worker's log lines: one per state change a person cares about, as text or JSON
(``jobtui worker --log-format text|json``), with the same fields in both.

Every line has ``ts`` (UTC, ISO 8601), ``level`` (DEBUG, INFO, WARNING, ERROR),
``event`` (``runner.started``, ``run.failed``, ``job.broken``, … docs/operations.md) and
the event's fields. A text line is ``TS LEVEL EVENT key=value …`` (values with spaces
or quotes are JSON-quoted); a JSON line is one object. Python ``logging`` records of
the ``jobtui`` loggers go through it too: an ``event`` and ``fields`` given in
``extra`` are used, else the event is ``log`` and the message a field.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
from datetime import UTC, datetime
from typing import IO, Any

FORMATS = ("text", "json")
LOGGER = "jobtui"
_PLAIN = re.compile(r"[^\s\"'=\\]*")


def event(log: logging.Logger, level: int, name: str, **fields: Any) -> None:
    """Log one event with its fields (they reach both formats alike)."""
    log.log(level, name, extra={"event": name, "fields": fields})


def _value(value: Any) -> str:
    if isinstance(value, datetime):
        value = value.isoformat()
    if isinstance(value, bool):
        return "true" if value else "false"
    text = value if isinstance(value, str) else json.dumps(value)
    return text if _PLAIN.fullmatch(text) and text else json.dumps(text)


class Formatter(logging.Formatter):
    def __init__(self, fmt: str = "text") -> None:
        super().__init__()
        self.json = fmt == "json"

    def fields(self, record: logging.LogRecord) -> dict[str, Any]:
        ts = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        out: dict[str, Any] = {
            "ts": ts.replace("+00:00", "Z"),
            "level": record.levelname,
            "event": getattr(record, "event", None) or "log",
        }
        given = getattr(record, "fields", None)
        if isinstance(given, dict):
            out.update({k: v for k, v in given.items() if v is not None})
        else:
            out["message"] = record.getMessage()
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return out

    def format(self, record: logging.LogRecord) -> str:
        data = self.fields(record)
        if self.json:
            return json.dumps(data, default=str, ensure_ascii=False)
        head = f"{data.pop('ts')} {data.pop('level')} {data.pop('event')}"
        return " ".join([head, *(f"{k}={_value(v)}" for k, v in data.items())])


_handler_lock = threading.Lock()


def configure(fmt: str = "text", stream: IO[str] | None = None) -> logging.Handler:
    """Send the ``jobtui`` loggers' INFO and above to ``stream`` (stderr) in ``fmt``;
    replaces a handler an earlier call added. Returns the handler."""
    if fmt not in FORMATS:
        from jobtui.core.errors import InvalidInput

        raise InvalidInput(f"invalid log format {fmt!r}: accepted are {', '.join(FORMATS)}")
    root = logging.getLogger(LOGGER)
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(Formatter(fmt))
    with _handler_lock:
        for old in list(root.handlers):
            if getattr(old, "_jobtui_oplog", False):
                root.removeHandler(old)
        handler._jobtui_oplog = True  # type: ignore[attr-defined]
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        root.propagate = False
    return handler
