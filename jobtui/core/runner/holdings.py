"""What a pool holds: the jobs it has taken (claiming, executing or recording), the worker
thread that has each, and which of them the scheduler counts as long or guessed short.

One lock guards it all; the pool's scheduler, worker and monitor threads ask and change
it only through these methods.
"""

from __future__ import annotations

import threading
from collections.abc import Container, Iterable

from jobtui.core.runner.claiming import ClaimedRun


class Holdings:
    """The jobs a pool has taken, from the scheduler's pass until their thread releases them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._active: dict[int, ClaimedRun | None] = {}  # job id -> run (None while claiming)
        self._long_taken: set[int] = set()  # taken jobs that are not batched
        # Jobs never run yet, batched on the duration of their kind (the pool's _like)
        self._guessed: set[int] = set()
        self._owner_of: dict[int, str] = {}  # taken job id -> its owner
        # taken job id -> the worker thread that has it (None: queued, no thread yet); a
        # thread releases only its own (``release``).
        self._taker: dict[int, int | None] = {}
        self._working = 0  # worker threads with a batch in hand

    # ------------------------------------------------------------------ questions

    def has_runs(self) -> bool:
        """Whether a job is being claimed or executed here now."""
        with self._lock:
            return bool(self._active)

    def runs(self) -> list[ClaimedRun]:
        """The runs claimed and not yet released."""
        with self._lock:
            return [r for r in self._active.values() if r is not None]

    def taken(self) -> set[int]:
        """Ids of the jobs being claimed or executed now."""
        with self._lock:
            return set(self._active)

    def names_in_flight(self) -> list[str]:
        """Names of the jobs being executed now, sorted."""
        with self._lock:
            return sorted(r.job.name for r in self._active.values() if r is not None)

    def working(self) -> int:
        """How many worker threads have a batch in hand."""
        with self._lock:
            return self._working

    def long_by_owner(self) -> dict[str, int]:
        """How many long (unbatched) jobs each owner has taken."""
        with self._lock:
            owner_long: dict[str, int] = {}
            for jid in self._long_taken:
                owner = self._owner_of.get(jid, "")
                owner_long[owner] = owner_long.get(owner, 0) + 1
            return owner_long

    def guessed_among(self, job_ids: Iterable[int]) -> set[int]:
        """Of ``job_ids``, those never run yet and batched as others of their kind."""
        with self._lock:
            return {jid for jid in job_ids if jid in self._guessed}

    # ------------------------------------------------------------------ changes

    def take(
        self,
        job_ids: Iterable[int],
        *,
        owners: dict[int, str],
        short: Container[int],
        guessed: Container[int],
    ) -> None:
        """The scheduler took ``job_ids`` (queued, no thread yet): those not ``short`` are
        long; the short ones ``guessed`` are never run yet."""
        with self._lock:
            for jid in job_ids:
                self._active[jid] = None
                self._taker[jid] = None
                self._owner_of[jid] = owners[jid]
                if jid not in short:
                    self._long_taken.add(jid)
                elif jid in guessed:
                    self._guessed.add(jid)

    def begin_batch(self, job_ids: list[int], thread: int) -> None:
        """Worker thread ``thread`` has ``job_ids`` in hand."""
        with self._lock:
            self._working += 1
            for jid in job_ids:
                self._taker[jid] = thread

    def end_batch(self) -> None:
        """A worker thread is done with its batch (its jobs released apart)."""
        with self._lock:
            self._working -= 1

    def claimed(self, runs: list[ClaimedRun]) -> None:
        """The runs claimed of the taken jobs."""
        with self._lock:
            for run in runs:
                self._active[run.job.id] = run

    def release(self, job_ids: list[int], thread: int) -> None:
        """Thread ``thread`` is done with ``job_ids``. A job released early and already
        taken again by another thread is that thread's now: left alone here."""
        with self._lock:
            for jid in job_ids:
                if self._taker.get(jid, thread) != thread:
                    continue
                self._taker.pop(jid, None)
                self._active.pop(jid, None)
                self._long_taken.discard(jid)
                self._guessed.discard(jid)
                self._owner_of.pop(jid, None)
