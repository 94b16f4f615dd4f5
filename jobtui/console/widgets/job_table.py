"""The live job table on Textual's Line API: its cost follows the screen, not the jobs.

The table holds every job (``jobs``), the shown ones' ids in display order
(``_order``) and their sort keys; a row becomes cells (``job_cells.row_cells``)
and then a ``Strip`` only when ``render_line`` draws it, so 100,000 jobs
cost one dict entry and one list slot each, and a refresh in which 1,000
rows changed repaints only the changed rows that are on screen. The refresh
thread hands over the changed rows' sort keys and the widest cell of each
column (``job_cells.prepare``): columns only widen, as DataTable's do.

Public Textual API only (``ScrollView``, ``render_line``, ``virtual_size``,
component classes, ``notify_style_update``): tests/architecture/test_console_privates.py
checks that nothing in jobtui/console reaches into Textual's underscored
internals. The look is DataTable's (styles/app.tcss: ``jobtable--*``
component classes over theme variables), so every built-in theme works.
"""

from __future__ import annotations

import bisect
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.renderables.styled import Styled
from textual.scroll_view import ScrollView
from textual.strip import Strip

from jobtui.console.widgets.job_cells import (
    COLUMNS,
    REVERSED,
    SORT_COLUMN,
    SORT_CYCLE,
    SORTS,
    Cell,
    Prepared,
    RowCells,
    Shown,
    column_keys,
    render,
    row_cells,
    sort_function,
)
from jobtui.core.model import Job, Status
from jobtui.core.transitions import status_marks

__all__ = ["COLUMNS", "SORTS", "SORT_CYCLE", "JobColumn", "JobTable", "Prepared"]

PADDING = 1  # blank cells each side of a cell, as DataTable's cell_padding
# Above this many rows changing their place at once, one sort of the whole order beats
# moving each row (a list insertion moves every row after it).
INSERT_LIMIT = 64
# Theme variables the cells name (jobtui.console.formatting), each a component class.
COLOUR_VARIABLES = ("success", "warning", "error", "accent", "primary", "foreground-muted")


@dataclass
class JobColumn:
    """A column: its key (``job_cells.COLUMNS``), label, and the widest cell seen so far."""

    key: str
    label: str
    content_width: int

    @property
    def render_width(self) -> int:
        return self.content_width + 2 * PADDING


class JobTable(ScrollView, can_focus=True):
    """Every job as one row, drawn only when on screen; cursor, scroll and sort survive
    refreshes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("s", "cycle_sort", "Sort", id="sort", tooltip="Cycle the sort column"),
        Binding("S", "reverse_sort", "Reverse sort", id="reverse_sort", show=False),
        Binding("j", "cursor_down", "Down", id="down", show=False),
        Binding("k", "cursor_up", "Up", id="up", show=False),
        Binding("g,home,ctrl+home", "top", "Top", id="top", show=False),
        Binding("G,end,ctrl+end", "bottom", "Bottom", id="bottom", show=False),
        Binding("enter", "select", "Select", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("left", "scroll_left", "Scroll left", show=False),
        Binding("right", "scroll_right", "Scroll right", show=False),
    ]

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "jobtable--header",
        "jobtable--cursor",
        "jobtable--even-row",
        "jobtable--odd-row",
        *(f"jobtable--{variable}" for variable in COLOUR_VARIABLES),
    }
    """
    | Class | Description |
    | :- | :- |
    | `jobtable--header` | The header row. |
    | `jobtable--cursor` | The cursor row. |
    | `jobtable--even-row`, `jobtable--odd-row` | Zebra stripes (rows counted from 0). |
    | `jobtable--success` ... | A cell's colour, named after its theme variable. |
    """

    sort_by: reactive[str] = reactive("name")
    """The job attribute rows are sorted by (see SORT_CYCLE); ``-`` first: reversed."""

    filter_text: reactive[str] = reactive("")
    """Only rows whose name, owner or status contains this text (case-insensitive)."""

    class Selected(Message):
        """Enter, or a click on the cursor row: the job is chosen (the main screen opens
        its details)."""

        def __init__(self, job: Job) -> None:
            super().__init__()
            self.job = job

    def __init__(
        self,
        *,
        clock: Callable[[], datetime],
        all_owners: bool = False,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.clock = clock
        self.all_owners = all_owners
        self.jobs: dict[int, Job] = {}
        self.counts: Counter[Status] = Counter()  # kept up to date by apply/remove
        self._running_ids: set[int] = set()
        self._keys = column_keys(all_owners)
        labels = dict(COLUMNS)
        self.columns: dict[str, JobColumn] = {
            key: JobColumn(key, labels[key], len(labels[key])) for key in self._keys
        }
        self._fit_sort_mark()
        self._order: list[int] = []  # shown job ids, in display order
        self._shown: set[int] = set()  # the ids in _order (sort keys are made when needed)
        self._cursor = 0  # the cursor's row index
        self._cursor_id: int | None = None  # the job under it, followed across re-sorts
        # G pressed while the first full load is still on its way: the cursor goes to the
        # last row once it is in (not to the last of the first screenful), see loaded().
        self.awaiting_load = True
        self._end_pending = False
        self._cells: dict[int, RowCells] = {}  # cells drawn since the clock last ticked
        self._lines: dict[tuple[Any, ...], Strip] = {}  # rows drawn, until they change
        self._segments: dict[tuple[Any, ...], list[Segment]] = {}  # cells alike drawn once
        self._colours: dict[str, Style] = {}

    # ------------------------------------------------------------------ reading

    @property
    def row_count(self) -> int:
        """How many rows are shown (the filter lets them through)."""
        return len(self._order)

    @property
    def cursor_row(self) -> int:
        return self._cursor

    @property
    def ordered_columns(self) -> list[JobColumn]:
        return [self.columns[key] for key in self._keys]

    def header_label(self, column: JobColumn) -> str:
        """A column's label, with ▲ (or ▼ reversed) on the one the rows are sorted by."""
        sort = self.sort_by
        if SORT_COLUMN.get(sort.removeprefix(REVERSED)) != column.key:
            return column.label
        return f"{column.label} {'▼' if sort.startswith(REVERSED) else '▲'}"

    def current_job(self) -> Job | None:
        """The job under the cursor."""
        if not self._order:
            return None
        return self.jobs.get(self._order[min(self._cursor, len(self._order) - 1)])

    def visible_jobs(self) -> list[Job]:
        """The shown jobs in display order."""
        jobs = self.jobs
        return [jobs[job_id] for job_id in self._order]

    def cells(self, job_id: int) -> dict[str, Cell]:
        """A job's cells by column key, as the table draws them now."""
        return dict(zip(self._keys, self._row_cells(job_id), strict=True))

    def select_job(self, job_id: int) -> None:
        """Put the cursor on ``job_id``'s row (when shown) and scroll it into view."""
        if job_id in self._shown:
            self.move_cursor(self._order.index(job_id))

    def loaded(self) -> None:
        """The first full load is applied: a pending G lands on the last row now."""
        self.awaiting_load = False
        if self._end_pending:
            self._end_pending = False
            self.move_cursor(len(self._order) - 1)

    def move_cursor(self, row: int, *, scroll: bool = True, to_end: bool = False) -> None:
        """Put the cursor on row ``row`` (clamped to the rows shown); ``to_end`` (G):
        and keep it on the last row while the table is still loading."""
        self._end_pending = to_end and self.awaiting_load
        row = max(0, min(row, len(self._order) - 1))
        old = self._cursor
        self._cursor = row
        self._cursor_id = self._order[row] if self._order else None
        if old != row:
            self._refresh_rows((old, row))
        if scroll:
            self._scroll_to_cursor()

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
            # A row read again has a new ``updated`` (compared first: one datetime, where
            # comparing whole Jobs costs ~10 ms per 1,000 rows).
            changed = [
                job
                for job in changed
                if (shown := jobs.get(job.id)) is None
                or shown.updated != job.updated
                or shown != job
            ]
        self.apply(changed, ids, prepared)
        return changed

    def apply(
        self,
        changed: Iterable[Job],
        ids: set[int] | None = None,
        prepared: Prepared | None = None,
    ) -> None:
        """Apply a refresh: changed rows in place, removed ids out, new rows in."""
        keys_ready = (
            prepared.sort_keys if prepared is not None and prepared.sort_by == self.sort_by else {}
        )
        sort_fn = sort_function(self.sort_by)
        needle = self.filter_text.strip().lower()
        added: list[int] = []
        moved: list[int] = []
        gone: set[int] = set()
        touched: list[int] = []
        # Locals: this loop runs once per changed job (100,000 at the first load).
        jobs, shown, cells = self.jobs, self._shown, self._cells
        track, matches = self._track, self._matches
        for job in changed:
            job_id = job.id
            if ids is not None and job_id not in ids:
                continue
            old = jobs.get(job_id)
            track(old, job)
            jobs[job_id] = job
            cells.pop(job_id, None)
            visible = matches(job, needle)
            if job_id in shown:
                if not visible:
                    gone.add(job_id)
                    continue
                touched.append(job_id)
                key = keys_ready[job_id] if job_id in keys_ready else sort_fn(job)
                if old is None or sort_fn(old) != key:
                    moved.append(job_id)
            elif visible:
                added.append(job_id)
        if ids is not None:
            for job_id in [i for i in jobs if i not in ids]:
                track(jobs.pop(job_id), None)
                cells.pop(job_id, None)
                if job_id in shown:
                    gone.add(job_id)
        widened = self._widen(prepared.widths if prepared is not None else ())
        if gone or added or moved:
            self._reorder(gone, added, moved, keys_ready)
        elif widened:
            self._redraw()
        elif touched:
            self._refresh_jobs(touched)

    def remove_job(self, job_id: int) -> None:
        self._track(self.jobs.pop(job_id, None), None)
        self._cells.pop(job_id, None)
        if job_id in self._shown:
            self._reorder({job_id}, [], [], {})

    def tick(self) -> None:
        """Advance the time columns (ages, countdowns, elapsed) of the rows on screen: their
        cells are made again and only the rows whose cells changed are repainted (a row
        scrolled to later is made when drawn)."""
        drawn, self._cells = self._cells, {}
        if not self.is_mounted or not self._order:
            return
        top = int(self.scroll_y)
        changed = [
            job_id
            for job_id in self._order[top : top + self.size.height]
            if drawn.get(job_id) != self._row_cells(job_id)
        ]
        if changed:
            self._refresh_jobs(changed)

    # ------------------------------------------------------------------ watchers

    def watch_sort_by(self) -> None:
        self._fit_sort_mark()
        if self.is_mounted:
            self._rebuild()

    def _fit_sort_mark(self) -> None:
        """The sorted column is wide enough for its label and the ▲ (columns only widen)."""
        column = self.columns.get(SORT_COLUMN.get(self.sort_by.removeprefix(REVERSED), ""))
        if column is not None:
            column.content_width = max(column.content_width, len(self.header_label(column)))

    def watch_filter_text(self) -> None:
        if self.is_mounted:
            self._rebuild()

    # ------------------------------------------------------------------ actions

    def action_cycle_sort(self) -> None:
        """Sort by the next column in SORT_CYCLE (the header marks it)."""
        current = self.sort_by.removeprefix(REVERSED)
        index = SORT_CYCLE.index(current) if current in SORT_CYCLE else -1
        self.sort_by = SORT_CYCLE[(index + 1) % len(SORT_CYCLE)]

    def action_reverse_sort(self) -> None:
        """Reverse the sort (▲ becomes ▼ in the header)."""
        if self.sort_by.startswith(REVERSED):
            self.sort_by = self.sort_by.removeprefix(REVERSED)
        else:
            self.sort_by = REVERSED + self.sort_by

    def action_top(self) -> None:
        """Go to the first row."""
        self.move_cursor(0)

    def action_bottom(self) -> None:
        """Go to the last row (while loading: the last once all are in)."""
        self.move_cursor(len(self._order) - 1, to_end=True)

    def action_select(self) -> None:
        """Choose the job under the cursor (the main screen opens its details)."""
        job = self.current_job()
        if job is not None:
            self.post_message(self.Selected(job))

    def action_cursor_up(self) -> None:
        self.move_cursor(self._cursor - 1)

    def action_cursor_down(self) -> None:
        self.move_cursor(self._cursor + 1)

    def action_page_up(self) -> None:
        page = self._page_rows()
        self.scroll_to(y=max(0, self.scroll_y - page), animate=False, immediate=True)
        self.move_cursor(self._cursor - page)

    def action_page_down(self) -> None:
        page = self._page_rows()
        self.scroll_to(y=self.scroll_y + page, animate=False, immediate=True)
        self.move_cursor(self._cursor + page)

    # ------------------------------------------------------------------ events

    def on_click(self, event: events.Click) -> None:
        """A click moves the cursor to the row; a click on the cursor row chooses its job."""
        offset = event.get_content_offset(self)
        if offset is None or offset.y < 1:  # the header
            return
        row = int(self.scroll_y) + offset.y - 1
        if not 0 <= row < len(self._order):
            return
        event.stop()
        if row == self._cursor:
            self.action_select()
        else:
            self.move_cursor(row)

    def on_resize(self, _event: events.Resize) -> None:
        self._lines.clear()
        self._update_virtual_size()

    def on_focus(self, _event: events.Focus) -> None:
        self._lines.clear()

    def on_blur(self, _event: events.Blur) -> None:
        self._lines.clear()

    def notify_style_update(self) -> None:
        """The CSS changed (a theme, focus): the cells' colours and rows drawn are stale."""
        super().notify_style_update()
        self._colours = {}
        self._lines.clear()
        self._segments.clear()

    # ------------------------------------------------------------------ painting

    def render_line(self, y: int) -> Strip:
        """Line ``y`` of the widget: the header, or the row scrolled to that line."""
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        if y == 0:
            strip = self._header_strip()
        else:
            index = scroll_y + y - 1
            if index >= len(self._order):
                return Strip.blank(width, self.rich_style)
            strip = self._row_strip(index)
        # The Job column stays in place: scrolling right moves only the columns after it.
        fixed = self.columns[self._keys[0]].render_width
        if scroll_x and fixed < width:
            strip = Strip.join(
                [strip.crop(0, fixed), strip.crop(fixed + scroll_x, scroll_x + width)]
            )
        else:
            strip = strip.crop(scroll_x, scroll_x + width)
        return strip.adjust_cell_length(width, self.rich_style)

    def _header_strip(self) -> Strip:
        key = ("header", self.size.width, self.sort_by)
        strip = self._lines.get(key)
        if strip is None:
            style = self.get_component_styles("jobtable--header").rich_style
            cells = [
                self._render_cell(
                    Text(self.header_label(column)), column.render_width, style, Style.null()
                )
                for column in self.ordered_columns
            ]
            strip = self._lines[key] = self._strip(-1, cells, style)
        return strip

    def _row_strip(self, index: int) -> Strip:
        job_id = self._order[index]
        cursor = index == self._cursor
        key = (job_id, index % 2, cursor, self.size.width)
        strip = self._lines.get(key)
        if strip is None:
            cells = self._row_cells(job_id)
            row_style = self.get_component_styles(
                "jobtable--odd-row" if index % 2 else "jobtable--even-row"
            ).rich_style
            post = Style.null()
            extend = row_style
            if cursor:
                cursor_style = self.get_component_rich_style("jobtable--cursor")
                row_style = row_style + cursor_style
                extend = row_style
                post = Style.from_color(color=cursor_style.color)
            colours = self._colour_styles()
            texts = [
                self._segments_of(cell, column, row_style, post, colours)
                for cell, column in zip(cells, self.ordered_columns, strict=True)
            ]
            strip = self._lines[key] = self._strip(index, texts, extend)
        return strip

    def _strip(self, row: int, cells: list[list[Segment]], extend: Style) -> Strip:
        """A whole row: its cells, then blanks to the widget's width in ``extend``.

        Each cell's segments carry its (row, column) as DataTable's do, so a row's
        cells stay apart as segments (screenshots come out as DataTable's did).
        """
        segments: list[Segment] = []
        total = 0
        for column_index, (cell, column) in enumerate(
            zip(cells, self.ordered_columns, strict=True)
        ):
            meta = Style.from_meta({"row": row, "column": column_index})
            segments.extend(Segment(text, style + meta) for text, style, _ in cell)
            total += column.render_width
        remaining = max(0, self.size.width - total)
        if remaining:
            meta = Style.from_meta({"row": row, "column": 0, "out_of_bounds": True})
            segments.append(Segment(" " * remaining, extend + meta))
        return Strip(segments).simplify()

    def _segments_of(
        self,
        cell: Cell,
        column: JobColumn,
        row_style: Style,
        post: Style,
        colours: dict[str, Style],
    ) -> list[Segment]:
        """A cell drawn as DataTable draws one (cells alike are drawn once)."""
        name = column.key == "name"
        width = column.render_width
        key = (cell, width, row_style, post, name)
        segments = self._segments.get(key)
        if segments is None:
            if len(self._segments) > 20_000:
                self._segments.clear()
            text = render(cell, colours, name=name)
            segments = self._segments[key] = self._render_cell(text, width, row_style, post)
        return segments

    def _render_cell(self, text: Text, width: int, pre: Style, post: Style) -> list[Segment]:
        options = self.app.console_options.update_dimensions(width, 1).update(no_wrap=True)
        lines = self.app.console.render_lines(
            Styled(Padding(text, (0, PADDING)), pre_style=pre, post_style=post), options
        )
        return lines[0]

    def _colour_styles(self) -> dict[str, Style]:
        """Theme variable -> the colour its component class gives (styles/app.tcss)."""
        if not self._colours:
            self._colours = {
                variable: self.get_component_rich_style(f"jobtable--{variable}", partial=True)
                for variable in COLOUR_VARIABLES
            }
        return self._colours

    def _row_cells(self, job_id: int) -> RowCells:
        """A job's cells now (made when first drawn after a clock tick or a change); a cell
        wider than its column widens it."""
        cells = self._cells.get(job_id)
        if cells is None:
            cells = self._cells[job_id] = row_cells(
                self.jobs[job_id], self.clock(), all_owners=self.all_owners
            )
            if self._widen([cell.width for cell in cells]):
                self.call_later(self._redraw)
        return cells

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
            or any(needle in mark for mark in status_marks(job))
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

    def _widen(self, widths: Iterable[int]) -> bool:
        """Columns only widen (narrowing would mean measuring every row again)."""
        widened = False
        for column, width in zip(self.ordered_columns, widths, strict=False):
            if width > column.content_width:
                column.content_width = width
                widened = True
        return widened

    def _reorder(
        self, gone: set[int], added: list[int], moved: list[int], keys_ready: dict[int, Any]
    ) -> None:
        """Rows out, rows in, rows whose sort key changed to their new places; the cursor
        stays on its job when that job is still shown. ``keys_ready``: sort keys the
        refresh thread made (the others are made here, and none is kept)."""
        order = self._order
        shown = self._shown
        shown -= gone
        shown.update(added)
        jobs = self.jobs
        sort_fn = sort_function(self.sort_by)

        def key(job_id: int) -> Any:
            ready = keys_ready.get(job_id)
            return ready if ready is not None else sort_fn(jobs[job_id])

        placing = added + moved
        if gone or len(placing) > INSERT_LIMIT:
            leaving = gone.union(moved) if moved else gone
            order = [job_id for job_id in order if job_id not in leaving] if leaving else order
            order.extend(placing)
            order.sort(key=key)
        else:
            for job_id in moved:
                order.remove(job_id)
            for job_id in placing:
                bisect.insort(order, job_id, key=key)
        self._order = order
        self._follow_cursor()
        self._redraw()

    def _rebuild(self) -> None:
        """The shown rows again, from every job: a new filter or sort."""
        needle = self.filter_text.strip().lower()
        sort_fn = sort_function(self.sort_by)
        matches = self._matches
        jobs = self.jobs
        self._order = sorted(
            (job_id for job_id, job in jobs.items() if matches(job, needle)),
            key=lambda job_id: sort_fn(jobs[job_id]),
        )
        self._shown = set(self._order)
        self._follow_cursor()
        self._redraw()

    def _follow_cursor(self) -> None:
        """After the order changed: the cursor back on its job, else where it was (on the
        last row when G is pending)."""
        if self._end_pending and self._order:
            self._cursor = len(self._order) - 1
            self._cursor_id = self._order[-1]
        elif self._cursor_id is not None and self._cursor_id in self._shown:
            self._cursor = self._order.index(self._cursor_id)
        else:
            self._cursor = max(0, min(self._cursor, len(self._order) - 1))
            self._cursor_id = self._order[self._cursor] if self._order else None
        if self.is_mounted:
            self.call_after_refresh(self._scroll_to_cursor)

    def _redraw(self) -> None:
        self._lines.clear()
        self._update_virtual_size()
        self.refresh()

    def _update_virtual_size(self) -> None:
        width = sum(column.render_width for column in self.columns.values())
        self.virtual_size = Size(width, len(self._order) + 1)  # + the header

    def _page_rows(self) -> int:
        return max(1, self.scrollable_content_region.height - 1)

    def _scroll_to_cursor(self) -> None:
        """Scroll so that the cursor row is on screen (below the header)."""
        if not self._order:
            return
        page = self._page_rows()
        top = int(self.scroll_y)
        row = self._cursor
        if row < top:
            self.scroll_to(y=row, animate=False, immediate=True)
        elif row >= top + page:
            self.scroll_to(y=row - page + 1, animate=False, immediate=True)

    def _refresh_rows(self, rows: Iterable[int]) -> None:
        """Repaint rows by index, if on screen."""
        top = int(self.scroll_y)
        height = self.size.height
        order = self._order
        rows = [row for row in rows if 0 <= row < len(order)]
        self._forget({order[row] for row in rows})
        for row in rows:
            if top <= row < top + height:
                self.refresh_line(row + 1)  # (line 0 is the header)

    def _refresh_jobs(self, job_ids: list[int]) -> None:
        """Repaint the changed jobs' rows that are on screen (the others draw when
        scrolled to)."""
        self._forget(set(job_ids))
        top = int(self.scroll_y)
        window = self._order[top : top + self.size.height]
        changed = set(job_ids)
        for offset, job_id in enumerate(window):
            if job_id in changed:
                self.refresh_line(top + offset + 1)

    def _forget(self, job_ids: set[int]) -> None:
        """Drop the drawn rows of ``job_ids`` (only rows drawn since the last tick are kept:
        a screenful or a few)."""
        lines = self._lines
        for key in [key for key in lines if key[0] in job_ids]:
            del lines[key]
