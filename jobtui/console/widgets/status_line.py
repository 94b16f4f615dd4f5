"""The status line: database, connection, runners, counts by status, the server's Event
Scheduler, the clock."""

from __future__ import annotations

from collections.abc import Mapping

from textual.content import Content
from textual.markup import escape
from textual.widgets import Static

from jobtui.console import formatting as fmt
from jobtui.core.model import Status


class StatusLine(Static):
    """One line at the bottom of the main screen, rebuilt from the app's state every tick."""

    _shown: str | None = None  # the markup on screen: an unchanged line is not re-laid out
    _one_line_at: int = -1  # the width at which the markup shown fitted on one line

    def show(
        self,
        *,
        url: str,
        connected: bool,
        hosted: int,
        elsewhere: int,
        counts: Mapping[Status, int],
        clock: str,
        read_only: bool,
        scheduler: str | None = None,
    ) -> None:
        parts = [f"{escape(clock)} │ [b]{escape(fmt.short_url(url))}[/]"]
        parts.append("[$success]● connected[/]" if connected else "[b $error]○ reconnecting…[/]")
        if read_only:
            parts.append("[b $warning]read-only[/]")
        runners = f"{hosted} here" if hosted else "none here"
        parts.append(f"│ runners {runners}, {elsewhere} elsewhere │")
        by_status = [
            f"[${fmt.STATUS_VARIABLE[s]}]{counts[s]} {s.value.lower()}[/]"
            for s in Status
            if counts.get(s)
        ]
        parts.append(", ".join(by_status) if by_status else "no jobs")
        if scheduler is not None:  # the server's Event Scheduler (MySQL/MariaDB only)
            colour = fmt.SCHEDULER_VARIABLE.get(scheduler, "warning")
            parts.append(f"│ event scheduler [${colour}]{escape(scheduler)}[/]")
        markup = " ".join(parts)
        if markup != self._shown:
            self._shown = markup
            content = Content.from_markup(markup)
            # The line changes every second (the clock). Its height (auto, at most 3:
            # a narrow terminal wraps it) only changes if the text stops or starts
            # fitting on one line; otherwise skip the layout pass, which reflows the
            # whole screen (~10 ms on the event loop, every second).
            width = self.size.width
            fits = width > 0 and content.cell_length <= width
            self.update(content, layout=not (fits and self._one_line_at == width))
            self._one_line_at = width if fits else -1
