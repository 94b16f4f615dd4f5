"""Pausing Python's cyclic garbage collector around bulk loads of the job table.

A full refresh of 10,000 jobs makes a few hundred thousand small acyclic
objects (rows, Jobs, datetimes, cells). Each one allocated nudges the
collector, and its passes walk the young objects over and over: measured,
2-3 times the cost of building the cells. Reference counting frees these
objects anyway; the collector runs again when the load is done.

After the table's first load, what is alive is the table itself, for as long
as the console runs: ``freeze_when_resumed`` moves it out of the collector's
generations (``gc.freeze``) so that later passes do not walk it (measured:
~170 ms of collections on the event loop right after the first load, gone).
Only once, at start-up, so that little else is frozen with it; the app
unfreezes when it exits.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

BULK_ROWS = 1000  # below this many rows a load is quick enough as it is

_lock = threading.Lock()
_depth = 0
_was_enabled = False
_freeze = False
_frozen = False


@contextmanager
def gc_paused(enabled: bool = True) -> Iterator[None]:
    """No cyclic collection inside (nests across threads: the last one out re-enables,
    freezing what is alive first if ``freeze_when_resumed`` was called)."""
    global _depth, _was_enabled, _freeze, _frozen
    if not enabled:
        yield
        return
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                if _freeze:
                    _freeze = False
                    _frozen = True
                    gc.freeze()
                if _was_enabled:
                    gc.enable()


def freeze_when_resumed() -> None:
    """Inside ``gc_paused``: freeze what is alive when collection resumes."""
    global _freeze
    with _lock:
        _freeze = _depth > 0


def thaw() -> None:
    """Give what was frozen back to the collector (the app is exiting); a freeze still
    pending (a load in a thread that outlives the app) is called off."""
    global _frozen, _freeze
    with _lock:
        _freeze = False
        if _frozen:
            _frozen = False
            gc.unfreeze()
