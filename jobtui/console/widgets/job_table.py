"""The live job table: rows keyed by job id, updated cell by cell.

Built for 10,000 jobs. The refresh thread turns changed jobs into plain
``Cell`` tuples (``job_cells.prepare``, from a ``Shown`` copy of the table's
rows: the thread never calls the widget), with the columns' widths and the
sort keys; the event loop then only compares cells, swaps the ones that
differ and repaints the changed rows that are on screen. Cells become Rich
``Text`` only when painted.

This leans on DataTable internals (``_data``, ``_row_locations``, the render
caches and ``_compute_row_renderables``): Textual is pinned exactly, and the
console tests check this version's behaviour (widths, sorting, repaints of
changed and scrolled-to rows).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any

from rich.style import Style
from textual._two_way_dict import TwoWayDict
from textual.binding import Binding
from textual.color import Color, ColorParseError
from textual.geometry import Region
from textual.reactive import reactive
from textual.widgets import DataTable
from textual.widgets._data_table import Row, RowRenderables
from textual.widgets.data_table import ColumnKey, RowKey

from jobtui.console.widgets.job_cells import (
    COLUMNS,
    SORT_CYCLE,
    SORTS,
    Cell,
    Prepared,
    RowCells,
    Shown,
    render,
    row_cells,
    table_keys,
    widths,
)
from jobtui.core.model import Job, Status

__all__ = ["COLUMNS", "SORTS", "SORT_CYCLE", "JobTable", "Prepared"]


class JobTable(DataTable[Cell]):
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
        self._cells: dict[int, RowCells] = {}  # every job's latest cells, shown or filtered out
        self._keys: dict[int, RowKey] = {}  # shown job id -> its row key
        self._sort_keys: dict[int, Any] = {}  # shown job id -> its key for sort_by
        self._column_keys = table_keys(all_owners)
        self._name_column = ColumnKey("name")
        self._styles: dict[str, Style] = {}
        self._swapped: set[RowKey] = set()  # rows whose cells changed since the last repaint
        self._swapped_cells: set[tuple[RowKey, ColumnKey]] = set()  # and those cells
        self._widened = False

    def on_mount(self) -> None:
        labels = dict(COLUMNS)
        for key in self._column_keys:
            self.add_column(labels[key.value], key=key.value)
        self._load_styles()
        self.app.theme_changed_signal.subscribe(self, self._on_theme_changed)

    # ------------------------------------------------------------------ data in

    def shown(self) -> Shown:
        """What the table holds, as plain data for the refresh thread: a copy taken on the
        event loop, so the thread never reads the widget."""
        return Shown(dict(self.jobs), self.sort_by, self.all_owners)

    def apply_refresh(
        self, changed: list[Job], ids: set[int] | None, prepared: Prepared
    ) -> list[Job]:
        """Apply a refresh made in the thread from ``shown()``; returns the rows applied.

        A row may have changed on the event loop (an operator's action) since the
        thread compared: only the rows still differing from the table's are applied.
        """
        jobs = self.jobs
        if jobs:  # (the first load of an empty table keeps every row)
            changed = [job for job in changed if jobs.get(job.id) != job]
        self.apply(changed, ids, prepared)
        return changed

    def apply(
        self,
        changed: Iterable[Job],
        ids: set[int] | None = None,
        prepared: Prepared | None = None,
    ) -> None:
        """Apply a refresh: changed rows in place, removed ids out, new rows in."""
        ready = prepared.rows if prepared is not None else {}
        keys_ready = (
            prepared.sort_keys if prepared is not None and prepared.sort_by == self.sort_by else {}
        )
        sort_fn = SORTS[self.sort_by]
        needle = self.filter_text.strip().lower()
        now: datetime | None = None
        added: list[int] = []
        gone: list[int] = []
        resort = False
        # Locals: this loop runs once per changed job (1,000 in the benchmark's refresh).
        jobs, all_cells, keys, sort_keys = self.jobs, self._cells, self._keys, self._sort_keys
        track, matches, swap = self._track, self._matches, self._swap
        for job in changed:
            job_id = job.id
            if ids is not None and job_id not in ids:
                continue
            track(jobs.get(job_id), job)
            jobs[job_id] = job
            cells = ready.get(job_id)
            if cells is None:
                now = now or self.clock()
                cells = row_cells(job, now, all_owners=self.all_owners)
            shown = all_cells.get(job_id)
            all_cells[job_id] = cells
            visible = matches(job, needle)
            row_key = keys.get(job_id)
            if row_key is not None:
                if not visible:
                    gone.append(job_id)
                    continue
                if shown != cells:
                    swap(row_key, shown, cells)
                sort_key = keys_ready[job_id] if job_id in keys_ready else sort_fn(job)
                if sort_keys.get(job_id) != sort_key:
                    sort_keys[job_id] = sort_key
                    resort = True
            elif visible:
                added.append(job_id)
        if ids is not None:
            for job_id in [i for i in self.jobs if i not in ids]:
                self._track(self.jobs.pop(job_id), None)
                self._cells.pop(job_id, None)
                if job_id in self._keys:
                    gone.append(job_id)
        if gone:
            self._remove_rows(gone)
        if added:
            all_ready = prepared is not None and len(added) == len(ready)
            self._append_rows(
                added,
                prepared.widths if all_ready else None,
                keys_ready,
                prepared.new_rows if prepared is not None else {},
            )
            resort = True
        self._flush()
        if resort:
            self._sort()

    def remove_job(self, job_id: int) -> None:
        self._track(self.jobs.pop(job_id, None), None)
        self._cells.pop(job_id, None)
        if job_id in self._keys:
            self._remove_rows([job_id])

    def tick(self) -> None:
        """Advance the time columns (ages, countdowns, elapsed) of visible and running rows."""
        now = self.clock()
        targets = set(self._running_ids)
        top = int(self.scroll_y)
        for row in self.ordered_rows[top : top + self.size.height + 1]:
            if row.key.value is not None:
                targets.add(int(row.key.value))
        for job_id in targets:
            job = self.jobs.get(job_id)
            row_key = self._keys.get(job_id)
            if job is not None and row_key is not None:
                cells = row_cells(job, now, all_owners=self.all_owners)
                shown = self._cells.get(job_id)
                self._cells[job_id] = cells
                self._swap(row_key, shown, cells)
        self._flush()

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
        row_key = self._keys.get(job_id)
        index = self._row_locations.get(row_key) if row_key is not None else None
        if index is not None:
            self.move_cursor(row=index)

    # ------------------------------------------------------------------ watchers

    def watch_sort_by(self) -> None:
        if self.is_mounted:
            sort_fn = SORTS[self.sort_by]
            jobs = self.jobs
            self._sort_keys = {job_id: sort_fn(jobs[job_id]) for job_id in self._keys}
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

    # ------------------------------------------------------------------ painting

    def _compute_row_renderables(self, row_index: int) -> RowRenderables:
        """A row's Texts, made now that it is painted (the header row: DataTable's own)."""
        if row_index < 0:
            return super()._compute_row_renderables(row_index)
        row_key = self._row_locations.get_key(row_index)
        cells = self._data.get(row_key) if row_key is not None else None
        if cells is None:
            return RowRenderables(None, [])
        styles = self._styles
        name = self._name_column
        return RowRenderables(
            None,
            [
                render(cells[column.key], styles, name=column.key == name)
                for column in self.ordered_columns
            ],
        )

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """Only the virtual size: column widths are kept current by ``apply`` and ``tick``.

        DataTable would measure every cell of every new row through Rich
        (seconds for a 10,000-job table); the widths here come with the cells.
        """
        super()._update_dimensions(())

    # ------------------------------------------------------------------ internals

    def _matches(self, job: Job, needle: str | None = None) -> bool:
        """Whether the filter lets ``job`` through (``needle``: the filter, if already read)."""
        if needle is None:
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

    def _swap(self, row_key: RowKey, shown: RowCells | None, cells: RowCells) -> None:
        """Put the cells that differ from ``shown`` into the row; ``_flush`` repaints once.

        ``shown`` is what the row holds (``_cells`` and ``_data`` agree for shown
        rows), compared as plain tuples: most cells of a changed row are equal.
        """
        if shown == cells:
            return
        data = self._data[row_key]
        swapped = False
        column_keys = self._column_keys
        columns = self.columns
        swapped_cells = self._swapped_cells
        for i, cell in enumerate(cells):
            if shown is None or shown[i] != cell:
                column_key = column_keys[i]
                data[column_key] = cell
                column = columns[column_key]
                # Widths only grow: shrinking would mean measuring the whole column.
                width = cell.width
                if width > column.content_width:
                    column.content_width = width
                    self._widened = True
                swapped_cells.add((row_key, column_key))
                swapped = True
        if swapped:
            self._swapped.add(row_key)

    def _append_rows(
        self,
        job_ids: list[int],
        column_widths: list[int] | None,
        sort_keys: dict[int, Any],
        new_rows: dict[int, tuple[RowKey, dict[ColumnKey, Cell]]] | None = None,
    ) -> None:
        """``DataTable.add_row`` for many rows at once (its per-row work is per call here).

        ``new_rows``: rows made in the refresh thread (``Prepared.new_rows``), used when
        they hold the cells the table has for the job.
        """
        locations = self._row_locations
        data = self._data
        rows = self.rows
        keys = self._keys
        all_cells = self._cells
        all_sort_keys = self._sort_keys
        column_keys = self._column_keys
        sort_fn = SORTS[self.sort_by]
        made = new_rows or {}
        was_empty = not rows
        index = len(rows)
        for job_id in job_ids:
            cells = all_cells[job_id]
            ready = made.get(job_id)
            if ready is not None and ready[1][column_keys[0]] is cells[0]:
                row_key, row_data = ready
            else:
                row_key = RowKey(str(job_id))
                row_data = dict(zip(column_keys, cells, strict=True))
            keys[job_id] = row_key
            locations[row_key] = index
            index += 1
            data[row_key] = row_data
            rows[row_key] = Row(row_key, 1)
            all_sort_keys[job_id] = (
                sort_keys[job_id] if job_id in sort_keys else sort_fn(self.jobs[job_id])
            )
        if column_widths is None:
            column_widths = widths((self._cells[i] for i in job_ids), len(column_keys))
        for column_key, width in zip(column_keys, column_widths, strict=True):
            column = self.columns[column_key]
            if width > column.content_width:
                column.content_width = width
                self._widened = True
        self._update_count += 1
        self._require_update_dimensions = True
        self.cursor_coordinate = self.cursor_coordinate
        if was_empty and self.show_cursor and self.cursor_type != "none":
            self._highlight_cursor()
        self.check_idle()
        self.refresh()

    def _remove_rows(self, job_ids: Iterable[int]) -> None:
        """``DataTable.remove_row`` for many rows at once (it renumbers every row per call).

        The cursor stays on its job when that job is still shown (rows above it going
        would otherwise move it onto another job).
        """
        current = self.current_job()
        doomed: set[RowKey] = set()
        for job_id in job_ids:
            row_key = self._keys.pop(job_id, None)
            if row_key is None:
                continue
            doomed.add(row_key)
            self._sort_keys.pop(job_id, None)
            del self.rows[row_key]
            del self._data[row_key]
        if not doomed:
            return
        locations = self._row_locations
        order = [locations.get_key(i) for i in range(len(locations))]
        self._row_locations = TwoWayDict(
            {key: i for i, key in enumerate(k for k in order if k not in doomed)}
        )
        self._swapped -= doomed
        self._swapped_cells = {c for c in self._swapped_cells if c[0] not in doomed}
        self._new_rows -= doomed
        self._updated_cells = {c for c in self._updated_cells if c.row_key not in doomed}
        self.cursor_coordinate = self.cursor_coordinate
        self.hover_coordinate = self.hover_coordinate
        self._update_count += 1
        self._require_update_dimensions = True
        self.check_idle()
        self.refresh(layout=True)
        if current is not None and current.id in self._keys:
            self.select_job(current.id)

    def _flush(self) -> None:
        """Repaint what ``_swap`` changed: only those rows, and only if on screen.

        The cell contents changed but not the rows' order or heights, so
        DataTable's update counter (which every render cache is keyed on, and
        whose change makes it rebuild its row offsets for all rows) is left
        alone; the cached renderings of the changed rows are dropped instead.
        A widened column changes every row's layout: then everything is redrawn.
        """
        if self._widened:
            self._widened = False
            self._swapped.clear()
            self._swapped_cells.clear()
            self._update_count += 1
            self._require_update_dimensions = True
            self.check_idle()
            self.refresh()
            return
        if not self._swapped:
            return
        swapped, self._swapped = self._swapped, set()
        cells, self._swapped_cells = self._swapped_cells, set()
        locations = self._row_locations
        indexes = {locations.get(key) for key in swapped}
        indexes.discard(None)
        header = self.header_height if self.show_header else 0
        lines = {index + header for index in indexes}  # every row is one line high
        _drop(self._cell_render_cache, lambda k: (k[0], k[1]) in cells)  # (row, column, ...)
        _drop(self._row_render_cache, lambda k: k[0] in swapped)  # (row key, line in row, ...)
        _drop(self._row_renderable_cache, lambda k: k[1] in indexes)  # (update count, index)
        _drop(self._line_cache, lambda k: k[0] in lines)  # (line, ...)
        top = int(self.scroll_y)
        bottom = top + self.size.height  # a property that walks the DOM: read it once
        on_screen = [i for i in indexes if top <= i <= bottom]
        if on_screen:
            width = max(self.size.width, self.virtual_size.width)
            first, last = min(on_screen), max(on_screen)
            self._refresh_region(Region(0, first + header, width, last - first + 1))

    def _sort(self) -> None:
        current = self.current_job()
        sort_keys = self._sort_keys
        keys = self._keys
        order = sorted(sort_keys, key=sort_keys.__getitem__)
        self._row_locations = TwoWayDict({keys[job_id]: i for i, job_id in enumerate(order)})
        self._update_count += 1
        self.refresh()
        if current is not None:
            self.select_job(current.id)

    def _rebuild(self) -> None:
        """Show the rows the filter lets through (their cells are kept for every job)."""
        current = self.current_job()
        self.clear()
        self._keys.clear()
        self._sort_keys.clear()
        self._swapped.clear()
        self._swapped_cells.clear()
        needle = self.filter_text.strip().lower()
        matching = [job_id for job_id, job in self.jobs.items() if self._matches(job, needle)]
        if matching:
            self._append_rows(matching, None, {})
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
        """Cells name theme variables, not colours: forget every painted row and repaint."""
        self._load_styles()
        self._clear_caches()
        self._update_count += 1
        self.refresh()


def _drop(cache: Any, match: Callable[[Any], bool]) -> None:
    """Discard a DataTable render cache's entries whose key matches (Textual's LRUCache
    offers ``keys()`` but no iteration)."""
    for key in [k for k in cache.keys() if match(k)]:  # noqa: SIM118
        cache.discard(key)
