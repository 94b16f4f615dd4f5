"""The app's side of the runner pool it hosts: start and stop it, send its alerts,
and quit carefully while its runs are in flight.

A mixin of ``jobtui.console.app.JobtuiApp`` (it keeps the app file about jobs).
Starting and stopping run in thread workers (the pool registers in the database
and may wait for runs to end) and report back by one message (``RunnersChanged``,
``RunsStillInFlight``); the handlers run on the event loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from textual import work

from jobtui.console.messages import RunnersChanged, RunsStillInFlight
from jobtui.console.screens.confirm import QuitScreen
from jobtui.core.errors import JobtuiError
from jobtui.core.runner.config import PoolConfig

DEFAULT_RUNNER_THREADS = 2
WAIT_FOR_RUNS = 24 * 3600.0
# Quitting with hosted runs in flight: how long to wait for them to end before asking.
# Most runs take milliseconds, and a run claimed ahead of its slot starts within the
# pool's lead (a quarter of a second): asking about those would be noise.
QUIT_GRACE = 3.0


class RunnerHosting:
    """Mixin for the app: the runner pool hosted in the console (``w``), and quitting (``q``)."""

    # provided by the app
    store: Any
    metrics: Any  # jobtui.core.metrics.Metrics (--metrics-port): observes the pool
    runner_threads: int
    read_only_console: bool
    can_write: Callable[[str, str], bool]
    notify: Any
    post_message: Any
    push_screen: Any
    call_from_thread: Any
    exit: Any
    update_status: Callable[[], None]

    pool: Any = None  # jobtui.core.runner.RunnerPool, imported when first hosted
    # jobtui.core.alerting.AlertDispatcher: the hosted runners send alerts as a worker does
    alerter: Any = None
    _quitting = False

    def host_runners_at_start(self) -> None:
        """The runners asked for on the command line (``--runners``), unless read-only."""
        if self.runner_threads > 0:
            if self.read_only_console:
                self.notify("read-only console: runners are not hosted", severity="warning")
            else:
                self.start_runners(self.runner_threads)

    def hosted_pool(self) -> Any:
        """The hosted pool while it runs, else None."""
        return self.pool if self.pool is not None and self.pool.running else None

    def action_toggle_runners(self) -> None:
        """Start or stop the runner pool hosted in this console."""
        if self.pool is not None and self.pool.running:
            in_flight = self.pool.in_flight()
            note = f"; {len(in_flight)} run(s) in flight get 10 s to finish" if in_flight else ""
            self.notify(f"stopping the hosted runners{note}", timeout=3)
            self.stop_runners(grace=10.0, abort=True)
        elif self.can_write("start runners", "here"):
            self.start_runners(self.runner_threads or DEFAULT_RUNNER_THREADS)

    @work(thread=True, exclusive=True, group="runners", exit_on_error=False)
    def start_runners(self, threads: int) -> None:
        """Start a runner pool in this process (in a thread: it registers in the database)."""
        try:
            from jobtui.core.runner.pool import RunnerPool

            self.pool = RunnerPool(self.store, PoolConfig(threads=threads), observer=self.metrics)
            if self.metrics is not None:
                self.metrics.watch(self.pool)
            self.pool.start()
            from jobtui.core.alerting import AlertDispatcher

            self.alerter = AlertDispatcher(self.store, self.pool.runner_id)
            self.alerter.start()
        except (ImportError, JobtuiError) as exc:
            self.post_message(RunnersChanged(False, str(exc)))
            return
        self.post_message(RunnersChanged(True))

    @work(thread=True, exclusive=True, group="runners", exit_on_error=False)
    def stop_runners(self, grace: float, abort: bool, then_exit: bool = False) -> None:
        """Stop the hosted pool (in a thread: it may wait for runs in flight)."""
        error = None
        try:
            self._stop_alerts()
            if self.pool is not None:
                self.pool.stop(grace=grace, abort=abort)
        except JobtuiError as exc:
            error = str(exc)
        if then_exit:
            self.call_from_thread(self.exit)
            return
        self.post_message(RunnersChanged(False, error))

    def _stop_alerts(self) -> None:
        """Stop sending alerts (a claimed event not sent yet expires; a worker sends it)."""
        if self.alerter is not None:
            self.alerter.stop()
            self.alerter = None

    def on_runners_changed(self, message: RunnersChanged) -> None:
        if message.error:
            self.notify(message.error, title="hosted runners", severity="error")
        elif message.running:
            self.notify(f"hosting {self.pool.threads} runner thread(s) here", timeout=3)
        else:
            self.notify("hosted runners stopped", timeout=3)
        self.update_status()

    # ------------------------------------------------------------------ quitting

    def action_quit_console(self) -> None:
        """Quit; hosted runs in flight get a few seconds to end, then it asks what to do."""
        if self._quitting:
            return
        if self.pool is None or not self.pool.running:
            self.exit()
            return
        self._quitting = True
        in_flight = self.pool.in_flight()
        if in_flight:
            self.notify(
                f"quitting once the run(s) in flight end ({', '.join(in_flight[:3])}); "
                f"asking if they take over {QUIT_GRACE:g} s",
                timeout=QUIT_GRACE,
            )
        self.quit_when_idle(QUIT_GRACE)

    @work(thread=True, exclusive=True, group="quit", exit_on_error=False)
    def quit_when_idle(self, grace: float) -> None:
        """Wait up to ``grace`` s for an instant with no hosted run in flight, then stop the
        runners and quit (in a thread); else ask (``RunsStillInFlight``)."""
        deadline = time.monotonic() + grace
        while in_flight := self.pool.in_flight():
            if time.monotonic() >= deadline:
                self.post_message(RunsStillInFlight(in_flight))
                return
            time.sleep(0.02)
        self._stop_alerts()
        try:  # (a run claimed in this very instant is aborted, as on any stop)
            self.pool.stop(grace=0.0, abort=True)
        except JobtuiError as exc:
            self.post_message(RunnersChanged(False, str(exc)))
        self.call_from_thread(self.exit)

    def on_runs_still_in_flight(self, message: RunsStillInFlight) -> None:
        def chosen(choice: str | None) -> None:
            if choice is None:
                self._quitting = False
                return
            if choice == "wait":
                self.notify("waiting for the runs in flight to finish, then quitting…")
                self.stop_runners(grace=WAIT_FOR_RUNS, abort=False, then_exit=True)
            else:
                self.notify("aborting the runs in flight, then quitting…")
                self.stop_runners(grace=0.0, abort=True, then_exit=True)

        self.push_screen(QuitScreen(message.in_flight), callback=chosen)

    async def action_quit(self) -> None:
        """ctrl+q and the palette's Quit go the same careful way as q."""
        self.action_quit_console()
