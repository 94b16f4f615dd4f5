"""Pausing Python's cyclic garbage collector around bulk loads of the job table.

A full refresh of 10,000 jobs makes a few hundred thousand small acyclic
objects (rows, Jobs, datetimes, cells). Each one allocated nudges the
collector, and its passes walk the young objects over and over: measured,
2-3 times the cost of building the cells. Reference counting frees these
objects anyway; the collector runs again when the load is done.
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


@contextmanager
def gc_paused(enabled: bool = True) -> Iterator[None]:
    """No cyclic collection inside (nests across threads: the last one out re-enables)."""
    global _depth, _was_enabled
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
            if _depth == 0 and _was_enabled:
                gc.enable()
