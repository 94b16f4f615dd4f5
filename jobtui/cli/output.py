"""What the verbs print: a line, JSON, a table, times and durations for people, and
the ``--json`` shape of a job (``Job.to_dict`` plus what the command line adds)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from jobtui.core.model import Job
from jobtui.core.showtime import halted, show_time, shown_next_run
from jobtui.core.timeutil import iso

PROG = "jobtui"  # the program's name in its messages (`jobtui: error: ...`)


def print_line(text: str = "") -> None:
    print(text)


def print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Left-aligned columns separated by two spaces; the last column is not padded."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    lines = []
    for row in (headers, *rows):
        cells = [c.ljust(widths[i]) for i, c in enumerate(row)]
        lines.append("  ".join(cells).rstrip())
    return "\n".join(lines)


def time_text(value: datetime | None, zone: str | None = None) -> str:
    """A time for people, to the second, with its zone's label: in ``zone`` (a job's
    ``--tz``) where given, else UTC (``showtime.show_time``)."""
    return show_time(value, zone)


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 10:
        return f"{seconds:.3f}s"
    if seconds < 3600:
        return f"{seconds:.1f}s"
    return f"{seconds / 3600:.1f}h"


def plain(value: Any) -> str:
    """A field's value on one line: ``-`` for none, yes/no, a list as JSON."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return json.dumps(value, ensure_ascii=False)
    return " ".join(str(value).split()) if isinstance(value, str) else str(value)


def job_dict(job: Job) -> dict[str, Any]:
    """The ``--json`` shape of a job: ``Job.to_dict()`` plus the cycle times of the latest run."""
    data = job.to_dict()
    data.setdefault("last_cycle_start", iso(job.last_cycle_start))
    data.setdefault("last_cycle_finish", iso(job.last_cycle_finish))
    # next_run stays the stored value; a halted job shows none (jobtui.core.showtime)
    data.setdefault("halted", halted(job))
    return data


def next_run_text(job: Job) -> str:
    """A job's next run for people: in its zone, labelled; ``-`` when halted or none."""
    return show_time(shown_next_run(job), job.schedule.tz)
