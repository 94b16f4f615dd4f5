"""The live job table: rows keyed by job id, updated cell by cell."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.color import Color, ColorParseError
from textual.reactive import reactive
from textual.widgets import DataTable
from textual.widgets.data_table import RowDoesNotExist

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
    ("duration", "Took"),
    ("failures", "Fail"),
    ("cycles", "Runs"),
    ("runner", "Running on"),
    ("schedule", "Schedule"),
)
TIME_COLUMNS = ("last", "next", "runner")

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


class NameCell(Text):
    """The name cell remembers its job, so sorting can look at the whole job."""

    job_id: int = 0


class JobTable(DataTable[Text]):
    """Every job as one row, refreshed in place so cursor, scroll and sort survive."""

    BINDINGS = [
        Binding("s", "cycle_sort", "Sort", id="sort", tooltip="Cycle the sort column"),
    ]

    sort_by: reactive[str] = reactive("name")
    """The job attribute rows are sorted by (see SORT_CYCLE)."""

    filter_text: reactive[str] = reactive("")
    """Only rows whose name, owner or status contains this text (case-insensitive)."""

    def __init__(
        self,
        *,
        clock: Callable[[], datetime],
        all_owners: bool = False,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.clock = clock
        self.all_owners = all_owners
        self.jobs: dict[int, Job] = {}
        self._shown: dict[int, dict[str, str]] = {}
        self._styles: dict[str, Style] = {}

    def on_mount(self) -> None:
        for key, label in COLUMNS:
            if key == "owner" and not self.all_owners:
                continue
            self.add_column(label, key=key)
        self._load_styles()
        self.app.theme_changed_signal.subscribe(self, self._on_theme_changed)

    # ------------------------------------------------------------------ data in

    def apply(self, changed: Iterable[Job], ids: set[int] | None = None) -> None:
        """Apply a refresh: changed rows in place, removed ids out, new rows in."""
        now = self.clock()
        resort = False
        sort_fn = SORTS[self.sort_by]
        for job in changed:
            old = self.jobs.get(job.id)
            if ids is not None and job.id not in ids:
                continue
            self.jobs[job.id] = job
            visible = self._matches(job)
            if job.id in self._shown:
                if not visible:
                    self._remove_row(job.id)
                    continue
                self._update_row(job, now)
                if old is None or sort_fn(old) != sort_fn(job):
                    resort = True
            elif visible:
                self._add_row(job, now)
                resort = True
        if ids is not None:
            for job_id in [i for i in self.jobs if i not in ids]:
                self.remove_job(job_id)
        if resort:
            self._sort()

    def remove_job(self, job_id: int) -> None:
        self.jobs.pop(job_id, None)
        if job_id in self._shown:
            self._remove_row(job_id)

    def tick(self) -> None:
        """Advance the time columns (ages, countdowns, elapsed) of visible and running rows."""
        now = self.clock()
        targets: set[int] = {i for i, j in self.jobs.items() if j.running and i in self._shown}
        top = int(self.scroll_y)
        rows = self.ordered_rows
        for row in rows[top : top + self.size.height + 1]:
            if row.key.value is not None:
                targets.add(int(row.key.value))
        for job_id in targets:
            job = self.jobs.get(job_id)
            if job is not None:
                self._update_row(job, now, only=TIME_COLUMNS)

    # ------------------------------------------------------------------ reading

    def current_job(self) -> Job | None:
        """The job under the cursor."""
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except Exception:  # no valid cursor position (empty table)
            return None
        return self.jobs.get(int(key.value)) if key.value is not None else None

    def visible_jobs(self) -> list[Job]:
        """The shown jobs in display order."""
        return [self.jobs[int(r.key.value)] for r in self.ordered_rows if r.key.value is not None]

    def select_job(self, job_id: int) -> None:
        try:
            index = self.get_row_index(str(job_id))
        except RowDoesNotExist:
            return
        self.move_cursor(row=index)

    # ------------------------------------------------------------------ watchers

    def watch_sort_by(self) -> None:
        if self.is_mounted:
            self._sort()

    def watch_filter_text(self) -> None:
        if self.is_mounted:
            self._rebuild()

    # ------------------------------------------------------------------ actions

    def action_cycle_sort(self) -> None:
        """Sort by the next column in SORT_CYCLE."""
        index = SORT_CYCLE.index(self.sort_by) if self.sort_by in SORT_CYCLE else -1
        self.sort_by = SORT_CYCLE[(index + 1) % len(SORT_CYCLE)]
        self.notify(f"sorted by {self.sort_by}", timeout=2)

    # ------------------------------------------------------------------ internals

    def _matches(self, job: Job) -> bool:
        needle = self.filter_text.strip().lower()
        if not needle:
            return True
        return (
            needle in job.name.lower()
            or needle in job.owner.lower()
            or needle in job.status.value.lower()
        )

    def _cells(self, job: Job, now: datetime) -> dict[str, Text]:
        last, outcome = fmt.last_run_text(job, now)
        name = NameCell(job.name, no_wrap=True)
        name.job_id = job.id
        cells: dict[str, Text] = {
            "name": name,
            "owner": Text(job.owner),
            "status": Text(job.status.value, style=self._status_style(job.status)),
            "next": Text(fmt.next_run_text(job, now)),
            "last": Text(
                last,
                style=self._styles.get(fmt.OUTCOME_VARIABLE[outcome], "") if outcome else "",
            ),
            "duration": Text(fmt.duration(job.last_duration), justify="right"),
            "failures": Text(
                f"{job.failures}/{job.max_failures}" if job.failures else "0",
                justify="right",
                style=self._styles.get("error", "") if job.failures else "",
            ),
            "cycles": Text(str(job.cycles), justify="right"),
            "runner": Text(fmt.runner_text(job, now)),
            "schedule": Text(job.schedule.describe()),
        }
        if job.broken and job.status is not Status.BROKEN:
            cells["status"].append(" broken", style=self._styles.get("error", ""))
        if job.abort_requested and job.running:
            cells["status"].append(" aborting", style=self._styles.get("warning", ""))
        if not self.all_owners:
            del cells["owner"]
        return cells

    def _add_row(self, job: Job, now: datetime) -> None:
        cells = self._cells(job, now)
        self.add_row(*cells.values(), key=str(job.id))
        self._shown[job.id] = {k: _sig(v) for k, v in cells.items()}

    def _update_row(self, job: Job, now: datetime, only: Iterable[str] | None = None) -> None:
        cells = self._cells(job, now)
        shown = self._shown[job.id]
        key = str(job.id)
        for column in only or cells:
            if column not in cells:
                continue
            sig = _sig(cells[column])
            if shown.get(column) != sig:
                shown[column] = sig
                self.update_cell(key, column, cells[column], update_width=True)

    def _remove_row(self, job_id: int) -> None:
        self._shown.pop(job_id, None)
        try:
            self.remove_row(str(job_id))
        except RowDoesNotExist:
            pass

    def _sort(self) -> None:
        current = self.current_job()
        sort_fn = SORTS[self.sort_by]
        jobs = self.jobs
        self.sort("name", key=lambda cell: sort_fn(jobs[cell.job_id]))
        if current is not None:
            self.select_job(current.id)

    def _rebuild(self) -> None:
        current = self.current_job()
        self.clear()
        self._shown.clear()
        now = self.clock()
        for job in self.jobs.values():
            if self._matches(job):
                self._add_row(job, now)
        self._sort()
        if current is not None:
            self.select_job(current.id)

    def _status_style(self, status: Status) -> Style | str:
        style = self._styles.get(fmt.STATUS_VARIABLE[status], "")
        if status in (Status.RUNNING, Status.BROKEN):
            return Style.combine([style, Style(bold=True)]) if isinstance(style, Style) else "bold"
        return style

    def _load_styles(self) -> None:
        variables = self.app.theme_variables
        self._styles = {}
        for name in ("success", "warning", "error", "accent", "primary", "foreground-muted"):
            value = variables.get(name, "")
            try:
                self._styles[name] = Style(color=Color.parse(value).rich_color)
            except ColorParseError:
                self._styles[name] = Style(dim=True)

    def _on_theme_changed(self, _theme: object) -> None:
        self._load_styles()
        self._shown = {k: {} for k in self._shown}
        now = self.clock()
        for job_id in list(self._shown):
            self._update_row(self.jobs[job_id], now)


def _sig(cell: Text) -> str:
    return f"{cell.plain}\x00{cell.style}\x00{len(cell.spans)}"
