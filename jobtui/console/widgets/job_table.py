"""The live job table: rows keyed by job id, updated cell by cell."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.color import Color, ColorParseError
from textual.reactive import reactive
from textual.widgets import DataTable
from textual.widgets.data_table import CellKey, ColumnKey, RowDoesNotExist, RowKey

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


# A cell as plain data: (text, theme variable or "", bold, justify, suffixes). Cheap to
# build in the refresh thread and to compare; a Text is made only for cells that changed.
CellSpec = tuple[str, str, bool, str, tuple[tuple[str, str], ...]]
RowSpec = dict[str, CellSpec]
_NONE: tuple[tuple[str, str], ...] = ()
# What the refresh thread hands over per job: its spec, and its cells when the row is new.
Prepared = tuple[RowSpec, list[Text] | None]


def row_spec(job: Job, now: datetime, *, all_owners: bool) -> RowSpec:
    """A job's row as cell specs (pure: runs in the refresh thread or on the event loop)."""
    last, outcome = fmt.last_run_text(job, now)
    suffixes: list[tuple[str, str]] = []
    if job.broken and job.status is not Status.BROKEN:
        suffixes.append((" broken", "error"))
    if job.abort_requested and job.running:
        suffixes.append((" aborting", "warning"))
    spec: RowSpec = {"name": (job.name, "", False, "left", _NONE)}
    if all_owners:
        spec["owner"] = (job.owner, "", False, "left", _NONE)
    spec["status"] = (
        job.status.value,
        fmt.STATUS_VARIABLE[job.status],
        job.status in (Status.RUNNING, Status.BROKEN),
        "left",
        tuple(suffixes),
    )
    spec["next"] = (fmt.next_run_text(job, now), "", False, "left", _NONE)
    spec["last"] = (last, fmt.OUTCOME_VARIABLE[outcome] if outcome else "", False, "left", _NONE)
    spec["runner"] = (fmt.runner_text(job, now), "", False, "left", _NONE)
    spec["duration"] = (fmt.duration(job.last_duration), "", False, "right", _NONE)
    spec["failures"] = (
        f"{job.failures}/{job.max_failures}" if job.failures else "0",
        "error" if job.failures else "",
        False,
        "right",
        _NONE,
    )
    spec["cycles"] = (str(job.cycles), "", False, "right", _NONE)
    spec["schedule"] = (job.schedule.describe(), "", False, "left", _NONE)
    return spec


def time_spec(job: Job, now: datetime) -> RowSpec:
    """Only the cells that change with the clock (next, last, runner)."""
    last, outcome = fmt.last_run_text(job, now)
    return {
        "next": (fmt.next_run_text(job, now), "", False, "left", _NONE),
        "last": (last, fmt.OUTCOME_VARIABLE[outcome] if outcome else "", False, "left", _NONE),
        "runner": (fmt.runner_text(job, now), "", False, "left", _NONE),
    }


def render_cell(column: str, spec: CellSpec, styles: dict[str, Style], job_id: int) -> Text:
    """The Text shown for one cell spec."""
    plain, variable, bold, justify, suffixes = spec
    style: Style | str = styles.get(variable, "") if variable else ""
    if bold:
        style = Style.combine([style, Style(bold=True)]) if isinstance(style, Style) else "bold"
    if column == "name":
        cell: Text = NameCell(plain, style=style, no_wrap=True)
        cell.job_id = job_id  # type: ignore[attr-defined]
    else:
        cell = Text(plain, style=style, justify=justify)  # type: ignore[arg-type]
    for text, suffix_variable in suffixes:
        cell.append(text, style=styles.get(suffix_variable, ""))
    return cell


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
        self.counts: Counter[Status] = Counter()  # kept up to date by apply/remove
        self._running_ids: set[int] = set()
        self._shown: dict[int, RowSpec] = {}
        self._styles: dict[str, Style] = {}
        self._column_objects: dict[str, Any] = {}
        self._dirty_cells = False

    def on_mount(self) -> None:
        for key, label in COLUMNS:
            if key == "owner" and not self.all_owners:
                continue
            column_key = self.add_column(label, key=key)
            self._column_objects[key] = self.columns[column_key]
        self._load_styles()
        self.app.theme_changed_signal.subscribe(self, self._on_theme_changed)

    # ------------------------------------------------------------------ data in

    def prepare(self, jobs: Iterable[Job]) -> tuple[list[Job], dict[int, Prepared]]:
        """In the refresh thread: drop rows equal to what is shown, describe the others.

        Rows not on screen yet also get their cells rendered here (the first
        load of a big table), so the event loop is left with comparing cell
        specs, rendering the few cells that differ, and adding rows.
        """
        known = self.jobs
        shown = self._shown
        changed = [job for job in jobs if known.get(job.id) != job]
        now = self.clock()
        styles = dict(self._styles)
        prepared: dict[int, Prepared] = {}
        for job in changed:
            spec = row_spec(job, now, all_owners=self.all_owners)
            cells = None
            if job.id not in shown:
                cells = [render_cell(c, cell, styles, job.id) for c, cell in spec.items()]
            prepared[job.id] = (spec, cells)
        return changed, prepared

    def apply(
        self,
        changed: Iterable[Job],
        ids: set[int] | None = None,
        prepared: dict[int, Prepared] | None = None,
    ) -> None:
        """Apply a refresh: changed rows in place, removed ids out, new rows in."""
        now = self.clock()
        resort = False
        sort_fn = SORTS[self.sort_by]
        prepared = prepared or {}
        for job in changed:
            old = self.jobs.get(job.id)
            if ids is not None and job.id not in ids:
                continue
            self._track(old, job)
            self.jobs[job.id] = job
            visible = self._matches(job)
            if job.id in self._shown:
                if not visible:
                    self._remove_row(job.id)
                    continue
                ready = prepared.get(job.id)
                self._update_row(job.id, ready[0] if ready else self._build(job, now))
                if old is None or sort_fn(old) != sort_fn(job):
                    resort = True
            elif visible:
                ready = prepared.get(job.id)
                if ready is None:
                    self._add_row(job.id, self._build(job, now))
                else:
                    self._add_row(job.id, ready[0], ready[1])
                resort = True
        if ids is not None:
            for job_id in [i for i in self.jobs if i not in ids]:
                self.remove_job(job_id)
        self._flush()
        if resort:
            self._sort()

    def remove_job(self, job_id: int) -> None:
        self._track(self.jobs.pop(job_id, None), None)
        if job_id in self._shown:
            self._remove_row(job_id)

    def tick(self) -> None:
        """Advance the time columns (ages, countdowns, elapsed) of visible and running rows."""
        now = self.clock()
        targets = set(self._running_ids)
        top = int(self.scroll_y)
        rows = self.ordered_rows
        for row in rows[top : top + self.size.height + 1]:
            if row.key.value is not None:
                targets.add(int(row.key.value))
        for job_id in targets:
            job = self.jobs.get(job_id)
            if job is not None and job_id in self._shown:
                self._update_row(job_id, time_spec(job, now))
        self._flush()

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """Widen columns for new rows by ``Text.cell_len``, then let DataTable size itself.

        DataTable measures every new cell through rich's console measure (which
        asks the terminal for its size three times per cell): seconds of
        event-loop time for a 10,000-job table. Every cell here is a one-line
        Text, whose width is its ``cell_len``. (Textual is pinned exactly, so
        this override of a private hook is checked by the tests of this version.)
        """
        columns = list(self.columns.items())
        data = self._data
        for row_key in new_rows:
            cells = data.get(row_key)
            if cells is None:  # removed before the table went idle
                continue
            for key, column in columns:
                cell = cells.get(key)
                if cell is not None and cell.cell_len > column.content_width:
                    column.content_width = cell.cell_len
        super()._update_dimensions(())

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

    def _track(self, old: Job | None, new: Job | None) -> None:
        """Keep the status counts and the running set current without scanning every job."""
        if old is not None:
            self.counts[old.status] -= 1
            self._running_ids.discard(old.id)
        if new is not None:
            self.counts[new.status] += 1
            if new.running:
                self._running_ids.add(new.id)

    def _build(self, job: Job, now: datetime) -> RowSpec:
        return row_spec(job, now, all_owners=self.all_owners)

    def _add_row(self, job_id: int, row: RowSpec, cells: list[Text] | None = None) -> None:
        if cells is None:
            styles = self._styles
            cells = [render_cell(column, spec, styles, job_id) for column, spec in row.items()]
        self.add_row(*cells, key=str(job_id))
        self._shown[job_id] = dict(row)

    def _update_row(self, job_id: int, row: RowSpec) -> None:
        """Swap the cells whose spec changed; the caller refreshes once (``_flush``)."""
        shown = self._shown[job_id]
        columns = self._column_objects
        styles = self._styles
        data: dict[ColumnKey, Text] | None = None
        row_key = RowKey(str(job_id))
        for column, spec in row.items():
            if shown.get(column) != spec:
                shown[column] = spec
                cell = render_cell(column, spec, styles, job_id)
                if data is None:
                    data = self._data[row_key]
                column_key = ColumnKey(column)
                data[column_key] = cell
                # Only a wider cell re-measures its column: a narrower one would make
                # DataTable re-measure every cell of the column (quadratic at 10,000 rows).
                if cell.cell_len > columns[column].content_width:
                    self._updated_cells.add(CellKey(row_key, column_key))
                    self._require_update_dimensions = True
                self._dirty_cells = True

    def _flush(self) -> None:
        """One refresh for all the cells ``_update_row`` swapped.

        This is ``DataTable.update_cell`` for many cells at once: update_cell
        refreshes the widget per cell, which is most of the cost of applying a
        thousand changed rows.
        """
        if self._dirty_cells:
            self._dirty_cells = False
            self._update_count += 1
            self.refresh()

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
                self._add_row(job.id, self._build(job, now))
        self._sort()
        if current is not None:
            self.select_job(current.id)

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
            self._update_row(job_id, self._build(self.jobs[job_id], now))
        self._flush()
