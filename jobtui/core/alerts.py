"""Alert targets and sending: where an event (a run failed, a job turned BROKEN, a run
was lost) goes, and how it gets there.

A target is either

- ``command:/absolute/path``: a program run with no shell and no arguments, the event
  as JSON on its standard input and in ``JOBTUI_ALERT_*`` environment variables, killed
  (with its process group) after the timeout. Runs only where an admin allowed it: on
  MySQL/MariaDB the job's owner needs a pattern ``alert:/absolute/path`` in
  ``jobtui_action_grant`` (``jobtui grant ACCOUNT --actions 'alert:/usr/local/bin/*'``);
  the database default's commands were written by an admin and need none. SQLite has no
  accounts: whoever may write the file may name a command, as for actions.
- a notification URL that apprise accepts (``mailtos://``, ``json://``, ``slack://`` …).

A job's ``alert`` column holds its targets as a JSON list; NULL means the database's
default (``jobtui_setting`` ``alert_default``), ``[]`` none. Every row is untrusted:
``decode`` keeps only targets that validate. Sending happens on threads of its own with
a deadline (``send``), so a failing or hanging target delays nothing else.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from typing import Any

from jobtui.core.errors import InvalidInput

COMMAND_PREFIX = "command:"
COMMAND_RE = re.compile(r"/[A-Za-z0-9_./+@%=,-]{1,500}")
URL_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,30}://\S{1,1990}")
KINDS = ("failed", "broken", "lost")
DEFAULT_TIMEOUT = 10.0  # seconds a target may take (a command is then killed)
MAX_TARGETS = 16
NONE = "none"  # on the command line: no alerts for this job, whatever the default
ACCEPTED = (
    "command:/absolute/path (a program; no shell, no arguments) or a notification URL "
    "apprise accepts (e.g. json://host/path, mailtos://..., slack://...); 'none' for no "
    "alerts"
)
# A command's environment: these of the sender's, plus the event's JOBTUI_ALERT_*.
# Nothing else of the worker's environment (it may hold credentials) is passed on.
PASSED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TZ")


def is_command(target: str) -> bool:
    return target.startswith(COMMAND_PREFIX)


def command_path(target: str) -> str:
    return target[len(COMMAND_PREFIX) :]


def grant_name(target: str) -> str:
    """What an allow-list pattern must match for a command target: ``alert:/path``."""
    return "alert:" + command_path(target)


def problem(target: Any, *, deep: bool = True) -> str | None:
    """What is wrong with one target, or None (no network, no apprise for commands;
    ``deep=False``: the form only, without loading apprise)."""
    if not isinstance(target, str):
        return f"invalid alert target {target!r}: expected text, {ACCEPTED}"
    if is_command(target):
        path = command_path(target)
        if not COMMAND_RE.fullmatch(path) or "/../" in path + "/" or "//" in path:
            return (
                f"invalid alert command {path!r}: an absolute path of letters, digits and "
                "_ . / + @ % = , - (no .. or //), at most 500 characters"
            )
        return None
    if not URL_RE.fullmatch(target):
        return f"invalid alert target {mask(target)!r}: {ACCEPTED}"
    if deep and not _apprise_accepts(target):
        return f"invalid alert URL {mask(target)!r}: apprise does not accept it; {ACCEPTED}"
    return None


def _apprise_accepts(url: str) -> bool:
    import apprise  # imported on use: it loads every plugin (a second), most commands need none

    return apprise.Apprise.instantiate(url) is not None


def parse(values: Iterable[str], *, deep: bool = True) -> list[str]:
    """Targets from the command line (each value may hold several, space-separated);
    ``none`` alone means no alerts. InvalidInput naming the first bad one."""
    targets: list[str] = []
    for value in values:
        for part in str(value).split():
            if part not in targets:
                targets.append(part)
    if targets == [NONE]:
        return []
    if not targets:
        raise InvalidInput(f"no alert target given: {ACCEPTED}")
    if len(targets) > MAX_TARGETS:
        raise InvalidInput(f"too many alert targets ({len(targets)}): at most {MAX_TARGETS}")
    for t in targets:
        wrong = problem(t, deep=deep)
        if wrong:
            raise InvalidInput(wrong)
    return targets


def from_text(text: str, *, deep: bool = True) -> list[str] | None:
    """The edit form's field: empty means the database's default (None), ``none`` no
    alerts ([]), else space-separated targets."""
    return parse([text], deep=deep) if text.strip() else None


def encode(targets: list[str] | None) -> str | None:
    return None if targets is None else json.dumps(targets)


def decode(text: Any) -> tuple[list[str] | None, list[str]]:
    """A column's targets (None: the default applies) and the problems of those dropped."""
    if text is None:
        return None, []
    try:
        value = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        value = None
    if not isinstance(value, list):
        return [], [f"alert column is not a JSON list of targets: {str(text)[:80]!r}"]
    good: list[str] = []
    bad: list[str] = []
    for t in value[:MAX_TARGETS]:
        wrong = problem(t)
        if wrong:
            bad.append(wrong)
        else:
            good.append(t)
    return good, bad


_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)([^/@\s]*)@")


def mask(target: str) -> str:
    """A target fit to show: a URL's secrets replaced (apprise's privacy form where it
    knows the service, else the user-info part), a command as it is."""
    if is_command(target):
        return target
    try:
        import apprise

        plugin = apprise.Apprise.instantiate(target)
        if plugin is not None:
            return str(plugin.url(privacy=True))
    except Exception:  # masking must never fail a display
        pass
    head = target.split("?", 1)[0]
    return _USERINFO.sub(lambda m: m.group(1) + "***@", head) + ("?…" if "?" in target else "")


# ---------------------------------------------------------------------- events


@dataclass(frozen=True)
class Event:
    """One alert: what happened to which job's run. Its ``key`` is unique per event."""

    kind: str  # failed | broken | lost
    key: str
    job_id: int
    job: str
    owner: str
    run_id: int | None = None
    scheduled_for: str | None = None
    finished: str | None = None
    outcome: str | None = None
    error: str | None = None
    runner: str | None = None
    failures: int | None = None
    max_failures: int | None = None
    database: str | None = None
    test: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def env(self) -> dict[str, str]:
        """``JOBTUI_ALERT_<FIELD>`` for every field with a value (error cut at 4000)."""
        out: dict[str, str] = {}
        for name, value in self.to_dict().items():
            if value is None:
                continue
            text = ("1" if value else "0") if isinstance(value, bool) else str(value)
            out[f"JOBTUI_ALERT_{name.upper()}"] = text[:4000]
        return out

    def title(self) -> str:
        what = {"failed": "run failed", "broken": "job BROKEN", "lost": "run lost"}
        prefix = "[test] " if self.test else ""
        return f"{prefix}jobtui: {self.job} ({self.owner}): {what.get(self.kind, self.kind)}"

    def body(self) -> str:
        lines = [self.title(), f"event: {self.key}"]
        if self.scheduled_for:
            lines.append(f"slot: {self.scheduled_for}")
        if self.failures is not None:
            lines.append(f"failures: {self.failures}/{self.max_failures}")
        if self.runner:
            lines.append(f"runner: {self.runner}")
        if self.error:
            lines.append(f"error: {self.error[:2000]}")
        return "\n".join(lines)


# ---------------------------------------------------------------------- sending


def send_command(path: str, event: Event, timeout: float) -> str:
    """Run ``path`` with the event; "ok" or what went wrong. Killed (its whole process
    group) after ``timeout`` seconds."""
    env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
    env.update(event.env())
    try:
        proc = subprocess.Popen(
            [path],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        return f"cannot run {path}: {exc.strerror or exc}"
    try:
        _, err = proc.communicate(event.to_json().encode(), timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        return f"timed out after {timeout:g} s (killed)"
    if proc.returncode != 0:
        tail = err.decode(errors="replace").strip()[-300:]
        return f"exit status {proc.returncode}" + (f": {tail}" if tail else "")
    return "ok"


def send_url(url: str, event: Event) -> str:
    import apprise

    sender = apprise.Apprise()
    if not sender.add(url):
        return "apprise does not accept this URL"
    ok = sender.notify(
        body=event.body(), title=event.title(), notify_type=apprise.NotifyType.FAILURE
    )
    return "ok" if ok else "apprise could not deliver it"


def send(
    event: Event,
    targets: list[str],
    *,
    timeout: float = DEFAULT_TIMEOUT,
    refused: Callable[[str], str | None] = lambda _t: None,
) -> dict[str, str]:
    """Send ``event`` to every target at once, each on its own thread; wait at most
    ``timeout`` (plus a second) in all. Returns target (masked) -> "ok" or the problem.
    ``refused(target)``: why a target may not be used (a command no admin allowed)."""
    results: dict[str, str] = {}
    lock = threading.Lock()
    threads: list[threading.Thread] = []

    def one(target: str) -> None:
        try:
            why = refused(target)
            if why:
                outcome = f"refused: {why}"
            elif is_command(target):
                outcome = send_command(command_path(target), event, timeout)
            else:
                outcome = send_url(target, event)
        except Exception as exc:  # a target's failure is its result, never the sender's
            outcome = f"{type(exc).__name__}: {exc}"[:300]
        with lock:
            results[mask(target)] = outcome

    for target in targets:
        t = threading.Thread(target=one, args=(target,), name="jobtui-alert-send", daemon=True)
        t.start()
        threads.append(t)
    deadline = time.monotonic() + timeout + 1.0
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    with lock:
        for target in targets:
            results.setdefault(mask(target), f"timed out after {timeout:g} s")
        return dict(results)
