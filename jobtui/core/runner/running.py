"""Executing a claimed run on its session's connection for it, and stopping one in flight.

``execute_run`` runs a ``ClaimedRun`` (``executor.execute``) and turns what happened
into an outcome; ``abort_run`` stops one from another thread (the action's
event, and the statement through ``Backend.interrupt``); ``find_aborts`` reads
which runs an operator aborted or removed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Engine

from jobtui.core.backends import Backend
from jobtui.core.dberrors import describe, is_disconnect
from jobtui.core.model import Outcome
from jobtui.core.runner import executor, queries
from jobtui.core.runner.claiming import ClaimedRun

log = logging.getLogger("jobtui.runner")


def execute_run(
    run: ClaimedRun,
    backend: Backend,
    *,
    schema_name: str,
    now: Callable[[], datetime],
    runner_id: str,
) -> tuple[Outcome, str | None]:
    """Execute ``run`` on its session's connection for it (the executor for owner code,
    ``Session.for_run``), committed after a success and rolled back otherwise: (outcome,
    error text or None). Never raises."""
    session = run.session
    if run.expr_error is not None:
        return Outcome.FAILED, run.expr_error.reason  # nothing ran (docs/runners.md)
    kind = run.job.what.kind
    try:
        conn = session.for_run(kind)
        with run.guard:
            if run.abort_event.is_set():
                raise executor.RunAborted("aborted before it started")
            run.executing = True
        run.exec_start = now()
        session.dirty = True
        try:
            executor.execute(
                conn,
                run.job,
                run.abort_event,
                backend=backend,
                routine=run.routine,
                schema_name=schema_name,
            )
        finally:
            with run.guard:
                run.executing = False
        if run.abort_event.is_set():
            raise executor.RunAborted("aborted")
        executor.commit(conn)
        return Outcome.OK, None
    except Exception as exc:
        used, _cid = session.running(kind)
        drop = session.discard_executor if session.apart(kind) else session.discard
        if is_disconnect(exc):
            drop()
        elif used is not None:
            try:
                executor.rollback(used, backend)
            except Exception as exc2:
                log.warning("rollback failed: %s", describe(exc2))
                drop()
        if run.abort_event.is_set() or isinstance(exc, executor.RunAborted):
            return Outcome.ABORTED, abort_text(run, runner_id)
        return Outcome.FAILED, describe(exc)


def abort_text(run: ClaimedRun, runner_id: str) -> str:
    """The run log's error text of an aborted run, after why it was aborted."""
    if run.abort_reason == "shutdown":
        return f"aborted: runner {runner_id} stopped and its grace period ran out"
    if run.abort_reason == "removed":
        return "aborted: the job was removed while it ran"
    if run.abort_reason == "withdrawn":
        return (
            "not started: the job was paused, disabled or marked broken between "
            "the claim of this slot and the slot"
        )
    return "aborted by operator"


def abort_run(run: ClaimedRun, backend: Backend, engine: Engine) -> None:
    """Stop a run in flight: the action's event, and the statement on its connection
    (``Backend.interrupt``, on another of ``engine``'s connections where it takes one)."""
    run.abort_event.set()
    with run.guard:
        if not run.executing:
            return
        try:
            backend.interrupt(engine, *run.session.running(run.job.what.kind))
        except Exception as exc:
            log.warning("could not interrupt job %s: %s", run.job.name, describe(exc))


def find_aborts(engine: Engine, runs: Sequence[ClaimedRun], runner_id: str) -> list[ClaimedRun]:
    """The runs of ``runs`` to abort now, their ``abort_reason`` set: aborted by an
    operator, or their job removed (in one query)."""
    ids = [run.job.id for run in runs]
    with engine.connect() as conn:
        # The rows an operator flagged, and how many of them all are still there: not
        # every in-flight row each time (the monitor asks about three times a second).
        rows: dict[int, Any] = {int(r.id): r for r in conn.execute(queries.flagged_jobs(ids))}
        present = int(conn.execute(queries.count_jobs(ids)).scalar() or 0)
        if present < len(set(ids)):  # some row is gone (deleted): which ones
            gone = set(ids) - {int(r[0]) for r in conn.execute(queries.present_jobs(ids))}
        else:
            gone = set()
        conn.rollback()
    found = []
    for run in runs:
        if run.abort_event.is_set():
            continue
        row = rows.get(run.job.id)
        if run.job.id in gone or (
            row is not None and row.remove_requested and row.runner_id == runner_id
        ):
            run.abort_reason = "removed"
        elif row is not None and row.abort_requested and row.runner_id == runner_id:
            run.abort_reason = "operator"
        else:
            continue
        found.append(run)
    return found
