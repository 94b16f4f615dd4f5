"""Textual's Footer, recomposed once per burst of binding changes rather than once per change.

Footer rebuilds all its keys (a dozen widgets, each styled through the
stylesheet) every time the screen's bindings change, and at start-up they
change five times in a row (focus moves, the screen stack, app focus): ~100 ms
of the event loop's time, spent while the first table is being loaded and
competing with it for the interpreter. One pending recompose covers them all:
it runs after the next refresh and reads the bindings as they are then.

It also puts ``? Help`` and ``q Quit`` first: a footer wider than the terminal (80
columns over SSH) is cut on the right, and those two must always show (the help
screen and the command palette list every other key).
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    """A Footer that coalesces the recomposes its binding changes ask for."""

    _recompose_pending = False
    FIRST = ("help", "quit_console")
    """The actions whose keys come first, so a narrow terminal still shows them."""

    def compose(self) -> ComposeResult:
        # Footer yields its keys flat (jobtui's bindings have no groups): reorder them.
        keys = list(super().compose())
        # (FooterKey lives in a private module: it is told by its public ``action``.)
        first = [
            key for action in self.FIRST for key in keys if getattr(key, "action", None) == action
        ]
        yield from first
        yield from (key for key in keys if key not in first)

    def bindings_changed(self, screen: Screen[object]) -> None:
        """The first change of a burst: Footer's own handling once, after the next refresh
        (it then recomposes after the one following, reading the bindings as they are)."""
        if not self._recompose_pending:
            self._recompose_pending = True
            self.call_after_refresh(self._changed_once, screen)

    def _changed_once(self, screen: Screen[object]) -> None:
        self._recompose_pending = False
        super().bindings_changed(screen)
