"""Reading a driver cursor to the end: how many rows at a time, every result set drained."""

from __future__ import annotations

from typing import Any

FETCH_BATCH = 1000


def drain(cur: Any) -> None:
    """Read every row of every result set (a CALL returns one per SELECT, plus a status)."""
    while True:
        while cur.fetchmany(FETCH_BATCH):
            pass
        if not cur.nextset():
            break
