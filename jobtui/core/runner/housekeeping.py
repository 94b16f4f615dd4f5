"""A pool's housekeeping thread: the run log pruned by its retention, a few batches at
a time (``JobStore.prune_runs``)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime

from jobtui.core.dberrors import describe
from jobtui.core.retention import Retention
from jobtui.core.runner.config import PRUNE_MAX_BATCHES
from jobtui.core.store import JobStore

log = logging.getLogger("jobtui.runner")


class Housekeeper:
    """Prunes ``store``'s run log; ``pruned``: how many rows so far."""

    def __init__(self, store: JobStore, now: Callable[[], datetime]) -> None:
        self.store = store
        self.now = now
        self.pruned = 0

    def run(self, retention: Retention, stopping: threading.Event) -> None:
        """Prune every ``retention.interval`` seconds until ``stopping``.

        Its own thread, so a slow DELETE never delays heartbeats or aborts; batches
        are short transactions, so claims go on in between. On MySQL/MariaDB one
        pruner at a time (GET_LOCK ...:prune inside prune_runs; others skip).
        """
        ret = retention
        wait = ret.interval
        while not stopping.wait(wait):
            wait = ret.interval
            try:
                deleted = self.store.prune_runs(
                    keep=ret.keep_runs,
                    keep_days=ret.keep_days,
                    keep_error_days=ret.keep_error_days,
                    batch=ret.batch,
                    max_batches=PRUNE_MAX_BATCHES,
                    now=self.now(),
                )
            except Exception as exc:
                log.warning("pruning the run log: %s", describe(exc))
                continue
            self.pruned += deleted
            if deleted:
                log.info("pruned %d run-log row(s)", deleted)
            if deleted >= ret.batch * PRUNE_MAX_BATCHES:
                wait = min(ret.interval, 1.0)  # more to do: carry on soon, in small steps
