"""The `?` screen: every key of the screen below, and what the status colours mean."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.markup import escape
from textual.screen import ModalScreen
from textual.widgets import Static

from jobtui.console import formatting as fmt
from jobtui.core.model import Status

STATUS_HELP = {
    Status.ENABLED: "waiting for its first run",
    Status.SLEEPING: "ran, waiting for the next slot",
    Status.RUNNING: "a runner executes it now",
    Status.PAUSED: "operator paused it: no new runs",
    Status.RESUMED: "resumed: back on schedule",
    Status.ABORTED: "operator aborted it: no runs until resumed",
    Status.ERROR: "the last run failed: a retry is scheduled",
    Status.BROKEN: "too many failures, or marked broken",
    Status.DISABLED: "switched off",
    Status.FINISHED: "no further slot",
}


class HelpScreen(ModalScreen[None]):
    """Keys and the status legend."""

    BINDINGS = [Binding("escape,question_mark,q", "close", "Close", id="close")]

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        super().__init__(classes="dialog-screen")
        self.keys = keys

    def compose(self) -> ComposeResult:
        lines = ["[b]Keys[/]"]
        lines += [f"  [b $accent]{escape(k):<12}[/] {escape(d)}" for k, d in self.keys]
        lines += ["", "[b]Statuses[/]"]
        lines += [f"  [${fmt.STATUS_VARIABLE[s]}]{s.value:<12}[/] {STATUS_HELP[s]}" for s in Status]
        lines += ["", "Ctrl+P opens the command palette. Esc closes this help."]
        with VerticalScroll(classes="dialog help"):
            yield Static(Content.from_markup("\n".join(lines)))

    def action_close(self) -> None:
        self.dismiss(None)
