"""Textual's Footer, recomposed once per burst of binding changes rather than once per change.

Footer rebuilds all its keys (a dozen widgets, each styled through the
stylesheet) every time the screen's bindings change, and at start-up they
change five times in a row (focus moves, the screen stack, app focus): ~100 ms
of the event loop's time, spent while the first table is being loaded and
competing with it for the interpreter. One pending recompose covers them all:
it runs after the next refresh and reads the bindings as they are then.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    """A Footer that coalesces the recomposes its binding changes ask for."""

    _recompose_pending = False

    def bindings_changed(self, screen: Screen[object]) -> None:
        """The first change of a burst: Footer's own handling once, after the next refresh
        (it then recomposes after the one following, reading the bindings as they are)."""
        if not self._recompose_pending:
            self._recompose_pending = True
            self.call_after_refresh(self._changed_once, screen)

    def _changed_once(self, screen: Screen[object]) -> None:
        self._recompose_pending = False
        super().bindings_changed(screen)
