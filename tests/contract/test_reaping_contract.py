"""The backends' part in a runner's life (``runners: heartbeats and reaping``), once per
backend: leases renewed and dropped, the lock around a dead runner's job, the
scheduler pass's lease check, the pool's lock scope. The reaper itself is proven
end to end by tests/contract/test_runner.py and tests/faults/test_runner_procs.py."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from types import SimpleNamespace

import pytest
from sqlalchemy import select, text, update

from jobtui.core import lock_names, schema
from jobtui.core.model import What
from jobtui.core.schedules import make_schedule
from jobtui.core.store import JobStore
from jobtui.core.timeutil import to_db, utcnow

ME, OTHER = "host:1:me:aaaaaa", "host:2:other:bbbbbb"


@pytest.fixture
def leased(store: JobStore) -> Iterator[tuple[JobStore, int, int]]:
    """Two jobs whose rows carry my lease, one of them running."""
    idle = store.submit("idle", What("sql", "SELECT 1"), make_schedule("every", every=60)).id
    busy = store.submit("busy", What("sql", "SELECT 1"), make_schedule("every", every=60)).id
    j = schema.job
    with store.write() as c:
        c.execute(update(j).values(locked_by=ME, locked_until=to_db(utcnow())))
        c.execute(update(j).where(j.c.id == busy).values(running=True, runner_id=ME))
    yield store, idle, busy


def _leases(store: JobStore) -> dict[int, tuple[str | None, object]]:
    j = schema.job
    with store.read() as c:
        rows = c.execute(select(j.c.id, j.c.locked_by, j.c.locked_until)).all()
    return {int(r.id): (r.locked_by, r.locked_until) for r in rows}


def test_renew_and_drop_leases(leased: tuple[JobStore, int, int]) -> None:
    store, idle, busy = leased
    backend = store.backend
    before = _leases(store)
    until = utcnow() + timedelta(minutes=5)
    with store.write() as c:
        backend.renew_leases(c, ME, until)
        backend.renew_leases(c, OTHER, until + timedelta(minutes=5))  # holds none
    renewed = _leases(store)
    with store.write() as c:
        backend.drop_leases(c, ME)
    dropped = _leases(store)
    if backend.named_locks:  # no leases: nothing written
        assert renewed == before == dropped
        return
    assert all(holder == ME and at != before[jid][1] for jid, (holder, at) in renewed.items())
    assert renewed[idle][1] == renewed[busy][1]
    # an idle job's lease goes; a running job keeps its own until it runs out
    assert dropped[idle] == (None, None) and dropped[busy] == renewed[busy]


def test_leased_elsewhere(store: JobStore) -> None:
    now = utcnow()
    backend = store.backend

    def row(holder: str | None, until: object) -> SimpleNamespace:
        return SimpleNamespace(locked_by=holder, locked_until=until)

    later, earlier = to_db(now + timedelta(seconds=5)), to_db(now - timedelta(seconds=5))
    assert backend.leased_elsewhere(row(OTHER, later), ME, now) is True
    for free in (row(ME, later), row(OTHER, earlier), row(None, None), row(OTHER, None)):
        assert backend.leased_elsewhere(free, ME, now) is False


def test_reaping_lock_waits_for_a_held_job_lock(store: JobStore) -> None:
    backend = store.backend
    schema_name, key = backend.lock_scope(store.engine, store.lock_key)
    if backend.cluster:
        _orphan_is_killed_on_its_node(store)
        return
    if not backend.named_locks:
        assert (schema_name, key) == ("", "")
        with store.engine.connect() as conn, backend.reaping_lock(conn, _unused) as free:
            assert free  # leases: the reaper's own judgement is all there is
        return
    assert schema_name and key
    name = lock_names.lock_name(key, schema_name, 1)
    with store.engine.connect() as orphan, store.engine.connect() as reaper:
        assert backend.take_locks(orphan, [name]) == [True]
        with backend.reaping_lock(reaper, lambda: name) as free:
            assert not free  # an orphaned statement still holds it
        backend.release_locks(orphan, [name])
        with backend.reaping_lock(reaper, lambda: name) as free:
            assert free
            assert orphan.execute(text("SELECT IS_FREE_LOCK(:n)"), {"n": name}).scalar() == 0
        assert orphan.execute(text("SELECT IS_FREE_LOCK(:n)"), {"n": name}).scalar() == 1


def _unused() -> str:
    raise AssertionError("no lock name is needed without named locks")


def _orphan_is_killed_on_its_node(store: JobStore) -> None:
    """A cluster's reaper (no named locks there) proves the dead holder's statement gone:
    a connection still running on its node is killed there before its job is released."""
    backend = store.backend
    with store.engine.connect() as orphan, store.engine.connect() as probe:
        cid, node = backend.connection_node(orphan)  # type: ignore[attr-defined]
        assert node and "/" in node
        busy = orphan.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        import threading
        import time

        outcome: list[BaseException | None] = []

        def sleep() -> None:
            try:
                busy.execute("SELECT SLEEP(30)")
                outcome.append(None)
            except BaseException as exc:
                outcome.append(exc)

        t = threading.Thread(target=sleep)
        t.start()
        time.sleep(0.5)
        assert backend.orphan_gone(node, cid) is True  # killed there, seen gone
        t.join(10)
        assert not t.is_alive()
        gone = probe.execute(
            text("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = :i"), {"i": cid}
        ).scalar()
        assert gone == 0
        orphan.invalidate()
        # a node that restarted since the claim (another UUID): gone with it
        assert backend.orphan_gone(node.rsplit("/", 1)[0] + "/not-this-node", 10**9) is True
        # an unreachable node cannot tell: the job stays held
        assert backend.orphan_gone("127.0.0.1:1/" + node.rsplit("/", 1)[1], 5) is False
