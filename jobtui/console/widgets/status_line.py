"""The status line: database, connection, runners, counts by status, the clock."""

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
        markup = " ".join(parts)
        if markup != self._shown:
            self._shown = markup
            self.update(Content.from_markup(markup))
