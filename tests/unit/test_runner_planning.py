"""A scheduler pass's plan (jobtui/core/runner/planning.py): pure functions, no database.

Rows are plain objects with the due query's columns; times are passed in, the clocks are
fakes. Each test states one rule of the pass that docs/runners.md promises.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest

from jobtui.core.runner import planning
from jobtui.core.runner.config import (
    BATCH_BUDGET,
    DEFAULTS,
    MAX_BATCH,
    MIN_PASS,
    PROBE_WAIT,
    PoolConfig,
)

NOW = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
LEAD = timedelta(seconds=0.25)
SOON = NOW + LEAD
MONO = 1000.0


def row(
    jid: int,
    *,
    owner: str = "alice",
    due_in: float | None = 0.0,
    run_now: bool = False,
    last: float | None = 1.0,
    kind: str = "sql",
    target: str = "SELECT 1",
) -> Any:
    """A due query's row: ``due_in`` seconds from NOW (naive UTC, as read)."""
    nxt = None if due_in is None else (NOW + timedelta(seconds=due_in)).replace(tzinfo=None)
    return SimpleNamespace(
        id=jid,
        owner=owner,
        next_run=nxt,
        run_now=run_now,
        locked_by=None,
        locked_until=None,
        last_duration=last,
        kind=kind if last is None else None,
        target=target if last is None else None,
    )


class Mono:
    """A monotonic clock the test moves."""

    def __init__(self, at: float = MONO) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at


def sort(rows: list[Any], **kw: Any) -> planning.Due:
    args: dict[str, Any] = {
        "now": NOW,
        "soon": SOON,
        "mono": MONO,
        "first_later": None,
        "busy": set(),
        "cooldown": {},
        "like": {},
        "probes": planning.Probes(Mono()),
        "leased_elsewhere": lambda r: False,
        "share_wait": lambda jid: 0.0,
        "jitter": lambda: 0.5,
    }
    args.update(kw)
    return planning.sort_due(rows, **args)


def ids(due: planning.Due) -> list[int]:
    return [jid for _, jid in due.due]


# ---------------------------------------------------------------------- PoolConfig


def test_the_defaults_are_the_documented_ones() -> None:
    assert (DEFAULTS.threads, DEFAULTS.poll, DEFAULTS.heartbeat_timeout) == (4, 1.0, 15.0)
    assert (DEFAULTS.lead, DEFAULTS.owner_share, DEFAULTS.takeover_grace) == (0.25, 0.5, 2.0)
    assert DEFAULTS.name is None and DEFAULTS.job_id is None and not DEFAULTS.hold


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"threads": 0}, "threads must be at least 1"),
        ({"owner_share": 0}, "owner_share must be a fraction above 0 and at most 1"),
        ({"owner_share": 1.5}, "owner_share must be a fraction above 0 and at most 1"),
        ({"poll": 0}, "poll must be a positive number of seconds"),
        ({"lead": 5.5}, "lead must be between 0 and 5 seconds"),
        ({"takeover_grace": -1}, "takeover_grace must be between 0 and 3600 seconds"),
        ({"takeover_grace": float("nan")}, "takeover_grace must be between 0 and 3600"),
    ],
)
def test_a_config_out_of_range_is_refused_with_its_reason(
    settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        PoolConfig(**settings)


def test_a_config_is_frozen() -> None:
    config = PoolConfig(threads=2)
    with pytest.raises(AttributeError):
        config.threads = 3  # type: ignore[misc]


# ---------------------------------------------------------------------- limits


def test_limits_keep_a_backlog_per_thread_and_read_more_than_they_take() -> None:
    long_cap, capacity, limit = planning.limits(4, 0)
    assert long_cap == 16
    assert capacity == 4 * (4 + MAX_BATCH)
    assert limit == capacity * 2 + 1
    assert planning.limits(4, 10)[1] == capacity - 10
    # more taken than the pool could hold: nothing more to take, still one row read
    assert planning.limits(1, 10_000)[2] == 10_001


# ---------------------------------------------------------------------- sort_due


def test_run_now_comes_before_slots_due_now_which_go_in_tenths_of_a_second() -> None:
    found = sort([row(1, due_in=0.2), row(2, due_in=0.0), row(3, run_now=True, due_in=None)])
    assert ids(found) == [3, 2, 1]
    assert found.due[0][0] == 0.0
    assert found.owners == {1: "alice", 2: "alice", 3: "alice"}
    # a slot missed by seconds sorts by how late it is, the latest first
    found = sort([row(1, due_in=-1.0), row(2, due_in=-5.0), row(3, run_now=True, due_in=None)])
    assert ids(found) == [2, 1, 3]


def test_a_job_due_after_the_lead_is_not_taken_but_sets_the_next_pass() -> None:
    found = sort([row(1, due_in=0.1), row(2, due_in=3.0)], first_later=None)
    assert ids(found) == [1]
    assert found.earliest == NOW + timedelta(seconds=3)
    # the query's first later slot wins when it is earlier than the rows'
    found = sort([row(1, due_in=30.0)], first_later=NOW + timedelta(seconds=10))
    assert ids(found) == [] and found.earliest == NOW + timedelta(seconds=10)


def test_busy_cooling_and_leased_jobs_are_left_alone() -> None:
    rows = [row(1), row(2), row(3), row(4)]
    found = sort(
        rows,
        busy={1},
        cooldown={2: MONO + 0.3, 3: MONO - 1.0},
        leased_elsewhere=lambda r: r.id == 4,
    )
    assert ids(found) == [3]
    assert found.cooling == MONO + 0.3
    assert found.elsewhere
    assert found.owners[1] == "alice"  # a busy job's owner is still known


def test_short_jobs_are_known_by_their_last_run_or_their_kind() -> None:
    like = {("alice", "sql", "SELECT 2"): 0.01, ("alice", "sql", "SELECT 3"): 5.0}
    rows = [
        row(1, last=0.05),  # short
        row(2, last=2.0),  # long
        row(3, last=None, target="SELECT 2"),  # never run, its kind is short: guessed
        row(4, last=None, target="SELECT 3"),  # never run, its kind is long: fresh
        row(5, last=float("nan")),  # not a duration: long
    ]
    found = sort(rows, like=like)
    assert found.short == {1: 0.05, 3: 0.01}
    assert found.guessed == {3}
    assert found.fresh == {4}


def test_the_first_new_job_of_a_kind_is_the_probe_the_others_wait() -> None:
    mono = Mono()
    probes = planning.Probes(mono)
    rows = [row(1, last=None), row(2, last=None), row(3, last=None, owner="bob")]
    found = sort(rows, probes=probes)
    assert ids(found) == [1, 3]  # alice's first of its kind, and bob's
    assert found.fresh == {1, 2, 3}
    assert found.held
    # once the probe's run is known, its kind is no longer probed
    probes.ended(("alice", "sql", "SELECT 1"))
    assert ids(sort([row(2, last=None)], probes=probes)) == [2]


def test_a_probe_holds_its_kind_up_at_most_probe_wait_past_its_slot() -> None:
    mono = Mono()
    probes = planning.Probes(mono)
    kind = ("alice", "sql", "SELECT 1")
    assert not probes.waiting(kind, MONO)  # the first becomes the probe
    assert probes.waiting(kind, MONO)
    mono.at = MONO + PROBE_WAIT
    assert not probes.waiting(kind, MONO)


def test_another_pools_job_is_ours_only_once_overdue_by_our_grace() -> None:
    found = sort([row(1, due_in=0.0), row(2, due_in=0.0)], share_wait=lambda jid: 2.0 * (jid - 1))
    assert ids(found) == [1]
    assert found.earliest == NOW + timedelta(seconds=2)
    # overdue by more than the grace: ours now
    found = sort([row(2, due_in=-3.0)], share_wait=lambda jid: 2.0)
    assert ids(found) == [2]


def test_an_unreadable_next_run_is_due_now() -> None:
    bad = row(1)
    bad.next_run = "2026-00-00 00:00:00"
    assert ids(sort([bad])) == [1]


# ---------------------------------------------------------------------- take


def test_take_stops_at_capacity_and_caps_long_jobs_per_owner() -> None:
    due = [(1.0, jid) for jid in range(1, 9)]
    owners = {jid: ("alice" if jid <= 6 else "bob") for jid in range(1, 9)}
    taken = planning.take(
        due,
        short=set(),
        owners=owners,
        capacity=10,
        long_cap=6,
        owner_long_cap=3,
        owner_long={"alice": 1},
    )
    # alice has one long job taken already: two more; bob's two pass her
    assert [jid for _, jid in taken] == [1, 2, 7, 8]
    short = set(range(1, 9))
    taken = planning.take(
        due,
        short=short,
        owners=owners,
        capacity=5,
        long_cap=0,
        owner_long_cap=0,
        owner_long={},
    )
    assert [jid for _, jid in taken] == [1, 2, 3, 4, 5]


# ---------------------------------------------------------------------- batches


def test_long_jobs_run_alone_and_short_ones_in_batches_of_one_owner() -> None:
    owners = {1: "alice", 2: "alice", 3: "alice", 4: "bob", 5: "alice", 6: "alice"}
    short = {2: 0.01, 3: 0.01, 4: 0.01, 5: 0.01, 6: 0.01}
    items = planning.batches([1, 2, 3, 4, 5, 6], short=short, owners=owners, short_cap=2)
    assert items[0] == ([1], "alice", False)
    assert ([2, 3], "alice", True) in items and ([5, 6], "alice", True) in items
    assert ([4], "bob", True) in items
    assert len(items) == 4


def test_a_batch_is_no_longer_than_its_budget() -> None:
    jids = list(range(1, 21))
    short = dict.fromkeys(jids, 0.04)
    items = planning.batches(jids, short=short, owners=dict.fromkeys(jids, "a"), short_cap=1)
    assert all(sum(short[j] for j in ids_) <= BATCH_BUDGET + 1e-9 for ids_, *_ in items)
    assert [len(ids_) for ids_, *_ in items] == [6, 6, 6, 2]


def test_a_new_job_ends_a_batch_with_room_or_runs_alone() -> None:
    owners = dict.fromkeys(range(1, 6), "alice")
    short = {1: 0.01, 2: 0.01}
    items = planning.batches([1, 2, 3, 4], short=short, owners=owners, fresh={3, 4}, short_cap=1)
    # one batch, the first new job last in it (not short: it may be long); the other alone
    assert items == [([1, 2, 3], "alice", False), ([4], "alice", False)]
    full = {1: BATCH_BUDGET - 0.01, 2: 0.0}
    items = planning.batches([1, 3], short=full, owners=owners, fresh={3}, short_cap=1)
    assert items == [([1], "alice", True), ([3], "alice", False)]


# ---------------------------------------------------------------------- next_wait


def test_the_next_pass_comes_at_the_earliest_claim_at_most_a_poll_away() -> None:
    def clock() -> datetime:
        return NOW

    def wait(**kw: Any) -> float:
        args: dict[str, Any] = {
            "backlog": False,
            "poll": 1.0,
            "cooling": None,
            "earliest": None,
            "lead": LEAD,
            "monotonic": Mono(),
            "clock": clock,
        }
        args.update(kw)
        return planning.next_wait(**args)

    assert wait() == 1.0
    assert wait(backlog=True, earliest=NOW) == 1.0  # a worker running low wakes it
    assert wait(earliest=NOW + timedelta(seconds=0.75)) == pytest.approx(0.5)
    assert wait(earliest=NOW) == 0.002  # never a busy loop
    assert wait(cooling=MONO + 0.3) == pytest.approx(0.3)
    assert wait(cooling=MONO + 0.001) == MIN_PASS


def test_next_wait_reads_the_clocks_only_when_it_needs_them() -> None:
    def no_clock() -> datetime:
        raise AssertionError("the clock was read")

    def no_mono() -> float:
        raise AssertionError("the monotonic clock was read")

    assert (
        planning.next_wait(
            backlog=True,
            poll=0.5,
            cooling=1.0,
            earliest=NOW,
            lead=LEAD,
            monotonic=no_mono,
            clock=no_clock,
        )
        == 0.5
    )
