"""The demo actions: only in a database that `jobtui demo` made.

They are not entry points: ``JobStore`` registers them (``register_demo``) in
a process that opens a database marked as a demo (the ``demo`` key of
``jobtui_meta``, written by ``JobStore.mark_demo``), so a worker started on
the demo database runs them and every other database calls them unknown.
No action jobtui ships writes files.
"""

from __future__ import annotations

import random

from jobtui.core import actions
from jobtui.core.actions import Action, ActionContext


def noop(ctx: ActionContext) -> None:
    """Do nothing (measures the scheduler's own cost)."""


def sleep(ctx: ActionContext) -> None:
    """Sleep for the first argument's seconds (default 5); stops at once when aborted."""
    seconds = float(ctx.args[0]) if ctx.args else 5.0
    ctx.sleep(seconds)


def fail(ctx: ActionContext) -> None:
    """Always fail, with the first argument as the error text."""
    raise RuntimeError(ctx.args[0] if ctx.args else "this job always fails (demo)")


def flaky(ctx: ActionContext) -> None:
    """Fail about one run in three."""
    if random.random() < 0.34:
        raise RuntimeError("flaky: simulated transient failure")


DEMO_KEY = "demo"  # jobtui_meta: present in a database that `jobtui demo` made

DEMO_ACTIONS: dict[str, Action] = {
    "demo.noop": noop,
    "demo.sleep": sleep,
    "demo.fail": fail,
    "demo.flaky": flaky,
}


def register_demo() -> None:
    """Register the demo actions in this process (its store opened a demo database)."""
    for name, fn in DEMO_ACTIONS.items():
        actions.register(name, fn)
