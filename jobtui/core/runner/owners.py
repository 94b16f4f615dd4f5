"""The worker threads' queue (``OwnerQueue``), fair between owners, and an owner's
share of the threads (``owner_cap``). docs/runners.md, "Between owners"."""

from __future__ import annotations

import threading
from collections import deque

Item = tuple[str, list[int]] | None  # ("run" | "hold", job ids); None: a thread's stop


class OwnerQueue:
    """The worker threads' queue: first in, first out, except that the items of an owner
    whose runs already hold their share of the threads wait (without a thread) and the
    others pass.

    Each "run" item is one owner's (batches never mix owners). An owner's long items (a
    job run alone: long, or of unknown duration) hold at most ``cap`` threads at once, so
    a few endless jobs of one owner leave the pool's other threads to the others
    (docs/runners.md, "Between owners"). Its batches of short jobs, which end within
    their budget, may also take the threads its long ones leave, all but one
    (``short_cap`` in all): one owner's burst of short jobs is not slowed down by a share
    meant for endless ones, and another owner's job still finds a thread.
    """

    def __init__(self, cap: int, short_cap: int | None = None) -> None:
        self.cap = cap
        self.short_cap = max(cap, short_cap if short_cap is not None else cap)
        self._items: deque[tuple[str | None, bool, Item]] = deque()
        self._long: dict[str, int] = {}  # owner -> long items taken by threads, not done
        self._all: dict[str, int] = {}  # owner -> items taken by threads, not done
        self._cond = threading.Condition()

    def put(self, item: Item, owner: str | None = None, *, short: bool = False) -> None:
        with self._cond:
            self._items.append((owner, short, item))
            self._cond.notify()

    def _may(self, owner: str | None, short: bool) -> bool:
        if owner is None:
            return True
        if self._all.get(owner, 0) >= self.short_cap:
            return False
        return short or self._long.get(owner, 0) < self.cap

    def get(self) -> tuple[Item, str | None, bool]:
        """The first item a thread may take now (blocking): (item, owner, short);
        ``done(owner, short)`` when finished."""
        with self._cond:
            while True:
                for i, (owner, short, item) in enumerate(self._items):
                    if self._may(owner, short):
                        del self._items[i]
                        if owner is not None:
                            self._all[owner] = self._all.get(owner, 0) + 1
                            if not short:
                                self._long[owner] = self._long.get(owner, 0) + 1
                        return item, owner, short
                self._cond.wait()

    def done(self, owner: str | None, short: bool = False) -> None:
        if owner is None:
            return
        with self._cond:
            for counts in (self._all,) if short else (self._all, self._long):
                left = counts.get(owner, 0) - 1
                if left > 0:
                    counts[owner] = left
                else:
                    counts.pop(owner, None)
            self._cond.notify_all()

    def runnable(self) -> int:
        """How many queued items a thread could take now."""
        with self._cond:
            return sum(1 for owner, short, _ in self._items if self._may(owner, short))


def owner_cap(threads: int, share: float) -> int:
    """How many of ``threads`` one owner's runs may hold: ``share`` of them, at least one."""
    return max(1, int(threads * share + 1e-9))
