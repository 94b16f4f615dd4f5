"""A job's row in the table as plain cells: built off the event loop, drawn only on screen.

A ``Cell`` is a small tuple (text, theme variable, bold, justify, suffixes):
cheap to build in the refresh thread, cheap to compare with the cell shown,
and turned into a Rich ``Text`` only when its row is painted. Building a
``Text`` per cell for every row (10,000 jobs: 90,000 cells) cost most of a
second; the screen shows a few hundred cells at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, NamedTuple

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text

from jobtui.console import formatting as fmt
from jobtui.core.model import Job, Status

_FAR = 1e18  # sorts after every real time stamp

# (key, label) in display order; "owner" only with all_owners.
COLUMNS = (
    ("name", "Job"),
    ("owner", "Owner"),
    ("status", "Status"),
    ("next", "Next run"),
    ("last", "Last run"),
    ("runner", "Running"),
    ("duration", "Took"),
    ("failures", "Fail"),
    ("cycles", "Runs"),
    ("schedule", "Schedule"),
)

STATUS_ORDER = {s: i for i, s in enumerate(Status)}


def _ts(when: datetime | None) -> float:
    return when.timestamp() if when is not None else _FAR


SORTS: dict[str, Callable[[Job], Any]] = {
    "name": lambda j: (j.name.lower(), j.owner),
    "status": lambda j: (STATUS_ORDER[j.status], j.name.lower()),
    "next": lambda j: (_ts(j.next_run), j.name.lower()),
    "last": lambda j: (-_ts(j.last_cycle_start or j.last_run), j.name.lower()),
    "failures": lambda j: (-j.failures, j.name.lower()),
    "duration": lambda j: (-(j.last_duration or 0.0), j.name.lower()),
    "owner": lambda j: (j.owner, j.name.lower()),
}
SORT_CYCLE = ("name", "status", "next", "last", "failures", "duration")


class Cell(NamedTuple):
    """One cell as plain data; ``render`` makes its Text when the row is on screen."""

    text: str
    variable: str = ""  # theme variable of its colour ("" for the table's own)
    bold: bool = False
    justify: str = "left"
    suffixes: tuple[tuple[str, str], ...] = ()  # (text, theme variable) appended

    @property
    def plain(self) -> str:
        """The text shown, suffixes included."""
        if not self.suffixes:
            return self.text
        return self.text + "".join(text for text, _ in self.suffixes)

    @property
    def width(self) -> int:
        """Terminal cells the text takes (a row is one line: no wrapping)."""
        return cell_len(self.plain)


RowCells = tuple[Cell, ...]
"""A row's cells in the table's column order."""


def column_keys(all_owners: bool) -> tuple[str, ...]:
    return tuple(key for key, _ in COLUMNS if all_owners or key != "owner")


def row_cells(job: Job, now: datetime, *, all_owners: bool) -> RowCells:
    """A job's row (pure: runs in the refresh thread or on the event loop)."""
    last, outcome = fmt.last_run_text(job, now)
    status = job.status
    suffixes: tuple[tuple[str, str], ...] = ()
    if job.broken and status is not Status.BROKEN:
        suffixes += ((" broken", "error"),)
    if job.abort_requested and job.running:
        suffixes += ((" aborting", "warning"),)
    name = Cell(job.name)
    status_cell = Cell(
        status.value,
        fmt.STATUS_VARIABLE[status],
        status is Status.RUNNING or status is Status.BROKEN,
        "left",
        suffixes,
    )
    rest = (
        Cell(fmt.next_run_text(job, now)),
        Cell(last, fmt.OUTCOME_VARIABLE[outcome] if outcome else ""),
        Cell(fmt.runner_text(job, now)),
        Cell(fmt.duration(job.last_duration), "", False, "right"),
        Cell(
            f"{job.failures}/{job.max_failures}" if job.failures else "0",
            "error" if job.failures else "",
            False,
            "right",
        ),
        Cell(str(job.cycles), "", False, "right"),
        Cell(job.schedule.describe()),
    )
    if all_owners:
        return (name, Cell(job.owner), status_cell, *rest)
    return (name, status_cell, *rest)


def render(cell: Cell, styles: dict[str, Style], *, name: bool = False) -> Text:
    """The Text painted for ``cell`` with the theme's ``styles``."""
    text, variable, bold, justify, suffixes = cell
    style: Style | str = styles.get(variable, "") if variable else ""
    if bold:
        style = Style.combine([style, Style(bold=True)]) if isinstance(style, Style) else "bold"
    if name:
        out = Text(text, style=style, no_wrap=True)
    else:
        out = Text(text, style=style, justify=justify)  # type: ignore[arg-type]
    for suffix, suffix_variable in suffixes:
        out.append(suffix, style=styles.get(suffix_variable, ""))
    return out


def widths(rows: Iterable[RowCells], columns: int) -> list[int]:
    """The widest cell of each column over ``rows``."""
    out = [0] * columns
    for cells in rows:
        for i, cell in enumerate(cells):
            w = cell_len(cell.text) if not cell.suffixes else cell.width
            if w > out[i]:
                out[i] = w
    return out


@dataclass
class Prepared:
    """What the refresh thread hands the table: changed rows' cells, widths, sort keys."""

    rows: dict[int, RowCells] = field(default_factory=dict)
    widths: list[int] = field(default_factory=list)  # per column, over ``rows``
    sort_by: str = ""
    sort_keys: dict[int, Any] = field(default_factory=dict)  # for ``sort_by``
