"""MariaDB Galera clusters: exclusivity certified at commit, never ``GET_LOCK``.

On a Galera cluster ``GET_LOCK`` succeeds but is node-local: two nodes grant one
name at once. Everything the single-server backend (mysql.py) rests on named
locks rests here on the job row itself, written in a transaction that Galera
certifies at commit (a concurrent write of the same row on another node aborts
one of the two with 1213):

- a claim sets ``running``, the runner, its connection id and its node
  (``runner_node``: the node's address and its group-communication UUID, which
  changes when the node restarts) and a lease (``locked_by``/``locked_until``);
- ``run NAME`` holds the job by that lease, renewed with each heartbeat;
- pruning keeps the node-local named lock: pruners on two nodes may both delete
  the same old run rows (certification aborts one; the next pass prunes again);
- a dead runner's job is released only once its executing connection is known
  gone: the reaper connects to the node recorded with the claim and finds the
  connection absent, or KILLs it there and sees it go, or finds the node
  restarted (another UUID). A node it cannot reach keeps the job held.

docs/cluster.md tells the deployment; docs/runners.md the protocol.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, ClassVar, TypeVar

import sqlalchemy
from sqlalchemy import select, update
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool

from jobtui.core import schema
from jobtui.core.backends.base import PlanClaim
from jobtui.core.backends.mysql import batch as sql
from jobtui.core.backends.mysql.backend import MySQLBackend, connection_gone
from jobtui.core.dberrors import describe, error_code
from jobtui.core.lock_names import NODE_EXPR
from jobtui.core.timeutil import to_db

log = logging.getLogger("jobtui.runner")

T = TypeVar("T")

#: Certification conflict (1213), a node out of the primary component (1047), a
#: connection lost to a node leaving (2013): a claim hit by one is tried again.
RETRY_CODES = {1213, 1047}
CLAIM_ATTEMPTS = 4
RETRYING_ATTEMPTS = 10  # retrying(): housekeeping on two nodes may meet several times in a row

NODE_SQL = f"SELECT CONNECTION_ID(), {NODE_EXPR}"
GCOMM_UUID_SQL = (
    "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
    "WHERE VARIABLE_NAME = 'WSREP_GCOMM_UUID'"
)

CLAIM_READ = (*sql.CLAIM_COLUMNS_READ, "locked_by", "locked_until")


def is_cluster(engine: Engine) -> bool:
    """Whether ``engine``'s server is a Galera node (``wsrep_on``)."""
    with engine.connect() as conn:
        try:
            value = conn.exec_driver_sql("SELECT @@wsrep_on").scalar()
        except sqlalchemy.exc.DBAPIError:
            return False  # MySQL (no such variable): not a Galera node
        finally:
            conn.rollback()
    return bool(value) and str(value) not in ("0", "OFF")


def retried(what: str, attempt: Callable[[], T], *, attempts: int = CLAIM_ATTEMPTS) -> T:
    """``attempt()``, again after a certification abort (1213) or a node leaving the
    primary component (1047), with a short, bounded, jittered backoff; the last
    failure goes to the caller."""
    delay = 0.02
    for n in range(attempts):
        try:
            return attempt()
        except sqlalchemy.exc.DBAPIError as exc:
            if error_code(exc) not in RETRY_CODES or n == attempts - 1:
                raise
            log.info("%s: %s; trying again", what, describe(exc))
        except Exception as exc:  # the raw driver's errors (a raw cursor's)
            code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
            if code not in RETRY_CODES or n == attempts - 1:
                raise
            log.info("%s: %s; trying again", what, exc)
        time.sleep(delay * (1 + random.random()))
        delay = min(delay * 3, 0.5)
    raise AssertionError("unreachable")


class GaleraBackend(MySQLBackend):
    """A MariaDB Galera node: row leases certified at commit instead of named locks."""

    named_locks: ClassVar[bool] = False
    cluster: ClassVar[bool] = True

    def retrying(self, what: str, attempt: Callable[[], T]) -> T:
        return retried(what, attempt, attempts=RETRYING_ATTEMPTS)

    def retried(self, what: str, attempt: Callable[[], T]) -> T:
        return retried(what, attempt)

    # ---------------------------------------------------------------- where a connection runs

    def connection_id(self, conn: Connection) -> int | None:
        cid, _node = self.connection_node(conn)
        return cid

    def connection_node(self, conn: Connection) -> tuple[int, str | None]:
        """The connection's id and node, asked once per connection (kept in its info)."""
        info = conn.connection.info
        known = info.get("jobtui_node")
        if known is None:
            cid, node = conn.exec_driver_sql(NODE_SQL).one()
            conn.commit()
            known = info["jobtui_node"] = (int(cid), str(node) if node else None)
        return known

    # ---------------------------------------------------------------- no named locks

    def take_locks(self, conn: Connection, names: Sequence[str]) -> list[bool]:
        return [True] * len(names)  # the job row's certified write is the lock

    def release_locks(self, conn: Connection, names: Sequence[str]) -> None:
        pass

    def lock_holder(self, conn: Connection, name: str) -> int | None:
        return None

    def take_hold(
        self,
        conn: Connection,
        job_id: int,
        *,
        lock_name: Callable[[int], str],
        runner_id: str,
        now: datetime,
        lease_until: datetime,
    ) -> tuple[str | None, str] | None:
        """The job row's lease (``locked_by``/``locked_until``) for this runner, written
        while the job is idle and nobody else's lease holds it; a concurrent hold on
        another node loses at certification (1213) and is told who holds the job."""
        j = schema.job

        def attempt() -> tuple[str | None, str] | None:
            if conn.in_transaction():
                conn.rollback()
            with conn.begin():
                row = conn.execute(select(j).where(j.c.id == job_id).with_for_update()).first()
                if row is None:
                    return None
                if row.running or self.leased_elsewhere(row, runner_id, now):
                    return row.name, f"runner {row.locked_by or row.runner_id}"
                conn.execute(
                    update(j)
                    .where(j.c.id == job_id)
                    .values(locked_by=runner_id, locked_until=to_db(lease_until))
                )
            return None

        try:
            return retried("holding a job", attempt, attempts=1)
        except sqlalchemy.exc.DBAPIError as exc:
            if error_code(exc) != 1213:
                raise
            if conn.in_transaction():
                conn.rollback()
            # Another node's hold was certified first: it is theirs.
            locked_by = conn.execute(select(j.c.locked_by).where(j.c.id == job_id)).scalar()
            conn.rollback()
            return None, f"runner {locked_by or 'on another node'}"

    def claim_batch(
        self,
        conn: Connection,
        job_ids: Sequence[int],
        *,
        lock_name: Callable[[int], str],
        plan: PlanClaim,
        runner_id: str,
        now: datetime,
        lease_until: datetime,
        locked: list[str],
        problems: dict[int, str],
        busy: dict[int, Any] | None = None,
    ) -> list[Any]:
        """The single server's batch (``SELECT ... FOR UPDATE``, one ``UPDATE ...
        CASE`` of idle rows, the run-log rows, ``COMMIT``) without named locks: rows
        leased to another runner are left alone, each claimed row gets this runner's
        lease and node, and a batch that loses at certification is tried again."""
        cid, node = self.connection_node(conn)
        lease = to_db(lease_until)

        def attempt() -> list[Any]:
            problems.clear()
            with sql.raw_transaction(conn, "claim") as cur:
                # SKIP LOCKED, as on a single server: a row its owner holds in a locking
                # read on this node is skipped (busy), never waited for past CLAIM_LOCK_WAIT
                ids = list(job_ids)
                rows = sql.lock_rows(cur, CLAIM_READ, ids, skip_locked=True)
                if len(rows) < len(ids):
                    rows += self._held_rows(cur, CLAIM_READ, rows, ids, busy)
                jobs = sql.jobs(sql.CLAIM_COLUMNS, rows)
                runs: list[Any] = []
                values: dict[int, dict[str, Any]] = {}
                run_rows: list[dict[str, Any]] = []
                for row, job in zip(rows, jobs, strict=True):
                    if job.problem is not None:
                        if not job.running:
                            problems[job.id] = job.problem
                        continue
                    if self.leased_elsewhere(row, runner_id, now):
                        continue
                    planned = plan(conn, row, job, None)
                    if planned is None:
                        continue
                    run, vals, rows_ = planned
                    vals = {
                        **vals,
                        # where the run executes (the executor, on this node too:
                        # workers name their node directly, docs/cluster.md)
                        "runner_connection_id": vals.get("runner_connection_id", cid),
                        "runner_node": node,
                        "locked_by": runner_id,
                        "locked_until": lease,
                    }
                    runs.append(run)
                    values[job.id] = sql.changed(row, vals)
                    run_rows.extend(rows_)
                if runs:
                    matched = sql.update_jobs(cur, values, only_idle=True)
                    if matched != len(runs):
                        raise RuntimeError(f"claim matched {matched} of {len(runs)} locked rows")
                    sql.insert_runs(cur, run_rows, bounded=True)
            return runs

        return retried("a claim", attempt)

    def record_batch(self, conn, runner_id, outcomes, finish, *, release):  # type: ignore[no-untyped-def]
        """The single server's recording; a certification abort (1213) is tried again at
        once (the caller's loop retries anything else, with its own backoff)."""
        return retried(
            "recording runs",
            lambda: MySQLBackend.record_batch(
                self, conn, runner_id, outcomes, finish, release=release
            ),
        )

    # ---------------------------------------------------------------- leases and reaping

    def renew_leases(self, conn: Connection, runner_id: str, until: datetime) -> None:
        """By primary key, after a plain read: an ``UPDATE ... WHERE locked_by = me``
        would lock every row it scans, and each claim replicated from another node
        would then abort the heartbeat (a brute-force abort, 1213)."""
        j = schema.job
        ids = [int(x[0]) for x in conn.execute(select(j.c.id).where(j.c.locked_by == runner_id))]
        if ids:
            conn.execute(
                update(j)
                .where(j.c.id.in_(ids), j.c.locked_by == runner_id)
                .values(locked_until=to_db(until))
            )

    def drop_leases(self, conn: Connection, runner_id: str) -> None:
        j = schema.job
        ids = [int(x[0]) for x in conn.execute(select(j.c.id).where(j.c.locked_by == runner_id))]
        if ids:
            conn.execute(
                update(j)
                .where(j.c.id.in_(ids), j.c.locked_by == runner_id, j.c.running.is_(False))
                .values(locked_by=None, locked_until=None)
            )

    @contextmanager
    def reaping_lock(self, conn: Connection, lock_name: Callable[[], str]) -> Iterator[bool]:
        yield True  # the reaper made sure of the orphan first (orphan_gone)

    def orphan_gone(self, node: str | None, cid: int | None, *, kill: bool = True) -> bool:
        """Whether connection ``cid`` on ``node`` (``host:port/uuid`` as claimed) is
        known gone: killed there now if it still runs and ``kill``. False when it still
        runs or it cannot be told (the node unreachable, the KILL refused): the job
        stays held."""
        if not node or cid is None or "/" not in node:
            return True  # claimed without a node (not by a runner on a cluster)
        addr, uuid = node.rsplit("/", 1)
        host, _, port = addr.rpartition(":")
        url = self.engine.url.set(host=host or addr, port=int(port) if port.isdigit() else None)
        eng = sqlalchemy.create_engine(
            url, poolclass=NullPool, connect_args={"connect_timeout": 3, "autocommit": True}
        )
        try:
            with eng.connect() as conn:
                if str(conn.exec_driver_sql(GCOMM_UUID_SQL).scalar() or "") != uuid:
                    return True  # the node restarted since: the connection died with it
                return connection_gone(
                    conn,
                    cid,
                    kill=kill,
                    attempts=20,
                    killing=lambda: log.warning(
                        "connection %s of a dead runner still runs on %s: killing it", cid, addr
                    ),
                )
        except sqlalchemy.exc.DBAPIError as exc:
            code = error_code(exc)
            if code == 1094:  # unknown thread id: gone between the look and the KILL
                return True
            log.warning(
                "cannot tell whether connection %s on %s still runs (%s): its job stays held",
                cid,
                addr,
                describe(exc),
            )
            return False
        finally:
            eng.dispose()
