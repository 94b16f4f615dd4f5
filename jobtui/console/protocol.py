"""What a screen may ask of the console app, as a protocol: screens never import the app.

``jobtui.console.app.JobtuiApp`` implements it; a screen reaches it as
``cast(Console, self.app)``. Everything else flows by message: workers post
their results up (``jobtui.console.messages``), and the app sends rows down
to the screen on top (``JobsUpdated``, ``ClockTicked``).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from jobtui.core.events import Event
from jobtui.core.model import Job


@runtime_checkable
class Console(Protocol):
    """The operator's requests; each checks and confirms as needed, then runs in a worker."""

    def main_ready(self) -> None:
        """The main screen is composed: start refreshing into it."""

    def show_details(self, job: Job) -> None:
        """Open ``job``'s details."""

    def show_run_log(self, job: Job | None) -> None:
        """Open the run log of ``job``, or of every job (None)."""

    def toggle_pause(self, job: Job) -> None:
        """Pause ``job``, or resume/enable it when paused, aborted or disabled."""

    def steer(self, verb: str, job: Job) -> None:
        """Run one operator verb on ``job`` ("run now", "broken on", "broken off", ...)."""

    def confirm_abort(self, job: Job) -> None:
        """Ask, then abort ``job``."""

    def confirm_remove(self, job: Job) -> None:
        """Ask, then remove ``job``."""

    def edit_job(self, job: Job | None) -> None:
        """Open the form for a new job (None) or to change ``job``."""

    def switch_event(self, event: Event, enabled: bool) -> None:
        """Enable (True) or disable a server event."""

    def adopt_event(self, event: Event) -> None:
        """Ask, then adopt a server event as a jobtui job."""
