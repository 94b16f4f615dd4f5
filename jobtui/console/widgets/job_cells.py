"""A job's row in the table as plain cells: built off the event loop, drawn only on screen.

A ``Cell`` is a small tuple (text, theme variable, bold, justify, suffixes):
cheap to build in the refresh thread, cheap to compare with the cell shown,
and turned into a Rich ``Text`` only when its row is painted. Building a
``Text`` per cell for every row (10,000 jobs: 90,000 cells) cost most of a
second; the screen shows a few hundred cells at a time.

Everything here is plain functions of plain data: ``prepare`` runs in the
refresh thread on a ``Shown`` (a copy of what the table held when the refresh
started), never on the widget.
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
from jobtui.core.transitions import status_marks

_FAR = 1e18  # sorts after every real time stamp

# (key, label) in display order, the most useful first so that 80 columns show them
# ("Running" is a dash but while a job runs); "owner" only with all_owners. The first
# column (the job's name) stays in place when the table scrolls right.
COLUMNS = (
    ("name", "Job"),
    ("owner", "Owner"),
    ("status", "Status"),
    ("next", "Next run"),
    ("last", "Last run"),
    ("failures", "Fail"),
    ("cycles", "Runs"),
    ("duration", "Took"),
    ("schedule", "Schedule"),
    ("runner", "Running"),
)

STATUS_ORDER = {s: i for i, s in enumerate(Status)}

# What the status word hides (``transitions.status_marks``), appended to it as (text,
# theme variable): ``RUNNING ⏸ paused``, ``PAUSED broken``, ``RUNNING aborting``
# (docs/console.md, "Status colours"). The column's width is measured with them.
MARK_SUFFIX: dict[str, tuple[str, str]] = {
    "paused": (" ⏸ paused", "warning"),
    "disabled": (" disabled", "foreground-muted"),
    "broken": (" broken", "error"),
    "removing": (" removing", "warning"),
    "aborting": (" aborting", "warning"),
}


def _ts(when: datetime | None) -> float:
    return when.timestamp() if when is not None else _FAR


def _halted(job: Job) -> bool:
    """No next run shows (``fmt.next_run_text`` is a dash): sorted after every time."""
    return fmt.next_run_text(job, _EPOCH) == fmt.DASH


_EPOCH = datetime(1970, 1, 1).astimezone()

SORTS: dict[str, Callable[[Job], Any]] = {
    "name": lambda j: (j.name.lower(), j.owner),
    "status": lambda j: (STATUS_ORDER[j.status], j.name.lower()),
    # Jobs with no next run (paused, broken, ...) last: not above jobs due in a second.
    "next": lambda j: (_halted(j), _ts(j.next_run), j.name.lower()),
    "last": lambda j: (-_ts(j.last_cycle_start or j.last_run), j.name.lower()),
    "failures": lambda j: (-j.failures, j.name.lower()),
    "duration": lambda j: (-(j.last_duration or 0.0), j.name.lower()),
    "owner": lambda j: (j.owner, j.name.lower()),
}
SORT_CYCLE = ("name", "status", "next", "last", "failures", "duration")
# The column each sort is marked on (▲ as listed, ▼ reversed).
SORT_COLUMN = {
    "name": "name",
    "status": "status",
    "next": "next",
    "last": "last",
    "failures": "failures",
    "duration": "duration",
    "owner": "owner",
}
REVERSED = "-"  # a sort_by of "-next": the next-run order reversed


class Desc:
    """A sort key in reverse: compares the other way round (bisect and sort keep working)."""

    __slots__ = ("key",)

    def __init__(self, key: Any) -> None:
        self.key = key

    def __lt__(self, other: Desc) -> bool:
        return bool(other.key < self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Desc) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


def sort_function(sort_by: str) -> Callable[[Job], Any]:
    """The key function of ``sort_by`` (``"next"``, or ``"-next"`` reversed). Reversed,
    the jobs with no next run still come last."""
    base = SORTS[sort_by.removeprefix(REVERSED)]
    if not sort_by.startswith(REVERSED):
        return base
    if sort_by == REVERSED + "next":
        return lambda j: ((k := base(j))[0], Desc(k[1:]))
    return lambda j: Desc(base(j))


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


def row_cells(
    job: Job, now: datetime, *, all_owners: bool, memo: dict[Any, Cell] | None = None
) -> RowCells:
    """A job's row (pure: runs in the refresh thread or on the event loop).

    ``memo`` (see ``rows_cells``) shares the cells many rows have alike.
    """
    if memo is None:
        memo = {}
    last, outcome = fmt.last_run_text(job, now)
    status = job.status
    marks = status_marks(job)
    suffixes = tuple(MARK_SUFFIX[mark] for mark in marks) if marks else ()
    status_cell = memo.get((status, suffixes))
    if status_cell is None:
        status_cell = memo[(status, suffixes)] = Cell(
            status.value,
            fmt.STATUS_VARIABLE[status],
            status is Status.RUNNING or status is Status.BROKEN,
            "left",
            suffixes,
        )
    # Schedules are shared by the rows read together (jobtui.core.store): describe each once.
    schedule = job.schedule
    schedule_cell = memo.get(("schedule", id(schedule)))
    if schedule_cell is None:
        schedule_cell = memo[("schedule", id(schedule))] = Cell(schedule.describe())
    failures = job.failures
    rest = (
        _plain(fmt.next_run_text(job, now), memo),
        Cell(last, fmt.OUTCOME_VARIABLE[outcome]) if outcome else _plain(last, memo),
        _new(Cell, (fmt.failures_text(job), "error", False, "right", ()))
        if failures
        else _right("0", memo),
        _right(str(job.cycles), memo),
        _right(fmt.duration(job.last_duration), memo),
        schedule_cell,
        _plain(fmt.runner_text(job, now), memo),
    )
    if all_owners:
        return (
            _new(Cell, (job.name, "", False, "left", ())),
            _plain(job.owner, memo),
            status_cell,
            *rest,
        )
    return (_new(Cell, (job.name, "", False, "left", ())), status_cell, *rest)


def rows_cells(jobs: Iterable[Job], now: datetime, *, all_owners: bool) -> dict[int, RowCells]:
    """Many jobs' rows (the refresh thread: 10,000 at the first load), the cells they
    have alike (dashes, a status, a schedule) made once: cells are immutable tuples."""
    memo: dict[Any, Cell] = {}
    # The jobs stay referenced for the whole call, so the schedules' ids in memo stay theirs.
    jobs = list(jobs)
    return {job.id: row_cells(job, now, all_owners=all_owners, memo=memo) for job in jobs}


_new = tuple.__new__  # a Cell without NamedTuple's keyword-default constructor


def _plain(text: str, memo: dict[Any, Cell]) -> Cell:
    cell = memo.get(text)
    if cell is None:
        cell = memo[text] = _new(Cell, (text, "", False, "left", ()))
    return cell


def _right(text: str, memo: dict[Any, Cell]) -> Cell:
    cell = memo.get((text, "right"))
    if cell is None:
        cell = memo[(text, "right")] = _new(Cell, (text, "", False, "right", ()))
    return cell


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
    """The widest cell of each column over ``rows`` (each distinct text measured once)."""
    out = [0] * columns
    for i, column in enumerate(zip(*rows, strict=True)):
        if i < columns:
            texts = {cell.plain if cell[4] else cell[0] for cell in column}
            out[i] = max(map(cell_len, texts), default=0)
    return out


@dataclass(frozen=True, repr=False)
class Shown:
    """What the table held when a refresh started, as plain data for the refresh thread."""

    jobs: dict[int, Job]  # a copy: the table's own dict changes on the event loop
    sort_by: str
    all_owners: bool

    def __repr__(self) -> str:
        # Short: @work describes a worker by its arguments' reprs, on the event loop,
        # every tick (10,000 Jobs' reprs would cost the loop ~100 ms a second).
        return f"Shown({len(self.jobs)} jobs, sort_by={self.sort_by!r})"


@dataclass
class Prepared:
    """What the refresh thread hands the table: the changed rows' widest cells and sort keys.

    No cells: the table makes a row's cells when it draws it (a screenful at a time).
    """

    widths: list[int] = field(default_factory=list)  # per column, over the changed rows
    sort_by: str = ""
    sort_keys: dict[int, Any] = field(default_factory=dict)  # for ``sort_by``


_WIDTHS_CHUNK = 5000  # rows whose cells are alive at once while measuring


def prepare(jobs: Iterable[Job], shown: Shown, now: datetime) -> tuple[list[Job], Prepared]:
    """In the refresh thread: drop the jobs equal to what was shown; measure the others'
    cells (a column widens to its widest) and make their sort keys, so that adding
    100,000 rows leaves the event loop nothing to measure or compute.
    """
    known = shown.jobs
    changed = [job for job in jobs if known.get(job.id) != job]
    columns = len(column_keys(shown.all_owners))
    out = [0] * columns
    for start in range(0, len(changed), _WIDTHS_CHUNK):
        rows = rows_cells(changed[start : start + _WIDTHS_CHUNK], now, all_owners=shown.all_owners)
        out = [max(a, b) for a, b in zip(out, widths(rows.values(), columns), strict=True)]
    sort_fn = sort_function(shown.sort_by)
    return changed, Prepared(
        widths=out,
        sort_by=shown.sort_by,
        sort_keys={job.id: sort_fn(job) for job in changed},
    )
