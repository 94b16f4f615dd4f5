"""A scheduler pass's plan: which due jobs a pool takes now, in which batches, and when
it looks again. Pure functions over plain values: no database, no pool.

The pool's pass (``RunnerPool._schedule_once``) reads the due rows (``queries.due``),
then asks here, in order:

- ``sort_due``: which rows are due for us now and in what order, which are short
  (batched), never run yet, or another pool's; the earliest later slot;
- ``take``: as many of them as the backlog holds, one owner's long jobs at most its
  share of it;
- ``batches``: the queue's items, short jobs in batches of one owner;
- ``next_wait``: how long the scheduler sleeps before the next pass.

Times are passed in (``now``, ``mono``) or as clocks (``monotonic``, ``clock``), so the
tests need neither a database nor a real clock (tests/test_runner_planning.py).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Container, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from jobtui.core import bookkeeping
from jobtui.core.runner.config import (
    BACKLOG_PER_THREAD,
    BATCH_BUDGET,
    FRESH_GUESS,
    MAX_BATCH,
    MIN_PASS,
    PROBE_WAIT,
    SHORT_RUN,
)

#: What a job is like, for a job never run yet: (owner, what kind, target).
Kind = tuple[str, str, str]

#: A queue item of the plan: (job ids, their owner, whether all of them are short).
Batch = tuple[list[int], str, bool]


def limits(threads: int, busy: int) -> tuple[int, int, int]:
    """(long_cap, capacity, limit) of a pass of ``threads`` threads, ``busy`` jobs taken.

    A short backlog beyond the idle threads keeps them busy without a query per run;
    short jobs go in batches, so many more of them can be taken at once (``capacity``).
    The query reads more than we can take (``limit``): pools sharing a database pick
    different random ones.
    """
    long_cap = threads * BACKLOG_PER_THREAD
    capacity = threads * (BACKLOG_PER_THREAD + MAX_BATCH) - busy
    limit = max(capacity, 0) * 2 + busy + 1
    return long_cap, capacity, limit


class Probes:
    """The kinds whose first new job runs now (the probe), since when (monotonic).

    While a probe runs, the other new jobs of its kind wait (at most PROBE_WAIT past
    the probe's slot) to learn whether they may be batched. ``monotonic``: the clock.
    """

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.monotonic = monotonic
        self._since: dict[Kind, float] = {}

    def waiting(self, like: Kind, slot: float) -> bool:
        """Whether a new job of kind ``like`` (due at ``slot``, monotonic), none of which
        ran here yet, waits for the first of its kind (the probe); if none is on its way,
        it becomes the probe. A probe that has not ended PROBE_WAIT after its slot holds
        up nothing more."""
        since = self._since.get(like)
        if since is None:
            if len(self._since) >= 1000:
                mono = self.monotonic()
                self._since = {k: v for k, v in self._since.items() if mono - v < PROBE_WAIT}
            self._since[like] = slot
            return False
        return self.monotonic() - since < PROBE_WAIT

    def ended(self, like: Kind) -> None:
        """A run of kind ``like`` ended: its duration is known, no probe is needed."""
        self._since.pop(like, None)


class Kinds:
    """What a run of each kind took here last, in seconds (``like``), and the kinds being
    probed (``probes``): the new jobs of a kind are batched when it was short
    (``sort_due``). ``monotonic``: the probes' clock."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.like: dict[Kind, float] = {}
        self.probes = Probes(monotonic)

    def took(self, kind: Kind, seconds: float) -> None:
        """A run of ``kind`` took ``seconds``: its duration is known, no probe is needed."""
        like = self.like
        if len(like) >= 10_000:
            like.clear()
        like[kind] = max(0.0, seconds)
        self.probes.ended(kind)


@dataclass
class Due:
    """What a pass found among the rows it read (``sort_due``)."""

    #: (sort key, job id) of the jobs due for us now, in the order to take them
    due: list[tuple[float, int]] = field(default_factory=list)
    owners: dict[int, str] = field(default_factory=dict)  # job id -> owner (every row)
    short: dict[int, float] = field(default_factory=dict)  # job id -> last duration (or kind's)
    fresh: set[int] = field(default_factory=set)  # never run yet: one at a batch's end, or alone
    guessed: set[int] = field(
        default_factory=set
    )  # never run yet, batched as short ones of their kind
    earliest: datetime | None = None  # the first slot after this pass (another pool's too)
    cooling: float | None = None  # the first cooldown to end among due jobs (monotonic)
    elsewhere: bool = False  # a due job is leased by another runner (SQLite)
    held: bool = False  # new jobs left for the next pass: the first of their kind runs


def sort_due(
    rows: Iterable[Any],
    *,
    now: datetime,
    soon: datetime,
    mono: float,
    first_later: datetime | None,
    busy: Container[int],
    cooldown: Mapping[int, float],
    like: Mapping[Kind, float],
    probes: Probes,
    leased_elsewhere: Callable[[Any], bool],
    share_wait: Callable[[int], float],
    jitter: Callable[[], float] = random.random,
) -> Due:
    """Sort the due query's rows (``id``, ``owner``, ``next_run``, ``run_now``,
    ``last_duration``, and ``kind``/``target`` of a job never run yet).

    ``now``/``soon``: the pass's time and the end of its lead; ``mono``: monotonic time
    at the read; ``first_later``: the first slot after ``soon``; ``busy``: jobs taken
    already; ``cooldown``: job id -> monotonic time a declined job may be tried again;
    ``like``: a kind's last duration here; ``probes``: the kinds being probed;
    ``leased_elsewhere(row)``: another runner's lease holds it; ``share_wait(job id)``:
    seconds after its slot before it is ours (sharing.py); ``jitter``: 0 to 1.
    """
    out = Due(earliest=first_later)
    unknown: dict[int, Kind] = {}  # never run yet, nor any of its kind
    for row in rows:
        jid = int(row.id)
        out.owners[jid] = str(row.owner)
        if jid in busy:
            continue
        cool = cooldown.get(jid, 0.0)
        if cool > mono:
            out.cooling = cool if out.cooling is None else min(out.cooling, cool)
            continue
        if leased_elsewhere(row):
            out.elsewhere = True
            continue
        # A next_run that is no date (a zero date written through the view) sorts
        # first in SQL: due now, and the claim finds the row's problem.
        nxt = bookkeeping.row_time(row.next_run, now)
        duration = row.last_duration
        if type(duration) in (float, int) and 0.0 <= duration < SHORT_RUN:
            out.short[jid] = float(duration)
        elif duration is None:
            kind = (out.owners[jid], str(row.kind), str(row.target))
            guess = like.get(kind)
            if guess is not None and guess < SHORT_RUN:
                out.short[jid] = guess
                out.guessed.add(jid)
            else:
                out.fresh.add(jid)
                if guess is None:
                    unknown[jid] = kind
        if row.run_now:  # any pool, at once: an operator waits for it
            out.due.append((0.0, jid))
        elif (
            nxt is not None
            and nxt <= soon
            and (wait := share_wait(jid)) > 0
            and (takeover := nxt + timedelta(seconds=wait)) > soon
        ):
            # Another pool's job (sharing.py): ours only once overdue by our grace.
            if out.earliest is None or takeover < out.earliest:
                out.earliest = takeover
        elif nxt is not None and nxt <= soon:
            ahead = (nxt - now).total_seconds()
            # its slot in monotonic time, for a new job whose kind is not known yet
            if jid in unknown and probes.waiting(unknown[jid], mono + max(0.0, ahead)):
                out.held = True  # the first of its kind tells whether it may be batched
                continue
            # 0.1 s buckets, shuffled inside: pools sharing a database start on
            # different jobs instead of all fighting over the same first one.
            out.due.append((1.0 + ahead // 0.1 + jitter(), jid))
        elif nxt is not None and (out.earliest is None or nxt < out.earliest):
            out.earliest = nxt
    out.due.sort()
    return out


def take(
    due: Iterable[tuple[float, int]],
    *,
    short: Container[int],
    owners: Mapping[int, str],
    capacity: int,
    long_cap: int,
    owner_long_cap: int,
    owner_long: Mapping[str, int],
) -> list[tuple[float, int]]:
    """The due jobs the pass takes: at most ``capacity``, of which at most ``long_cap``
    long ones (not ``short``) in all, counting those already taken (``owner_long``:
    owner -> long jobs taken), and at most ``owner_long_cap`` of one owner's: the
    others' jobs are still taken when one owner has many due (fairness)."""
    taken: list[tuple[float, int]] = []
    longs = dict(owner_long)
    n_long = sum(longs.values())
    for item in due:
        if len(taken) >= capacity:
            break
        if item[1] not in short:
            owner = owners[item[1]]
            if n_long >= long_cap or longs.get(owner, 0) >= owner_long_cap:
                continue
            n_long += 1
            longs[owner] = longs.get(owner, 0) + 1
        taken.append(item)
    return taken


def batches(
    jids: Iterable[int],
    *,
    short: Mapping[int, float],
    owners: Mapping[int, str],
    fresh: Container[int] = frozenset(),
    short_cap: int,
) -> list[Batch]:
    """The queue's items for ``jids``, in order: one by one, except short ones (batches).

    A batch holds one owner's jobs only: its runs share a connection, which is reset
    after each batch (``Session.reset``). An owner's short jobs are spread over the
    threads its batches may hold at once (``short_cap``: all but one, ``OwnerQueue``;
    one batch each), unless a batch's last durations would add up to more than
    BATCH_BUDGET: then more, smaller batches. (Not over the fewer threads an owner's
    long jobs may hold: larger batches' claims lock by a table scan once they name a
    large part of the table, and deadlocked in the benchmark.)

    A job never run yet (``fresh``: no known duration) joins a batch whose known
    durations leave room for FRESH_GUESS more, one a batch, last: the batch records
    the known runs before it starts (``RunnerPool._run_batch``), so a first run that
    turns out long (or endless) delays no other job. The others run alone. (Not
    batches of new jobs only: one long first run would hold up every new job behind
    it, for ever if it never ends.)

    Batches of short jobs only (known, or guessed from their kind) are short for the
    owner's share of the threads; one with a new job, or a job alone, is not.
    """
    out: list[Batch] = []
    quick: dict[str, list[int]] = {}
    new: dict[str, list[int]] = {}
    for jid in jids:
        if jid in fresh:
            new.setdefault(owners[jid], []).append(jid)
        elif jid in short:
            quick.setdefault(owners[jid], []).append(jid)
        else:
            out.append(([jid], owners[jid], False))
    for owner in {**quick, **new}:
        ids = quick.get(owner, [])
        groups: list[list[int]] = []
        if ids:
            # as many batches as threads the owner's batches may hold at once
            size = min(MAX_BATCH, max(1, -(-len(ids) // short_cap)))
            mean = sum(short[jid] for jid in ids) / len(ids)
            size = max(1, min(size, int(BATCH_BUDGET / max(mean, 1e-4))))
            groups = [ids[i : i + size] for i in range(0, len(ids), size)]
        rest = new.get(owner, [])
        for group in groups:
            with_new = False
            if rest:
                room = BATCH_BUDGET - sum(short[jid] for jid in group)
                if room >= FRESH_GUESS - 1e-9 and len(group) < MAX_BATCH:
                    group.append(rest.pop(0))
                    with_new = True
            out.append((group, owner, not with_new))
        out.extend(([jid], owner, False) for jid in rest)
    return out


def next_wait(
    *,
    backlog: bool,
    poll: float,
    cooling: float | None,
    earliest: datetime | None,
    lead: timedelta,
    monotonic: Callable[[], float] = time.monotonic,
    clock: Callable[[], datetime],
) -> float:
    """Seconds until the next pass: ``poll`` while due jobs were left behind
    (``backlog``: a worker running low on work wakes the loop), else until the
    earliest slot's claim (``earliest`` less ``lead``) or a cooldown's end, at most
    ``poll``. The clocks are read only when needed."""
    if backlog:
        return poll
    wait = poll
    if cooling is not None:  # declined a moment ago: look again when that ends
        wait = min(wait, max(MIN_PASS, cooling - monotonic()))
    if earliest is None:
        return wait
    return max(0.002, min(wait, (earliest - lead - clock()).total_seconds()))
