"""The action keys a screen about jobs offers (main and details screens share them).

The keys ask the app through the ``Console`` protocol (``jobtui.console.protocol``):
screens never import the app.
"""

from __future__ import annotations

from typing import Any, cast

from textual.binding import Binding

from jobtui.console.protocol import Console
from jobtui.core.model import Job

JOB_BINDINGS = [
    Binding("p", "pause", "Pause/resume", id="pause"),
    Binding("a", "abort", "Abort", id="abort"),
    Binding("r", "run_now", "Run now", id="run_now"),
    Binding("b", "broken", "Broken on/off", id="broken"),
    Binding("e", "edit", "Edit", id="edit"),
    Binding("n", "new", "New job", id="new"),
    Binding("d,delete", "remove", "Remove", id="remove"),
    Binding("l", "job_log", "Job's runs", id="job_log"),
]


class JobActions:
    """Mixin for screens: the job action keys, applied to ``selected_job()``."""

    app: Any

    def selected_job(self) -> Job | None:
        raise NotImplementedError

    @property
    def console(self) -> Console:
        """The app, as far as a screen may use it."""
        return cast(Console, self.app)

    def _job(self) -> Job | None:
        job = self.selected_job()
        if job is None:
            self.app.notify("no job selected", severity="warning", timeout=3)
        return job

    def action_pause(self) -> None:
        """Pause the job, or resume it when paused or aborted."""
        if job := self._job():
            self.console.toggle_pause(job)

    def action_abort(self) -> None:
        """Abort the run in flight and stop the schedule (asks first)."""
        if job := self._job():
            self.console.confirm_abort(job)

    def action_run_now(self) -> None:
        """Run the job once, now."""
        if job := self._job():
            self.console.steer("run now", job)

    def action_broken(self) -> None:
        """Mark the job broken, or clear broken."""
        if job := self._job():
            self.console.steer("broken off" if job.broken else "broken on", job)

    def action_edit(self) -> None:
        """Edit the job in a form."""
        if job := self._job():
            self.console.edit_job(job)

    def action_new(self) -> None:
        """Define a new job in a form."""
        self.console.edit_job(None)

    def action_job_log(self) -> None:
        """The run log of this job (L: of all jobs)."""
        if job := self._job():
            self.console.show_run_log(job)

    def action_remove(self) -> None:
        """Remove the job (asks first)."""
        if job := self._job():
            self.console.confirm_remove(job)
