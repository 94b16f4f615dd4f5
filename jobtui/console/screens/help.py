"""The `?` screen: every key of the screen below, and what the status colours mean."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import Static

from jobtui.console import formatting as fmt
from jobtui.console.widgets.job_cells import MARK_SUFFIX
from jobtui.core.model import Status

STATUS_HELP = {
    Status.ENABLED: "waiting for its first run",
    Status.SLEEPING: "ran, waiting for the next slot",
    Status.RUNNING: "a runner executes it now",
    Status.PAUSED: "paused: no new runs start",
    Status.RESUMED: "resumed: back on schedule",
    Status.ABORTED: "aborted: no runs until resumed",
    Status.ERROR: "last run failed: retry scheduled",
    Status.BROKEN: "failed too often, or marked",
    Status.DISABLED: "switched off",
    Status.FINISHED: "no further slot",
}

# What ``transitions.status_marks`` appends (job_cells.MARK_SUFFIX), as RUNNING ⏸ paused.
MARK_HELP = {
    "paused": "paused: no run after this one",
    "disabled": "disabled: no run after this one",
    "broken": "marked, under another status",
    "aborting": "an abort is stopping the run",
    "removing": "deleted when the run ends",
}


class HelpScreen(ModalScreen[None]):
    """Keys and the status legend."""

    BINDINGS = [Binding("escape,question_mark,q", "close", "Close", id="close")]

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        super().__init__(classes="dialog-screen")
        self.keys = keys

    def compose(self) -> ComposeResult:
        keys = ["[b]Keys[/]"]
        keys += [f"[b $accent]{escape(k):<10}[/] {escape(d)}" for k, d in self.keys]
        statuses = ["[b]Statuses[/]"]
        statuses += [f"[${fmt.STATUS_VARIABLE[s]}]{s.value:<9}[/] {STATUS_HELP[s]}" for s in Status]
        statuses += ["", "[b]Appended to a status[/]"]
        statuses += [
            f"[${MARK_SUFFIX[mark][1]}]{MARK_SUFFIX[mark][0].strip():<9}[/] {meaning}"
            for mark, meaning in MARK_HELP.items()
        ]
        statuses += ["", "ctrl+p: command palette", "esc: close this help"]
        with VerticalScroll(classes="dialog help"), Horizontal():
            yield Static(Content.from_markup("\n".join(keys)), classes="keys")
            yield Static(Content.from_markup("\n".join(statuses)), classes="statuses")

    def action_close(self) -> None:
        self.dismiss(None)
