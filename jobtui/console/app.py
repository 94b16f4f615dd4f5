"""The operator console application and the one factory the command line uses.

The app owns the store, the refresh loop and (optionally) a hosted runner
pool (``jobtui.console.hosting``). Every database call runs in a thread worker
and reports back by a typed message (``jobtui.console.messages``). Data flows
one way: the refresh worker reads rows and makes their cells as plain data, one
``JobsRefreshed`` brings them to the app, the table applies them, and the app
passes the rows down to the screen on top (``JobsUpdated``). Screens stay thin
and never import the app: they ask for changes through the ``Console`` protocol
it implements (``jobtui.console.protocol``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime
from functools import partial
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.css.query import NoMatches
from textual.dom import DOMNode
from textual.keys import key_to_character
from textual.screen import Screen
from textual.theme import Theme
from textual.worker import Worker, WorkerState

from jobtui.console import formatting as fmt
from jobtui.console import state
from jobtui.console.bulk import BULK_ROWS, freeze_when_resumed, gc_paused, thaw
from jobtui.console.event_commands import EventCommands
from jobtui.console.hosting import RunnerHosting
from jobtui.console.messages import (
    ActionFailed,
    ClockTicked,
    DatabaseLost,
    JobChanged,
    JobRemoved,
    JobsRefreshed,
    JobsUpdated,
)
from jobtui.console.refresh import RefreshPlan
from jobtui.console.screens.confirm import ConfirmScreen
from jobtui.console.screens.details import DetailsScreen
from jobtui.console.screens.edit import EditScreen, JobForm
from jobtui.console.screens.help import HelpScreen
from jobtui.console.screens.main import MainScreen
from jobtui.console.screens.runlog import RunLogScreen
from jobtui.console.widgets.job_cells import Shown, prepare
from jobtui.core import alerts
from jobtui.core.errors import DatabaseUnavailable, JobtuiError
from jobtui.core.jobdefs import JobChange, JobSpec
from jobtui.core.model import Intent, Job, Status
from jobtui.core.runner.config import DEFAULTS as POOL_DEFAULTS
from jobtui.core.store import JobStore, RunnerInfo

if TYPE_CHECKING:
    from jobtui.core.metrics import Metrics

HEARTBEAT_TIMEOUT = POOL_DEFAULTS.heartbeat_timeout  # a runner silent this long is dead
CSS_FILES = ("app.tcss", "screens.tcss")


def css_paths() -> list[Path]:
    """The app's stylesheets: from the installed ``jobtui.styles`` package, else the source tree."""
    found: list[Path] = []
    try:
        base = resources.files("jobtui.styles")
        for name in CSS_FILES:
            entry = base / name
            if entry.is_file():
                found.append(Path(str(entry)))
    except (ModuleNotFoundError, TypeError):
        found = []
    if len(found) == len(CSS_FILES):
        return found
    source = Path(__file__).resolve().parents[2] / "styles"
    return [source / name for name in CSS_FILES]


def binding_chain(screen: Screen[Any]) -> list[tuple[DOMNode, list[Binding]]]:
    """The nodes a key goes through on ``screen`` (the focused widget, its ancestors, the
    screen, the app; nothing past a modal screen), each with its class's bindings.

    From public API (``ancestors_with_self``, ``is_modal``, each class's ``BINDINGS``):
    Textual's own chain is private. A subclass's binding of a key replaces its base's.
    """
    focused = screen.focused
    nodes: list[DOMNode] = (
        list(focused.ancestors_with_self) if focused is not None else [screen, screen.app]
    )
    chain: list[tuple[DOMNode, list[Binding]]] = []
    for node in nodes:
        by_key: dict[str, list[Binding]] = {}
        for cls in reversed(type(node).__mro__):
            declared: dict[str, list[Binding]] = {}
            for binding in Binding.make_bindings(vars(cls).get("BINDINGS", ())):
                declared.setdefault(binding.key, []).append(binding)
            by_key.update(declared)
        # A key a widget before this node takes as input (typing in the filter) is not a
        # binding there, as in Textual's own chain.
        for key in [
            key
            for key in by_key
            if any(n.check_consume_key(key, key_to_character(key)) for n, _ in chain)
        ]:
            del by_key[key]
        chain.append((node, [b for bindings in by_key.values() for b in bindings]))
        if node.is_modal:
            break
    return chain


# verb -> the store call (job's owner passed, so --all consoles steer any owner's job)
STEER: dict[str, Callable[[JobStore, Job], Job]] = {
    "pause": lambda s, j: s.pause(j.name, owner=j.owner),
    "resume": lambda s, j: s.resume(j.name, owner=j.owner),
    "enable": lambda s, j: s.enable(j.name, owner=j.owner),
    "abort": lambda s, j: s.abort(j.name, owner=j.owner),
    "run now": lambda s, j: s.run_now(j.name, owner=j.owner),
    "broken on": lambda s, j: s.broken(j.name, True, owner=j.owner),
    "broken off": lambda s, j: s.broken(j.name, False, owner=j.owner),
}


class JobtuiApp(EventCommands, RunnerHosting, App[None]):
    """The jobtui operator console (screens reach it as ``jobtui.console.protocol.Console``)."""

    TITLE = "jobtui"
    CSS_PATH = css_paths()  # type: ignore[assignment]
    BINDINGS = [
        Binding("L", "run_log", "All runs", id="run_log"),
        Binding("v", "events", "Events", id="events"),
        Binding("w", "toggle_runners", "Runners", id="runners"),
        Binding("question_mark", "help", "Help", id="help"),
        Binding("q", "quit_console", "Quit", id="quit"),
    ]

    def __init__(
        self,
        store: JobStore,
        *,
        runners: int = 0,
        read_only: bool = False,
        refresh: float = 1.0,
        all_owners: bool = False,
        metrics: Metrics | None = None,
        theme: str | None = None,
    ) -> None:
        super().__init__()
        self.profile_theme = theme  # a profile's theme (config file): wins over the remembered
        self.store = store
        self.runner_threads = runners
        self.read_only_console = read_only or store.read_only
        self.refresh_interval = max(0.1, float(refresh))
        self.all_owners = all_owners
        self.plan = RefreshPlan()
        self.connected = True
        self.db_error: str | None = None
        self.runners_seen: list[RunnerInfo] = []
        self.metrics = metrics  # jobtui.core.metrics.Metrics (--metrics-port): observes the pool
        self._refreshing = False
        self._last_good: str | None = None
        self._loaded = False  # the first full load is applied (see jobtui.console.bulk)
        # the server's @@event_scheduler (ON, OFF, DISABLED) as last read; None: no events here
        self.event_scheduler: str | None = None

    # ------------------------------------------------------------------ lifecycle

    def get_default_screen(self) -> Screen[Any]:
        return MainScreen(clock=self.store.now, all_owners=self.all_owners)

    @property
    def main_screen(self) -> MainScreen:
        main = self._main()
        if main is None:
            raise LookupError("main screen not mounted")
        return main

    def _main(self) -> MainScreen | None:
        """The main screen, or None while starting up or shutting down."""
        for screen in self.screen_stack:
            if isinstance(screen, MainScreen) and screen.ready and screen.table.is_attached:
                return screen
        return None

    def main_ready(self) -> None:
        """The main screen is composed: start refreshing (and hosting runners)."""
        self.sub_title = self.store.masked_url
        self.tick()
        self.set_interval(self.refresh_interval, self.tick)
        self.host_runners_at_start()

    def on_mount(self) -> None:
        """The profile's theme, else the one chosen last time (jobtui.console.state); then
        remember each change."""
        theme = self.profile_theme or state.load().get("theme")
        if isinstance(theme, str) and theme in self.available_themes:
            self.theme = theme
        self.theme_changed_signal.subscribe(self, self.remember_theme)

    def remember_theme(self, theme: Theme) -> None:
        if theme.name == self.profile_theme:
            return  # the profile's, not a choice: a console without the profile keeps its own
        try:
            state.save(theme=theme.name)
        except OSError as exc:
            self.notify(
                f"the theme {theme.name} is not remembered: {exc}", severity="warning", timeout=4
            )

    def on_unmount(self) -> None:
        thaw()

    def tick(self) -> None:
        """Once a second: advance the clocks on screen and start the next refresh."""
        main = self._main()
        if main is None or self.return_code is not None:  # (None until exit is asked)
            return
        main.table.tick()
        self.update_status()
        self.screen.post_message(ClockTicked())
        if not self._refreshing:
            self._refreshing = True
            step = self.plan.next_step()
            self.refresh_jobs(step, self.plan.since(), main.table.shown(), not self._loaded)

    def update_status(self) -> None:
        main = self._main()
        if main is None:
            return
        now = self.store.now()
        pool = self.hosted_pool()
        hosted_id = pool.runner_id if pool is not None else None
        elsewhere = sum(
            1
            for r in self.runners_seen
            if r.id != hosted_id and r.alive(now, HEARTBEAT_TIMEOUT) and not r.stopping
        )
        hosted = pool.threads if pool is not None else 0
        try:
            status = main.query_one("#status")
        except NoMatches:  # the screen is being taken down (the app is exiting)
            return
        status.show(  # type: ignore[attr-defined]
            url=self.store.masked_url,
            connected=self.connected,
            hosted=hosted,
            elsewhere=elsewhere,
            counts=main.table.counts,
            clock=now.strftime("%H:%M:%S UTC"),
            read_only=self.read_only_console,
            scheduler=self.event_scheduler,
        )

    # ------------------------------------------------------------------ refresh

    @work(thread=True, exclusive=True, group="refresh", exit_on_error=False)
    def refresh_jobs(
        self, step: str, since: datetime | None, shown: Shown, first_load: bool
    ) -> None:
        """One refresh step (in a thread), from plain data to plain data: the step's
        query, then the cells of the rows that differ from ``shown`` (the table's rows
        when the tick began), so the event loop only swaps cells. One message back.
        """
        with gc_paused(step == "full"):
            try:
                if step == "full" and first_load and not shown.jobs:
                    # A big table takes seconds to read: its first screenful comes first.
                    page = self.plan.first_page(self.store, all_owners=self.all_owners)
                    if page:
                        rows, ready = prepare(page, shown, self.store.now())
                        self.post_message(JobsRefreshed(rows, prepared=ready, page=True))
                fetched = self.plan.fetch(self.store, step, since=since, all_owners=self.all_owners)
            except JobtuiError as exc:
                self.post_message(DatabaseLost(str(exc)))
                return
            changed, prepared = prepare(fetched.changed, shown, self.store.now())
            if step == "full" and first_load and len(changed) >= BULK_ROWS:
                freeze_when_resumed()  # the first load of a big table: see bulk.py
            newest = fetched.newest
        self.post_message(
            JobsRefreshed(changed, fetched.ids, fetched.runners, fetched.full, newest, prepared)
        )

    def on_jobs_refreshed(self, message: JobsRefreshed) -> None:
        if not message.page:  # (the first screenful: its full load is still on its way)
            self._refreshing = False
            self.plan.read(full=message.full, newest=message.newest)
        if self._main() is None:
            return
        if not self.connected:
            self.connected = True
            self.db_error = None
            self.main_screen.show_banner(None)
            self.notify("the database is back: the console is live again", timeout=4)
        self._last_good = self.store.now().strftime("%H:%M:%S UTC")
        table = self.main_screen.table
        bulk = len(message.changed) >= BULK_ROWS
        with gc_paused(bulk):
            changed = table.apply_refresh(message.changed, message.ids, message.prepared)
            if message.full and not self._loaded and bulk:
                freeze_when_resumed()
        if message.full and not self._loaded:
            # Once, after the first load (not competing with it): the server's Event
            # Scheduler state for the status line; afterwards only the events view reads it.
            self.read_event_scheduler()
        if message.full and not self._loaded:
            table.loaded()
        self._loaded = self._loaded or message.full
        if message.runners is not None:
            self.runners_seen = message.runners
        if changed or message.ids is not None:
            self.screen.post_message(JobsUpdated(changed, message.ids))
        self.update_status()

    def on_database_lost(self, message: DatabaseLost) -> None:
        self._refreshing = False
        self.plan.reset()
        if self._main() is None:
            return
        first = self.connected
        self.connected = False
        self.db_error = message.error
        reason = message.error.removeprefix("database unavailable: ")
        since = f"as read at {self._last_good}" if self._last_good else "nothing read yet"
        self.main_screen.show_banner(
            f"⚠ Database unreachable: {reason}\n"
            f"Showing the jobs {since}; changes are refused until it is back "
            f"(retrying every {self.refresh_interval:g} s)."
        )
        if first:
            self.notify(message.error, title="database unreachable", severity="error")
        self.update_status()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Any worker that failed unexpectedly: say so (the app keeps running)."""
        worker = event.worker
        if event.state in (WorkerState.ERROR, WorkerState.CANCELLED) and worker.group == "refresh":
            self._refreshing = False
        if event.state is WorkerState.ERROR:
            self.notify(
                f"{type(worker.error).__name__}: {worker.error}",
                title=f"{worker.name or worker.group} failed",
                severity="error",
                timeout=8,
            )

    # ------------------------------------------------------------------ changing jobs

    def can_write(self, verb: str, name: str) -> bool:
        """Refuse early, with a reason, when a change cannot be made."""
        if self.read_only_console:
            self.notify(
                f"read-only console: {verb} {name} refused (start without --read-only to change jobs)",
                severity="warning",
                timeout=4,
            )
            return False
        if not self.connected:
            self.notify(
                f"no database connection: {verb} {name} refused, nothing was changed "
                "(the console reconnects by itself)",
                severity="error",
                timeout=5,
            )
            return False
        return True

    def steer(self, verb: str, job: Job) -> None:
        """Run one operator action on a job (in a thread)."""
        if self.can_write(verb, job.name):
            self.write_job(verb, job, partial(STEER[verb], self.store, job))

    def toggle_pause(self, job: Job) -> None:
        if job.intent is Intent.PAUSED or job.status is Status.ABORTED:
            self.steer("resume", job)
        elif job.intent is Intent.DISABLED:
            self.steer("enable", job)
        else:
            self.steer("pause", job)

    def confirm_abort(self, job: Job) -> None:
        if not self.can_write("abort", job.name):
            return
        what = "kill the run in flight and stop" if job.running else "stop"
        self.push_screen(
            ConfirmScreen(
                f"Abort {job.name}? This will {what} its schedule until you resume it (p).",
                yes="Abort",
            ),
            callback=lambda yes: self.steer("abort", job) if yes else None,
        )

    def confirm_remove(self, job: Job) -> None:
        if not self.can_write("remove", job.name):
            return
        extra = " Its run in flight is aborted first." if job.running else ""
        self.push_screen(
            ConfirmScreen(
                f"Remove {job.name}? The job is deleted; its run history stays.{extra}",
                yes="Remove",
            ),
            callback=lambda yes: self._remove(job) if yes else None,
        )

    def _remove(self, job: Job) -> None:
        if self.can_write("remove", job.name):
            self.write_job(
                "remove", job, lambda: self.store.remove(job.name, owner=job.owner), removes=True
            )

    def edit_job(self, job: Job | None) -> None:
        """Open the form for a new job (None) or to change ``job``."""
        verb = "edit" if job else "new job"
        if not self.can_write(verb, job.name if job else ""):
            return

        def saved(form: JobForm | None) -> None:
            if form is None or not self.can_write(verb, form.name):
                return
            if job is None:
                self.write_job("create", None, partial(self._submit, form), name=form.name)
            else:
                self.write_job("change", job, partial(self._change, job, form))

        self.push_screen(
            EditScreen(self.store, job, read_only=self.read_only_console), callback=saved
        )

    def _submit(self, form: JobForm) -> Job:
        job = self.store.submit(
            JobSpec(
                form.name,
                form.what,
                form.schedule,
                description=form.description,
                max_failures=form.max_failures,
            )
        )
        return self._set_alert(job, form) if form.alert else job  # empty: the default

    def _set_alert(self, job: Job, form: JobForm) -> Job:
        """The form's alert field, saved after the definition (``alerts.from_text``)."""
        if form.alert is None:
            return job
        return self.store.set_alert(job.name, alerts.from_text(form.alert), owner=job.owner)

    def _change(self, job: Job, form: JobForm) -> Job:
        change = JobChange.replacing(
            form.schedule,
            what=form.what,
            description=form.description,
            max_failures=form.max_failures,
        )
        changed = self.store.change(job.name, change, owner=job.owner)
        return self._set_alert(changed, form)

    @work(thread=True, group="actions", exit_on_error=False)
    def write_job(
        self,
        verb: str,
        job: Job | None,
        call: Callable[[], Job],
        *,
        removes: bool = False,
        name: str = "",
    ) -> None:
        """Make one change (one transaction in the store) and report the new row."""
        label = job.name if job else name
        try:
            result = call()
        except DatabaseUnavailable as exc:
            self.post_message(ActionFailed(verb, label, f"{exc} — nothing was changed"))
            return
        except JobtuiError as exc:
            self.post_message(ActionFailed(verb, label, str(exc)))
            return
        if removes and not result.remove_requested:
            self.post_message(JobRemoved(result))
        else:  # a removal still waiting for its run to end keeps its row until then
            self.post_message(JobChanged(result, "removal pending" if removes else verb))

    def on_job_changed(self, message: JobChanged) -> None:
        job = message.job
        if self._main() is None:
            return
        table = self.main_screen.table
        table.apply([job])
        if message.verb == "create":
            table.select_job(job.id)
        self.screen.post_message(JobsUpdated([job]))
        self.update_status()
        self.notify(fmt.action_notice(message.verb, job, self.store.now()), timeout=4)

    def on_job_removed(self, message: JobRemoved) -> None:
        if self._main() is None:
            return
        self.main_screen.table.remove_job(message.job.id)
        self.screen.post_message(JobsUpdated([], removed=message.job.id))
        self.update_status()
        self.notify(f"removed {message.job.name}", timeout=3)

    def on_action_failed(self, message: ActionFailed) -> None:
        self.notify(message.error, title=f"{message.verb} {message.name} failed", severity="error")

    # ------------------------------------------------------------------ screens

    def show_details(self, job: Job) -> None:
        self.push_screen(DetailsScreen(job, store=self.store))

    def action_run_log(self) -> None:
        """The run log of all jobs (l on a job: its own)."""
        self.show_run_log(None)

    def show_run_log(self, job: Job | None) -> None:
        """The run log of ``job``, or of all jobs; from a run log, it replaces that one."""
        screen = RunLogScreen(store=self.store, all_owners=self.all_owners, job=job)
        if isinstance(self.screen, RunLogScreen):
            if self.screen.job is None and job is None:
                return
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    def action_help(self) -> None:
        """Every key, and what the status colours mean."""
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(self.key_help(self.screen)))

    def key_help(self, screen: Screen[Any]) -> list[tuple[str, str]]:
        """(keys, description) of jobtui's own bindings on ``screen``, grouped by action."""
        return [
            (" ".join(keys), binding.description)
            for keys, binding, _ in self.jobtui_bindings(screen)
        ]

    def jobtui_bindings(self, screen: Screen[Any]) -> list[tuple[list[str], Binding, Any]]:
        """jobtui's bindings (those with an id) reachable from ``screen``'s focus chain.

        Read from the whole chain, not ``active_bindings``, so a key a focused
        widget shadows (enter in the table) still shows under its own name.
        """
        grouped: dict[tuple[int, str], tuple[list[str], Binding, Any]] = {}
        for node, bindings in binding_chain(screen):
            for binding in bindings:
                key = binding.key
                if binding.id is None or not binding.description:
                    continue
                # a key its screen does not offer here (check_action: False) is not listed
                if node.check_action(binding.action.split("(", 1)[0], ()) is False:
                    continue
                slot = grouped.setdefault((id(node), binding.action), ([], binding, node))
                display = self.get_key_display(binding.with_key(key))
                if display not in slot[0]:
                    slot[0].append(display)
        return list(grouped.values())

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """The command palette offers every key's action too (Textual's own commands after
        them, less those jobtui's replace: its Quit is ours, the careful one)."""
        ours = set()
        for keys, binding, node in self.jobtui_bindings(screen):
            ours.add(binding.description.lower())
            yield SystemCommand(
                binding.description,
                f"key {' '.join(keys)}",
                partial(self.run_action, binding.action, node),
            )
        for command in super().get_system_commands(screen):
            if command.title.lower() not in ours:
                yield command


def make_app(
    store: JobStore,
    *,
    runners: int = 0,
    read_only: bool = False,
    refresh: float = 1.0,
    all_owners: bool = False,
    metrics: Metrics | None = None,
    theme: str | None = None,
) -> JobtuiApp:
    """The console over ``store`` (the one factory the command line uses); ``metrics``
    (a serving ``jobtui.core.metrics.Metrics``) observe the runner pool it hosts."""
    return JobtuiApp(
        store,
        runners=runners,
        read_only=read_only,
        refresh=refresh,
        all_owners=all_owners,
        metrics=metrics,
        theme=theme,
    )
