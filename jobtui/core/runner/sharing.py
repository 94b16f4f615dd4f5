"""Sharing the jobs between runner pools: rendezvous (highest random weight) hashing.

Every live pool (a row in the runner table with a fresh heartbeat) ranks the
members for each job id by a stable hash of (runner id, job id); the first is
the job's owner. A pool claims a due job when it owns it, or when the job is
overdue by its rank times ``grace`` (the takeover: the second in line after one
grace, the third after two, ...). So pools do not normally try the same job,
and a dead or overloaded pool's jobs still run. When a member joins or leaves,
only the jobs whose first choice it is (or becomes) move: about 1/n of them.

Pure logic, no database: the pool's ``Reaper`` reads the membership with its
heartbeat (``members``) and the scheduler pass asks ``Share.wait``.
Exclusivity never rests on this; the claim's lock and the run log's UNIQUE
slot guard keep a slot from running twice (docs/runners.md, "Sharing").
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from hashlib import blake2b
from typing import Any

from jobtui.core.runner.config import DEFAULTS

DEFAULT_GRACE = DEFAULTS.takeover_grace  # seconds overdue before the next pool in line takes it
HOLD_PREFIX = "run:"  # a foreground pool's name (``jobtui run NAME``): runs one job, no share
_CACHE_MAX = 200_000


def weight(member: str, job_id: int) -> int:
    """The member's stable weight for the job (the same in every process and host)."""
    digest = blake2b(f"{job_id}:{member}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def ranking(members: Iterable[str], job_id: int) -> list[str]:
    """The members in the job's order of preference: its owner first."""
    return sorted(members, key=lambda m: (-weight(m, job_id), m))


def owner(members: Iterable[str], job_id: int) -> str | None:
    """The member the job belongs to (None without members)."""
    best: tuple[int, str] | None = None
    for m in members:
        key = (weight(m, job_id), m)
        if best is None or key[0] > best[0] or (key[0] == best[0] and key[1] < best[1]):
            best = key
    return None if best is None else best[1]


def rank(members: Iterable[str], me: str, job_id: int) -> int:
    """How many members come before ``me`` for the job (0: it is mine)."""
    mine = (weight(me, job_id), me)
    return sum(
        1
        for m in members
        if m != me and ((w := weight(m, job_id)) > mine[0] or (w == mine[0] and m < me))
    )


def members(
    rows: Iterable[Any], *, me: str, now: datetime, timeout: float, heartbeat: Any
) -> frozenset[str]:
    """The live members among runner-table rows (``id``, ``name``, ``heartbeat``,
    ``stopping``): a heartbeat younger than ``timeout``, not stopping, not a foreground
    pool (``run:NAME``). ``heartbeat(value)``: the column's value as an aware datetime.
    We are always one (our own heartbeat may lag behind our clock)."""
    cutoff = now - timedelta(seconds=timeout)
    live = {me}
    for row in rows:
        rid = str(row.id)
        if rid == me or row.stopping or str(row.name).startswith(HOLD_PREFIX):
            continue
        beat = heartbeat(row.heartbeat)
        if beat is not None and beat >= cutoff:
            live.add(rid)
    return frozenset(live)


class Share:
    """One pool's view of the membership and of its share of the jobs.

    ``me``: the pool's runner id; ``grace``: seconds per rank before a pool takes
    another's overdue job; ``cap``: the longest any pool waits (the heartbeat
    timeout: by then a dead member has left the membership anyway). Updated by the
    monitor thread, read by the scheduler thread: the membership is one immutable
    value, replaced whole.
    """

    def __init__(
        self, me: str, *, grace: float = DEFAULT_GRACE, cap: float = DEFAULTS.heartbeat_timeout
    ) -> None:
        if not grace >= 0:
            raise ValueError("the takeover grace must be a number of seconds, 0 or more")
        self.me = me
        self.grace = float(grace)
        self.cap = float(cap)
        # (the members, job id -> our rank among them): replaced together, never mixed
        self._view: tuple[frozenset[str], dict[int, int]] = (frozenset({me}), {})

    @property
    def members(self) -> frozenset[str]:
        return self._view[0]

    def update(self, live: Iterable[str]) -> bool:
        """A new membership (we are always in it); True when it changed."""
        new = frozenset(live) | {self.me}
        if new == self._view[0]:
            return False
        self._view = (new, {})
        return True

    def wait(self, job_id: int) -> float:
        """Seconds after its slot before this pool may claim the job (0: it is ours)."""
        live, ranks = self._view
        if self.grace <= 0 or len(live) < 2:
            return 0.0
        r = ranks.get(job_id)
        if r is None:
            r = rank(live, self.me, job_id)
            if len(ranks) >= _CACHE_MAX:
                ranks.clear()
            ranks[job_id] = r
        return min(r * self.grace, self.cap)
