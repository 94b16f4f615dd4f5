"""What a pool tells of the runs it recorded: a ``RunResult`` each to its ``on_run``
callback and its observer (the metrics). A callback or observer that fails is logged,
never the pool's failure."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from jobtui.core.model import Outcome
from jobtui.core.runner.recording import Ended
from jobtui.core.runner.runresult import OnRun, PoolObserver, RunResult

log = logging.getLogger("jobtui.runner")


def observe(report: Callable[..., None], *args: Any) -> None:
    """Tell the observer; its failure is logged, never the pool's."""
    try:
        report(*args)
    except Exception as exc:
        log.warning("pool observer failed: %s", exc)


def tell(items: list[Ended], *, on_run: OnRun | None, observer: PoolObserver | None) -> None:
    """One ``RunResult`` per recorded run to ``observer.finished`` and ``on_run``; then
    ``on_run.flush()`` where the callback buffers what it reports (the worker's log
    writes a batch's lines at once)."""
    if on_run is None and observer is None:
        return
    for run, outcome, error, finished in items:
        result = RunResult(
            job=run.job.name,
            job_id=run.job.id,
            slot=run.slot,
            outcome=outcome,
            started=run.exec_start or run.started,
            finished=finished,
            error=error,
            manual=run.manual,
            skipped=run.skipped,
            owner=run.job.owner,
            **failure_count(run.job, outcome),
        )
        if observer is not None:
            observe(observer.finished, result)
        if on_run is None:
            continue
        try:
            on_run(result)
        except Exception as exc:
            log.warning("on_run callback failed: %s", exc)
    flush = getattr(on_run, "flush", None)
    if flush is not None:
        try:
            flush()
        except Exception as exc:
            log.warning("on_run callback failed: %s", exc)


def failure_count(job: Any, outcome: Outcome) -> dict[str, Any]:
    """A run's failures in a row, and whether it turned the job BROKEN (as
    ``bookkeeping.finish_values`` counts them), for ``on_run``."""
    if outcome is Outcome.OK:
        return {"failures": 0}
    if outcome is not Outcome.FAILED:
        return {"failures": job.failures}
    failures = job.failures + 1
    return {
        "failures": failures,
        "turned_broken": not job.broken and failures >= job.max_failures,
    }
